//! What a `<Kind>Set` does next, decided from what it observes: how many instances to create,
//! which to delete and which to update, the counts its status reports, and whether it owns,
//! adopts or releases an instance. Pure functions of the Set and its instances, so every rule
//! of a rollout is tested without a server; the Set controller does the requests.
//!
//! The rules, as a ReplicaSet's and the scaling design's:
//! - instances being deleted do not count: a Set replaces them at once;
//! - scaling down deletes the newest first (by `creationTimestamp`, then name);
//! - a template change updates the oldest first, and never lets more than
//!   `maxConcurrentUpdated` instances be updated (or new) and not yet Ready: an instance that
//!   does not become Ready holds the rollout, with the reason its `Ready` condition gives;
//! - an instance is Ready when its `Ready` condition is `True` for its current generation;
//! - the template an instance was written from is the hash in its
//!   [`SET_TEMPLATE_HASH_LABEL`] label;
//! - one reconcile makes at most [`BURST_REPLICAS`] of those writes ([`SetPlan::batch`]), the
//!   creates and updates in slow-start rounds of 1, 2, 4, … ([`slow_start_rounds`]), as a
//!   ReplicaSet's sync does.

use std::cmp::Ordering;
use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kro_graph::metadata::SET_TEMPLATE_HASH_LABEL;
use kube::api::DynamicObject;
use serde_json::Value as Json;

/// A Set spec field that cannot be used, with its path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SetSpecError {
    /// The field path, such as `spec.replicas`.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// What a Set asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetSpec {
    /// `spec.replicas` (default 1).
    pub replicas: usize,
    /// `spec.rollingUpdate.maxConcurrentUpdated` (default 1).
    pub max_concurrent_updated: usize,
    /// The hash of `spec.template` ([`template_hash`]).
    pub template_hash: String,
}

/// The largest `spec.replicas` a Set accepts (the CRD declares it int32).
const MAX_REPLICAS: u64 = i32::MAX as u64;

fn count(
    set: &Json,
    pointer: &str,
    field: &'static str,
    minimum: u64,
) -> Result<usize, SetSpecError> {
    let Some(value) = set.pointer(pointer).filter(|value| !value.is_null()) else {
        return Ok(1);
    };
    let number = value.as_u64().ok_or_else(|| SetSpecError {
        field,
        message: format!("must be a whole number of at least {minimum}, not {value}"),
    })?;
    if number < minimum || number > MAX_REPLICAS {
        return Err(SetSpecError {
            field,
            message: format!("must be between {minimum} and {MAX_REPLICAS}, not {number}"),
        });
    }
    usize::try_from(number).map_err(|_| SetSpecError {
        field,
        message: format!("{number} is too large"),
    })
}

impl SetSpec {
    /// The spec of the Set object `set`.
    ///
    /// # Errors
    /// A count that is not a whole number in range, or a Set with no `spec.template`.
    pub fn of(set: &Json) -> Result<SetSpec, SetSpecError> {
        let replicas = count(set, "/spec/replicas", "spec.replicas", 0)?;
        let max_concurrent_updated = count(
            set,
            "/spec/rollingUpdate/maxConcurrentUpdated",
            "spec.rollingUpdate.maxConcurrentUpdated",
            1,
        )?;
        let template = set
            .pointer("/spec/template")
            .filter(|template| template.is_object())
            .ok_or_else(|| SetSpecError {
                field: "spec.template",
                message: "is required: the spec of the instances the Set runs".to_owned(),
            })?;
        Ok(SetSpec {
            replicas,
            max_concurrent_updated,
            template_hash: template_hash(template),
        })
    }
}

/// A short, stable hash of a Set template, for the [`SET_TEMPLATE_HASH_LABEL`] label: FNV-1a
/// (32 bits, as `pod-template-hash`) of the template's JSON with object keys in sorted order,
/// so two writes of the same template hash alike whatever their key order.
pub fn template_hash(template: &Json) -> String {
    let mut hash = Fnv1a::default();
    hash_value(template, &mut hash);
    format!("{:08x}", hash.0)
}

