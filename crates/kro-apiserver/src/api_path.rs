//! What a request path of the resource API names, parsed once: `/api/<version>/...` and
//! `/apis/<group>/<version>/...`, split as kube-apiserver routes them. Pure syntax: which
//! groups and resource types exist is the registry's business.

/// A request path, by what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiPath<'a> {
    /// Neither under `/api` nor under `/apis/<group>`.
    Outside,
    /// `/api` alone, or another path under `/api` that names nothing.
    Unnamed,
    /// `/apis/<group>`: the group's document.
    Group(&'a str),
    /// `/api/<version>` or `/apis/<group>/<version>`: the group-version's resource list.
    GroupVersion {
        /// The API group (empty for the core group).
        group: &'a str,
        /// The version.
        version: &'a str,
    },
    /// A path below a group-version: resources, objects and subresources.
    Resource(ResourcePath<'a>),
}

/// A path that names a resource type, and maybe a namespace, an object and a subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResourcePath<'a> {
    /// The API group (empty for the core group).
    pub(crate) group: &'a str,
    /// The version.
    pub(crate) version: &'a str,
    /// The namespace, for `.../namespaces/<namespace>/<plural>/...`.
    pub(crate) namespace: Option<&'a str>,
    /// The plural resource name.
    pub(crate) plural: &'a str,
    /// The object's name.
    pub(crate) name: Option<&'a str>,
    /// The subresource (`status`, `scale`, `finalize`).
    pub(crate) subresource: Option<&'a str>,
    /// Whether segments follow the subresource (no API serves such a path).
    pub(crate) overlong: bool,
}

impl<'a> ApiPath<'a> {
    /// Parses a request path (leading `/` included; a trailing `/` is ignored).
    pub(crate) fn parse(path: &'a str) -> ApiPath<'a> {
        let path = path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["api", ..] => return ApiPath::Unnamed,
            ["apis", group] => return ApiPath::Group(group),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return ApiPath::Outside,
        };
        let namespaces_subresource = |segment: &str| matches!(segment, "status" | "finalize");
        let (namespace, plural, tail) = match rest {
            [] => return ApiPath::GroupVersion { group, version },
            ["namespaces", namespace, plural, tail @ ..] if !namespaces_subresource(plural) => {
                (Some(*namespace), *plural, tail)
            }
            [plural, tail @ ..] => (None, *plural, tail),
        };
        ApiPath::Resource(ResourcePath {
            group,
            version,
            namespace,
            plural,
            name: tail.first().copied(),
            subresource: tail.get(1).copied(),
            overlong: tail.len() > 2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(path: &str) -> ResourcePath<'_> {
        match ApiPath::parse(path) {
            ApiPath::Resource(resource) => resource,
            other => panic!("{path} parsed as {other:?}"),
        }
    }

    #[test]
    fn paths_name_groups_versions_and_resources() {
        assert_eq!(ApiPath::parse("/healthz"), ApiPath::Outside);
        assert_eq!(ApiPath::parse("/apis"), ApiPath::Outside);
        assert_eq!(ApiPath::parse("/api/"), ApiPath::Unnamed);
        assert_eq!(ApiPath::parse("/apis/apps"), ApiPath::Group("apps"));
        assert_eq!(
            ApiPath::parse("/api/v1/"),
            ApiPath::GroupVersion {
                group: "",
                version: "v1"
            }
        );
        let pods = resource("/api/v1/namespaces/default/pods/web/status");
        assert_eq!(
            (pods.namespace, pods.plural, pods.name, pods.subresource),
            (Some("default"), "pods", Some("web"), Some("status"))
        );
        let namespace = resource("/api/v1/namespaces/default/finalize");
        assert_eq!(
            (namespace.namespace, namespace.plural, namespace.name),
            (None, "namespaces", Some("default"))
        );
        assert_eq!(namespace.subresource, Some("finalize"));
        let deployments = resource("/apis/apps/v1/deployments");
        assert_eq!((deployments.group, deployments.name), ("apps", None));
        assert!(resource("/api/v1/namespaces/a/pods/b/c/d").overlong);
    }
}
