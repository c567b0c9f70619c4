//! The convergence loop, written once for every driver: plan → observe → apply the lowest
//! level whose objects changed (all of them at once) → plan again with the answers, until
//! nothing more can be applied; and the rules it applies on the way (which objects a batch
//! holds, whose objects are not taken over, what the ApplySet inventory must name).
//!
//! A driver says how objects are observed (the controller's watch caches, direct deploy's
//! live reads), what stands for the instance (the instance object, direct deploy's
//! ConfigMap), and what becomes of each outcome ([`Driver`]); [`converge`] runs the loop.

use std::collections::BTreeSet;
use std::future::Future;

use kro_graph::metadata::APPLYSET_PART_OF_LABEL;
use kro_graph::{CompiledGraph, NodeKind};
use kro_runtime::{DesiredObject, Inventory, NodeState, ObjectKey, Observed, Plan};
use kro_schema::GroupKind;
use serde_json::Value as Json;

use crate::apply::{AppliedObject, Applier};
use crate::error::ObjectError;

/// The objects of one level to apply next.
#[derive(Debug, Default)]
pub struct Batch {
    /// The level.
    pub level: usize,
    /// Its objects that need applying (see [`Applier::needs_apply`]).
    pub objects: Vec<DesiredObject>,
    /// Its objects that exist and belong to another ApplySet: left out of `objects`.
    pub owned_elsewhere: Vec<OwnedElsewhere>,
}

/// An object the plan wants that exists and is a member of another ApplySet (another
/// instance's, or another tool's): kro does not take it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedElsewhere {
    /// The object.
    pub key: ObjectKey,
    /// The level of its node.
    pub level: usize,
    /// The ApplySet it is part of.
    pub applyset: String,
}

impl From<OwnedElsewhere> for ObjectError {
    fn from(found: OwnedElsewhere) -> Self {
        ObjectError::OwnedElsewhere {
            key: Box::new(found.key),
            level: Some(found.level),
            applyset: found.applyset,
        }
    }
}

/// The ApplySet `object` is a member of (its `applyset.kubernetes.io/part-of` label), if any.
///
/// ```
/// let object = serde_json::json!({"metadata": {"labels": {
///     "applyset.kubernetes.io/part-of": "applyset-abc-v1"}}});
/// assert_eq!(kro_engine::converge::member_of(&object), Some("applyset-abc-v1"));
/// assert_eq!(kro_engine::converge::member_of(&serde_json::json!({})), None);
/// ```
pub fn member_of(object: &Json) -> Option<&str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(APPLYSET_PART_OF_LABEL))
        .and_then(Json::as_str)
        .filter(|id| !id.is_empty())
}

/// The objects of the lowest level of `current` that need applying in `scope` (see
/// [`Applier::needs_apply`]), for the ApplySet `applyset`. An object that exists and belongs
/// to another ApplySet is left out and named in
/// [`owned_elsewhere`](Batch::owned_elsewhere); one being deleted is left to go; those
/// `skip` names are left out. An empty batch: nothing to apply.
pub fn next_batch(
    applier: &Applier,
    scope: &str,
    applyset: &str,
    current: &Plan,
    observed: &Observed,
    skip: impl Fn(&ObjectKey) -> bool,
) -> Batch {
    for (level, nodes) in current.levels.iter().enumerate() {
        let mut batch = Batch {
            level,
            ..Batch::default()
        };
        for node in nodes.iter().filter_map(|index| current.nodes.get(*index)) {
            let mut gate = Gate::of(node, applier, scope, observed);
            for (position, desired) in node.desired.iter().enumerate() {
                if skip(&desired.key) {
                    continue;
                }
                let existing = observed.get(&desired.key);
                if let Some(existing) = existing {
                    if existing.pointer("/metadata/deletionTimestamp").is_some() {
                        continue;
                    }
                    if let Some(owner) = member_of(existing)
                        && owner != applyset
                    {
                        batch.owned_elsewhere.push(OwnedElsewhere {
                            key: desired.key.clone(),
                            level,
                            applyset: owner.to_owned(),
                        });
                        continue;
                    }
                }
                if applier.needs_apply(scope, desired, existing)
                    && gate.as_mut().is_none_or(|gate| gate.admits(position))
                {
                    batch.objects.push(desired.clone());
                }
            }
        }
        if !batch.objects.is_empty() || !batch.owned_elsewhere.is_empty() {
            return batch;
        }
    }
    Batch::default()
}

