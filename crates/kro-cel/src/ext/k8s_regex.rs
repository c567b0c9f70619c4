//! The Kubernetes regex library (`kubernetes.regex`): `text.find(pattern)` and
//! `text.findAll(pattern[, limit])`, as `k8s.io/apiserver/pkg/cel/library/regex.go`.
//!
//! Patterns use RE2 syntax with the standard library's size limit and cost (see
//! `crate::pattern`). Matches are leftmost-first
//! and non-overlapping, and an empty match right after a previous match is skipped, as in
//! Go's `FindAllString`.

use std::sync::Arc;

use crate::cost::Budget;
use crate::error::EvalResult;
use crate::ext::{int_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::pattern::Pattern;
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
                    .with_impl(|args, budget| {
                        let pattern = compile("find", &args[1], budget)?;
                        find(&args[0], &pattern, budget)
                    })
                    .with_preparation(|constants| {
                        let pattern = prepare("find", constants)?;
                        Some(Arc::new(move |args: &[Value], budget: &mut Budget| {
                            find(&args[0], &pattern, budget)
                        }))
                    }),
            ),
            Function::new("findAll")
                .overload(
                    Overload::member("string_find_all_string", &strings, list.clone())
                        .with_impl(|args, budget| {
                            let pattern = compile("findAll", &args[1], budget)?;
                            find_all(&args[0], &pattern, -1, budget)
                        })
                        .with_preparation(|constants| {
                            let pattern = prepare("findAll", constants)?;
                            Some(Arc::new(move |args: &[Value], budget: &mut Budget| {
                                find_all(&args[0], &pattern, -1, budget)
                            }))
                        }),
                )
                .overload(
                    Overload::member(
                        "string_find_all_string_int",
                        &[Type::String, Type::String, Type::Int],
                        list,
                    )
                    .with_impl(|args, budget| {
                        let limit = int_arg("findAll", &args[2])?;
                        let pattern = compile("findAll", &args[1], budget)?;
                        find_all(&args[0], &pattern, limit, budget)
                    })
                    .with_preparation(|constants| {
                        let pattern = prepare("findAll", constants)?;
                        Some(Arc::new(move |args: &[Value], budget: &mut Budget| {
                            let limit = int_arg("findAll", &args[2])?;
                            find_all(&args[0], &pattern, limit, budget)
                        }))
                    }),
                ),
        ],
    )
}

/// Compiles the pattern argument during an evaluation, charging for it.
fn compile(function: &str, pattern: &Value, budget: &mut Budget) -> EvalResult<Pattern> {
    Pattern::compile_charged(function, string_arg(function, pattern)?, budget)
}

/// The pattern compiled in advance when it is a constant (the second argument).
fn prepare(function: &str, constants: &[Option<&Value>]) -> Option<Pattern> {
    let Some(Some(Value::String(pattern))) = constants.get(1) else {
        return None;
    };
    Pattern::compile(function, pattern).ok()
}

/// `text.find(pattern)`: the first match, or `""`.
fn find(text: &Value, pattern: &Pattern, budget: &mut Budget) -> EvalResult<Value> {
    let text = string_arg("find", text)?;
    pattern.charge_search(text, budget)?;
    Ok(Value::string(
        pattern.regex().find(text).map_or("", |m| m.as_str()),
    ))
}

/// `text.findAll(pattern, limit)`: every match (at most `limit` of them when `limit` is not
/// negative).
fn find_all(text: &Value, pattern: &Pattern, limit: i64, budget: &mut Budget) -> EvalResult<Value> {
    let text = string_arg("findAll", text)?;
    pattern.charge_search(text, budget)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut matches = Vec::new();
    for found in pattern.regex().find_iter(text).take(limit) {
        // Each result is a new string: charge its allocation.
        budget.charge(1 + crate::cost::traversal_cost(found.len()))?;
        matches.push(Value::string(found.as_str()));
    }
    Ok(Value::list(matches))
}

#[cfg(test)]
mod tests {
    use crate::Value;
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval_error, is_rejected_for_overloads};

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
        let cost = |text: &str| {
            crate::Env::kro()
                .compile(text)
                .expect("compiles")
                .evaluate_with_limit(&crate::NoVariables, None)
                .cost
        };
        // Constant patterns: the call, then a search of (1 + 3) / 10 -> 1 times 1.
        assert_eq!(cost("'abc'.find('a')"), 2);
        let long = format!("'{}'.find('{}')", "a".repeat(1000), "[a-z]".repeat(20));
        assert_eq!(cost(&long), 1 + 101 * 25);
    }

    #[test]
    fn a_pattern_computed_per_call_pays_for_compiling_it() {
        let env = crate::Env::kro().with_variable("p", crate::Type::String);
        let program = env.compile("'b'.findAll(p)").expect("compiles");
        let pattern = "(a{0,100}){0,50}";
        let evaluation = program.evaluate_with_limit(&[("p", Value::string(pattern))], None);
        // Empty matches before and after the `b`.
        assert_eq!(evaluation.result, Ok(strings(&["", ""])));
        let size = crate::pattern::size_of("findAll", pattern).expect("valid");
        // The call, parsing, compiling every state, searching one byte, two results.
        let expected = 1
            + crate::cost::traversal_cost(pattern.len())
            + crate::pattern::compile_cost(size)
            + size.div_ceil(4)
            + 2;
        assert_eq!(evaluation.cost, expected);
    }
}
