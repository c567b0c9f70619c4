//! An instance as the parent of an ApplySet (KEP-3659), with upstream kro's keys: the
//! `applyset.kubernetes.io/id` label, the tooling, group-kinds and additional-namespaces
//! annotations, and kro's inventory hash, which guards the inventory deletion trusts: an
//! instance is deleted from its annotations alone (no CEL, no RGD), so they must be whole.

use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kro_schema::GroupKind;
use serde_json::{Map, Value as Json, json};
use sha2::{Digest, Sha256};

use crate::metadata::{
    APPLYSET_GROUP_KINDS_ANNOTATION, APPLYSET_ID_LABEL, APPLYSET_INVENTORY_HASH_ANNOTATION,
    APPLYSET_NAMESPACES_ANNOTATION, APPLYSET_TOOLING_ANNOTATION, applyset_id,
};

/// What kinds and namespaces an instance's members may be found in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Every member kind.
    pub group_kinds: BTreeSet<GroupKind>,
    /// Namespaces of members outside the parent's namespace.
    pub namespaces: BTreeSet<String>,
}

/// A parent's ApplySet metadata that cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
    /// The id label is not the parent's.
    #[error("invalid {APPLYSET_ID_LABEL} label: got {actual:?}, want {expected:?}")]
    WrongId {
        /// What the label says.
        actual: String,
        /// What it should say.
        expected: String,
    },
    /// The tooling annotation is missing or names another tool.
    #[error("invalid {APPLYSET_TOOLING_ANNOTATION} annotation: {0:?} is not owned by kro")]
    ForeignTooling(String),
    /// A required annotation is missing.
    #[error("missing required {0} annotation")]
    Missing(&'static str),
    /// An annotation does not parse.
    #[error("invalid {annotation} annotation: {problem}")]
    Malformed {
        /// Which annotation.
        annotation: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The hash does not match the inventory.
    #[error(
        "invalid {APPLYSET_INVENTORY_HASH_ANNOTATION} annotation: got {actual:?}, want {expected:?}"
    )]
    WrongHash {
        /// What the annotation says.
        actual: String,
        /// What the inventory hashes to.
        expected: String,
    },
}

/// A DNS-1123 subdomain (an API group): dot-separated DNS labels, 253 characters at most.
fn is_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(kro_graph::is_dns_label)
}

impl Inventory {
    /// The `contains-group-kinds` value: `Kind` or `Kind.group`, sorted, comma-separated.
    pub fn group_kinds_value(&self) -> String {
        let mut values: Vec<String> = self.group_kinds.iter().map(GroupKind::to_string).collect();
        values.sort();
        values.join(",")
    }

    /// The `additional-namespaces` value: sorted, comma-separated.
    pub fn namespaces_value(&self) -> String {
        self.namespaces
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    }

    /// kro's inventory hash for the ApplySet `id`:
    /// `sha256:<base64url(sha256(id NUL group-kinds NUL namespaces))>`.
    pub fn hash(&self, id: &str) -> String {
        let payload = [id, &self.group_kinds_value(), &self.namespaces_value()].join("\0");
        format!(
            "sha256:{}",
            URL_SAFE_NO_PAD.encode(Sha256::digest(payload.as_bytes()))
        )
    }

    /// Reads an inventory from a parent's annotations.
    ///
    /// # Errors
    /// When an entry is not a group-kind or a namespace.
    pub fn parse(group_kinds: &str, namespaces: &str) -> Result<Self, InventoryError> {
        let mut inventory = Inventory::default();
        let malformed = |annotation, problem: String| InventoryError::Malformed {
            annotation,
            problem,
        };
        if !group_kinds.is_empty() {
            for entry in group_kinds.split(',').map(str::trim) {
                if entry.is_empty() {
                    return Err(malformed(
                        APPLYSET_GROUP_KINDS_ANNOTATION,
                        "contains an empty group-kind".to_owned(),
                    ));
                }
                let (kind, group) = entry.split_once('.').unwrap_or((entry, ""));
                if kind.is_empty() || kind.contains(char::is_whitespace) {
                    return Err(malformed(
                        APPLYSET_GROUP_KINDS_ANNOTATION,
                        format!("invalid kind {kind:?}"),
                    ));
                }
                if entry.contains('.') && !is_subdomain(group) {
                    return Err(malformed(
                        APPLYSET_GROUP_KINDS_ANNOTATION,
                        format!("invalid group {group:?}"),
                    ));
                }
                inventory.group_kinds.insert(GroupKind::new(group, kind));
            }
        }
        if !namespaces.is_empty() {
            for entry in namespaces.split(',').map(str::trim) {
                if !kro_graph::is_dns_label(entry) {
                    return Err(malformed(
                        APPLYSET_NAMESPACES_ANNOTATION,
                        format!("invalid namespace {entry:?}"),
                    ));
                }
                inventory.namespaces.insert(entry.to_owned());
            }
        }
        Ok(inventory)
    }
}

