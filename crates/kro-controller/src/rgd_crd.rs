//! Installing the CustomResourceDefinition of ResourceGraphDefinitions themselves when the
//! API server does not serve it yet. The CRD is `kro_graph::resource_graph_definition_crd`,
//! which lives beside the API types it is tested against.

use kro_graph::metadata::{CRD_MANAGER, RGD_CRD_NAME};
use kro_graph::resource_graph_definition_crd;
use kube::api::{Api, DynamicObject, Patch, PatchParams};

use crate::established::wait_established;
use crate::rgd::crd_resource;

/// Makes sure the API server serves ResourceGraphDefinitions: creates their CRD when it does
/// not exist and waits until it is Established.
///
/// # Errors
/// When the CRD cannot be created or read, or is not Established in time.
pub async fn install_rgd_crd(client: &kube::Client) -> Result<(), crate::StartError> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let name = RGD_CRD_NAME;
    let found = crds
        .get_opt(name)
        .await
        .map_err(crate::StartError::InstallCrd)?;
    if found.is_none() {
        crds.patch(
            name,
            &PatchParams::apply(CRD_MANAGER).force(),
            &Patch::Apply(&resource_graph_definition_crd()),
        )
        .await
        .map_err(crate::StartError::InstallCrd)?;
        tracing::info!(crd = name, "installed the ResourceGraphDefinition CRD");
    }
    wait_established(&crds, name)
        .await
        .map_err(crate::StartError::NotEstablished)
}
