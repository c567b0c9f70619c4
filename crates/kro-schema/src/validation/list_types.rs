//! `x-kubernetes-list-type: set` and `map`: items of a set must be unique, items of a map
//! unique by their `x-kubernetes-list-map-keys` (`pkg/apiserver/schema/listtype`). Each
//! repeated item is reported once, at its second occurrence.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::location::{Step, elements};
use crate::field_error::{BadValue, FieldError, FieldPath, marshal_json};
use crate::openapi::{AdditionalProperties, Schema};

/// How deep the walk follows schema and value together.
const MAX_DEPTH: usize = 512;

/// Whether `schema` has `set` or `map` lists at all (else there is nothing to check).
pub(super) fn has_list_types(schema: &Schema) -> bool {
    super::any_node(schema, &|node| {
        matches!(node.x_kubernetes_list_type.as_deref(), Some("set" | "map"))
    })
}

/// Every duplicate in the `set` and `map` lists of `value`.
pub(super) fn check(schema: &Schema, value: &Value) -> Vec<FieldError> {
    let mut walk = Walk {
        path: Vec::new(),
        errors: Vec::new(),
    };
    if let Value::Object(fields) = value {
        walk.object(schema, fields);
    }
    walk.errors
}

struct Walk<'v> {
    path: Vec<Step<'v>>,
    errors: Vec<FieldError>,
}

impl<'v> Walk<'v> {
    fn here(&self) -> FieldPath {
        FieldPath::from_elements(elements(&self.path))
    }

    fn enter(&mut self, step: Step<'v>, schema: &Schema, value: &'v Value) {
        if self.path.len() > MAX_DEPTH {
            return;
        }
        self.path.push(step);
        match value {
            Value::Array(items) => self.list(schema, items),
            Value::Object(fields) => self.object(schema, fields),
            _ => {}
        }
        self.path.pop();
    }

    fn object(&mut self, schema: &Schema, fields: &'v Map<String, Value>) {
        if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
            for (key, item) in fields {
                self.enter(Step::Key(key), values, item);
            }
        }
        for (key, item) in fields {
            if let Some(property) = schema.properties.get(key) {
                self.enter(Step::Property(key), property, item);
            }
        }
    }

    fn list(&mut self, schema: &Schema, items: &'v [Value]) {
        match schema.x_kubernetes_list_type.as_deref() {
            Some("set") => {
                for index in second_occurrences(items.iter().map(identity)) {
                    let item = items.get(index).cloned().unwrap_or(Value::Null);
                    let path = self.here().index(index);
                    self.errors
                        .push(FieldError::duplicate(path, BadValue::Value(item)));
                }
            }
            Some("map") => {
                let path = self.here();
                let keys = &schema.x_kubernetes_list_map_keys;
                map_list(&path, keys, items, &mut self.errors);
            }
            _ => {}
        }
        if let Some(item_schema) = &schema.items {
            for (index, item) in items.iter().enumerate() {
                self.enter(Step::Index(index), item_schema, item);
            }
        }
    }
}

fn map_list(path: &FieldPath, keys: &[String], items: &[Value], errors: &mut Vec<FieldError>) {
    for (index, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errors.push(FieldError::invalid(
                path.index(index),
                BadValue::Value(item.clone()),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    let key_of = |item: &Value| -> Map<String, Value> {
        let mut key = Map::new();
        if let Value::Object(fields) = item {
            for name in keys {
                if let Some(value) = fields.get(name) {
                    key.insert(name.clone(), value.clone());
                }
            }
        }
        key
    };
    let item_keys: Vec<Map<String, Value>> = items.iter().map(key_of).collect();
    let identities = item_keys.iter().map(|key| match keys {
        // One key field: compare its value (a missing key is its own value).
        [single] => key
            .get(single)
            .map_or_else(|| "unspecified".to_string(), identity),
        _ => format!("j:{}", marshal_json(&Value::Object(key.clone()))),
    });
    for index in second_occurrences(identities) {
        let key = item_keys.get(index).cloned().unwrap_or_default();
        errors.push(FieldError::duplicate(
            path.index(index),
            BadValue::Value(Value::Object(key)),
        ));
    }
}

/// A comparable identity of a value: scalars by Go's equality (an integer and a float
/// differ), objects and lists by their JSON.
fn identity(value: &Value) -> String {
    match value {
        Value::Null => "n".to_string(),
        Value::Bool(b) => format!("b:{b}"),
        Value::Number(number) => match number.as_i64() {
            Some(int) => format!("i:{int}"),
            None => format!("f:{}", number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => format!("s:{text}"),
        compound => format!("j:{}", marshal_json(compound)),
    }
}

/// The indices where a value appears for the second time.
fn second_occurrences(identities: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut repeated = Vec::new();
    for (index, identity) in identities.enumerate() {
        let count = seen.entry(identity).or_insert(0);
        *count += 1;
        if *count == 2 {
            repeated.push(index);
        }
    }
    repeated
}
