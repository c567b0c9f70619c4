//! String functions of the standard library: `contains`, `startsWith`, `endsWith`, `matches`.

use std::sync::Arc;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Implementation, Overload};
use crate::pattern::Pattern;
use crate::types::Type;
use crate::value::Value;

fn strings<'a>(function: &str, args: &'a [Value]) -> EvalResult<(&'a str, &'a str)> {
    match args {
        [Value::String(a), Value::String(b)] => Ok((a, b)),
        _ => Err(EvalError::no_such_overload(
            function,
            &args.iter().collect::<Vec<_>>(),
        )),
    }
}

/// `text.matches(pattern)`: whether the RE2 pattern matches anywhere in the text, compiling
/// the pattern (and charging for it) on every call.
fn matches(args: &[Value], budget: &mut Budget) -> EvalResult<Value> {
    let (text, pattern) = strings("matches", args)?;
    let pattern = Pattern::compile_charged("matches", pattern, budget)?;
    search(text, &pattern, budget)
}

fn search(text: &str, pattern: &Pattern, budget: &mut Budget) -> EvalResult<Value> {
    pattern.charge_search(text, budget)?;
    Ok(Value::Bool(pattern.regex().is_match(text)))
}

/// `matches` with a constant pattern: compiled once, here, for every evaluation.
fn prepare_matches(constants: &[Option<&Value>]) -> Option<Implementation> {
    let Some(Some(Value::String(pattern))) = constants.get(1) else {
        return None;
    };
    let pattern = Pattern::compile("matches", pattern).ok()?;
    Some(Arc::new(move |args: &[Value], budget: &mut Budget| {
        let (text, _) = strings("matches", args)?;
        search(text, &pattern, budget)
    }))
}

pub(crate) fn functions() -> Vec<Function> {
    let two_strings = [Type::String, Type::String];
    let charged = |f: fn(&str, &str) -> bool, name: &'static str| {
        move |args: &[Value], budget: &mut Budget| {
            let (a, b) = strings(name, args)?;
            budget.charge(traversal_cost(a.len()))?;
            Ok(Value::Bool(f(a, b)))
        }
    };
    vec![
        Function::new("contains").overload(
            Overload::member("contains_string", &two_strings, Type::Bool)
                .with_impl(charged(|a, b| a.contains(b), "contains")),
        ),
        Function::new("startsWith").overload(
            Overload::member("starts_with_string", &two_strings, Type::Bool)
                .with_impl(charged(|a, b| a.starts_with(b), "startsWith")),
        ),
        Function::new("endsWith").overload(
            Overload::member("ends_with_string", &two_strings, Type::Bool)
                .with_impl(charged(|a, b| a.ends_with(b), "endsWith")),
        ),
        Function::new("matches")
            .overload(
                Overload::global("matches", &two_strings, Type::Bool)
                    .with_impl(matches)
                    .with_preparation(prepare_matches),
            )
            .overload(
                Overload::member("matches_string", &two_strings, Type::Bool)
                    .with_impl(matches)
                    .with_preparation(prepare_matches),
            ),
    ]
}

#[cfg(test)]
mod tests {
    use crate::cost::{DEFAULT_COST_LIMIT, traversal_cost};
    use crate::pattern::{compile_cost, size_of};
    use crate::{Env, EvalErrorKind, NoVariables, Type, Value};

    fn cost(env: &Env, text: &str) -> crate::Evaluation {
        env.compile(text)
            .expect("compiles")
            .evaluate_with_limit(&NoVariables, Some(DEFAULT_COST_LIMIT))
    }

    #[test]
    fn a_new_pattern_per_iteration_runs_out_of_budget_after_few_compiles() {
        // Issue #20: this compiled 80,000 patterns of about 10,000 states each, charged as
        // 16-byte strings, and ran 39 s before the cost error.
        let env = Env::kro();
        let text = "lists.range(80000).all(i, !('b'.matches('(a{0,100}){0,50}' + string(i))))";
        let evaluation = cost(&env, text);
        assert!(matches!(
            evaluation.result.as_ref().map_err(|e| e.kind()),
            Err(EvalErrorKind::CostLimitExceeded {
                limit: DEFAULT_COST_LIMIT
            })
        ));
        // Each compile is charged at least the pattern's states: the budget allows only
        // about a hundred of them.
        let size = size_of("matches", "(a{0,100}){0,50}0").expect("valid");
        assert!(compile_cost(size) >= 10_000, "{size}");
        let at_thirty_thousand = cost(
            &env,
            "lists.range(30000).all(i, !('b'.matches('(a{0,100}){0,50}' + string(i))))",
        );
        assert!(
            at_thirty_thousand.result.is_err(),
            "30,000 compiles no longer fit"
        );
    }

    #[test]
    fn a_constant_pattern_is_compiled_once_and_charged_only_for_searching() {
        let env = Env::kro();
        let pattern = "(a{0,100}){0,50}";
        let size = size_of("matches", pattern).expect("valid");
        let once = cost(&env, &format!("'b'.matches('{pattern}')"));
        // The call and a search of one byte: no compile.
        assert_eq!(once.cost, 1 + size.div_ceil(4));
        assert_eq!(once.result, Ok(Value::Bool(true)));
        let looped = |count: u64| {
            let text = format!("lists.range({count}).all(i, 'b'.matches('{pattern}'))");
            let evaluation = cost(&env, &text);
            assert_eq!(evaluation.result, Ok(Value::Bool(true)));
            evaluation.cost
        };
        // Each further iteration pays for its search and a few units of looping only.
        let per_iteration = (looped(20) - looped(10)) / 10;
        let search = size.div_ceil(4);
        assert!(
            (search..search + 10).contains(&per_iteration),
            "{per_iteration} vs {search}"
        );
        assert!(per_iteration < compile_cost(size));
    }

    #[test]
    fn matching_is_charged_like_cel_go_with_the_compiled_size() {
        let env = Env::kro().with_variable("p", Type::String);
        let program = env.compile("'abcdefghij'.matches(p)").expect("compiles");
        let pattern = "[a-z]+";
        let evaluation = program.evaluate_with_limit(&[("p", Value::string(pattern))], None);
        assert_eq!(evaluation.result, Ok(Value::Bool(true)));
        // The call, parsing, compiling, then ceil(11 / 10) * ceil(6 / 4).
        let size = size_of("matches", pattern).expect("valid");
        let expected = 1 + traversal_cost(pattern.len()) + compile_cost(size) + 2 * 2;
        assert_eq!(evaluation.cost, expected);
    }

    #[test]
    fn too_large_and_malformed_patterns_are_errors_with_their_kind() {
        let env = Env::kro().with_variable("p", Type::String);
        let program = env.compile("'b'.matches(p)").expect("compiles");
        for (pattern, too_large) in [("((a{0,100}){0,100}){0,100}", true), ("(", false)] {
            let error = program
                .evaluate(&[("p", Value::string(pattern))])
                .expect_err("not a usable pattern");
            assert_eq!(
                matches!(error.kind(), EvalErrorKind::PatternTooLarge { .. }),
                too_large,
                "{pattern}"
            );
        }
        // A constant one too: the error is raised when the call is evaluated.
        let error = Env::kro()
            .compile("'b'.matches('((a{0,100}){0,100}){0,100}')")
            .expect("compiles")
            .evaluate(&NoVariables)
            .expect_err("too large");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::PatternTooLarge { .. }
        ));
    }
}
