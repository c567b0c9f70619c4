//! Evaluating compiled expressions against the values of one plan, and rendering a node's
//! value (template, data, externalRef metadata) by filling in its `${...}` fields.

use std::collections::HashMap;

use kro_cel::{Activation, EvalError, Value, is_omit};
use kro_graph::{CompiledExpression, CompiledField, FieldPath, PathSegment, Template};
use serde_json::Value as Json;

/// The variables of one evaluation: the plan's shared values (`schema`, node ids) with a few
/// bindings on top (forEach iterators, `each`, a node's own id in readyWhen).
pub(crate) struct Scope<'a> {
    shared: &'a HashMap<String, Value>,
    local: Vec<(String, Value)>,
}

impl<'a> Scope<'a> {
    pub(crate) fn new(shared: &'a HashMap<String, Value>) -> Self {
        Scope {
            shared,
            local: Vec::new(),
        }
    }

    /// The scope with `name` bound to `value` (over any shared value of that name).
    pub(crate) fn with(mut self, name: &str, value: Value) -> Self {
        self.local.push((name.to_owned(), value));
        self
    }

    /// Binds more names.
    pub(crate) fn extend(mut self, bindings: impl IntoIterator<Item = (String, Value)>) -> Self {
        self.local.extend(bindings);
        self
    }
}

impl Activation for Scope<'_> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.local
            .iter()
            .rev()
            .find(|(bound, _)| bound == name)
            .map(|(_, value)| value.clone())
            .or_else(|| self.shared.get(name).cloned())
    }
}

/// Why an expression gave no usable value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Problem {
    /// The data it reads is not there yet (a missing field, key or element): wait.
    Pending {
        /// The expression.
        expression: String,
        /// What is missing.
        reason: String,
    },
    /// A real error: a failed function, a wrong type, a value JSON cannot hold.
    Failed {
        /// The expression.
        expression: String,
        /// What went wrong.
        message: String,
    },
}

impl Problem {
    pub(crate) fn of(expression: &CompiledExpression, error: &EvalError) -> Problem {
        if error.is_pending() {
            Problem::Pending {
                expression: expression.source.clone(),
                reason: error.to_string(),
            }
        } else {
            Problem::Failed {
                expression: expression.source.clone(),
                message: error.to_string(),
            }
        }
    }

    pub(crate) fn is_pending(&self) -> bool {
        matches!(self, Problem::Pending { .. })
    }
}

/// Evaluates one expression.
pub(crate) fn evaluate(
    expression: &CompiledExpression,
    scope: &Scope<'_>,
) -> Result<Value, Problem> {
    crate::observe::timed(
        || expression.program.evaluate(scope),
        |observer, elapsed, _| observer.expression_evaluated(elapsed),
    )
    .map_err(|error| Problem::of(expression, &error))
}

/// Evaluates a condition (readyWhen, includeWhen): `true` only for the boolean `true`.
pub(crate) fn evaluate_condition(
    expression: &CompiledExpression,
    scope: &Scope<'_>,
) -> Result<bool, Problem> {
    match evaluate(expression, scope)? {
        Value::Bool(value) => Ok(value),
        other => Err(Problem::Failed {
            expression: expression.source.clone(),
            message: format!(
                "the condition evaluated to {}, not a bool",
                other.type_name()
            ),
        }),
    }
}

/// A field whose expression could not be evaluated, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldProblem {
    /// The field, relative to the rendered value.
    pub(crate) path: FieldPath,
    /// What happened.
    pub(crate) problem: Problem,
}

/// The rendered value, or every field that failed (errors first, then pending ones).
pub(crate) fn render(
    value: &Json,
    fields: &[CompiledField],
    scope: &Scope<'_>,
) -> Result<Json, Vec<FieldProblem>> {
    let mut rendered = value.clone();
    let mut problems = Vec::new();
    let mut omitted = Vec::new();
    for field in fields {
        let result = evaluate(&field.expression, scope).and_then(|value| {
            // omit() removes a standalone field; in an interpolated string it could only
            // have failed to concatenate.
            if is_omit(&value) && matches!(field.template, Template::Standalone(_)) {
                return Ok(None);
            }
            to_json(&field.expression, &value).map(Some)
        });
        match result {
            Ok(Some(json)) => set(&mut rendered, field.path.segments(), json),
            Ok(None) => omitted.push(&field.path),
            Err(problem) => problems.push(FieldProblem {
                path: field.path.clone(),
                problem,
            }),
        }
    }
    if !problems.is_empty() {
        problems.sort_by_key(|problem| problem.problem.is_pending());
        return Err(problems);
    }
    // Later fields first, so that removing a list element does not shift the index of an
    // element still to be removed.
    for path in omitted.into_iter().rev() {
        remove(&mut rendered, path.segments());
    }
    Ok(rendered)
}

