//! ControllerRevisions: the history the stateful set and daemon set controllers keep of a
//! workload's pod templates, one object per template (`<name>-<hash>`, `revision` counting
//! up, owned by the workload), which `kubectl rollout history` reads and `kubectl rollout
//! undo` patches back into the workload.
//!
//! As kube-controller-manager does: a template that an existing revision already holds (what
//! an undo brings back) reuses that revision, renumbered to come last, rather than making a
//! new one; a name taken by a revision with other data is a hash collision, counted in
//! `status.collisionCount` and hashed into the next name tried; and revisions nothing uses
//! any more are deleted, oldest first, down to `spec.revisionHistoryLimit`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::support::{Context, ReconcileError, controller_reference, template_hash};

/// How many names a sync tries before giving up on a run of hash collisions.
const MAX_COLLISIONS: i32 = 100;

/// The history limit of a workload that sets none (the API server defaults it to this).
const DEFAULT_HISTORY_LIMIT: i32 = 10;

/// Which controller keeps a history: they label revisions and count what to prune differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keeper {
    /// The stateful set controller: revisions carry `controller.kubernetes.io/hash`, and the
    /// limit counts the revisions that are neither current, update, nor a pod's.
    StatefulSet,
    /// The daemon set controller: revisions carry `controller-revision-hash`, and the limit
    /// counts every revision but the current template's.
    DaemonSet,
}

impl Keeper {
    /// The label holding a revision's hash.
    fn hash_label(self) -> &'static str {
        match self {
            Keeper::StatefulSet => "controller.kubernetes.io/hash",
            Keeper::DaemonSet => "controller-revision-hash",
        }
    }
}

/// An owner's history after a sync.
#[derive(Debug)]
pub(super) struct History {
    /// The revisions the owner controls, oldest first; the update revision is among them
    /// (with its new number when it was renumbered), unless the server refused to create it.
    pub(super) revisions: Vec<ControllerRevision>,
    /// The name of the revision holding the owner's template.
    pub(super) update_name: String,
    /// The hash of that revision, as its hash label has it.
    pub(super) update_hash: String,
    /// The owner's `status.collisionCount` after this sync.
    pub(super) collision_count: i32,
}

impl History {
    /// Whether one of the owner's revisions is named `name`.
    pub(super) fn has(&self, name: &str) -> bool {
        self.revisions
            .iter()
            .any(|revision| revision.metadata.name.as_deref() == Some(name))
    }
}

/// What a sync does for the owner's template, given its sorted history.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// The revision at this index holds the template and is the newest: nothing to do.
    Keep(usize),
    /// The revision at this index holds the template but is older: it gets this number.
    Renumber(usize, i64),
    /// No revision holds the template: a new one gets this number.
    Create(i64),
}

