//! The Kubernetes IP and CIDR libraries (`kubernetes.ip`, `kubernetes.cidr`): `ip()`,
//! `isIP()`, `ip.isCanonical()`, the address predicates, `cidr()`, `isCIDR()`, containment,
//! `masked()` and `string()` of both, as `k8s.io/apiserver/pkg/cel/library/{ip,cidr}.go`.
//!
//! Values are of the opaque types `net.IP` and `net.CIDR`; zones and IPv4-mapped IPv6
//! addresses are rejected, as Kubernetes does.

mod address;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use address::{IpAddress, IpPrefix, parse_address, parse_prefix};

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::ext::{opaque_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The type name of IP address values.
const IP_TYPE: &str = "net.IP";
/// The type name of CIDR values.
const CIDR_TYPE: &str = "net.CIDR";

/// A `net.IP` value.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ip(IpAddress);

/// A `net.CIDR` value.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Cidr(IpPrefix);

impl fmt::Debug for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ip(\"{}\")", self.0)
    }
}

impl fmt::Debug for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cidr(\"{}\")", self.0)
    }
}

impl OpaqueValue for Ip {
    fn type_name(&self) -> &str {
        IP_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other.as_any().downcast_ref::<Ip>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.0.to_string()))
    }
}

impl OpaqueValue for Cidr {
    fn type_name(&self) -> &str {
        CIDR_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other.as_any().downcast_ref::<Cidr>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.0.to_string()))
    }
}

fn ip_value(address: IpAddress) -> Value {
    Value::Opaque(Arc::new(Ip(address)))
}

fn cidr_value(prefix: IpPrefix) -> Value {
    Value::Opaque(Arc::new(Cidr(prefix)))
}

/// Parses an IP address as Kubernetes does, charging for the text walked.
///
/// # Errors
/// `InvalidArgument` for malformed text, zones and IPv4-mapped IPv6 addresses.
fn parse_ip(function: &str, text: &str, budget: &mut Budget) -> EvalResult<IpAddress> {
    budget.charge(traversal_cost(text.len()))?;
    let parsed = parse_address(text).map_err(|error| {
        EvalError::invalid_argument(
            function,
            format!("IP Address {text:?} parse error during conversion from string: {error}"),
        )
    })?;
    if parsed.has_zone {
        return Err(EvalError::invalid_argument(
            function,
            format!("IP address {text:?} with zone value is not allowed"),
        ));
    }
    if parsed.address.is_ipv4_mapped() {
        return Err(EvalError::invalid_argument(
            function,
            format!("IPv4-mapped IPv6 address {text:?} is not allowed"),
        ));
    }
    Ok(parsed.address)
}

/// Parses a CIDR as Kubernetes does, charging for the text walked.
///
/// # Errors
/// `InvalidArgument` for malformed text, zones and IPv4-mapped IPv6 addresses.
fn parse_cidr(function: &str, text: &str, budget: &mut Budget) -> EvalResult<IpPrefix> {
    budget.charge(traversal_cost(text.len()))?;
    let prefix = parse_prefix(text).map_err(|error| {
        EvalError::invalid_argument(
            function,
            format!("network address parse error during conversion from string: {error}"),
        )
    })?;
    if prefix.address.is_ipv4_mapped() {
        return Err(EvalError::invalid_argument(
            function,
            format!("IPv4-mapped IPv6 address {text:?} is not allowed"),
        ));
    }
    Ok(prefix)
}

/// Whether `text` is an IPv6 address without a zone, as a URL's bracketed host must be.
pub(crate) fn is_ipv6_literal(text: &str) -> bool {
    matches!(
        parse_address(text),
        Ok(address::ParsedAddress {
            address: IpAddress::V6(_),
            has_zone: false
        })
    )
}

fn ip_arg(function: &str, value: &Value) -> EvalResult<IpAddress> {
    opaque_arg::<Ip>(function, value).map(|ip| ip.0)
}

fn cidr_arg(function: &str, value: &Value) -> EvalResult<IpPrefix> {
    opaque_arg::<Cidr>(function, value).map(|cidr| cidr.0)
}

/// A member function `ip.name() -> result` computed from the address alone.
fn ip_accessor(
    name: &'static str,
    id: &str,
    result: Type,
    accessor: fn(IpAddress) -> Value,
) -> Function {
    Function::new(name).overload(
        Overload::member(id, &[Type::opaque(IP_TYPE)], result)
            .with_impl(move |args, _| Ok(accessor(ip_arg(name, &args[0])?))),
    )
}

