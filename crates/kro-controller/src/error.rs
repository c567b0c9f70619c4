//! Why a reconcile fails, and why the objects of an instance could not be reconciled.
//!
//! Errors keep their cause (`#[source]`) all the way: the runtime's `ControllerFacts` hold them
//! as `StepFailure`s, and they become text only in a condition message or an event.

use crate::schemas::SchemaReadError;
use kro_engine::error::ObjectError;
use kro_engine::kinds::KindError;

/// Why a reconcile failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    /// A request to the API server failed.
    #[error("{request}: {source}")]
    Api {
        /// What the request was for.
        request: Request,
        /// Why it failed.
        #[source]
        source: kube::Error,
    },
    /// A kind a graph uses is not served.
    #[error(transparent)]
    Kind(KindError),
    /// An object read from the API server cannot be represented as JSON (a bug).
    #[error("an object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The schemas of the kinds an RGD uses could not be read.
    #[error("reading schemas: {0}")]
    Schemas(#[source] SchemaReadError),
    /// Objects of an instance could not be applied, pruned or deleted: every problem met.
    #[error("{0}")]
    Resources(ResourceErrors),
    /// The controller may not handle kinds a graph uses (its RBAC).
    #[error("{0}")]
    MissingPermissions(String),
    /// The reconcile panicked (a bug); recovered and retried.
    #[error("the reconcile panicked: {0}")]
    Panicked(String),
    /// The reconcile took longer than the settings allow and was abandoned.
    #[error("the reconcile did not finish within {}s; abandoned, to be retried", .0.as_secs())]
    TimedOut(std::time::Duration),
}

impl ReconcileError {
    /// The error of a failed request for `request`.
    pub(crate) fn api(request: Request) -> impl FnOnce(kube::Error) -> ReconcileError {
        move |source| ReconcileError::Api { request, source }
    }

    /// A stable CamelCase reason (for logs, events and metric labels).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Api { .. } => "ApiError",
            ReconcileError::Kind(_) => "KindNotServed",
            ReconcileError::Json(_) => "InternalError",
            ReconcileError::Schemas(_) => "SchemaReadFailed",
            ReconcileError::TimedOut(_) => "ReconcileTimedOut",
            ReconcileError::Panicked(_) => "ReconcilePanicked",
            ReconcileError::MissingPermissions(_) => "MissingPermissions",
            // The first problem names the reconcile's failure.
            ReconcileError::Resources(problems) => problems
                .0
                .first()
                .map_or("ResourcesFailed", ResourceError::reason),
        }
    }
}

/// What a request to the API server was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// Adding kro's finalizer to an RGD.
    AddFinalizer,
    /// Removing kro's finalizer from an RGD or an instance.
    RemoveFinalizer,
    /// Reading the CRD of an RGD's kind.
    ReadCrd,
    /// Creating or updating the CRD of an RGD's kind.
    WriteCrd,
    /// Deleting the CRDs of a deleted RGD (`--allow-crd-deletion`).
    DeleteCrd,
    /// Asking the API server what the controller may do (SelfSubjectAccessReview).
    ReviewAccess,
    /// Writing the status of an RGD or an instance.
    WriteStatus,
    /// Applying kro's metadata (finalizer, labels, ApplySet inventory) to an instance.
    ApplyInstanceMetadata,
    /// Creating, updating, adopting, releasing or deleting an instance of a `<Kind>Set`.
    WriteSetInstance,
    /// Listing an RGD's GraphRevisions.
    ListGraphRevisions,
    /// Creating, adopting or verifying a GraphRevision.
    WriteGraphRevision,
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Request::AddFinalizer => "adding the finalizer",
            Request::RemoveFinalizer => "removing the finalizer",
            Request::ReadCrd => "reading the CRD",
            Request::WriteCrd => "writing the CRD",
            Request::DeleteCrd => "deleting the CRD",
            Request::ReviewAccess => "reviewing the controller's access",
            Request::WriteStatus => "writing the status",
            Request::ApplyInstanceMetadata => "applying the instance's metadata",
            Request::WriteSetInstance => "writing an instance of the Set",
            Request::ListGraphRevisions => "listing the graph revisions",
            Request::WriteGraphRevision => "writing a graph revision",
        })
    }
}

/// Why the objects of an instance could not be reconciled: what its `ResourcesReady`
/// condition and `ReconcileFailed` event say. Apart from the inventory on the instance itself,
/// these are the engine's [`ObjectError`]s, which `kro apply` reports in the same words.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResourceError {
    /// The ApplySet inventory on the instance could not be written.
    #[error("updating the ApplySet inventory: {0}")]
    Inventory(#[source] Box<ReconcileError>),
    /// An object (or the objects of a kind) could not be read, applied, pruned or deleted.
    #[error(transparent)]
    Object(#[from] ObjectError),
}

impl ResourceError {
    /// A stable CamelCase reason (for logs, events and metric labels).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            ResourceError::Inventory(_) => "InventoryUpdateFailed",
            ResourceError::Object(error) => error.reason(),
        }
    }
}

/// A reconcile that failed on one object.
impl From<ObjectError> for ReconcileError {
    fn from(error: ObjectError) -> Self {
        ReconcileError::Resources(vec![ResourceError::Object(error)].into())
    }
}

/// Every problem met with the objects of an instance, shared between the reconcile's error and
/// the facts the instance's `ResourcesReady` condition is written from.
#[derive(Debug, Clone)]
pub(crate) struct ResourceErrors(pub(crate) std::sync::Arc<[ResourceError]>);

impl From<Vec<ResourceError>> for ResourceErrors {
    fn from(problems: Vec<ResourceError>) -> Self {
        ResourceErrors(problems.into())
    }
}

/// Every problem, separated by `; `.
impl std::fmt::Display for ResourceErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, problem) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ResourceErrors {}

#[cfg(test)]
mod tests {
    use super::*;
    use kro_runtime::ObjectKey;

    fn key(name: &str) -> Box<ObjectKey> {
        Box::new(ObjectKey {
            group: String::new(),
            kind: "ConfigMap".to_owned(),
            namespace: Some("default".to_owned()),
            name: name.to_owned(),
        })
    }

    #[test]
    fn every_problem_of_a_reconcile_is_kept_with_its_reason() {
        let error = ReconcileError::Resources(ResourceErrors::from(vec![
            ResourceError::Object(ObjectError::OwnedElsewhere {
                key: key("a"),
                level: None,
                applyset: "applyset-x".to_owned(),
            }),
            ResourceError::Object(ObjectError::OwnedElsewhere {
                key: key("b"),
                level: None,
                applyset: "applyset-y".to_owned(),
            }),
        ]));
        assert_eq!(error.reason(), "OwnedByAnotherInstance");
        let ReconcileError::Resources(problems) = &error else {
            panic!("{error:?}");
        };
        assert!(matches!(
            &problems.0[..],
            [
                ResourceError::Object(ObjectError::OwnedElsewhere { key: a, .. }),
                ResourceError::Object(ObjectError::OwnedElsewhere { key: b, .. }),
            ] if a.name == "a" && b.name == "b"
        ));
        assert_eq!(
            ReconcileError::Resources(ResourceErrors::from(Vec::new())).reason(),
            "ResourcesFailed"
        );
    }
}
