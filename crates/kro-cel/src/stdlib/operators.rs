//! The operators' semantics, shared by the interpreter's fast paths and the function table.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cost::{Budget, compare_cost, copy_cost, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::ext::{is_omit, omit_not_comparable};
use crate::value::{Key, Value};

fn overflow(operation: &'static str) -> EvalError {
    EvalError::new(EvalErrorKind::Overflow(operation))
}

/// `a + b`: numbers of one type, strings, bytes, lists, and time arithmetic.
pub(crate) fn add(a: &Value, b: &Value, budget: &mut Budget) -> EvalResult<Value> {
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            Value::Int(x.checked_add(*y).ok_or_else(|| overflow("addition"))?)
        }
        (Value::Uint(x), Value::Uint(y)) => {
            Value::Uint(x.checked_add(*y).ok_or_else(|| overflow("addition"))?)
        }
        (Value::Double(x), Value::Double(y)) => Value::Double(x + y),
        (Value::String(x), Value::String(y)) => {
            budget.charge(traversal_cost(x.len() + y.len()))?;
            let mut joined = String::with_capacity(x.len() + y.len());
            joined.push_str(x);
            joined.push_str(y);
            Value::String(Arc::from(joined))
        }
        (Value::Bytes(x), Value::Bytes(y)) => {
            budget.charge(traversal_cost(x.len() + y.len()))?;
            let mut joined = Vec::with_capacity(x.len() + y.len());
            joined.extend_from_slice(x);
            joined.extend_from_slice(y);
            Value::Bytes(Arc::from(joined))
        }
        (Value::List(x), Value::List(y)) => {
            if x.is_empty() {
                return Ok(b.clone());
            }
            if y.is_empty() {
                return Ok(a.clone());
            }
            budget.charge(copy_cost(x.len() + y.len()))?;
            let mut joined = Vec::with_capacity(x.len() + y.len());
            joined.extend(x.iter().cloned());
            joined.extend(y.iter().cloned());
            Value::list(joined)
        }
        (Value::Timestamp(t), Value::Duration(d)) | (Value::Duration(d), Value::Timestamp(t)) => {
            Value::Timestamp(t.checked_add(*d)?)
        }
        (Value::Duration(x), Value::Duration(y)) => Value::Duration(x.checked_add(*y)?),
        _ => return Err(EvalError::no_such_overload("_+_", &[a, b])),
    })
}

/// `a - b`
pub(crate) fn subtract(a: &Value, b: &Value) -> EvalResult<Value> {
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            Value::Int(x.checked_sub(*y).ok_or_else(|| overflow("subtraction"))?)
        }
        (Value::Uint(x), Value::Uint(y)) => {
            Value::Uint(x.checked_sub(*y).ok_or_else(|| overflow("subtraction"))?)
        }
        (Value::Double(x), Value::Double(y)) => Value::Double(x - y),
        (Value::Timestamp(x), Value::Timestamp(y)) => Value::Duration(x.since(*y)?),
        (Value::Timestamp(t), Value::Duration(d)) => Value::Timestamp(t.checked_sub(*d)?),
        (Value::Duration(x), Value::Duration(y)) => Value::Duration(x.checked_sub(*y)?),
        _ => return Err(EvalError::no_such_overload("_-_", &[a, b])),
    })
}

/// `a * b`
pub(crate) fn multiply(a: &Value, b: &Value) -> EvalResult<Value> {
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => Value::Int(
            x.checked_mul(*y)
                .ok_or_else(|| overflow("multiplication"))?,
        ),
        (Value::Uint(x), Value::Uint(y)) => Value::Uint(
            x.checked_mul(*y)
                .ok_or_else(|| overflow("multiplication"))?,
        ),
        (Value::Double(x), Value::Double(y)) => Value::Double(x * y),
        _ => return Err(EvalError::no_such_overload("_*_", &[a, b])),
    })
}

