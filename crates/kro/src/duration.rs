//! Durations written on the command line (`250ms`, `2s`, `1m`), for flags that take one.

use std::time::Duration;

/// A duration written `250ms`, `2s` or `1m`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: use a number with ms, s or m"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number.saturating_mul(60))),
        _ => Err(format!(
            "{text:?} is not a duration: use a number with ms, s or m"
        )),
    }
}

/// A duration as [`parse_duration`] reads it back: `2m`, `1s` or `250ms`.
pub(crate) fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis > 0 && millis.is_multiple_of(60_000) {
        format!("{}m", millis / 60_000)
    } else if millis.is_multiple_of(1_000) {
        format!("{}s", millis / 1_000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::{format, parse_duration};
    use std::time::Duration;

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("fast").is_err());
        for text in ["250ms", "2s", "1m", "90s"] {
            assert_eq!(format(parse_duration(text).unwrap()), text);
        }
    }
}
