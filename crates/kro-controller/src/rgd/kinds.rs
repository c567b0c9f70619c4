//! The kind stages of an RGD reconcile: the CRD of its kind (created or updated unless kro
//! must refuse to, then waited for until Established), its `<Kind>Set` CRD and controller
//! when it has `spec.scaling`, and the watch that brings back a generated CRD edited or
//! deleted behind kro's back.

use std::sync::Arc;

use futures_util::StreamExt;
use kro_graph::metadata::{CRD_MANAGER, OWNED_LABEL, RGD_NAME_LABEL};
use kro_graph::{CompiledGraph, KindNames, Scope};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value as Json;

use super::{Concluded, Progress, RgdController};
use crate::crd_plan::{CrdPlan, RgdIdentity, allows_breaking_changes, desired_crd, plan_crd};
use crate::error::{ReconcileError, Request};
use crate::established::wait_established;
use crate::events::EventType;
use crate::object::Object;
use crate::object_json::{text, to_json};
use crate::queue::WorkQueue;
use crate::rgd_crd::crd_resource;
use crate::rgd_status::{ConditionValue, Truth, kind_ready};
use crate::set::SetController;
use kro_engine::kinds::ServedKind;

/// Watches the CRDs kro generates (`kro.run/owned=true`) and queues the RGD each names
/// (`kro.run/resource-graph-definition-name`) when one changes or goes: its reconcile writes
/// the CRD back to what the RGD generates, or creates it again (upstream watches them too,
/// since its #1029). kro's own writes come back as one more reconcile that finds the CRD
/// current and writes nothing.
pub(super) async fn watch_generated_crds(client: kube::Client, queue: WorkQueue<String>) {
    let crds: Api<DynamicObject> = Api::all_with(client, &crd_resource());
    let config = watcher::Config::default().labels(&format!("{OWNED_LABEL}=true"));
    let watch = watcher::watcher(crds, config).backoff(crate::watches::WatchBackoff::default());
    let mut watch = std::pin::pin!(watch);
    while let Some(event) = watch.next().await {
        match event {
            Ok(Event::Apply(crd) | Event::Delete(crd)) => {
                let owner = crd
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(RGD_NAME_LABEL));
                if let Some(rgd) = owner {
                    tracing::debug!(crd = ?crd.metadata.name, %rgd, "generated CRD changed");
                    queue.add(rgd.clone());
                }
            }
            // A (re-)list queues nothing: the RGD watch's own list queues every RGD.
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "generated CRD watch failed; retrying"),
        }
    }
}

impl RgdController {
    /// Stage 4, for an RGD with `spec.scaling`: the `<Kind>Set` CRD (the same rules as the
    /// instance CRD) and its controller; without `spec.scaling`, no Set controller runs.
    /// `KindReady` says whether the Set kind is served.
    pub(super) async fn run_set_controller(
        &self,
        name: &str,
        rgd: &Object,
        set: Option<(Json, KindNames)>,
        identity: &RgdIdentity,
        progress: &mut Progress,
    ) -> Result<Concluded, ReconcileError> {
        let Some((crd, names)) = set else {
            self.stop_set_controller(name).await;
            return Ok(Concluded::Done);
        };
        let desired = desired_crd(&crd, identity, &self.shared.settings.kro_version);
        if let Some(problem) = self.write_crd(name, rgd, &desired).await? {
            progress.kind_ready = ConditionValue::fails(
                "SetKindNotReady",
                format!("the {} kind: {problem}", names.kind),
            );
            self.stop_set_controller(name).await;
            return Ok(Concluded::Done);
        }
        let served = served_kind(&names);
        self.shared.kinds.insert(served.clone());
        let Some(instances) = self.controllers.lock().await.get(name).cloned() else {
            return Ok(Concluded::Done);
        };
        let current = self
            .sets
            .lock()
            .await
            .get(name)
            .is_some_and(|(set, listened)| {
                set.kind.resource == served.resource && Arc::ptr_eq(listened, &instances)
            });
        if !current {
            // The old one stops first (with no guard held while it does): its watches of the
            // same group-kind would otherwise end the new one's.
            self.stop_set_controller(name).await;
            let set = SetController::start(&self.shared, served, &instances);
            self.sets
                .lock()
                .await
                .insert(name.to_owned(), (set, instances));
        }
        progress.kind_ready.message = format!(
            "{}; kind {} is served and its Sets are reconciled",
            progress.kind_ready.message, names.kind
        );
        Ok(Concluded::Done)
    }