/// The data a revision of `template` holds: the strategic merge patch that puts the template
/// back (`kubectl rollout undo` sends it as is).
///
/// Its metadata has `creationTimestamp: null` as Go encodes an unset one: kubectl compares
/// these bytes with its own encoding of the workload to skip an undo to the current template.
fn revision_data(template: &Value) -> Value {
    let mut replaced = template.clone();
    if let Value::Object(fields) = &mut replaced {
        fields.insert("$patch".to_owned(), json!("replace"));
        let metadata = fields.entry("metadata").or_insert_with(|| json!({}));
        if let Value::Object(metadata) = metadata {
            metadata.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
    json!({"spec": {"template": replaced}})
}

/// The hash naming a revision of `template`; after collisions, their count is hashed in too.
fn revision_hash(template: &Value, collision_count: i32) -> String {
    let mut text = serde_json::to_string(template).unwrap_or_default();
    if collision_count > 0 {
        text.push_str(&collision_count.to_string());
    }
    template_hash(&text)
}

fn data_of(revision: &ControllerRevision) -> Option<&Value> {
    revision.data.as_ref().map(|data| &data.0)
}

/// Sorts revisions oldest first: by number, then creation time, then name.
fn sort(revisions: &mut [ControllerRevision]) {
    revisions.sort_by(|left, right| {
        (
            left.revision,
            &left.metadata.creation_timestamp,
            &left.metadata.name,
        )
            .cmp(&(
                right.revision,
                &right.metadata.creation_timestamp,
                &right.metadata.name,
            ))
    });
}

/// Decides what to do for a template whose revision would hold `data`, given the owner's
/// `revisions` sorted oldest first: the newest revision holding equal data is kept if it is
/// the newest of all, and renumbered to come last otherwise.
fn plan(revisions: &[ControllerRevision], data: &Value) -> Step {
    let next = revisions.last().map_or(0, |last| last.revision) + 1;
    let equal = revisions
        .iter()
        .rposition(|revision| data_of(revision) == Some(data));
    match equal {
        Some(index) if index + 1 == revisions.len() => Step::Keep(index),
        Some(index) => Step::Renumber(index, next),
        None => Step::Create(next),
    }
}

/// Brings `owner`'s history up to its pod `template`: reuses (and renumbers) the revision
/// holding it, or creates one, counting name collisions from `collision_count` (the owner's
/// `status.collisionCount`).
///
/// # Errors
/// When the server cannot be read or written, the owner has no namespace, or no free name
/// was found.
pub(super) async fn sync_history<K>(
    context: &Context,
    owner: &K,
    keeper: Keeper,
    template: &Value,
    collision_count: Option<i32>,
) -> Result<History, ReconcileError>
where
    K: Resource<DynamicType = ()>,
{
    let Some(namespace) = owner.meta().namespace.clone() else {
        return Err(ReconcileError::Shape(format!(
            "{} has no namespace",
            owner.name_any()
        )));
    };
    let owner_uid = owner.meta().uid.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(context.client.clone(), &namespace);
    let mut revisions: Vec<ControllerRevision> =
        api.list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|revision| {
                revision.owner_references().iter().any(|reference| {
                    reference.uid == owner_uid && reference.controller == Some(true)
                })
            })
            .collect();
    sort(&mut revisions);
    let data = revision_data(template);
    let mut collision_count = collision_count.unwrap_or(0).max(0);
    let update = match plan(&revisions, &data) {
        Step::Keep(index) => index,
        Step::Renumber(index, number) => {
            let mut renumbered = revisions.remove(index);
            renumbered.revision = number;
            let name = renumbered.name_any();
            let replaced = api
                .replace(&name, &context.post_params(), &renumbered)
                .await?;
            revisions.push(replaced);
            revisions.len() - 1
        }
        Step::Create(number) => {
            let fresh = NewRevision {
                owner,
                keeper,
                template,
                data: &data,
                number,
            };
            match fresh.create(context, &api, &mut collision_count).await? {
                Created::Stored(created) => {
                    revisions.push(*created);
                    revisions.len() - 1
                }
                Created::Refused { name, hash } => {
                    return Ok(History {
                        revisions,
                        update_name: name,
                        update_hash: hash,
                        collision_count,
                    });
                }
            }
        }
    };
    let update_name = revisions[update].name_any();
    let update_hash = revisions[update]
        .labels()
        .get(keeper.hash_label())
        .cloned()
        .unwrap_or_else(|| {
            update_name
                .strip_prefix(&format!("{}-", owner.name_any()))
                .unwrap_or(&update_name)
                .to_owned()
        });
    Ok(History {
        revisions,
        update_name,
        update_hash,
        collision_count,
    })
}

/// A revision to create for a template no revision holds yet.
struct NewRevision<'a, K> {
    owner: &'a K,
    keeper: Keeper,
    template: &'a Value,
    data: &'a Value,
    number: i64,
}

/// What creating a revision came to.
enum Created {
    /// The revision stored (or found made already, with the same data).
    Stored(Box<ControllerRevision>),
    /// The server refused it (a terminating namespace): the name it would have had.
    Refused { name: String, hash: String },
}

