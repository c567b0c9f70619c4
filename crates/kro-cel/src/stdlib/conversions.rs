//! Type conversions: `int()`, `uint()`, `double()`, `string()`, `bytes()`, `bool()`,
//! `timestamp()`, `duration()`, `dyn()` and `type()`.

use std::sync::Arc;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::functions::{Function, Overload};
use crate::time::{Duration, Timestamp};
use crate::types::Type;
use crate::value::{Value, format_double};

fn conversion_error(from: &Value, to: &str, reason: impl Into<String>) -> EvalError {
    EvalError::new(EvalErrorKind::Conversion {
        from: from.type_name().to_string(),
        to: to.to_string(),
        reason: reason.into(),
    })
}

fn range_error(to: &'static str) -> EvalError {
    EvalError::new(EvalErrorKind::OutOfRange(to))
}

/// `int(x)`
pub(crate) fn to_int(value: &Value) -> EvalResult<Value> {
    Ok(Value::Int(match value {
        Value::Int(v) => *v,
        Value::Uint(v) => i64::try_from(*v).map_err(|_| range_error("int"))?,
        Value::Double(v) => {
            if !(*v > -9.223_372_036_854_776e18 && *v < 9.223_372_036_854_776e18) {
                return Err(range_error("int"));
            }
            *v as i64
        }
        Value::String(s) => s
            .parse::<i64>()
            .map_err(|error| conversion_error(value, "int", error.to_string()))?,
        Value::Timestamp(t) => t.seconds(),
        _ => return Err(EvalError::no_such_overload("int", &[value])),
    }))
}

/// `uint(x)`
pub(crate) fn to_uint(value: &Value) -> EvalResult<Value> {
    Ok(Value::Uint(match value {
        Value::Uint(v) => *v,
        Value::Int(v) => u64::try_from(*v).map_err(|_| range_error("uint"))?,
        Value::Double(v) => {
            if !(*v >= 0.0 && *v < 18_446_744_073_709_551_616.0) {
                return Err(range_error("uint"));
            }
            *v as u64
        }
        Value::String(s) => s
            .parse::<u64>()
            .map_err(|error| conversion_error(value, "uint", error.to_string()))?,
        _ => return Err(EvalError::no_such_overload("uint", &[value])),
    }))
}

/// `double(x)`
pub(crate) fn to_double(value: &Value) -> EvalResult<Value> {
    Ok(Value::Double(match value {
        Value::Double(v) => *v,
        Value::Int(v) => *v as f64,
        Value::Uint(v) => *v as f64,
        Value::String(s) => parse_double(s)
            .ok_or_else(|| conversion_error(value, "double", format!("invalid number '{s}'")))?,
        _ => return Err(EvalError::no_such_overload("double", &[value])),
    }))
}

fn parse_double(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" | "inf" | "+inf" | "Inf" | "+Inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" | "-Inf" => Some(f64::NEG_INFINITY),
        _ => text.parse::<f64>().ok().filter(|_| {
            // Rust also accepts "infinity"/"nan" spellings; those are handled above.
            text.bytes().any(|b| b.is_ascii_digit())
        }),
    }
}

/// `string(x)`
pub(crate) fn to_string(value: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let text = match value {
        Value::String(_) => return Ok(value.clone()),
        Value::Int(v) => v.to_string(),
        Value::Uint(v) => v.to_string(),
        Value::Double(v) => format_double(*v),
        Value::Bool(v) => v.to_string(),
        Value::Bytes(bytes) => {
            budget.charge(traversal_cost(bytes.len()))?;
            std::str::from_utf8(bytes)
                .map_err(|_| conversion_error(value, "string", "invalid UTF-8"))?
                .to_string()
        }
        Value::Timestamp(t) => t.to_string(),
        Value::Duration(d) => d.to_string(),
        _ => return Err(EvalError::no_such_overload("string", &[value])),
    };
    Ok(Value::String(Arc::from(text)))
}

/// `bytes(x)`
pub(crate) fn to_bytes(value: &Value, budget: &mut Budget) -> EvalResult<Value> {
    match value {
        Value::Bytes(_) => Ok(value.clone()),
        Value::String(s) => {
            budget.charge(traversal_cost(s.len()))?;
            Ok(Value::Bytes(Arc::from(s.as_bytes())))
        }
        _ => Err(EvalError::no_such_overload("bytes", &[value])),
    }
}