struct Fnv1a(u32);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0x811c_9dc5)
    }
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u32::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// Writes `value` as compact JSON with sorted keys. Iterative, so no template is too deep.
fn hash_value(value: &Json, hash: &mut Fnv1a) {
    enum Step<'a> {
        Value(&'a Json),
        Text(&'static str),
        Key(&'a str),
    }
    let mut steps = vec![Step::Value(value)];
    while let Some(step) = steps.pop() {
        match step {
            Step::Text(text) => hash.write(text.as_bytes()),
            Step::Key(key) => {
                hash.write(Json::String(key.to_owned()).to_string().as_bytes());
                hash.write(b":");
            }
            Step::Value(Json::Array(items)) => {
                hash.write(b"[");
                steps.push(Step::Text("]"));
                for (index, item) in items.iter().enumerate().rev() {
                    steps.push(Step::Value(item));
                    if index > 0 {
                        steps.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Json::Object(map)) => {
                hash.write(b"{");
                steps.push(Step::Text("}"));
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for (index, key) in keys.iter().enumerate().rev() {
                    steps.push(Step::Value(&map[*key]));
                    steps.push(Step::Key(key));
                    if index > 0 {
                        steps.push(Step::Text(","));
                    }
                }
            }
            Step::Value(scalar) => hash.write(scalar.to_string().as_bytes()),
        }
    }
}

/// What the Set controller needs to know of one of its instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.creationTimestamp` (RFC 3339, as the API server writes it: compared as text).
    pub created: String,
    /// The [`SET_TEMPLATE_HASH_LABEL`] label, when present.
    pub template_hash: Option<String>,
    /// Ready for its current generation.
    pub ready: bool,
    /// Why it is not Ready (its `Ready` condition's reason and message), when it is not.
    pub not_ready_because: Option<String>,
    /// It has a `deletionTimestamp`.
    pub deleting: bool,
}

impl Member {
    /// The member that the instance object `instance` is.
    pub fn of(instance: &DynamicObject) -> Member {
        let meta = &instance.metadata;
        let ready_condition = instance
            .data
            .pointer("/status/conditions")
            .and_then(Json::as_array)
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|condition| condition["type"] == "Ready")
            });
        let generation = meta.generation;
        let current = ready_condition.is_some_and(|condition| {
            condition.get("observedGeneration").and_then(Json::as_i64) == generation
        });
        let ready =
            current && ready_condition.is_some_and(|condition| condition["status"] == "True");
        let not_ready_because = (!ready).then(|| match ready_condition {
            None => "it has no Ready condition yet".to_owned(),
            Some(_) if !current => "its Ready condition is from an earlier generation".to_owned(),
            Some(condition) => {
                let field = |name: &str| condition.get(name).and_then(Json::as_str).unwrap_or("");
                match (field("reason"), field("message")) {
                    ("", "") => format!("Ready is {}", field("status")),
                    (reason, "") => format!("Ready is {} ({reason})", field("status")),
                    ("", message) => format!("Ready is {}: {message}", field("status")),
                    (reason, message) => {
                        format!("Ready is {} ({reason}): {message}", field("status"))
                    }
                }
            }
        });
        Member {
            name: meta.name.clone().unwrap_or_default(),
            created: meta
                .creation_timestamp
                .as_ref()
                .map(|created| created.0.to_string())
                .unwrap_or_default(),
            template_hash: meta
                .labels
                .as_ref()
                .and_then(|labels| labels.get(SET_TEMPLATE_HASH_LABEL))
                .cloned(),
            ready,
            not_ready_because,
            deleting: meta.deletion_timestamp.is_some(),
        }
    }

    fn is_current(&self, spec: &SetSpec) -> bool {
        self.template_hash.as_deref() == Some(spec.template_hash.as_str())
    }
}

/// Oldest first: by creation time, then by name.
fn oldest_first(a: &&Member, b: &&Member) -> Ordering {
    a.created.cmp(&b.created).then_with(|| a.name.cmp(&b.name))
}

/// The counts a Set's status reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetCounts {
    /// Instances not being deleted.
    pub replicas: usize,
    /// Of those, the Ready ones.
    pub ready_replicas: usize,
    /// Of those, the ones written from the current template.
    pub updated_replicas: usize,
}

