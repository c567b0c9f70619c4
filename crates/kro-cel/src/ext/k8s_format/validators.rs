//! The string validations behind the named formats, with Kubernetes' error messages:
//! `k8s.io/apimachinery/pkg/util/validation` (DNS names), `pkg/api/validate/content` (label
//! keys and values) and `k8s.io/kube-openapi/pkg/validation/strfmt` (uuid, byte, date,
//! datetime).

use std::sync::LazyLock;

use regex::Regex;

use crate::ext::k8s_url::request_uri_error;

const DNS1123_LABEL_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case \
     alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FORMAT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character";
const DNS1035_LABEL_FORMAT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric \
     characters or '-', start with an alphabetic character, and end with an alphanumeric \
     character";
const LABEL_KEY_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and \
     must start and end with an alphanumeric character";
const LABEL_VALUE_FORMAT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of \
     alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
     character";

/// strfmt's UUID pattern (upper case allowed, hyphens optional).
pub(super) const UUID_PATTERN: &str =
    "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
/// strfmt's pattern for the time part of a date-time (`.` is any character, as upstream).
pub(super) const DATE_TIME_PATTERN: &str =
    "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";

static UUID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(UUID_PATTERN).expect("the UUID pattern is a valid regex"));
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(DATE_TIME_PATTERN).expect("the date-time pattern is a valid regex")
});

/// Kubernetes' `RegexError`: the message, examples, and the pattern used.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let mut text = message.to_string();
    text.push_str(" (e.g. ");
    for (index, example) in examples.iter().enumerate() {
        if index > 0 {
            text.push_str(" or ");
        }
        text.push_str(&format!("'{example}', "));
    }
    text.push_str(&format!("regex used for validation is '{format}')"));
    text
}

fn is_lower_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            is_lower_alphanumeric(*first)
                && is_lower_alphanumeric(*last)
                && bytes
                    .iter()
                    .all(|b| is_lower_alphanumeric(*b) || *b == b'-')
        }
        _ => false,
    }
}

