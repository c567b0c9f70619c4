//! An RGD being deleted: it waits for its instances to go, stops its controllers, deletes the
//! CRDs kro made for it (when allowed) and removes its finalizer.

use std::time::Duration;

use kro_graph::metadata::{self, FINALIZER};
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

use super::{RgdController, condition_of, rgd_resource};
use crate::error::{ReconcileError, Request};
use crate::events::EventType;
use crate::object::Object;
use crate::rgd_crd::crd_resource;
use crate::rgd_status::{ConditionValue, RgdObservation};

impl RgdController {
    /// An RGD being deleted: waits for its instances, then stops its controller and lets go.
    pub(super) async fn delete(
        &self,
        name: &str,
        rgd: &Object,
    ) -> Result<Option<Duration>, ReconcileError> {
        let cleanup = std::time::Instant::now();
        let running = self.controllers.lock().await.get(name).cloned();
        if let Some(controller) = &running {
            let _ = controller.store.wait_until_ready().await;
            let instances = controller.store.state().len();
            if instances > 0 {
                let message = format!(
                    "waiting for {instances} instance(s) of {} to be deleted before the ResourceGraphDefinition is removed",
                    controller.kind.resource.kind
                );
                tracing::info!(rgd = %name, "{message}");
                self.shared
                    .events
                    .record(rgd, EventType::Normal, "WaitingForInstances", &message)
                    .await;
                let observation = RgdObservation {
                    generation: rgd.generation(),
                    graph: None,
                    graph_revisions: condition_of(rgd.json(), "GraphRevisionsResolved"),
                    last_issued_revision: 0,
                    graph_accepted: condition_of(rgd.json(), "GraphAccepted"),
                    kind_ready: condition_of(rgd.json(), "KindReady"),
                    controller_ready: ConditionValue::fails("Deleting", message),
                    propagated: crate::rgd_status::Propagated::Absent,
                };
                self.write_status(name, rgd, &observation).await?;
                return Ok(Some(self.shared.settings.deletion_poll));
            }
        }
        self.stop_set_controller(name).await;
        self.stop_instance_controller(name).await;
        if self.shared.settings.allow_crd_deletion {
            self.delete_crds(name).await?;
        }
        if let Ok(mut reviewed) = self.reviewed.lock() {
            reviewed.remove(name);
        }
        self.delete_revisions(rgd).await?;
        let patch = json!({"metadata": {
            "finalizers": rgd.finalizers_without(FINALIZER),
            "resourceVersion": rgd.resource_version(),
        }});
        let api: Api<DynamicObject> = Api::all_with(self.shared.client.clone(), &rgd_resource());
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(ReconcileError::api(Request::RemoveFinalizer))?;
        self.shared
            .metrics
            .rgds()
            .deleted(name, cleanup.elapsed().as_secs_f64());
        Ok(None)
    }

    /// Deletes the RGD's GraphRevisions, as the garbage collector would once the RGD is gone
    /// (their owner references name it), so that none outlives it on a cluster whose garbage
    /// collector is slow or absent, where the next controller to start would find a history
    /// without its RGD. An RGD deleted with `--cascade=orphan` (the `orphan` finalizer) keeps
    /// them, for an RGD of the same name to adopt.
    async fn delete_revisions(&self, rgd: &Object) -> Result<(), ReconcileError> {
        if rgd.has_finalizer("orphan") {
            return Ok(());
        }
        let lineage = self
            .revisions
            .lineage(rgd.name(), rgd.uid())
            .await
            .map_err(ReconcileError::api(Request::ListGraphRevisions))?;
        for revision in lineage.live.iter().filter(|revision| revision.owned) {
            self.revisions
                .delete(&revision.name)
                .await
                .map_err(ReconcileError::api(Request::WriteGraphRevision))?;
        }
        Ok(())
    }

    /// Deletes the CRDs kro made for the RGD `name` (labelled with its name and owned by kro):
    /// its kind's and its `<Kind>Set`'s. Their custom resources go with them.
    async fn delete_crds(&self, name: &str) -> Result<(), ReconcileError> {
        let crds: Api<DynamicObject> = Api::all_with(self.shared.client.clone(), &crd_resource());
        let selector = format!(
            "{}={name},{}=true",
            metadata::RGD_NAME_LABEL,
            metadata::OWNED_LABEL
        );
        let owned = crds
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(ReconcileError::api(Request::DeleteCrd))?;
        for crd in owned {
            let Some(crd_name) = crd.metadata.name else {
                continue;
            };
            match crds.delete(&crd_name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(rgd = %name, crd = %crd_name, "CRD deleted"),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(ReconcileError::api(Request::DeleteCrd)(error)),
            }
        }
        Ok(())
    }
}