/// The IP library.
pub(crate) fn ip_library() -> Library {
    let ip = || Type::opaque(IP_TYPE);
    Library::new(
        "kubernetes.ip",
        vec![
            Function::new("ip").overload(
                Overload::global("string_to_ip", &[Type::String], ip()).with_impl(
                    |args, budget| {
                        let text = string_arg("ip", &args[0])?;
                        Ok(ip_value(parse_ip("ip", text, budget)?))
                    },
                ),
            ),
            Function::new("isIP").overload(
                Overload::global("is_ip", &[Type::String], Type::Bool).with_impl(|args, budget| {
                    let text = string_arg("isIP", &args[0])?;
                    Ok(Value::Bool(parse_ip("isIP", text, budget).is_ok()))
                }),
            ),
            Function::new("ip.isCanonical").overload(
                Overload::global("ip_is_canonical", &[Type::String], Type::Bool).with_impl(
                    |args, budget| {
                        let text = string_arg("ip.isCanonical", &args[0])?;
                        let address = parse_ip("ip.isCanonical", text, budget)?;
                        // Printing is a second walk over the text.
                        budget.charge(traversal_cost(text.len()))?;
                        Ok(Value::Bool(address.to_string() == text))
                    },
                ),
            ),
            ip_accessor("family", "ip_family", Type::Int, |a| Value::Int(a.family())),
            ip_accessor("isUnspecified", "ip_is_unspecified", Type::Bool, |a| {
                Value::Bool(a.is_unspecified())
            }),
            ip_accessor("isLoopback", "ip_is_loopback", Type::Bool, |a| {
                Value::Bool(a.is_loopback())
            }),
            ip_accessor(
                "isLinkLocalMulticast",
                "ip_is_link_local_multicast",
                Type::Bool,
                |a| Value::Bool(a.is_link_local_multicast()),
            ),
            ip_accessor(
                "isLinkLocalUnicast",
                "ip_is_link_local_unicast",
                Type::Bool,
                |a| Value::Bool(a.is_link_local_unicast()),
            ),
            ip_accessor("isGlobalUnicast", "ip_is_global_unicast", Type::Bool, |a| {
                Value::Bool(a.is_global_unicast())
            }),
            Function::new("string").overload(
                Overload::global("ip_to_string", &[ip()], Type::String)
                    .with_impl(|args, _| Ok(Value::from(ip_arg("string", &args[0])?.to_string()))),
            ),
        ],
    )
    .with_opaque_type(IP_TYPE)
}

/// The CIDR library.
pub(crate) fn cidr_library() -> Library {
    let cidr = || Type::opaque(CIDR_TYPE);
    let ip = || Type::opaque(IP_TYPE);
    Library::new(
        "kubernetes.cidr",
        vec![
            Function::new("cidr").overload(
                Overload::global("string_to_cidr", &[Type::String], cidr()).with_impl(
                    |args, budget| {
                        let text = string_arg("cidr", &args[0])?;
                        Ok(cidr_value(parse_cidr("cidr", text, budget)?))
                    },
                ),
            ),
            Function::new("isCIDR").overload(
                Overload::global("is_cidr", &[Type::String], Type::Bool).with_impl(
                    |args, budget| {
                        let text = string_arg("isCIDR", &args[0])?;
                        Ok(Value::Bool(parse_cidr("isCIDR", text, budget).is_ok()))
                    },
                ),
            ),
            Function::new("containsIP")
                .overload(
                    Overload::member(
                        "cidr_contains_ip_string",
                        &[cidr(), Type::String],
                        Type::Bool,
                    )
                    .with_impl(|args, budget| {
                        let prefix = cidr_arg("containsIP", &args[0])?;
                        let text = string_arg("containsIP", &args[1])?;
                        let address = parse_ip("containsIP", text, budget)?;
                        Ok(Value::Bool(prefix.contains(address)))
                    }),
                )
                .overload(
                    Overload::member("cidr_contains_ip_ip", &[cidr(), ip()], Type::Bool).with_impl(
                        |args, _| {
                            let prefix = cidr_arg("containsIP", &args[0])?;
                            Ok(Value::Bool(
                                prefix.contains(ip_arg("containsIP", &args[1])?),
                            ))
                        },
                    ),
                ),
            Function::new("containsCIDR")
                .overload(
                    Overload::member(
                        "cidr_contains_cidr_string",
                        &[cidr(), Type::String],
                        Type::Bool,
                    )
                    .with_impl(|args, budget| {
                        let prefix = cidr_arg("containsCIDR", &args[0])?;
                        let text = string_arg("containsCIDR", &args[1])?;
                        let other = parse_cidr("containsCIDR", text, budget)?;
                        Ok(Value::Bool(prefix.contains_prefix(other)))
                    }),
                )
                .overload(
                    Overload::member("cidr_contains_cidr", &[cidr(), cidr()], Type::Bool)
                        .with_impl(|args, _| {
                            let prefix = cidr_arg("containsCIDR", &args[0])?;
                            let other = cidr_arg("containsCIDR", &args[1])?;
                            Ok(Value::Bool(prefix.contains_prefix(other)))
                        }),
                ),
            Function::new("ip").overload(
                Overload::member("cidr_ip", &[cidr()], ip())
                    .with_impl(|args, _| Ok(ip_value(cidr_arg("ip", &args[0])?.address))),
            ),
            Function::new("prefixLength").overload(
                Overload::member("cidr_prefix_length", &[cidr()], Type::Int).with_impl(
                    |args, _| {
                        Ok(Value::Int(i64::from(
                            cidr_arg("prefixLength", &args[0])?.bits,
                        )))
                    },
                ),
            ),
            Function::new("masked").overload(
                Overload::member("cidr_masked", &[cidr()], cidr())
                    .with_impl(|args, _| Ok(cidr_value(cidr_arg("masked", &args[0])?.masked()))),
            ),
            Function::new("string").overload(
                Overload::global("cidr_to_string", &[cidr()], Type::String).with_impl(|args, _| {
                    Ok(Value::from(cidr_arg("string", &args[0])?.to_string()))
                }),
            ),
        ],
    )
    .with_opaque_type(CIDR_TYPE)
}

