//! What the ResourceGraphDefinition controller does with the CRD of its kind: the CRD it wants
//! (the compiled one with kro's ownership labels), and whether to create it, update it, leave
//! it, or refuse — a CRD kro does not own, one another RGD owns, or a breaking schema change
//! the RGD does not allow (`kro.run/allow-breaking-changes: "true"`). A CRD of the same RGD
//! name with another UID (the RGD was deleted and created again) is adopted, as upstream does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kro_graph::metadata::{
    ALLOW_BREAKING_CHANGES_ANNOTATION, KRO_VERSION_LABEL, OWNED_LABEL, RGD_ID_LABEL, RGD_NAME_LABEL,
};
use kro_graph::{SchemaChanges, compare_crds};
use serde_json::{Value as Json, json};

/// The RGD a CRD belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgdIdentity {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

/// Whether the RGD allows breaking changes to its CRD (the annotation is exactly `"true"`).
pub fn allows_breaking_changes(rgd: &ObjectMeta) -> bool {
    rgd.annotations
        .as_ref()
        .and_then(|annotations| annotations.get(ALLOW_BREAKING_CHANGES_ANNOTATION))
        .map(String::as_str)
        == Some("true")
}

/// The CRD to apply: the compiled one with the ownership labels.
pub fn desired_crd(compiled: &Json, rgd: &RgdIdentity, kro_version: &str) -> Json {
    let mut crd = compiled.clone();
    if !crd.get("metadata").is_some_and(Json::is_object) {
        crd["metadata"] = json!({});
    }
    if !crd["metadata"].get("labels").is_some_and(Json::is_object) {
        crd["metadata"]["labels"] = json!({});
    }
    let labels = &mut crd["metadata"]["labels"];
    labels[OWNED_LABEL] = json!("true");
    labels[KRO_VERSION_LABEL] = json!(kro_version);
    labels[RGD_ID_LABEL] = json!(rgd.uid);
    labels[RGD_NAME_LABEL] = json!(rgd.name);
    crd
}

/// What to do with the CRD.
#[derive(Debug, Clone, PartialEq)]
pub enum CrdPlan {
    /// It does not exist: create it.
    Create,
    /// It exists and differs (schema, labels or columns): write it. `adopted` when it came
    /// from an earlier RGD of the same name.
    Update {
        /// The changes (non-breaking, or breaking and allowed).
        changes: SchemaChanges,
        /// Whether the CRD's RGD UID changes hands.
        adopted: bool,
    },
    /// It exists as wanted.
    Unchanged,
    /// It must not be written.
    Refuse(CrdRefusal),
}

/// Why a CRD is not written (the RGD's `KindReady` condition says it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CrdRefusal {
    /// The CRD exists without kro's ownership label.
    #[error("CRD {crd} already exists and is not owned by kro")]
    NotOwned {
        /// The CRD's name.
        crd: String,
    },
    /// Another RGD owns the CRD.
    #[error("CRD {crd} is owned by another ResourceGraphDefinition {owner}")]
    OwnedByAnother {
        /// The CRD's name.
        crd: String,
        /// The other RGD's name.
        owner: String,
    },
    /// The schema change would break existing instances.
    #[error(
        "cannot update CRD {crd}: breaking changes: {summary} (set the annotation kro.run/allow-breaking-changes: \"true\" on the ResourceGraphDefinition to apply them)"
    )]
    Breaking {
        /// The CRD's name.
        crd: String,
        /// The first breaking changes.
        summary: String,
    },
    /// The CRDs cannot be compared (not one version with a schema each).
    #[error("cannot update CRD {crd}: {reason}")]
    Incomparable {
        /// The CRD's name.
        crd: String,
        /// Why.
        reason: String,
    },
}

fn label<'a>(crd: &'a Json, key: &str) -> Option<&'a str> {
    crd.pointer("/metadata/labels")
        .and_then(|labels| labels.get(key))
        .and_then(Json::as_str)
}

