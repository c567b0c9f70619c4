//! Which members of an instance's ApplySet left its plan and may be pruned: the same decision
//! for the controller and for a deploy with no controller (`kro apply`).

use std::collections::HashSet;

use serde_json::Value as Json;

use crate::metadata::{INSTANCE_ID_LABEL, NODE_ID_LABEL};
use crate::observed::ObjectKey;
use crate::plan::{NodeState, Plan, Wait};

/// Whether `member` (an object labelled part of the instance's ApplySet) may be pruned under
/// `plan`: it carries the instance's UID `instance_uid`, the plan no longer wants it, and its
/// node has settled what it wants — gone from the graph, skipped, or rendered (ready, or
/// waiting only for its own objects). A node that waits for data or dependencies, or failed,
/// may still want the object, so it is kept.
pub fn prunable(
    plan: &Plan,
    desired: &HashSet<&ObjectKey>,
    member: &Json,
    instance_uid: &str,
) -> bool {
    let Some(key) = ObjectKey::of(member) else {
        return false;
    };
    let labels = &member["metadata"]["labels"];
    if labels[INSTANCE_ID_LABEL] != instance_uid || desired.contains(&key) {
        return false;
    }
    let node_id = labels[NODE_ID_LABEL].as_str().unwrap_or_default();
    match plan.node(node_id) {
        None => true,
        Some(node) => match &node.state {
            NodeState::Skipped(_)
            | NodeState::Ready
            | NodeState::Waiting(
                Wait::Applied(_)
                | Wait::ReadyWhen { .. }
                | Wait::Kind { .. }
                | Wait::Terminating(_),
            ) => true,
            NodeState::Waiting(_) | NodeState::Failed(_) => false,
        },
    }
}

/// The keys of every object `plan` wants applied.
pub fn desired_keys(plan: &Plan) -> HashSet<&ObjectKey> {
    plan.nodes
        .iter()
        .flat_map(|node| node.desired.iter().map(|desired| &desired.key))
        .collect()
}
