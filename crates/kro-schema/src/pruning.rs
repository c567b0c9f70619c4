//! Pruning of unknown fields, as the API server does when it decodes a custom resource
//! (`pkg/apiserver/schema/pruning` and `objectmeta`): fields the schema does not name are
//! removed, except below `x-kubernetes-preserve-unknown-fields`; the object root and embedded
//! resources keep `apiVersion`, `kind` and `metadata`, whose fields are those of `ObjectMeta`.
//! The removed paths are returned as strict field validation reports them
//! (`unknown field "spec.foo"`).
//!
//! ```
//! use kro_schema::{Schema, prune};
//! use serde_json::json;
//!
//! let schema: Schema = serde_json::from_value(json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}
//! }))
//! .expect("a valid schema");
//! let mut object = json!({"apiVersion": "v1", "kind": "X", "spec": {"replicas": 1, "foo": 2}});
//! assert_eq!(prune(&schema, &mut object, true), vec!["spec.foo".to_string()]);
//! assert_eq!(object, json!({"apiVersion": "v1", "kind": "X", "spec": {"replicas": 1}}));
//! ```

mod metadata;

use serde_json::{Map, Value};

use crate::field_error::FieldPath;
use crate::openapi::{AdditionalProperties, Schema};

/// How deep pruning follows schema and value together.
const MAX_DEPTH: usize = 512;

/// The fields every Kubernetes object has beside its schema.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Removes the fields of `value` that `schema` does not specify, and the fields `metadata`
/// of the root (when `is_resource_root`) and of embedded resources cannot have. Returns the
/// removed paths: unknown root `metadata` fields first, then the others sorted, then those of
/// embedded `metadata`.
///
/// `metadata` is normalized as a round trip through `ObjectMeta` normalizes it (empty fields
/// dropped), unless a known field has the wrong type, in which case it is left for the API
/// server to reject.
pub fn prune(schema: &Schema, value: &mut Value, is_resource_root: bool) -> Vec<String> {
    let mut unknown = Vec::new();
    if is_resource_root
        && let Value::Object(fields) = value
        && let Some(meta) = fields.get_mut("metadata")
    {
        unknown.extend(metadata::coerce(meta, "metadata"));
    }
    let mut pruner = Pruner {
        path: String::new(),
        unknown: Vec::new(),
    };
    pruner.prune(value, Some(schema), is_resource_root, 0);
    pruner.unknown.sort();
    unknown.extend(pruner.unknown);
    let mut embedded = Vec::new();
    coerce_embedded(&FieldPath::root(), value, Some(schema), &mut embedded, 0);
    embedded.sort();
    unknown.extend(embedded);
    unknown
}

/// Structural pruning (`pruning/algorithm.go`), tracking the path as strict decoding prints
/// it: `spec.foo`, `spec.items[0].bar`, map keys after a dot.
struct Pruner {
    path: String,
    unknown: Vec<String>,
}

impl Pruner {
    fn push_key(&mut self, key: &str) -> usize {
        let length = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        length
    }

    fn push_index(&mut self, index: usize) -> usize {
        let length = self.path.len();
        self.path.push_str(&format!("[{index}]"));
        length
    }

    fn record(&mut self, key: &str) {
        let length = self.push_key(key);
        self.unknown.push(self.path.clone());
        self.path.truncate(length);
    }

    /// `embedded` marks the object root and `x-kubernetes-embedded-resource` objects.
    fn prune(&mut self, value: &mut Value, schema: Option<&Schema>, embedded: bool, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(schema) = schema {
            if schema.reference.is_some() {
                return;
            }
            if schema.preserves_unknown_fields() {
                self.skip(value, schema, embedded, depth);
                return;
            }
        }
        match value {
            Value::Object(fields) => {
                let Some(schema) = schema else {
                    let keys: Vec<String> = fields.keys().cloned().collect();
                    for key in keys {
                        self.record(&key);
                    }
                    fields.clear();
                    return;
                };
                self.object(
                    fields,
                    schema,
                    embedded || schema.x_kubernetes_embedded_resource,
                    depth,
                );
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|schema| schema.items.as_deref());
                for (index, item) in items.iter_mut().enumerate() {
                    let length = self.push_index(index);
                    let embedded = item_schema.is_some_and(|s| s.x_kubernetes_embedded_resource);
                    self.prune(item, item_schema, embedded, depth + 1);
                    self.path.truncate(length);
                }
            }
            _ => {}
        }
    }

    fn object(
        &mut self,
        fields: &mut Map<String, Value>,
        schema: &Schema,
        embedded: bool,
        depth: usize,
    ) {
        let mut removed = Vec::new();
        for (key, item) in fields.iter_mut() {
            if embedded && META_FIELDS.contains(&key.as_str()) {
                continue;
            }
            if let Some(property) = schema.properties.get(key) {
                let length = self.push_key(key);
                self.prune(
                    item,
                    Some(property),
                    property.x_kubernetes_embedded_resource,
                    depth + 1,
                );
                self.path.truncate(length);
                continue;
            }
            match &schema.additional_properties {
                Some(AdditionalProperties::Schema(values)) => {
                    let length = self.push_key(key);
                    self.prune(
                        item,
                        Some(values),
                        values.x_kubernetes_embedded_resource,
                        depth + 1,
                    );
                    self.path.truncate(length);
                }
                // `additionalProperties: true` keeps values as they are.
                Some(AdditionalProperties::Allowed(true)) => {}
                _ => {
                    if !META_FIELDS.contains(&key.as_str()) || !self.path.is_empty() {
                        self.record(key);
                    }
                    removed.push(key.clone());
                }
            }
        }
        for key in removed {
            fields.remove(&key);
        }
    }

    /// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned
    /// by their schemas.
    fn skip(&mut self, value: &mut Value, schema: &Schema, embedded: bool, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(fields) => {
                let embedded = embedded || schema.x_kubernetes_embedded_resource;
                for (key, item) in fields.iter_mut() {
                    if embedded && META_FIELDS.contains(&key.as_str()) {
                        continue;
                    }
                    let child = schema
                        .properties
                        .get(key)
                        .or_else(|| schema.additional_properties_schema());
                    if let Some(child) = child {
                        let length = self.push_key(key);
                        self.prune(
                            item,
                            Some(child),
                            child.x_kubernetes_embedded_resource,
                            depth + 1,
                        );
                        self.path.truncate(length);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref() {
                    for (index, item) in items.iter_mut().enumerate() {
                        let length = self.push_index(index);
                        self.skip(
                            item,
                            item_schema,
                            item_schema.x_kubernetes_embedded_resource,
                            depth + 1,
                        );
                        self.path.truncate(length);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Embedded resources below the root: their `metadata` is `ObjectMeta` (`objectmeta.Coerce`).
fn coerce_embedded(
    path: &FieldPath,
    value: &mut Value,
    schema: Option<&Schema>,
    unknown: &mut Vec<String>,
    depth: usize,
) {
    let Some(schema) = schema.filter(|schema| schema.reference.is_none()) else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            if schema.x_kubernetes_embedded_resource
                && !path.is_root()
                && let Some(meta) = fields.get_mut("metadata")
            {
                unknown.extend(metadata::coerce(meta, &path.child("metadata").to_string()));
            }
            for (key, item) in fields.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    coerce_embedded(&path.child(key), item, Some(property), unknown, depth + 1);
                } else if let Some(values) = schema.additional_properties_schema() {
                    coerce_embedded(&path.key(key), item, Some(values), unknown, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                coerce_embedded(
                    &path.index(index),
                    item,
                    schema.items.as_deref(),
                    unknown,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
