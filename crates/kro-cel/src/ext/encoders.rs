//! The encoders extension: `base64.encode(bytes) -> string` and `base64.decode(string) ->
//! bytes` (standard alphabet; decoding also accepts unpadded input).

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

use crate::cost::traversal_cost;
use crate::error::EvalError;
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

/// The encoders library.
pub(crate) fn library() -> Library {
    Library {
        name: "encoders",
        functions: vec![
            Function::new("base64.encode").overload(
                Overload::global("base64_encode_bytes", &[Type::Bytes], Type::String).with_impl(
                    |args, budget| match &args[0] {
                        Value::Bytes(bytes) => {
                            budget.charge(traversal_cost(bytes.len()))?;
                            Ok(Value::from(STANDARD.encode(bytes)))
                        }
                        other => Err(EvalError::no_such_overload("base64.encode", &[other])),
                    },
                ),
            ),
            Function::new("base64.decode").overload(
                Overload::global("base64_decode_string", &[Type::String], Type::Bytes).with_impl(
                    |args, budget| match &args[0] {
                        Value::String(text) => {
                            budget.charge(traversal_cost(text.len()))?;
                            let decoded = STANDARD
                                .decode(text.as_bytes())
                                .or_else(|_| STANDARD_NO_PAD.decode(text.as_bytes()))
                                .map_err(|error| {
                                    EvalError::invalid_argument("base64.decode", error.to_string())
                                })?;
                            Ok(Value::Bytes(Arc::from(decoded)))
                        }
                        other => Err(EvalError::no_such_overload("base64.decode", &[other])),
                    },
                ),
            ),
        ],
        object_types: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Env, NoVariables, Value};

    fn eval(text: &str) -> Value {
        let env = Env::standard().with_library(super::library());
        env.compile(text)
            .expect("compiles")
            .evaluate(&NoVariables)
            .expect("evaluates")
    }

    #[test]
    fn base64_round_trips_and_accepts_missing_padding() {
        assert_eq!(eval("base64.encode(b'hello')"), Value::string("aGVsbG8="));
        assert_eq!(
            eval("base64.decode('aGVsbG8') == b'hello'"),
            Value::Bool(true)
        );
    }

    #[test]
    fn invalid_base64_is_an_error() {
        let env = Env::standard().with_library(super::library());
        let program = env.compile("base64.decode('!!')").expect("compiles");
        assert!(program.evaluate(&NoVariables).is_err());
    }
}
