//! Putting kro's labels and annotations on the objects it manages (their keys are
//! `kro_graph::metadata`), and the ApplySet identity of an instance.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

// The keys, so that callers in this crate write `metadata::OWNED_LABEL` as before.
pub(crate) use kro_graph::metadata::*;

/// The ApplySet id of an instance, as kubectl computes it for a parent object:
/// `applyset-<base64url(sha256(<name>.<namespace>.<kind>.<group>))>-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!("applyset-{}-v1", URL_SAFE_NO_PAD.encode(digest))
}

/// Whether `value` may be a label value: at most 63 characters, alphanumerics, `-`, `_` and
/// `.`, beginning and ending with an alphanumeric (or empty).
pub fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
            && value
                .bytes()
                .next()
                .is_some_and(|byte| byte.is_ascii_alphanumeric())
            && value
                .bytes()
                .last()
                .is_some_and(|byte| byte.is_ascii_alphanumeric()))
}

/// Sets labels (over the template's own) on `object.metadata.labels`.
pub(crate) fn add_labels<'a>(
    object: &mut Json,
    labels: impl IntoIterator<Item = (&'a str, String)>,
) {
    add_to(object, "labels", labels);
}

/// Sets annotations (over the template's own) on `object.metadata.annotations`.
pub(crate) fn add_annotations<'a>(
    object: &mut Json,
    annotations: impl IntoIterator<Item = (&'a str, String)>,
) {
    add_to(object, "annotations", annotations);
}

fn add_to<'a>(
    object: &mut Json,
    field: &str,
    entries: impl IntoIterator<Item = (&'a str, String)>,
) {
    let Json::Object(object) = object else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Json::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Json::Object(Map::new());
    }
    let Json::Object(metadata) = metadata else {
        return;
    };
    let target = metadata
        .entry(field)
        .or_insert_with(|| Json::Object(Map::new()));
    if !target.is_object() {
        *target = Json::Object(Map::new());
    }
    if let Json::Object(target) = target {
        for (key, value) in entries {
            target.insert(key.to_owned(), Json::String(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applyset_ids_follow_kubectl() {
        let id = applyset_id("demo", "default", "WebApp", "kro.run");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"), "{id}");
        // sha256 is 32 bytes: 43 base64url characters without padding.
        assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
        assert_ne!(id, applyset_id("demo", "other", "WebApp", "kro.run"));
    }

    #[test]
    fn label_values_follow_kubernetes_rules() {
        for valid in ["", "a", "us-east-1", "a.b_c", &"x".repeat(63)] {
            assert!(is_label_value(valid), "{valid}");
        }
        for invalid in ["-a", "a-", "a b", "ä", &"x".repeat(64)] {
            assert!(!is_label_value(invalid), "{invalid}");
        }
    }

    #[test]
    fn labels_are_added_over_the_templates_own() {
        let mut object = json!({"metadata": {"labels": {"app": "web", OWNED_LABEL: "no"}}});
        add_labels(&mut object, [(OWNED_LABEL, "true".to_owned())]);
        add_annotations(&mut object, [(APPLY_ORDER_ANNOTATION, "1".to_owned())]);
        assert_eq!(
            object,
            json!({"metadata": {
                "labels": {"app": "web", OWNED_LABEL: "true"},
                "annotations": {APPLY_ORDER_ANNOTATION: "1"}
            }})
        );
    }
}
