//! The Kubernetes URL library (`kubernetes.urls`): `url()`, `isURL()`, and `getScheme()`,
//! `getHost()`, `getHostname()`, `getPort()`, `getEscapedPath()`, `getQuery()` on
//! `kubernetes.URL` values, as `k8s.io/apiserver/pkg/cel/library/urls.go`.
//!
//! A URL must be an absolute URI or an absolute path (`url.ParseRequestURI`); parsing and
//! printing follow Go's `net/url`.

mod parse;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use parse::Url;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::ext::{opaque_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{Key, Map, OpaqueValue, Value};

/// The error `url.ParseRequestURI` reports for `text`, if it reports one.
pub(crate) fn request_uri_error(text: &str) -> Option<String> {
    Url::request_uri_error(text).map(|error| error.to_string())
}

/// The type name of URL values.
const URL_TYPE: &str = "kubernetes.URL";

/// A `kubernetes.URL` value.
#[derive(Clone)]
struct UrlValue(Url);

impl UrlValue {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.to_bytes()).into_owned()
    }
}

impl fmt::Debug for UrlValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "url({:?})", self.text())
    }
}

impl OpaqueValue for UrlValue {
    fn type_name(&self) -> &str {
        URL_TYPE
    }

    /// URLs are equal when they print the same, as in Kubernetes.
    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<UrlValue>()
            .is_some_and(|other| self.0.to_bytes() == other.0.to_bytes())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.text()))
    }
}

fn text_value(bytes: &[u8]) -> Value {
    Value::from(String::from_utf8_lossy(bytes).into_owned())
}

fn url_arg<'a>(function: &str, value: &'a Value) -> EvalResult<&'a Url> {
    opaque_arg::<UrlValue>(function, value).map(|url| &url.0)
}

/// `url.getQuery()`: each key with all its values, in order of first appearance.
fn query_map(url: &Url, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(url.raw_query.len()))?;
    let parameters = url.query();
    budget.charge(traversal_cost(parameters.len()))?;
    let map: Map = parameters
        .into_iter()
        .map(|(key, values)| {
            let key = Key::String(Arc::from(String::from_utf8_lossy(&key).as_ref()));
            let values = values.iter().map(|value| text_value(value)).collect();
            (key, Value::list(values))
        })
        .collect();
    Ok(Value::Map(map))
}

/// A member accessor `url.name() -> string`.
fn accessor(name: &'static str, id: &str, get: fn(&Url) -> Vec<u8>) -> Function {
    Function::new(name).overload(
        Overload::member(id, &[Type::opaque(URL_TYPE)], Type::String).with_impl(
            move |args, budget| {
                let text = get(url_arg(name, &args[0])?);
                budget.charge(traversal_cost(text.len()))?;
                Ok(text_value(&text))
            },
        ),
    )
}

