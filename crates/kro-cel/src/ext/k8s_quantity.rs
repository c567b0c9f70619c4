//! The Kubernetes quantity library (`kubernetes.quantity`): `quantity()`, `isQuantity()`,
//! `sign()`, `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add()`, `sub()`,
//! `compareTo()`, `isGreaterThan()` and `isLessThan()` on `kubernetes.Quantity` values, as
//! `k8s.io/apiserver/pkg/cel/library/quantity.go` with `resource.Quantity` semantics.
//!
//! A quantity is held as Kubernetes holds it: a 64-bit value with a power-of-ten scale when
//! it fits (`1.5k` is 15 × 10^2), else an arbitrary-precision decimal. The distinction is
//! visible, as in Kubernetes: `asInteger()` only succeeds on the 64-bit form with a
//! non-negative scale, so `quantity('1.5Gi').isInteger()` is false although 1.5Gi is whole.
//! Comparisons and arithmetic are exact. Values are immutable (Kubernetes' `add` on a
//! decimal quantity also changes its receiver; kro-cel's does not).

mod canonical;
mod decimal;
mod digits;
mod parse;

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use decimal::Decimal;
use parse::{QuantityError, parse_quantity};

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::ext::{int_arg, opaque_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The type name of quantity values.
const QUANTITY_TYPE: &str = "kubernetes.Quantity";

/// How a quantity prints: the suffix family it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `12e6`
    DecimalExponent,
    /// `12Mi`
    BinarySi,
    /// `12M`
    DecimalSi,
}

/// The number behind a quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Amount {
    /// `value × 10^scale`, the fast form for numbers that fit in 64 bits.
    Int { value: i64, scale: i32 },
    /// The arbitrary-precision form.
    Dec(Decimal),
}

/// A `kubernetes.Quantity` value.
#[derive(Clone)]
struct Quantity {
    amount: Amount,
    format: Format,
    /// The text it was parsed from, when that text is already canonical.
    cached: Option<Arc<str>>,
}

impl Quantity {
    /// An integer in the decimal exponent format, as `resource.NewQuantity` makes for
    /// `add(int)` and `sub(int)`.
    fn from_int(value: i64) -> Quantity {
        Quantity {
            amount: Amount::Int { value, scale: 0 },
            format: Format::DecimalExponent,
            cached: None,
        }
    }

    fn to_decimal(&self) -> Decimal {
        match &self.amount {
            Amount::Int { value, scale } => Decimal::from_scaled_int(*value, *scale),
            Amount::Dec(decimal) => decimal.clone(),
        }
    }

    fn sign(&self) -> i64 {
        match &self.amount {
            Amount::Int { value, .. } => value.signum(),
            Amount::Dec(decimal) => decimal.sign(),
        }
    }

    /// Digits held, for cost accounting (the 64-bit form counts as one limb).
    fn digit_count(&self) -> usize {
        match &self.amount {
            Amount::Int { .. } => 1,
            Amount::Dec(decimal) => decimal.digit_count(),
        }
    }

    /// Exact comparison.
    fn compare(&self, other: &Quantity) -> Ordering {
        match (&self.amount, &other.amount) {
            (Amount::Int { value: a, scale: x }, Amount::Int { value: b, scale: y }) if x == y => {
                a.cmp(b)
            }
            _ => self.to_decimal().compare(&other.to_decimal()),
        }
    }

    /// The value as an int, when it is in the 64-bit form with a non-negative scale and fits
    /// (`resource.Quantity.AsInt64`).
    fn as_int64(&self) -> Option<i64> {
        match &self.amount {
            Amount::Int { value, scale } if *scale >= 0 => {
                if *value == 0 {
                    return Some(0);
                }
                (0..*scale).try_fold(*value, |value, _| value.checked_mul(10))
            }
            _ => None,
        }
    }

    /// The value as a double, computed as `AsApproximateFloat64`: the unscaled number times
    /// Go's `math.Pow10` of the exponent.
    fn approximate_float(&self) -> f64 {
        let (base, exponent) = match &self.amount {
            Amount::Int { value, scale } => (*value as f64, i64::from(*scale)),
            Amount::Dec(decimal) => {
                let magnitude = decimal.magnitude.to_f64();
                let base = if decimal.negative {
                    -magnitude
                } else {
                    magnitude
                };
                (base, -decimal.scale)
            }
        };
        if exponent == 0 {
            base
        } else {
            base * go_pow10(exponent)
        }
    }

