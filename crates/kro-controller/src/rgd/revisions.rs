//! The GraphRevisions of an RGD reconcile, as upstream kro v0.9.4 resolves them: before the
//! spec is compiled, its revisions are listed and orphans adopted (a revision still being
//! deleted makes the RGD wait); once it compiled, a spec whose hash differs from the latest
//! revision's is issued as the next revision, and the latest one is verified; once the kind
//! is served, revisions beyond `--rgd-max-graph-revisions` are deleted, oldest first.

use std::time::Instant;

use kro_graph::{CompiledGraph, spec_hash};

use super::{Progress, RgdController};
use crate::crd_plan::RgdIdentity;
use crate::error::{ReconcileError, Request};
use crate::graph_revisions::Lineage;
use crate::metrics::RevisionState;
use crate::object::Object;
use crate::rgd_status::{ConditionValue, graph_revisions_resolved};

impl RgdController {
    /// Lists the RGD's revisions and adopts those another RGD of its name left. `None` when a
    /// revision is still being deleted: the RGD waits for it to go (`GraphRevisionsResolved`
    /// says so), as upstream does, so that numbers are never issued under a revision leaving.
    pub(super) async fn lineage(
        &self,
        rgd: &Object,
        identity: &RgdIdentity,
        progress: &mut Progress,
    ) -> Result<Option<Lineage>, ReconcileError> {
        let lineage = self
            .revisions
            .lineage(rgd.name(), rgd.uid())
            .await
            .map_err(ReconcileError::api(Request::ListGraphRevisions))?;
        for orphan in lineage.live.iter().filter(|revision| !revision.owned) {
            self.revisions
                .adopt(orphan, identity)
                .await
                .map_err(ReconcileError::api(Request::WriteGraphRevision))?;
        }
        if lineage.live.is_empty() && !lineage.terminating {
            self.registry.evict_all(rgd.name());
        }
        if lineage.terminating {
            self.shared.metrics.revisions().waited("settling");
            progress.graph_revisions = ConditionValue::unknown(
                "WaitingForGraphRevisionSettlement",
                "waiting for terminating graph revisions to settle",
            );
            progress.resolution = "wait";
            return Ok(None);
        }
        if let Some(latest) = lineage.latest() {
            progress.last_issued_revision = progress.last_issued_revision.max(latest.number);
            if self.registry.get(rgd.name(), latest.number).is_none() {
                // Issued by another controller (upstream, before a switch) or before a restart.
                self.shared
                    .metrics
                    .revisions()
                    .registry_missed("latest_not_warmed");
            }
            // Revisions this controller has not seen are known by what their status says.
            for revision in &lineage.live {
                if self.registry.get(rgd.name(), revision.number).is_none() {
                    let state = if revision.verified {
                        RevisionState::Active
                    } else {
                        RevisionState::Pending
                    };
                    self.registry.put(rgd.name(), revision.number, state);
                }
            }
        }
        Ok(Some(lineage))
    }

