//! IP addresses and prefixes with the parsing and printing rules of Go's `net/netip`, which
//! Kubernetes uses: no leading zeros in IPv4 octets, at most four hex digits per IPv6 group,
//! an embedded IPv4 tail only in the last 32 bits, RFC 5952 text for IPv6.

use std::fmt;

/// An IPv4 or IPv6 address (without a zone: the libraries reject zones).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IpAddress {
    /// Four octets.
    V4([u8; 4]),
    /// Sixteen octets.
    V6([u8; 16]),
}

/// Why a string is not an IP address, worded as Go's `netip.ParseAddr` errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddressSyntaxError {
    input: String,
    problem: &'static str,
    at: Option<String>,
}

impl fmt::Display for AddressSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ParseAddr({:?}): {}", self.input, self.problem)?;
        if let Some(at) = &self.at {
            write!(f, " (at {at:?})")?;
        }
        Ok(())
    }
}

/// A parsed address and whether it carried an IPv6 zone (`fe80::1%eth0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedAddress {
    pub(crate) address: IpAddress,
    pub(crate) has_zone: bool,
}

fn syntax_error(input: &str, problem: &'static str, at: Option<&str>) -> AddressSyntaxError {
    AddressSyntaxError {
        input: input.to_string(),
        problem,
        at: at.map(str::to_string),
    }
}

