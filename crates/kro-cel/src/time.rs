//! Timestamps and durations: CEL's ranges, RFC 3339 and Go-style duration text, time zones.

use std::fmt;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDateTime, Offset, TimeZone, Timelike, Utc};

use crate::error::{EvalError, EvalErrorKind};

const NANOS_PER_SECOND: i128 = 1_000_000_000;
/// 0001-01-01T00:00:00Z
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
/// 9999-12-31T23:59:59Z
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;

/// A point in time between years 1 and 9999, with nanosecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    seconds: i64,
    nanos: u32,
}

/// A signed span of time with nanosecond precision, of at most about ±292 years (a signed
/// 64-bit count of nanoseconds, as in cel-go and Kubernetes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Duration {
    nanos: i64,
}

fn out_of_range(what: &'static str) -> EvalError {
    EvalError::new(EvalErrorKind::OutOfRange(what))
}

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Timestamp = Timestamp {
        seconds: 0,
        nanos: 0,
    };

    /// The timestamp `seconds` and `nanos` after the Unix epoch.
    ///
    /// # Errors
    /// `OutOfRange` outside years 1 to 9999.
    pub fn new(seconds: i64, nanos: u32) -> Result<Self, EvalError> {
        Self::from_nanos(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
    }

    pub(crate) fn from_nanos(total: i128) -> Result<Self, EvalError> {
        let seconds = total.div_euclid(NANOS_PER_SECOND);
        let nanos = total.rem_euclid(NANOS_PER_SECOND) as u32;
        if seconds < i128::from(MIN_TIMESTAMP_SECONDS)
            || seconds > i128::from(MAX_TIMESTAMP_SECONDS)
        {
            return Err(out_of_range("timestamp"));
        }
        Ok(Timestamp {
            seconds: seconds as i64,
            nanos,
        })
    }

    pub(crate) fn total_nanos(self) -> i128 {
        i128::from(self.seconds) * NANOS_PER_SECOND + i128::from(self.nanos)
    }

    /// Whole seconds since the Unix epoch.
    pub fn seconds(self) -> i64 {
        self.seconds
    }

    /// The nanoseconds within the second.
    pub fn nanos(self) -> u32 {
        self.nanos
    }

    /// Parses RFC 3339 text such as `2009-02-13T23:31:30Z` or `2009-02-13T23:31:30.5+01:00`.
    ///
    /// # Errors
    /// `Conversion` for malformed text, `OutOfRange` outside years 1 to 9999.
    pub fn parse(text: &str) -> Result<Self, EvalError> {
        let parsed = DateTime::parse_from_rfc3339(text).map_err(|error| {
            // chrono cannot represent some out-of-range years; report those as range errors.
            let year: Option<i64> = text.split('-').next().and_then(|y| y.parse().ok());
            if year.is_some_and(|y| !(1..=9999).contains(&y)) {
                return out_of_range("timestamp");
            }
            EvalError::new(EvalErrorKind::Conversion {
                from: "string".into(),
                to: "timestamp".into(),
                reason: error.to_string(),
            })
        })?;
        Timestamp::new(parsed.timestamp(), parsed.timestamp_subsec_nanos())
    }

    /// Adds a duration.
    ///
    /// # Errors
    /// `OutOfRange` when the result leaves years 1 to 9999.
    pub fn checked_add(self, duration: Duration) -> Result<Self, EvalError> {
        Self::from_nanos(self.total_nanos() + duration.total_nanos())
    }

    /// Subtracts a duration.
    ///
    /// # Errors
    /// `OutOfRange` when the result leaves years 1 to 9999.
    pub fn checked_sub(self, duration: Duration) -> Result<Self, EvalError> {
        Self::from_nanos(self.total_nanos() - duration.total_nanos())
    }

    /// The duration from `other` to `self`.
    ///
    /// # Errors
    /// `OutOfRange` when the difference exceeds the duration range.
    pub fn since(self, other: Timestamp) -> Result<Duration, EvalError> {
        Duration::from_nanos(self.total_nanos() - other.total_nanos())
    }

    pub(crate) fn to_utc(self) -> DateTime<Utc> {
        // The range check in the constructors keeps this representable.
        DateTime::from_timestamp(self.seconds, self.nanos).unwrap_or_default()
    }

    /// The calendar fields of this instant in a time zone: `UTC`, an IANA name such as
    /// `America/Los_Angeles`, or a fixed offset such as `+05:30`, `-08:00` or `02:00`.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown zone.
    pub fn fields_in(self, zone: Option<&str>) -> Result<CalendarFields, EvalError> {
        let utc = self.to_utc();
        let local: NaiveDateTime = match zone {
            None => utc.naive_utc(),
            Some(zone) => {
                if let Some(offset) = parse_fixed_offset(zone) {
                    utc.with_timezone(&offset).naive_local()
                } else {
                    let tz: chrono_tz::Tz = zone.parse().map_err(|_| {
                        EvalError::invalid_argument(
                            "timestamp",
                            format!("unknown time zone '{zone}'"),
                        )
                    })?;
                    let offset = tz.offset_from_utc_datetime(&utc.naive_utc()).fix();
                    utc.with_timezone(&offset).naive_local()
                }
            }
        };
        Ok(CalendarFields {
            year: i64::from(local.year()),
            month0: i64::from(local.month0()),
            day_of_month0: i64::from(local.day0()),
            day_of_year0: i64::from(local.ordinal0()),
            day_of_week: i64::from(local.weekday().num_days_from_sunday()),
            hours: i64::from(local.hour()),
            minutes: i64::from(local.minute()),
            seconds: i64::from(local.second()),
            milliseconds: i64::from(self.nanos / 1_000_000),
        })
    }
}