    /// Stops the `<Kind>Set` controller of the RGD `name`, if one runs (no guard is held while
    /// it stops).
    pub(super) async fn stop_set_controller(&self, name: &str) {
        let removed = self.sets.lock().await.remove(name);
        if let Some((set, instances)) = removed {
            set.stop(&instances).await;
        }
    }

    /// Stage 2: creates or updates the kind's CRD (unless kro must refuse to) and waits until
    /// it is Established. `false` when the kind is not ready (`KindReady` says why).
    pub(super) async fn ensure_crd(
        &self,
        name: &str,
        rgd: &Object,
        graph: &CompiledGraph,
        identity: &RgdIdentity,
        progress: &mut Progress,
    ) -> Result<bool, ReconcileError> {
        let desired = desired_crd(&graph.crd, identity, &self.shared.settings.kro_version);
        progress.kind_ready = match self.write_crd(name, rgd, &desired).await? {
            None => kind_ready(&graph.names.kind),
            Some(problem) => ConditionValue::fails("Failed", problem),
        };
        Ok(progress.kind_ready.status == Truth::True)
    }

    /// Creates or updates the CRD `desired` (unless kro must refuse to) and waits until it is
    /// Established. `Some(why)` when it is not served.
    pub(super) async fn write_crd(
        &self,
        name: &str,
        rgd: &Object,
        desired: &Json,
    ) -> Result<Option<String>, ReconcileError> {
        let crd_name = text(desired, "/metadata/name").to_owned();
        let crds: Api<DynamicObject> = Api::all_with(self.shared.client.clone(), &crd_resource());
        let existing = crds
            .get_opt(&crd_name)
            .await
            .map_err(ReconcileError::api(Request::ReadCrd))?;
        let existing = existing.as_ref().map(to_json).transpose()?;
        let refusal = match plan_crd(
            existing.as_ref(),
            desired,
            allows_breaking_changes(rgd.meta()),
        ) {
            CrdPlan::Refuse(refusal) => Some(refusal),
            CrdPlan::Create | CrdPlan::Update { .. } => {
                crds.patch(
                    &crd_name,
                    &PatchParams::apply(CRD_MANAGER).force(),
                    &Patch::Apply(desired),
                )
                .await
                .map_err(ReconcileError::api(Request::WriteCrd))?;
                self.shared.kinds.forget_group(text(desired, "/spec/group"));
                tracing::info!(rgd = %name, crd = %crd_name, "CRD written");
                self.shared
                    .events
                    .record(
                        rgd,
                        EventType::Normal,
                        "CRDWritten",
                        &format!("wrote CRD {crd_name}"),
                    )
                    .await;
                None
            }
            CrdPlan::Unchanged => None,
        };
        Ok(match refusal {
            Some(refusal) => {
                let message = refusal.to_string();
                self.shared
                    .events
                    .record(rgd, EventType::Warning, "CRDRefused", &message)
                    .await;
                Some(message)
            }
            None => match wait_established(&crds, &crd_name).await {
                Ok(()) => {
                    tracing::debug!(crd = %crd_name, "CRD established");
                    None
                }
                Err(error) => Some(error.to_string()),
            },
        })
    }
}

/// The kind a generated CRD serves.
pub(super) fn served_kind(names: &KindNames) -> ServedKind {
    ServedKind {
        resource: ApiResource {
            group: names.group.clone(),
            version: names.version.clone(),
            api_version: if names.group.is_empty() {
                names.version.clone()
            } else {
                format!("{}/{}", names.group, names.version)
            },
            kind: names.kind.clone(),
            plural: names.plural.clone(),
        },
        namespaced: names.scope == Scope::Namespaced,
    }
}
