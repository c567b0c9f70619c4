//! The quantity grammar of `k8s.io/apimachinery/pkg/api/resource`:
//!
//! ```text
//! quantity        ::= signedNumber suffix
//! signedNumber    ::= [ "+" | "-" ] number
//! number          ::= digits | digits "." digits | digits "." | "." digits
//! suffix          ::= binarySI | decimalSI | decimalExponent
//! binarySI        ::= "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
//! decimalSI       ::= "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E"
//! decimalExponent ::= ( "e" | "E" ) signedNumber
//! ```
//!
//! Parsing follows `resource.ParseQuantity` step for step, including its choice between the
//! 64-bit form and the decimal form, its rounding up to nano units, its cap of binary
//! quantities at 2^63-1, and its reuse of the input text as the canonical string.

use std::fmt;
use std::sync::Arc;

use super::decimal::Decimal;
use super::{Amount, Format, Quantity};

/// Why a string is not a quantity (the messages are Kubernetes').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QuantityError {
    /// The text does not have the shape of a quantity.
    FormatWrong,
    /// The number cannot be read.
    Numeric,
    /// The suffix is not one of the known ones.
    Suffix,
    /// The value needs more digits than kro-cel keeps.
    TooLarge,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::FormatWrong => {
                "quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Numeric => "unable to parse numeric part of quantity",
            QuantityError::Suffix => "unable to parse quantity's suffix",
            QuantityError::TooLarge => "quantity has too many digits",
        })
    }
}

/// The pieces of quantity text, as `parseQuantityString` splits them.
struct Pieces<'a> {
    positive: bool,
    /// The signed number as written (`-1.5`), for the decimal form.
    value: &'a [u8],
    /// The integer digits without leading zeros (`0` when there are none).
    integer: &'a [u8],
    /// The fraction digits.
    fraction: &'a [u8],
    suffix: &'a [u8],
}

const SUFFIX_LETTERS: &[u8] = b"eEinumkKMGTP";

fn digits_end(text: &[u8], start: usize) -> usize {
    start
        + text[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count()
}

fn split(text: &[u8]) -> Result<Pieces<'_>, QuantityError> {
    let end = text.len();
    let mut position = 0;
    let mut positive = true;
    match text.first() {
        Some(b'-') => {
            positive = false;
            position = 1;
        }
        Some(b'+') => position = 1,
        _ => {}
    }
    position += text[position..]
        .iter()
        .take_while(|byte| **byte == b'0')
        .count();
    let mut pieces = Pieces {
        positive,
        value: b"0",
        integer: b"0",
        fraction: b"",
        suffix: b"",
    };
    if position == end {
        return Ok(pieces);
    }
    let integer_end = digits_end(text, position);
    if integer_end > position {
        pieces.integer = &text[position..integer_end];
    }
    position = integer_end;
    if position == end {
        pieces.value = text;
        return Ok(pieces);
    }
    if text[position] == b'.' {
        let fraction_end = digits_end(text, position + 1);
        pieces.fraction = &text[position + 1..fraction_end];
        position = fraction_end;
        if position == end {
            pieces.value = text;
            return Ok(pieces);
        }
    }
    pieces.value = &text[..position];
    let suffix_start = position;
    position += text[position..]
        .iter()
        .take_while(|byte| SUFFIX_LETTERS.contains(byte))
        .count();
    if matches!(text.get(position), Some(b'-' | b'+')) {
        position += 1;
    }
    if digits_end(text, position) != end {
        return Err(QuantityError::FormatWrong);
    }
    pieces.suffix = &text[suffix_start..];
    Ok(pieces)
}

