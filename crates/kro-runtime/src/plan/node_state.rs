//! Where a node stands in a plan (ready, waiting, skipped, failed) and why, for people.

use std::fmt;

use kro_graph::{FieldPath, NodeId};

use crate::evaluate::{FieldProblem, Problem};
use crate::observed::{ListKey, ObjectKey, Read};

/// Where a node stands in this plan.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeState {
    /// Observed (or computed) and ready: dependents may use it.
    Ready,
    /// Not ready yet; the reason says what it waits for.
    Waiting(Wait),
    /// Not part of the instance this time: its objects are not applied (and are pruned).
    Skipped(Skip),
    /// An error the author must fix; the node and its dependents stop here.
    Failed(NodeError),
}

impl NodeState {
    /// Whether dependents may proceed: ready or skipped.
    pub fn is_settled(&self) -> bool {
        matches!(self, NodeState::Ready | NodeState::Skipped(_))
    }
}

/// What a node waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Wait {
    /// Level barrier: a node of an earlier level is not ready.
    Level {
        /// The first level that is not ready.
        level: usize,
        /// Its nodes that are not ready.
        nodes: Vec<NodeId>,
    },
    /// Wavefront: these dependencies are not ready.
    Dependencies(Vec<NodeId>),
    /// An expression reads data that is not there yet.
    Data {
        /// The field (in the RGD) of the expression.
        path: FieldPath,
        /// The expression.
        expression: String,
        /// What is missing.
        reason: String,
    },
    /// The desired objects are not observed yet (not applied, or not read back).
    Applied(Vec<ObjectKey>),
    /// A readyWhen condition does not hold (or reads data that is not there yet).
    ReadyWhen {
        /// The condition.
        expression: String,
        /// The collection item it failed for, when per item.
        item: Option<usize>,
        /// Why it could not be evaluated, if it could not.
        pending: Option<String>,
    },
    /// Objects of the node are being deleted (they carry a deletionTimestamp): the node waits
    /// until they are gone and can be created again.
    Terminating(Vec<ObjectKey>),
    /// An object of a resource without readyWhen is not ready by the rules of its kind
    /// ([`PlanOptions::kind_readiness`](crate::PlanOptions::kind_readiness)).
    Kind {
        /// The object.
        key: ObjectKey,
        /// What it waits for ("1 of 2 replicas available").
        reason: String,
    },
    /// The externalRef's object does not exist.
    NotFound(ObjectKey),
    /// The externalRef's object or list has not been read yet (see [`Plan::reads`](crate::Plan::reads)).
    Read(Read),
}

/// Why a node is skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// An includeWhen condition is false.
    IncludeWhen(String),
    /// A dependency is skipped (skipping is contagious, as upstream).
    Dependency(NodeId),
}

/// An error of one node, at a place in the RGD.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeError {
    /// The RGD field (`spec.resources[1].template.spec.replicas`).
    pub path: FieldPath,
    /// The expression, when an expression failed.
    pub expression: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        if let Some(expression) = &self.expression {
            write!(f, "expression {expression:?}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Level { level, nodes } => write!(
                f,
                "waiting for level {level} to be ready ({})",
                nodes.join(", ")
            ),
            Wait::Dependencies(ids) => write!(f, "waiting for {} to be ready", ids.join(", ")),
            Wait::Data {
                path,
                expression,
                reason,
            } => write!(
                f,
                "{path}: expression {expression:?} is waiting for data: {reason}"
            ),
            Wait::Applied(keys) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                write!(f, "waiting for {} to be applied", keys.join(", "))
            }
            Wait::ReadyWhen {
                expression,
                item,
                pending,
            } => {
                write!(f, "readyWhen {expression:?} ")?;
                if let Some(item) = item {
                    write!(f, "for item {item} ")?;
                }
                match pending {
                    Some(reason) => write!(f, "is waiting for data: {reason}"),
                    None => f.write_str("is false"),
                }
            }
            Wait::Terminating(keys) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                write!(f, "{} is being deleted", keys.join(", "))
            }
            Wait::Kind { key, reason } => write!(f, "{key}: {reason}"),
            Wait::NotFound(key) => write!(f, "{key} does not exist"),
            Wait::Read(Read::Object(key)) => write!(f, "{key} has not been read"),
            Wait::Read(Read::List(list)) => write!(f, "{} has not been listed", list_name(list)),
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::IncludeWhen(expression) => write!(f, "includeWhen {expression:?} is false"),
            Skip::Dependency(id) => write!(f, "{id} is skipped"),
        }
    }
}

fn list_name(list: &ListKey) -> String {
    let kind = if list.group.is_empty() {
        list.kind.clone()
    } else {
        format!("{}.{}", list.kind, list.group)
    };
    match &list.namespace {
        Some(namespace) => format!("{kind} in namespace {namespace}"),
        None => format!("{kind} in all namespaces"),
    }
}

pub(super) fn problem_state(path: FieldPath, problem: Problem) -> NodeState {
    match problem {
        Problem::Pending { expression, reason } => NodeState::Waiting(Wait::Data {
            path,
            expression,
            reason,
        }),
        Problem::Failed {
            expression,
            message,
        } => NodeState::Failed(NodeError {
            path,
            expression: Some(expression),
            message,
        }),
    }
}

pub(super) fn field_problem_state(base: &FieldPath, mut problems: Vec<FieldProblem>) -> NodeState {
    // Errors come first: a real error outranks data still to come.
    let first = problems.remove(0);
    problem_state(base.join(&first.path), first.problem)
}
