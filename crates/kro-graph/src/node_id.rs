//! The identity of a node: the `id` of one of an RGD's resources.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// The id of one of an RGD's resources (`spec.resources[].id`, lowerCamelCase): how
/// expressions, dependencies, levels and labels name a node. The builder checks the rules
/// (see [`is_lower_camel_case`](crate::is_lower_camel_case)) and reports a broken id with its
/// place, so this type holds ids as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(String);

impl NodeId {
    /// A node id.
    pub fn new(id: impl Into<String>) -> Self {
        NodeId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for NodeId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for NodeId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NodeId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NodeId {
    fn from(id: &str) -> Self {
        NodeId(id.to_owned())
    }
}

impl From<String> for NodeId {
    fn from(id: String) -> Self {
        NodeId(id)
    }
}

impl From<NodeId> for String {
    fn from(id: NodeId) -> Self {
        id.0
    }
}

impl PartialEq<str> for NodeId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for NodeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for NodeId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn node_ids_are_looked_up_by_text_and_read_as_text() {
        let id = NodeId::from("workerPods");
        let levels = HashMap::from([(id.clone(), 1)]);
        assert_eq!(levels.get("workerPods"), Some(&1));
        assert_eq!(id, "workerPods");
        assert_eq!(id.to_string(), "workerPods");
        assert_eq!(
            serde_json::to_value(&id).ok(),
            Some(serde_json::json!("workerPods"))
        );
    }
}