    /// Once the spec was compiled (`graph`), or found invalid (`None`): issues the next
    /// revision when the spec differs from the latest one's, or verifies the latest one when
    /// it is this spec and its status does not say so yet. `GraphRevisionsResolved` and the
    /// high-water mark say what it found.
    pub(super) async fn resolve_revisions(
        &self,
        rgd: &Object,
        lineage: &Lineage,
        graph: Option<&CompiledGraph>,
        progress: &mut Progress,
    ) -> Result<(), ReconcileError> {
        let hash = spec_hash(rgd.json().get("spec").unwrap_or(&serde_json::Value::Null));
        let latest = lineage.latest();
        let same_spec = latest.is_some_and(|latest| latest.hash == hash);
        let Some(graph) = graph else {
            progress.resolution = "failed";
            match latest {
                Some(latest) if same_spec => {
                    self.registry
                        .put(rgd.name(), latest.number, RevisionState::Failed);
                    progress.graph_revisions = ConditionValue::fails(
                        "Failed",
                        format!("latest graph revision {} failed compilation", latest.number),
                    );
                }
                // The previous revision keeps serving; no revision is issued for a spec that
                // does not compile.
                Some(latest) => progress.graph_revisions = graph_revisions_resolved(latest.number),
                None => {}
            }
            return Ok(());
        };
        let metrics = self.shared.metrics.revisions();
        match latest {
            Some(latest) if same_spec => {
                progress.resolution = "serve";
                if !latest.verified {
                    let verifying = Instant::now();
                    self.registry
                        .put(rgd.name(), latest.number, RevisionState::Pending);
                    self.revisions
                        .verified(&latest.name, &latest.status, graph, &self.shared.metrics)
                        .await
                        .map_err(ReconcileError::api(Request::WriteGraphRevision))?;
                    metrics.compiled(
                        true,
                        progress.build_seconds + verifying.elapsed().as_secs_f64(),
                    );
                }
                self.registry
                    .put(rgd.name(), latest.number, RevisionState::Active);
                progress.serving_revision = Some(latest.number);
                progress.graph_revisions = graph_revisions_resolved(latest.number);
            }
            _ => {
                let number = lineage.next_number(progress.last_issued_revision);
                let issuing = Instant::now();
                self.registry
                    .put(rgd.name(), number, RevisionState::Pending);
                let issued = self
                    .revisions
                    .issue(
                        rgd,
                        number,
                        &hash,
                        graph,
                        &self.shared.settings.kro_version,
                        &self.shared.metrics,
                    )
                    .await;
                if let Err(error) = issued {
                    self.registry.evict(rgd.name(), number);
                    return Err(ReconcileError::Api {
                        request: Request::WriteGraphRevision,
                        source: error,
                    });
                }
                metrics.compiled(
                    true,
                    progress.build_seconds + issuing.elapsed().as_secs_f64(),
                );
                metrics.issued(if latest.is_none() {
                    "no_revision"
                } else {
                    "spec_changed"
                });
                self.registry.put(rgd.name(), number, RevisionState::Active);
                progress.last_issued_revision = number;
                progress.serving_revision = Some(number);
                progress.issued = true;
                progress.resolution = "issue";
                progress.graph_revisions = graph_revisions_resolved(number);
            }
        }
        Ok(())
    }

    /// Once the kind is served: deletes the revisions beyond `--rgd-max-graph-revisions`
    /// (oldest first; `0` keeps every one). Failures are logged and counted, not reported on
    /// the RGD, as upstream.
    pub(super) async fn retain_revisions(&self, rgd: &Object, lineage: &Lineage, issued: bool) {
        let max = self.shared.settings.max_graph_revisions;
        let count = lineage.live.len() + usize::from(issued);
        if max <= 0 || i64::try_from(count).unwrap_or(i64::MAX) <= max {
            return;
        }
        let metrics = self.shared.metrics.revisions();
        let current = if issued {
            match self.revisions.lineage(rgd.name(), rgd.uid()).await {
                Ok(current) => current,
                Err(error) => {
                    metrics.gc_failed();
                    tracing::warn!(rgd = %rgd.name(), %error, "listing graph revisions for retention failed");
                    return;
                }
            }
        } else {
            Lineage {
                live: lineage.live.clone(),
                terminating: false,
            }
        };
        for revision in current.beyond_retention(max) {
            match self.revisions.delete(&revision.name).await {
                Ok(true) => {
                    metrics.gc_deleted();
                    tracing::debug!(rgd = %rgd.name(), graph_revision = %revision.name, "deleted a graph revision beyond retention");
                }
                Ok(false) => {}
                Err(error) => {
                    metrics.gc_failed();
                    tracing::warn!(rgd = %rgd.name(), graph_revision = %revision.name, %error, "deleting a graph revision beyond retention failed");
                    return;
                }
            }
        }
    }
}
