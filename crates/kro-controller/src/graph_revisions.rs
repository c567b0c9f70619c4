//! Upstream kro's GraphRevisions (`internal.kro.run/v1alpha1`), found on a cluster that ran
//! upstream kro before this controller.
//!
//! Upstream snapshots every RGD spec it accepts into a GraphRevision, owned by the RGD, and
//! holds each with the finalizer `kro.run/finalizer` until its own GraphRevision controller
//! lets go. This controller compiles RGDs directly and does not use them, but leaves them in
//! place, so that upstream finds its history if it takes over again. What it must not do is
//! leave one stuck: once a GraphRevision is being deleted (its RGD was deleted and the
//! garbage collector followed the owner reference, or someone deleted it), the finalizer is
//! removed here, as upstream's controller would.
//!
//! The watch starts only when the server serves GraphRevisions (one read of their CRD at
//! start), so clusters that never ran upstream cost nothing.

use futures_util::StreamExt;
use kro_graph::metadata::FINALIZER;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::rgd_crd::crd_resource;

/// The CRD of upstream's GraphRevisions.
pub(crate) const GRAPH_REVISION_CRD: &str = "graphrevisions.internal.kro.run";

/// Upstream's GraphRevision resource.
fn graph_revision_resource() -> ApiResource {
    ApiResource {
        group: "internal.kro.run".to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: "internal.kro.run/v1alpha1".to_owned(),
        kind: "GraphRevision".to_owned(),
        plural: "graphrevisions".to_owned(),
    }
}

/// Starts releasing GraphRevisions that are being deleted, when the server serves them;
/// `None` when it does not (or this controller may not read their CRD, which is logged).
pub(crate) async fn release_when_deleted(client: &kube::Client) -> Option<JoinHandle<()>> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    match crds.get_opt(GRAPH_REVISION_CRD).await {
        Ok(Some(_)) => {}
        Ok(None) => return None,
        Err(error) => {
            tracing::warn!(
                crd = GRAPH_REVISION_CRD,
                %error,
                "cannot tell whether upstream kro's GraphRevisions are served; a GraphRevision deleted later may keep its finalizer"
            );
            return None;
        }
    }
    tracing::info!(
        "upstream kro's GraphRevisions are served: releasing the finalizer of any that is deleted"
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &graph_revision_resource());
    Some(tokio::spawn(release(api)))
}

async fn release(api: Api<DynamicObject>) {
    let mut events = watcher::watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Apply(revision) | Event::InitApply(revision)) => {
                release_one(&api, &revision).await;
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "watching upstream kro's GraphRevisions");
            }
        }
    }
}

/// Removes kro's finalizer from `revision` when it is being deleted. A conflict (the object
/// changed meanwhile) is left to the next event.
async fn release_one(api: &Api<DynamicObject>, revision: &DynamicObject) {
    let metadata = &revision.metadata;
    let finalizers = metadata.finalizers.as_deref().unwrap_or_default();
    if metadata.deletion_timestamp.is_none() || !finalizers.iter().any(|f| f == FINALIZER) {
        return;
    }
    let Some(name) = metadata.name.as_deref() else {
        return;
    };
    let remaining: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
    let patch = json!({
        "metadata": {
            "finalizers": remaining,
            "resourceVersion": metadata.resource_version,
        }
    });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => tracing::info!(
            graph_revision = name,
            "released the finalizer of a deleted upstream GraphRevision"
        ),
        Err(error) => tracing::debug!(
            graph_revision = name,
            %error,
            "could not release a deleted upstream GraphRevision yet"
        ),
    }
}
