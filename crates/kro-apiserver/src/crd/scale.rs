//! The scale subresource: the `autoscaling/v1` Scale of an object, the simple JSON paths it
//! reads and writes, and label selectors in text form.

use serde_json::{Value, json};

use crate::registry::ScalePaths;

use super::names::{strings, text};

/// The `autoscaling/v1` Scale of a custom resource or built-in workload.
pub(crate) fn scale_of(object: &Value, paths: &ScalePaths) -> Value {
    let replicas = read_path(object, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = read_path(object, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|path| read_path(object, path))
    {
        status["selector"] = match selector {
            Value::String(text) => json!(text),
            other => json!(label_selector_text(other)),
        };
    }
    let metadata = &object["metadata"];
    let mut scale_metadata = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = metadata.get(field) {
            scale_metadata.insert(field.to_owned(), value.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_metadata,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// The value at a simple JSON path (`.spec.replicas`).
pub(crate) fn read_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, field| value.get(field))
}

/// Sets the value at a simple JSON path, creating objects on the way.
pub(crate) fn write_path(object: &mut Value, path: &str, value: Value) {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let Some((last, parents)) = fields.split_last() else {
        return;
    };
    let mut current = object;
    for field in parents {
        if !current.get(*field).is_some_and(Value::is_object) {
            current[*field] = json!({});
        }
        current = &mut current[*field];
    }
    current[*last] = value;
}

/// A `metav1.LabelSelector` as the string form selectors are written in.
pub(crate) fn label_selector_text(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = text(expression, "/key");
        let values = strings(&expression["values"]).join(",");
        match text(expression, "/operator").as_str() {
            "In" => parts.push(format!("{key} in ({values})")),
            "NotIn" => parts.push(format!("{key} notin ({values})")),
            "Exists" => parts.push(key),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.join(",")
}
