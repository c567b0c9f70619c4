//! The rollout of a graph's newest revision over the instances of its kind, under the RGD's
//! propagation policy (gate `PropagationControl`; see [`kro_graph::propagation`]).
//!
//! The instance controller reconciles an instance against the newest revision only once the
//! rollout has let it move; until then the instance is left as it is (not reconciled at all:
//! its objects keep the old revision's content). An instance that kro has never reconciled
//! (no finalizer yet) moves at once: it has nothing to roll.
//!
//! One task per kind evaluates the policy whenever an instance changes, the graph changes, the
//! rate allows the next move or a progress deadline passes (and every 30 s in any case). It
//! moves instances in propagation order while the policy allows, halts when an instance that
//! moved is not Ready on the revision within the progress deadline, and keeps the RGD's
//! `Propagated` condition, which it hands to the RGD controller.
//!
//! Each instance records its revision in `status`: the condition `RevisionReconciled` (reason
//! `Revision<N>`, the revision it was last reconciled against; `True` once it is Ready on it)
//! and `observedRevision` (the last revision it was Ready on).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kro_graph::metadata::FINALIZER;
use kro_graph::propagation::{
    Candidate, PropagationPolicy, REVISION_RECONCILED, propagation_order, revision_reason,
};
use kube::api::DynamicObject;
use serde_json::{Value as Json, json};

use super::GraphVersion;
use crate::object_json::text;
use crate::rgd_status::{ConditionValue, Propagated};
use crate::watches::InstanceRef;

/// How often the policy is evaluated again when nothing wakes it (#1259's suggestion).
const POLL: Duration = Duration::from_secs(30);

