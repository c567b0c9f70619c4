//! Objects marked `x-kubernetes-embedded-resource` below the root must look like Kubernetes
//! objects: `apiVersion` and `kind` present, strings, non-empty and well-formed, `metadata` an
//! object (`pkg/apiserver/schema/objectmeta/validation.go`).

use serde_json::{Map, Value};

use crate::field_error::{BadValue, FieldError, FieldPath, PathElement};
use crate::openapi::Schema;

/// How deep the walk follows schema and value together.
const MAX_DEPTH: usize = 512;

/// Whether `schema` has embedded resources at all (else there is nothing to check).
pub(super) fn has_embedded_resources(schema: &Schema) -> bool {
    super::any_node(schema, &|node| node.x_kubernetes_embedded_resource)
}

/// The problems of every embedded resource in `value` (not of the root itself).
pub(super) fn check(schema: &Schema, value: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    node(&mut Vec::new(), schema, value, &mut errors);
    errors
}

fn node(path: &mut Vec<PathElement>, schema: &Schema, value: &Value, errors: &mut Vec<FieldError>) {
    if path.len() > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            if schema.x_kubernetes_embedded_resource {
                let here = FieldPath::from_elements(path.clone());
                embedded_resource(&here, fields, errors);
            }
            for (key, item) in fields {
                let (element, child) = if let Some(property) = schema.properties.get(key) {
                    (PathElement::Field(key.clone()), property)
                } else if let Some(values) = schema.additional_properties_schema() {
                    (PathElement::Key(key.clone()), values)
                } else {
                    continue;
                };
                path.push(element);
                node(path, child, item, errors);
                path.pop();
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for (index, item) in items.iter().enumerate() {
                    path.push(PathElement::Index(index));
                    node(path, item_schema, item, errors);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn embedded_resource(path: &FieldPath, fields: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    for required in ["apiVersion", "kind"] {
        if !fields.contains_key(required) {
            errors.push(FieldError::required(path.child(required), ""));
        }
    }
    if let Some(api_version) = fields.get("apiVersion") {
        let path = path.child("apiVersion");
        match api_version {
            Value::String(text) if text.is_empty() => {
                errors.push(FieldError::invalid(
                    path,
                    BadValue::text(""),
                    "must not be empty",
                ));
            }
            Value::String(text) if text.matches('/').count() > 1 => {
                let detail = format!("unexpected GroupVersion string: {text}");
                errors.push(FieldError::invalid(path, BadValue::text(text), &detail));
            }
            Value::String(_) => {}
            other => errors.push(FieldError::invalid(
                path,
                other.clone().into(),
                "must be a string",
            )),
        }
    }
    if let Some(kind) = fields.get("kind") {
        let path = path.child("kind");
        match kind {
            Value::String(text) if text.is_empty() => {
                errors.push(FieldError::invalid(
                    path,
                    BadValue::text(""),
                    "must not be empty",
                ));
            }
            Value::String(text) => {
                let problems = dns1035_label_problems(&text.to_lowercase());
                if !problems.is_empty() {
                    let detail = format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    );
                    errors.push(FieldError::invalid(path, BadValue::text(text), &detail));
                }
            }
            other => errors.push(FieldError::invalid(
                path,
                other.clone().into(),
                "must be a string",
            )),
        }
    }
    if let Some(metadata) = fields.get("metadata")
        && !metadata.is_object()
        && !metadata.is_null()
    {
        let detail = format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            go_json_kind(metadata)
        );
        errors.push(FieldError::invalid(
            path.child("metadata"),
            metadata.clone().into(),
            &detail,
        ));
    }
}

fn go_json_kind(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) | Value::Null => "object",
    }
}

/// `IsDNS1035Label`: at most 63 characters, a lowercase letter first, alphanumerics or `-`.
fn dns1035_label_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    let bytes = value.as_bytes();
    let valid = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if !valid {
        problems.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    problems
}