/// Parses an address as `netip.ParseAddr` does: the first `.`, `:` or `%` decides the family.
pub(crate) fn parse_address(input: &str) -> Result<ParsedAddress, AddressSyntaxError> {
    for byte in input.bytes() {
        match byte {
            b'.' => {
                let octets = parse_ipv4_fields(input, input)?;
                return Ok(ParsedAddress {
                    address: IpAddress::V4(octets),
                    has_zone: false,
                });
            }
            b':' => return parse_ipv6(input),
            b'%' => return Err(syntax_error(input, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(syntax_error(input, "unable to parse IP", None))
}

/// Parses dotted-quad `text` (part of `input`, which error messages quote).
fn parse_ipv4_fields(input: &str, text: &str) -> Result<[u8; 4], AddressSyntaxError> {
    let bytes = text.as_bytes();
    let mut fields = [0u8; 4];
    let mut position = 0;
    let mut value: u32 = 0;
    let mut digits = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        match byte {
            b'0'..=b'9' => {
                if digits == 1 && value == 0 {
                    return Err(syntax_error(
                        input,
                        "IPv4 field has octet with leading zero",
                        None,
                    ));
                }
                value = value * 10 + u32::from(byte - b'0');
                digits += 1;
                if value > 255 {
                    return Err(syntax_error(input, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if index == 0 || index == bytes.len() - 1 || bytes[index - 1] == b'.' {
                    return Err(syntax_error(
                        input,
                        "IPv4 field must have at least one digit",
                        text.get(index..),
                    ));
                }
                if position == 3 {
                    return Err(syntax_error(input, "IPv4 address too long", None));
                }
                fields[position] = value as u8;
                position += 1;
                value = 0;
                digits = 0;
            }
            _ => {
                return Err(syntax_error(
                    input,
                    "unexpected character",
                    text.get(index..),
                ));
            }
        }
    }
    if position < 3 {
        return Err(syntax_error(input, "IPv4 address too short", None));
    }
    fields[3] = value as u8;
    Ok(fields)
}

/// Parses IPv6 text, with an optional `%zone` and an optional embedded IPv4 tail.
fn parse_ipv6(input: &str) -> Result<ParsedAddress, AddressSyntaxError> {
    let (mut rest, has_zone) = match input.split_once('%') {
        Some((_, "")) => {
            return Err(syntax_error(input, "zone must be a non-empty string", None));
        }
        Some((address, _)) => (address, true),
        None => (input, false),
    };
    let mut octets = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if let Some(after) = rest.strip_prefix("::") {
        ellipsis = Some(0);
        rest = after;
        if rest.is_empty() {
            return Ok(ParsedAddress {
                address: IpAddress::V6(octets),
                has_zone,
            });
        }
    }
    let mut filled = 0;
    while filled < 16 {
        let bytes = rest.as_bytes();
        let mut length = 0;
        let mut group: u32 = 0;
        while let Some(digit) = bytes
            .get(length)
            .and_then(|byte| (*byte as char).to_digit(16))
        {
            group = (group << 4) | digit;
            if length > 3 {
                return Err(syntax_error(
                    input,
                    "each colon-separated field must have at most 4 hex digits",
                    Some(rest),
                ));
            }
            length += 1;
        }
        if length == 0 {
            return Err(syntax_error(
                input,
                "each colon-separated field must have at least one digit",
                Some(rest),
            ));
        }
        if bytes.get(length) == Some(&b'.') {
            if ellipsis.is_none() && filled != 12 {
                return Err(syntax_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    Some(rest),
                ));
            }
            if filled + 4 > 16 {
                return Err(syntax_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    Some(rest),
                ));
            }
            let tail = parse_ipv4_fields(input, rest)?;
            octets[filled..filled + 4].copy_from_slice(&tail);
            filled += 4;
            rest = "";
            break;
        }
        octets[filled] = (group >> 8) as u8;
        octets[filled + 1] = group as u8;
        filled += 2;
        rest = &rest[length..];
        if rest.is_empty() {
            break;
        }
        let Some(after_colon) = rest.strip_prefix(':') else {
            return Err(syntax_error(
                input,
                "unexpected character, want colon",
                Some(rest),
            ));
        };
        if after_colon.is_empty() {
            return Err(syntax_error(
                input,
                "colon must be followed by more characters",
                Some(rest),
            ));
        }
        rest = after_colon;
        if let Some(after) = rest.strip_prefix(':') {
            if ellipsis.is_some() {
                return Err(syntax_error(input, "multiple :: in address", Some(rest)));
            }
            ellipsis = Some(filled);
            rest = after;
            if rest.is_empty() {
                break;
            }
        }
    }
    if !rest.is_empty() {
        return Err(syntax_error(
            input,
            "trailing garbage after address",
            Some(rest),
        ));
    }
    if filled < 16 {
        let Some(start) = ellipsis else {
            return Err(syntax_error(input, "address string too short", None));
        };
        let gap = 16 - filled;
        octets.copy_within(start..filled, start + gap);
        octets[start..start + gap].fill(0);
    } else if ellipsis.is_some() {
        return Err(syntax_error(
            input,
            "the :: must expand to at least one field of zeros",
            None,
        ));
    }
    Ok(ParsedAddress {
        address: IpAddress::V6(octets),
        has_zone,
    })
}

impl IpAddress {
    /// 4 or 6.
    pub(crate) fn family(self) -> i64 {
        match self {
            IpAddress::V4(_) => 4,
            IpAddress::V6(_) => 6,
        }
    }

    /// The number of bits: 32 or 128.
    pub(crate) fn bit_len(self) -> u8 {
        match self {
            IpAddress::V4(_) => 32,
            IpAddress::V6(_) => 128,
        }
    }

    fn octets(&self) -> &[u8] {
        match self {
            IpAddress::V4(octets) => octets,
            IpAddress::V6(octets) => octets,
        }
    }

    fn group(octets: &[u8; 16], index: usize) -> u16 {
        u16::from_be_bytes([octets[2 * index], octets[2 * index + 1]])
    }

    /// An IPv6 address of the form `::ffff:a.b.c.d`.
    pub(crate) fn is_ipv4_mapped(self) -> bool {
        matches!(self, IpAddress::V6(o) if o[..10].iter().all(|b| *b == 0) && o[10] == 0xff && o[11] == 0xff)
    }

    /// The address with a mapped IPv4 address unwrapped, as netip's predicates see it.
    fn unmapped(self) -> IpAddress {
        match self {
            IpAddress::V6(o) if self.is_ipv4_mapped() => {
                IpAddress::V4([o[12], o[13], o[14], o[15]])
            }
            other => other,
        }
    }

    /// `0.0.0.0` or `::`.
    pub(crate) fn is_unspecified(self) -> bool {
        self.octets().iter().all(|byte| *byte == 0)
    }

    /// `127.0.0.0/8` or `::1`.
    pub(crate) fn is_loopback(self) -> bool {
        match self.unmapped() {
            IpAddress::V4(o) => o[0] == 127,
            IpAddress::V6(o) => o[..15].iter().all(|b| *b == 0) && o[15] == 1,
        }
    }

    /// `224.0.0.0/4` or `ff00::/8`.
    fn is_multicast(self) -> bool {
        match self.unmapped() {
            IpAddress::V4(o) => o[0] & 0xf0 == 0xe0,
            IpAddress::V6(o) => o[0] == 0xff,
        }
    }

    /// `224.0.0.0/24` or `ff02::/16` (netip checks `ffx2::` with any flag bits).
    pub(crate) fn is_link_local_multicast(self) -> bool {
        match self.unmapped() {
            IpAddress::V4(o) => o[0] == 224 && o[1] == 0 && o[2] == 0,
            IpAddress::V6(o) => IpAddress::group(&o, 0) & 0xff0f == 0xff02,
        }
    }

    /// `169.254.0.0/16` or `fe80::/10`.
    pub(crate) fn is_link_local_unicast(self) -> bool {
        match self.unmapped() {
            IpAddress::V4(o) => o[0] == 169 && o[1] == 254,
            IpAddress::V6(o) => IpAddress::group(&o, 0) & 0xffc0 == 0xfe80,
        }
    }

    /// Neither unspecified, broadcast, loopback, multicast nor link-local unicast (private
    /// and ULA addresses count as global unicast, as in Go).
    pub(crate) fn is_global_unicast(self) -> bool {
        let address = self.unmapped();
        if let IpAddress::V4(o) = address
            && (o == [0, 0, 0, 0] || o == [255, 255, 255, 255])
        {
            return false;
        }
        address != IpAddress::V6([0; 16])
            && !address.is_loopback()
            && !address.is_multicast()
            && !address.is_link_local_unicast()
    }

    /// Whether the first `bits` bits of both addresses agree (same family required).
    fn shares_prefix(self, other: IpAddress, bits: u8) -> bool {
        if self.family() != other.family() {
            return false;
        }
        let (a, b) = (self.octets(), other.octets());
        let whole = usize::from(bits / 8);
        if a[..whole] != b[..whole] {
            return false;
        }
        let remainder = bits % 8;
        remainder == 0 || {
            let mask = 0xffu8 << (8 - remainder);
            a[whole] & mask == b[whole] & mask
        }
    }

    /// The address with every bit after the first `bits` cleared.
    fn masked(self, bits: u8) -> IpAddress {
        let clear = |octets: &mut [u8]| {
            for (index, octet) in octets.iter_mut().enumerate() {
                let start = index * 8;
                let keep = usize::from(bits).saturating_sub(start).min(8);
                *octet &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
            }
        };
        match self {
            IpAddress::V4(mut octets) => {
                clear(&mut octets);
                IpAddress::V4(octets)
            }
            IpAddress::V6(mut octets) => {
                clear(&mut octets);
                IpAddress::V6(octets)
            }
        }
    }
}

impl fmt::Debug for IpAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for IpAddress {
    /// Dotted quad for IPv4; RFC 5952 for IPv6 (lower-case hex, the first longest run of two
    /// or more zero groups as `::`), with a dotted tail for IPv4-mapped addresses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let octets = match self {
            IpAddress::V4(o) => return write!(f, "{}.{}.{}.{}", o[0], o[1], o[2], o[3]),
            IpAddress::V6(o) => o,
        };
        if self.is_ipv4_mapped() {
            return write!(
                f,
                "::ffff:{}.{}.{}.{}",
                octets[12], octets[13], octets[14], octets[15]
            );
        }
        let groups: Vec<u16> = (0..8)
            .map(|index| IpAddress::group(octets, index))
            .collect();
        let (mut zero_start, mut zero_end) = (8, 8);
        let mut index = 0;
        while index < 8 {
            let mut end = index;
            while end < 8 && groups[end] == 0 {
                end += 1;
            }
            if end - index >= 2 && end - index > zero_end - zero_start {
                zero_start = index;
                zero_end = end;
            }
            index = end.max(index + 1);
        }
        let mut index = 0;
        while index < 8 {
            if index == zero_start {
                f.write_str("::")?;
                index = zero_end;
                if index >= 8 {
                    break;
                }
            } else if index > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:x}", groups[index])?;
            index += 1;
        }
        Ok(())
    }
}

/// An address prefix (`10.0.0.0/8`). The address keeps the bits past the prefix as written,
/// as `netip.Prefix` does: `cidr('10.0.0.1/8').ip()` is `10.0.0.1`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct IpPrefix {
    pub(crate) address: IpAddress,
    pub(crate) bits: u8,
}

