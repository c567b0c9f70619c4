//! Releasing a managed object instead of deleting it (KREP-014's `retain`): which members are
//! released, and the one JSON patch that does it.
//!
//! A released object stays where it is, no longer kro's: its kro labels (ApplySet membership
//! included) and kro's internal annotations are removed, and so is every `managedFields` entry
//! of a kro field manager, so that nothing kro applied is owned any more and a later
//! instance (or anyone) can adopt it. The patch is guarded by the object's resourceVersion: a
//! write in between fails it, and the caller reads the object again.

use kro_graph::lifecycle::{DeletePolicy, detaches_on_deletion};
use serde_json::{Value as Json, json};

use crate::metadata::{APPLYSET_PART_OF_LABEL, MANAGED_BY_LABEL};

/// The prefix of every field manager kro writes with (`kro.run/applyset`, `kro.run/labeller`,
/// `kro.run/direct` …), upstream's included.
pub const KRO_MANAGER_PREFIX: &str = "kro.run/";

/// Why a member of an instance's ApplySet is being removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// It left the plan (its resource was removed from the RGD, or excluded by includeWhen).
    Prune,
    /// Its instance is being deleted; `detach` when the instance carries
    /// `kro.run/detach-on-deletion: "true"`.
    InstanceDeletion {
        /// Everything is released.
        detach: bool,
    },
}

impl Removal {
    /// The removal of the members of `instance`, which is being deleted.
    pub fn deleting(instance: &Json) -> Removal {
        Removal::InstanceDeletion {
            detach: detaches_on_deletion(instance),
        }
    }

    /// Whether `member` is released rather than deleted: it was last applied with
    /// `retain`, or its instance detaches everything.
    pub fn releases(self, member: &Json) -> bool {
        matches!(self, Removal::InstanceDeletion { detach: true })
            || DeletePolicy::of_object(member) == DeletePolicy::Retain
    }
}

/// Whether `key` is a label kro puts on what it manages.
fn is_kro_label(key: &str, value: &Json) -> bool {
    key.starts_with("kro.run/")
        || key.starts_with("internal.kro.run/")
        || key == APPLYSET_PART_OF_LABEL
        || (key == MANAGED_BY_LABEL && value.as_str() == Some("kro"))
}