/// The ApplySet identity of an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'a> {
    /// The instance's name.
    pub name: &'a str,
    /// The instance's namespace (empty for cluster-scoped kinds).
    pub namespace: &'a str,
    /// The instance's kind.
    pub kind: &'a str,
    /// The instance's API group.
    pub group: &'a str,
}

impl Parent<'_> {
    /// The ApplySet id.
    pub fn id(&self) -> String {
        applyset_id(self.name, self.namespace, self.kind, self.group)
    }

    /// The parent metadata for `inventory` (a server-side apply body's `metadata`): the id
    /// label and the four annotations.
    pub fn metadata(&self, inventory: &Inventory, kro_version: &str) -> Json {
        let id = self.id();
        json!({
            "labels": {APPLYSET_ID_LABEL: id},
            "annotations": {
                APPLYSET_TOOLING_ANNOTATION: format!("kro/{kro_version}"),
                APPLYSET_GROUP_KINDS_ANNOTATION: inventory.group_kinds_value(),
                APPLYSET_NAMESPACES_ANNOTATION: inventory.namespaces_value(),
                APPLYSET_INVENTORY_HASH_ANNOTATION: inventory.hash(&id),
            },
        })
    }

    /// Reads and checks the inventory an instance carries, before deletion trusts it. A
    /// parent from an earlier kro without the hash is accepted.
    ///
    /// # Errors
    /// [`InventoryError`] naming the label or annotation at fault.
    pub fn inventory(
        &self,
        labels: &Map<String, Json>,
        annotations: &Map<String, Json>,
    ) -> Result<Inventory, InventoryError> {
        let text = |map: &Map<String, Json>, key: &str| {
            map.get(key).and_then(Json::as_str).map(str::to_owned)
        };
        let expected = self.id();
        let actual = text(labels, APPLYSET_ID_LABEL).unwrap_or_default();
        if actual != expected {
            return Err(InventoryError::WrongId { actual, expected });
        }
        let tooling = text(annotations, APPLYSET_TOOLING_ANNOTATION).unwrap_or_default();
        if !tooling.starts_with("kro/") {
            return Err(InventoryError::ForeignTooling(tooling));
        }
        let group_kinds = text(annotations, APPLYSET_GROUP_KINDS_ANNOTATION)
            .ok_or(InventoryError::Missing(APPLYSET_GROUP_KINDS_ANNOTATION))?;
        let namespaces = text(annotations, APPLYSET_NAMESPACES_ANNOTATION)
            .ok_or(InventoryError::Missing(APPLYSET_NAMESPACES_ANNOTATION))?;
        let inventory = Inventory::parse(&group_kinds, &namespaces)?;
        if let Some(actual) = text(annotations, APPLYSET_INVENTORY_HASH_ANNOTATION) {
            let expected = inventory.hash(&expected);
            if actual != expected {
                return Err(InventoryError::WrongHash { actual, expected });
            }
        }
        Ok(inventory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Parent<'static> {
        Parent {
            name: "shop",
            namespace: "team",
            kind: "WebApp",
            group: "kro.run",
        }
    }

    fn inventory() -> Inventory {
        Inventory {
            group_kinds: [
                GroupKind::new("apps", "Deployment"),
                GroupKind::new("", "Service"),
                GroupKind::new("", "ConfigMap"),
            ]
            .into_iter()
            .collect(),
            namespaces: ["shared".to_owned(), "edge".to_owned()]
                .into_iter()
                .collect(),
        }
    }

    fn maps(metadata: &Json) -> (Map<String, Json>, Map<String, Json>) {
        let get = |key: &str| metadata[key].as_object().cloned().unwrap_or_default();
        (get("labels"), get("annotations"))
    }

    #[test]
    fn parent_metadata_lists_sorted_group_kinds_namespaces_and_the_hash() {
        let metadata = parent().metadata(&inventory(), "0.1.0");
        let annotations = &metadata["annotations"];
        assert_eq!(
            annotations[APPLYSET_GROUP_KINDS_ANNOTATION],
            "ConfigMap,Deployment.apps,Service"
        );
        assert_eq!(annotations[APPLYSET_NAMESPACES_ANNOTATION], "edge,shared");
        assert_eq!(annotations[APPLYSET_TOOLING_ANNOTATION], "kro/0.1.0");
        let id = parent().id();
        assert_eq!(metadata["labels"][APPLYSET_ID_LABEL], json!(id));
        // The hash is over the id and both lists, NUL-separated.
        let payload = format!("{id}\0ConfigMap,Deployment.apps,Service\0edge,shared");
        let expected = format!(
            "sha256:{}",
            URL_SAFE_NO_PAD.encode(Sha256::digest(payload.as_bytes()))
        );
        assert_eq!(
            annotations[APPLYSET_INVENTORY_HASH_ANNOTATION],
            json!(expected)
        );
    }

    #[test]
    fn written_inventories_read_back_and_tampering_is_caught() {
        let metadata = parent().metadata(&inventory(), "0.1.0");
        let (labels, annotations) = maps(&metadata);
        assert_eq!(parent().inventory(&labels, &annotations), Ok(inventory()));

        let mut edited = annotations.clone();
        edited.insert(
            APPLYSET_GROUP_KINDS_ANNOTATION.to_owned(),
            json!("ConfigMap,Service"),
        );
        assert!(matches!(
            parent().inventory(&labels, &edited),
            Err(InventoryError::WrongHash { .. })
        ));

        let mut legacy = annotations.clone();
        legacy.remove(APPLYSET_INVENTORY_HASH_ANNOTATION);
        assert_eq!(parent().inventory(&labels, &legacy), Ok(inventory()));

        let mut foreign = annotations.clone();
        foreign.insert(
            APPLYSET_TOOLING_ANNOTATION.to_owned(),
            json!("kubectl/v1.33"),
        );
        assert_eq!(
            parent().inventory(&labels, &foreign).map_err(|e| e.to_string()),
            Err("invalid applyset.kubernetes.io/tooling annotation: \"kubectl/v1.33\" is not owned by kro".to_owned())
        );

        let other = Parent {
            name: "other",
            ..parent()
        };
        assert!(matches!(
            other.inventory(&labels, &annotations),
            Err(InventoryError::WrongId { .. })
        ));
    }

    #[test]
    fn an_empty_inventory_is_valid_but_its_keys_are_required() {
        let metadata = parent().metadata(&Inventory::default(), "0.1.0");
        let (labels, annotations) = maps(&metadata);
        assert_eq!(
            parent().inventory(&labels, &annotations),
            Ok(Inventory::default())
        );
        let mut missing = annotations.clone();
        missing.remove(APPLYSET_NAMESPACES_ANNOTATION);
        assert_eq!(
            parent().inventory(&labels, &missing),
            Err(InventoryError::Missing(APPLYSET_NAMESPACES_ANNOTATION))
        );
    }

    #[test]
    fn malformed_entries_are_refused_with_the_annotation_named() {
        for (group_kinds, namespaces, problem) in [
            ("ConfigMap,,Service", "", "contains an empty group-kind"),
            ("Deployment.Apps_", "", "invalid group \"Apps_\""),
            (" .apps", "", "invalid kind \"\""),
            ("ConfigMap", "Team", "invalid namespace \"Team\""),
        ] {
            let error = Inventory::parse(group_kinds, namespaces).expect_err(group_kinds);
            assert!(error.to_string().ends_with(problem), "{error}");
        }
    }
}