/// The URL library.
pub(crate) fn library() -> Library {
    let url = || Type::opaque(URL_TYPE);
    Library::new(
        "kubernetes.urls",
        vec![
            Function::new("url").overload(
                Overload::global("string_to_url", &[Type::String], url()).with_impl(
                    |args, budget| {
                        let text = string_arg("url", &args[0])?;
                        budget.charge(traversal_cost(text.len()))?;
                        let parsed = Url::parse(text).map_err(|error| {
                            EvalError::invalid_argument(
                                "url",
                                format!("URL parse error during conversion from string: {error}"),
                            )
                        })?;
                        Ok(Value::Opaque(Arc::new(UrlValue(parsed))))
                    },
                ),
            ),
            Function::new("isURL").overload(
                Overload::global("is_url_string", &[Type::String], Type::Bool).with_impl(
                    |args, budget| {
                        let text = string_arg("isURL", &args[0])?;
                        budget.charge(traversal_cost(text.len()))?;
                        Ok(Value::Bool(Url::is_request_uri(text)))
                    },
                ),
            ),
            accessor("getScheme", "url_get_scheme", |url| url.scheme.clone()),
            accessor("getHost", "url_get_host", |url| url.host.clone()),
            accessor("getHostname", "url_get_hostname", |url| {
                url.hostname().to_vec()
            }),
            accessor("getPort", "url_get_port", |url| url.port().to_vec()),
            accessor("getEscapedPath", "url_get_escaped_path", Url::escaped_path),
            Function::new("getQuery").overload(
                Overload::member(
                    "url_get_query",
                    &[url()],
                    Type::map(Type::String, Type::list(Type::String)),
                )
                .with_impl(|args, budget| query_map(url_arg("getQuery", &args[0])?, budget)),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval, eval_error, is_rejected_for_overloads};
    use crate::{Key, Map, Value, to_json};

    fn strings(items: &[&str]) -> Value {
        Value::list(items.iter().map(|item| Value::string(item)).collect())
    }

    #[test]
    fn url_components_follow_go() {
        assert_evaluations(&[
            ("url('/path').getScheme()", Value::string("")),
            (
                "url('https://example.com/').getScheme()",
                Value::string("https"),
            ),
            (
                "url('HTTPS://example.com/').getScheme()",
                Value::string("https"),
            ),
            (
                "url('https://example.com:80/').getHost()",
                Value::string("example.com:80"),
            ),
            (
                "url('https://example.com/').getHost()",
                Value::string("example.com"),
            ),
            (
                "url('https://[::1]:80/').getHost()",
                Value::string("[::1]:80"),
            ),
            ("url('https://[::1]/').getHost()", Value::string("[::1]")),
            ("url('/path').getHost()", Value::string("")),
            (
                "url('https://example.com:80/').getHostname()",
                Value::string("example.com"),
            ),
            (
                "url('https://127.0.0.1:80/').getHostname()",
                Value::string("127.0.0.1"),
            ),
            (
                "url('https://[::1]:80/').getHostname()",
                Value::string("::1"),
            ),
            ("url('/path').getHostname()", Value::string("")),
            (
                "url('https://example.com:80/').getPort()",
                Value::string("80"),
            ),
            ("url('https://example.com/').getPort()", Value::string("")),
            ("url('https://example.com:/').getPort()", Value::string("")),
            ("url('/path').getPort()", Value::string("")),
            (
                "url('https://example.com/path').getEscapedPath()",
                Value::string("/path"),
            ),
            (
                "url('https://example.com/path with spaces/').getEscapedPath()",
                Value::string("/path%20with%20spaces/"),
            ),
            (
                "url('https://example.com/a%2fb').getEscapedPath()",
                Value::string("/a%2fb"),
            ),
            (
                "url('https://example.com').getEscapedPath()",
                Value::string(""),
            ),
            (
                "url('https://user:pass@example.com:80/path?query=val#fragment').getHost()",
                Value::string("example.com:80"),
            ),
            (
                "url('https://example.com/p#frag').getEscapedPath()",
                Value::string("/p"),
            ),
        ]);
    }

    #[test]
    fn get_query_groups_repeated_keys_and_decodes() {
        let map = |entries: &[(&str, Value)]| -> Value {
            let map: Map = entries
                .iter()
                .map(|(key, value)| (Key::String((*key).into()), value.clone()))
                .collect();
            Value::Map(map)
        };
        assert_evaluations(&[
            (
                "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()",
                map(&[("k1", strings(&["a"])), ("k2", strings(&["b", "c"]))]),
            ),
            (
                "url('https://example.com/path?key with spaces=value with spaces').getQuery()",
                map(&[("key with spaces", strings(&["value with spaces"]))]),
            ),
            (
                "url('https://example.com/?a=1+2&b=%41&c&d=%zz&e;f=1').getQuery()",
                map(&[
                    ("a", strings(&["1 2"])),
                    ("b", strings(&["A"])),
                    ("c", strings(&[""])),
                ]),
            ),
            ("url('https://example.com/path?').getQuery()", map(&[])),
            ("url('https://example.com/path').getQuery()", map(&[])),
            (
                "url('https://example.com/?q=1#x=2').getQuery()",
                map(&[("q", strings(&["1"]))]),
            ),
        ]);
    }

    #[test]
    fn is_url_accepts_absolute_uris_and_paths_only() {
        assert_evaluations(&[
            (
                "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
                Value::Bool(true),
            ),
            ("isURL('/absolute-path')", Value::Bool(true)),
            ("isURL('mailto:someone@example.com')", Value::Bool(true)),
            ("isURL('*')", Value::Bool(true)),
            ("isURL('https://a:b:c/')", Value::Bool(false)),
            ("isURL('../relative-path')", Value::Bool(false)),
            ("isURL('relative')", Value::Bool(false)),
            ("isURL('')", Value::Bool(false)),
            ("isURL(':foo')", Value::Bool(false)),
            ("isURL('https://exa mple.com/')", Value::Bool(false)),
            ("isURL('https://example.com/%zz')", Value::Bool(false)),
            ("isURL('https://[::1/')", Value::Bool(false)),
            ("isURL('https://[1.2.3.4]/')", Value::Bool(false)),
            ("isURL('https://[example.com]/')", Value::Bool(false)),
            ("isURL('https://foo[::1]/')", Value::Bool(false)),
            ("isURL('https://[fe80::1%25en0]:8080/')", Value::Bool(true)),
            ("isURL('https://us er@example.com/')", Value::Bool(false)),
            ("isURL('https://example.com/\\x01')", Value::Bool(false)),
        ]);
    }

    #[test]
    fn bad_urls_are_runtime_errors() {
        for text in [
            "url('https://a:b:c/')",
            "url('../relative-path')",
            "url('')",
        ] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn urls_compare_and_print_as_go_does() {
        assert_evaluations(&[
            (
                "url('https://example.com/a') == url('https://example.com/a')",
                Value::Bool(true),
            ),
            (
                "url('https://example.com/a') == url('HTTPS://example.com/a')",
                Value::Bool(true),
            ),
            (
                "url('https://example.com/a') == url('https://example.com/b')",
                Value::Bool(false),
            ),
        ]);
        let cases = [
            (
                "url('https://example.com/path with spaces?q=1#a b')",
                "https://example.com/path%20with%20spaces?q=1#a%20b",
            ),
            (
                "url('https://user:p%40ss@example.com/')",
                "https://user:p%40ss@example.com/",
            ),
            ("url('/a/b?')", "/a/b?"),
            (
                "url('mailto:someone@example.com')",
                "mailto:someone@example.com",
            ),
            (
                "url('https://[fe80::1%25en0]/')",
                "https://[fe80::1%25en0]/",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                to_json(&eval(text)).expect("has a JSON form"),
                serde_json::json!(expected),
                "{text}"
            );
        }
    }

    #[test]
    fn parsing_cost_grows_with_the_text() {
        let long_path = "a".repeat(5_000);
        let short = crate::ext::testing::cost("url('https://example.com/a').getEscapedPath()");
        let long = crate::ext::testing::cost(&format!(
            "url('https://example.com/{long_path}').getEscapedPath()"
        ));
        assert!(long > short + 900, "{short} {long}");
    }

    #[test]
    fn wrong_types_are_rejected_at_check_time() {
        for text in [
            "url(1)",
            "isURL(url('/a'))",
            "'https://a/'.getHost()",
            "url('/a').getQuery(1)",
        ] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }
}