/// `bool(x)`
pub(crate) fn to_bool(value: &Value) -> EvalResult<Value> {
    match value {
        Value::Bool(_) => Ok(value.clone()),
        Value::String(s) => match s.as_ref() {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
            _ => Err(conversion_error(
                value,
                "bool",
                format!("invalid boolean '{s}'"),
            )),
        },
        _ => Err(EvalError::no_such_overload("bool", &[value])),
    }
}

/// `timestamp(x)`
pub(crate) fn to_timestamp(value: &Value, budget: &mut Budget) -> EvalResult<Value> {
    match value {
        Value::Timestamp(_) => Ok(value.clone()),
        Value::String(s) => {
            // Parsing walks the text (and a failure quotes it).
            budget.charge(traversal_cost(s.len()))?;
            Ok(Value::Timestamp(Timestamp::parse(s)?))
        }
        Value::Int(seconds) => Ok(Value::Timestamp(Timestamp::new(*seconds, 0)?)),
        _ => Err(EvalError::no_such_overload("timestamp", &[value])),
    }
}

/// `duration(x)`
pub(crate) fn to_duration(value: &Value, budget: &mut Budget) -> EvalResult<Value> {
    match value {
        Value::Duration(_) => Ok(value.clone()),
        Value::String(s) => {
            // A unit per two bytes: a duration is a sum of numbers with units ('1s1s...'),
            // each parsed apart.
            budget.charge((s.len() as u64).div_ceil(2))?;
            Ok(Value::Duration(Duration::parse(s)?))
        }
        _ => Err(EvalError::no_such_overload("duration", &[value])),
    }
}

/// `type(x)`
pub(crate) fn type_of(value: &Value) -> Value {
    Value::Type(Arc::from(value.type_name()))
}

