//! JSON text exactly as upstream kro's `json.marshal` writes it: Go's `encoding/json` applied to
//! the value converted to Go (`conversion.GoNativeType`).
//!
//! - Object keys sorted by their bytes; no whitespace.
//! - Strings escaped as Go does by default: `"` and `\`, `\n` `\r` `\t` `\b` `\f`, other
//!   control characters as `\u00XX`, the HTML characters `<` `>` `&` as `\u003c` `\u003e`
//!   `\u0026`, and U+2028 and U+2029; everything else is written as is.
//! - Doubles in the shortest form that reads back exactly, in plain notation between 1e-6 and
//!   1e21 and with an exponent (`1e+21`, `1.5e-7`) outside; NaN and infinities are errors.
//! - Bytes as padded standard base64; timestamps as RFC 3339 in UTC without fractional seconds
//!   (`null` for 0001-01-01T00:00:00Z, Go's zero time); durations as Go prints them
//!   (`1h30m0s`, `1.5ms`); optionals as their value or `null`; the omit sentinel as `{}`.
//! - Map keys other than strings, types and opaque values are errors.

use std::fmt::Write as _;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::ext::is_omit;
use crate::json::MAX_JSON_DEPTH;
use crate::time::{Duration, Timestamp};
use crate::value::{Key, Value};

/// Go's zero `time.Time`, which Kubernetes writes as `null`: 0001-01-01T00:00:00Z.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Output written between two charges to the budget.
const CHARGE_EVERY_BYTES: usize = 1024;

/// `value` as Go's `encoding/json` would write it.
pub(super) fn marshal(value: &Value, budget: &mut Budget) -> EvalResult<String> {
    let mut writer = Writer {
        out: String::new(),
        charged: 0,
        budget,
    };
    writer.value(value, 0)?;
    writer.charge()?;
    Ok(writer.out)
}

fn convert_error(reason: String) -> EvalError {
    EvalError::invalid_argument("json.marshal", format!("failed to convert value: {reason}"))
}

fn encode_error(reason: String) -> EvalError {
    EvalError::invalid_argument("json.marshal", format!("failed to encode value: {reason}"))
}

struct Writer<'b> {
    out: String,
    /// How much of `out` has been paid for.
    charged: usize,
    budget: &'b mut Budget,
}

