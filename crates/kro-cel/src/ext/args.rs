//! Reading the typed arguments of extension functions: each helper returns the argument as
//! the type its overload declares, or the "no such overload" error a dynamic call earns.

use crate::error::{EvalError, EvalResult};
use crate::value::{OpaqueValue, Value};

/// The library value of type `T` inside an opaque value, or a "no such overload" error
/// naming `function` (the checker rules this out; it guards dynamic calls).
pub(crate) fn opaque_arg<'a, T: OpaqueValue>(
    function: &str,
    value: &'a Value,
) -> EvalResult<&'a T> {
    match value {
        Value::Opaque(opaque) => opaque
            .as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| EvalError::no_such_overload(function, &[value])),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

/// The string argument, or a "no such overload" error naming `function`.
pub(crate) fn string_arg<'a>(function: &str, value: &'a Value) -> EvalResult<&'a str> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

/// The int argument, or a "no such overload" error naming `function`.
pub(crate) fn int_arg(function: &str, value: &Value) -> EvalResult<i64> {
    match value {
        Value::Int(number) => Ok(*number),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}
