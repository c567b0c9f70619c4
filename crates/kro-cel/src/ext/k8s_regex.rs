//! The Kubernetes regex library (`kubernetes.regex`): `text.find(pattern)` and
//! `text.findAll(pattern[, limit])`, as `k8s.io/apiserver/pkg/cel/library/regex.go`.
//!
//! Patterns use RE2 syntax with the standard library's size limit. Matches are leftmost-first
//! and non-overlapping, and an empty match right after a previous match is skipped, as in
//! Go's `FindAllString`.

use crate::cost::Budget;
use crate::error::EvalResult;
use crate::ext::{int_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::stdlib::strings::compile_regex;
use crate::types::Type;
use crate::value::Value;

/// The regex library.
pub(crate) fn library() -> Library {
    let strings = [Type::String, Type::String];
    let list = Type::list(Type::String);
    Library::new(
        "kubernetes.regex",
        vec![
            Function::new("find").overload(
                Overload::member("string_find_string", &strings, Type::String)
                    .with_impl(|args, budget| find(&args[0], &args[1], budget)),
            ),
            Function::new("findAll")
                .overload(
                    Overload::member("string_find_all_string", &strings, list.clone())
                        .with_impl(|args, budget| find_all(&args[0], &args[1], -1, budget)),
                )
                .overload(
                    Overload::member(
                        "string_find_all_string_int",
                        &[Type::String, Type::String, Type::Int],
                        list,
                    )
                    .with_impl(|args, budget| {
                        let limit = int_arg("findAll", &args[2])?;
                        find_all(&args[0], &args[1], limit, budget)
                    }),
                ),
        ],
    )
}

/// Charges Kubernetes' estimate for a regex search: a tenth of a unit per byte of text times
/// a quarter unit per byte of pattern, since the work grows with both.
fn charge_search(text: &str, pattern: &str, budget: &mut Budget) -> EvalResult<()> {
    let text_cost = (text.len() as u64 + 1).div_ceil(10);
    let pattern_cost = (pattern.len() as u64).div_ceil(4);
    budget.charge(text_cost.saturating_mul(pattern_cost.max(1)))
}

/// `text.find(pattern)`: the first match, or `""`.
fn find(text: &Value, pattern: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let text = string_arg("find", text)?;
    let pattern = string_arg("find", pattern)?;
    charge_search(text, pattern, budget)?;
    let regex = compile_regex("find", pattern)?;
    Ok(Value::string(regex.find(text).map_or("", |m| m.as_str())))
}

/// `text.findAll(pattern, limit)`: every match (at most `limit` of them when `limit` is not
/// negative).
fn find_all(text: &Value, pattern: &Value, limit: i64, budget: &mut Budget) -> EvalResult<Value> {
    let text = string_arg("findAll", text)?;
    let pattern = string_arg("findAll", pattern)?;
    charge_search(text, pattern, budget)?;
    let regex = compile_regex("findAll", pattern)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut matches = Vec::new();
    for found in regex.find_iter(text).take(limit) {
        // Each result is a new string: charge its allocation.
        budget.charge(1 + crate::cost::traversal_cost(found.len()))?;
        matches.push(Value::string(found.as_str()));
    }
    Ok(Value::list(matches))
}

#[cfg(test)]
mod tests {
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval_error, is_rejected_for_overloads};
    use crate::{Budget, Value};

    fn strings(items: &[&str]) -> Value {
        Value::list(items.iter().map(|item| Value::string(item)).collect())
    }

    #[test]
    fn find_returns_the_first_match_or_an_empty_string() {
        assert_evaluations(&[
            ("'abc 123'.find('[0-9]+')", Value::string("123")),
            ("'abc 123'.find('xyz')", Value::string("")),
            ("'abc 123'.find('[0-9]*')", Value::string("")),
        ]);
    }

    #[test]
    fn find_all_returns_matches_up_to_the_limit() {
        assert_evaluations(&[
            ("'123 abc 456'.findAll('[0-9]+')", strings(&["123", "456"])),
            ("'123 abc 456'.findAll('[0-9]+', 1)", strings(&["123"])),
            ("'123 abc 456'.findAll('[0-9]+', 0)", strings(&[])),
            (
                "'123 abc 456'.findAll('[0-9]+', -1)",
                strings(&["123", "456"]),
            ),
            ("'123 abc 456'.findAll('xyz')", strings(&[])),
            // Go skips an empty match that abuts the previous match.
            (
                "'123 abc 456'.findAll('[0-9]*')",
                strings(&["123", "", "", "", "", "456"]),
            ),
        ]);
    }

    #[test]
    fn invalid_patterns_are_runtime_errors() {
        for text in ["'abc'.find('[')", "'abc'.findAll('(')"] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn wrong_argument_types_are_rejected_at_check_time() {
        for text in ["1.find('a')", "'a'.find(1)", "'a'.findAll('a', 'b')"] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }

    #[test]
    fn search_cost_grows_with_text_and_pattern() {
        let mut short = Budget::new(None);
        super::charge_search("abc", "a", &mut short).expect("unlimited");
        let mut long = Budget::new(None);
        super::charge_search(&"a".repeat(1000), &"[a-z]".repeat(20), &mut long).expect("unlimited");
        assert_eq!(short.used(), 1);
        assert_eq!(long.used(), 101 * 25);
    }
}
