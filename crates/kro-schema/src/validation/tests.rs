//! Validation tests, split by concern; the helpers build schemas and render errors.

mod keywords;
mod rules;
mod structure;

use serde_json::{Value, json};

use super::*;

/// A schema from JSON.
fn schema(json: Value) -> Schema {
    serde_json::from_value(json).expect("a schema")
}

/// A resource schema whose `spec.x` has the given schema.
fn with_field(field: Value) -> Schema {
    schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"x": field}}}
    }))
}

/// The rendered errors of validating `value`.
fn rendered(schema: &Schema, value: &Value, old: Option<&Value>) -> Vec<String> {
    validate(schema, value, old)
        .iter()
        .map(ToString::to_string)
        .collect()
}
