//! The sets extension (cel-go's `ext.Sets`): lists treated as sets, compared with CEL
//! equality (so `1`, `1u` and `1.0` are the same element).
//!
//! - `sets.contains(list(T), list(T)) -> bool`: every element of the second is in the first.
//! - `sets.equivalent(list(T), list(T)) -> bool`: each contains the other.
//! - `sets.intersects(list(T), list(T)) -> bool`: some element is in both.
//!
//! Lists of ints, uints, bools and strings are compared through a hash set, charged two units
//! per element hashed (and per ten bytes of string); other lists element by element, charged
//! for the product of their sizes and for each comparison.

use std::collections::HashSet;

use crate::cost::{Budget, compare_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::stdlib::operators;
use crate::types::Type;
use crate::value::{Key, Value};

/// The sets library.
pub(crate) fn library() -> Library {
    let list_t = || Type::list(Type::param("T"));
    let function = |name: &'static str, id: &str, operation: SetOperation| {
        Function::new(name).overload(
            Overload::global(id, &[list_t(), list_t()], Type::Bool).with_impl(
                move |args, budget| match args {
                    [Value::List(first), Value::List(second)] => {
                        Ok(Value::Bool(operation.holds(first, second, budget)?))
                    }
                    _ => Err(EvalError::no_such_overload(
                        name,
                        &args.iter().collect::<Vec<_>>(),
                    )),
                },
            ),
        )
    };
    Library::new(
        "sets",
        vec![
            function(
                "sets.contains",
                "list_sets_contains_list",
                SetOperation::Contains,
            ),
            function(
                "sets.equivalent",
                "list_sets_equivalent_list",
                SetOperation::Equivalent,
            ),
            function(
                "sets.intersects",
                "list_sets_intersects_list",
                SetOperation::Intersects,
            ),
        ],
    )
}

