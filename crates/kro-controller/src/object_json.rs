//! JSON views of Kubernetes objects: string fields by pointer, merge patches, objects as JSON,
//! and the time as Kubernetes writes it.

use kube::api::DynamicObject;
use serde_json::Value as Json;
#[cfg(test)]
use serde_json::json;

use crate::error::ReconcileError;
pub(crate) use kro_engine::json::{now, text};

/// The JSON merge patch (RFC 7386) that turns `from` into `to`, or `None` when they are equal.
pub(crate) fn merge_patch(from: &Json, to: &Json) -> Option<Json> {
    if from == to {
        return None;
    }
    match (from, to) {
        (Json::Object(from), Json::Object(to)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in to {
                match from.get(key) {
                    Some(old) => {
                        if let Some(change) = merge_patch(old, value) {
                            patch.insert(key.clone(), change);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in from.keys() {
                if !to.contains_key(key) {
                    patch.insert(key.clone(), Json::Null);
                }
            }
            Some(Json::Object(patch))
        }
        _ => Some(to.clone()),
    }
}

/// `value` without the object members that are `null`, at any depth (in lists too): what
/// kube-apiserver stores of a custom resource, whose fields are not nullable. A status
/// copied from a Go object holds them (a zero `metav1.Time` is written `null`), and comparing
/// it with the stored status as it is would find a difference that no write can remove.
pub(crate) fn without_nulls(value: Json) -> Json {
    match value {
        Json::Object(members) => Json::Object(
            members
                .into_iter()
                .filter(|(_, member)| !member.is_null())
                .map(|(key, member)| (key, without_nulls(member)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// An object as JSON.
pub(crate) fn to_json(object: &DynamicObject) -> Result<Json, ReconcileError> {
    serde_json::to_value(object).map_err(ReconcileError::Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_go_from_objects_at_any_depth() {
        let status = json!({"url": null, "conditions": [{"type": "Available", "lastUpdateTime": null}],
            "nested": {"a": null, "b": [null, 1]}, "state": "ACTIVE"});
        assert_eq!(
            without_nulls(status),
            json!({"conditions": [{"type": "Available"}], "nested": {"b": [null, 1]}, "state": "ACTIVE"})
        );
    }

    #[test]
    fn merge_patch_sets_changes_and_nulls_removed_keys() {
        let from = json!({"state": "IN_PROGRESS", "url": "x", "nested": {"a": 1, "b": 2}});
        let to = json!({"state": "ACTIVE", "nested": {"a": 1}, "conditions": []});
        assert_eq!(
            merge_patch(&from, &to),
            Some(json!({"state": "ACTIVE", "url": null, "nested": {"b": null}, "conditions": []}))
        );
        assert_eq!(merge_patch(&to, &to), None);
    }
}
