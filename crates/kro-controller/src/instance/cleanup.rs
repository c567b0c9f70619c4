//! Cleanup of an instance's objects: pruning what left the plan, and ordered deletion when the
//! instance is deleted (highest apply order first, the finalizer last). What a `retain`
//! lifecycle keeps, or everything when the instance detaches on deletion, is released
//! instead of deleted.

use std::collections::BTreeSet;
use std::time::Duration;

use kro_graph::metadata::FINALIZER;
use kro_runtime::{ControllerFacts, ObjectKey, Observed, Plan, Removal, deletion_waves, plan};
use kube::api::{Patch, PatchParams};
use serde_json::{Value as Json, json};

use super::graph_version::GraphVersion;
use super::{InstanceController, plan_options};
use crate::error::{ReconcileError, Request, ResourceError};
use crate::events::EventType;
use crate::object::Object;
use crate::object_json::text;
use crate::shared::Shared;
use crate::watches::{GroupKind, Selection};
use kro_engine::cleanup::{self, Pruning, delete_member, list_members, pruning, release_member};
use kro_engine::error::ObjectError;
use kro_engine::kinds::ServedKind;

impl InstanceController {
    /// Deletes managed objects that left the plan, highest apply order first, then trims the
    /// inventory to what remains.
    pub(super) async fn prune(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &mut Object,
        current: &Plan,
    ) -> Result<(), ResourceError> {
        let members = self.members(shared, graph, instance).await?;
        let Pruning { prune, inventory } = pruning(
            &graph.graph,
            current,
            members,
            instance.uid(),
            instance.namespace(),
        );
        for wave in deletion_waves(&prune, Some(&graph.graph)) {
            let outcomes = delete_wave(shared, graph, &prune, &wave.objects, Removal::Prune).await;
            for (key, outcome) in outcomes {
                let fate = outcome.map_err(|source| ObjectError::Prune {
                    key: Box::new(key.clone()),
                    source: Box::new(source),
                })?;
                let (reason, message) = match fate {
                    Fate::Going => continue,
                    Fate::Deleted => ("Pruned", format!("pruned {key}, which left the plan")),
                    Fate::Released => (
                        "Released",
                        format!("released {key}, which left the plan: its lifecycle retains it"),
                    ),
                };
                tracing::info!(object = %key, reason, "left the plan");
                shared
                    .events
                    .record(instance, EventType::Normal, reason, &message)
                    .await;
            }
        }
        self.write_inventory(shared, instance, &inventory)
            .await
            .map_err(|error| ResourceError::Inventory(Box::new(error)))
    }

    /// The objects of the instance's ApplySet. For the kinds the graph creates they come from
    /// the watch caches while those are synced; for a cache that is not (the server restarted,
    /// a watch is re-listing after `410 Gone`) and for kinds only the inventory names, they are
    /// listed from the server, so that nothing is pruned or left behind on the word of a cache
    /// that may be old.
    async fn members(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &Object,
    ) -> Result<Vec<Json>, ObjectError> {
        let id = self.parent_id(instance);
        let mut members = Vec::new();
        let mut kinds: BTreeSet<GroupKind> = graph.children.keys().cloned().collect();
        kinds.extend(self.inventory(instance).group_kinds);
        for group_kind in kinds {
            if let Some((_, cache)) = graph.children.get(&group_kind) {
                cache.wait_until_ready().await;
                if shared.watches.is_synced(&group_kind, Selection::Managed) {
                    members.extend(cache.members(&id));
                    continue;
                }
                tracing::debug!(kind = %group_kind, "cache not synced; listing members from the server");
            }
            members.extend(members_of_kind(shared, graph, &group_kind, &id).await?);
        }
        Ok(members)
    }

    /// The members of the instance's ApplySet (of any kind the graph creates or the inventory
    /// names) as the server itself lists them: the last word before the finalizer goes, since
    /// a cache can lag behind a create it has not seen yet.
    async fn members_on_server(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &Object,
    ) -> Result<Vec<Json>, ObjectError> {
        let id = self.parent_id(instance);
        let mut kinds: BTreeSet<GroupKind> = graph.children.keys().cloned().collect();
        kinds.extend(self.inventory(instance).group_kinds);
        let mut members = Vec::new();
        for group_kind in kinds {
            members.extend(members_of_kind(shared, graph, &group_kind, &id).await?);
        }
        Ok(members)
    }