/// The elements as map keys, when every one is an int, uint, bool or string. For those, key
/// equality and hashing agree exactly with CEL equality (`1 == 1u`), so membership can be
/// tested with a hash set.
pub(super) fn scalar_keys(items: &[Value]) -> Option<Vec<Key>> {
    items
        .iter()
        .map(|item| match item {
            Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::String(_) => {
                Key::from_value(item).ok()
            }
            _ => None,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOperation {
    Contains,
    Equivalent,
    Intersects,
}

impl SetOperation {
    fn holds(self, first: &[Value], second: &[Value], budget: &mut Budget) -> EvalResult<bool> {
        match self {
            SetOperation::Contains => contains_all(first, second, budget),
            SetOperation::Equivalent => {
                Ok(contains_all(first, second, budget)? && contains_all(second, first, budget)?)
            }
            SetOperation::Intersects => intersects(first, second, budget),
        }
    }
}

/// A membership test over `haystack`: hashed for scalar lists, else a linear scan.
enum Members<'a> {
    Hashed(HashSet<Key, foldhash::fast::FixedState>),
    Scanned(&'a [Value]),
}

impl<'a> Members<'a> {
    /// Prepares to look up `needles` in `haystack`, charging for the work the lookups take.
    fn new(haystack: &'a [Value], needles: &[Value], budget: &mut Budget) -> EvalResult<Self> {
        if let (Some(keys), Some(needle_keys)) = (scalar_keys(haystack), scalar_keys(needles)) {
            // Every element is hashed once: two units each, and a unit per ten bytes of
            // string.
            budget.charge(2 * haystack.len().saturating_add(needles.len()) as u64)?;
            for key in keys.iter().chain(&needle_keys) {
                operators::charge_key(key, budget)?;
            }
            return Ok(Members::Hashed(keys.into_iter().collect()));
        }
        budget.charge(compare_cost(haystack.len().saturating_mul(needles.len())))?;
        Ok(Members::Scanned(haystack))
    }

    /// Whether `needle` is a member; scanning charges for each comparison (hashing was
    /// charged in advance).
    fn contains(&self, needle: &Value, budget: &mut Budget) -> EvalResult<bool> {
        match self {
            Members::Hashed(keys) => {
                Ok(Key::from_value(needle).is_ok_and(|key| keys.contains(&key)))
            }
            Members::Scanned(items) => {
                for item in items.iter() {
                    if operators::equals(item, needle, budget)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}

/// Whether every element of `subset` is in `set`.
fn contains_all(set: &[Value], subset: &[Value], budget: &mut Budget) -> EvalResult<bool> {
    let members = Members::new(set, subset, budget)?;
    for element in subset {
        if !members.contains(element, budget)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether some element of `first` is in `second`.
fn intersects(first: &[Value], second: &[Value], budget: &mut Budget) -> EvalResult<bool> {
    let members = Members::new(second, first, budget)?;
    for element in first {
        if members.contains(element, budget)? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use crate::error::TypeErrorKind;
    use crate::ext::testing::{
        check_error, cost_with_input, env, error, is_no_such_overload, output_type, value,
    };
    use crate::{Env, Type, Value};

    fn sets() -> Env {
        env(super::library())
    }

    #[test]
    fn set_functions_use_cel_equality() {
        let env = sets();
        let cases = [
            ("sets.contains([], [])", true),
            ("sets.contains([1], [])", true),
            ("sets.contains([], [1])", false),
            ("sets.contains([1, 2, 3, 4], [2, 3])", true),
            ("sets.contains([1, 2, 3], [3, 2, 1, 1])", true),
            ("sets.contains([1, 2], [2, 2, 5])", false),
            ("sets.contains([1, 2u, 3.0], [1.0, 2, 3u])", true),
            ("sets.contains([dyn(1), 'a'], [dyn(1u)])", true),
            ("sets.contains([[1], [2, 3]], [[2, 3.0]])", true),
            ("sets.contains([{'a': dyn(1)}], [{'a': 1u}])", true),
            ("sets.contains(['a', 'b'], ['c'])", false),
            ("sets.equivalent([], [])", true),
            ("sets.equivalent([1], [1, 1])", true),
            ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", true),
            ("sets.equivalent([1, 2], [1, 2, 3])", false),
            ("sets.equivalent([[1]], [[dyn(1.0)]])", true),
            ("sets.intersects([], [])", false),
            ("sets.intersects([1], [])", false),
            ("sets.intersects([1, 2], [2, 3])", true),
            ("sets.intersects([1, 2], [3, 4])", false),
            ("sets.intersects([1.0, 2.5], [dyn(1u)])", true),
            ("sets.intersects(['a'], ['b', 'a'])", true),
        ];
        for (text, expected) in cases {
            assert_eq!(value(&env, text), Value::Bool(expected), "{text}");
        }
    }

    #[test]
    fn set_functions_check_to_bool_and_need_lists_of_one_type() {
        let env = sets();
        assert_eq!(output_type(&env, "sets.contains([1], [2])"), Type::Bool);
        assert_eq!(
            output_type(&env, "sets.intersects([dyn(1)], ['a'])"),
            Type::Bool
        );
        for text in [
            "sets.contains([1], ['a'])",
            "sets.equivalent(1, [1])",
            "sets.intersects([1], {'a': 1})",
        ] {
            assert!(
                matches!(
                    check_error(&env, text),
                    TypeErrorKind::NoMatchingOverload { .. }
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn set_functions_on_non_lists_fail_at_run_time() {
        let env = sets();
        assert!(is_no_such_overload(&error(
            &env,
            "sets.contains(dyn(1), [1])"
        )));
        assert!(is_no_such_overload(&error(
            &env,
            "sets.intersects([1], dyn({}))"
        )));
    }

    #[test]
    fn scalar_lists_cost_their_size_and_others_the_product_of_sizes() {
        let env = sets();
        let ints = |size: i64| Value::list((0..size).map(Value::Int).collect());
        let doubles = |size: i64| Value::list((0..size).map(|i| Value::Double(i as f64)).collect());
        let hashed = cost_with_input(&env, "sets.contains(x, x)", ints(1000));
        let scanned = cost_with_input(&env, "sets.contains(x, x)", doubles(1000));
        // Two units per element hashed, on each side.
        assert_eq!(hashed, 1 + 2 * 2000);
        assert!(scanned >= 100_000, "{scanned}");
    }
}
