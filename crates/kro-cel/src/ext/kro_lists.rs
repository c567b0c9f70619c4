//! kro's list-editing library (upstream `pkg/cel/library/lists.go`): copies of a list with one
//! element replaced, inserted or removed. The input list is never changed.
//!
//! - `lists.setAtIndex(list(T), int, T) -> list(T)`: the element at the index replaced; the
//!   index must be in `[0, size)`.
//! - `lists.insertAtIndex(list(T), int, T) -> list(T)`: the value inserted before the element
//!   at the index; the index must be in `[0, size]` (`size` appends).
//! - `lists.removeAtIndex(list(T), int) -> list(T)`: the element at the index removed; the
//!   index must be in `[0, size)`.
//!
//! An index out of range is an invalid-argument error, as upstream's: it is not
//! [`EvalErrorKind::IndexOutOfBounds`](crate::EvalErrorKind::IndexOutOfBounds), so kro does not
//! mistake it for data that has not arrived yet. These functions share the `lists.` namespace
//! with cel-go's `lists.range` (the `lists` library) but are a separate library.
//!
//! - `range(end)` and `range(start, end) -> list(int)`: `[start, start + 1, ..., end - 1]`
//!   (empty when `end <= start`), the form KREP-2's collection examples use in `forEach`
//!   (`${range(1, 4)}`). Not in upstream kro, which has no `range`.
//!
//! Costs: one unit per ten elements copied; `range` one unit per element created.

use crate::cost::copy_cost;
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

const SET_AT_INDEX: &str = "lists.setAtIndex";
const INSERT_AT_INDEX: &str = "lists.insertAtIndex";
const REMOVE_AT_INDEX: &str = "lists.removeAtIndex";

fn list_t() -> Type {
    Type::list(Type::param("T"))
}

/// How a function edits the list at the index.
#[derive(Debug, Clone, Copy)]
enum Edit {
    Set,
    Insert,
    Remove,
}

impl Edit {
    fn name(self) -> &'static str {
        match self {
            Edit::Set => SET_AT_INDEX,
            Edit::Insert => INSERT_AT_INDEX,
            Edit::Remove => REMOVE_AT_INDEX,
        }
    }
}

/// The kro.lists library.
pub(crate) fn library() -> Library {
    let with_value = [list_t(), Type::Int, Type::param("T")];
    Library::new(
        "kro.lists",
        vec![
            Function::new(SET_AT_INDEX).overload(
                Overload::global("lists.setAtIndex_list_int_T", &with_value, list_t())
                    .with_impl(|args, budget| edit(Edit::Set, args, budget)),
            ),
            Function::new(INSERT_AT_INDEX).overload(
                Overload::global("lists.insertAtIndex_list_int_T", &with_value, list_t())
                    .with_impl(|args, budget| edit(Edit::Insert, args, budget)),
            ),
            Function::new(REMOVE_AT_INDEX).overload(
                Overload::global(
                    "lists.removeAtIndex_list_int",
                    &[list_t(), Type::Int],
                    list_t(),
                )
                .with_impl(|args, budget| edit(Edit::Remove, args, budget)),
            ),
            Function::new("range")
                .overload(
                    Overload::global("range_int", &[Type::Int], Type::list(Type::Int)).with_impl(
                        |args, budget| match args {
                            [Value::Int(end)] => range(0, *end, budget),
                            _ => Err(EvalError::no_such_overload(
                                "range",
                                &args.iter().collect::<Vec<_>>(),
                            )),
                        },
                    ),
                )
                .overload(
                    Overload::global(
                        "range_int_int",
                        &[Type::Int, Type::Int],
                        Type::list(Type::Int),
                    )
                    .with_impl(|args, budget| match args {
                        [Value::Int(start), Value::Int(end)] => range(*start, *end, budget),
                        _ => Err(EvalError::no_such_overload(
                            "range",
                            &args.iter().collect::<Vec<_>>(),
                        )),
                    }),
                ),
        ],
    )
}

/// `[start, end)` as a list, charging one unit per element before building it.
fn range(start: i64, end: i64, budget: &mut crate::cost::Budget) -> EvalResult<Value> {
    let count = end.saturating_sub(start).max(0);
    let count = u64::try_from(count).unwrap_or(0);
    budget.charge(count)?;
    let size = usize::try_from(count).map_err(|_| {
        EvalError::invalid_argument("range", format!("{count} elements is too many"))
    })?;
    let mut values = Vec::new();
    values.try_reserve_exact(size).map_err(|_| {
        EvalError::invalid_argument("range", format!("{count} elements is too many"))
    })?;
    values.extend((start..end).map(Value::Int));
    Ok(Value::list(values))
}

