//! Group-version-kind: how Kubernetes names a kind of object.

use std::fmt;

/// A group, version and kind, such as `apps/v1 Deployment` (the core group is empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    group: String,
    version: String,
    kind: String,
}

/// Why an apiVersion/kind pair is not a valid group-version-kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GvkError {
    /// The apiVersion is empty or has more than one `/`.
    #[error("invalid apiVersion {0:?}: expected VERSION or GROUP/VERSION")]
    InvalidApiVersion(String),
    /// The kind is empty.
    #[error("kind must not be empty")]
    EmptyKind,
}

impl Gvk {
    /// A group-version-kind from its parts.
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// From an object's `apiVersion` (`v1`, `apps/v1`) and `kind`.
    ///
    /// # Errors
    /// [`GvkError`] for an empty or malformed apiVersion or an empty kind.
    pub fn from_api_version(api_version: &str, kind: &str) -> Result<Self, GvkError> {
        if kind.is_empty() {
            return Err(GvkError::EmptyKind);
        }
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        if version.is_empty()
            || version.contains('/')
            || (api_version.contains('/') && group.is_empty())
        {
            return Err(GvkError::InvalidApiVersion(api_version.to_string()));
        }
        Ok(Gvk::new(group, version, kind))
    }

    /// The group (empty for the core group).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The `apiVersion` objects of this kind carry: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Gvk {
    /// `apps/v1, Kind=Deployment`, as Kubernetes prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// A group and a kind, such as `Deployment.apps` (the core group is empty): a kind across its
/// versions, as ApplySet inventories and discovery name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKind {
    group: String,
    kind: String,
}

impl GroupKind {
    /// A group-kind from its parts.
    pub fn new(group: &str, kind: &str) -> Self {
        GroupKind {
            group: group.to_string(),
            kind: kind.to_string(),
        }
    }

    /// The group (empty for the core group).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }
}

impl fmt::Display for GroupKind {
    /// `Kind.group`, or `Kind` in the core group, as Kubernetes' `GroupKind.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

impl Gvk {
    /// The group and kind, without the version.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_kinds_print_as_kubernetes_prints_them() {
        assert_eq!(
            Gvk::new("apps", "v1", "Deployment")
                .group_kind()
                .to_string(),
            "Deployment.apps"
        );
        assert_eq!(GroupKind::new("", "Service").to_string(), "Service");
    }

    #[test]
    fn api_versions_split_into_group_and_version() {
        let core = Gvk::from_api_version("v1", "Service").expect("valid");
        assert_eq!(
            (core.group(), core.version(), core.api_version()),
            ("", "v1", "v1".to_string())
        );
        let apps = Gvk::from_api_version("apps/v1", "Deployment").expect("valid");
        assert_eq!(apps.to_string(), "apps/v1, Kind=Deployment");
    }

    #[test]
    fn malformed_api_versions_are_rejected() {
        for api_version in ["", "a/b/c", "/v1", "apps/"] {
            assert!(
                Gvk::from_api_version(api_version, "X").is_err(),
                "{api_version}"
            );
        }
        assert_eq!(Gvk::from_api_version("v1", ""), Err(GvkError::EmptyKind));
    }
}
