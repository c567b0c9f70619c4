//! kro's runtime library (upstream `pkg/cel/library/runtime.go`): author-defined status
//! conditions on RGD instances.
//!
//! - `runtime.newCondition({type: t, status: s, reason: r, message: m}) -> kro.run.Condition`:
//!   a condition. The argument is written with bare-identifier keys; a parse-time macro
//!   rewrites them to strings and rejects other keys, repeated keys, quoted or computed keys,
//!   and a missing `type` or `status` ([`ConditionSyntaxError`]). Literal values are checked
//!   while parsing too (upstream checks them when building the graph); computed ones when
//!   evaluating: every value must be a string, `type` non-empty, and `status` one of `True`,
//!   `False` and `Unknown` ([`ConditionError`]). `reason` and `message` default to `""`.
//! - `runtime.condition(obj, type) -> kro.run.Condition`: the first entry of
//!   `obj.status.conditions` whose `type` is `type`, or a condition whose four fields are all
//!   `""` when there is none (or no `status` or `conditions` at all).
//!
//! `runtime` is a variable of the opaque type [`RUNTIME_TYPE_NAME`] that this library does not
//! declare: the graph builder declares it ([`runtime_type`]) where conditions are written, and
//! binds it to [`runtime_value`]. Both functions are members of that type, so they cannot be
//! called on anything else.
//!
//! A condition is checked as the object type [`CONDITION_TYPE_NAME`], whose four fields
//! `type`, `status`, `reason` and `message` are strings (selecting any other field is a type
//! error). At run time it is a map with exactly those four string entries, so `type(c)` is
//! `map` (upstream: `kro.run.Condition`) and it compares equal to a map with the same entries.
//!
//! [`ConditionSyntaxError`]: crate::ConditionSyntaxError

use std::any::Any;
use std::sync::Arc;

use crate::cost::{Budget, traversal_cost};
use crate::error::{ConditionError, EvalError, EvalErrorKind, EvalResult};
use crate::functions::{Function, Library, ObjectType, Overload};
use crate::types::Type;
use crate::value::{Key, Map, OpaqueValue, Value};

/// The name of the variable kro binds to [`runtime_value`].
pub const RUNTIME_VARIABLE: &str = "runtime";

/// The opaque type of the `runtime` variable.
pub const RUNTIME_TYPE_NAME: &str = "kro.run.Runtime";

/// The object type of the conditions `runtime.newCondition` and `runtime.condition` return.
pub const CONDITION_TYPE_NAME: &str = "kro.run.Condition";

/// A condition's fields, in the order its maps list them.
const CONDITION_FIELDS: [&str; 4] = ["type", "status", "reason", "message"];

/// The statuses a condition may have (those of Kubernetes' `metav1.Condition`).
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// The type to declare the `runtime` variable with.
pub fn runtime_type() -> Type {
    Type::opaque(RUNTIME_TYPE_NAME)
}

/// The checked type of a condition.
pub fn condition_type() -> Type {
    Type::object(CONDITION_TYPE_NAME)
}

/// The value to bind the `runtime` variable to.
pub fn runtime_value() -> Value {
    Value::Opaque(Arc::new(Runtime))
}

/// Whether `status` is a valid condition status: `True`, `False` or `Unknown`.
pub fn is_valid_condition_status(status: &str) -> bool {
    CONDITION_STATUSES.contains(&status)
}

/// The `runtime` variable's value: stateless, equal only to itself.
#[derive(Debug)]
struct Runtime;

