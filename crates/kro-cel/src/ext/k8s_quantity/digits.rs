//! Non-negative integers of any size, in base 10^9, for the decimal form of quantities (the
//! role `math/big` plays behind `inf.Dec` in Kubernetes). Only the operations quantities need.

use std::cmp::Ordering;
use std::fmt;

/// Decimal digits per limb.
const LIMB_DIGITS: usize = 9;
/// The limb base, 10^9.
const LIMB_BASE: u64 = 1_000_000_000;
/// 10^0 .. 10^9.
const POWERS_OF_TEN: [u32; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// A non-negative integer: little-endian limbs below 10^9, with no zero high limb.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Magnitude {
    limbs: Vec<u32>,
}

impl Magnitude {
    /// Zero.
    pub(super) fn zero() -> Self {
        Magnitude::default()
    }

    /// The value of an unsigned 128-bit integer.
    pub(super) fn from_u128(mut value: u128) -> Self {
        let mut limbs = Vec::new();
        while value > 0 {
            limbs.push((value % u128::from(LIMB_BASE)) as u32);
            value /= u128::from(LIMB_BASE);
        }
        Magnitude { limbs }
    }

    /// The value of a string of ASCII decimal digits (leading zeros allowed; other bytes are
    /// not expected and count as zero).
    pub(super) fn parse(digits: &[u8]) -> Self {
        let mut limbs = Vec::with_capacity(digits.len() / LIMB_DIGITS + 1);
        for chunk in digits.rchunks(LIMB_DIGITS) {
            let limb = chunk.iter().fold(0u32, |limb, byte| {
                limb * 10 + u32::from(byte.wrapping_sub(b'0').min(9))
            });
            limbs.push(limb);
        }
        let mut magnitude = Magnitude { limbs };
        magnitude.trim();
        magnitude
    }

    fn trim(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }

    /// True for zero.
    pub(super) fn is_zero(&self) -> bool {
        self.limbs.is_empty()
    }

    /// The number of decimal digits (0 for zero).
    pub(super) fn digit_count(&self) -> usize {
        match self.limbs.last() {
            None => 0,
            Some(top) => {
                let top_digits = POWERS_OF_TEN
                    .iter()
                    .take_while(|power| **power <= *top)
                    .count();
                (self.limbs.len() - 1) * LIMB_DIGITS + top_digits
            }
        }
    }

    /// The value, when it fits in 128 bits.
    #[cfg(test)]
    pub(super) fn to_u128(&self) -> Option<u128> {
        self.limbs.iter().rev().try_fold(0u128, |value, limb| {
            value
                .checked_mul(u128::from(LIMB_BASE))?
                .checked_add(u128::from(*limb))
        })
    }

    /// The nearest double (ties to even), or infinity when too large.
    pub(super) fn to_f64(&self) -> f64 {
        // Rust parses decimal text with correct rounding, as Go's big.Float conversion does.
        self.to_string().parse().unwrap_or(f64::INFINITY)
    }

