//! The Kubernetes lists library (`kubernetes.lists`): `isSorted`, `sum`, `min`, `max`,
//! `indexOf` and `lastIndexOf` on lists, as `k8s.io/apiserver/pkg/cel/library/lists.go`.
//!
//! The ordering functions have one overload per comparable element type and `sum` one per
//! summable type, as upstream, so `['a'].sum()` is rejected by the checker. The
//! implementations are shared and work on the element values, because a list of `dyn`
//! matches every overload and runs the first one.

use std::cmp::Ordering;

use crate::cost::{Budget, compare_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::stdlib::operators;
use crate::time::Duration;
use crate::types::Type;
use crate::value::Value;

/// The element types `isSorted`, `min` and `max` accept, named as in the overload ids.
fn comparable_types() -> [(&'static str, Type); 8] {
    [
        ("int", Type::Int),
        ("uint", Type::Uint),
        ("double", Type::Double),
        ("bool", Type::Bool),
        ("duration", Type::Duration),
        ("timestamp", Type::Timestamp),
        ("string", Type::String),
        ("bytes", Type::Bytes),
    ]
}

/// The element types `sum` accepts, with the sum of an empty list.
fn summable_types() -> [(&'static str, Type, Value); 4] {
    [
        ("int", Type::Int, Value::Int(0)),
        ("uint", Type::Uint, Value::Uint(0)),
        ("double", Type::Double, Value::Double(0.0)),
        (
            "duration",
            Type::Duration,
            Value::Duration(Duration::default()),
        ),
    ]
}

/// The lists library.
pub(crate) fn library() -> Library {
    let mut is_sorted = Function::new("isSorted");
    let mut min = Function::new("min");
    let mut max = Function::new("max");
    for (name, element) in comparable_types() {
        let list = [Type::list(element.clone())];
        is_sorted = is_sorted.overload(
            Overload::member(&format!("list_{name}_is_sorted_bool"), &list, Type::Bool)
                .with_impl(|args, budget| is_sorted_list(&args[0], budget)),
        );
        min = min.overload(
            Overload::member(&format!("list_{name}_min_{name}"), &list, element.clone())
                .with_impl(|args, budget| extreme(&args[0], Ordering::Less, budget)),
        );
        max = max.overload(
            Overload::member(&format!("list_{name}_max_{name}"), &list, element)
                .with_impl(|args, budget| extreme(&args[0], Ordering::Greater, budget)),
        );
    }
    let mut sum = Function::new("sum");
    for (name, element, zero) in summable_types() {
        sum = sum.overload(
            Overload::member(
                &format!("list_{name}_sum_{name}"),
                &[Type::list(element.clone())],
                element,
            )
            .with_impl(move |args, budget| sum_list(&args[0], &zero, budget)),
        );
    }
    let list_a = Type::list(Type::param("A"));
    let index_params = [list_a, Type::param("A")];
    Library::new(
        "kubernetes.lists",
        vec![
            is_sorted,
            sum,
            min,
            max,
            Function::new("indexOf").overload(
                Overload::member("list_a_index_of_int", &index_params, Type::Int)
                    .with_impl(|args, budget| index_of(&args[0], &args[1], false, budget)),
            ),
            Function::new("lastIndexOf").overload(
                Overload::member("list_a_last_index_of_int", &index_params, Type::Int)
                    .with_impl(|args, budget| index_of(&args[0], &args[1], true, budget)),
            ),
        ],
    )
}

/// The list's elements, charging one traversal.
fn elements<'a>(function: &str, list: &'a Value, budget: &mut Budget) -> EvalResult<&'a [Value]> {
    match list {
        Value::List(items) => {
            budget.charge(compare_cost(items.len()))?;
            Ok(items)
        }
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

/// `list.isSorted()`: no element is greater than the one after it. As upstream, a pair that
/// cannot be ordered (NaN, or mixed kinds in a `dyn` list) does not make the list unsorted.
fn is_sorted_list(list: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let items = elements("isSorted", list, budget)?;
    if let Some(item) = items.iter().find(|item| !item.is_orderable()) {
        return Err(EvalError::no_such_overload("isSorted", &[item]));
    }
    for pair in items.windows(2) {
        // Strings and bytes are charged for the bytes compared.
        if operators::compare(&pair[0], &pair[1], budget)? == Some(Ordering::Greater) {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// `list.min()` (`preferred` is `Less`) or `list.max()` (`Greater`): the first extreme
/// element; an error for an empty list. Pairs that cannot be ordered keep the current pick.
fn extreme(list: &Value, preferred: Ordering, budget: &mut Budget) -> EvalResult<Value> {
    let function = if preferred == Ordering::Less {
        "min"
    } else {
        "max"
    };
    let items = elements(function, list, budget)?;
    let mut best: Option<&Value> = None;
    for item in items {
        if !item.is_orderable() {
            return Err(EvalError::no_such_overload(function, &[item]));
        }
        best = match best {
            Some(current) if operators::compare(item, current, budget)? != Some(preferred) => {
                Some(current)
            }
            _ => Some(item),
        };
    }
    best.cloned().ok_or_else(|| {
        EvalError::invalid_argument(function, format!("{function} called on empty list"))
    })
}

/// `list.sum()`: the total, starting from the overload's zero. A `dyn` list runs the first
/// (int) overload, so when the elements are of another summable kind the total starts from
/// the first element instead of failing on `0 + 1.5`.
fn sum_list(list: &Value, zero: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let items = elements("sum", list, budget)?;
    let (mut total, rest) = match items.split_first() {
        Some((first, rest)) if std::mem::discriminant(first) != std::mem::discriminant(zero) => {
            (first.clone(), rest)
        }
        _ => (zero.clone(), items),
    };
    for item in rest {
        total = operators::add(&total, item, budget)?;
    }
    Ok(total)
}

/// `list.indexOf(x)` / `list.lastIndexOf(x)`: the position of the first (last) element equal
/// to `x`, or -1.
fn index_of(list: &Value, target: &Value, last: bool, budget: &mut Budget) -> EvalResult<Value> {
    let function = if last { "lastIndexOf" } else { "indexOf" };
    let items = elements(function, list, budget)?;
    let mut found = None;
    if last {
        for (index, item) in items.iter().enumerate().rev() {
            if operators::equals(item, target, budget)? {
                found = Some(index);
                break;
            }
        }
    } else {
        for (index, item) in items.iter().enumerate() {
            if operators::equals(item, target, budget)? {
                found = Some(index);
                break;
            }
        }
    }
    Ok(Value::Int(found.map_or(-1, |index| {
        i64::try_from(index).unwrap_or(i64::MAX)
    })))
}

#[cfg(test)]
mod tests {
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval_error, is_rejected_for_overloads};
    use crate::{Duration, Value};

    #[test]
    fn is_sorted_compares_neighbours_of_every_comparable_type() {
        assert_evaluations(&[
            ("[1, 2, 3].isSorted()", Value::Bool(true)),
            ("['a', 'b', 'b', 'c'].isSorted()", Value::Bool(true)),
            ("[2.0, 1.0].isSorted()", Value::Bool(false)),
            ("[1].isSorted()", Value::Bool(true)),
            ("[].isSorted()", Value::Bool(true)),
            ("[false, true].isSorted()", Value::Bool(true)),
            ("[b'b', b'a'].isSorted()", Value::Bool(false)),
            ("[1u, 0u].isSorted()", Value::Bool(false)),
            (
                "[duration('1s'), duration('1m')].isSorted()",
                Value::Bool(true),
            ),
            (
                "[timestamp('2024-01-02T00:00:00Z'), timestamp('2024-01-01T00:00:00Z')].isSorted()",
                Value::Bool(false),
            ),
        ]);
    }

    #[test]
    fn sum_adds_numbers_and_durations_with_a_zero_for_empty_lists() {
        assert_evaluations(&[
            ("[1, 3].sum()", Value::Int(4)),
            ("[1.0, 3.0].sum()", Value::Double(4.0)),
            ("[1u, 3u].sum()", Value::Uint(4)),
            (
                "[duration('1m'), duration('1s')].sum() == duration('61s')",
                Value::Bool(true),
            ),
            ("[].sum()", Value::Int(0)),
            ("dyn([1.5, 2.5]).sum()", Value::Double(4.0)),
        ]);
        let env = crate::ext::testing::full_env()
            .with_variable("durations", crate::Type::list(crate::Type::Duration));
        let program = env.compile("durations.sum()").expect("compiles");
        let result = program
            .evaluate(&[("durations", Value::list(Vec::new()))])
            .expect("evaluates");
        assert_eq!(result, Value::Duration(Duration::default()));
    }

    #[test]
    fn sum_overflow_is_an_error() {
        let error = eval_error("[9223372036854775807, 1].sum()");
        assert!(matches!(error.kind(), EvalErrorKind::Overflow(_)));
    }

    #[test]
    fn min_and_max_pick_extremes_and_fail_on_empty_lists() {
        assert_evaluations(&[
            ("[1, 3].min()", Value::Int(1)),
            ("[1, 3].max()", Value::Int(3)),
            ("[1].min()", Value::Int(1)),
            ("['b', 'a', 'c'].max()", Value::string("c")),
            ("[2.5, -1.0].min()", Value::Double(-1.0)),
            ("([0] + []).min()", Value::Int(0)),
        ]);
        for text in ["[].min()", "[].max()"] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn index_of_finds_first_and_last_positions() {
        assert_evaluations(&[
            ("[1, 2, 2, 3].indexOf(2)", Value::Int(1)),
            ("[1, 2, 2, 3].lastIndexOf(2)", Value::Int(2)),
            ("['a', 'b', 'b', 'c'].lastIndexOf('b')", Value::Int(2)),
            ("[1.0].indexOf(1.1)", Value::Int(-1)),
            ("[].indexOf('string')", Value::Int(-1)),
            ("[[1], [2]].indexOf([2])", Value::Int(1)),
            ("dyn([1, 2u, 3.0]).indexOf(2)", Value::Int(1)),
        ]);
    }

    #[test]
    fn wrong_element_types_are_rejected_at_check_time() {
        for text in [
            "['a'].sum()",
            "[[1]].min()",
            "[{'a': 1}].isSorted()",
            "1.isSorted()",
            "[1].indexOf('a')",
        ] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }

    #[test]
    fn cost_grows_with_the_length_of_the_list() {
        let env = crate::ext::testing::full_env()
            .with_variable("numbers", crate::Type::list(crate::Type::Int));
        let cost = |length: i64| {
            let numbers = Value::list((0..length).map(Value::Int).collect());
            let evaluation = env
                .compile("numbers.sum() + numbers.max() + numbers.indexOf(-1)")
                .expect("compiles")
                .evaluate_with_limit(&[("numbers", numbers)], None);
            assert!(evaluation.result.is_ok());
            evaluation.cost
        };
        assert!(cost(10_000) > cost(10) + 2_000);
    }

    #[test]
    fn unorderable_elements_of_dyn_lists_are_runtime_errors() {
        let error = eval_error("dyn([[1], [2]]).max()");
        assert!(matches!(error.kind(), EvalErrorKind::NoSuchOverload { .. }));
    }
}
