//! String functions of the standard library: `contains`, `startsWith`, `endsWith`, `matches`.

use std::sync::Arc;

use regex::Regex;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Overload};
use crate::types::Type;
use crate::value::Value;

/// The largest compiled regular expression accepted, in bytes of program.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

fn strings<'a>(function: &str, args: &'a [Value]) -> EvalResult<(&'a str, &'a str)> {
    match args {
        [Value::String(a), Value::String(b)] => Ok((a, b)),
        _ => Err(EvalError::no_such_overload(
            function,
            &args.iter().collect::<Vec<_>>(),
        )),
    }
}

/// Compiles a pattern with RE2 syntax and bounded size.
///
/// # Errors
/// `InvalidArgument` when the pattern is malformed or too large.
pub(crate) fn compile_regex(function: &str, pattern: &str) -> EvalResult<Arc<Regex>> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Arc::new)
        .map_err(|error| {
            EvalError::invalid_argument(function, format!("invalid regular expression: {error}"))
        })
}

/// `text.matches(pattern)`: whether the RE2 pattern matches anywhere in the text.
pub(crate) fn matches(text: &str, pattern: &str, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(pattern.len()) + traversal_cost(text.len()))?;
    let regex = compile_regex("matches", pattern)?;
    Ok(Value::Bool(regex.is_match(text)))
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
                Overload::global("matches", &two_strings, Type::Bool).with_impl(|args, budget| {
                    let (text, pattern) = strings("matches", args)?;
                    matches(text, pattern, budget)
                }),
            )
            .overload(
                Overload::member("matches_string", &two_strings, Type::Bool).with_impl(
                    |args, budget| {
                        let (text, pattern) = strings("matches", args)?;
                        matches(text, pattern, budget)
                    },
                ),
            ),
    ]
}
