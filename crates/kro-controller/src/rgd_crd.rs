//! Bringing the CustomResourceDefinitions of kro's own kinds to the schema this controller
//! needs: ResourceGraphDefinitions (`kro_graph::resource_graph_definition_crd`) and
//! GraphRevisions (`kro_graph::graph_revision_crd`, whose snapshots hold RGD specs, so its
//! schema follows the RGD's). Both live beside the API types they are tested against.
//!
//! A cluster that ran upstream kro has upstream's CRD, installed by Helm from its `crds/`
//! directory and never upgraded: without `data`, the string form of `forEach` or
//! `spec.scaling`, the API server would prune those fields from every RGD written. So the CRD
//! is server-side applied whenever it differs, and where another manager (Helm, kubectl) still
//! owns schema fields that ours does not have, the versions are replaced outright. Stored
//! versions are kept: the CRD serves the same `v1alpha1`, and a stored version this controller
//! would stop serving is refused instead of dropped.

use kro_graph::metadata::{CRD_MANAGER, RGD_CRD_NAME};
use kro_graph::{GRAPH_REVISION_CRD_NAME, graph_revision_crd, resource_graph_definition_crd};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value as Json;

use crate::established::wait_established;

/// Why the controllers could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A CRD of kro's own kinds could not be read or installed.
    #[error("installing the CRD {crd}: {source}")]
    InstallCrd {
        /// The CRD's name.
        crd: &'static str,
        /// What the server answered.
        #[source]
        source: kube::Error,
    },
    /// A CRD of kro's own kinds did not become Established.
    #[error(transparent)]
    NotEstablished(crate::established::EstablishError),
    /// A CRD of kro's own kinds stores objects at a version this controller does not serve;
    /// updating the CRD would strand them.
    #[error(
        "the CRD {crd} stores objects at version {version}, which this controller does not serve: migrate them to v1alpha1 and remove {version} from status.storedVersions first"
    )]
    StoredVersionNotServed {
        /// The CRD's name.
        crd: &'static str,
        /// The stored version.
        version: String,
    },
}

impl StartError {
    /// Whether trying again may succeed: the server was unreachable, overloaded or failing, or
    /// slow to establish the CRD. Refusals (unauthorized, forbidden, invalid) are not.
    pub fn is_transient(&self) -> bool {
        match self {
            StartError::InstallCrd { source, .. }
            | StartError::NotEstablished(crate::established::EstablishError::Read {
                source, ..
            }) => crate::retry::is_transient(source),
            StartError::NotEstablished(_) => true,
            StartError::StoredVersionNotServed { .. } => false,
        }
    }
}

/// Makes sure the API server serves ResourceGraphDefinitions and GraphRevisions with this
/// controller's schemas: creates each CRD when it does not exist, updates it when it differs
/// (keeping its stored versions), and waits until it is Established.
///
/// # Errors
/// When a CRD cannot be read or written, when it stores a version this controller does not
/// serve, or when it is not Established in time.
pub async fn install_kro_crds(client: &kube::Client) -> Result<(), StartError> {
    install_crd(client, RGD_CRD_NAME, &resource_graph_definition_crd()).await?;
    install_crd(client, GRAPH_REVISION_CRD_NAME, &graph_revision_crd()).await
}

async fn install_crd(
    client: &kube::Client,
    name: &'static str,
    desired: &Json,
) -> Result<(), StartError> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let install = |source| StartError::InstallCrd { crd: name, source };
    let found = crds.get_opt(name).await.map_err(install)?;
    match found {
        None => {
            apply(&crds, name, desired).await?;
            tracing::info!(crd = name, "installed the CRD");
        }
        Some(found) => {
            check_stored_versions(name, &found.data, desired)?;
            if !is_current(&found.data, desired) {
                let applied = apply(&crds, name, desired).await?;
                if !same_versions(&applied.data, desired) {
                    // Another field manager still owns parts of the old schema, which a
                    // server-side apply leaves in place: replace the versions wholesale.
                    replace_versions(&crds, name, applied, desired).await?;
                }
                tracing::info!(crd = name, "brought the CRD to this controller's schema");
            }
        }
    }
    wait_established(&crds, name)
        .await
        .map_err(StartError::NotEstablished)
}

async fn apply(
    crds: &Api<DynamicObject>,
    name: &'static str,
    desired: &Json,
) -> Result<DynamicObject, StartError> {
    crds.patch(
        name,
        &PatchParams::apply(CRD_MANAGER).force(),
        &Patch::Apply(desired),
    )
    .await
    .map_err(|source| StartError::InstallCrd { crd: name, source })
}