/// `+05:30`, `-08:00`, `02:00` (a missing sign means east of UTC).
fn parse_fixed_offset(zone: &str) -> Option<FixedOffset> {
    let (sign, rest) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        b'0'..=b'9' => (1, zone),
        _ => return None,
    };
    let (hours, minutes) = rest.split_once(':')?;
    let hours: i32 = hours.parse().ok()?;
    let minutes: i32 = minutes.parse().ok()?;
    if hours > 23 || minutes > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// A timestamp's calendar fields in one time zone, numbered as CEL's accessors report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalendarFields {
    /// The full year.
    pub year: i64,
    /// Month, January = 0.
    pub month0: i64,
    /// Day of the month, first = 0.
    pub day_of_month0: i64,
    /// Day of the year, January 1st = 0.
    pub day_of_year0: i64,
    /// Day of the week, Sunday = 0.
    pub day_of_week: i64,
    /// Hour of the day.
    pub hours: i64,
    /// Minute of the hour.
    pub minutes: i64,
    /// Second of the minute.
    pub seconds: i64,
    /// Millisecond of the second.
    pub milliseconds: i64,
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with as many fractional digits as needed (none for whole seconds).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let utc = self.to_utc();
        write!(f, "{}", utc.format("%Y-%m-%dT%H:%M:%S"))?;
        if self.nanos > 0 {
            let fraction = format!("{:09}", self.nanos);
            write!(f, ".{}", fraction.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

impl Duration {
    /// A duration of `seconds` plus `nanos` (both may be negative).
    ///
    /// # Errors
    /// `OutOfRange` beyond about ±292 years.
    pub fn new(seconds: i64, nanos: i64) -> Result<Self, EvalError> {
        Self::from_nanos(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
    }

    /// A duration from a count of nanoseconds.
    ///
    /// # Errors
    /// `OutOfRange` beyond about ±292 years.
    pub fn from_nanos(total: i128) -> Result<Self, EvalError> {
        i64::try_from(total)
            .map(|nanos| Duration { nanos })
            .map_err(|_| out_of_range("duration"))
    }

    /// The whole length in nanoseconds.
    pub fn total_nanos(self) -> i128 {
        i128::from(self.nanos)
    }

    /// Whole seconds (truncated toward zero).
    pub fn seconds(self) -> i64 {
        self.nanos / 1_000_000_000
    }

    /// The nanoseconds beyond the whole seconds (same sign as the duration).
    pub fn subsecond_nanos(self) -> i32 {
        (self.nanos % 1_000_000_000) as i32
    }

    /// Parses Go duration text: an optional sign, then one or more decimal numbers each with a
    /// unit (`h`, `m`, `s`, `ms`, `us`, `µs`, `ns`), such as `1h30m`, `-1.5s` or `0`.
    ///
    /// # Errors
    /// `Conversion` for malformed text, `OutOfRange` beyond about ±10,000 years.
    pub fn parse(text: &str) -> Result<Self, EvalError> {
        let invalid = || {
            EvalError::new(EvalErrorKind::Conversion {
                from: "string".into(),
                to: "duration".into(),
                reason: format!("invalid duration '{text}'"),
            })
        };
        let (negative, mut rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if rest == "0" {
            return Ok(Duration::default());
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: i128 = 0;
        while !rest.is_empty() {
            let number_end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(invalid)?;
            let (number, after) = rest.split_at(number_end);
            let unit_end = after
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(after.len());
            let (unit, after) = after.split_at(unit_end);
            let unit_nanos: i128 = match unit {
                "ns" => 1,
                "us" | "µs" | "μs" => 1_000,
                "ms" => 1_000_000,
                "s" => NANOS_PER_SECOND,
                "m" => 60 * NANOS_PER_SECOND,
                "h" => 3600 * NANOS_PER_SECOND,
                _ => return Err(invalid()),
            };
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if whole.is_empty() && fraction.is_empty() {
                return Err(invalid());
            }
            let whole: i128 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| out_of_range("duration"))?
            };
            let mut part = whole
                .checked_mul(unit_nanos)
                .ok_or_else(|| out_of_range("duration"))?;
            let mut scale = unit_nanos;
            for digit in fraction.bytes() {
                scale /= 10;
                if scale == 0 {
                    break;
                }
                part += i128::from(digit - b'0') * scale;
            }
            total = total
                .checked_add(part)
                .ok_or_else(|| out_of_range("duration"))?;
            if total > i128::from(i64::MAX) + 1 {
                return Err(out_of_range("duration"));
            }
            rest = after;
        }
        Self::from_nanos(if negative { -total } else { total })
    }

    /// Adds two durations.
    ///
    /// # Errors
    /// `OutOfRange` beyond about ±292 years.
    pub fn checked_add(self, other: Duration) -> Result<Self, EvalError> {
        Self::from_nanos(self.total_nanos() + other.total_nanos())
    }

    /// Subtracts a duration.
    ///
    /// # Errors
    /// `OutOfRange` beyond about ±292 years.
    pub fn checked_sub(self, other: Duration) -> Result<Self, EvalError> {
        Self::from_nanos(self.total_nanos() - other.total_nanos())
    }

    /// The negated duration.
    ///
    /// # Errors
    /// Never in practice: the range is symmetric.
    pub fn negate(self) -> Result<Self, EvalError> {
        Self::from_nanos(-self.total_nanos())
    }
}

impl fmt::Display for Duration {
    /// Seconds with as many fractional digits as needed: `1000000s`, `1.5s`, `-0.000000001s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total_nanos();
        let sign = if total < 0 { "-" } else { "" };
        let magnitude = total.unsigned_abs();
        let seconds = magnitude / NANOS_PER_SECOND as u128;
        let nanos = magnitude % NANOS_PER_SECOND as u128;
        if nanos == 0 {
            write!(f, "{sign}{seconds}s")
        } else {
            let fraction = format!("{nanos:09}");
            write!(f, "{sign}{seconds}.{}s", fraction.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        for text in [
            "2009-02-13T23:31:30Z",
            "9999-12-31T23:59:59.999999999Z",
            "0001-01-01T00:00:00Z",
            "1970-01-01T00:00:00.5Z",
        ] {
            assert_eq!(Timestamp::parse(text).expect(text).to_string(), text);
        }
        let shifted = Timestamp::parse("2009-02-14T00:31:30+01:00").expect("parses");
        assert_eq!(shifted.to_string(), "2009-02-13T23:31:30Z");
    }

    #[test]
    fn timestamps_outside_years_1_to_9999_are_out_of_range() {
        for text in ["0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z"] {
            let error = Timestamp::parse(text).expect_err(text);
            assert_eq!(error.kind(), &EvalErrorKind::OutOfRange("timestamp"));
        }
        assert!(Timestamp::new(253_402_300_800, 0).is_err());
        assert!(Timestamp::new(-62_135_596_801, 0).is_err());
    }

    #[test]
    fn go_style_durations_parse() {
        let cases = [
            ("1h30m", 5400 * NANOS_PER_SECOND),
            ("-1.5s", -1_500_000_000),
            ("0", 0),
            ("1ms2us3ns", 1_002_003),
            ("1µs", 1_000),
            ("9000000000s", 9_000_000_000 * NANOS_PER_SECOND),
        ];
        for (text, nanos) in cases {
            assert_eq!(
                Duration::parse(text).expect(text).total_nanos(),
                nanos,
                "{text}"
            );
        }
        for text in ["", "1", "1x", "h", "--1s", "1.s.s"] {
            assert!(Duration::parse(text).is_err(), "{text}");
        }
        assert_eq!(
            Duration::parse("320000000000s")
                .expect_err("too long")
                .kind(),
            &EvalErrorKind::OutOfRange("duration")
        );
    }

    #[test]
    fn durations_print_as_seconds() {
        let cases = [
            ("1000000s", "1000000s"),
            ("1.5s", "1.5s"),
            ("-1ns", "-0.000000001s"),
        ];
        for (text, printed) in cases {
            assert_eq!(Duration::parse(text).expect(text).to_string(), printed);
        }
    }

    #[test]
    fn calendar_fields_honour_time_zones() {
        let instant = Timestamp::parse("2009-02-13T23:31:30Z").expect("parses");
        let sydney = instant
            .fields_in(Some("Australia/Sydney"))
            .expect("known zone");
        assert_eq!(sydney.day_of_month0, 13);
        let kathmandu = instant
            .fields_in(Some("Asia/Kathmandu"))
            .expect("known zone");
        assert_eq!(kathmandu.minutes, 16);
        let offset = instant.fields_in(Some("02:00")).expect("offset");
        assert_eq!(offset.hours, 1);
        assert!(instant.fields_in(Some("Mars/Olympus")).is_err());
    }
}
