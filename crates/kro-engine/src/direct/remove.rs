//! Finding and deleting what a direct deploy made: the members of its ApplySet, listed from
//! the server by label, deleted in reverse apply order — each wave at once, and confirmed gone
//! (through a watch) before the next starts.

use std::collections::{BTreeSet, HashMap};

use kro_graph::CompiledGraph;
use kro_runtime::{Inventory, ObjectKey, Removal, deletion_waves};
use kro_schema::GroupKind;
use kube::Api;
use kube::api::DynamicObject;
use serde_json::Value as Json;
use tokio::time::Instant;

use super::{DirectEngine, DirectError, Progress, Reporter, Stop};
use crate::cleanup::{delete_member, delete_wave, list_members, release_member};
use crate::error::ObjectError;
use crate::json::text;
use crate::kinds::ServedKind;
use crate::list_watch::{Event, ListWatch};

/// What a removal did: the objects deleted and those released, each in order.
#[derive(Debug, Default)]
pub(super) struct Removed {
    /// Deleted and gone.
    pub(super) deleted: Vec<ObjectKey>,
    /// Released: still there, no longer kro's.
    pub(super) released: Vec<ObjectKey>,
}

impl DirectEngine {
    /// The members of the ApplySet `id` of every kind in `inventory`, in `namespaces` (for
    /// namespaced kinds) or cluster-wide; kinds the server does not serve have none. A kind
    /// whose version `versions` gives is resolved from the discovery cache; others are
    /// discovered.
    pub(super) async fn members(
        &self,
        id: &str,
        inventory: &Inventory,
        namespaces: &BTreeSet<String>,
        versions: &HashMap<GroupKind, String>,
    ) -> Result<Vec<Json>, DirectError> {
        let mut members = Vec::new();
        for group_kind in &inventory.group_kinds {
            let known = match versions.get(group_kind) {
                Some(version) => self
                    .kinds
                    .resolve(group_kind.group(), version, group_kind.kind())
                    .await
                    .ok(),
                None => None,
            };
            let found = match known {
                Some(kind) => Some(kind),
                None => self.kinds.discover(group_kind).await.map_err(|source| {
                    ObjectError::Discover {
                        kind: group_kind.to_string(),
                        source: Box::new(source),
                    }
                })?,
            };
            let Some(kind) = found else {
                continue;
            };
            let scopes: Vec<Option<&str>> = if kind.namespaced {
                namespaces
                    .iter()
                    .map(|namespace| Some(namespace.as_str()))
                    .collect()
            } else {
                vec![None]
            };
            for namespace in scopes {
                members.extend(
                    list_members(&self.client, &kind, namespace, id)
                        .await
                        .map_err(|source| ObjectError::ListMembers {
                            kind: group_kind.to_string(),
                            source: Box::new(source),
                        })?,
                );
            }
        }
        Ok(members)
    }

