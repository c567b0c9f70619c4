//! Helpers for the extension libraries' unit tests: compile and run an expression in an
//! environment with one library enabled.

use crate::error::{CompileError, EvalError, EvalErrorKind, TypeErrorKind};
use crate::functions::Library;
use crate::{Env, NoVariables, Type, Value};

/// The standard environment plus `library`.
pub(super) fn env(library: Library) -> Env {
    Env::standard().with_library(library)
}

/// Compiles and evaluates `text`; panics when it does not compile.
pub(super) fn run(env: &Env, text: &str) -> Result<Value, EvalError> {
    env.compile(text)
        .unwrap_or_else(|error| panic!("{text} does not compile: {error}"))
        .evaluate(&NoVariables)
}

/// Compiles and evaluates `text`; panics unless it yields a value.
pub(super) fn value(env: &Env, text: &str) -> Value {
    run(env, text).unwrap_or_else(|error| panic!("{text} fails: {error}"))
}

/// Compiles and evaluates `text`; panics unless it fails, and returns the failure's kind.
pub(super) fn error(env: &Env, text: &str) -> EvalErrorKind {
    match run(env, text) {
        Ok(value) => panic!("{text} evaluates to {value}, expected an error"),
        Err(error) => error.kind().clone(),
    }
}

/// The checked type of `text`.
pub(super) fn output_type(env: &Env, text: &str) -> Type {
    let program = env
        .compile(text)
        .unwrap_or_else(|error| panic!("{text} does not compile: {error}"));
    program.output_type().cloned().unwrap_or(Type::Error)
}

/// The kind of the first type error `text` has; panics when it checks.
pub(super) fn check_error(env: &Env, text: &str) -> TypeErrorKind {
    match env.compile(text) {
        Err(CompileError::Check(error)) => error.issues[0].kind.clone(),
        Err(other) => panic!("{text}: expected a type error, got {other}"),
        Ok(_) => panic!("{text} checks, expected a type error"),
    }
}

/// Whether an evaluation error says that no overload accepts the arguments.
pub(super) fn is_no_such_overload(kind: &EvalErrorKind) -> bool {
    matches!(kind, EvalErrorKind::NoSuchOverload { .. })
}

/// Whether an evaluation error says that an argument has a value the function cannot use.
pub(super) fn is_invalid_argument(kind: &EvalErrorKind) -> bool {
    matches!(kind, EvalErrorKind::InvalidArgument { .. })
}

/// What evaluating `text` costs with `x` bound to `input` (declared `dyn`), with no limit.
pub(super) fn cost_with_input(env: &Env, text: &str, input: Value) -> u64 {
    let evaluation = env
        .clone()
        .with_variable("x", Type::Dyn)
        .compile(text)
        .unwrap_or_else(|error| panic!("{text} does not compile: {error}"))
        .evaluate_with_limit(&[("x", input)], None);
    if let Err(error) = evaluation.result {
        panic!("{text} fails: {error}");
    }
    evaluation.cost
}

/// A test of an evaluation error's kind.
pub(super) type ErrorCheck = fn(&EvalErrorKind) -> bool;

/// Asserts that each expression fails with an error its check accepts.
pub(super) fn assert_errors(env: &Env, cases: &[(&str, ErrorCheck)]) {
    for (text, expected) in cases {
        let kind = error(env, text);
        assert!(expected(&kind), "{text}: {kind:?}");
    }
}

// Helpers over the environment with every library this crate provides.
/// The standard environment plus every library this crate provides.
pub(crate) fn full_env() -> Env {
    crate::ext::ALL_LIBRARIES
        .iter()
        .filter_map(|name| crate::ext::library(name))
        .fold(Env::standard(), Env::with_library)
}

/// Compiles and evaluates, panicking with the expression on any failure.
pub(crate) fn eval(text: &str) -> Value {
    let program = full_env()
        .compile(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    program
        .evaluate(&NoVariables)
        .unwrap_or_else(|error| panic!("{text}: {error}"))
}

/// Compiles and evaluates an expression that must fail at run time.
pub(crate) fn eval_error(text: &str) -> EvalError {
    let program = full_env()
        .compile(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    match program.evaluate(&NoVariables) {
        Ok(value) => panic!("{text}: expected an error, got {value}"),
        Err(error) => error,
    }
}

/// The cost of evaluating an expression without a limit (it must evaluate).
pub(crate) fn cost(text: &str) -> u64 {
    let program = full_env()
        .compile(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    let evaluation = program.evaluate_with_limit(&NoVariables, None);
    assert!(evaluation.result.is_ok(), "{text}");
    evaluation.cost
}

/// Asserts that each `(expression, expected)` pair evaluates to the expected value.
pub(crate) fn assert_evaluations(cases: &[(&str, Value)]) {
    for (text, expected) in cases {
        assert_eq!(&eval(text), expected, "{text}");
    }
}

/// True when the expression is rejected at check time because no overload matches.
pub(crate) fn is_rejected_for_overloads(text: &str) -> bool {
    match full_env().compile(text) {
        Err(CompileError::Check(error)) => error
            .issues
            .iter()
            .any(|issue| matches!(issue.kind, TypeErrorKind::NoMatchingOverload { .. })),
        _ => false,
    }
}
