//! GraphRevisions (`internal.kro.run/v1alpha1`), kept as upstream kro v0.9.4 keeps them: every
//! spec of an RGD that compiles is snapshotted into an immutable revision `<rgd>-r<NNNNN>`,
//! owned by the RGD, held by the finalizer `kro.run/finalizer`, labelled with the spec's hash,
//! and reported verified in its status. The RGD's `status.lastIssuedRevision` is the
//! high-water mark, so numbers keep rising across garbage collection, a recreated RGD and a
//! switch between upstream's controller and this one in either direction.
//!
//! Upstream compiles a revision in a second controller and serves it once an in-memory
//! registry says it is Active. Here the RGD controller has compiled the spec already when it
//! issues the revision, so it writes the revision's verified status at once and serves in the
//! same reconcile (no `WaitingForGraphRevisionCompilation` round trip); revisions issued by
//! upstream and not yet verified are verified when their spec is the one being served.
//!
//! The watch of GraphRevisions queues the RGD each names when one changes or goes, and
//! releases the finalizer of each one being deleted (by retention, by the owner reference's
//! cascade, or by hand) as upstream's GraphRevision controller does.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use futures_util::StreamExt;
use kro_graph::metadata::{FINALIZER, KRO_VERSION_LABEL, OWNED_LABEL, RGD_KIND, RGD_NAME_LABEL};
use kro_graph::{
    CompiledGraph, GRAPH_REVISION_API_VERSION, GRAPH_REVISION_GROUP, GRAPH_REVISION_HASH_LABEL,
    GRAPH_REVISION_KIND, GRAPH_REVISION_PLURAL, graph_revision_name, spec_hash,
};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value as Json, json};

use crate::crd_plan::RgdIdentity;
use crate::metrics::{Metrics, RevisionState};
use crate::object::Object;
use crate::object_json::{merge_patch, now};
use crate::queue::WorkQueue;
use crate::rgd_status::graph_revision_status;

/// The longest label value the API server accepts.
const MAX_LABEL_VALUE: usize = 63;

/// The GraphRevision resource.
pub(crate) fn graph_revision_resource() -> ApiResource {
    ApiResource {
        group: GRAPH_REVISION_GROUP.to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: GRAPH_REVISION_API_VERSION.to_owned(),
        kind: GRAPH_REVISION_KIND.to_owned(),
        plural: GRAPH_REVISION_PLURAL.to_owned(),
    }
}

/// One GraphRevision of an RGD, as listed.
#[derive(Debug, Clone)]
pub(crate) struct Revision {
    /// Its object name.
    pub(crate) name: String,
    /// `spec.revision`.
    pub(crate) number: i64,
    /// The hash of `spec.snapshot.spec`.
    pub(crate) hash: String,
    /// Whether this RGD (by UID) is its controlling owner.
    pub(crate) owned: bool,
    /// Whether its status says `GraphVerified=True`.
    pub(crate) verified: bool,
    /// Its `status`.
    pub(crate) status: Json,
    /// Its `metadata.ownerReferences`.
    owner_references: Json,
    /// Its `metadata.resourceVersion` (guards the adoption).
    resource_version: Option<String>,
}

/// The GraphRevisions of one RGD.
#[derive(Debug, Default)]
pub(crate) struct Lineage {
    /// Those not being deleted.
    pub(crate) live: Vec<Revision>,
    /// Whether any is being deleted.
    pub(crate) terminating: bool,
}