    /// `self + other` (`resource.Quantity.Add`): the 64-bit form when the sum fits, else the
    /// decimal form. A zero receiver takes the other's format.
    fn add(&self, other: &Quantity) -> Result<Quantity, QuantityError> {
        let mut format = self.format;
        if let (Amount::Int { value: a, scale: x }, Amount::Int { value: b, scale: y }) =
            (&self.amount, &other.amount)
        {
            if *a == 0 {
                format = other.format;
            }
            if let Some((value, scale)) = add_scaled((*a, *x), (*b, *y)) {
                return Ok(Quantity {
                    amount: Amount::Int { value, scale },
                    format,
                    cached: None,
                });
            }
        } else if self.sign() == 0 {
            format = other.format;
        }
        let sum = self
            .to_decimal()
            .add(&other.to_decimal())
            .map_err(|_| QuantityError::TooLarge)?;
        Ok(Quantity {
            amount: Amount::Dec(sum),
            format,
            cached: None,
        })
    }

    /// `self - other` (`resource.Quantity.Sub`).
    fn sub(&self, other: &Quantity) -> Result<Quantity, QuantityError> {
        let format = if self.sign() == 0 {
            other.format
        } else {
            self.format
        };
        if let (Amount::Int { value: a, scale: x }, Amount::Int { value: b, scale: y }) =
            (&self.amount, &other.amount)
            && let Some(negated) = b.checked_neg()
            && let Some((value, scale)) = add_scaled((*a, *x), (negated, *y))
        {
            return Ok(Quantity {
                amount: Amount::Int { value, scale },
                format,
                cached: None,
            });
        }
        let difference = self
            .to_decimal()
            .sub(&other.to_decimal())
            .map_err(|_| QuantityError::TooLarge)?;
        Ok(Quantity {
            amount: Amount::Dec(difference),
            format,
            cached: None,
        })
    }
}

/// Adds two `value × 10^scale` numbers at the smaller scale, or `None` on overflow
/// (`int64Amount.Add`: a zero operand leaves the other unchanged, scale included).
fn add_scaled(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    let scale_up = |value: i64, by: i64| (0..by).try_fold(value, |v, _| v.checked_mul(10));
    match () {
        _ if b.0 == 0 => Some(a),
        _ if a.0 == 0 => Some(b),
        _ if a.1 == b.1 => Some((a.0.checked_add(b.0)?, a.1)),
        _ if a.1 > b.1 => {
            let aligned = scale_up(a.0, i64::from(a.1) - i64::from(b.1))?;
            Some((aligned.checked_add(b.0)?, b.1))
        }
        _ => {
            let aligned = scale_up(b.0, i64::from(b.1) - i64::from(a.1))?;
            Some((a.0.checked_add(aligned)?, a.1))
        }
    }
}

/// Go's `math.Pow10`: exact powers from tables, infinity above 10^308, zero below 10^-323.
fn go_pow10(exponent: i64) -> f64 {
    const SMALL: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const LARGE: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const TINY: [f64; 11] = [
        1e0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    match exponent {
        0..=308 => LARGE[(exponent / 32) as usize] * SMALL[(exponent % 32) as usize],
        -323..=-1 => {
            let positive = -exponent;
            TINY[(positive / 32) as usize] / SMALL[(positive % 32) as usize]
        }
        _ if exponent > 0 => f64::INFINITY,
        _ => 0.0,
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "quantity({:?})", canonical::canonical_text(self))
    }
}

impl OpaqueValue for Quantity {
    fn type_name(&self) -> &str {
        QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Quantity>()
            .is_some_and(|other| self.compare(other) == Ordering::Equal)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(canonical::canonical_text(self)))
    }
}

fn quantity_value(quantity: Quantity) -> Value {
    Value::Opaque(Arc::new(quantity))
}

fn quantity_arg<'a>(function: &str, value: &'a Value) -> EvalResult<&'a Quantity> {
    opaque_arg::<Quantity>(function, value)
}

fn quantity_error(function: &str, error: QuantityError) -> EvalError {
    EvalError::invalid_argument(function, error.to_string())
}

/// Parses quantity text, charging for the text walked.
fn parse_charged(function: &str, value: &Value, budget: &mut Budget) -> EvalResult<Quantity> {
    let text = string_arg(function, value)?;
    budget.charge(traversal_cost(text.len()))?;
    parse_quantity(text).map_err(|error| quantity_error(function, error))
}

/// Charges for arithmetic or comparison on two quantities, in proportion to their digits.
fn charge_digits(a: &Quantity, b: &Quantity, budget: &mut Budget) -> EvalResult<()> {
    budget.charge(traversal_cost(a.digit_count() + b.digit_count()))
}

