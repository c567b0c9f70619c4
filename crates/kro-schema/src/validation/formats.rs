//! The string formats CRD schemas may use and how kube-openapi's `strfmt` registry checks
//! them. Names compare without dashes (`date-time` is `datetime`), as go-openapi normalizes
//! them. Where Go delegates to its standard library (`net/mail`, `net/url`), the check here
//! follows the same grammar without every corner of Go's parser.

use std::net::Ipv6Addr;
use std::sync::LazyLock;

use regex::Regex;

/// The formats Kubernetes validates in CRD schemas (as of 1.34), normalized.
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// The supported format `format` names, compared without dashes.
fn canonical(format: &str) -> Option<&'static str> {
    SUPPORTED
        .iter()
        .copied()
        .find(|supported| format.bytes().filter(|b| *b != b'-').eq(supported.bytes()))
}

/// Whether Kubernetes validates this string format (others are ignored).
pub(super) fn is_supported(format: &str) -> bool {
    canonical(format).is_some()
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the format patterns of this file are valid")
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let channel = r"\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*";
    regex(&format!(r"^rgb\({channel},{channel},{channel}\)$"))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static DATE_TIME_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static DURATION_TERM: LazyLock<Regex> = LazyLock::new(|| regex(r"(([0-9]+)\s*([A-Za-zµ]+))"));
static SHORT_NAME: LazyLock<Regex> = LazyLock::new(|| regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));

/// Whether `data` is valid for a supported `format`.
pub(super) fn validates(format: &str, data: &str) -> bool {
    match canonical(format).unwrap_or("") {
        "bsonobjectid" => data.len() == 24 && data.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(data),
        "email" => is_email(data),
        "hostname" => {
            HOSTNAME.is_match(data)
                && data.len() <= 255
                && data.split('.').all(|label| label.len() <= 63)
        }
        "ipv4" => parse_ip_sloppy(data) && data.contains('.'),
        "ipv6" => data.parse::<Ipv6Addr>().is_ok() && data.contains(':'),
        "cidr" => is_cidr(data),
        "mac" => is_mac(data),
        "uuid" => UUID.is_match(data),
        "uuid3" => UUID3.is_match(data),
        "uuid4" => UUID4.is_match(data),
        "uuid5" => UUID5.is_match(data),
        "isbn" => is_isbn10(data) || is_isbn13(data),
        "isbn10" => is_isbn10(data),
        "isbn13" => is_isbn13(data),
        "creditcard" => is_credit_card(data),
        "ssn" => data.len() == 11 && SSN.is_match(data),
        "hexcolor" => HEX_COLOR.is_match(data),
        "rgbcolor" => RGB_COLOR.is_match(data),
        "byte" => BASE64.is_match(data),
        "password" => true,
        "date" => kro_cel::is_go_date(data),
        "duration" => is_duration(data),
        "datetime" => is_date_time(data),
        "k8sshortname" => data.len() <= 63 && SHORT_NAME.is_match(data),
        "k8slongname" => data.len() <= 253 && LONG_NAME.is_match(data),
        _ => true,
    }
}

/// strfmt's `IsDateTime`: a date, `t`, then a clock with an offset or `z` (case-insensitive).
fn is_date_time(data: &str) -> bool {
    if data.len() < 4 {
        return false;
    }
    let lower = data.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(clock)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !kro_cel::is_go_date(date) {
        return false;
    }
    DATE_TIME_CLOCK.captures(clock).is_some_and(|m| {
        let part = |i: usize| m.get(i).map_or("", |part| part.as_str());
        part(1) <= "23" && part(2) <= "59" && part(3) <= "59"
    })
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, else any `<digits> <unit>` term with
/// a unit it knows (`5 days`, `1 week`).
fn is_duration(data: &str) -> bool {
    if is_go_duration(data) {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut known = false;
    for term in DURATION_TERM.captures_iter(data) {
        let digits = term.get(2).map_or("", |m| m.as_str());
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = term.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (index, variant) in variants.iter().enumerate() {
                if (index == last && unit.starts_with(variant)) || unit == *variant {
                    known = true;
                }
            }
        }
    }
    known
}

/// Go's `time.ParseDuration` grammar: `[-+]` then `0` or terms like `1.5h`, `300ms`, within
/// ±2^63 nanoseconds.
fn is_go_duration(data: &str) -> bool {
    let text = data.strip_prefix(['-', '+']).unwrap_or(data);
    if text == "0" {
        return true;
    }
    if text.is_empty() {
        return false;
    }
    let mut rest = text;
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let nanoseconds = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return false,
        };
        total += number.parse::<f64>().unwrap_or(f64::INFINITY) * nanoseconds;
        rest = after;
    }
    total <= 9.223_372_036_854_775e18
}