impl<K> NewRevision<'_, K>
where
    K: Resource<DynamicType = ()>,
{
    /// The revision named with `collision_count`.
    fn object(&self, collision_count: i32) -> Result<(ControllerRevision, String), ReconcileError> {
        let hash = revision_hash(self.template, collision_count);
        let mut labels: BTreeMap<String, String> = self
            .template
            .pointer("/metadata/labels")
            .and_then(|labels| serde_json::from_value(labels.clone()).ok())
            .unwrap_or_default();
        labels.insert(self.keeper.hash_label().to_owned(), hash.clone());
        let revision: ControllerRevision = serde_json::from_value(json!({
            "metadata": {
                "name": format!("{}-{hash}", self.owner.name_any()),
                "labels": labels,
                "annotations": self.owner.annotations(),
                "ownerReferences": [controller_reference(self.owner)?],
            },
            "data": self.data,
            "revision": self.number,
        }))
        .map_err(|error| ReconcileError::Shape(error.to_string()))?;
        Ok((revision, hash))
    }

    /// Creates the revision; a name taken by another template's revision is a collision,
    /// counted in `collision_count` before the next name is tried.
    async fn create(
        &self,
        context: &Context,
        api: &Api<ControllerRevision>,
        collision_count: &mut i32,
    ) -> Result<Created, ReconcileError> {
        for _ in 0..MAX_COLLISIONS {
            let (revision, hash) = self.object(*collision_count)?;
            let name = revision.name_any();
            match api.create(&context.post_params(), &revision).await {
                Ok(created) => return Ok(Created::Stored(Box::new(created))),
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    return Ok(Created::Refused { name, hash });
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    let existing = api.get(&name).await?;
                    if data_of(&existing) == Some(self.data) {
                        return Ok(Created::Stored(Box::new(existing)));
                    }
                    *collision_count = collision_count.saturating_add(1);
                }
                Err(error) => return Err(error.into()),
            }
        }
        Err(ReconcileError::Shape(format!(
            "no free ControllerRevision name for {} after {MAX_COLLISIONS} collisions",
            self.owner.name_any()
        )))
    }
}

/// The names of the revisions of `history` to delete so that at most `limit` (default 10,
/// none when negative) remain besides those in use, oldest first.
///
/// For a StatefulSet, `is_live` holds for the current and update revisions and those of its
/// pods, and the limit counts the others; for a DaemonSet, it holds for the revisions of its
/// pods, and the limit counts every revision but the update one, the live ones included (as
/// kube-controller-manager's `truncateHistory` and `cleanupHistory` count).
pub(super) fn prunable(
    keeper: Keeper,
    history: &History,
    is_live: impl Fn(&ControllerRevision) -> bool,
    limit: Option<i32>,
) -> Vec<String> {
    let Ok(limit) = usize::try_from(limit.unwrap_or(DEFAULT_HISTORY_LIMIT)) else {
        return Vec::new();
    };
    let old: Vec<&ControllerRevision> = history
        .revisions
        .iter()
        .filter(|revision| revision.metadata.name.as_deref() != Some(&history.update_name))
        .collect();
    let counted = match keeper {
        Keeper::StatefulSet => old.iter().filter(|revision| !is_live(revision)).count(),
        Keeper::DaemonSet => old.len(),
    };
    let excess = counted.saturating_sub(limit);
    old.into_iter()
        .filter(|revision| !is_live(revision))
        .take(excess)
        .map(ResourceExt::name_any)
        .collect()
}