impl Lineage {
    /// The GraphRevisions among `objects` whose snapshot names `rgd`, judged against the RGD
    /// whose UID is `uid`.
    pub(crate) fn of(objects: &[DynamicObject], rgd: &str, uid: &str) -> Lineage {
        let mut lineage = Lineage::default();
        for object in objects {
            let data = &object.data;
            if data.pointer("/spec/snapshot/name").and_then(Json::as_str) != Some(rgd) {
                continue;
            }
            if object.metadata.deletion_timestamp.is_some() {
                lineage.terminating = true;
                continue;
            }
            let owned = object
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| {
                    owner.uid == uid && owner.kind == RGD_KIND && owner.controller == Some(true)
                });
            let verified = data
                .pointer("/status/conditions")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .any(|condition| {
                    condition["type"] == "GraphVerified" && condition["status"] == "True"
                });
            lineage.live.push(Revision {
                name: object.metadata.name.clone().unwrap_or_default(),
                number: data
                    .pointer("/spec/revision")
                    .and_then(Json::as_i64)
                    .unwrap_or(0),
                hash: spec_hash(data.pointer("/spec/snapshot/spec").unwrap_or(&Json::Null)),
                owned,
                verified,
                status: data.get("status").cloned().unwrap_or_else(|| json!({})),
                owner_references: serde_json::to_value(&object.metadata.owner_references)
                    .unwrap_or(Json::Null),
                resource_version: object.metadata.resource_version.clone(),
            });
        }
        lineage.live.sort_by_key(|revision| revision.number);
        lineage
    }

    /// The live revision with the highest number.
    pub(crate) fn latest(&self) -> Option<&Revision> {
        self.live.last()
    }

    /// The number the next revision gets: one past both the RGD's high-water mark and every
    /// live revision.
    pub(crate) fn next_number(&self, last_issued: i64) -> i64 {
        last_issued
            .max(self.latest().map_or(0, |revision| revision.number))
            .saturating_add(1)
    }

    /// The live revisions retention deletes when at most `max` may stay (`max <= 0` keeps
    /// every one): those below the `max`-th newest number, as upstream counts.
    pub(crate) fn beyond_retention(&self, max: i64) -> Vec<&Revision> {
        let Ok(max) = usize::try_from(max) else {
            return Vec::new();
        };
        if max == 0 || self.live.len() <= max {
            return Vec::new();
        }
        let floor = self.live[self.live.len() - max].number;
        self.live
            .iter()
            .filter(|revision| revision.number < floor)
            .collect()
    }
}

/// Reads and writes GraphRevisions.
#[derive(Clone)]
pub(crate) struct GraphRevisions {
    api: Api<DynamicObject>,
}

impl GraphRevisions {
    /// GraphRevisions through `client`.
    pub(crate) fn new(client: &kube::Client) -> Self {
        GraphRevisions {
            api: Api::all_with(client.clone(), &graph_revision_resource()),
        }
    }

    /// The GraphRevisions of the RGD `rgd` (UID `uid`), listed from the server (not a cache:
    /// the next number must account for a revision issued a moment ago).
    pub(crate) async fn lineage(&self, rgd: &str, uid: &str) -> Result<Lineage, kube::Error> {
        let params = ListParams::default().fields(&format!("spec.snapshot.name={rgd}"));
        let listed = self.api.list(&params).await?;
        Ok(Lineage::of(&listed.items, rgd, uid))
    }

    /// Makes the RGD `rgd` the controlling owner of `revision` (left by an RGD deleted with
    /// `--cascade=orphan`, or by one deleted and created again under the same name).
    pub(crate) async fn adopt(
        &self,
        revision: &Revision,
        rgd: &RgdIdentity,
    ) -> Result<(), kube::Error> {
        let desired = owner_reference(rgd);
        let mut owners: Vec<Json> = revision
            .owner_references
            .as_array()
            .cloned()
            .unwrap_or_default();
        match owners.iter_mut().find(|owner| {
            owner["kind"] == RGD_KIND && owner["apiVersion"] == kro_graph::metadata::API_VERSION
        }) {
            Some(owner) => *owner = desired,
            None => owners.push(desired),
        }
        let patch = json!({"metadata": {
            "ownerReferences": owners,
            "resourceVersion": revision.resource_version,
        }});
        self.api
            .patch(
                &revision.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        tracing::info!(graph_revision = %revision.name, revision = revision.number, "adopted graph revision");
        Ok(())
    }

    /// Creates revision `number` of `rgd` with its spec (whose hash is `hash`), then writes
    /// its status from `graph`, the spec compiled. Returns its name.
    pub(crate) async fn issue(
        &self,
        rgd: &Object,
        number: i64,
        hash: &str,
        graph: &CompiledGraph,
        kro_version: &str,
        metrics: &Metrics,
    ) -> Result<String, kube::Error> {
        let identity = RgdIdentity {
            name: rgd.name().to_owned(),
            uid: rgd.uid().to_owned(),
        };
        let name = graph_revision_name(rgd.name(), number);
        let mut labels = json!({
            OWNED_LABEL: "true",
            KRO_VERSION_LABEL: kro_version,
            GRAPH_REVISION_HASH_LABEL: hash,
        });
        if rgd.name().len() <= MAX_LABEL_VALUE {
            labels[RGD_NAME_LABEL] = json!(rgd.name());
        }
        let revision = json!({
            "apiVersion": GRAPH_REVISION_API_VERSION,
            "kind": GRAPH_REVISION_KIND,
            "metadata": {
                "name": name,
                "labels": labels,
                "ownerReferences": [owner_reference(&identity)],
                "finalizers": [FINALIZER],
            },
            "spec": {
                "revision": number,
                "snapshot": {
                    "name": rgd.name(),
                    "generation": rgd.generation(),
                    "spec": rgd.json().get("spec").cloned().unwrap_or_else(|| json!({})),
                },
            },
        });
        let revision: DynamicObject =
            serde_json::from_value(revision).map_err(kube::Error::SerdeError)?;
        self.api.create(&PostParams::default(), &revision).await?;
        tracing::info!(rgd = %rgd.name(), graph_revision = %name, revision = number, "issued graph revision");
        self.verified(&name, &json!({}), graph, metrics).await?;
        Ok(name)
    }

    /// Writes the status of the revision `name` (whose status is `previous`) as verified,
    /// compiled to `graph`.
    pub(crate) async fn verified(
        &self,
        name: &str,
        previous: &Json,
        graph: &CompiledGraph,
        metrics: &Metrics,
    ) -> Result<(), kube::Error> {
        let wanted = graph_revision_status(previous, graph, &now());
        let Some(patch) = merge_patch(previous, &wanted) else {
            return Ok(());
        };
        let written = self
            .api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": patch})),
            )
            .await;
        if written.is_err() {
            metrics.revisions().status_update_failed();
        }
        written.map(|_| ())
    }