/// Copies the list with the edit applied, after checking the index.
fn edit(which: Edit, args: &[Value], budget: &mut crate::cost::Budget) -> EvalResult<Value> {
    let (items, index, value) = match (which, args) {
        (Edit::Set | Edit::Insert, [Value::List(items), Value::Int(index), value]) => {
            (items, *index, Some(value))
        }
        (Edit::Remove, [Value::List(items), Value::Int(index)]) => (items, *index, None),
        _ => {
            return Err(EvalError::no_such_overload(
                which.name(),
                &args.iter().collect::<Vec<_>>(),
            ));
        }
    };
    let size = items.len();
    let (valid, closing) = match which {
        Edit::Insert => (usize::try_from(index).is_ok_and(|at| at <= size), ']'),
        Edit::Set | Edit::Remove => (usize::try_from(index).is_ok_and(|at| at < size), ')'),
    };
    let position = match usize::try_from(index) {
        Ok(position) if valid => position,
        _ => {
            return Err(EvalError::invalid_argument(
                which.name(),
                format!("index {index} out of bounds [0, {size}{closing}"),
            ));
        }
    };
    budget.charge(copy_cost(size + 1))?;
    let mut edited = Vec::with_capacity(size + 1);
    edited.extend_from_slice(&items[..position]);
    match (which, value) {
        (Edit::Set, Some(value)) => {
            edited.push(value.clone());
            edited.extend_from_slice(&items[position + 1..]);
        }
        (Edit::Insert, Some(value)) => {
            edited.push(value.clone());
            edited.extend_from_slice(&items[position..]);
        }
        _ => edited.extend_from_slice(&items[position + 1..]),
    }
    Ok(Value::list(edited))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, is_invalid_argument};
    use crate::{Env, EvalErrorKind, Type, TypeErrorKind, Value};

    fn env() -> Env {
        testing::env(super::library())
    }

    #[test]
    fn edits_give_upstreams_lists() {
        let env = env();
        let cases = [
            ("lists.setAtIndex([1, 2, 3], 1, 99)", "[1, 99, 3]"),
            ("lists.setAtIndex([1, 2, 3], 0, 0)", "[0, 2, 3]"),
            ("lists.setAtIndex([1, 2, 3], 2, 7)", "[1, 2, 7]"),
            (
                r#"lists.setAtIndex(["a", "b", "c"], 1, "z")"#,
                r#"["a", "z", "c"]"#,
            ),
            ("lists.setAtIndex([42], 0, 0)", "[0]"),
            ("lists.setAtIndex([1, 'a'], 0, 'a')", "['a', 'a']"),
            ("lists.insertAtIndex([1, 2, 3], 1, 99)", "[1, 99, 2, 3]"),
            ("lists.insertAtIndex([1, 2, 3], 0, 99)", "[99, 1, 2, 3]"),
            ("lists.insertAtIndex([1, 2, 3], 3, 99)", "[1, 2, 3, 99]"),
            ("lists.insertAtIndex([], 0, 42)", "[42]"),
            (
                r#"lists.insertAtIndex(["a", "c"], 1, "b")"#,
                r#"["a", "b", "c"]"#,
            ),
            ("lists.removeAtIndex([1, 2, 3], 1)", "[1, 3]"),
            ("lists.removeAtIndex([1, 2, 3], 0)", "[2, 3]"),
            ("lists.removeAtIndex([1, 2, 3], 2)", "[1, 2]"),
            ("lists.removeAtIndex([42], 0)", "[]"),
            (
                "lists.removeAtIndex(lists.insertAtIndex([1, 2, 3], 1, 99), 1)",
                "[1, 2, 3]",
            ),
            (
                "lists.setAtIndex(lists.removeAtIndex([0, 1, 2, 3], 0), 0, 99)",
                "[99, 2, 3]",
            ),
        ];
        for (text, expected) in cases {
            let expected_value = testing::value(&env, expected);
            assert_eq!(testing::value(&env, text), expected_value, "{text}");
        }
    }

    #[test]
    fn indexes_out_of_range_are_invalid_arguments_with_upstreams_bounds() {
        let env = env();
        let cases = [
            (
                "lists.setAtIndex([1, 2], 5, 9)",
                "index 5 out of bounds [0, 2)",
            ),
            (
                "lists.setAtIndex([1, 2], -1, 9)",
                "index -1 out of bounds [0, 2)",
            ),
            (
                "lists.setAtIndex([1, 2], 2, 9)",
                "index 2 out of bounds [0, 2)",
            ),
            ("lists.setAtIndex([], 0, 1)", "index 0 out of bounds [0, 0)"),
            (
                "lists.insertAtIndex([1, 2], 3, 9)",
                "index 3 out of bounds [0, 2]",
            ),
            (
                "lists.insertAtIndex([1, 2], -1, 9)",
                "index -1 out of bounds [0, 2]",
            ),
            (
                "lists.insertAtIndex([], 1, 1)",
                "index 1 out of bounds [0, 0]",
            ),
            (
                "lists.removeAtIndex([1, 2], 2)",
                "index 2 out of bounds [0, 2)",
            ),
            ("lists.removeAtIndex([], 0)", "index 0 out of bounds [0, 0)"),
        ];
        for (text, reason) in cases {
            let kind = testing::error(&env, text);
            assert!(is_invalid_argument(&kind), "{text}: {kind:?}");
            assert!(
                matches!(&kind, EvalErrorKind::InvalidArgument { reason: r, .. } if r == reason),
                "{text}: {kind:?}"
            );
        }
    }

    #[test]
    fn results_keep_the_element_type() {
        let env = env();
        let cases = [
            ("lists.setAtIndex([1, 2, 3], 0, 9)", Type::list(Type::Int)),
            (
                r#"lists.insertAtIndex(["a"], 0, "z")"#,
                Type::list(Type::String),
            ),
            ("lists.removeAtIndex([1, 2, 3], 0)", Type::list(Type::Int)),
        ];
        for (text, expected) in cases {
            assert_eq!(testing::output_type(&env, text), expected, "{text}");
        }
    }

    #[test]
    fn mismatched_types_are_rejected_by_the_checker() {
        let env = env();
        for text in [
            "lists.setAtIndex([1, 2], 0, 'a')",
            "lists.insertAtIndex([1, 2], 0, 'a')",
            "lists.removeAtIndex([1, 2], 1u)",
            "lists.removeAtIndex('abc', 1)",
            "lists.setAtIndex([1], 0)",
        ] {
            assert!(
                matches!(
                    testing::check_error(&env, text),
                    TypeErrorKind::NoMatchingOverload { .. }
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn copying_costs_in_proportion_to_the_list() {
        let env = env();
        let short = testing::cost_with_input(
            &env,
            "lists.setAtIndex(x, 0, 1)",
            Value::list(vec![Value::Int(0)]),
        );
        let long = testing::cost_with_input(
            &env,
            "lists.setAtIndex(x, 0, 1)",
            Value::list(vec![Value::Int(0); 10_000]),
        );
        assert!(long >= short + 999, "{short} {long}");
    }
}

#[cfg(test)]
mod range_tests {
    use crate::ext::testing::full_env;
    use crate::{EvalErrorKind, NoVariables, Value};

    fn eval(text: &str) -> Result<Value, crate::EvalError> {
        full_env()
            .compile(text)
            .expect("compiles")
            .evaluate(&NoVariables)
    }

    #[test]
    fn range_counts_from_start_to_before_end() {
        let ints = |values: &[i64]| Value::list(values.iter().map(|v| Value::Int(*v)).collect());
        assert_eq!(eval("range(1, 4)").expect("range"), ints(&[1, 2, 3]));
        assert_eq!(eval("range(3)").expect("range"), ints(&[0, 1, 2]));
        assert_eq!(eval("range(5, 2)").expect("range"), ints(&[]));
        assert_eq!(
            eval("range(0, 10).filter(x, x % 2 == 0)").expect("range"),
            ints(&[0, 2, 4, 6, 8])
        );
    }

    #[test]
    fn a_huge_range_runs_out_of_budget_before_allocating() {
        let error = eval("range(0, 9223372036854775807)").expect_err("too large");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::CostLimitExceeded { .. }
        ));
    }
}