/// The declarations and implementations of the conversion functions.
pub(crate) fn functions() -> Vec<Function> {
    let a = || Type::param("A");
    vec![
        Function::new("int")
            .overload(
                Overload::global("int64_to_int64", &[Type::Int], Type::Int)
                    .with_impl(|args, _| to_int(&args[0])),
            )
            .overload(
                Overload::global("uint64_to_int64", &[Type::Uint], Type::Int)
                    .with_impl(|args, _| to_int(&args[0])),
            )
            .overload(
                Overload::global("double_to_int64", &[Type::Double], Type::Int)
                    .with_impl(|args, _| to_int(&args[0])),
            )
            .overload(
                Overload::global("string_to_int64", &[Type::String], Type::Int)
                    .with_impl(|args, _| to_int(&args[0])),
            )
            .overload(
                Overload::global("timestamp_to_int64", &[Type::Timestamp], Type::Int)
                    .with_impl(|args, _| to_int(&args[0])),
            ),
        Function::new("uint")
            .overload(
                Overload::global("uint64_to_uint64", &[Type::Uint], Type::Uint)
                    .with_impl(|args, _| to_uint(&args[0])),
            )
            .overload(
                Overload::global("int64_to_uint64", &[Type::Int], Type::Uint)
                    .with_impl(|args, _| to_uint(&args[0])),
            )
            .overload(
                Overload::global("double_to_uint64", &[Type::Double], Type::Uint)
                    .with_impl(|args, _| to_uint(&args[0])),
            )
            .overload(
                Overload::global("string_to_uint64", &[Type::String], Type::Uint)
                    .with_impl(|args, _| to_uint(&args[0])),
            ),
        Function::new("double")
            .overload(
                Overload::global("double_to_double", &[Type::Double], Type::Double)
                    .with_impl(|args, _| to_double(&args[0])),
            )
            .overload(
                Overload::global("int64_to_double", &[Type::Int], Type::Double)
                    .with_impl(|args, _| to_double(&args[0])),
            )
            .overload(
                Overload::global("uint64_to_double", &[Type::Uint], Type::Double)
                    .with_impl(|args, _| to_double(&args[0])),
            )
            .overload(
                Overload::global("string_to_double", &[Type::String], Type::Double)
                    .with_impl(|args, _| to_double(&args[0])),
            ),
        Function::new("string")
            .overload(
                Overload::global("string_to_string", &[Type::String], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("int64_to_string", &[Type::Int], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("uint64_to_string", &[Type::Uint], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("double_to_string", &[Type::Double], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("bool_to_string", &[Type::Bool], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("bytes_to_string", &[Type::Bytes], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("timestamp_to_string", &[Type::Timestamp], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            )
            .overload(
                Overload::global("duration_to_string", &[Type::Duration], Type::String)
                    .with_impl(|args, b| to_string(&args[0], b)),
            ),
        Function::new("bytes")
            .overload(
                Overload::global("bytes_to_bytes", &[Type::Bytes], Type::Bytes)
                    .with_impl(|args, b| to_bytes(&args[0], b)),
            )
            .overload(
                Overload::global("string_to_bytes", &[Type::String], Type::Bytes)
                    .with_impl(|args, b| to_bytes(&args[0], b)),
            ),
        Function::new("bool")
            .overload(
                Overload::global("bool_to_bool", &[Type::Bool], Type::Bool)
                    .with_impl(|args, _| to_bool(&args[0])),
            )
            .overload(
                Overload::global("string_to_bool", &[Type::String], Type::Bool)
                    .with_impl(|args, _| to_bool(&args[0])),
            ),
        Function::new("timestamp")
            .overload(
                Overload::global(
                    "timestamp_to_timestamp",
                    &[Type::Timestamp],
                    Type::Timestamp,
                )
                .with_impl(|args, budget| to_timestamp(&args[0], budget)),
            )
            .overload(
                Overload::global("string_to_timestamp", &[Type::String], Type::Timestamp)
                    .with_impl(|args, budget| to_timestamp(&args[0], budget)),
            )
            .overload(
                Overload::global("int64_to_timestamp", &[Type::Int], Type::Timestamp)
                    .with_impl(|args, budget| to_timestamp(&args[0], budget)),
            ),
        Function::new("duration")
            .overload(
                Overload::global("duration_to_duration", &[Type::Duration], Type::Duration)
                    .with_impl(|args, budget| to_duration(&args[0], budget)),
            )
            .overload(
                Overload::global("string_to_duration", &[Type::String], Type::Duration)
                    .with_impl(|args, budget| to_duration(&args[0], budget)),
            ),
        Function::new("dyn").overload(
            Overload::global("to_dyn", &[a()], Type::Dyn).with_impl(|args, _| Ok(args[0].clone())),
        ),
        Function::new("type").overload(
            Overload::global("type", &[a()], Type::type_of(a()))
                .with_impl(|args, _| Ok(type_of(&args[0]))),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_to_int_excludes_both_ends_of_the_range() {
        assert!(to_int(&Value::Double(9.223_372_036_854_776e18)).is_err());
        assert!(to_int(&Value::Double(-9.223_372_036_854_776e18)).is_err());
        assert_eq!(
            to_int(&Value::Double(-7.9)).expect("in range"),
            Value::Int(-7)
        );
    }

    #[test]
    fn strings_convert_with_errors_for_junk() {
        assert_eq!(
            to_double(&Value::string("-84.32e7")).expect("number"),
            Value::Double(-8.432e8)
        );
        assert!(to_double(&Value::string("infinity and beyond")).is_err());
        assert!(to_bool(&Value::string("TrUe")).is_err());
        assert_eq!(
            to_uint(&Value::string("300")).expect("number"),
            Value::Uint(300)
        );
    }

    #[test]
    fn invalid_utf8_bytes_do_not_become_strings() {
        let bytes = Value::Bytes(Arc::from(&[0u8, 0xff][..]));
        assert!(to_string(&bytes, &mut Budget::new(None)).is_err());
    }

    #[test]
    fn parsing_timestamps_and_durations_charges_for_the_text() {
        // Found by the adversarial bench: `timestamp(big)` of a 64 kB string, failing, cost
        // one unit per call and ran 0.8 s in a loop on the default budget; `duration` of
        // '1s1s...' (valid) ran 150 ms at a unit per ten bytes.
        for (function, cost) in [("timestamp", 1000), ("duration", 5000)] {
            let env = crate::Env::kro().with_variable("s", Type::String);
            let program = env.compile(&format!("{function}(s)")).expect("compiles");
            let text = Value::string(&"1".repeat(10_000));
            let evaluation = program.evaluate_with_limit(&[("s", text)], None);
            assert!(evaluation.result.is_err(), "{function}");
            assert_eq!(evaluation.cost, 1 + cost, "{function}");
        }
    }
}
