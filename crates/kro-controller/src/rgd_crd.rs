//! The CustomResourceDefinition of ResourceGraphDefinitions themselves (`kro.run/v1alpha1`),
//! which the controller installs when the API server does not serve it yet.
//!
//! The schema checks the shape the API server can check (the required fields and their
//! types) and leaves the free-form parts (`schema.spec`, templates, data) open; the controller
//! checks everything else when it compiles the RGD and reports it in `GraphAccepted`.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value as Json, json};

use crate::established::wait_established;
use crate::rgd::{CRD_MANAGER, crd_resource};

/// The CRD's name.
pub const RGD_CRD_NAME: &str = "resourcegraphdefinitions.kro.run";

/// An object whose fields are not checked.
fn open_object() -> Json {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

fn strings() -> Json {
    json!({"type": "array", "items": {"type": "string"}})
}

/// The ResourceGraphDefinition CRD.
pub fn resource_graph_definition_crd() -> Json {
    let resource = json!({
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "template": open_object(),
            "externalRef": open_object(),
            "data": {"x-kubernetes-preserve-unknown-fields": true},
            "readyWhen": strings(),
            "includeWhen": strings(),
            "forEach": {"x-kubernetes-preserve-unknown-fields": true},
        },
    });
    let schema = json!({
        "type": "object",
        "required": ["apiVersion", "kind"],
        "properties": {
            "apiVersion": {"type": "string", "minLength": 1},
            "kind": {"type": "string", "minLength": 1},
            "group": {"type": "string"},
            "scope": {"type": "string", "enum": ["Namespaced", "Cluster"]},
            "spec": open_object(),
            "status": open_object(),
            "types": open_object(),
            "additionalPrinterColumns": {"type": "array", "items": open_object()},
            "shortNames": strings(),
            "categories": strings(),
            "metadata": open_object(),
        },
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": RGD_CRD_NAME},
        "spec": {
            "group": "kro.run",
            "scope": "Cluster",
            "names": {
                "kind": "ResourceGraphDefinition",
                "listKind": "ResourceGraphDefinitionList",
                "plural": "resourcegraphdefinitions",
                "singular": "resourcegraphdefinition",
                "shortNames": ["rgd"],
                "categories": ["kro"],
            },
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "APIVERSION", "type": "string", "jsonPath": ".spec.schema.apiVersion"},
                    {"name": "KIND", "type": "string", "jsonPath": ".spec.schema.kind"},
                    {"name": "STATE", "type": "string", "jsonPath": ".status.state"},
                    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {
                            "type": "object",
                            "required": ["schema"],
                            "properties": {
                                "schema": schema,
                                "resources": {"type": "array", "items": resource},
                                "scaling": open_object(),
                            },
                        },
                        "status": open_object(),
                    },
                }},
            }],
        },
    })
}

/// Makes sure the API server serves ResourceGraphDefinitions: creates their CRD when it does
/// not exist and waits until it is Established.
///
/// # Errors
/// When the CRD cannot be created or read, or is not Established in time.
pub async fn install_rgd_crd(client: &kube::Client) -> Result<(), crate::StartError> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let name = crate::rgd_crd::RGD_CRD_NAME;
    if crds.get_opt(name).await?.is_none() {
        crds.patch(
            name,
            &PatchParams::apply(CRD_MANAGER).force(),
            &Patch::Apply(&crate::rgd_crd::resource_graph_definition_crd()),
        )
        .await?;
        tracing::info!(crd = name, "installed the ResourceGraphDefinition CRD");
    }
    wait_established(&crds, name)
        .await
        .map_err(crate::StartError::NotEstablished)
}