/// Why a string is not a prefix, worded as Go's `netip.ParsePrefix` errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrefixSyntaxError {
    input: String,
    problem: String,
}

impl fmt::Display for PrefixSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "netip.ParsePrefix({:?}): {}", self.input, self.problem)
    }
}

/// Parses `address/bits` as `netip.ParsePrefix` does: no zone, and the length in decimal
/// without sign or leading zeros.
pub(crate) fn parse_prefix(input: &str) -> Result<IpPrefix, PrefixSyntaxError> {
    let fail = |problem: String| PrefixSyntaxError {
        input: input.to_string(),
        problem,
    };
    let Some((address, bits)) = input.rsplit_once('/') else {
        return Err(fail("no '/'".to_string()));
    };
    let parsed = parse_address(address).map_err(|error| fail(error.to_string()))?;
    if parsed.has_zone {
        return Err(fail("IPv6 zones cannot be present in a prefix".to_string()));
    }
    let bad_bits = || fail(format!("bad bits after slash: {bits:?}"));
    let well_formed = !bits.is_empty()
        && bits.bytes().all(|byte| byte.is_ascii_digit())
        && (bits.len() == 1 || !bits.starts_with('0'));
    if !well_formed {
        return Err(bad_bits());
    }
    let bits: u32 = bits.parse().map_err(|_| bad_bits())?;
    let address = parsed.address;
    if bits > u32::from(address.bit_len()) {
        return Err(fail("prefix length out of range".to_string()));
    }
    Ok(IpPrefix {
        address,
        bits: bits as u8,
    })
}