/// `a / b`: integer division truncates; division by zero is an error for integers.
pub(crate) fn divide(a: &Value, b: &Value) -> EvalResult<Value> {
    Ok(match (a, b) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
            return Err(EvalError::new(EvalErrorKind::DivisionByZero));
        }
        (Value::Int(x), Value::Int(y)) => {
            Value::Int(x.checked_div(*y).ok_or_else(|| overflow("division"))?)
        }
        (Value::Uint(x), Value::Uint(y)) => Value::Uint(x / y),
        (Value::Double(x), Value::Double(y)) => Value::Double(x / y),
        _ => return Err(EvalError::no_such_overload("_/_", &[a, b])),
    })
}

/// `a % b`: the remainder has the dividend's sign.
pub(crate) fn modulo(a: &Value, b: &Value) -> EvalResult<Value> {
    Ok(match (a, b) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => {
            return Err(EvalError::new(EvalErrorKind::ModulusByZero));
        }
        (Value::Int(x), Value::Int(y)) => {
            Value::Int(x.checked_rem(*y).ok_or_else(|| overflow("modulus"))?)
        }
        (Value::Uint(x), Value::Uint(y)) => Value::Uint(x % y),
        _ => return Err(EvalError::no_such_overload("_%_", &[a, b])),
    })
}

/// `-a`
pub(crate) fn negate(a: &Value) -> EvalResult<Value> {
    Ok(match a {
        Value::Int(x) => Value::Int(x.checked_neg().ok_or_else(|| overflow("negation"))?),
        Value::Double(x) => Value::Double(-x),
        Value::Duration(d) => Value::Duration(d.negate()?),
        _ => return Err(EvalError::no_such_overload("-_", &[a])),
    })
}

/// `!a`
pub(crate) fn not(a: &Value) -> EvalResult<Value> {
    match a {
        Value::Bool(x) => Ok(Value::Bool(!x)),
        _ => Err(EvalError::no_such_overload("!_", &[a])),
    }
}

/// The relational operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    Less,
    LessEquals,
    Greater,
    GreaterEquals,
}

impl Relation {
    pub(crate) fn function(self) -> &'static str {
        match self {
            Relation::Less => "_<_",
            Relation::LessEquals => "_<=_",
            Relation::Greater => "_>_",
            Relation::GreaterEquals => "_>=_",
        }
    }

    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Relation::Less => ordering == Ordering::Less,
            Relation::LessEquals => ordering != Ordering::Greater,
            Relation::Greater => ordering == Ordering::Greater,
            Relation::GreaterEquals => ordering != Ordering::Less,
        }
    }
}

/// `a < b` and friends. Comparisons with NaN are false; incomparable types are an error.
/// Strings and bytes are charged for the bytes compared, as cel-go does.
pub(crate) fn relate(
    relation: Relation,
    a: &Value,
    b: &Value,
    budget: &mut Budget,
) -> EvalResult<Value> {
    match compare(a, b, budget)? {
        Some(ordering) => Ok(Value::Bool(relation.holds(ordering))),
        None => {
            let is_number =
                |v: &Value| matches!(v, Value::Int(_) | Value::Uint(_) | Value::Double(_));
            if is_number(a) && is_number(b) {
                // NaN: ordered comparisons are false.
                Ok(Value::Bool(false))
            } else {
                Err(EvalError::no_such_overload(relation.function(), &[a, b]))
            }
        }
    }
}

/// [`Value::compare`], charging one unit per ten bytes of the shorter string or bytes.
pub(crate) fn compare(a: &Value, b: &Value, budget: &mut Budget) -> EvalResult<Option<Ordering>> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            budget.charge(traversal_cost(x.len().min(y.len())))?;
        }
        (Value::Bytes(x), Value::Bytes(y)) => {
            budget.charge(traversal_cost(x.len().min(y.len())))?;
        }
        _ => {}
    }
    Ok(a.compare(b))
}

/// `a == b`, or `a != b` when `negate`. kro's omit sentinel cannot be compared: as upstream,
/// `omit() == x` fails unless `x` is `null`.
pub(crate) fn equality(
    a: &Value,
    b: &Value,
    negate: bool,
    budget: &mut Budget,
) -> EvalResult<bool> {
    if !negate && is_omit(a) && !matches!(b, Value::Null) {
        return Err(omit_not_comparable());
    }
    Ok(equals(a, b, budget)? != negate)
}