/// A CEL value as JSON, or the error kro reports for values JSON cannot hold. As upstream,
/// bytes and unsigned integers above the `int` range are refused with a hint at the
/// conversion to write (`base64.encode(...)`, `string(...)`).
pub(crate) fn to_json(expression: &CompiledExpression, value: &Value) -> Result<Json, Problem> {
    let failed = |message: String| Problem::Failed {
        expression: expression.source.clone(),
        message,
    };
    json_safe(value).map_err(failed)?;
    kro_cel::to_json(value)
        .map_err(|error| failed(format!("the result cannot be written as JSON: {error}")))
}

fn json_safe(value: &Value) -> Result<(), String> {
    match value {
        Value::Uint(number) if i64::try_from(*number).is_err() => Err(format!(
            "unsupported type: uint value {number} overflows int64; convert it explicitly, e.g. string(...)"
        )),
        Value::Bytes(_) => Err(
            "unsupported type: bytes value cannot be used directly in a resource template or status field; encode it explicitly, e.g. base64.encode(...)"
                .to_owned(),
        ),
        Value::List(items) => items.iter().try_for_each(json_safe),
        Value::Map(map) => map.iter().try_for_each(|(_, value)| json_safe(value)),
        Value::Optional(Some(inner)) => json_safe(inner),
        Value::Opaque(opaque) if kro_cel::is_moving(value) => Err(format!(
            "a {} changes with the clock and cannot be written into an object: wrap it in string(...) to explicitly opt out of requeue solving",
            opaque.type_name()
        )),
        _ => Ok(()),
    }
}

/// Sets the value at `path`, creating maps on the way where keys are missing.
pub(crate) fn set(root: &mut Json, path: &[PathSegment], value: Json) {
    let Some((last, parents)) = path.split_last() else {
        *root = value;
        return;
    };
    let mut current = root;
    for segment in parents {
        current = match (segment, current) {
            (PathSegment::Key(key), Json::Object(map)) => map
                .entry(key.clone())
                .or_insert_with(|| Json::Object(Default::default())),
            (PathSegment::Index(index), Json::Array(items)) if *index < items.len() => {
                &mut items[*index]
            }
            // The path comes from scanning this very value; anything else is unreachable.
            _ => return,
        };
    }
    match (last, current) {
        (PathSegment::Key(key), Json::Object(map)) => {
            map.insert(key.clone(), value);
        }
        (PathSegment::Index(index), Json::Array(items)) if *index < items.len() => {
            items[*index] = value;
        }
        _ => {}
    }
}

/// Removes the field or list element at `path`, if present.
pub(crate) fn remove(root: &mut Json, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        *root = Json::Null;
        return;
    };
    let mut current = root;
    for segment in parents {
        current = match (segment, current) {
            (PathSegment::Key(key), Json::Object(map)) => match map.get_mut(key) {
                Some(child) => child,
                None => return,
            },
            (PathSegment::Index(index), Json::Array(items)) if *index < items.len() => {
                &mut items[*index]
            }
            _ => return,
        };
    }
    match (last, current) {
        (PathSegment::Key(key), Json::Object(map)) => {
            map.remove(key);
        }
        (PathSegment::Index(index), Json::Array(items)) if *index < items.len() => {
            items.remove(*index);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(text: &str) -> FieldPath {
        text.parse().expect("a field path")
    }

    #[test]
    fn set_and_remove_follow_keys_and_indices() {
        let mut value = json!({"spec": {"ports": [{"port": 1}, {"port": 2}]}});
        set(&mut value, path("spec.ports[1].port").segments(), json!(80));
        set(
            &mut value,
            path("spec.selector.app").segments(),
            json!("web"),
        );
        assert_eq!(
            value,
            json!({"spec": {"ports": [{"port": 1}, {"port": 80}], "selector": {"app": "web"}}})
        );
        remove(&mut value, path("spec.ports[0]").segments());
        remove(&mut value, path("spec.missing.x").segments());
        assert_eq!(
            value,
            json!({"spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}})
        );
    }
}
