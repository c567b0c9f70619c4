//! kro's omit library (upstream `pkg/cel/library/omit.go`): `omit()`, a sentinel value that
//! tells the template resolver to drop the field (or list element) it would have filled.
//!
//! `omit() -> dyn` returns [`Value::Opaque`] holding the one value of the opaque type
//! [`OMIT_TYPE_NAME`] (`kro.omit`, which `type(omit())` reports); [`is_omit`] recognises it.
//! Upstream gates the function behind the `CELOmitFunction` feature flag; kro-cel always
//! declares it, and the graph builder decides where it may be used.
//!
//! The sentinel supports nothing but being returned: arithmetic, string concatenation and
//! conversions fail with "no such overload". As upstream, `omit() == x` is an error unless `x`
//! is `null`, while `x == omit()` and `omit() != x` are `false` and `true`; nested in lists
//! and maps it equals nothing.

use std::any::Any;
use std::sync::Arc;

use crate::error::EvalError;
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The type name of the omit sentinel, as `type(omit())` reports it.
pub const OMIT_TYPE_NAME: &str = "kro.omit";

/// The omit sentinel's one value.
#[derive(Debug)]
struct Omit;

impl OpaqueValue for Omit {
    fn type_name(&self) -> &str {
        OMIT_TYPE_NAME
    }

    fn equals(&self, _other: &dyn OpaqueValue) -> bool {
        false
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The omit sentinel, the value `omit()` returns.
pub fn omit_value() -> Value {
    Value::Opaque(Arc::new(Omit))
}

/// Whether `value` is the omit sentinel: the resolver drops a field whose value it is.
pub fn is_omit(value: &Value) -> bool {
    matches!(value, Value::Opaque(opaque) if opaque.as_any().is::<Omit>())
}

/// The error for `omit() == x`: the sentinel cannot be compared.
pub(crate) fn omit_not_comparable() -> EvalError {
    EvalError::invalid_argument(
        "_==_",
        "omit() is a field-removal sentinel and cannot be compared",
    )
}

/// The kro.omit library.
pub(crate) fn library() -> Library {
    Library::new(
        "kro.omit",
        vec![Function::new("omit").overload(
            Overload::global("omit_void", &[], Type::Dyn).with_impl(|_, _| Ok(omit_value())),
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, is_invalid_argument, is_no_such_overload};
    use super::{is_omit, omit_value};
    use crate::{Env, Type, Value};

    fn env() -> Env {
        testing::env(super::library()).with_variable("x", Type::String)
    }

    fn run(text: &str, x: &str) -> Result<Value, crate::EvalErrorKind> {
        env()
            .compile(text)
            .unwrap_or_else(|error| panic!("{text} does not compile: {error}"))
            .evaluate(&[("x", Value::string(x))])
            .map_err(|error| error.kind().clone())
    }

    #[test]
    fn omit_returns_the_sentinel_only_where_chosen() {
        let cases = [
            (r#"x == "" ? omit() : x"#, "", None),
            (r#"x == "" ? omit() : x"#, "hello", Some("hello")),
            (r#"x != "" ? x : omit()"#, "hello", Some("hello")),
            (r#"x != "" ? x : omit()"#, "", None),
        ];
        for (text, x, expected) in cases {
            let result = run(text, x).unwrap_or_else(|error| panic!("{text}: {error:?}"));
            match expected {
                None => assert!(is_omit(&result), "{text} with {x:?}: {result}"),
                Some(text) => assert_eq!(result, Value::string(text)),
            }
        }
        assert!(!is_omit(&Value::Null));
        assert!(is_omit(&omit_value()));
    }

    #[test]
    fn the_sentinel_supports_no_operations() {
        let env = env();
        testing::assert_errors(
            &env,
            &[
                ("omit() + 1", is_no_such_overload),
                (r#""prefix-" + omit()"#, is_no_such_overload),
                (r#""prefix-" + omit() + "-suffix""#, is_no_such_overload),
                ("omit() == omit()", is_invalid_argument),
                ("omit() == 1", is_invalid_argument),
            ],
        );
    }

    #[test]
    fn comparisons_with_the_sentinel_follow_upstream() {
        let env = env();
        let cases = [
            ("omit() == null", false),
            ("null == omit()", false),
            ("1 == omit()", false),
            ("omit() != 1", true),
            ("omit() != omit()", true),
            ("[omit()] == [omit()]", false),
            ("omit() in [omit()]", false),
        ];
        for (text, expected) in cases {
            assert_eq!(testing::value(&env, text), Value::Bool(expected), "{text}");
        }
    }

    #[test]
    fn the_sentinel_has_its_own_type() {
        let env = env();
        assert_eq!(testing::output_type(&env, "omit()"), Type::Dyn);
        assert_eq!(
            testing::value(&env, "type(omit())"),
            Value::Type(std::sync::Arc::from("kro.omit"))
        );
    }
}