/// The `propagateWhen` of a collection node (KREP-006) over its items, in collection order:
/// which items that need applying may be applied now. An item is updated when it exists and
/// needs no apply; ready as the plan observed it. Each item let through counts as updated and
/// not ready for the next one asked about.
struct Gate<'a> {
    policy: &'a kro_graph::propagation::PropagationPolicy,
    node: &'a str,
    candidates: Vec<kro_graph::propagation::Candidate>,
    /// The candidates' objects as CEL values; `Err` (every item waits) when one cannot be
    /// converted.
    prepared: Result<kro_graph::propagation::Prepared, String>,
}

impl<'a> Gate<'a> {
    /// The gate of `node`, when it has a policy.
    fn of(
        node: &'a kro_runtime::NodePlan,
        applier: &Applier,
        scope: &str,
        observed: &Observed,
    ) -> Option<Gate<'a>> {
        let policy = node.propagation.as_ref()?;
        let candidates = node
            .desired
            .iter()
            .enumerate()
            .map(|(position, desired)| {
                let existing = observed.get(&desired.key);
                let object = existing.unwrap_or(&desired.object).clone();
                // A cache that has yet to show kro's last write of the item shows it as it was
                // before (ready, perhaps): it is not ready on what was written until it does.
                let behind = applier.awaits_cache(scope, &desired.key, existing);
                kro_graph::propagation::Candidate {
                    id: kro_graph::propagation::candidate_id(&object),
                    updated: existing.is_some() && !applier.needs_apply(scope, desired, existing),
                    ready: !behind && node.items_ready.get(position).copied().unwrap_or(false),
                    object,
                }
            })
            .collect::<Vec<_>>();
        let prepared = policy.prepare(&candidates);
        Some(Gate {
            policy,
            node: node.id.as_str(),
            candidates,
            prepared,
        })
    }

    /// Whether the item at `position` may be applied now (then it counts as moved).
    fn admits(&mut self, position: usize) -> bool {
        let moved = match &self.prepared {
            Ok(prepared) => self.policy.may_move(prepared, &self.candidates, position),
            Err(error) => Err(error.clone()),
        };
        match moved {
            Ok(true) => {
                if let Some(candidate) = self.candidates.get_mut(position) {
                    candidate.updated = true;
                    candidate.ready = false;
                }
                true
            }
            Ok(false) => false,
            Err(error) => {
                tracing::warn!(node = %self.node, %error, "propagateWhen failed: the item waits");
                false
            }
        }
    }
}

/// Adds the kind of `key` to `inventory`, and its namespace when it is not the parent's
/// (`parent_namespace`): the ApplySet parent's own namespace is implied.
pub fn add_member(inventory: &mut Inventory, key: &ObjectKey, parent_namespace: &str) {
    inventory.group_kinds.insert(key.group_kind());
    if let Some(namespace) = &key.namespace
        && namespace != parent_namespace
    {
        inventory.namespaces.insert(namespace.clone());
    }
}

/// The kinds of the template nodes of `current` that wait (for a level, data or readiness):
/// their objects are still to come, so the inventory names them already (ApplySet allows a
/// superset), and an instance whose levels bring new kinds has its inventory written once.
/// A skipped node's kind is not among them, nor is a failed node's (its objects stay members
/// if they exist).
pub fn waiting_kinds<'a>(
    graph: &'a CompiledGraph,
    current: &'a Plan,
) -> impl Iterator<Item = GroupKind> + 'a {
    current
        .nodes
        .iter()
        .filter(|node| matches!(node.state, NodeState::Waiting(_)))
        .filter_map(|node| graph.nodes.iter().find(|compiled| compiled.id == node.id))
        .filter_map(|compiled| match &compiled.kind {
            NodeKind::Template { gvk, .. } => Some(gvk.group_kind()),
            _ => None,
        })
}

/// The inventory after pruning: the kinds and namespaces of `desired` and of the members
/// `kept`, and the kinds of the nodes still waiting.
pub fn trimmed_inventory<'a>(
    graph: &CompiledGraph,
    current: &Plan,
    desired: impl IntoIterator<Item = &'a ObjectKey>,
    kept: impl IntoIterator<Item = &'a ObjectKey>,
    parent_namespace: &str,
) -> Inventory {
    let mut inventory = Inventory::default();
    for key in desired.into_iter().chain(kept) {
        add_member(&mut inventory, key, parent_namespace);
    }
    inventory
        .group_kinds
        .extend(waiting_kinds(graph, current).collect::<BTreeSet<_>>());
    inventory
}

/// How many rounds of applies a loop may take before the objects it keeps applying are
/// reported as unsettled (someone else keeps changing them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rounds {
    /// Rounds taken.
    pub taken: usize,
    /// Rounds allowed.
    pub limit: usize,
}