/// Decides what to do with the CRD, given the one that exists (if any) and the desired one
/// (from [`desired_crd`]).
pub fn plan_crd(existing: Option<&Json>, desired: &Json, allow_breaking: bool) -> CrdPlan {
    let Some(existing) = existing else {
        return CrdPlan::Create;
    };
    let crd = desired
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    if label(existing, OWNED_LABEL) != Some("true") {
        return CrdPlan::Refuse(CrdRefusal::NotOwned { crd });
    }
    let owner = label(existing, RGD_NAME_LABEL).unwrap_or_default();
    if Some(owner) != label(desired, RGD_NAME_LABEL) {
        return CrdPlan::Refuse(CrdRefusal::OwnedByAnother {
            crd,
            owner: owner.to_owned(),
        });
    }
    let adopted = label(existing, RGD_ID_LABEL) != label(desired, RGD_ID_LABEL);
    let changes = match compare_crds(existing, desired) {
        Ok(changes) => changes,
        Err(error) => {
            return CrdPlan::Refuse(CrdRefusal::Incomparable {
                crd,
                reason: error.to_string(),
            });
        }
    };
    if changes.is_breaking() && !allow_breaking {
        return CrdPlan::Refuse(CrdRefusal::Breaking {
            crd,
            summary: changes.summary(),
        });
    }
    let labels_differ = [OWNED_LABEL, KRO_VERSION_LABEL, RGD_ID_LABEL, RGD_NAME_LABEL]
        .iter()
        .any(|key| label(existing, key) != label(desired, key));
    let spec_differs = ["group", "names", "scope"]
        .iter()
        .any(|field| existing["spec"].get(*field) != desired["spec"].get(*field));
    if changes.is_empty() && !labels_differ && !spec_differs {
        CrdPlan::Unchanged
    } else {
        CrdPlan::Update { changes, adopted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rgd(name: &str, uid: &str) -> RgdIdentity {
        RgdIdentity {
            name: name.to_owned(),
            uid: uid.to_owned(),
        }
    }

    fn compiled(properties: Json) -> Json {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "webapps.kro.run"},
            "spec": {
                "group": "kro.run",
                "names": {"kind": "WebApp", "plural": "webapps"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1alpha1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": properties},
                    }}},
                }],
            },
        })
    }

    #[test]
    fn the_desired_crd_carries_the_ownership_labels() {
        let crd = desired_crd(&compiled(json!({})), &rgd("webapp", "u1"), "0.1.0");
        assert_eq!(
            crd["metadata"]["labels"],
            json!({
                "kro.run/owned": "true",
                "kro.run/kro-version": "0.1.0",
                "kro.run/resource-graph-definition-id": "u1",
                "kro.run/resource-graph-definition-name": "webapp",
            })
        );
    }

    #[test]
    fn missing_crds_are_created_and_identical_ones_left_alone() {
        let desired = desired_crd(&compiled(json!({})), &rgd("webapp", "u1"), "0.1.0");
        assert_eq!(plan_crd(None, &desired, false), CrdPlan::Create);
        assert_eq!(
            plan_crd(Some(&desired), &desired, false),
            CrdPlan::Unchanged
        );
    }

    #[test]
    fn crds_of_others_are_refused() {
        let desired = desired_crd(&compiled(json!({})), &rgd("webapp", "u1"), "0.1.0");
        let foreign = compiled(json!({}));
        assert_eq!(
            plan_crd(Some(&foreign), &desired, true),
            CrdPlan::Refuse(CrdRefusal::NotOwned {
                crd: "webapps.kro.run".to_owned()
            })
        );
        let other = desired_crd(&compiled(json!({})), &rgd("other", "u2"), "0.1.0");
        let refused = plan_crd(Some(&other), &desired, true);
        let CrdPlan::Refuse(refusal) = refused else {
            panic!("refused: {refused:?}");
        };
        assert_eq!(
            refusal.to_string(),
            "CRD webapps.kro.run is owned by another ResourceGraphDefinition other"
        );
    }

    #[test]
    fn a_recreated_rgd_adopts_its_crd() {
        let before = desired_crd(&compiled(json!({})), &rgd("webapp", "old"), "0.1.0");
        let desired = desired_crd(&compiled(json!({})), &rgd("webapp", "new"), "0.1.0");
        assert_eq!(
            plan_crd(Some(&before), &desired, false),
            CrdPlan::Update {
                changes: SchemaChanges::default(),
                adopted: true
            }
        );
    }

    #[test]
    fn breaking_changes_need_the_annotation() {
        let identity = rgd("webapp", "u1");
        let before = desired_crd(
            &compiled(json!({"image": {"type": "string"}, "port": {"type": "integer"}})),
            &identity,
            "0.1.0",
        );
        let after = desired_crd(
            &compiled(json!({"image": {"type": "string"}, "replicas": {"type": "integer"}})),
            &identity,
            "0.1.0",
        );
        let refused = plan_crd(Some(&before), &after, false);
        let CrdPlan::Refuse(refusal) = refused else {
            panic!("refused: {refused:?}");
        };
        assert_eq!(
            refusal.to_string(),
            "cannot update CRD webapps.kro.run: breaking changes: Property port was removed (set the annotation kro.run/allow-breaking-changes: \"true\" on the ResourceGraphDefinition to apply them)"
        );
        let CrdPlan::Update { changes, adopted } = plan_crd(Some(&before), &after, true) else {
            panic!("allowed");
        };
        assert!(changes.is_breaking() && !adopted);
        // Adding an optional field is an update without the annotation.
        let grown = desired_crd(
            &compiled(json!({
                "image": {"type": "string"}, "port": {"type": "integer"}, "tier": {"type": "string"},
            })),
            &identity,
            "0.1.0",
        );
        assert!(matches!(
            plan_crd(Some(&before), &grown, false),
            CrdPlan::Update { adopted: false, .. }
        ));
    }

    #[test]
    fn the_annotation_must_be_exactly_true() {
        let annotated = |value: &str| ObjectMeta {
            annotations: Some(
                [(
                    "kro.run/allow-breaking-changes".to_owned(),
                    value.to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        };
        assert!(allows_breaking_changes(&annotated("true")));
        assert!(!allows_breaking_changes(&annotated("True")));
        assert!(!allows_breaking_changes(&ObjectMeta::default()));
    }

    #[test]
    fn a_new_kro_version_relabels_the_crd() {
        let before = desired_crd(&compiled(json!({})), &rgd("webapp", "u1"), "0.1.0");
        let after = desired_crd(&compiled(json!({})), &rgd("webapp", "u1"), "0.2.0");
        assert!(matches!(
            plan_crd(Some(&before), &after, false),
            CrdPlan::Update { adopted: false, .. }
        ));
    }
}
