//! `template.format(arguments)`: printf-style substitution as the CEL strings extension
//! specifies it (`doc/extensions/strings.md` in cel-spec).
//!
//! A clause is `%[.precision]verb`; `%%` is a literal percent sign. Each clause takes the next
//! argument. The verbs and the argument types they take:
//!
//! | verb | arguments | output |
//! |---|---|---|
//! | `s` | every type but optionals and opaque values | the value as text (below) |
//! | `d` | int, uint, double | base 10 |
//! | `f` | int, uint, double | fixed point, `precision` decimals (default 6), half to even |
//! | `e` | int, uint, double | `d.dddddde±dd`, `precision` decimals (default 6) |
//! | `b` | int, uint, bool | base 2 (`true` is `1`) |
//! | `o` | int, uint | base 8 |
//! | `x` `X` | int, uint, string, bytes | base 16; strings and bytes two digits per byte |
//!
//! Negative integers keep their sign in every base (`-1e`, not two's complement). Doubles that
//! are NaN or infinite print as `NaN`, `Infinity` and `-Infinity` for every verb that takes
//! doubles. With `%s`, doubles print in the shortest form that reads back exactly and never
//! with an exponent; bytes as UTF-8 with each run of invalid sequences replaced by one U+FFFD;
//! durations as seconds (`6347s`, `1.5s`); timestamps as RFC 3339 in UTC; types by name;
//! `null` as `null`; lists as `[a, b]`; maps as `{k: v}` sorted by the formatted keys.

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::stack;
use crate::time::Duration;
use crate::value::Value;

/// The precision used when a clause gives none.
const DEFAULT_PRECISION: usize = 6;

/// The largest precision accepted (cel-go's limit since version 5 of the library): larger
/// ones are an error, so that a short template cannot produce a huge result.
const MAX_PRECISION: usize = 100;

const FUNCTION: &str = "format";

/// Formats `template` with `arguments`, charging for the template and for every byte
/// written (as it is written, so that formatting a list that shares one large element many
/// times stops once the budget is gone).
pub(super) fn format(
    template: &str,
    arguments: &[Value],
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(template.len()))?;
    let mut meter = Meter::new(budget);
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let mut next_argument = 0;
    while let Some(percent) = rest.find('%') {
        meter.push(&mut out, &rest[..percent])?;
        let clause = &rest[percent + 1..];
        if let Some(after) = clause.strip_prefix('%') {
            meter.push(&mut out, "%")?;
            rest = after;
            continue;
        }
        let argument = arguments.get(next_argument).ok_or_else(|| {
            EvalError::invalid_argument(FUNCTION, format!("index {next_argument} out of range"))
        })?;
        let (verb, length) = Verb::parse(clause).map_err(|problem| {
            EvalError::invalid_argument(
                FUNCTION,
                format!("could not parse formatting clause: {problem}"),
            )
        })?;
        verb.write(argument, &mut out, &mut meter)?;
        next_argument += 1;
        rest = &clause[length..];
    }
    meter.push(&mut out, rest)?;
    Ok(Value::from(out))
}

/// Charges the budget for output as it grows, one unit per [`crate::TRAVERSAL_UNIT`] bytes.
struct Meter<'a> {
    budget: &'a mut Budget,
    written: usize,
    charged: u64,
}

impl<'a> Meter<'a> {
    fn new(budget: &'a mut Budget) -> Self {
        Meter {
            budget,
            written: 0,
            charged: 0,
        }
    }

    /// Appends `text` to `out` and charges for it.
    fn push(&mut self, out: &mut String, text: &str) -> EvalResult<()> {
        out.push_str(text);
        self.wrote(text.len())
    }

    /// Charges a unit for an element of a list or map about to be printed: printing one
    /// takes more than its few bytes of output suggest, and a list can hold the same large
    /// list many times.
    fn element(&mut self) -> EvalResult<()> {
        self.budget.charge(1)
    }

    /// Charges for `bytes` more bytes of output.
    fn wrote(&mut self, bytes: usize) -> EvalResult<()> {
        self.written = self.written.saturating_add(bytes);
        let due = traversal_cost(self.written);
        if due > self.charged {
            self.budget.charge(due - self.charged)?;
            self.charged = due;
        }
        Ok(())
    }
}

/// A formatting clause's verb, with its precision where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    String,
    Decimal,
    Fixed(usize),
    Scientific(usize),
    Binary,
    Octal,
    Hex { upper: bool },
}

