//! The canonical text of a quantity (`resource.Quantity.String()`), also its JSON form: the
//! largest exponent that loses no precision and leaves no fraction, in the quantity's own
//! format (binary quantities that are not whole or are below 1024 print as decimal SI).

use super::decimal::Decimal;
use super::digits::Magnitude;
use super::{Format, Quantity};

/// The decimal SI suffix for a power of ten; Kubernetes prints no suffix for the others.
fn decimal_suffix(exponent: i64) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// The binary SI suffix for a power of 1024; Kubernetes prints no suffix for the others.
fn binary_suffix(power: u32) -> &'static str {
    match power {
        1 => "Ki",
        2 => "Mi",
        3 => "Gi",
        4 => "Ti",
        5 => "Pi",
        6 => "Ei",
        _ => "",
    }
}

fn sign(decimal: &Decimal) -> &'static str {
    if decimal.negative { "-" } else { "" }
}

/// The canonical text of a quantity.
pub(super) fn canonical_text(quantity: &Quantity) -> String {
    if let Some(cached) = &quantity.cached {
        return cached.to_string();
    }
    let decimal = quantity.to_decimal();
    if decimal.sign() == 0 {
        return "0".to_string();
    }
    if quantity.format == Format::BinarySi
        && let Some(text) = binary_text(&decimal)
    {
        return text;
    }
    // Move every factor of ten into the exponent, then back out until it is a multiple of 3.
    let zeros = decimal.magnitude.trailing_decimal_zeros();
    let (mut mantissa, _) = decimal.magnitude.div_pow10(zeros);
    let mut exponent = zeros as i64 - decimal.scale;
    while exponent % 3 != 0 {
        mantissa.mul_small(10);
        exponent -= 1;
    }
    let suffix = match quantity.format {
        Format::DecimalExponent if exponent == 0 => String::new(),
        Format::DecimalExponent => format!("e{exponent}"),
        Format::DecimalSi | Format::BinarySi => decimal_suffix(exponent).to_string(),
    };
    format!("{}{mantissa}{suffix}", sign(&decimal))
}

/// The binary SI text, or `None` when the value must print as decimal SI (below 1024 in
/// magnitude, or not a whole number).
fn binary_text(decimal: &Decimal) -> Option<String> {
    let limit = Decimal::from_scaled_int(1024, 0);
    if decimal.abs().compare(&limit).is_lt() {
        return None;
    }
    let whole = decimal.round_up(0).ok()?;
    if whole.compare(decimal).is_ne() {
        return None;
    }
    let mut mantissa: Magnitude = whole.magnitude;
    let mut power = 0;
    loop {
        let (quotient, remainder) = mantissa.div_rem_small(1024);
        if remainder != 0 || quotient.is_zero() {
            break;
        }
        mantissa = quotient;
        power += 1;
    }
    Some(format!(
        "{}{mantissa}{}",
        sign(decimal),
        binary_suffix(power)
    ))
}