    /// Deletes the revision `name`; `false` when it was gone already.
    pub(crate) async fn delete(&self, name: &str) -> Result<bool, kube::Error> {
        match self.api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The owner reference upstream gives a GraphRevision: its RGD, as controller.
fn owner_reference(rgd: &RgdIdentity) -> Json {
    json!({
        "apiVersion": kro_graph::metadata::API_VERSION,
        "kind": RGD_KIND,
        "name": rgd.name,
        "uid": rgd.uid,
        "controller": true,
    })
}

/// The revisions this controller knows, by RGD and number, with their state: upstream's
/// in-memory registry (never written to the API), here what the metrics
/// `graph_revision_registry_*` count.
pub(crate) struct RevisionRegistry {
    entries: Mutex<HashMap<String, BTreeMap<i64, RevisionState>>>,
    metrics: Metrics,
}

impl RevisionRegistry {
    /// An empty registry counting into `metrics`.
    pub(crate) fn new(metrics: Metrics) -> Self {
        RevisionRegistry {
            entries: Mutex::default(),
            metrics,
        }
    }

    /// The state of revision `number` of `rgd`, when known.
    pub(crate) fn get(&self, rgd: &str, number: i64) -> Option<RevisionState> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(rgd)
            .and_then(|revisions| revisions.get(&number).copied())
    }

    /// Records revision `number` of `rgd` in `state`.
    pub(crate) fn put(&self, rgd: &str, number: i64, state: RevisionState) {
        let previous = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(rgd.to_owned())
            .or_default()
            .insert(number, state);
        self.metrics.revisions().registry_put(previous, state);
    }

    /// Forgets revision `number` of `rgd`; `true` when it was known.
    pub(crate) fn evict(&self, rgd: &str, number: i64) -> bool {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let removed = entries
            .get_mut(rgd)
            .and_then(|revisions| revisions.remove(&number));
        if entries.get(rgd).is_some_and(BTreeMap::is_empty) {
            entries.remove(rgd);
        }
        drop(entries);
        if let Some(state) = removed {
            self.metrics.revisions().registry_evicted(state);
        }
        removed.is_some()
    }

    /// Forgets every revision of `rgd` (it is gone).
    pub(crate) fn evict_all(&self, rgd: &str) {
        let removed = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(rgd);
        for state in removed.into_iter().flat_map(BTreeMap::into_values) {
            self.metrics.revisions().registry_evicted(state);
        }
    }
}

/// The RGD a revision's snapshot names, and its number.
fn identity(revision: &DynamicObject) -> Option<(&str, i64)> {
    let rgd = revision.data.pointer("/spec/snapshot/name")?.as_str()?;
    let number = revision.data.pointer("/spec/revision")?.as_i64()?;
    Some((rgd, number))
}

/// Watches GraphRevisions: queues the RGD each one's snapshot names when it changes or goes,
/// and releases the finalizer of each one being deleted (evicting it from `registry`).
pub(crate) async fn watch(
    client: kube::Client,
    queue: WorkQueue<String>,
    registry: std::sync::Arc<RevisionRegistry>,
) {
    let api: Api<DynamicObject> = Api::all_with(client, &graph_revision_resource());
    let mut events = watcher::watcher(api.clone(), watcher::Config::default())
        .backoff(crate::watches::WatchBackoff::default())
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Apply(revision) | Event::InitApply(revision)) => {
                if release(&api, &revision).await
                    && let Some((rgd, number)) = identity(&revision)
                    && registry.evict(rgd, number)
                {
                    registry.metrics.revisions().finalizer_evicted();
                }
                queue_owner(&queue, &revision);
            }
            Ok(Event::Delete(revision)) => {
                if let Some((rgd, number)) = identity(&revision) {
                    registry.evict(rgd, number);
                }
                queue_owner(&queue, &revision);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "GraphRevision watch failed; retrying"),
        }
    }
}

