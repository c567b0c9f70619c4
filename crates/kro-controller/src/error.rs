//! Why a reconcile fails.

/// Why a reconcile failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error(transparent)]
    Kind(#[from] crate::kinds::KindError),
    #[error("{0}")]
    Other(String),
}