impl IpPrefix {
    /// Whether the address is inside the prefix (same family, same leading bits).
    pub(crate) fn contains(self, address: IpAddress) -> bool {
        self.address.shares_prefix(address, self.bits)
    }

    /// Whether `other` lies wholly inside this prefix.
    pub(crate) fn contains_prefix(self, other: IpPrefix) -> bool {
        self.bits <= other.bits && self.address.shares_prefix(other.address, self.bits)
    }

    /// The prefix with the address's bits past the prefix cleared.
    pub(crate) fn masked(self) -> IpPrefix {
        IpPrefix {
            address: self.address.masked(self.bits),
            bits: self.bits,
        }
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddress {
        parse_address(text)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .address
    }

    #[test]
    fn addresses_print_in_canonical_form() {
        let cases = [
            ("192.168.0.1", "192.168.0.1"),
            ("2001:DB8::68", "2001:db8::68"),
            ("2001:db8:0:0:0:0:0:68", "2001:db8::68"),
            ("::", "::"),
            ("::1", "::1"),
            ("1::", "1::"),
            ("1:0:0:1:0:0:0:1", "1:0:0:1::1"),
            ("1:0:0:1:0:0:1:1", "1::1:0:0:1:1"),
            ("1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0"),
            ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
            ("::1.2.3.4", "::102:304"),
            ("0001:0002::000a", "1:2::a"),
        ];
        for (input, expected) in cases {
            assert_eq!(address(input).to_string(), expected, "{input}");
        }
    }

    #[test]
    fn malformed_addresses_are_rejected() {
        for input in [
            "",
            "192.168.0.1.0",
            "192.168.0",
            "192.168.0.256",
            "192.168.00.1",
            "192.168..1",
            ".1.2.3",
            "1.2.3.",
            "1.2.3.4a",
            "2001:db8:::68",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
            "12345::",
            "1::2::3",
            "1:2:3:4:5:6:7:8::",
            "1:2:3:4:1.2.3.4",
            "::1.2.3",
            ":1",
            "1:",
            "fe80::1%",
            "%eth0",
            "hello",
        ] {
            assert!(parse_address(input).is_err(), "{input}");
        }
    }

    #[test]
    fn zones_are_recognised() {
        let parsed = parse_address("fe80::1%eth0").expect("valid with zone");
        assert!(parsed.has_zone);
        assert_eq!(parsed.address, address("fe80::1"));
    }

    #[test]
    fn prefixes_parse_like_netip() {
        let prefix = parse_prefix("10.1.2.3/8").expect("valid");
        assert_eq!(prefix.to_string(), "10.1.2.3/8");
        assert_eq!(prefix.masked().to_string(), "10.0.0.0/8");
        assert_eq!(
            parse_prefix("2001:db8::1/33")
                .expect("valid")
                .masked()
                .to_string(),
            "2001:db8::/33"
        );
        for input in [
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/33",
            "10.0.0.0/08",
            "10.0.0.0/+8",
            "10.0.0.0/-1",
            "fe80::1%eth0/64",
            "::/129",
        ] {
            assert!(parse_prefix(input).is_err(), "{input}");
        }
        assert_eq!(parse_prefix("::/0").expect("valid").bits, 0);
    }

    #[test]
    fn containment_compares_leading_bits_of_one_family() {
        let prefix = parse_prefix("192.168.0.0/23").expect("valid");
        assert!(prefix.contains(address("192.168.1.255")));
        assert!(!prefix.contains(address("192.168.2.0")));
        assert!(!prefix.contains(address("::1")));
        assert!(prefix.contains_prefix(parse_prefix("192.168.1.0/24").expect("valid")));
        assert!(!prefix.contains_prefix(parse_prefix("192.168.0.0/22").expect("valid")));
        let everything = parse_prefix("0.0.0.0/0").expect("valid");
        assert!(everything.contains(address("8.8.8.8")));
        assert!(!everything.contains(address("::")));
    }
}
