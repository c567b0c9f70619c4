//! The one vocabulary for what goes wrong with the objects of an instance, whichever driver met
//! it: the instance controller writes it into the `ResourcesReady` condition and a
//! `ReconcileFailed` event, direct deploy prints it. Each error has a stable [`reason`].
//!
//! [`reason`]: ObjectError::reason

use kro_runtime::ObjectKey;

use crate::apply::ApplyError;

/// The message of an API server's refusal (its `Status` message, not kube-rs's wrapping of
/// it), or the error itself when the server said nothing.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Why one object of an instance (or the objects of one kind) could not be read, applied,
/// pruned or deleted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectError {
    /// The server refused to apply an object.
    #[error("applying {}: {}", at(key, *level), apply_message(source))]
    Apply {
        /// The object.
        key: Box<ObjectKey>,
        /// Its level in the graph, where the driver tells it.
        level: Option<usize>,
        /// The refusal.
        #[source]
        source: Box<ApplyError>,
    },
    /// The object exists and belongs to another ApplySet (another instance, or another tool):
    /// it is not taken over.
    #[error(
        "{} belongs to another instance (ApplySet {applyset}): it is not taken over",
        at(key, *level)
    )]
    OwnedElsewhere {
        /// The object.
        key: Box<ObjectKey>,
        /// Its level in the graph, where the driver tells it.
        level: Option<usize>,
        /// The ApplySet it is part of.
        applyset: String,
    },
    /// An object could not be read.
    #[error("reading {key}: {}", api_message(source))]
    Read {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// The resources of a kind could not be discovered.
    #[error("discovering {kind}: {}", api_message(source))]
    Discover {
        /// The group-kind.
        kind: String,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// The members of the instance's ApplySet of one kind could not be listed.
    #[error("listing the instance's {kind} objects: {}", api_message(source))]
    ListMembers {
        /// The group-kind.
        kind: String,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// The objects of a kind a collection reference selects from could not be listed.
    #[error("listing {kind}: {}", api_message(source))]
    List {
        /// The group-kind.
        kind: String,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// An object that left the plan could not be deleted.
    #[error("pruning {key}: {}", api_message(source))]
    Prune {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// An object whose lifecycle retains it could not be released.
    #[error("releasing {key}: {}", api_message(source))]
    Release {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// An object of an instance being deleted could not be deleted.
    #[error("deleting {key}: {}", api_message(source))]
    Delete {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        #[source]
        source: Box<kube::Error>,
    },
}

impl ObjectError {
    /// A stable CamelCase reason (for conditions, events, logs, metric labels and scripts).
    pub fn reason(&self) -> &'static str {
        match self {
            ObjectError::Apply { source, .. } => source.reason(),
            ObjectError::OwnedElsewhere { .. } => "OwnedByAnotherInstance",
            ObjectError::Read { .. } => "ReadFailed",
            ObjectError::Discover { .. } => "DiscoveryFailed",
            ObjectError::ListMembers { .. } | ObjectError::List { .. } => "ListFailed",
            ObjectError::Prune { .. } => "PruneFailed",
            ObjectError::Release { .. } => "ReleaseFailed",
            ObjectError::Delete { .. } => "DeleteFailed",
        }
    }

    /// The object the error is about, when it is about one.
    pub fn key(&self) -> Option<&ObjectKey> {
        match self {
            ObjectError::Apply { key, .. }
            | ObjectError::OwnedElsewhere { key, .. }
            | ObjectError::Read { key, .. }
            | ObjectError::Prune { key, .. }
            | ObjectError::Release { key, .. }
            | ObjectError::Delete { key, .. } => Some(key),
            ObjectError::Discover { .. }
            | ObjectError::ListMembers { .. }
            | ObjectError::List { .. } => None,
        }
    }
}

/// An object, with its level when known: `ConfigMap/default/web (level 1)`.
fn at(key: &ObjectKey, level: Option<usize>) -> String {
    match level {
        Some(level) => format!("{key} (level {level})"),
        None => key.to_string(),
    }
}

/// A refusal in the server's own words.
fn apply_message(error: &ApplyError) -> String {
    match error {
        ApplyError::Api(error) => api_message(error),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Box<ObjectKey> {
        Box::new(ObjectKey {
            group: String::new(),
            kind: "ConfigMap".to_owned(),
            namespace: Some("default".to_owned()),
            name: "web".to_owned(),
        })
    }

    fn refusal(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn an_objects_failure_reads_the_same_from_either_driver() {
        let refused = ObjectError::Apply {
            key: key(),
            level: Some(1),
            source: Box::new(ApplyError::Api(refusal(403, "denied"))),
        };
        assert_eq!(refused.reason(), "ApplyFailed");
        assert_eq!(
            refused.to_string(),
            "applying ConfigMap/default/web (level 1): denied",
            "the server's own words, at the object's place"
        );
        let owned = ObjectError::OwnedElsewhere {
            key: key(),
            level: None,
            applyset: "applyset-x-v1".to_owned(),
        };
        assert_eq!(owned.reason(), "OwnedByAnotherInstance");
        assert_eq!(
            owned.to_string(),
            "ConfigMap/default/web belongs to another instance (ApplySet applyset-x-v1): it is not taken over"
        );
        let listing = ObjectError::ListMembers {
            kind: "ConfigMap".to_owned(),
            source: Box::new(refusal(500, "etcd is down")),
        };
        assert_eq!(listing.reason(), "ListFailed");
        assert!(listing.key().is_none());
        assert_eq!(
            listing.to_string(),
            "listing the instance's ConfigMap objects: etcd is down"
        );
    }
}