/// A binary member function on two quantities.
fn binary(
    name: &'static str,
    id: &str,
    result: Type,
    apply: fn(&Quantity, &Quantity) -> EvalResult<Value>,
) -> Overload {
    let quantity = Type::opaque(QUANTITY_TYPE);
    Overload::member(id, &[quantity.clone(), quantity], result).with_impl(move |args, budget| {
        let a = quantity_arg(name, &args[0])?;
        let b = quantity_arg(name, &args[1])?;
        charge_digits(a, b, budget)?;
        apply(a, b)
    })
}

/// A member function of a quantity and an int, the int read as a quantity.
fn with_int(
    name: &'static str,
    id: &str,
    apply: fn(&Quantity, &Quantity) -> Result<Quantity, QuantityError>,
) -> Overload {
    let quantity = Type::opaque(QUANTITY_TYPE);
    Overload::member(id, &[quantity.clone(), Type::Int], quantity).with_impl(move |args, budget| {
        let a = quantity_arg(name, &args[0])?;
        let b = Quantity::from_int(int_arg(name, &args[1])?);
        charge_digits(a, &b, budget)?;
        apply(a, &b)
            .map(quantity_value)
            .map_err(|error| quantity_error(name, error))
    })
}

/// A member function computed from one quantity.
fn unary(
    name: &'static str,
    id: &str,
    result: Type,
    apply: fn(&Quantity) -> EvalResult<Value>,
) -> Overload {
    Overload::member(id, &[Type::opaque(QUANTITY_TYPE)], result)
        .with_impl(move |args, _| apply(quantity_arg(name, &args[0])?))
}

/// The quantity library.
pub(crate) fn library() -> Library {
    let quantity = || Type::opaque(QUANTITY_TYPE);
    Library::new(
        "kubernetes.quantity",
        vec![
            Function::new("quantity").overload(
                Overload::global("string_to_quantity", &[Type::String], quantity()).with_impl(
                    |args, budget| parse_charged("quantity", &args[0], budget).map(quantity_value),
                ),
            ),
            Function::new("isQuantity").overload(
                Overload::global("is_quantity_string", &[Type::String], Type::Bool).with_impl(
                    |args, budget| {
                        let text = string_arg("isQuantity", &args[0])?;
                        budget.charge(traversal_cost(text.len()))?;
                        Ok(Value::Bool(parse_quantity(text).is_ok()))
                    },
                ),
            ),
            // A global function in Kubernetes: `sign(quantity(x))`, not `quantity(x).sign()`.
            Function::new("sign").overload(
                Overload::global("quantity_sign", &[quantity()], Type::Int)
                    .with_impl(|args, _| Ok(Value::Int(quantity_arg("sign", &args[0])?.sign()))),
            ),
            Function::new("isGreaterThan").overload(binary(
                "isGreaterThan",
                "quantity_is_greater_than",
                Type::Bool,
                |a, b| Ok(Value::Bool(a.compare(b) == Ordering::Greater)),
            )),
            Function::new("isLessThan").overload(binary(
                "isLessThan",
                "quantity_is_less_than",
                Type::Bool,
                |a, b| Ok(Value::Bool(a.compare(b) == Ordering::Less)),
            )),
            Function::new("compareTo").overload(binary(
                "compareTo",
                "quantity_compare_to",
                Type::Int,
                |a, b| Ok(Value::Int(a.compare(b) as i64)),
            )),
            Function::new("asApproximateFloat").overload(unary(
                "asApproximateFloat",
                "quantity_get_float",
                Type::Double,
                |q| Ok(Value::Double(q.approximate_float())),
            )),
            Function::new("asInteger").overload(unary(
                "asInteger",
                "quantity_get_int",
                Type::Int,
                |q| {
                    q.as_int64().map(Value::Int).ok_or_else(|| {
                        EvalError::invalid_argument("asInteger", "cannot convert value to integer")
                    })
                },
            )),
            Function::new("isInteger").overload(unary(
                "isInteger",
                "quantity_is_integer",
                Type::Bool,
                |q| Ok(Value::Bool(q.as_int64().is_some())),
            )),
            Function::new("add")
                .overload(binary("add", "quantity_add", quantity(), |a, b| {
                    a.add(b)
                        .map(quantity_value)
                        .map_err(|error| quantity_error("add", error))
                }))
                .overload(with_int("add", "quantity_add_int", Quantity::add)),
            Function::new("sub")
                .overload(binary("sub", "quantity_sub", quantity(), |a, b| {
                    a.sub(b)
                        .map(quantity_value)
                        .map_err(|error| quantity_error("sub", error))
                }))
                .overload(with_int("sub", "quantity_sub_int", Quantity::sub)),
        ],
    )
}

#[cfg(test)]
mod tests;