    /// `self + other`.
    pub(super) fn add(&self, other: &Magnitude) -> Magnitude {
        let length = self.limbs.len().max(other.limbs.len());
        let mut limbs = Vec::with_capacity(length + 1);
        let mut carry = 0u64;
        for index in 0..length {
            let sum = u64::from(self.limbs.get(index).copied().unwrap_or(0))
                + u64::from(other.limbs.get(index).copied().unwrap_or(0))
                + carry;
            limbs.push((sum % LIMB_BASE) as u32);
            carry = sum / LIMB_BASE;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
        Magnitude { limbs }
    }

    /// `self - other`, for `self >= other` (saturates at zero otherwise).
    pub(super) fn sub(&self, other: &Magnitude) -> Magnitude {
        if self <= other {
            return Magnitude::zero();
        }
        let mut limbs = Vec::with_capacity(self.limbs.len());
        let mut borrow = 0i64;
        for (index, limb) in self.limbs.iter().enumerate() {
            let mut difference =
                i64::from(*limb) - i64::from(other.limbs.get(index).copied().unwrap_or(0)) - borrow;
            borrow = 0;
            if difference < 0 {
                difference += LIMB_BASE as i64;
                borrow = 1;
            }
            limbs.push(difference as u32);
        }
        let mut magnitude = Magnitude { limbs };
        magnitude.trim();
        magnitude
    }

    /// Multiplies in place by a factor below 2^32.
    pub(super) fn mul_small(&mut self, factor: u32) {
        if factor == 0 {
            self.limbs.clear();
            return;
        }
        let mut carry = 0u64;
        for limb in &mut self.limbs {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = (product % LIMB_BASE) as u32;
            carry = product / LIMB_BASE;
        }
        while carry > 0 {
            self.limbs.push((carry % LIMB_BASE) as u32);
            carry /= LIMB_BASE;
        }
    }

    /// Multiplies in place by 10^exponent.
    pub(super) fn mul_pow10(&mut self, exponent: usize) {
        if self.is_zero() {
            return;
        }
        let whole = exponent / LIMB_DIGITS;
        if whole > 0 {
            self.limbs.splice(0..0, std::iter::repeat_n(0, whole));
        }
        self.mul_small(POWERS_OF_TEN[exponent % LIMB_DIGITS]);
    }

    /// Multiplies in place by 2^exponent.
    pub(super) fn mul_pow2(&mut self, mut exponent: u32) {
        while exponent > 0 {
            let step = exponent.min(31);
            self.mul_small(1 << step);
            exponent -= step;
        }
    }

    /// The quotient and remainder of division by a non-zero divisor below 2^32.
    pub(super) fn div_rem_small(&self, divisor: u32) -> (Magnitude, u32) {
        let divisor = u64::from(divisor.max(1));
        let mut limbs = vec![0u32; self.limbs.len()];
        let mut remainder = 0u64;
        for (index, limb) in self.limbs.iter().enumerate().rev() {
            let current = remainder * LIMB_BASE + u64::from(*limb);
            limbs[index] = (current / divisor) as u32;
            remainder = current % divisor;
        }
        let mut quotient = Magnitude { limbs };
        quotient.trim();
        (quotient, remainder as u32)
    }

    /// The quotient of division by 10^exponent, truncated, and whether it was exact.
    pub(super) fn div_pow10(&self, exponent: usize) -> (Magnitude, bool) {
        if exponent == 0 {
            return (self.clone(), true);
        }
        if exponent >= self.digit_count() {
            return (Magnitude::zero(), self.is_zero());
        }
        let whole = exponent / LIMB_DIGITS;
        let dropped_exact = self.limbs[..whole].iter().all(|limb| *limb == 0);
        let shifted = Magnitude {
            limbs: self.limbs[whole..].to_vec(),
        };
        let (quotient, remainder) = shifted.div_rem_small(POWERS_OF_TEN[exponent % LIMB_DIGITS]);
        (quotient, dropped_exact && remainder == 0)
    }

    /// How many times 10 divides the value (0 for zero).
    pub(super) fn trailing_decimal_zeros(&self) -> usize {
        let Some(first) = self.limbs.iter().position(|limb| *limb != 0) else {
            return 0;
        };
        let mut limb = self.limbs[first];
        let mut zeros = first * LIMB_DIGITS;
        while limb.is_multiple_of(10) {
            limb /= 10;
            zeros += 1;
        }
        zeros
    }
}

impl PartialOrd for Magnitude {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Magnitude {
    fn cmp(&self, other: &Self) -> Ordering {
        self.limbs
            .len()
            .cmp(&other.limbs.len())
            .then_with(|| self.limbs.iter().rev().cmp(other.limbs.iter().rev()))
    }
}

impl fmt::Display for Magnitude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut limbs = self.limbs.iter().rev();
        match limbs.next() {
            None => f.write_str("0"),
            Some(top) => {
                write!(f, "{top}")?;
                for limb in limbs {
                    write!(f, "{limb:09}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Magnitude {
        Magnitude::parse(text.as_bytes())
    }

    #[test]
    fn digits_round_trip_through_text() {
        for text in ["0", "7", "1000000000", "123456789012345678901234567890"] {
            assert_eq!(number(text).to_string(), text);
        }
        assert_eq!(number("000042").to_string(), "42");
        assert_eq!(number("1000000000").digit_count(), 10);
        assert_eq!(number("0").digit_count(), 0);
    }

    #[test]
    fn arithmetic_carries_across_limbs() {
        let big = number("999999999999999999");
        assert_eq!(big.add(&number("1")).to_string(), "1000000000000000000");
        assert_eq!(
            number("1000000000000000000").sub(&number("1")).to_string(),
            "999999999999999999"
        );
        let mut shifted = number("123");
        shifted.mul_pow10(20);
        assert_eq!(shifted.to_string(), format!("123{}", "0".repeat(20)));
        let mut doubled = number("3");
        doubled.mul_pow2(60);
        assert_eq!(doubled.to_u128(), Some(3u128 << 60));
        let (quotient, remainder) = number("1000000000001").div_rem_small(1024);
        assert_eq!(
            (quotient.to_u128(), remainder),
            (
                Some(1_000_000_000_001u128 / 1024),
                (1_000_000_000_001u128 % 1024) as u32
            )
        );
    }

    #[test]
    fn division_by_powers_of_ten_reports_exactness() {
        assert_eq!(number("12000").div_pow10(3), (number("12"), true));
        assert_eq!(number("12001").div_pow10(3), (number("12"), false));
        assert_eq!(number("5").div_pow10(40), (Magnitude::zero(), false));
        assert_eq!(
            number("1000000000000000000000").trailing_decimal_zeros(),
            21
        );
        assert!(number("999").cmp(&number("1000")) == Ordering::Less);
    }
}