    /// Deletes `members` in reverse apply order (the order their annotations or `graph`
    /// give): each wave at once, confirmed gone before the next. A member `removal` releases
    /// is released instead (nothing to wait for); with no `removal` (a rollback of what this
    /// run created) everything is deleted. Stops between waves when `stop` says so, or at
    /// `deadline`. The objects deleted and those released, in order.
    pub(super) async fn delete_in_waves(
        &self,
        members: &[Json],
        graph: Option<&CompiledGraph>,
        removal: Option<Removal>,
        report: Reporter<'_>,
        stop: &Stop,
        deadline: Option<Instant>,
    ) -> Result<Removed, DirectError> {
        let mut removed = Removed::default();
        let waves = deletion_waves(members, graph);
        for (position, wave) in waves.iter().enumerate() {
            let remaining = || {
                waves[position..]
                    .iter()
                    .flat_map(|wave| wave.objects.iter().map(ToString::to_string))
                    .collect()
            };
            if stop.is_stopped() {
                return Err(DirectError::Stopped {
                    waiting: remaining(),
                });
            }
            let outcomes = delete_wave(
                members,
                &wave.objects,
                self.config.concurrency,
                |key, member| {
                    let uid = text(member, "/metadata/uid");
                    let api_version = text(member, "/apiVersion");
                    let release = removal.is_some_and(|removal| removal.releases(member));
                    async move {
                        if release {
                            self.release_object(key, api_version, uid).await?;
                            Ok(true)
                        } else {
                            self.delete_object(key, api_version, uid, deadline, stop)
                                .await?;
                            Ok(false)
                        }
                    }
                },
            )
            .await;
            for (key, outcome) in outcomes {
                match outcome {
                    Ok(true) => {
                        report(&Progress::Released { key: key.clone() });
                        removed.released.push(key.clone());
                    }
                    Ok(false) => {
                        report(&Progress::Deleted {
                            key: key.clone(),
                            order: wave.order,
                        });
                        removed.deleted.push(key.clone());
                    }
                    Err(DirectError::DeleteTimedOut { .. }) => {
                        return Err(DirectError::TimedOut {
                            waiting: remaining(),
                        });
                    }
                    Err(DirectError::Stopped { .. }) => {
                        return Err(DirectError::Stopped {
                            waiting: remaining(),
                        });
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(removed)
    }

    /// The served kind of a member listed with `api_version`.
    async fn member_kind(
        &self,
        key: &ObjectKey,
        api_version: &str,
    ) -> Result<crate::kinds::ServedKind, DirectError> {
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        self.kinds
            .resolve(&key.group, version, &key.kind)
            .await
            .map_err(DirectError::Kind)
    }

    /// Releases one object (see [`release_member`]).
    async fn release_object(
        &self,
        key: &ObjectKey,
        api_version: &str,
        uid: &str,
    ) -> Result<(), DirectError> {
        let kind = self.member_kind(key, api_version).await?;
        release_member(&self.client, &kind, key, uid)
            .await
            .map_err(|source| ObjectError::Release {
                key: Box::new(key.clone()),
                source: Box::new(source),
            })?;
        Ok(())
    }

    /// Deletes one object (the one with `uid`: a namesake made since is left alone) and
    /// waits until it is gone.
    pub(super) async fn delete_object(
        &self,
        key: &ObjectKey,
        api_version: &str,
        uid: &str,
        deadline: Option<Instant>,
        stop: &Stop,
    ) -> Result<(), DirectError> {
        let kind = self.member_kind(key, api_version).await?;
        delete_member(&self.client, &kind, key, uid)
            .await
            .map_err(|source| ObjectError::Delete {
                key: Box::new(key.clone()),
                source: Box::new(source),
            })?;
        let api = kind.api(&self.client, key.namespace.as_deref());
        let gone = wait_gone(api, &kind, &key.name, uid);
        let mut stop = stop.clone();
        tokio::select! {
            gone = gone => gone.map_err(|source| DirectError::from(ObjectError::Delete {
                key: Box::new(key.clone()),
                source: Box::new(source),
            })),
            () = crate::stop::sleep_until(deadline) => Err(DirectError::DeleteTimedOut {
                key: Box::new(key.clone()),
            }),
            () = stop.stopped() => Err(DirectError::Stopped { waiting: Vec::new() }),
        }
    }
}

/// Waits, through a watch of the one name, until the object with `uid` is gone.
async fn wait_gone(
    api: Api<DynamicObject>,
    kind: &ServedKind,
    name: &str,
    uid: &str,
) -> Result<(), kube::Error> {
    let mut stream = ListWatch::new(api, None, Some(format!("metadata.name={name}")));
    let mut present = false;
    let is_it =
        |object: &DynamicObject| uid.is_empty() || object.metadata.uid.as_deref() == Some(uid);
    loop {
        match stream.next().await {
            Ok(Event::Init) => present = false,
            Ok(Event::InitApply(object) | Event::Apply(object)) => {
                present |= is_it(&object);
            }
            Ok(Event::InitDone) if !present => return Ok(()),
            Ok(Event::Delete(object)) if is_it(&object) => return Ok(()),
            Ok(_) => {}
            // The kind itself went away (its CRD was deleted): so did the object.
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(error) => {
                tracing::debug!(kind = %kind.resource.kind, %name, %error, "watch failed; retrying");
            }
        }
    }
}
