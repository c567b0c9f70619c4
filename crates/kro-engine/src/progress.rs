//! What a run is doing, for people: one [`Progress`] event per step, and the summaries of a
//! plan's nodes that events and errors quote.

use std::collections::HashMap;
use std::fmt;

use kro_runtime::{NodeState, ObjectKey, Plan};

use crate::direct::ParentRef;

/// What a deploy or delete is doing, for people (see its `Display`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Progress {
    /// The parent ConfigMap was written.
    Parent {
        /// Where it is.
        parent: ParentRef,
        /// Whether this run created it.
        created: bool,
    },
    /// An object was applied.
    Applied {
        /// The level of its node.
        level: usize,
        /// The object.
        key: ObjectKey,
        /// Whether it was created (else updated).
        created: bool,
    },
    /// A node waits.
    Waiting {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
        /// What for.
        reason: String,
    },
    /// A node became ready.
    Ready {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
    },
    /// A node is not part of the instance.
    Skipped {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
        /// Why.
        reason: String,
    },
    /// An object that left the plan was deleted.
    Pruned {
        /// The object.
        key: ObjectKey,
    },
    /// A dry run could not check an object: its kind is not served (yet).
    Unchecked {
        /// The level of its node.
        level: usize,
        /// The object.
        key: ObjectKey,
        /// Why.
        reason: String,
    },
    /// An object left the plan and would be pruned (a dry run deletes nothing).
    WouldPrune {
        /// The object.
        key: ObjectKey,
    },
    /// An object was handed to the controller (`apply_through_kro`).
    Submitted {
        /// The object.
        key: ObjectKey,
    },
    /// An object handed to the controller is not there yet.
    Awaiting {
        /// The object.
        key: ObjectKey,
        /// What its status says.
        reason: String,
    },
    /// An object handed to the controller is there.
    Settled {
        /// The object.
        key: ObjectKey,
        /// Its state.
        state: String,
    },
    /// An object was released instead of deleted (its lifecycle retains it, or the
    /// instance detaches on deletion): it stays, no longer kro's.
    Released {
        /// The object.
        key: ObjectKey,
    },
    /// An object was deleted and is gone.
    Deleted {
        /// The object.
        key: ObjectKey,
        /// Its apply order (deleted highest first).
        order: usize,
    },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::Parent { parent, created } => write!(
                f,
                "{parent}: ApplySet parent {}",
                if *created { "created" } else { "updated" }
            ),
            Progress::Applied {
                level,
                key,
                created,
            } => write!(
                f,
                "level {level}: {key} {}",
                if *created { "created" } else { "applied" }
            ),
            Progress::Waiting {
                level,
                node,
                reason,
            } => write!(f, "level {level}: {node} waiting: {reason}"),
            Progress::Ready { level, node } => write!(f, "level {level}: {node} ready"),
            Progress::Skipped {
                level,
                node,
                reason,
            } => write!(f, "level {level}: {node} skipped: {reason}"),
            Progress::Pruned { key } => write!(f, "pruned {key}, which left the plan"),
            Progress::Unchecked { level, key, reason } => {
                write!(f, "level {level}: {key} not checked: {reason}")
            }
            Progress::WouldPrune { key } => {
                write!(f, "would prune {key}, which left the plan")
            }
            Progress::Submitted { key } => write!(f, "{key} applied"),
            Progress::Awaiting { key, reason } => write!(f, "{key} waiting: {reason}"),
            Progress::Settled { key, state } => write!(f, "{key} {state}"),
            Progress::Released { key } => {
                write!(f, "released {key}: it stays, no longer managed by kro")
            }
            Progress::Deleted { key, order } => write!(f, "deleted {key} (apply order {order})"),
        }
    }
}

/// Where progress goes.
pub type Reporter<'a> = &'a (dyn Fn(&Progress) + Send + Sync);

/// Every node not ready or skipped: `id (level N): reason`.
pub(crate) fn unsettled(current: &Plan) -> Vec<String> {
    current
        .nodes
        .iter()
        .filter(|node| !node.state.is_settled())
        .map(|node| match &node.state {
            NodeState::Waiting(wait) => format!("{} (level {}): {wait}", node.id, node.level),
            NodeState::Failed(error) => format!("{} (level {}): {error}", node.id, node.level),
            _ => format!("{} (level {})", node.id, node.level),
        })
        .collect()
}

/// Reports the nodes whose state changed since last reported.
pub(crate) fn report_changes(
    current: &Plan,
    reported: &mut HashMap<String, String>,
    report: Reporter<'_>,
) {
    for node in &current.nodes {
        let (progress, fingerprint) = match &node.state {
            NodeState::Ready => (
                Progress::Ready {
                    level: node.level,
                    node: node.id.to_string(),
                },
                "ready".to_owned(),
            ),
            NodeState::Waiting(wait) => {
                let reason = wait.to_string();
                (
                    Progress::Waiting {
                        level: node.level,
                        node: node.id.to_string(),
                        reason: reason.clone(),
                    },
                    reason,
                )
            }
            NodeState::Skipped(skip) => {
                let reason = skip.to_string();
                (
                    Progress::Skipped {
                        level: node.level,
                        node: node.id.to_string(),
                        reason: reason.clone(),
                    },
                    format!("skipped {reason}"),
                )
            }
            NodeState::Failed(_) => continue,
        };
        if reported.get(node.id.as_str()) != Some(&fingerprint) {
            reported.insert(node.id.to_string(), fingerprint);
            report(&progress);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_a_line_per_event() {
        let key = ObjectKey {
            group: "apps".to_owned(),
            kind: "Deployment".to_owned(),
            namespace: Some("team".to_owned()),
            name: "web".to_owned(),
        };
        assert_eq!(
            Progress::Applied {
                level: 1,
                key: key.clone(),
                created: true
            }
            .to_string(),
            "level 1: Deployment.apps/team/web created"
        );
        assert_eq!(
            Progress::Deleted { key, order: 2 }.to_string(),
            "deleted Deployment.apps/team/web (apply order 2)"
        );
    }
}