/// Parses an integer as Go's `strconv.ParseInt(text, 10, 64)`.
fn parse_go_int(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().try_fold(0i128, |value, byte| {
        let value = value * 10 + i128::from(byte - b'0');
        (value <= i128::from(i64::MAX) + 1).then_some(value)
    })?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// The base (2 or 10), exponent and format a suffix stands for.
fn interpret(suffix: &[u8]) -> Option<(u32, i32, Format)> {
    let decimal = |exponent| Some((10, exponent, Format::DecimalSi));
    let binary = |exponent| Some((2, exponent, Format::BinarySi));
    match suffix {
        b"" => decimal(0),
        b"n" => decimal(-9),
        b"u" => decimal(-6),
        b"m" => decimal(-3),
        b"k" => decimal(3),
        b"M" => decimal(6),
        b"G" => decimal(9),
        b"T" => decimal(12),
        b"P" => decimal(15),
        b"E" => decimal(18),
        b"Ki" => binary(10),
        b"Mi" => binary(20),
        b"Gi" => binary(30),
        b"Ti" => binary(40),
        b"Pi" => binary(50),
        b"Ei" => binary(60),
        [b'e' | b'E', exponent @ ..] if !exponent.is_empty() => {
            // Kubernetes narrows the 64-bit exponent to 32 bits, wrapping.
            let exponent = parse_go_int(exponent)? as i32;
            Some((10, exponent, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// The largest binary quantity, 2^63-1.
fn max_allowed() -> Decimal {
    Decimal::from_scaled_int(i64::MAX, 0)
}

/// Parses quantity text.
///
/// # Errors
/// The Kubernetes error for malformed text; `TooLarge` past the digit limit.
pub(super) fn parse_quantity(text: &str) -> Result<Quantity, QuantityError> {
    if text.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if text == "0" {
        return Ok(Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalSi,
            cached: Some(Arc::from(text)),
        });
    }
    let pieces = split(text.as_bytes())?;
    let (base, exponent, mut format) = interpret(pieces.suffix).ok_or(QuantityError::Suffix)?;
    let digit_count = (pieces.integer.len() + pieces.fraction.len()) as i64;
    let (mut scale, precision, multiplier) = match format {
        Format::BinarySi if pieces.fraction.is_empty() => {
            let precision = 15 - pieces.integer.len() as i64 - i64::from(exponent) * 3 / 10 - 1;
            (0i32, precision, 1i64 << exponent)
        }
        Format::BinarySi => (0, -1, 1),
        Format::DecimalSi | Format::DecimalExponent => (exponent, 18 - digit_count, 1),
    };
    if precision >= 0 {
        scale = scale.wrapping_sub(pieces.fraction.len() as i32);
        if scale >= -9 {
            let mut shifted = pieces.integer.to_vec();
            shifted.extend_from_slice(pieces.fraction);
            let value = parse_go_int(&shifted).ok_or(QuantityError::Numeric)?;
            if let Some(product) = value.checked_mul(multiplier) {
                let is_canonical = match format {
                    Format::BinarySi => value & 0x07 != 0,
                    _ => scale % 3 == 0 && !shifted.ends_with(b"000") && shifted[0] != b'0',
                };
                return Ok(Quantity {
                    amount: Amount::Int {
                        value: if pieces.positive { product } else { -product },
                        scale,
                    },
                    format,
                    cached: is_canonical.then(|| Arc::from(text)),
                });
            }
        }
    }
    let mut amount = Decimal::parse(pieces.value).ok_or(QuantityError::Numeric)?;
    if base == 10 {
        // inf.Dec scales are 32-bit and Kubernetes adds the negated exponent with wrapping.
        let scale = (amount.scale as i32).wrapping_add(exponent.wrapping_neg());
        amount.scale = i64::from(scale);
    } else {
        amount.magnitude.mul_pow2(exponent.unsigned_abs());
    }
    let negative = amount.negative;
    let mut magnitude = amount.abs();
    if !magnitude.magnitude.is_zero() {
        // Round up to nano units: asking for a little of a resource gets some of it.
        magnitude = magnitude.round_up(9).map_err(|_| QuantityError::TooLarge)?;
    }
    if format == Format::BinarySi {
        let max = max_allowed();
        if magnitude.compare(&max).is_gt() {
            magnitude = max;
        }
        let one = Decimal::from_scaled_int(1, 0);
        if magnitude.sign() > 0 && magnitude.compare(&one).is_lt() {
            format = Format::DecimalSi;
        }
    }
    if negative {
        magnitude = magnitude.negated();
    }
    Ok(Quantity {
        amount: Amount::Dec(magnitude),
        format,
        cached: None,
    })
}