impl Writer<'_> {
    /// Pays a unit for an element of a list or map about to be written: writing one takes
    /// more than its few bytes of output suggest.
    fn element(&mut self) -> EvalResult<()> {
        self.budget.charge(1)
    }

    /// Pays for the output written since the last charge.
    fn charge(&mut self) -> EvalResult<()> {
        let written = self.out.len() - self.charged;
        self.charged = self.out.len();
        self.budget.charge(traversal_cost(written))
    }

    fn value(&mut self, value: &Value, depth: usize) -> EvalResult<()> {
        if depth > MAX_JSON_DEPTH {
            return Err(EvalError::new(EvalErrorKind::NestingTooDeep(
                MAX_JSON_DEPTH,
            )));
        }
        if self.out.len() - self.charged >= CHARGE_EVERY_BYTES {
            self.charge()?;
        }
        match value {
            Value::Null | Value::Optional(None) => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => push_display(&mut self.out, i),
            Value::Uint(u) => push_display(&mut self.out, u),
            Value::Double(d) => self.double(*d)?,
            Value::String(text) => push_go_json_string(&mut self.out, text),
            Value::Bytes(bytes) => {
                self.out.push('"');
                STANDARD.encode_string(bytes, &mut self.out);
                self.out.push('"');
            }
            Value::Timestamp(timestamp) => self.timestamp(*timestamp)?,
            Value::Duration(duration) => {
                push_go_json_string(&mut self.out, &go_duration(*duration))
            }
            Value::Optional(Some(inner)) => self.value(inner, depth + 1)?,
            Value::List(items) => {
                self.out.push('[');
                for (index, item) in items.iter().enumerate() {
                    // A unit per element, beside the bytes written: see `Writer::element`.
                    self.element()?;
                    if index > 0 {
                        self.out.push(',');
                    }
                    self.value(item, depth + 1)?;
                }
                self.out.push(']');
            }
            Value::Map(map) => {
                let mut entries = Vec::with_capacity(map.len());
                for (key, item) in map.iter() {
                    self.element()?;
                    match key {
                        Key::String(name) => entries.push((name, item)),
                        other => {
                            return Err(convert_error(format!(
                                "map key must be string, got {}",
                                other.to_value().type_name()
                            )));
                        }
                    }
                }
                entries.sort_unstable_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
                self.out.push('{');
                for (index, (name, item)) in entries.into_iter().enumerate() {
                    if index > 0 {
                        self.out.push(',');
                    }
                    push_go_json_string(&mut self.out, name);
                    self.out.push(':');
                    self.value(item, depth + 1)?;
                }
                self.out.push('}');
            }
            Value::Opaque(_) if is_omit(value) => self.out.push_str("{}"),
            Value::Type(_) | Value::Opaque(_) => {
                return Err(convert_error(format!(
                    "unsupported type: {}",
                    if matches!(value, Value::Type(_)) {
                        "type"
                    } else {
                        value.type_name()
                    }
                )));
            }
        }
        Ok(())
    }

    /// A double as Go's `encoding/json` writes it.
    fn double(&mut self, value: f64) -> EvalResult<()> {
        if value.is_nan() {
            return Err(encode_error("json: unsupported value: NaN".to_string()));
        }
        if value.is_infinite() {
            let sign = if value > 0.0 { '+' } else { '-' };
            return Err(encode_error(format!("json: unsupported value: {sign}Inf")));
        }
        let magnitude = value.abs();
        if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
            // Shortest digits with an exponent: Go writes at least two exponent digits after
            // `+`, and drops the leading zero of a one-digit negative exponent.
            let text = format!("{value:e}");
            let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
            let exponent: i32 = exponent.parse().unwrap_or(0);
            self.out.push_str(mantissa);
            if exponent < 0 {
                let _ = write!(self.out, "e-{}", exponent.unsigned_abs());
            } else {
                let _ = write!(self.out, "e+{exponent:02}");
            }
        } else {
            push_display(&mut self.out, &value);
        }
        Ok(())
    }

    /// A timestamp as Kubernetes' `metav1.Time` writes it.
    fn timestamp(&mut self, timestamp: Timestamp) -> EvalResult<()> {
        if timestamp.seconds() == GO_ZERO_TIME_SECONDS && timestamp.nanos() == 0 {
            self.out.push_str("null");
            return Ok(());
        }
        let whole_seconds = Timestamp::new(timestamp.seconds(), 0)?;
        push_go_json_string(&mut self.out, &whole_seconds.to_string());
        Ok(())
    }
}

fn push_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// Appends `text` as a JSON string literal with Go's `encoding/json` default escaping (`<`,
/// `>`, `&`, U+2028 and U+2029 as `\uXXXX`), as Kubernetes writes JSON.
pub fn push_go_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\0'..='\u{1f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// A duration as Go's `time.Duration.String` writes it: `0s`, `1.5ms`, `1µs`, `1h2m3.5s`.
pub(super) fn go_duration(duration: Duration) -> String {
    // Durations are a signed 64-bit count of nanoseconds, as in Go.
    let nanos = duration.total_nanos();
    let mut magnitude = nanos.unsigned_abs();
    let mut text = String::new();
    if nanos < 0 {
        text.push('-');
    }
    if magnitude < 1_000_000_000 {
        let (digits, unit) = match magnitude {
            0 => return "0s".to_string(),
            1..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        push_fraction(&mut text, magnitude, digits);
        text.push_str(unit);
        return text;
    }
    let fraction = magnitude % 1_000_000_000;
    magnitude /= 1_000_000_000;
    let (hours, minutes, seconds) = (magnitude / 3600, magnitude / 60 % 60, magnitude % 60);
    if hours > 0 {
        let _ = write!(text, "{hours}h");
    }
    if magnitude >= 60 {
        let _ = write!(text, "{minutes}m");
    }
    push_fraction(&mut text, seconds * 1_000_000_000 + fraction, 9);
    text.push('s');
    text
}

/// `value / 10^digits` in decimal, without trailing zeros (nor a point when whole).
fn push_fraction(text: &mut String, value: u128, digits: u32) {
    let scale = 10u128.pow(digits);
    let _ = write!(text, "{}", value / scale);
    let fraction = value % scale;
    if fraction > 0 {
        let padded = format!("{fraction:0width$}", width = digits as usize);
        text.push('.');
        text.push_str(padded.trim_end_matches('0'));
    }
}