impl Verb {
    /// Parses the clause after its `%`, returning the verb and the bytes it takes.
    fn parse(clause: &str) -> Result<(Verb, usize), String> {
        let mut length = 0;
        let mut precision = None;
        if let Some(after_dot) = clause.strip_prefix('.') {
            let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            if digits == after_dot.len() {
                return Err("could not find end of precision specifier".to_string());
            }
            if digits == 0 {
                return Err("precision must be one or more decimal digits".to_string());
            }
            let value = after_dot[..digits]
                .parse::<usize>()
                .ok()
                .filter(|value| *value <= MAX_PRECISION)
                .ok_or_else(|| {
                    format!(
                        "precision {} exceeds the maximum of {MAX_PRECISION}",
                        &after_dot[..digits]
                    )
                })?;
            precision = Some(value);
            length = 1 + digits;
        }
        let Some(letter) = clause[length..].chars().next() else {
            return Err("unexpected end of string".to_string());
        };
        let precision = precision.unwrap_or(DEFAULT_PRECISION);
        let verb = match letter {
            's' => Verb::String,
            'd' => Verb::Decimal,
            'f' => Verb::Fixed(precision),
            'e' => Verb::Scientific(precision),
            'b' => Verb::Binary,
            'o' => Verb::Octal,
            'x' => Verb::Hex { upper: false },
            'X' => Verb::Hex { upper: true },
            other => return Err(format!("unrecognized formatting clause \"{other}\"")),
        };
        Ok((verb, length + letter.len_utf8()))
    }

    /// What the verb accepts, for the error when an argument does not fit.
    fn accepted(self) -> &'static str {
        match self {
            Verb::String => {
                "string clause can only be used on strings, bools, bytes, ints, uints, doubles, \
                 maps, lists, types, durations, timestamps and null"
            }
            Verb::Decimal => "decimal clause can only be used on ints, uints and doubles",
            Verb::Fixed(_) => "fixed-point clause can only be used on ints, uints and doubles",
            Verb::Scientific(_) => "scientific clause can only be used on ints, uints and doubles",
            Verb::Binary => "only ints, uints and bools can be formatted as binary",
            Verb::Octal => "octal clause can only be used on ints and uints",
            Verb::Hex { .. } => "only ints, uints, bytes and strings can be formatted as hex",
        }
    }

    fn rejects(self, argument: &Value) -> EvalError {
        EvalError::invalid_argument(
            FUNCTION,
            format!(
                "error during formatting: {}, was given {}",
                self.accepted(),
                argument.type_name()
            ),
        )
    }

    /// Formats one argument onto `out`.
    fn write(self, argument: &Value, out: &mut String, meter: &mut Meter<'_>) -> EvalResult<()> {
        let text =
            match (self, argument) {
                (Verb::String, _) => return write_text(argument, out, meter),
                (Verb::Decimal, Value::Int(value)) => value.to_string(),
                (Verb::Decimal, Value::Uint(value)) => value.to_string(),
                (Verb::Decimal, Value::Double(value)) => plain_double(*value),
                (Verb::Fixed(precision), _) => match number(argument) {
                    Some(value) => non_finite(value)
                        .map_or_else(|| format!("{value:.precision$}"), str::to_string),
                    None => return Err(self.rejects(argument)),
                },
                (Verb::Scientific(precision), _) => match number(argument) {
                    Some(value) => non_finite(value)
                        .map_or_else(|| scientific(value, precision), str::to_string),
                    None => return Err(self.rejects(argument)),
                },
                (Verb::Binary, Value::Bool(value)) => u8::from(*value).to_string(),
                (Verb::Binary, Value::Int(value)) => signed(*value, |v| format!("{v:b}")),
                (Verb::Binary, Value::Uint(value)) => format!("{value:b}"),
                (Verb::Octal, Value::Int(value)) => signed(*value, |v| format!("{v:o}")),
                (Verb::Octal, Value::Uint(value)) => format!("{value:o}"),
                (Verb::Hex { upper }, Value::Int(value)) => signed(*value, |v| {
                    if upper {
                        format!("{v:X}")
                    } else {
                        format!("{v:x}")
                    }
                }),
                (Verb::Hex { upper }, Value::Uint(value)) => {
                    if upper {
                        format!("{value:X}")
                    } else {
                        format!("{value:x}")
                    }
                }
                (Verb::Hex { upper }, Value::String(text)) => hex_bytes(text.as_bytes(), upper),
                (Verb::Hex { upper }, Value::Bytes(bytes)) => hex_bytes(bytes, upper),
                _ => return Err(self.rejects(argument)),
            };
        meter.push(out, &text)
    }
}