/// An instance the rollout waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The instance.
    pub name: String,
    /// Why it is not Ready.
    pub because: String,
}

/// Where a Set's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// As many instances as asked, every one from the current template and Ready.
    Complete,
    /// Instances still to create, delete, update, or to become Ready.
    Progressing {
        /// Instances from an older template not updated by this plan.
        outdated: usize,
        /// Instances from the current template that are not Ready, oldest first: they hold
        /// further updates once `maxConcurrentUpdated` of them (counting new ones) wait.
        waiting: Vec<Waiting>,
    },
}

/// What a Set does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetPlan {
    /// How many instances to create (from the current template).
    pub create: usize,
    /// The instances to delete, newest first.
    pub delete: Vec<String>,
    /// The instances to write the current template to, oldest first.
    pub update: Vec<String>,
    /// The counts for the status, as observed (before this plan is carried out).
    pub counts: SetCounts,
    /// Where the rollout stands.
    pub rollout: Rollout,
}

/// The next step of a Set with `spec` whose instances are `members` (the instances it owns,
/// in any order).
pub fn plan_set(spec: &SetSpec, members: &[Member]) -> SetPlan {
    let mut active: Vec<&Member> = members.iter().filter(|member| !member.deleting).collect();
    active.sort_by(oldest_first);
    let counts = SetCounts {
        replicas: active.len(),
        ready_replicas: active.iter().filter(|member| member.ready).count(),
        updated_replicas: active
            .iter()
            .filter(|member| member.is_current(spec))
            .count(),
    };
    let surplus = active.len().saturating_sub(spec.replicas);
    let delete: Vec<String> = active
        .iter()
        .rev()
        .take(surplus)
        .map(|member| member.name.clone())
        .collect();
    let kept = &active[..active.len() - surplus];
    let create = spec.replicas.saturating_sub(active.len());
    let waiting: Vec<Waiting> = kept
        .iter()
        .filter(|member| member.is_current(spec) && !member.ready)
        .map(|member| Waiting {
            name: member.name.clone(),
            because: member
                .not_ready_because
                .clone()
                .unwrap_or_else(|| "it is not Ready".to_owned()),
        })
        .collect();
    let budget = spec
        .max_concurrent_updated
        .saturating_sub(waiting.len())
        .saturating_sub(create);
    let outdated: Vec<&&Member> = kept
        .iter()
        .filter(|member| !member.is_current(spec))
        .collect();
    let update: Vec<String> = outdated
        .iter()
        .take(budget)
        .map(|member| member.name.clone())
        .collect();
    let all_ready = kept.iter().all(|member| member.ready);
    let rollout = if create == 0 && delete.is_empty() && outdated.is_empty() && all_ready {
        Rollout::Complete
    } else {
        Rollout::Progressing {
            outdated: outdated.len() - update.len(),
            waiting,
        }
    };
    SetPlan {
        create,
        delete,
        update,
        counts,
        rollout,
    }
}

/// The most instances one reconcile of a Set creates, deletes or updates (kube-controller-
/// manager's `BurstReplicas`, the most Pods a ReplicaSet's sync creates or deletes). The rest
/// waits for the next reconcile, which reads the Set again: a Set of 100,000 reports its status
/// after each batch and obeys a change of `spec.replicas` at the next one.
pub const BURST_REPLICAS: usize = 500;

impl SetPlan {
    /// What one reconcile carries out of the plan: its first `limit` writes, deletes first
    /// (newest first), then creates, then updates (oldest first). A plan never both creates
    /// and deletes, and updates only what `maxConcurrentUpdated` leaves after the creates.
    pub fn batch(&self, limit: usize) -> SetBatch {
        let delete: Vec<String> = self.delete.iter().take(limit).cloned().collect();
        let left = limit - delete.len();
        let create = self.create.min(left);
        let left = left - create;
        SetBatch {
            create,
            delete,
            update: self.update.iter().take(left).cloned().collect(),
        }
    }
}