    /// Ordered deletion: the highest apply order still present is deleted (all at once); the
    /// next wave waits until it is gone; the finalizer goes last. Needs no CEL and no graph
    /// beyond the kinds it names: the inventory on the instance says where the members are.
    pub(super) async fn delete(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &Object,
    ) -> Result<Option<Duration>, ReconcileError> {
        if !instance.has_finalizer(FINALIZER) {
            return Ok(None);
        }
        let facts = ControllerFacts {
            deleting: true,
            ..ControllerFacts::default()
        };
        let options = plan_options(shared, graph, &facts);
        let status = plan(&graph.graph, instance.json(), &Observed::new(), &options);
        self.write_status(shared, graph, instance, &status, None)
            .await?;
        let mut members = self.members(shared, graph, instance).await?;
        if members.is_empty() {
            members = self.members_on_server(shared, graph, instance).await?;
            if !members.is_empty() {
                tracing::info!(
                    members = members.len(),
                    "members the caches did not show remain on the server"
                );
            }
        }
        tracing::debug!(members = members.len(), "deleting the instance's objects");
        let waves = deletion_waves(&members, Some(&graph.graph));
        if let Some(wave) = waves.first() {
            let removal = Removal::deleting(instance.json());
            for (key, outcome) in delete_wave(shared, graph, &members, &wave.objects, removal).await
            {
                let fate = outcome.map_err(|source| ObjectError::Delete {
                    key: Box::new(key.clone()),
                    source: Box::new(source),
                })?;
                let (reason, message) = match fate {
                    Fate::Going => continue,
                    Fate::Deleted => (
                        "Deleting",
                        format!("deleting {key} (apply order {})", wave.order),
                    ),
                    Fate::Released => (
                        "Released",
                        format!(
                            "released {key} (apply order {}): it stays, no longer managed by kro",
                            wave.order
                        ),
                    ),
                };
                tracing::info!(object = %key, order = wave.order, reason, "removed");
                shared
                    .events
                    .record(instance, EventType::Normal, reason, &message)
                    .await;
            }
            return Ok(Some(shared.settings.deletion_poll));
        }
        tracing::info!("every object deleted; removing the finalizer");
        let remaining: Vec<&String> = instance
            .meta()
            .finalizers
            .iter()
            .flatten()
            .filter(|finalizer| *finalizer != FINALIZER)
            .collect();
        let patch = json!({
            "metadata": {
                "finalizers": remaining,
                "resourceVersion": instance.resource_version(),
            }
        });
        self.kind
            .api(&shared.client, Some(instance.namespace()))
            .patch(
                instance.name(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(ReconcileError::api(Request::RemoveFinalizer))?;
        self.applier.forget(instance.uid());
        Ok(None)
    }
}

/// What became of one member in a wave.
enum Fate {
    /// Its deletion was under way already.
    Going,
    /// It was deleted.
    Deleted,
    /// It was released (its lifecycle retains it, or its instance detaches).
    Released,
}

/// Removes the `keys` among `members` at once (bounded by the apply concurrency): each is
/// released when `removal` says so, deleted otherwise with its UID as precondition.
async fn delete_wave<'m>(
    shared: &Shared,
    graph: &GraphVersion,
    members: &'m [Json],
    keys: &'m [ObjectKey],
    removal: Removal,
) -> Vec<(&'m ObjectKey, Result<Fate, kube::Error>)> {
    cleanup::delete_wave(
        members,
        keys,
        shared.settings.apply_concurrency,
        |key, member| async move {
            let uid = text(member, "/metadata/uid");
            if removal.releases(member) {
                let kind = kind_of(shared, graph, key).await?;
                let Some(kind) = kind else {
                    return Ok(Fate::Going);
                };
                return Ok(if release_member(&shared.client, &kind, key, uid).await? {
                    Fate::Released
                } else {
                    Fate::Going
                });
            }
            if cleanup::is_going(member) {
                return Ok(Fate::Going);
            }
            delete_object(shared, graph, key, uid).await?;
            Ok(Fate::Deleted)
        },
    )
    .await
}

/// The objects of `group_kind` in the ApplySet `id`, listed from the server; none when the
/// server does not serve the kind.
async fn members_of_kind(
    shared: &Shared,
    graph: &GraphVersion,
    group_kind: &GroupKind,
    id: &str,
) -> Result<Vec<Json>, ObjectError> {
    let kind = match graph.children.get(group_kind) {
        Some((kind, _)) => kind.clone(),
        None => match shared.kinds.discover(group_kind).await.map_err(|source| {
            ObjectError::Discover {
                kind: group_kind.to_string(),
                source: Box::new(source),
            }
        })? {
            Some(kind) => kind,
            None => return Ok(Vec::new()),
        },
    };
    list_members(&shared.client, &kind, None, id)
        .await
        .map_err(|source| ObjectError::ListMembers {
            kind: group_kind.to_string(),
            source: Box::new(source),
        })
}

/// Deletes one object (see [`delete_member`]); a kind no longer served has nothing left to
/// delete.
async fn delete_object(
    shared: &Shared,
    graph: &GraphVersion,
    key: &ObjectKey,
    uid: &str,
) -> Result<(), kube::Error> {
    match kind_of(shared, graph, key).await? {
        Some(kind) => delete_member(&shared.client, &kind, key, uid).await,
        None => Ok(()),
    }
}

/// The served kind of `key`, from the graph, the watches or discovery; `None` when the
/// server no longer serves it.
async fn kind_of(
    shared: &Shared,
    graph: &GraphVersion,
    key: &ObjectKey,
) -> Result<Option<ServedKind>, kube::Error> {
    if let Some((kind, _)) = graph.children.get(&key.group_kind()) {
        return Ok(Some(kind.clone()));
    }
    if let Some((kind, _)) = shared
        .watches
        .existing(&key.group_kind(), Selection::Managed)
    {
        return Ok(Some(kind));
    }
    shared.kinds.discover(&key.group_kind()).await
}