impl Rounds {
    /// Four rounds a level and eight more: a level applied, planned again with its answers,
    /// and applied again once or twice when its readiness changes what it renders.
    pub fn for_graph(graph: &CompiledGraph) -> Rounds {
        Rounds {
            taken: 0,
            limit: 4 * graph.levels.len() + 8,
        }
    }
}

/// Where a [`converge`] ended.
#[derive(Debug)]
pub struct Converged {
    /// The last plan.
    pub plan: Plan,
    /// The objects still to apply when the round limit was reached (empty when nothing more
    /// could be applied).
    pub unsettled: Vec<ObjectKey>,
}

/// One driver of the loop: what it observes and plans with, and what becomes of each step.
pub trait Driver: Send {
    /// Why the loop stopped early.
    type Error: Send;

    /// The ApplySet the instance's objects are members of.
    fn applyset(&self) -> &str;

    /// The scope of the applier's memory (the instance's UID).
    fn scope(&self) -> &str;

    /// Plans with what `observed` holds; an error (the caller stopped, a deadline passed)
    /// ends the loop.
    fn plan(
        &mut self,
        observed: &Observed,
    ) -> impl Future<Output = Result<Plan, Self::Error>> + Send;

    /// Fills `observed` with what `current` needs and it does not hold: `true` when what was
    /// learned can change the plan (then it is made again before anything is applied).
    fn fill(
        &mut self,
        current: &Plan,
        observed: &mut Observed,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Whether to apply what `current` asks for (`false`: `current` is final), or why not
    /// to go on at all.
    fn proceed(&mut self, current: &Plan) -> Result<bool, Self::Error>;

    /// Whether `key` is left out of every batch.
    fn skips(&self, key: &ObjectKey) -> bool {
        let _ = key;
        false
    }

    /// Objects of the next batch that belong to another ApplySet (they are not applied).
    fn owned_elsewhere(&mut self, found: Vec<OwnedElsewhere>) -> Result<(), Self::Error>;

    /// Widens the ApplySet inventory to the objects of `batch` before they are applied, so
    /// that they are found again even if the process stops right after: `false` when it could
    /// not (and recorded why), so that nothing is applied and `current` is final.
    fn widen_inventory(
        &mut self,
        current: &Plan,
        batch: &Batch,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Records what applying one object of `batch` did; what it records in `observed` is what
    /// the next plan sees.
    fn applied(&mut self, batch: &Batch, applied: AppliedObject, observed: &mut Observed);

    /// After every object of a batch is recorded: an error ends the loop.
    fn batch_done(&mut self) -> Result<(), Self::Error>;
}

/// Plans and applies until nothing more can be applied (see the module doc): the lowest level
/// whose objects changed is applied at once with `applier`, and the plan made again with the
/// answers, so that a level that is ready lets the next proceed in the same call.
///
/// # Errors
/// Whatever the driver's steps return.
pub async fn converge<D: Driver>(
    driver: &mut D,
    applier: &Applier,
    observed: &mut Observed,
    rounds: &mut Rounds,
) -> Result<Converged, D::Error> {
    loop {
        let current = driver.plan(observed).await?;
        if driver.fill(&current, observed).await? {
            continue;
        }
        if !driver.proceed(&current)? {
            return Ok(Converged {
                plan: current,
                unsettled: Vec::new(),
            });
        }
        let mut batch = next_batch(
            applier,
            driver.scope(),
            driver.applyset(),
            &current,
            observed,
            |key| driver.skips(key),
        );
        if !batch.owned_elsewhere.is_empty() {
            driver.owned_elsewhere(std::mem::take(&mut batch.owned_elsewhere))?;
        }
        if batch.objects.is_empty() {
            return Ok(Converged {
                plan: current,
                unsettled: Vec::new(),
            });
        }
        rounds.taken += 1;
        if rounds.taken > rounds.limit {
            return Ok(Converged {
                plan: current,
                unsettled: batch
                    .objects
                    .into_iter()
                    .map(|desired| desired.key)
                    .collect(),
            });
        }
        if !driver.widen_inventory(&current, &batch).await? {
            return Ok(Converged {
                plan: current,
                unsettled: Vec::new(),
            });
        }
        tracing::debug!(
            level = batch.level,
            objects = batch.objects.len(),
            "applying"
        );
        let scope = driver.scope().to_owned();
        for applied in applier.apply_level(&scope, &batch.objects, observed).await {
            driver.applied(&batch, applied, observed);
        }
        driver.batch_done()?;
    }
}