/// The writes one reconcile of a Set makes: a bounded part of its [`SetPlan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetBatch {
    /// How many instances to create.
    pub create: usize,
    /// The instances to delete, newest first.
    pub delete: Vec<String>,
    /// The instances to write the current template to, oldest first.
    pub update: Vec<String>,
}

impl SetBatch {
    /// Whether the batch writes nothing.
    pub fn is_empty(&self) -> bool {
        self.create == 0 && self.delete.is_empty() && self.update.is_empty()
    }
}

/// The rounds `count` writes are sent in, as a ReplicaSet's `slowStartBatch` sends Pod creates:
/// 1, then twice as many as the round before, the last round what remains (`count` 10 is 1, 2,
/// 4, 3). The writes of a round go together; a round with a failure is the last, so a template
/// or a quota that refuses every create costs one request, not `count`.
pub fn slow_start_rounds(count: usize) -> Vec<usize> {
    let mut rounds = Vec::new();
    let mut remaining = count;
    let mut size = 1;
    while remaining > 0 {
        let round = size.min(remaining);
        rounds.push(round);
        remaining -= round;
        size = size.saturating_mul(2);
    }
    rounds
}

/// The instances a Set created, deleted and updated, which its cache of instances must show
/// before it decides again (a ReplicaSet's "expectations"). A cache that lags the Set's own
/// writes would otherwise make it create twice, then delete the surplus (with creation times
/// alike to the second, possibly an older instance than it made), or update more instances at
/// once than `maxConcurrentUpdated` allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwaitedWrites {
    /// Instances created, to be seen in the cache.
    pub created: Vec<String>,
    /// Instances deleted, to be seen gone or being deleted.
    pub deleted: Vec<String>,
    /// Instances updated, with the template hash written to them, to be seen with it (or
    /// gone).
    pub updated: Vec<(String, String)>,
}

impl AwaitedWrites {
    /// Whether there is nothing to wait for.
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.deleted.is_empty() && self.updated.is_empty()
    }

    /// Whether `members`, the Set's instances as its cache holds them, show every write: each
    /// created instance is there, each deleted one gone or being deleted, each updated one
    /// labelled with the template written to it.
    pub fn seen_in(&self, members: &[Member]) -> bool {
        let members: HashMap<&str, &Member> = members
            .iter()
            .map(|member| (member.name.as_str(), member))
            .collect();
        self.seen_with(|name| members.get(name).map(|member| (*member).clone()))
    }

    /// [`seen_in`](Self::seen_in) with the instances looked up by name (`find`), so that the
    /// check costs one lookup per write, not a pass over every instance.
    pub fn seen_with(&self, find: impl Fn(&str) -> Option<Member>) -> bool {
        self.created.iter().all(|name| find(name).is_some())
            && self
                .deleted
                .iter()
                .all(|name| find(name).is_none_or(|member| member.deleting))
            && self.updated.iter().all(|(name, hash)| {
                find(name).is_none_or(|member| {
                    member.deleting || member.template_hash.as_deref() == Some(hash.as_str())
                })
            })
    }
}

/// How a Set stands to an instance of its kind in its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The Set is its controller and its labels match the Set's selector.
    Owned,
    /// It has no controller and its labels match: the Set takes it (unless the Set is being
    /// deleted).
    Adopt,
    /// The Set is its controller but its labels no longer match: the Set lets it go (removes
    /// its owner reference) and makes a replacement.
    Release,
    /// Another controller's, or not selected: none of the Set's business.
    Other,
}