/// Labels joined by dots.
fn matches_dns1123_subdomain(text: &str) -> bool {
    text.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(text: &str) -> bool {
    matches_dns1123_label(text) && text.as_bytes()[0].is_ascii_lowercase()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_label_key_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label` (`k8s.io/apimachinery/pkg/util/validation`).
pub(super) fn dns1123_label(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !matches_dns1123_label(text) {
        errors.push(if matches_dns1123_subdomain(text) {
            "must not contain dots".to_string()
        } else {
            regex_error(
                DNS1123_LABEL_MESSAGE,
                DNS1123_LABEL_FORMAT,
                &["my-name", "123-abc"],
            )
        });
    }
    errors
}

/// `IsDNS1123Subdomain`; `unit` is how the length limit is worded (`characters` in
/// `util/validation`, `bytes` in `validate/content`).
fn dns1123_subdomain_with(text: &str, unit: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 253 {
        errors.push(format!("must be no more than 253 {unit}"));
    }
    if !matches_dns1123_subdomain(text) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_MESSAGE,
            DNS1123_SUBDOMAIN_FORMAT,
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1123Subdomain` (`k8s.io/apimachinery/pkg/util/validation`).
pub(super) fn dns1123_subdomain(text: &str) -> Vec<String> {
    dns1123_subdomain_with(text, "characters")
}

/// `IsDNS1035Label`.
pub(super) fn dns1035_label(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !matches_dns1035_label(text) {
        errors.push(regex_error(
            DNS1035_LABEL_MESSAGE,
            DNS1035_LABEL_FORMAT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// Kubernetes' `maskTrailingDash` for generated-name prefixes: a trailing dash is allowed
/// because more characters follow. Upstream replaces the last two characters with `a`.
pub(super) fn mask_trailing_dash(text: &str) -> String {
    if text.len() > 1 && text.ends_with('-') {
        let mut masked = text.as_bytes()[..text.len() - 2].to_vec();
        masked.push(b'a');
        String::from_utf8_lossy(&masked).into_owned()
    } else {
        text.to_string()
    }
}

/// `IsQualifiedName` (a label key): an optional DNS subdomain prefix and `/`, then a name.
pub(super) fn qualified_name(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = text.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain_with(prefix, "bytes")
                        .into_iter()
                        .map(|error| format!("prefix part {error}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_MESSAGE,
                    LABEL_KEY_FORMAT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_label_key_name(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MESSAGE,
                LABEL_KEY_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// `IsValidLabelValue`: empty, or a label key name of at most 63 bytes.
pub(super) fn label_value(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 63 {
        errors.push("must be no more than 63 bytes".to_string());
    }
    if !text.is_empty() && !matches_label_key_name(text) {
        errors.push(regex_error(
            LABEL_VALUE_MESSAGE,
            LABEL_VALUE_FORMAT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// `url.ParseRequestURI` must accept the text; its error is the message.
pub(super) fn uri(text: &str) -> Vec<String> {
    request_uri_error(text)
        .map(|error| vec![format!("parse {text:?}: {error}")])
        .unwrap_or_default()
}

/// strfmt's `uuid`.
pub(super) fn uuid(text: &str) -> Vec<String> {
    if UUID.is_match(text) {
        Vec::new()
    } else {
        vec!["does not match the UUID format".to_string()]
    }
}

/// strfmt's `byte`: padded standard base64 of at least one group.
pub(super) fn base64(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let is_alphabet = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/');
    let valid = !bytes.is_empty()
        && bytes.len().is_multiple_of(4)
        && bytes[..bytes.len() - 4].iter().all(is_alphabet)
        && match &bytes[bytes.len() - 4..] {
            [a, b, b'=', b'='] => is_alphabet(a) && is_alphabet(b),
            [a, b, c, b'='] => is_alphabet(a) && is_alphabet(b) && is_alphabet(c),
            last => last.iter().all(is_alphabet),
        };
    if valid {
        Vec::new()
    } else {
        vec!["invalid base64".to_string()]
    }
}

/// Go's `time` atoi: an optional sign, then digits (possibly none).
fn go_time_atoi(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0i64, |value, digit| value * 10 + i64::from(digit - b'0'));
    Some(if negative { -value } else { value })
}

fn two_digits(text: &[u8]) -> Option<u32> {
    match text {
        [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(u32::from(a - b'0') * 10 + u32::from(b - b'0'))
        }
        _ => None,
    }
}

/// Whether `text` parses with Go's `time.Parse("2006-01-02", text)`: the calendar date
/// check of Kubernetes' `date` format, shared by CEL's `isDate` and schema validation.
pub fn is_go_date(text: &str) -> bool {
    let text = text.as_bytes();
    if text.len() != 10 || text[4] != b'-' || text[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (
        go_time_atoi(&text[..4]),
        two_digits(&text[5..7]),
        two_digits(&text[8..10]),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `date`.
pub(super) fn date(text: &str) -> Vec<String> {
    if is_go_date(text) {
        Vec::new()
    } else {
        vec!["invalid date".to_string()]
    }
}

/// strfmt's `datetime` (`IsDateTime`): a date, `t`, then the time pattern on the part up to
/// any further `t`, with hours at most 23 and minutes and seconds at most 59.
pub(super) fn datetime(text: &str) -> Vec<String> {
    let valid = text.len() >= 4 && {
        let lower = text.to_lowercase();
        let mut parts = lower.split('t');
        let date_part = parts.next().unwrap_or_default();
        match parts.next() {
            Some(time_part) if is_go_date(date_part) => {
                DATE_TIME.captures(time_part).is_some_and(|captures| {
                    let field = |index: usize| captures.get(index).map_or("", |m| m.as_str());
                    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
                })
            }
            _ => false,
        }
    };
    if valid {
        Vec::new()
    } else {
        vec!["invalid datetime".to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names_follow_apimachinery() {
        assert!(dns1123_label("my-name").is_empty());
        assert_eq!(dns1123_label("my.name"), vec!["must not contain dots"]);
        assert_eq!(dns1123_label("-a").len(), 1);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert!(dns1123_subdomain("apiextensions.k8s.io").is_empty());
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
        assert!(dns1035_label("abc-123").is_empty());
        assert_eq!(dns1035_label("1abc").len(), 1);
        let expected = format!(
            "{DNS1123_LABEL_MESSAGE} (e.g. 'my-name',  or '123-abc', regex used for validation \
             is '{DNS1123_LABEL_FORMAT}')"
        );
        assert_eq!(dns1123_label("A"), vec![expected]);
    }

    #[test]
    fn prefixes_mask_the_trailing_dash_as_upstream() {
        assert_eq!(mask_trailing_dash("my-prefix-"), "my-prefia");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert_eq!(mask_trailing_dash("ab"), "ab");
    }

    #[test]
    fn label_keys_and_values_follow_apimachinery() {
        assert!(qualified_name("apiextensions.k8s.io/v1beta1").is_empty());
        assert!(qualified_name("MyName").is_empty());
        assert_eq!(
            qualified_name("/name"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert_eq!(qualified_name("").len(), 2);
        assert!(label_value("").is_empty());
        assert!(label_value("my_value").is_empty());
        assert_eq!(label_value("-bad").len(), 1);
    }

    #[test]
    fn openapi_formats_follow_strfmt() {
        assert!(uuid("123e4567-e89b-12d3-a456-426614174000").is_empty());
        assert!(uuid("123E4567E89B12D3A456426614174000").is_empty());
        assert!(!uuid("123e4567").is_empty());
        assert!(base64("aGVsbG8=").is_empty());
        assert!(base64("aGVsbA==").is_empty());
        assert!(!base64("").is_empty());
        assert!(!base64("aGVsbG8").is_empty());
        assert!(!base64("a===").is_empty());
        assert!(date("2021-01-01").is_empty());
        assert!(date("2024-02-29").is_empty());
        assert!(!date("2023-02-29").is_empty());
        assert!(!date("2021-13-01").is_empty());
        assert!(!date("2021-1-01").is_empty());
        assert!(datetime("2021-01-01T00:00:00Z").is_empty());
        assert!(datetime("2021-01-01t23:59:59.123+02:00").is_empty());
        assert!(!datetime("2021-01-01T24:00:00Z").is_empty());
        assert!(!datetime("2021-01-01").is_empty());
        assert!(!datetime("2021-01-01T00:00:00").is_empty());
    }
}
