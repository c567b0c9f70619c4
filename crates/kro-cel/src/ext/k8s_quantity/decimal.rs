//! Signed decimals `±magnitude × 10^-scale` with the semantics of `gopkg.in/inf.v0`'s `Dec`,
//! the arbitrary-precision form Kubernetes quantities fall back to beyond 64 bits.
//!
//! Kubernetes would write out any number of digits when aligning scales (`1e999999999 + 1`);
//! here a result may have at most [`MAX_DIGITS`] digits, past which the operation fails.

use std::cmp::Ordering;

use super::digits::Magnitude;

/// The most decimal digits a quantity's decimal form may hold.
pub(super) const MAX_DIGITS: usize = 10_000;

/// The decimal would need more than [`MAX_DIGITS`] digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooManyDigits;

/// `±magnitude × 10^-scale` (`scale` counts digits after the point, as `inf.Scale` does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Decimal {
    pub(super) negative: bool,
    pub(super) magnitude: Magnitude,
    pub(super) scale: i64,
}

impl Decimal {
    /// `value × 10^exponent`.
    pub(super) fn from_scaled_int(value: i64, exponent: i32) -> Decimal {
        Decimal {
            negative: value < 0,
            magnitude: Magnitude::from_u128(u128::from(value.unsigned_abs())),
            scale: -i64::from(exponent),
        }
    }

    /// Parses `[+-]digits[.digits]` as `inf.Dec.SetString` does; `None` without digits.
    pub(super) fn parse(text: &[u8]) -> Option<Decimal> {
        let (negative, rest) = match text.first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (integer, fraction) = match rest.iter().position(|byte| *byte == b'.') {
            Some(point) => (&rest[..point], &rest[point + 1..]),
            None => (rest, &[][..]),
        };
        let digits_only = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
        if integer.is_empty() && fraction.is_empty()
            || !digits_only(integer)
            || !digits_only(fraction)
        {
            return None;
        }
        let mut all_digits = integer.to_vec();
        all_digits.extend_from_slice(fraction);
        let magnitude = Magnitude::parse(&all_digits);
        Some(Decimal {
            negative: negative && !magnitude.is_zero(),
            magnitude,
            scale: fraction.len() as i64,
        })
    }