#[cfg(test)]
mod tests {
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval, eval_error, is_rejected_for_overloads};
    use crate::{Value, to_json};

    #[test]
    fn ip_parses_prints_and_compares() {
        assert_evaluations(&[
            ("string(ip('192.168.0.1'))", Value::string("192.168.0.1")),
            ("string(ip('2001:DB8::68'))", Value::string("2001:db8::68")),
            ("ip('127.0.0.1') == ip('127.0.0.1')", Value::Bool(true)),
            ("ip('127.0.0.1') == ip('10.0.0.1')", Value::Bool(false)),
            ("ip('2001:db8::1') == ip('2001:DB8::1')", Value::Bool(true)),
            ("ip('::') == ip('0.0.0.0')", Value::Bool(false)),
            ("type(ip('1.2.3.4')) == net.IP", Value::Bool(true)),
            ("isIP('192.168.0.1')", Value::Bool(true)),
            ("isIP('::1')", Value::Bool(true)),
            ("isIP('192.168.0.1.0')", Value::Bool(false)),
            ("isIP('127.0.0.256')", Value::Bool(false)),
            ("isIP('fe80::1%eth0')", Value::Bool(false)),
            ("isIP('::ffff:1.2.3.4')", Value::Bool(false)),
            ("isIP('01.2.3.4')", Value::Bool(false)),
        ]);
    }

    #[test]
    fn is_canonical_compares_with_the_printed_form() {
        assert_evaluations(&[
            ("ip.isCanonical('127.0.0.1')", Value::Bool(true)),
            ("ip.isCanonical('2001:db8::abcd')", Value::Bool(true)),
            ("ip.isCanonical('2001:DB8::ABCD')", Value::Bool(false)),
            ("ip.isCanonical('2001:db8::0:0:0:abcd')", Value::Bool(false)),
        ]);
        let error = eval_error("ip.isCanonical('127.0.0.1.0')");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::InvalidArgument { .. }
        ));
    }

    #[test]
    fn address_predicates_follow_go() {
        assert_evaluations(&[
            ("ip('127.0.0.1').family()", Value::Int(4)),
            ("ip('::1').family()", Value::Int(6)),
            ("ip('0.0.0.0').isUnspecified()", Value::Bool(true)),
            ("ip('::').isUnspecified()", Value::Bool(true)),
            ("ip('::1').isUnspecified()", Value::Bool(false)),
            ("ip('127.0.0.1').isLoopback()", Value::Bool(true)),
            ("ip('127.255.0.1').isLoopback()", Value::Bool(true)),
            ("ip('::1').isLoopback()", Value::Bool(true)),
            ("ip('2001:db8::abcd').isLoopback()", Value::Bool(false)),
            ("ip('224.0.0.1').isLinkLocalMulticast()", Value::Bool(true)),
            ("ip('224.0.1.1').isLinkLocalMulticast()", Value::Bool(false)),
            ("ip('ff02::1').isLinkLocalMulticast()", Value::Bool(true)),
            ("ip('ff12::1').isLinkLocalMulticast()", Value::Bool(true)),
            ("ip('fd00::1').isLinkLocalMulticast()", Value::Bool(false)),
            (
                "ip('169.254.169.254').isLinkLocalUnicast()",
                Value::Bool(true),
            ),
            ("ip('192.168.0.1').isLinkLocalUnicast()", Value::Bool(false)),
            ("ip('fe80::1').isLinkLocalUnicast()", Value::Bool(true)),
            ("ip('febf::1').isLinkLocalUnicast()", Value::Bool(true)),
            ("ip('fec0::1').isLinkLocalUnicast()", Value::Bool(false)),
            ("ip('192.168.0.1').isGlobalUnicast()", Value::Bool(true)),
            ("ip('10.0.0.1').isGlobalUnicast()", Value::Bool(true)),
            (
                "ip('255.255.255.255').isGlobalUnicast()",
                Value::Bool(false),
            ),
            ("ip('224.0.0.1').isGlobalUnicast()", Value::Bool(false)),
            ("ip('2001:db8::abcd').isGlobalUnicast()", Value::Bool(true)),
            ("ip('ff00::1').isGlobalUnicast()", Value::Bool(false)),
            ("ip('::').isGlobalUnicast()", Value::Bool(false)),
        ]);
    }

    #[test]
    fn bad_addresses_are_runtime_errors() {
        for text in [
            "ip('192.168.0.1.0')",
            "ip('2001:db8:::68')",
            "ip('fe80::1%en0')",
            "ip('::ffff:192.168.0.1')",
            "ip('')",
        ] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn cidr_parses_prints_and_compares() {
        assert_evaluations(&[
            (
                "string(cidr('192.168.0.0/24'))",
                Value::string("192.168.0.0/24"),
            ),
            (
                "string(cidr('2001:DB8::/32'))",
                Value::string("2001:db8::/32"),
            ),
            ("type(cidr('10.0.0.0/8')) == net.CIDR", Value::Bool(true)),
            (
                "cidr('127.0.0.1/24') == cidr('127.0.0.1/24')",
                Value::Bool(true),
            ),
            (
                "cidr('127.0.0.1/24') == cidr('127.0.0.0/24')",
                Value::Bool(false),
            ),
            (
                "cidr('10.0.0.0/8') == cidr('10.0.0.0/9')",
                Value::Bool(false),
            ),
            ("isCIDR('10.0.0.0/8')", Value::Bool(true)),
            ("isCIDR('10.0.0.0/33')", Value::Bool(false)),
            ("isCIDR('10.0.0.0')", Value::Bool(false)),
            ("isCIDR('::ffff:1.2.3.4/120')", Value::Bool(false)),
        ]);
    }

    #[test]
    fn cidr_accessors_and_containment() {
        assert_evaluations(&[
            (
                "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
                Value::Bool(true),
            ),
            ("cidr('192.168.0.0/24').prefixLength()", Value::Int(24)),
            (
                "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
                Value::Bool(true),
            ),
            (
                "string(cidr('2001:db8::1/33').masked())",
                Value::string("2001:db8::/33"),
            ),
            (
                "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
                Value::Bool(true),
            ),
            (
                "cidr('192.168.0.0/24').containsIP('192.168.1.1')",
                Value::Bool(false),
            ),
            (
                "cidr('2001:db8::/32').containsIP(ip('192.168.1.1'))",
                Value::Bool(false),
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')",
                Value::Bool(true),
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
                Value::Bool(false),
            ),
            (
                "cidr('10.0.0.0/8').containsCIDR(cidr('10.0.0.0/8'))",
                Value::Bool(true),
            ),
            (
                "cidr('0.0.0.0/0').containsCIDR(cidr('::/0'))",
                Value::Bool(false),
            ),
        ]);
        for text in [
            "cidr('192.168.0.0/24').containsIP('nope')",
            "cidr('192.168.0.0/24').containsCIDR('10.0.0.0')",
            "cidr('192.168.0.0/')",
            "cidr('fe80::1%en0/24')",
        ] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn wrong_types_are_rejected_at_check_time() {
        for text in [
            "isIP(cidr('192.168.0.0/24'))",
            "ip(1)",
            "ip('1.2.3.4').prefixLength()",
            "cidr('10.0.0.0/8').family()",
            "cidr('10.0.0.0/8').containsIP(1)",
            "ip.isCanonical(ip('1.2.3.4'))",
        ] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }

    #[test]
    fn addresses_convert_to_json_strings() {
        let ip = eval("ip('2001:DB8::1')");
        assert_eq!(
            to_json(&ip).expect("has a JSON form"),
            serde_json::json!("2001:db8::1")
        );
        let cidr = eval("cidr('10.1.0.0/16')");
        assert_eq!(
            to_json(&cidr).expect("has a JSON form"),
            serde_json::json!("10.1.0.0/16")
        );
    }
}