/// Deletes the revisions `names` of `namespace` (those gone already are skipped).
///
/// # Errors
/// When the server cannot be written.
pub(super) async fn prune_history(
    context: &Context,
    namespace: &str,
    names: &[String],
) -> Result<(), ReconcileError> {
    let api: Api<ControllerRevision> = Api::namespaced(context.client.clone(), namespace);
    for name in names {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(name: &str, number: i64, image: &str, hash: &str) -> ControllerRevision {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"controller-revision-hash": hash}},
            "data": revision_data(&template(image)),
            "revision": number,
        }))
        .expect("a revision")
    }

    fn template(image: &str) -> Value {
        json!({"spec": {"containers": [{"name": "c", "image": image}]}})
    }

    fn history(revisions: Vec<ControllerRevision>, update: &str) -> History {
        History {
            revisions,
            update_name: update.to_owned(),
            update_hash: String::new(),
            collision_count: 0,
        }
    }

    #[test]
    fn the_newest_revision_of_the_template_is_kept() {
        let revisions = [revision("a", 1, "a", "1"), revision("b", 2, "b", "2")];
        assert_eq!(
            plan(&revisions, &revision_data(&template("b"))),
            Step::Keep(1)
        );
    }

    #[test]
    fn an_older_revision_of_the_template_is_renumbered_after_the_newest() {
        let revisions = [
            revision("a", 1, "a", "1"),
            revision("b", 2, "b", "2"),
            revision("c", 3, "c", "3"),
        ];
        assert_eq!(
            plan(&revisions, &revision_data(&template("a"))),
            Step::Renumber(0, 4)
        );
    }

    #[test]
    fn a_new_template_gets_the_next_number() {
        let revisions = [revision("a", 1, "a", "1"), revision("b", 5, "b", "2")];
        assert_eq!(
            plan(&revisions, &revision_data(&template("z"))),
            Step::Create(6)
        );
        assert_eq!(plan(&[], &revision_data(&template("z"))), Step::Create(1));
    }

    #[test]
    fn revisions_sort_by_number_then_name() {
        let mut revisions = vec![
            revision("c", 2, "c", "3"),
            revision("b", 1, "b", "2"),
            revision("a", 2, "a", "1"),
        ];
        sort(&mut revisions);
        let names: Vec<String> = revisions.iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["b", "a", "c"]);
    }

    #[test]
    fn collisions_change_the_hash_and_none_keeps_the_template_hash() {
        let template = template("a");
        assert_eq!(
            revision_hash(&template, 0),
            template_hash(&serde_json::to_string(&template).expect("json"))
        );
        assert_ne!(revision_hash(&template, 0), revision_hash(&template, 1));
    }

    #[test]
    fn stateful_sets_prune_the_oldest_revisions_nothing_uses_beyond_the_limit() {
        let history = history(
            (1..=6)
                .map(|number| {
                    let name = format!("r{number}");
                    revision(&name, number, &name, &name)
                })
                .collect(),
            "r6",
        );
        // r2 is a pod's, r6 the update revision: of r1, r3, r4, r5, two stay.
        let live = |revision: &ControllerRevision| revision.name_any() == "r2";
        assert_eq!(
            prunable(Keeper::StatefulSet, &history, live, Some(2)),
            ["r1", "r3"]
        );
        assert!(prunable(Keeper::StatefulSet, &history, live, None).is_empty());
        assert!(prunable(Keeper::StatefulSet, &history, live, Some(-1)).is_empty());
        assert_eq!(
            prunable(Keeper::StatefulSet, &history, live, Some(0)),
            ["r1", "r3", "r4", "r5"]
        );
    }

    #[test]
    fn daemon_sets_count_live_revisions_against_the_limit_but_keep_them() {
        let history = history(
            (1..=6)
                .map(|number| {
                    let name = format!("r{number}");
                    revision(&name, number, &name, &name)
                })
                .collect(),
            "r6",
        );
        // Five old revisions, limit 2: three go, r2 is a pod's and stays.
        let live = |revision: &ControllerRevision| {
            revision
                .labels()
                .get("controller-revision-hash")
                .map(String::as_str)
                == Some("r2")
        };
        assert_eq!(
            prunable(Keeper::DaemonSet, &history, live, Some(2)),
            ["r1", "r3", "r4"]
        );
    }
}