fn queue_owner(queue: &WorkQueue<String>, revision: &DynamicObject) {
    if let Some((rgd, _)) = identity(revision) {
        queue.add(rgd.to_owned());
    }
}

/// Removes kro's finalizer from `revision` when it is being deleted; `true` when it did. A
/// conflict (the object changed meanwhile) is left to the next event.
async fn release(api: &Api<DynamicObject>, revision: &DynamicObject) -> bool {
    let metadata = &revision.metadata;
    let finalizers = metadata.finalizers.as_deref().unwrap_or_default();
    if metadata.deletion_timestamp.is_none() || !finalizers.iter().any(|f| f == FINALIZER) {
        return false;
    }
    let Some(name) = metadata.name.as_deref() else {
        return false;
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
        Ok(_) => {
            tracing::debug!(graph_revision = name, "released a deleted GraphRevision");
            true
        }
        Err(error) => {
            tracing::debug!(
                graph_revision = name,
                %error,
                "could not release a deleted GraphRevision yet"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(name: &str, number: i64, owner: Option<&str>, deleting: bool) -> DynamicObject {
        let mut object = json!({
            "apiVersion": GRAPH_REVISION_API_VERSION,
            "kind": GRAPH_REVISION_KIND,
            "metadata": {"name": format!("{name}-r{number:05}")},
            "spec": {"revision": number, "snapshot": {"name": name, "generation": 1, "spec": {"n": number}}},
        });
        if let Some(uid) = owner {
            object["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
                "name": name, "uid": uid, "controller": true,
            }]);
        }
        if deleting {
            object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(object).expect("a GraphRevision")
    }

    #[test]
    fn the_lineage_is_the_rgd_s_live_revisions_in_order() {
        let objects = [
            revision("shop", 3, Some("u1"), false),
            revision("shop", 1, Some("u0"), false),
            revision("other", 9, Some("u9"), false),
            revision("shop", 2, Some("u1"), true),
        ];
        let lineage = Lineage::of(&objects, "shop", "u1");
        let numbers: Vec<i64> = lineage.live.iter().map(|r| r.number).collect();
        assert_eq!(numbers, [1, 3]);
        assert!(lineage.terminating);
        assert!(
            !lineage.live[0].owned,
            "owned by an earlier RGD of that name"
        );
        assert!(lineage.live[1].owned);
        assert_eq!(lineage.latest().map(|r| r.number), Some(3));
        assert_eq!(lineage.next_number(0), 4);
        assert_eq!(lineage.next_number(7), 8, "the high-water mark wins");
        assert_eq!(Lineage::default().next_number(0), 1);
    }

    #[test]
    fn retention_keeps_the_newest_numbers() {
        let objects: Vec<DynamicObject> = [1, 2, 4, 7, 8, 9, 12]
            .into_iter()
            .map(|number| revision("shop", number, Some("u"), false))
            .collect();
        let lineage = Lineage::of(&objects, "shop", "u");
        let deleted = |max| -> Vec<i64> {
            lineage
                .beyond_retention(max)
                .iter()
                .map(|r| r.number)
                .collect()
        };
        assert_eq!(deleted(5), [1, 2]);
        assert_eq!(deleted(1), [1, 2, 4, 7, 8, 9]);
        assert!(deleted(7).is_empty());
        assert!(deleted(0).is_empty(), "0 turns retention off");
        assert!(deleted(-1).is_empty());
    }
}