/// An int, uint or double as a double, for the verbs that print numbers as decimals.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Int(value) => Some(*value as f64),
        Value::Uint(value) => Some(*value as f64),
        Value::Double(value) => Some(*value),
        _ => None,
    }
}

/// The spelling of NaN and the infinities, which every verb taking doubles shares.
fn non_finite(value: f64) -> Option<&'static str> {
    if value.is_nan() {
        Some("NaN")
    } else if value == f64::INFINITY {
        Some("Infinity")
    } else if value == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

/// A double in the shortest decimal form that reads back exactly, never with an exponent.
fn plain_double(value: f64) -> String {
    non_finite(value).map_or_else(|| value.to_string(), str::to_string)
}

/// `d.ddde±dd`: Rust writes the exponent bare (`e3`, `e-7`); the format wants a sign and at
/// least two digits.
fn scientific(value: f64, precision: usize) -> String {
    let text = format!("{value:.precision$e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(digits) => ('-', digits),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}

/// Formats the magnitude of a signed integer and puts back its sign.
fn signed(value: i64, digits: impl Fn(u64) -> String) -> String {
    let magnitude = digits(value.unsigned_abs());
    if value < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

fn hex_bytes(bytes: &[u8], upper: bool) -> String {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(digits[usize::from(byte >> 4)]));
        text.push(char::from(digits[usize::from(byte & 0x0f)]));
    }
    text
}

/// Formats a value for `%s`, recursing into lists and maps.
fn write_text(value: &Value, out: &mut String, meter: &mut Meter<'_>) -> EvalResult<()> {
    stack::guard(|| match value {
        Value::Null => meter.push(out, "null"),
        Value::Bool(value) => meter.push(out, if *value { "true" } else { "false" }),
        Value::Int(value) => meter.push(out, &value.to_string()),
        Value::Uint(value) => meter.push(out, &value.to_string()),
        Value::Double(value) => meter.push(out, &plain_double(*value)),
        Value::String(text) => meter.push(out, text),
        Value::Bytes(bytes) => {
            let before = out.len();
            push_lossy_utf8(bytes, out);
            meter.wrote(out.len() - before)
        }
        Value::Duration(duration) => {
            meter.push(out, &plain_double(duration_seconds(*duration)))?;
            meter.push(out, "s")
        }
        Value::Timestamp(timestamp) => meter.push(out, &timestamp.to_string()),
        Value::Type(name) => meter.push(out, name),
        Value::List(items) => {
            meter.push(out, "[")?;
            for (index, item) in items.iter().enumerate() {
                meter.element()?;
                if index > 0 {
                    meter.push(out, ", ")?;
                }
                write_text(item, out, meter)?;
            }
            meter.push(out, "]")
        }
        Value::Map(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, item) in map.iter() {
                meter.element()?;
                let mut key_text = String::new();
                write_text(&key.to_value(), &mut key_text, meter)?;
                let mut item_text = String::new();
                write_text(item, &mut item_text, meter)?;
                entries.push((key_text, item_text));
            }
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            meter.push(out, "{")?;
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    meter.push(out, ", ")?;
                }
                meter.push(out, key)?;
                meter.push(out, ": ")?;
                meter.push(out, item)?;
            }
            meter.push(out, "}")
        }
        Value::Optional(_) | Value::Opaque(_) => Err(Verb::String.rejects(value)),
    })
}

/// A duration in seconds as a double, computed as cel-go does (whole seconds plus the
/// fraction), so that the printed digits agree.
fn duration_seconds(duration: Duration) -> f64 {
    duration.seconds() as f64 + f64::from(duration.subsecond_nanos()) / 1e9
}

/// Appends bytes as UTF-8, replacing each run of invalid sequences with one U+FFFD.
fn push_lossy_utf8(bytes: &[u8], out: &mut String) {
    let mut after_invalid = false;
    for chunk in bytes.utf8_chunks() {
        if !chunk.valid().is_empty() {
            out.push_str(chunk.valid());
            after_invalid = false;
        }
        if !chunk.invalid().is_empty() {
            if !after_invalid {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            after_invalid = true;
        }
    }
}
