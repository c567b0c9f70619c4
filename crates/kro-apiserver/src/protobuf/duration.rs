//! Go's `time.Duration` text form (`1h2m3.5s`, `150ms`), which `metav1.Duration` uses in
//! JSON while protobuf carries nanoseconds.

const UNITS: [(&str, i128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("", 0),
];

fn fraction(value: i128, unit: i128) -> String {
    let whole = value / unit;
    let rest = value % unit;
    if rest == 0 {
        return whole.to_string();
    }
    let width = unit.to_string().len() - 1;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Formats nanoseconds as Go's `Duration.String` does.
pub(crate) fn format(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let value = i128::from(nanos).abs();
    if value == 0 {
        return "0s".to_owned();
    }
    if value < 1_000 {
        return format!("{sign}{value}ns");
    }
    if value < 1_000_000 {
        return format!("{sign}{}µs", fraction(value, 1_000));
    }
    if value < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(value, 1_000_000));
    }
    let hours = value / 3_600_000_000_000;
    let minutes = (value / 60_000_000_000) % 60;
    let seconds = value % 60_000_000_000;
    let mut out = sign.to_owned();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{}s", fraction(seconds, 1_000_000_000)));
    out
}

/// Parses Go's duration syntax into nanoseconds.
pub(crate) fn parse(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total: i128 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let (unit_name, unit) = UNITS
            .iter()
            .filter(|(name, _)| !name.is_empty() && after.starts_with(name))
            .max_by_key(|(name, _)| name.len())?;
        let (whole, fractional) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fractional.is_empty() {
            return None;
        }
        let whole: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let mut value = whole.checked_mul(*unit)?;
        let mut scale = *unit;
        for digit in fractional.chars() {
            scale /= 10;
            value += i128::from(digit.to_digit(10)?) * scale;
        }
        total = total.checked_add(value)?;
        rest = &after[unit_name.len()..];
    }
    let total = if negative { -total } else { total };
    i64::try_from(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_format_and_parse_as_go_writes_them() {
        for (nanos, text) in [
            (0, "0s"),
            (100, "100ns"),
            (1_500, "1.5µs"),
            (150_000_000, "150ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (-3_723_000_000_000, "-1h2m3s"),
        ] {
            assert_eq!(format(nanos), text);
            assert_eq!(parse(text), Some(nanos));
        }
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse("abc"), None);
        assert_eq!(parse(""), None);
    }
}
