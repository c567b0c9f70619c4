//! Optional values: `optional.of`, `optional.none`, `.hasValue()`, `.value()`, `.or()`,
//! `.orValue()`, and the optional forms of selection and indexing.

use std::sync::Arc;

use crate::ast::operators as names;
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::stdlib::operators;
use crate::types::Type;
use crate::value::Value;

/// `optional.of(v)`
pub(crate) fn some(value: Value) -> Value {
    Value::Optional(Some(Arc::new(value)))
}

/// `optional.none()`
pub(crate) fn none() -> Value {
    Value::Optional(None)
}

/// `container[?index]`: none when absent; an optional container propagates.
pub(crate) fn optional_index(container: &Value, index: &Value) -> EvalResult<Value> {
    let container = match container {
        Value::Optional(None) => return Ok(none()),
        Value::Optional(Some(inner)) => inner.as_ref(),
        other => other,
    };
    Ok(operators::index_optional(container, index)?.map_or_else(none, some))
}

fn expect_optional<'a>(function: &str, value: &'a Value) -> EvalResult<&'a Option<Arc<Value>>> {
    match value {
        Value::Optional(inner) => Ok(inner),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

/// `opt.value()`
pub(crate) fn value(optional: &Value) -> EvalResult<Value> {
    match expect_optional("value", optional)? {
        Some(inner) => Ok(inner.as_ref().clone()),
        None => Err(EvalError::new(EvalErrorKind::EmptyOptional)),
    }
}

/// The optional-types library.
pub fn library() -> Library {
    let a = || Type::param("A");
    let optional_a = || Type::optional(a());
    let k = || Type::param("K");
    let v = || Type::param("V");
    let functions = vec![
        Function::new("optional.of").overload(
            Overload::global("optional_of", &[a()], optional_a())
                .with_impl(|args, _| Ok(some(args[0].clone()))),
        ),
        Function::new("optional.ofNonZeroValue").overload(
            Overload::global("optional_ofNonZeroValue", &[a()], optional_a()).with_impl(
                |args, _| {
                    Ok(if args[0].is_zero() {
                        none()
                    } else {
                        some(args[0].clone())
                    })
                },
            ),
        ),
        Function::new("optional.none").overload(
            Overload::global("optional_none", &[], optional_a()).with_impl(|_, _| Ok(none())),
        ),
        Function::new("hasValue").overload(
            Overload::member("optional_hasValue", &[optional_a()], Type::Bool).with_impl(
                |args, _| {
                    Ok(Value::Bool(
                        expect_optional("hasValue", &args[0])?.is_some(),
                    ))
                },
            ),
        ),
        Function::new("value").overload(
            Overload::member("optional_value", &[optional_a()], a())
                .with_impl(|args, _| value(&args[0])),
        ),
        Function::new("or").overload(
            Overload::member(
                "optional_or_optional",
                &[optional_a(), optional_a()],
                optional_a(),
            )
            .with_impl(|args, _| {
                Ok(match expect_optional("or", &args[0])? {
                    Some(_) => args[0].clone(),
                    None => args[1].clone(),
                })
            }),
        ),
        Function::new("orValue").overload(
            Overload::member("optional_orValue_value", &[optional_a(), a()], a()).with_impl(
                |args, _| {
                    Ok(match expect_optional("orValue", &args[0])? {
                        Some(inner) => inner.as_ref().clone(),
                        None => args[1].clone(),
                    })
                },
            ),
        ),
        Function::new("optional.unwrap").overload(
            Overload::global(
                "optional_unwrap",
                &[Type::list(optional_a())],
                Type::list(a()),
            )
            .with_impl(|args, _| unwrap_list(&args[0])),
        ),
        Function::new("unwrapOpt").overload(
            Overload::member(
                "optional_unwrapOpt",
                &[Type::list(optional_a())],
                Type::list(a()),
            )
            .with_impl(|args, _| unwrap_list(&args[0])),
        ),
        Function::new(names::OPTIONAL_INDEX)
            .overload(
                Overload::global(
                    "list_optindex_optional_int",
                    &[Type::list(v()), Type::Int],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            )
            .overload(
                Overload::global(
                    "optional_list_optindex_optional_int",
                    &[Type::optional(Type::list(v())), Type::Int],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            )
            .overload(
                Overload::global(
                    "map_optindex_optional_value",
                    &[Type::map(k(), v()), k()],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            )
            .overload(
                Overload::global(
                    "optional_map_optindex_optional_value",
                    &[Type::optional(Type::map(k(), v())), k()],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            ),
        Function::new(names::INDEX)
            .overload(
                Overload::global(
                    "optional_list_index_int",
                    &[Type::optional(Type::list(v())), Type::Int],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            )
            .overload(
                Overload::global(
                    "optional_map_index_value",
                    &[Type::optional(Type::map(k(), v())), k()],
                    Type::optional(v()),
                )
                .with_impl(|args, _| optional_index(&args[0], &args[1])),
            ),
    ];
    Library {
        name: "optional",
        functions,
        object_types: Vec::new(),
    }
}

fn unwrap_list(list: &Value) -> EvalResult<Value> {
    let Value::List(items) = list else {
        return Err(EvalError::no_such_overload("optional.unwrap", &[list]));
    };
    let mut present = Vec::with_capacity(items.len());
    for item in items.iter() {
        if let Some(inner) = expect_optional("optional.unwrap", item)? {
            present.push(inner.as_ref().clone());
        }
    }
    Ok(Value::list(present))
}