impl OpaqueValue for Runtime {
    fn type_name(&self) -> &str {
        RUNTIME_TYPE_NAME
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other.as_any().is::<Runtime>()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The kro.runtime library.
pub(crate) fn library() -> Library {
    let string = Type::String;
    Library {
        name: "kro.runtime",
        functions: vec![
            Function::new("newCondition").overload(
                Overload::member(
                    "runtime_newCondition_map",
                    &[runtime_type(), Type::map(string.clone(), string.clone())],
                    condition_type(),
                )
                .with_impl(|args, budget| match args {
                    [Value::Opaque(_), argument] if is_runtime(&args[0]) => {
                        new_condition(argument, budget)
                    }
                    _ => Err(no_such_overload("newCondition", args)),
                }),
            ),
            Function::new("condition").overload(
                Overload::member(
                    "runtime_condition_dyn_string",
                    &[runtime_type(), Type::Dyn, string.clone()],
                    condition_type(),
                )
                .with_impl(|args, budget| match args {
                    [_, object, Value::String(wanted)] if is_runtime(&args[0]) => {
                        find_condition(object, wanted, budget)
                    }
                    _ => Err(no_such_overload("condition", args)),
                }),
            ),
        ],
        types: Vec::new(),
        object_types: vec![ObjectType {
            name: CONDITION_TYPE_NAME.to_string(),
            fields: CONDITION_FIELDS
                .iter()
                .map(|field| (field.to_string(), string.clone()))
                .collect(),
        }],
    }
}

fn is_runtime(value: &Value) -> bool {
    matches!(value, Value::Opaque(opaque) if opaque.as_any().is::<Runtime>())
}

fn no_such_overload(name: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(name, &args.iter().collect::<Vec<_>>())
}

fn condition_error(error: ConditionError) -> EvalError {
    EvalError::new(EvalErrorKind::InvalidCondition(error))
}

/// A condition map with the given fields, in [`CONDITION_FIELDS`] order.
fn condition(fields: [Value; 4]) -> Value {
    let entries = CONDITION_FIELDS
        .iter()
        .zip(fields)
        .map(|(name, value)| (Key::String(Arc::from(*name)), value));
    Value::Map(entries.collect())
}

/// `runtime.newCondition(argument)`
fn new_condition(argument: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let Value::Map(entries) = argument else {
        return Err(condition_error(ConditionError::NotAMap {
            type_name: argument.type_name().to_string(),
        }));
    };
    budget.charge(traversal_cost(CONDITION_FIELDS.len()))?;
    let mut fields: [Value; 4] = std::array::from_fn(|_| Value::string(""));
    for (key, value) in entries.iter() {
        let field = match key {
            Key::String(name) => name.to_string(),
            other => other.to_string(),
        };
        let Value::String(text) = value else {
            return Err(condition_error(ConditionError::FieldNotAString {
                field,
                type_name: value.type_name().to_string(),
            }));
        };
        match field.as_str() {
            "type" if text.is_empty() => return Err(condition_error(ConditionError::EmptyType)),
            "status" if !is_valid_condition_status(text) => {
                return Err(condition_error(ConditionError::InvalidStatus(
                    text.to_string(),
                )));
            }
            _ => {}
        }
        if let Some(index) = CONDITION_FIELDS.iter().position(|name| *name == field) {
            fields[index] = value.clone();
        }
    }
    Ok(condition(fields))
}

/// `runtime.condition(object, wanted)`
fn find_condition(object: &Value, wanted: &str, budget: &mut Budget) -> EvalResult<Value> {
    let empty = || condition(std::array::from_fn(|_| Value::string("")));
    let Value::Map(object) = object else {
        return Err(condition_error(ConditionError::ObjectNotAMap {
            type_name: object.type_name().to_string(),
        }));
    };
    let Some(status) = object.get_str("status") else {
        return Ok(empty());
    };
    let Value::Map(status) = status else {
        return Err(condition_error(ConditionError::StatusNotAMap));
    };
    let Some(conditions) = status.get_str("conditions") else {
        return Ok(empty());
    };
    let Value::List(conditions) = conditions else {
        return Err(condition_error(ConditionError::ConditionsNotAList));
    };
    budget.charge(traversal_cost(conditions.len()))?;
    let mut found = None;
    for element in conditions.iter() {
        let Value::Map(entry) = element else {
            return Err(condition_error(ConditionError::UnexpectedElement {
                type_name: element.type_name().to_string(),
            }));
        };
        if found.is_none() && string_field(entry, "type") == wanted {
            found = Some(entry);
        }
    }
    budget.charge(traversal_cost(CONDITION_FIELDS.len()))?;
    Ok(found.map_or_else(empty, |entry| {
        condition(CONDITION_FIELDS.map(|name| Value::string(string_field(entry, name))))
    }))
}

/// A condition field read from a map: its string value, or `""` when absent or not a string.
fn string_field<'m>(entry: &'m Map, name: &str) -> &'m str {
    match entry.get_str(name) {
        Some(Value::String(text)) => text,
        _ => "",
    }
}

#[cfg(test)]
mod tests;