/// The rollout of one kind's newest revision.
pub(crate) struct Rollout {
    state: Mutex<RolloutState>,
    /// Whether the instance watch has listed every instance: until then the policy is not
    /// evaluated (an empty cache would say every instance is on the revision).
    synced: std::sync::atomic::AtomicBool,
    wake: tokio::sync::Notify,
    /// Tells the RGD controller that `Propagated` changed.
    on_change: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct RolloutState {
    /// The revision instances move to.
    target: Option<i64>,
    /// The instances this process let move to `target` (by UID), with when.
    moved: HashMap<String, Instant>,
    /// When the last instance moved (for the rate).
    last_move: Option<Instant>,
    /// The instances this process let move at once as new (never reconciled by kro): they
    /// count in the waves, but no progress deadline holds them.
    fresh: std::collections::HashSet<String>,
    /// The RGD's `Propagated`, when a policy is in force.
    propagated: Option<ConditionValue>,
    /// The revision `propagated` was computed for.
    evaluated: Option<i64>,
}

/// What one evaluation found.
pub(crate) struct Step {
    /// The instances to reconcile now (they moved).
    pub(crate) moved: Vec<InstanceRef>,
    /// When to evaluate again at the latest.
    pub(crate) next: Duration,
}

/// The revision an instance is governed by under a policy: the graph's, when it has a policy
/// and a revision.
pub(crate) fn governed(graph: &GraphVersion) -> Option<(&PropagationPolicy, i64)> {
    graph.graph.propagation.as_ref().zip(graph.revision)
}

impl Rollout {
    /// A rollout that calls `on_change` when `Propagated` changes.
    pub(crate) fn new(on_change: Box<dyn Fn() + Send + Sync>) -> Rollout {
        Rollout {
            state: Mutex::default(),
            synced: std::sync::atomic::AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            on_change,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RolloutState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The instance watch has listed every instance: the policy may be evaluated.
    pub(crate) fn synced(&self) {
        self.synced
            .store(true, std::sync::atomic::Ordering::Release);
        self.wake();
    }

    /// Asks for an evaluation soon.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits for a wake, or `next`.
    pub(crate) async fn wait(&self, next: Duration) {
        tokio::select! {
            () = self.wake.notified() => {}
            () = tokio::time::sleep(next) => {}
        }
    }

    /// The RGD's `Propagated` condition for `graph`: absent without a policy, kept as it is
    /// until the policy has been evaluated for the graph's revision (a value computed for the
    /// previous revision would be stamped with the RGD's new generation).
    pub(crate) fn propagated(&self, graph: &GraphVersion) -> Propagated {
        let Some((_, target)) = governed(graph) else {
            return Propagated::Absent;
        };
        let state = self.state();
        match &state.propagated {
            Some(value) if state.evaluated == Some(target) => Propagated::Is(value.clone()),
            _ => Propagated::Keep,
        }
    }

    /// Starts over for `target` when it is a new revision.
    fn retarget(state: &mut RolloutState, target: Option<i64>) {
        if state.target != target {
            state.target = target;
            state.moved.clear();
            state.fresh.clear();
            state.last_move = None;
        }
    }

    /// Whether `instance` may be reconciled against `graph`: always without a policy; under
    /// one, once it moved to the graph's revision (or when kro never reconciled it).
    pub(crate) fn admits(&self, instance: &Json, uid: &str, graph: &GraphVersion) -> bool {
        let Some((_, target)) = governed(graph) else {
            return true;
        };
        if on_revision(instance, target) {
            return true;
        }
        // Only the rollout task moves to a new revision: a reconcile that took the graph
        // before it changed must not start the rollout over.
        let mut state = self.state();
        let current = state.target == Some(target);
        if current && state.moved.contains_key(uid) {
            return true;
        }
        if !has_finalizer(instance) {
            if current {
                state.moved.insert(uid.to_owned(), Instant::now());
                state.fresh.insert(uid.to_owned());
            }
            return true;
        }
        false
    }

    /// Evaluates the policy over `instances`: moves those it lets move, and keeps
    /// `Propagated`.
    pub(crate) fn step(
        &self,
        graph: &GraphVersion,
        instances: &[std::sync::Arc<DynamicObject>],
    ) -> Step {
        if !self.synced.load(std::sync::atomic::Ordering::Acquire) {
            return Step {
                moved: Vec::new(),
                next: POLL,
            };
        }
        let Some((policy, target)) = governed(graph) else {
            let changed = {
                let mut state = self.state();
                Self::retarget(&mut state, None);
                state.evaluated = None;
                state.propagated.take().is_some()
            };
            if changed {
                (self.on_change)();
            }
            return Step {
                moved: Vec::new(),
                next: POLL,
            };
        };
        let now = Instant::now();
        let wall = chrono::Utc::now();
        let mut state = self.state();
        Self::retarget(&mut state, Some(target));
        let mut candidates = Vec::new();
        let mut keys: HashMap<String, (String, InstanceRef)> = HashMap::new();
        let mut next = POLL;
        let mut halted: Option<String> = None;
        for instance in instances {
            if instance.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Ok(object) = serde_json::to_value(&**instance) else {
                continue;
            };
            let uid = instance.metadata.uid.clone().unwrap_or_default();
            let key = InstanceRef::of(instance);
            let id = key.to_string();
            let revision = condition(&object, REVISION_RECONCILED);
            let on_target = on_revision(&object, target);
            let ready_on_target =
                on_target && revision.is_some_and(|c| text(c, "/status") == "True");
            let moved_at = state.moved.get(&uid).copied();
            let updated = on_target || moved_at.is_some();
            if updated && !ready_on_target && !state.fresh.contains(&uid) {
                // How long it has not been Ready on the revision: since its condition last
                // changed once reconciled against it, else since this process let it move.
                let since_condition = on_target
                    .then(|| {
                        let since = revision.map(|c| text(c, "/lastTransitionTime"))?;
                        let since = chrono::DateTime::parse_from_rfc3339(since).ok()?;
                        (wall - since.with_timezone(&chrono::Utc)).to_std().ok()
                    })
                    .flatten();
                let elapsed = since_condition
                    .or_else(|| moved_at.map(|at| now.duration_since(at)))
                    .unwrap_or_default();
                match policy.progress_deadline.checked_sub(elapsed) {
                    Some(left) if !left.is_zero() => next = next.min(left),
                    _ if halted.is_none() => {
                        let why = condition(&object, "Ready")
                            .map(|c| text(c, "/message"))
                            .filter(|message| !message.is_empty())
                            .unwrap_or("it reports no reason");
                        halted = Some(format!(
                            "instance {id} is not Ready on revision {target} after {}: {why}",
                            humantime(policy.progress_deadline)
                        ));
                    }
                    _ => {}
                }
            }
            let ready = if updated {
                ready_on_target
            } else {
                condition(&object, "Ready").is_some_and(|c| text(c, "/status") == "True")
            };
            keys.insert(id.clone(), (uid, key));
            candidates.push(Candidate {
                id,
                object,
                updated,
                ready,
            });
        }
        // Instances gone since they moved are forgotten.
        let live: std::collections::HashSet<&str> =
            keys.values().map(|(uid, _)| uid.as_str()).collect();
        state.moved.retain(|uid, _| live.contains(uid.as_str()));
        state.fresh.retain(|uid| live.contains(uid.as_str()));
        let mut moved = Vec::new();
        let mut failure = None;
        // Each instance converted to CEL once per step, however many evaluations follow.
        let prepared = match policy.prepare(&candidates) {
            Ok(prepared) => prepared,
            Err(error) => {
                failure = Some(error);
                kro_graph::propagation::Prepared::default()
            }
        };
        if halted.is_none() && failure.is_none() {
            loop {
                if let (Some(rate), Some(last)) = (policy.rate, state.last_move) {
                    let ready_at = last + rate.interval();
                    if ready_at > now {
                        if candidates.iter().any(|candidate| !candidate.updated) {
                            next = next.min(ready_at - now);
                        }
                        break;
                    }
                }
                propagation_order(&mut candidates);
                let mut chosen = None;
                for index in 0..candidates.len() {
                    if candidates[index].updated {
                        continue;
                    }
                    match policy.may_move(&prepared, &candidates, index) {
                        Ok(true) => {
                            chosen = Some(index);
                            break;
                        }
                        Ok(false) => {}
                        Err(error) => {
                            failure = Some(error);
                            break;
                        }
                    }
                }
                let Some(index) = chosen else { break };
                let candidate = &mut candidates[index];
                candidate.updated = true;
                candidate.ready = false;
                if let Some((uid, key)) = keys.get(&candidate.id) {
                    state.moved.insert(uid.clone(), now);
                    moved.push(key.clone());
                }
                state.last_move = Some(now);
                if !moved.is_empty() {
                    next = next.min(policy.progress_deadline);
                }
            }
        }
        let total = candidates.len();
        let on_target = candidates
            .iter()
            .filter(|candidate| candidate.updated && candidate.ready)
            .count();
        let propagated = propagated(target, on_target, total, halted, failure);
        let changed =
            state.propagated.as_ref() != Some(&propagated) || state.evaluated != Some(target);
        state.propagated = Some(propagated);
        state.evaluated = Some(target);
        drop(state);
        if changed {
            (self.on_change)();
        }
        Step { moved, next }
    }
}

/// `Propagated` for `on_target` of `total` instances Ready on revision `target`.
fn propagated(
    target: i64,
    on_target: usize,
    total: usize,
    halted: Option<String>,
    failure: Option<String>,
) -> ConditionValue {
    let count = format!("{on_target}/{total} instances on revision {target}");
    if let Some(error) = failure {
        return ConditionValue::unknown("PropagationPolicyFailed", format!("{error}; {count}"));
    }
    if on_target == total {
        return ConditionValue::holds(
            "AllInstancesUpdated",
            format!("all {total} instances on revision {target}"),
        );
    }
    match halted {
        Some(why) => ConditionValue::fails("PropagationHalted", format!("{why}; {count}")),
        None => ConditionValue::fails("PropagationInProgress", count),
    }
}

/// A duration as Go prints one (`10m0s`).
fn humantime(duration: Duration) -> String {
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

/// The instance's condition of `type_`.
fn condition<'a>(instance: &'a Json, type_: &str) -> Option<&'a Json> {
    instance
        .pointer("/status/conditions")
        .and_then(Json::as_array)?
        .iter()
        .find(|condition| condition["type"] == type_)
}

/// Whether the instance was last reconciled against revision `target`.
fn on_revision(instance: &Json, target: i64) -> bool {
    condition(instance, REVISION_RECONCILED)
        .is_some_and(|condition| text(condition, "/reason") == revision_reason(target))
}

fn has_finalizer(instance: &Json) -> bool {
    instance
        .pointer("/metadata/finalizers")
        .and_then(Json::as_array)
        .is_some_and(|finalizers| finalizers.iter().any(|f| f == FINALIZER))
}

/// Adds what an instance reconciled against revision `revision` records to the status kro
/// writes: `RevisionReconciled` (kept before `Ready`, its transition time kept while its status
/// and reason hold) and `observedRevision` (the revision once Ready on it, else the last one).
pub(crate) fn record_revision(wanted: &mut Json, instance: &Json, revision: i64, now: &str) {
    let ready = wanted
        .pointer("/conditions")
        .and_then(Json::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| text(c, "/status") == "True");
    let reason = revision_reason(revision);
    let (status, message) = if ready {
        ("True", format!("Ready on revision {revision}"))
    } else {
        (
            "False",
            format!("reconciled against revision {revision}; not Ready yet"),
        )
    };
    let previous = condition(instance, REVISION_RECONCILED);
    let transition = previous
        .filter(|previous| {
            text(previous, "/status") == status && text(previous, "/reason") == reason
        })
        .map_or_else(
            || now.to_owned(),
            |previous| text(previous, "/lastTransitionTime").to_owned(),
        );
    let mut entry = json!({
        "type": REVISION_RECONCILED,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    });
    if let Some(generation) = instance.pointer("/metadata/generation") {
        entry["observedGeneration"] = generation.clone();
    }
    let observed = if ready {
        Some(json!(revision))
    } else {
        instance.pointer("/status/observedRevision").cloned()
    };
    let Some(status) = wanted.as_object_mut() else {
        return;
    };
    if let Some(observed) = observed {
        status.insert("observedRevision".to_owned(), observed);
    }
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Json::Array(Vec::new()));
    if let Some(conditions) = conditions.as_array_mut() {
        conditions.retain(|c| c["type"] != REVISION_RECONCILED);
        let at = conditions
            .iter()
            .position(|c| c["type"] == "Ready")
            .unwrap_or(conditions.len());
        conditions.insert(at, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_condition_keeps_its_time_while_it_holds() {
        let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let mut wanted = ready.clone();
        record_revision(
            &mut wanted,
            &json!({"metadata": {"generation": 2}}),
            3,
            "t1",
        );
        assert_eq!(wanted["observedRevision"], 3);
        assert_eq!(wanted["conditions"][0]["reason"], "Revision3");
        assert_eq!(wanted["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(wanted["conditions"][1]["type"], "Ready");
        let instance = json!({"metadata": {"generation": 2}, "status": wanted.clone()});
        let mut again = ready.clone();
        record_revision(&mut again, &instance, 3, "t2");
        assert_eq!(again, wanted);
        // A new revision that is not Ready yet: the old revision stays observed.
        let mut moving = json!({"conditions": [{"type": "Ready", "status": "False"}]});
        record_revision(&mut moving, &instance, 4, "t3");
        assert_eq!(moving["observedRevision"], 3);
        assert_eq!(moving["conditions"][0]["status"], "False");
        assert_eq!(moving["conditions"][0]["reason"], "Revision4");
        assert_eq!(moving["conditions"][0]["lastTransitionTime"], "t3");
    }

    #[test]
    fn propagated_counts_and_names_the_halt() {
        assert_eq!(
            propagated(5, 42, 100, None, None),
            ConditionValue::fails("PropagationInProgress", "42/100 instances on revision 5")
        );
        assert_eq!(
            propagated(5, 3, 3, None, None),
            ConditionValue::holds("AllInstancesUpdated", "all 3 instances on revision 5")
        );
        let halted = propagated(
            5,
            0,
            3,
            Some("instance default/a is not Ready".into()),
            None,
        );
        assert_eq!(halted.reason, "PropagationHalted");
        assert!(
            halted
                .message
                .starts_with("instance default/a is not Ready; 0/3")
        );
        assert_eq!(humantime(Duration::from_secs(600)), "10m0s");
        assert_eq!(humantime(Duration::from_secs(5)), "5s");
    }
}