    /// -1, 0 or 1.
    pub(super) fn sign(&self) -> i64 {
        match (self.magnitude.is_zero(), self.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    /// The number with the opposite sign.
    pub(super) fn negated(&self) -> Decimal {
        Decimal {
            negative: !self.negative && !self.magnitude.is_zero(),
            ..self.clone()
        }
    }

    /// The number without its sign.
    pub(super) fn abs(&self) -> Decimal {
        Decimal {
            negative: false,
            ..self.clone()
        }
    }

    /// The magnitude written with `scale` digits after the point (`scale >= self.scale`), in
    /// at most `limit` digits.
    fn magnitude_within(&self, scale: i64, limit: usize) -> Result<Magnitude, TooManyDigits> {
        let shift = usize::try_from(scale - self.scale).map_err(|_| TooManyDigits)?;
        let mut magnitude = self.magnitude.clone();
        if !magnitude.is_zero() {
            if magnitude.digit_count().saturating_add(shift) > limit {
                return Err(TooManyDigits);
            }
            magnitude.mul_pow10(shift);
        }
        Ok(magnitude)
    }

    /// The magnitude written with `scale` digits after the point (`scale >= self.scale`).
    fn magnitude_at(&self, scale: i64) -> Result<Magnitude, TooManyDigits> {
        self.magnitude_within(scale, MAX_DIGITS)
    }

    /// `self + other` at the larger of the two scales, as `inf.Dec.Add`.
    pub(super) fn add(&self, other: &Decimal) -> Result<Decimal, TooManyDigits> {
        let scale = self.scale.max(other.scale);
        let a = self.magnitude_at(scale)?;
        let b = other.magnitude_at(scale)?;
        let (negative, magnitude) = if self.negative == other.negative {
            (self.negative, a.add(&b))
        } else if a >= b {
            (self.negative, a.sub(&b))
        } else {
            (other.negative, b.sub(&a))
        };
        if magnitude.digit_count() > MAX_DIGITS {
            return Err(TooManyDigits);
        }
        Ok(Decimal {
            negative: negative && !magnitude.is_zero(),
            magnitude,
            scale,
        })
    }

    /// `self - other`.
    pub(super) fn sub(&self, other: &Decimal) -> Result<Decimal, TooManyDigits> {
        self.add(&other.negated())
    }

    /// The base-10 exponent just above the magnitude: `10^(e-1) <= |self| < 10^e`.
    fn order_of_magnitude(&self) -> i128 {
        self.magnitude.digit_count() as i128 - i128::from(self.scale)
    }

    /// Exact comparison, without writing out digits when the orders of magnitude differ.
    pub(super) fn compare(&self, other: &Decimal) -> Ordering {
        let (a, b) = (self.sign(), other.sign());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitudes = match self.order_of_magnitude().cmp(&other.order_of_magnitude()) {
            Ordering::Equal => {
                // Same order of magnitude: the scales differ by at most the digit counts, so
                // aligning them at most doubles the longer number.
                let scale = self.scale.max(other.scale);
                let limit = 2 * MAX_DIGITS + 1;
                match (
                    self.magnitude_within(scale, limit),
                    other.magnitude_within(scale, limit),
                ) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    _ => Ordering::Equal,
                }
            }
            unequal => unequal,
        };
        if a < 0 {
            magnitudes.reverse()
        } else {
            magnitudes
        }
    }

    /// Rounds away from zero to exactly `scale` digits after the point (`inf.RoundUp`).
    pub(super) fn round_up(&self, scale: i64) -> Result<Decimal, TooManyDigits> {
        if scale >= self.scale {
            return Ok(Decimal {
                negative: self.negative,
                magnitude: self.magnitude_at(scale)?,
                scale,
            });
        }
        let drop = usize::try_from(self.scale - scale).unwrap_or(usize::MAX);
        let (mut magnitude, exact) = self.magnitude.div_pow10(drop);
        if !exact {
            magnitude = magnitude.add(&Magnitude::from_u128(1));
        }
        if magnitude.digit_count() > MAX_DIGITS {
            return Err(TooManyDigits);
        }
        Ok(Decimal {
            negative: self.negative && !magnitude.is_zero(),
            magnitude,
            scale,
        })
    }

    /// The number of digits in the magnitude, for cost accounting.
    pub(super) fn digit_count(&self) -> usize {
        self.magnitude.digit_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(text: &str) -> Decimal {
        Decimal::parse(text.as_bytes()).unwrap_or_else(|| panic!("{text}"))
    }

    #[test]
    fn parsing_keeps_the_written_scale() {
        let value = decimal("-12.50");
        assert_eq!(
            (value.negative, value.magnitude.to_u128(), value.scale),
            (true, Some(1250), 2)
        );
        assert_eq!(decimal("1.").scale, 0);
        assert_eq!(decimal(".5").scale, 1);
        for text in ["", ".", "-", "+.", "1.2.3", "1e3"] {
            assert_eq!(Decimal::parse(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn addition_aligns_scales_and_signs() {
        assert_eq!(decimal("1.5").add(&decimal("-2")), Ok(decimal("-0.5")));
        assert_eq!(decimal("-1.25").sub(&decimal("-1.25")), Ok(decimal("0.00")));
        let huge = Decimal::from_scaled_int(1, 20_000);
        assert_eq!(huge.add(&decimal("1")), Err(TooManyDigits));
    }

    #[test]
    fn comparison_is_exact_and_cheap_for_distant_numbers() {
        assert_eq!(decimal("0.20").compare(&decimal("0.2")), Ordering::Equal);
        assert_eq!(decimal("-3").compare(&decimal("-2.5")), Ordering::Less);
        assert_eq!(decimal("0").compare(&decimal("-0.0")), Ordering::Equal);
        let far = Decimal::from_scaled_int(1, 2_000_000_000);
        assert_eq!(far.compare(&decimal("5")), Ordering::Greater);
        assert_eq!(far.negated().compare(&decimal("5")), Ordering::Less);
    }

    #[test]
    fn rounding_goes_away_from_zero() {
        assert_eq!(decimal("1.0001").round_up(3), Ok(decimal("1.001")));
        assert_eq!(decimal("-1.0001").round_up(0), Ok(decimal("-2")));
        assert_eq!(decimal("2.5").round_up(3), Ok(decimal("2.500")));
        assert_eq!(
            decimal("0.0000000001").round_up(9),
            Ok(decimal("0.000000001"))
        );
    }
}