async fn replace_versions(
    crds: &Api<DynamicObject>,
    name: &'static str,
    mut applied: DynamicObject,
    desired: &Json,
) -> Result<(), StartError> {
    applied.data["spec"]["versions"] = desired["spec"]["versions"].clone();
    applied.metadata.managed_fields = None;
    let params = PostParams {
        field_manager: Some(CRD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    crds.replace(name, &params, &applied)
        .await
        .map_err(|source| StartError::InstallCrd { crd: name, source })?;
    Ok(())
}

/// Refuses a CRD that stores objects at a version `desired` does not serve: updating it would
/// strand them.
fn check_stored_versions(
    crd: &'static str,
    found: &Json,
    desired: &Json,
) -> Result<(), StartError> {
    let served: Vec<&str> = desired["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|version| version["served"] == Json::Bool(true))
        .filter_map(|version| version["name"].as_str())
        .collect();
    let stored = found["status"]["storedVersions"].as_array();
    match stored
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .find(|version| !served.contains(version))
    {
        Some(version) => Err(StartError::StoredVersionNotServed {
            crd,
            version: version.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Whether `found` already is `desired`: every field of the desired spec is there with the
/// same value (the server adds defaults beside them), and the versions, schemas included, are
/// exactly the desired ones (no field of an older schema left over).
fn is_current(found: &Json, desired: &Json) -> bool {
    contains(&found["spec"], &desired["spec"]) && same_versions(found, desired)
}

fn same_versions(found: &Json, desired: &Json) -> bool {
    let versions = |crd: &Json| -> Vec<(Json, Json)> {
        crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|version| (version["name"].clone(), version["schema"].clone()))
            .collect()
    };
    versions(found) == versions(desired)
}

/// Whether `found` holds everything `wanted` says: objects key by key, arrays item by item
/// (of the same length), anything else equal.
fn contains(found: &Json, wanted: &Json) -> bool {
    match (found, wanted) {
        (Json::Object(found), Json::Object(wanted)) => wanted
            .iter()
            .all(|(key, value)| found.get(key).is_some_and(|found| contains(found, value))),
        (Json::Array(found), Json::Array(wanted)) => {
            found.len() == wanted.len()
                && found
                    .iter()
                    .zip(wanted)
                    .all(|(found, wanted)| contains(found, wanted))
        }
        _ => found == wanted,
    }
}

/// The CRD resource.
pub(crate) fn crd_resource() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "apiextensions.k8s.io".to_owned(),
        version: "v1".to_owned(),
        api_version: "apiextensions.k8s.io/v1".to_owned(),
        kind: "CustomResourceDefinition".to_owned(),
        plural: "customresourcedefinitions".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn served(found: Json) -> Json {
        let mut crd = resource_graph_definition_crd();
        crd["status"] = found;
        crd
    }

    #[test]
    fn the_desired_crd_with_server_defaults_is_current() {
        let desired = resource_graph_definition_crd();
        let mut found = desired.clone();
        found["spec"]["conversion"] = json!({"strategy": "None"});
        found["metadata"]["resourceVersion"] = json!("7");
        assert!(is_current(&found, &desired));
    }

    #[test]
    fn a_schema_with_a_field_left_over_or_missing_is_not_current() {
        let desired = resource_graph_definition_crd();
        let mut leftover = desired.clone();
        leftover["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["legacy"] =
            json!({"type": "string"});
        assert!(!is_current(&leftover, &desired));
        let mut missing = desired.clone();
        missing["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
            .as_object_mut()
            .map(|properties| properties.remove("spec"));
        assert!(!is_current(&missing, &desired));
        let mut renamed = desired.clone();
        renamed["spec"]["names"]["shortNames"] = json!(["other"]);
        assert!(!is_current(&renamed, &desired));
    }

    #[test]
    fn a_stored_version_the_controller_does_not_serve_is_refused() {
        let desired = resource_graph_definition_crd();
        assert!(
            check_stored_versions(
                RGD_CRD_NAME,
                &served(json!({"storedVersions": ["v1alpha1"]})),
                &desired
            )
            .is_ok()
        );
        assert!(check_stored_versions(RGD_CRD_NAME, &served(json!({})), &desired).is_ok());
        let error = check_stored_versions(
            RGD_CRD_NAME,
            &served(json!({"storedVersions": ["v1alpha1", "v1beta1"]})),
            &desired,
        )
        .expect_err("v1beta1 is not served");
        assert!(error.to_string().contains("v1beta1"), "{error}");
    }
}