/// `a == b` ([`Value::equals`]), charging as it walks: at each pair of lists or maps compared,
/// one unit per four elements of the shorter; at each pair of strings or bytes, one per ten
/// bytes. Values can share
/// parts (a list holding the same large list ten times, nested five deep, costs little to
/// build), so everything compared is charged, at every level, before it is compared.
pub(crate) fn equals(a: &Value, b: &Value, budget: &mut Budget) -> EvalResult<bool> {
    crate::stack::guard(|| match (a, b) {
        (Value::List(x), Value::List(y)) => {
            budget.charge(compare_cost(x.len().min(y.len())))?;
            if x.len() != y.len() {
                return Ok(false);
            }
            for (x, y) in x.iter().zip(y.iter()) {
                if !equals_element(x, y, budget)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        (Value::Map(x), Value::Map(y)) => {
            budget.charge(compare_cost(x.len().min(y.len())))?;
            if x.len() != y.len() {
                return Ok(false);
            }
            for (key, value) in x.iter() {
                charge_key(key, budget)?;
                match y.get(key) {
                    Some(other) if equals_element(value, other, budget)? => {}
                    _ => return Ok(false),
                }
            }
            Ok(true)
        }
        (Value::String(x), Value::String(y)) => {
            budget.charge(traversal_cost(x.len().min(y.len())))?;
            Ok(x == y)
        }
        (Value::Bytes(x), Value::Bytes(y)) => {
            budget.charge(traversal_cost(x.len().min(y.len())))?;
            Ok(x == y)
        }
        (Value::Optional(Some(x)), Value::Optional(Some(y))) => equals(x, y, budget),
        _ => Ok(a.equals(b)),
    })
}

/// [`equals`] for the elements of an aggregate: scalars are compared in place, without the
/// recursion's stack check, since walking a large list is the hot path.
#[inline]
fn equals_element(a: &Value, b: &Value, budget: &mut Budget) -> EvalResult<bool> {
    match a {
        Value::List(_)
        | Value::Map(_)
        | Value::String(_)
        | Value::Bytes(_)
        | Value::Optional(_) => equals(a, b, budget),
        _ => Ok(a.equals(b)),
    }
}

/// Charges for hashing a map key: its bytes, for a string.
pub(crate) fn charge_key(key: &Key, budget: &mut Budget) -> EvalResult<()> {
    match key {
        Key::String(text) => budget.charge(traversal_cost(text.len())),
        _ => Ok(()),
    }
}

/// Charges for hashing a value to look it up among a map's keys: its bytes, for a string.
pub(crate) fn charge_lookup(index: &Value, budget: &mut Budget) -> EvalResult<()> {
    match index {
        Value::String(text) => budget.charge(traversal_cost(text.len())),
        _ => Ok(()),
    }
}

/// The list index a value denotes: ints, uints, and doubles with integral values.
fn list_index(index: &Value) -> Option<Result<i64, ()>> {
    match index {
        Value::Int(i) => Some(Ok(*i)),
        Value::Uint(u) => Some(i64::try_from(*u).map_err(|_| ())),
        Value::Double(d) if d.fract() == 0.0 && d.is_finite() => {
            if *d >= -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18 {
                Some(Ok(*d as i64))
            } else {
                Some(Err(()))
            }
        }
        Value::Double(_) => Some(Err(())),
        _ => None,
    }
}

/// `a[i]` on lists and maps. `Ok(None)` means "absent" (for optional indexing).
pub(crate) fn index_optional(container: &Value, index: &Value) -> EvalResult<Option<Value>> {
    match container {
        Value::List(items) => match list_index(index) {
            Some(Ok(i)) => Ok(usize::try_from(i).ok().and_then(|i| items.get(i)).cloned()),
            Some(Err(())) => Err(EvalError::invalid_argument(
                "_[_]",
                format!("invalid list index: {index}"),
            )),
            None => Err(EvalError::no_such_overload("_[_]", &[container, index])),
        },
        Value::Map(map) => match map.get_value(index) {
            Ok(found) => Ok(found.cloned()),
            Err(_) => Err(EvalError::no_such_overload("_[_]", &[container, index])),
        },
        _ => Err(EvalError::no_such_overload("_[_]", &[container, index])),
    }
}

/// `a[i]`: a missing key or index is a typed "not found" error.
pub(crate) fn index(container: &Value, index: &Value) -> EvalResult<Value> {
    match index_optional(container, index)? {
        Some(value) => Ok(value),
        None => Err(match container {
            Value::List(items) => EvalError::new(EvalErrorKind::IndexOutOfBounds {
                index: list_index(index).and_then(Result::ok).unwrap_or(-1),
                size: items.len(),
            }),
            _ => EvalError::new(EvalErrorKind::NoSuchKey(index.to_string())),
        }),
    }
}

/// `a in b`: membership in a list (by equality) or among a map's keys.
pub(crate) fn contained_in(
    element: &Value,
    container: &Value,
    budget: &mut Budget,
) -> EvalResult<Value> {
    match container {
        Value::List(items) => {
            budget.charge(compare_cost(items.len()))?;
            for item in items.iter() {
                if equals(item, element, budget)? {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        Value::Map(map) => Ok(Value::Bool(match element {
            Value::String(_) => {
                charge_lookup(element, budget)?;
                Key::from_value(element).is_ok_and(|key| map.contains_key(&key))
            }
            Value::Double(_) => map.get_value(element).ok().flatten().is_some(),
            _ => Key::from_value(element).is_ok_and(|key| map.contains_key(&key)),
        })),
        _ => Err(EvalError::no_such_overload("@in", &[element, container])),
    }
}

/// `size(x)`: code points of a string, bytes of bytes, elements of lists and maps.
pub(crate) fn size(value: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let size = match value {
        Value::String(s) => {
            budget.charge(traversal_cost(s.len()))?;
            s.chars().count()
        }
        Value::Bytes(b) => b.len(),
        Value::List(items) => items.len(),
        Value::Map(map) => map.len(),
        _ => return Err(EvalError::no_such_overload("size", &[value])),
    };
    Ok(Value::Int(size as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Budget {
        Budget::new(None)
    }

    #[test]
    fn integer_arithmetic_reports_overflow_and_zero_division() {
        let kind = |result: EvalResult<Value>| result.expect_err("fails").kind().clone();
        assert_eq!(
            kind(add(&Value::Int(i64::MAX), &Value::Int(1), &mut budget())),
            EvalErrorKind::Overflow("addition")
        );
        assert_eq!(
            kind(subtract(&Value::Uint(0), &Value::Uint(1))),
            EvalErrorKind::Overflow("subtraction")
        );
        assert_eq!(
            kind(divide(&Value::Int(1), &Value::Int(0))),
            EvalErrorKind::DivisionByZero
        );
        assert_eq!(
            kind(modulo(&Value::Uint(1), &Value::Uint(0))),
            EvalErrorKind::ModulusByZero
        );
        assert_eq!(
            kind(divide(&Value::Int(i64::MIN), &Value::Int(-1))),
            EvalErrorKind::Overflow("division")
        );
        assert_eq!(
            kind(negate(&Value::Int(i64::MIN))),
            EvalErrorKind::Overflow("negation")
        );
    }

    #[test]
    fn mixed_types_have_no_overload() {
        let error = add(&Value::Int(1), &Value::string("a"), &mut budget()).expect_err("fails");
        assert_eq!(
            error.kind(),
            &EvalErrorKind::NoSuchOverload {
                function: "_+_".into(),
                arguments: vec!["int".into(), "string".into()]
            }
        );
    }

    #[test]
    fn missing_index_and_key_are_pending_errors() {
        let list = Value::list(vec![Value::Int(1)]);
        let error = index(&list, &Value::Int(3)).expect_err("out of bounds");
        assert!(error.is_pending());
        let map = Value::Map(crate::value::Map::new());
        let error = index(&map, &Value::string("k")).expect_err("missing");
        assert!(error.is_pending());
        assert_eq!(
            index(&list, &Value::Double(0.0)).expect("integral double"),
            Value::Int(1)
        );
        assert!(
            !index(&list, &Value::Double(0.5))
                .expect_err("fractional")
                .is_pending()
        );
    }

    #[test]
    fn size_counts_code_points() {
        assert_eq!(
            size(&Value::string("héllo"), &mut budget()).expect("size"),
            Value::Int(5)
        );
    }

    fn activation(bindings: &[(&str, Value)]) -> std::collections::HashMap<String, Value> {
        bindings
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect()
    }

    fn cost_of(text: &str, bindings: &[(&str, Value)]) -> u64 {
        let mut env = crate::Env::kro();
        for (name, value) in bindings {
            let ty = match value {
                Value::String(_) => crate::Type::String,
                _ => crate::Type::Dyn,
            };
            env = env.with_variable(name, ty);
        }
        let evaluation = env
            .compile(text)
            .expect("compiles")
            .evaluate_with_limit(&activation(bindings), None);
        assert!(evaluation.result.is_ok(), "{text}: {:?}", evaluation.result);
        evaluation.cost
    }

    #[test]
    fn ordering_strings_is_charged_for_the_bytes_compared() {
        // Found by the adversarial bench: `big <= big` in a loop of 300,000 ran 1.1 s on the
        // default budget, charged one unit per comparison.
        let big = Value::string(&"a".repeat(100_000));
        let cost = cost_of("big <= big", &[("big", big)]);
        assert_eq!(cost, 1 + 10_000);
        let mut budget = budget();
        let bytes = Value::Bytes(Arc::from(vec![0u8; 1000]));
        relate(Relation::Less, &bytes, &bytes, &mut budget).expect("orders");
        assert_eq!(budget.used(), 100);
    }

    #[test]
    fn equality_charges_for_every_level_it_compares() {
        // Found by the adversarial bench: a list holding one large list ten times, five
        // levels deep, cost 1,058 units to compare and took 0.6 s.
        let inner = Value::list((0..1000).map(Value::Int).collect());
        let outer = Value::list(vec![inner.clone(); 10]);
        let mut budget = budget();
        assert!(equals(&outer, &outer.clone(), &mut budget).expect("compares"));
        // A unit per four elements, at each level.
        assert_eq!(budget.used(), 3 + 10 * 250);
        // Strings inside lists are charged for their bytes.
        let strings = Value::list(vec![Value::string(&"a".repeat(1000)); 3]);
        let mut budget = self::budget();
        assert!(equals(&strings, &strings.clone(), &mut budget).expect("compares"));
        assert_eq!(budget.used(), 1 + 3 * 100);
        // A difference at the top stops the walk.
        let mut budget = self::budget();
        let shorter = Value::list(vec![inner; 9]);
        assert!(!equals(&outer, &shorter, &mut budget).expect("compares"));
        assert_eq!(budget.used(), 3);
    }

    #[test]
    fn list_membership_charges_for_each_comparison() {
        let inner = Value::list((0..1000).map(Value::Int).collect());
        let container = Value::list(vec![inner.clone(); 5]);
        let mut budget = budget();
        let found = contained_in(&inner, &container, &mut budget).expect("compares");
        assert_eq!(found, Value::Bool(true));
        // The container's five elements, then one full comparison.
        assert_eq!(budget.used(), 2 + 250);
    }

    #[test]
    fn map_lookups_charge_for_hashing_string_keys() {
        let big = Value::string(&"k".repeat(10_000));
        let map = Value::Map(crate::value::Map::new());
        let mut budget = budget();
        contained_in(&big, &map, &mut budget).expect("looks up");
        assert_eq!(budget.used(), 1000);
        let index = cost_of("{'a': 1}[?big].hasValue()", &[("big", big.clone())]);
        let small = cost_of("{'a': 1}[?big].hasValue()", &[("big", Value::string("k"))]);
        assert_eq!(index - small, 1000 - 1);
    }

    #[test]
    fn concatenating_lists_charges_for_every_element_copied() {
        // Found by the adversarial bench: `l + l` of 10,000 elements in a loop ran 140 ms on
        // the default budget at a tenth of a unit per element copied.
        let list = Value::list((0..1000).map(Value::Int).collect());
        let mut budget = budget();
        add(&list, &list, &mut budget).expect("adds");
        assert_eq!(budget.used(), 2000 / crate::cost::ELEMENTS_PER_COPY_UNIT);
    }
}