/// How the Set with `set_uid` stands to `instance`, whose labels match the Set's selector when
/// `selected`; `set_deleting` when the Set has a `deletionTimestamp` (it adopts nothing then).
pub fn ownership(
    instance: &ObjectMeta,
    set_uid: &str,
    selected: bool,
    set_deleting: bool,
) -> Ownership {
    let controller = instance
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.as_str());
    let instance_deleting = instance.deletion_timestamp.is_some();
    match (controller, selected) {
        (Some(uid), true) if uid == set_uid => Ownership::Owned,
        (Some(uid), false) if uid == set_uid => Ownership::Release,
        (None, true) if !set_deleting && !instance_deleting => Ownership::Adopt,
        _ => Ownership::Other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An instance object from its JSON.
    fn object(instance: Json) -> DynamicObject {
        serde_json::from_value(instance).expect("an object")
    }

    const CURRENT: &str = "current";

    fn spec(replicas: usize, max_concurrent_updated: usize) -> SetSpec {
        SetSpec {
            replicas,
            max_concurrent_updated,
            template_hash: CURRENT.to_owned(),
        }
    }

    /// A member created at second `created`, from the current template when `current`.
    fn member(name: &str, created: u32, current: bool, ready: bool) -> Member {
        Member {
            name: name.to_owned(),
            created: format!("2026-01-01T00:{:02}:{:02}Z", created / 60, created % 60),
            template_hash: Some(if current { CURRENT } else { "old" }.to_owned()),
            ready,
            not_ready_because: (!ready).then(|| format!("{name} is starting")),
            deleting: false,
        }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_new_set_creates_its_replicas() {
        let plan = plan_set(&spec(3, 1), &[]);
        assert_eq!(plan.create, 3);
        assert!(plan.delete.is_empty() && plan.update.is_empty());
        assert_eq!(plan.counts, SetCounts::default());
        assert!(matches!(plan.rollout, Rollout::Progressing { .. }));
    }

    #[test]
    fn a_settled_set_does_nothing() {
        let members = [member("a", 1, true, true), member("b", 2, true, true)];
        let plan = plan_set(&spec(2, 1), &members);
        assert_eq!(
            (plan.create, plan.delete.len(), plan.update.len()),
            (0, 0, 0)
        );
        assert_eq!(plan.rollout, Rollout::Complete);
        assert_eq!(
            plan.counts,
            SetCounts {
                replicas: 2,
                ready_replicas: 2,
                updated_replicas: 2
            }
        );
    }

    #[test]
    fn scaling_down_deletes_the_newest_first_then_by_name() {
        let members = [
            member("c", 3, true, true),
            member("a", 1, true, true),
            member("e", 3, true, true),
            member("b", 2, true, true),
            member("d", 3, true, true),
        ];
        let plan = plan_set(&spec(2, 1), &members);
        assert_eq!(plan.delete, names(&["e", "d", "c"]));
        assert_eq!(plan.create, 0);
        assert_eq!(
            plan.counts.replicas, 5,
            "the status counts what is observed"
        );
        let plan = plan_set(&spec(0, 1), &members);
        assert_eq!(plan.delete, names(&["e", "d", "c", "b", "a"]));
    }

    #[test]
    fn instances_being_deleted_are_replaced_and_not_counted() {
        let mut going = member("a", 1, true, true);
        going.deleting = true;
        let members = [going, member("b", 2, true, true)];
        let plan = plan_set(&spec(2, 1), &members);
        assert_eq!(plan.create, 1);
        assert!(plan.delete.is_empty(), "it is being deleted already");
        assert_eq!(plan.counts.replicas, 1);
    }

    #[test]
    fn a_template_change_updates_the_oldest_first_up_to_the_limit() {
        let members = [
            member("e", 5, false, true),
            member("c", 3, false, true),
            member("a", 1, false, true),
            member("d", 4, false, true),
            member("b", 2, false, true),
        ];
        let plan = plan_set(&spec(5, 2), &members);
        assert_eq!(plan.update, names(&["a", "b"]));
        assert_eq!(
            plan.rollout,
            Rollout::Progressing {
                outdated: 3,
                waiting: Vec::new()
            }
        );
    }

    #[test]
    fn updated_instances_that_are_not_ready_hold_the_rollout() {
        // a and b were updated; b is not Ready yet: one more may go (limit 2).
        let members = [
            member("a", 1, true, true),
            member("b", 2, true, false),
            member("c", 3, false, true),
            member("d", 4, false, true),
        ];
        let plan = plan_set(&spec(4, 2), &members);
        assert_eq!(plan.update, names(&["c"]));
        // Both updated ones not Ready: nothing more until one is.
        let members = [
            member("a", 1, true, false),
            member("b", 2, true, false),
            member("c", 3, false, true),
        ];
        let plan = plan_set(&spec(3, 2), &members);
        assert!(plan.update.is_empty());
        assert_eq!(
            plan.rollout,
            Rollout::Progressing {
                outdated: 1,
                waiting: vec![
                    Waiting {
                        name: "a".to_owned(),
                        because: "a is starting".to_owned()
                    },
                    Waiting {
                        name: "b".to_owned(),
                        because: "b is starting".to_owned()
                    },
                ]
            }
        );
        assert_eq!(plan.counts.updated_replicas, 2);
        assert_eq!(plan.counts.ready_replicas, 1);
    }

    #[test]
    fn new_instances_count_against_the_update_limit() {
        let members = [member("a", 1, false, true), member("b", 2, false, true)];
        let plan = plan_set(&spec(3, 2), &members);
        assert_eq!(plan.create, 1);
        assert_eq!(plan.update, names(&["a"]), "one new + one updated = 2");
        let plan = plan_set(&spec(4, 2), &members);
        assert_eq!(plan.create, 2);
        assert!(plan.update.is_empty(), "scaling up is never held back");
    }

    #[test]
    fn scaling_down_during_a_rollout_deletes_before_it_updates() {
        let members = [
            member("a", 1, false, true),
            member("b", 2, false, true),
            member("c", 3, true, false),
        ];
        // c (newest) goes; it was the one not Ready, so the budget is free again.
        let plan = plan_set(&spec(2, 1), &members);
        assert_eq!(plan.delete, names(&["c"]));
        assert_eq!(plan.update, names(&["a"]));
    }

    #[test]
    fn outdated_instances_that_are_not_ready_do_not_hold_the_rollout() {
        let members = [member("a", 1, false, false), member("b", 2, false, false)];
        let plan = plan_set(&spec(2, 1), &members);
        assert_eq!(plan.update, names(&["a"]));
    }

    #[test]
    fn readiness_is_the_ready_condition_at_the_current_generation() {
        let instance = |generation: i64, observed: i64, status: &str| {
            json!({
                "metadata": {"name": "x", "generation": generation,
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                    "labels": {SET_TEMPLATE_HASH_LABEL: "abc"}},
                "status": {"conditions": [
                    {"type": "Ready", "status": status, "observedGeneration": observed,
                     "reason": "ResourcesNotReady", "message": "deployment is not available"}
                ]}
            })
        };
        let ready = Member::of(&object(instance(2, 2, "True")));
        assert!(ready.ready);
        assert_eq!(
            ready.created, "2026-01-01T00:00:00Z",
            "as the API server writes it"
        );
        assert_eq!(ready.template_hash.as_deref(), Some("abc"));
        assert_eq!(ready.not_ready_because, None);
        let stale = Member::of(&object(instance(3, 2, "True")));
        assert!(!stale.ready, "Ready for an earlier spec is not Ready");
        assert_eq!(
            stale.not_ready_because.as_deref(),
            Some("its Ready condition is from an earlier generation")
        );
        let failing = Member::of(&object(instance(2, 2, "False")));
        assert_eq!(
            failing.not_ready_because.as_deref(),
            Some("Ready is False (ResourcesNotReady): deployment is not available")
        );
        let fresh = Member::of(&object(json!({"metadata": {"name": "y"}})));
        assert!(!fresh.ready && fresh.template_hash.is_none() && !fresh.deleting);
        assert_eq!(
            fresh.not_ready_because.as_deref(),
            Some("it has no Ready condition yet")
        );
        let deleting = Member::of(&object(
            json!({"metadata": {"name": "z", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
        ));
        assert!(deleting.deleting);
    }

    #[test]
    fn the_spec_is_read_with_defaults_and_checked() {
        let set = json!({"spec": {"template": {"spec": {"size": 1}}}});
        let spec = SetSpec::of(&set).expect("defaults");
        assert_eq!((spec.replicas, spec.max_concurrent_updated), (1, 1));
        let set = json!({"spec": {"replicas": 0, "rollingUpdate": {"maxConcurrentUpdated": 3},
            "template": {"spec": {}}}});
        let spec = SetSpec::of(&set).expect("zero replicas is a Set scaled to nothing");
        assert_eq!((spec.replicas, spec.max_concurrent_updated), (0, 3));

        let error =
            SetSpec::of(&json!({"spec": {"replicas": -1, "template": {}}})).expect_err("negative");
        assert_eq!(error.field, "spec.replicas");
        let error =
            SetSpec::of(&json!({"spec": {"replicas": 1.5, "template": {}}})).expect_err("fraction");
        assert_eq!(error.field, "spec.replicas");
        let error = SetSpec::of(
            &json!({"spec": {"rollingUpdate": {"maxConcurrentUpdated": 0}, "template": {}}}),
        )
        .expect_err("a rollout that can never update");
        assert_eq!(error.field, "spec.rollingUpdate.maxConcurrentUpdated");
        assert!(error.to_string().contains("between 1 and"), "{error}");
        let error = SetSpec::of(&json!({"spec": {"replicas": 3_000_000_000u64, "template": {}}}))
            .expect_err("past int32");
        assert_eq!(error.field, "spec.replicas");
        let error = SetSpec::of(&json!({"spec": {"replicas": 1}})).expect_err("no template");
        assert_eq!(error.field, "spec.template");
    }

    #[test]
    fn the_template_hash_ignores_key_order_and_sees_every_change() {
        let one = json!({"spec": {"a": 1, "b": [1, {"x": "y", "w": null}], "c": "d"}});
        let same: Json = serde_json::from_str(
            r#"{"spec": {"c": "d", "b": [1, {"w": null, "x": "y"}], "a": 1}}"#,
        )
        .expect("JSON");
        assert_eq!(template_hash(&one), template_hash(&same));
        assert_eq!(template_hash(&one).len(), 8);
        for changed in [
            json!({"spec": {"a": 2, "b": [1, {"x": "y", "w": null}], "c": "d"}}),
            json!({"spec": {"a": 1, "b": [{"x": "y", "w": null}, 1], "c": "d"}}),
            json!({"spec": {"a": 1, "b": [1, {"x": "y"}], "c": "d"}}),
            json!({"spec": {"a": "1", "b": [1, {"x": "y", "w": null}], "c": "d"}}),
            json!({"spec": {"ac": 1, "b": [1, {"x": "y", "w": null}]}}),
        ] {
            assert_ne!(template_hash(&one), template_hash(&changed), "{changed}");
        }
        // Deep templates hash without recursion.
        let mut deep = json!(1);
        for _ in 0..100_000 {
            deep = Json::Array(vec![deep]);
        }
        assert_eq!(template_hash(&deep).len(), 8);
        drop_deep(deep);
    }

    /// Drops a deeply nested value without recursing (serde_json's drop recurses).
    fn drop_deep(mut value: Json) {
        let mut stack = Vec::new();
        loop {
            match &mut value {
                Json::Array(items) => stack.append(items),
                Json::Object(map) => stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v)),
                _ => {}
            }
            match stack.pop() {
                Some(next) => value = next,
                None => break,
            }
        }
    }

    #[test]
    fn a_set_owns_adopts_and_releases_as_a_replica_set_does() {
        let owner = |uid: &str| json!({"apiVersion": "v1", "kind": "X", "name": "x", "uid": uid});
        let with_owner = |uid: Option<&str>| {
            let mut owners = vec![owner("someone")];
            if let Some(uid) = uid {
                owners[0]["controller"] = json!(false);
                owners.push(owner(uid));
                owners[1]["controller"] = json!(true);
            }
            object(json!({"metadata": {"ownerReferences": owners}})).metadata
        };
        assert_eq!(
            ownership(&with_owner(Some("set")), "set", true, false),
            Ownership::Owned
        );
        assert_eq!(
            ownership(&with_owner(Some("set")), "set", false, false),
            Ownership::Release
        );
        assert_eq!(
            ownership(&with_owner(None), "set", true, false),
            Ownership::Adopt
        );
        assert_eq!(
            ownership(&with_owner(None), "set", true, true),
            Ownership::Other,
            "a Set being deleted adopts nothing"
        );
        assert_eq!(
            ownership(&with_owner(None), "set", false, false),
            Ownership::Other
        );
        assert_eq!(
            ownership(&with_owner(Some("other")), "set", true, false),
            Ownership::Other
        );
        let going =
            object(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})).metadata;
        assert_eq!(ownership(&going, "set", true, false), Ownership::Other);
    }

    #[test]
    fn slow_start_doubles_each_round_and_ends_with_what_remains() {
        assert_eq!(slow_start_rounds(0), Vec::<usize>::new());
        assert_eq!(slow_start_rounds(1), [1]);
        assert_eq!(slow_start_rounds(10), [1, 2, 4, 3]);
        assert_eq!(slow_start_rounds(15), [1, 2, 4, 8]);
        assert_eq!(
            slow_start_rounds(BURST_REPLICAS),
            [1, 2, 4, 8, 16, 32, 64, 128, 245]
        );
        for count in 0..2_000 {
            let rounds = slow_start_rounds(count);
            assert_eq!(rounds.iter().sum::<usize>(), count);
            assert!(rounds.windows(2).all(|pair| pair[1] <= 2 * pair[0]));
        }
    }

    #[test]
    fn a_batch_is_the_first_writes_of_the_plan_up_to_the_limit() {
        let plan = plan_set(&spec(20_000, 1), &[]);
        assert_eq!(
            plan.batch(BURST_REPLICAS),
            SetBatch {
                create: BURST_REPLICAS,
                delete: Vec::new(),
                update: Vec::new(),
            }
        );
        assert_eq!(plan.create, 20_000, "the plan keeps the whole difference");

        let members: Vec<Member> = (0..1_200)
            .map(|index| member(&format!("m{index:04}"), index, true, true))
            .collect();
        let plan = plan_set(&spec(0, 1), &members);
        let batch = plan.batch(BURST_REPLICAS);
        assert_eq!(batch.delete.len(), BURST_REPLICAS);
        assert_eq!(batch.delete, plan.delete[..BURST_REPLICAS], "newest first");
        assert_eq!(batch.delete[0], "m1199");

        // Creates and updates share the limit; a small plan goes whole.
        let members = [member("a", 1, false, true), member("b", 2, false, true)];
        let plan = plan_set(&spec(3, 2), &members);
        assert_eq!((plan.create, plan.update.len()), (1, 1));
        let whole = plan.batch(BURST_REPLICAS);
        assert_eq!((whole.create, whole.update.clone()), (1, names(&["a"])));
        let one = plan.batch(1);
        assert_eq!((one.create, one.update.len()), (1, 0));
        assert!(!one.is_empty() && plan.batch(0).is_empty());
    }

    #[test]
    fn awaited_writes_are_seen_once_the_cache_shows_each_create_and_delete() {
        let writes = AwaitedWrites {
            created: vec!["new".to_owned()],
            deleted: vec!["old".to_owned()],
            updated: Vec::new(),
        };
        let old = member("old", 0, true, true);
        let new = member("new", 1, true, false);
        let mut going = old.clone();
        going.deleting = true;
        assert!(AwaitedWrites::default().is_empty());
        assert!(AwaitedWrites::default().seen_in(&[]));
        assert!(!writes.is_empty());
        assert!(
            !writes.seen_in(std::slice::from_ref(&old)),
            "neither write seen"
        );
        assert!(
            !writes.seen_in(&[old.clone(), new.clone()]),
            "the delete not seen"
        );
        assert!(!writes.seen_in(&[going.clone()]), "the create not seen");
        assert!(writes.seen_in(&[going, new.clone()]));
        assert!(writes.seen_in(&[new]), "the deleted one is gone");

        let updated = AwaitedWrites {
            updated: vec![("a".to_owned(), CURRENT.to_owned())],
            ..AwaitedWrites::default()
        };
        assert!(!updated.is_empty());
        assert!(!updated.seen_in(&[member("a", 0, false, true)]));
        assert!(updated.seen_in(&[member("a", 0, true, false)]));
        assert!(updated.seen_in(&[]), "gone");
    }
}
