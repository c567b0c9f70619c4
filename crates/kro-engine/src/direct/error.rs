//! Why a direct deploy or delete failed, and what a failed deploy leaves.

use std::time::Duration;

use kro_runtime::{AdmissionError, NodeError, NodeState, ObjectKey, Plan};
use serde_json::Value as Json;

use super::ParentRef;
use super::parent::ParentError;
use crate::error::{ObjectError, api_message};
use crate::kinds::KindError;

/// Why a direct deploy or delete failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectError {
    /// The instance is not valid for the RGD.
    #[error("the instance: {0}")]
    Admission(#[from] AdmissionError),
    /// The parent ConfigMap could not be named, read, written or trusted.
    #[error(transparent)]
    Parent(#[from] ParentError),
    /// No parent ConfigMap for the instance.
    #[error("{0} does not exist: nothing was deployed for this instance (or it was deleted)")]
    NotDeployed(ParentRef),
    /// A node of the graph failed (an expression, a status the RGD reads, a Job that failed).
    #[error("resource {node} (level {level}): {error}")]
    Node {
        /// The node.
        node: String,
        /// Its level.
        level: usize,
        /// What went wrong, at its place in the RGD.
        error: NodeError,
    },
    /// A status field or an author condition of the RGD failed.
    #[error("the instance status: {}", errors.join("; "))]
    Status {
        /// Each failure, at its place in the RGD.
        errors: Vec<String>,
        /// The first, as the planner reported it.
        first: NodeError,
    },
    /// An object of the instance could not be read, applied or deleted.
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// A kind is not served.
    #[error(transparent)]
    Kind(KindError),
    /// An object was still there at the deadline.
    #[error("{key} was not gone by the deadline")]
    DeleteTimedOut {
        /// The object.
        key: Box<ObjectKey>,
    },
    /// The timeout passed; what was still waiting.
    #[error("timed out waiting for: {}", waiting.join("; "))]
    TimedOut {
        /// Each resource still waiting, with its level and reason.
        waiting: Vec<String>,
    },
    /// The caller asked to stop; what was left.
    #[error("stopped; left waiting: {}", if waiting.is_empty() { "nothing".to_owned() } else { waiting.join("; ") })]
    Stopped {
        /// Each resource not done, with its state.
        waiting: Vec<String>,
    },
    /// Objects needed applying round after round (someone else keeps changing them).
    #[error("these objects are changed again after every apply (another writer?): {}", .0.join(", "))]
    Unsettled(Vec<String>),
    /// The cluster does not serve ResourceGraphDefinitions.
    #[error(
        "the cluster does not serve ResourceGraphDefinitions (kro.run/v1alpha1): install kro, or deploy without it (--mode direct)"
    )]
    KroMissing,
    /// The server refused an object handed to the controller.
    #[error("applying {key}: {}", api_message(source))]
    Submit {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// The controller refused an object for good.
    #[error("{key}: {reason}")]
    Refused {
        /// The object.
        key: Box<ObjectKey>,
        /// What its status says.
        reason: String,
    },
    /// An answer could not be represented as JSON (a bug).
    #[error("an object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

impl DirectError {
    /// A stable CamelCase reason (for logs, events and scripts); an object's failure reads as
    /// the instance controller's for the same cause.
    pub fn reason(&self) -> &'static str {
        match self {
            DirectError::Admission(_) => "InvalidInstance",
            DirectError::Parent(error) => error.reason(),
            DirectError::NotDeployed(_) => "NotDeployed",
            DirectError::Node { .. } => "ResourceFailed",
            DirectError::Status { .. } => "StatusFailed",
            DirectError::Object(error) => error.reason(),
            DirectError::Kind(_) => "KindNotServed",
            DirectError::DeleteTimedOut { .. } | DirectError::TimedOut { .. } => "TimedOut",
            DirectError::Stopped { .. } => "Stopped",
            DirectError::Unsettled(_) => "Unsettled",
            DirectError::KroMissing => "KroNotInstalled",
            DirectError::Submit { .. } => "SubmitFailed",
            DirectError::Refused { .. } => "Refused",
            DirectError::Json(_) => "InternalError",
        }
    }
}

/// How long past the timeout a request under way may take before the whole run gives up.
pub const REQUEST_GRACE: Duration = Duration::from_secs(2);

/// Runs `work` within `timeout` and [`REQUEST_GRACE`] (no limit without a timeout). The run's
/// own wait reports a timeout with what was waiting; this bounds the requests (a server that
/// stops answering) a moment later, so the timeout always holds.
pub(super) async fn within<T>(
    timeout: Option<Duration>,
    work: impl Future<Output = Result<T, DirectError>>,
) -> Result<T, DirectError> {
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout + REQUEST_GRACE, work)
            .await
            .unwrap_or_else(|_| {
                Err(DirectError::TimedOut {
                    waiting: vec!["an answer from the API server".to_owned()],
                })
            }),
        None => work.await,
    }
}

/// What rolling back a failed deploy did.
#[derive(Debug)]
pub enum Rollback {
    /// Not asked for.
    NotAsked,
    /// What this run created, deleted (in order).
    Done(Vec<ObjectKey>),
    /// Rolling back failed too.
    Failed(Box<DirectError>),
}

/// A failed deploy: why, what it had created, and the rollback.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ApplyFailure {
    /// Why it failed.
    #[source]
    pub error: DirectError,
    /// The instance with the status of the last plan, when it got that far.
    pub instance: Option<Json>,
    /// What this run created.
    pub created: Vec<ObjectKey>,
    /// What became of it.
    pub rollback: Rollback,
}

/// The first failed node, as an error naming it and its level.
pub(super) fn first_failure(current: &Plan) -> Option<DirectError> {
    current.nodes.iter().find_map(|node| match &node.state {
        NodeState::Failed(error) => Some(DirectError::Node {
            node: node.id.to_string(),
            level: node.level,
            error: error.clone(),
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::ApplyError;

    #[test]
    fn an_objects_failure_has_the_reason_the_instance_controller_gives_it() {
        let key = || {
            Box::new(ObjectKey {
                group: String::new(),
                kind: "ConfigMap".to_owned(),
                namespace: Some("default".to_owned()),
                name: "web".to_owned(),
            })
        };
        let owned = DirectError::from(ObjectError::OwnedElsewhere {
            key: key(),
            level: Some(0),
            applyset: "applyset-x-v1".to_owned(),
        });
        assert_eq!(owned.reason(), "OwnedByAnotherInstance");
        let refused = DirectError::from(ObjectError::Apply {
            key: key(),
            level: Some(1),
            source: Box::new(ApplyError::Api(kube::Error::Api(
                kube::core::Status::failure("denied", "Forbidden")
                    .with_code(403)
                    .boxed(),
            ))),
        });
        assert_eq!(refused.reason(), "ApplyFailed");
        assert_eq!(
            refused.to_string(),
            "applying ConfigMap/default/web (level 1): denied",
            "the server's own words"
        );
        let parent = DirectError::from(ParentError::Name("x".repeat(254)));
        assert_eq!(parent.reason(), "ParentNameTooLong");
    }
}