/// A JSON pointer segment for `key` (`/` and `~` escaped).
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The JSON patch (RFC 6902) that releases `object`, as read from the server with its
/// `managedFields`: a test of its resourceVersion, then the removal of each kro label and
/// `internal.kro.run/` annotation, and its `managedFields` without kro's entries (`[{}]`
/// when none remain: an empty list would keep them all). `None` when there is nothing of
/// kro's left on it.
///
/// ```
/// use kro_runtime::release_patch;
/// let object = serde_json::json!({"metadata": {
///     "resourceVersion": "7",
///     "labels": {"kro.run/owned": "true", "app": "web"},
///     "managedFields": [{"manager": "kro.run/applyset", "operation": "Apply"}]}});
/// let patch = release_patch(&object).expect("something to release");
/// assert_eq!(patch[0], serde_json::json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}));
/// assert_eq!(patch[1]["path"], "/metadata/labels/kro.run~1owned");
/// assert_eq!(patch[2]["value"], serde_json::json!([{}]));
/// ```
pub fn release_patch(object: &Json) -> Option<Json> {
    let metadata = object.get("metadata")?;
    let mut operations = Vec::new();
    for (field, is_kro) in [
        ("labels", is_kro_label as fn(&str, &Json) -> bool),
        ("annotations", |key: &str, _: &Json| {
            key.starts_with("internal.kro.run/")
        }),
    ] {
        if let Some(entries) = metadata.get(field).and_then(Json::as_object) {
            for (key, value) in entries {
                if is_kro(key, value) {
                    operations.push(json!({
                        "op": "remove",
                        "path": format!("/metadata/{field}/{}", segment(key)),
                    }));
                }
            }
        }
    }
    if let Some(entries) = metadata.get("managedFields").and_then(Json::as_array) {
        let kept: Vec<&Json> = entries
            .iter()
            .filter(|entry| {
                !entry
                    .get("manager")
                    .and_then(Json::as_str)
                    .is_some_and(|manager| manager.starts_with(KRO_MANAGER_PREFIX))
            })
            .collect();
        if kept.len() != entries.len() {
            let value = if kept.is_empty() {
                json!([{}])
            } else {
                json!(kept)
            };
            operations.push(json!({
                "op": "replace",
                "path": "/metadata/managedFields",
                "value": value,
            }));
        }
    }
    if operations.is_empty() {
        return None;
    }
    let version = metadata
        .get("resourceVersion")
        .cloned()
        .unwrap_or(Json::Null);
    operations.insert(
        0,
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": version}),
    );
    Some(Json::Array(operations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kro_graph::lifecycle::{DETACH_ON_DELETION_ANNOTATION, LIFECYCLE_POLICY_ANNOTATION};

    fn member(policy: Option<&str>) -> Json {
        let mut member = json!({"metadata": {"name": "web", "annotations": {}}});
        if let Some(policy) = policy {
            member["metadata"]["annotations"][LIFECYCLE_POLICY_ANNOTATION] = json!(policy);
        }
        member
    }

    #[test]
    fn retained_members_are_released_on_prune_and_deletion_and_detach_releases_all() {
        let deleting = Removal::deleting(&json!({"metadata": {}}));
        let detaching = Removal::deleting(
            &json!({"metadata": {"annotations": {DETACH_ON_DELETION_ANNOTATION: "true"}}}),
        );
        for removal in [Removal::Prune, deleting] {
            assert!(removal.releases(&member(Some("retain"))), "{removal:?}");
            assert!(!removal.releases(&member(Some("delete"))), "{removal:?}");
            assert!(!removal.releases(&member(None)), "{removal:?}");
        }
        assert!(detaching.releases(&member(None)));
        assert!(detaching.releases(&member(Some("delete"))));
    }

    #[test]
    fn the_patch_removes_everything_of_kros_and_nothing_else() {
        let object = json!({
            "metadata": {
                "name": "web",
                "resourceVersion": "42",
                "labels": {
                    "app": "web",
                    "kro.run/owned": "true",
                    "kro.run/instance-name": "demo",
                    "applyset.kubernetes.io/part-of": "applyset-x-v1",
                    "app.kubernetes.io/managed-by": "kro",
                },
                "annotations": {
                    "internal.kro.run/apply-order": "1",
                    "internal.kro.run/lifecycle-policy": "retain",
                    "team": "a/b~c",
                },
                "managedFields": [
                    {"manager": "kro.run/applyset", "operation": "Apply"},
                    {"manager": "kubectl-edit", "operation": "Update"},
                    {"manager": "kro.run/labeller", "operation": "Apply"},
                ],
            }
        });
        let patch = release_patch(&object).expect("a patch");
        let mut released = object.clone();
        for operation in patch.as_array().expect("a list") {
            let path = operation["path"].as_str().expect("a path");
            match operation["op"].as_str() {
                Some("test") => assert_eq!(released.pointer(path), Some(&operation["value"])),
                Some("remove") => {
                    let (parent, key) = path.rsplit_once('/').expect("a parent");
                    let key = key.replace("~1", "/").replace("~0", "~");
                    released
                        .pointer_mut(parent)
                        .and_then(Json::as_object_mut)
                        .and_then(|map| map.remove(&key))
                        .expect("removes a present key");
                }
                Some("replace") => {
                    *released.pointer_mut(path).expect("present") = operation["value"].clone();
                }
                other => panic!("unexpected op {other:?}"),
            }
        }
        assert_eq!(released["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(
            released["metadata"]["annotations"],
            json!({"team": "a/b~c"})
        );
        assert_eq!(
            released["metadata"]["managedFields"],
            json!([{"manager": "kubectl-edit", "operation": "Update"}])
        );
    }

    #[test]
    fn a_managed_by_label_that_is_not_kros_stays_and_nothing_to_do_is_no_patch() {
        let object = json!({"metadata": {"resourceVersion": "1",
            "labels": {"app.kubernetes.io/managed-by": "helm"},
            "managedFields": [{"manager": "helm", "operation": "Update"}]}});
        assert_eq!(release_patch(&object), None);
    }
}
