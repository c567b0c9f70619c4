//! What a request path of the resource API names, parsed once: `/api/<version>/...` and
//! `/apis/<group>/<version>/...`, split as kube-apiserver routes them. Pure syntax: which
//! groups and resource types exist is the registry's business.

use std::borrow::Cow;

/// A `%` in a request path not followed by two hexadecimal digits: Go's HTTP server refuses
/// the request line before kube-apiserver sees it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URL escape {escape:?}")]
pub(crate) struct InvalidEscape {
    /// The `%` and up to two characters after it.
    pub(crate) escape: String,
}

/// A request path with its percent-escapes decoded, as Go's `net/url` hands kube-apiserver
/// `URL.Path` before it splits it into segments: `%3A` is a `:` of a name, and `%2F` is a `/`
/// that separates segments like any other. Bytes that are not UTF-8 once decoded become
/// U+FFFD.
///
/// # Errors
/// [`InvalidEscape`] for a `%` not followed by two hexadecimal digits.
pub(crate) fn decode_path(path: &str) -> Result<Cow<'_, str>, InvalidEscape> {
    if !path.contains('%') {
        return Ok(Cow::Borrowed(path));
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte != b'%' {
            decoded.push(byte);
            index += 1;
            continue;
        }
        let digits = bytes.get(index + 1..index + 3);
        let value = digits
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .filter(|digits| digits.bytes().all(|digit| digit.is_ascii_hexdigit()))
            .and_then(|digits| u8::from_str_radix(digits, 16).ok());
        let Some(value) = value else {
            let end = (index + 3).min(bytes.len());
            return Err(InvalidEscape {
                escape: String::from_utf8_lossy(&bytes[index..end]).into_owned(),
            });
        };
        decoded.push(value);
        index += 3;
    }
    Ok(Cow::Owned(String::from_utf8_lossy(&decoded).into_owned()))
}

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

    #[test]
    fn percent_escapes_are_decoded_before_the_path_is_split() {
        let decoded =
            decode_path("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Atest-role")
                .expect("valid escapes");
        assert_eq!(resource(&decoded).name, Some("system:test-role"));
        let slash = decode_path("/api/v1/namespaces/default/configmaps/a%2Fb").expect("valid");
        let split = resource(&slash);
        assert_eq!((split.name, split.subresource), (Some("a"), Some("b")));
        assert_eq!(decode_path("/api/v1"), Ok(Cow::Borrowed("/api/v1")));
        assert_eq!(
            decode_path("/a%e2%9c%93%ff"),
            Ok(Cow::Owned::<str>("/a\u{2713}\u{fffd}".to_owned()))
        );
        for (path, escape) in [
            ("/a%zz", "%zz"),
            ("/a%4", "%4"),
            ("/a%", "%"),
            ("/%+1", "%+1"),
        ] {
            assert_eq!(
                decode_path(path),
                Err(InvalidEscape {
                    escape: escape.to_owned()
                }),
                "{path}"
            );
        }
    }
}