/// `ParseIPSloppy` from k8s.io/utils/net: IPv4 octets may have leading zeros.
fn parse_ip_sloppy(data: &str) -> bool {
    if data.contains(':') {
        return data.parse::<Ipv6Addr>().is_ok();
    }
    let octets: Vec<&str> = data.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|octet| {
            !octet.is_empty()
                && octet.bytes().all(|b| b.is_ascii_digit())
                && octet.trim_start_matches('0').len() <= 3
                && octet.parse::<u32>().is_ok_and(|value| value <= 255)
        })
}

fn is_cidr(data: &str) -> bool {
    let Some((address, prefix)) = data.split_once('/') else {
        return false;
    };
    let bits = if address.contains(':') { 128 } else { 32 };
    parse_ip_sloppy(address)
        && !prefix.is_empty()
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix
            .trim_start_matches('0')
            .parse::<u32>()
            .map_or(prefix.bytes().all(|b| b == b'0'), |value| value <= bits)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb:..`, `aa-bb-..` or `aabb.ccdd...`.
fn is_mac(data: &str) -> bool {
    let bytes = data.as_bytes();
    if bytes.len() < 14 {
        return false;
    }
    let hex_groups = |separator: u8, width: usize| {
        let groups: Vec<&[u8]> = bytes.split(|b| *b == separator).collect();
        let octets = groups.len() * width / 2;
        matches!(octets, 6 | 8 | 20)
            && groups
                .iter()
                .all(|group| group.len() == width && group.iter().all(u8::is_ascii_hexdigit))
    };
    if bytes[2] == b':' || bytes[2] == b'-' {
        hex_groups(bytes[2], 2)
    } else if bytes[4] == b'.' {
        hex_groups(b'.', 4)
    } else {
        false
    }
}

fn isbn_digits(data: &str) -> String {
    data.chars()
        .filter(|c| !(c.is_whitespace() || *c == '-'))
        .collect()
}

fn is_isbn10(data: &str) -> bool {
    let digits = isbn_digits(data);
    let bytes = digits.as_bytes();
    let shape = bytes.len() == 10
        && bytes[..9].iter().all(u8::is_ascii_digit)
        && (bytes[9].is_ascii_digit() || bytes[9] == b'X');
    if !shape {
        return false;
    }
    let mut checksum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(bytes[i] - b'0'))
        .sum();
    checksum += 10
        * if bytes[9] == b'X' {
            10
        } else {
            u32::from(bytes[9] - b'0')
        };
    checksum.is_multiple_of(11)
}

fn is_isbn13(data: &str) -> bool {
    let digits = isbn_digits(data);
    let bytes = digits.as_bytes();
    if bytes.len() != 13 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let checksum: u32 = (0..12)
        .map(|i| if i % 2 == 0 { 1 } else { 3 } * u32::from(bytes[i] - b'0'))
        .sum();
    u32::from(bytes[12] - b'0') == (10 - checksum % 10) % 10
}

/// govalidator's `IsCreditCard`: a known issuer pattern over the digits, and the Luhn sum.
fn is_credit_card(data: &str) -> bool {
    let digits: String = data.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0;
    for (position, digit) in digits.bytes().rev().enumerate() {
        let mut value = u32::from(digit - b'0');
        if position % 2 == 1 {
            value *= 2;
            if value >= 10 {
                value = value % 10 + 1;
            }
        }
        sum += value;
    }
    sum.is_multiple_of(10)
}

/// Go's `url.ParseRequestURI`: `*`, an absolute path, or a scheme with an opaque part or a
/// valid authority; no control characters and well-formed `%` escapes.
fn is_request_uri(data: &str) -> bool {
    if data.is_empty() || data.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if data == "*" {
        return true;
    }
    let (scheme, rest) = split_scheme(data);
    if scheme == Some("") {
        return false;
    }
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    if !rest.starts_with('/') {
        return scheme.is_some();
    }
    let path = match rest.strip_prefix("//").filter(|_| scheme.is_some()) {
        Some(after) => {
            let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !is_authority(authority) {
                return false;
            }
            path
        }
        None => rest,
    };
    has_valid_escapes(path)
}

fn split_scheme(data: &str) -> (Option<&str>, &str) {
    for (index, c) in data.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if index > 0 => {}
            ':' => return (Some(&data[..index]), &data[index + 1..]),
            _ => return (None, data),
        }
    }
    (None, data)
}

fn is_authority(authority: &str) -> bool {
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let port = if let Some(inner) = host.strip_prefix('[') {
        match inner.split_once(']') {
            Some((_, after)) => after,
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or("", |(_, port)| port)
    };
    let port = port.strip_prefix(':').unwrap_or(port);
    port.bytes().all(|b| b.is_ascii_digit()) && has_valid_escapes(authority)
}

fn has_valid_escapes(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let valid = bytes
                .get(index + 1..index + 3)
                .is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit));
            if !valid {
                return false;
            }
            index += 3;
        } else {
            index += 1;
        }
    }
    true
}

/// Go's `mail.ParseAddress`, for the common shapes: `local@domain` or
/// `Display Name <local@domain>`.
fn is_email(data: &str) -> bool {
    let data = data.trim();
    let address = match data.rfind('<') {
        Some(open) => match data[open + 1..].strip_suffix('>') {
            Some(inner) => inner,
            None => return false,
        },
        None => data,
    };
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let dot_atom = |text: &str| {
        !text.is_empty()
            && text
                .split('.')
                .all(|atom| !atom.is_empty() && atom.chars().all(atext))
    };
    let quoted = |text: &str| text.len() >= 2 && text.starts_with('"') && text.ends_with('"');
    let literal = |text: &str| text.starts_with('[') && text.ends_with(']');
    (dot_atom(local) || quoted(local)) && (dot_atom(domain) || literal(domain))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject_as_strfmt_does() {
        let cases: &[(&str, &str, bool)] = &[
            ("byte", "aGVsbG8=", true),
            ("byte", "hello!", false),
            ("byte", "", false),
            ("date-time", "2024-02-29T10:00:00Z", true),
            ("date-time", "2024-02-29T10:00:00.5+01:00", true),
            ("date-time", "2023-02-29T10:00:00Z", false),
            ("date-time", "2024-01-01T24:00:00Z", false),
            ("date-time", "2024-01-01", false),
            ("date", "2024-12-31", true),
            ("date", "2024-13-01", false),
            ("duration", "1h30m", true),
            ("duration", "5 days", true),
            ("duration", "soon", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:00:5e:00:53:01", true),
            ("mac", "0000.5e00.5301", true),
            ("mac", "00:00:5e:00:53", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-.com", false),
            ("uri", "https://example.com/a%20b?q=1", true),
            ("uri", "/absolute/path", true),
            ("uri", "relative/path", false),
            ("email", "Jane <jane@example.com>", true),
            ("email", "not-an-email", false),
            ("isbn", "978-0321751041", true),
            ("isbn10", "0321751043", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("creditcard", "4111 1111 1111 1112", false),
            ("ssn", "123-45-6789", true),
            ("hexcolor", "#fff", true),
            ("rgbcolor", "rgb(255, 0, 10)", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("k8s-short-name", "a-", false),
            ("k8s-long-name", "a.b-c", true),
            ("k8s-long-name", "a.-", false),
        ];
        for (format, data, expected) in cases {
            assert!(is_supported(format), "{format}");
            assert_eq!(validates(format, data), *expected, "{format} {data:?}");
        }
    }

    #[test]
    fn unsupported_formats_are_not_validated() {
        assert!(!is_supported("int-or-string"));
        assert!(!is_supported("quantity"));
    }
}
