//! Defaulting with Kubernetes' semantics (`pkg/apiserver/schema/defaulting`): first `null`s
//! of non-nullable fields without a default are dropped (`prunenulls.go`), then defaults are
//! applied top-down (`algorithm.go`), so that an object created by a default is defaulted
//! further, and list items and map values are defaulted too.
//!
//! ```
//! use kro_schema::{Schema, apply_defaults};
//! use serde_json::json;
//!
//! let schema: Schema = serde_json::from_value(json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "default": {}, "properties": {
//!         "replicas": {"type": "integer", "default": 1}
//!     }}}
//! }))
//! .expect("a valid schema");
//! let mut object = json!({});
//! apply_defaults(&schema, &mut object);
//! assert_eq!(object, json!({"spec": {"replicas": 1}}));
//! ```

use serde_json::Value;

use crate::openapi::{AdditionalProperties, Schema};

/// How deep defaulting follows schema and value together.
const MAX_DEPTH: usize = 512;

/// Applies the defaults of `schema` to `value` in place, after dropping `null`s that
/// Kubernetes drops (non-nullable fields without a default). A non-nullable field that is
/// `null` and has a default gets the default.
pub fn apply_defaults(schema: &Schema, value: &mut Value) {
    prune_nulls(Some(schema), value, 0);
    default(schema, value, 0);
}

/// The default of a schema: `default: null` counts as none, as in Kubernetes.
fn default_of(schema: &Schema) -> Option<&Value> {
    schema.default.as_ref().filter(|default| !default.is_null())
}

/// The schema of field `name` of an object: its property, else the map values' schema.
fn field_schema<'a>(schema: Option<&'a Schema>, name: &str) -> Option<&'a Schema> {
    let schema = schema?;
    schema
        .properties
        .get(name)
        .or_else(|| schema.additional_properties_schema())
}

fn prune_nulls(schema: Option<&Schema>, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH || schema.is_some_and(|schema| schema.reference.is_some()) {
        return;
    }
    match value {
        Value::Object(fields) => {
            fields.retain(|name, item| {
                let drop = item.is_null()
                    && field_schema(schema, name)
                        .is_some_and(|field| !field.nullable && default_of(field).is_none());
                !drop
            });
            for (name, item) in fields.iter_mut() {
                prune_nulls(field_schema(schema, name), item, depth + 1);
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|schema| schema.items.as_deref());
            for item in items {
                prune_nulls(item_schema, item, depth + 1);
            }
        }
        _ => {}
    }
}

fn default(schema: &Schema, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH || schema.reference.is_some() {
        return;
    }
    match value {
        Value::Object(fields) => {
            for (name, property) in &schema.properties {
                if let Some(default) = default_of(property) {
                    let missing = match fields.get(name) {
                        None => true,
                        Some(item) => item.is_null() && !property.nullable,
                    };
                    if missing {
                        fields.insert(name.clone(), default.clone());
                    }
                }
            }
            for (name, item) in fields.iter_mut() {
                if let Some(property) = schema.properties.get(name) {
                    default(property, item, depth + 1);
                } else if let Some(AdditionalProperties::Schema(values)) =
                    &schema.additional_properties
                {
                    if item.is_null() && !values.nullable {
                        *item = default_of(values).cloned().unwrap_or(Value::Null);
                    }
                    default(values, item, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items.as_deref() else {
                return;
            };
            for item in items {
                if item.is_null() && !item_schema.nullable {
                    *item = default_of(item_schema).cloned().unwrap_or(Value::Null);
                }
                default(item_schema, item, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
