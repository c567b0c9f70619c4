//! Test knobs for other crates' tests: latency added to every resource request, failures
//! injected into chosen requests, and request counters by verb and resource.
//!
//! They act on the resource API only (`/api/...` and `/apis/...` paths that name a
//! resource), not on discovery, OpenAPI or health endpoints.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use http::Method;

use crate::api_path::ApiPath;

/// A request as the knobs see it: its Kubernetes verb and resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKind {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The plural resource (`configmaps`), with `/<subresource>` when there is one.
    pub resource: String,
}

/// Classifies a resource request; `None` for discovery and other non-resource paths.
pub fn classify(method: &Method, path: &str, query: Option<&str>) -> Option<RequestKind> {
    let ApiPath::Resource(path) = ApiPath::parse(path) else {
        return None;
    };
    let (resource, named, subresource) = (path.plural, path.name.is_some(), path.subresource);
    let watching = query.is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    });
    let verb = match (method.as_str(), named) {
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => return None,
    };
    let resource = match subresource {
        Some(subresource) => format!("{resource}/{subresource}"),
        None => resource.to_owned(),
    };
    Some(RequestKind {
        verb: verb.to_owned(),
        resource,
    })
}

/// A failure to inject: the `nth` request (1-based) matching `verb` and `resource` (either
/// may be `*`) is answered with `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectedFailure {
    /// The verb to match, or `*`.
    pub verb: String,
    /// The resource to match (`configmaps`, `deployments/status`), or `*`.
    pub resource: String,
    /// Which matching request fails, counting from 1 after the rule is set.
    pub nth: u64,
    /// The HTTP status code of the failure (409, 500, 503, ...).
    pub code: u16,
    seen: u64,
}

impl InjectedFailure {
    /// A rule failing the `nth` request that matches.
    pub fn new(verb: &str, resource: &str, nth: u64, code: u16) -> Self {
        InjectedFailure {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            nth: nth.max(1),
            code,
            seen: 0,
        }
    }

    fn matches(&self, kind: &RequestKind) -> bool {
        (self.verb == "*" || self.verb == kind.verb)
            && (self.resource == "*" || self.resource == kind.resource)
    }
}

/// The knobs' state, shared by the server and its handle.
#[derive(Debug, Default)]
pub(crate) struct Knobs {
    latency: Mutex<Duration>,
    failures: Mutex<Vec<InjectedFailure>>,
    counts: Mutex<BTreeMap<(String, String), u64>>,
}

impl Knobs {
    pub(crate) fn set_latency(&self, latency: Duration) {
        *lock(&self.latency) = latency;
    }

    pub(crate) fn latency(&self) -> Duration {
        *lock(&self.latency)
    }

    pub(crate) fn inject(&self, failure: InjectedFailure) {
        lock(&self.failures).push(failure);
    }

    pub(crate) fn clear_failures(&self) {
        lock(&self.failures).clear();
    }

    /// Counts the request and says whether it is to fail (and with which code). A rule that
    /// fired is removed.
    pub(crate) fn observe(&self, kind: &RequestKind) -> Option<u16> {
        *lock(&self.counts)
            .entry((kind.verb.clone(), kind.resource.clone()))
            .or_default() += 1;
        let mut failures = lock(&self.failures);
        let mut fired = None;
        for (index, rule) in failures.iter_mut().enumerate() {
            if rule.matches(kind) {
                rule.seen += 1;
                if rule.seen == rule.nth && fired.is_none() {
                    fired = Some((index, rule.code));
                }
            }
        }
        let (index, code) = fired?;
        failures.remove(index);
        Some(code)
    }

    pub(crate) fn counts(&self) -> BTreeMap<(String, String), u64> {
        lock(&self.counts).clone()
    }

    pub(crate) fn reset_counts(&self) {
        lock(&self.counts).clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_by_verb_and_resource() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps",
                None,
                "list",
                "configmaps",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps",
                Some("watch=true&resourceVersion=4"),
                "watch",
                "configmaps",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/configmaps/a",
                None,
                "get",
                "configmaps",
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/x/deployments/d/status",
                None,
                "patch",
                "deployments/status",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/x",
                None,
                "update",
                "namespaces",
            ),
            (
                Method::DELETE,
                "/apis/example.com/v1/widgets",
                None,
                "deletecollection",
                "widgets",
            ),
            (
                Method::POST,
                "/api/v1/namespaces",
                None,
                "create",
                "namespaces",
            ),
        ];
        for (method, path, query, verb, resource) in cases {
            let kind = classify(&method, path, query).expect(path);
            assert_eq!(
                (kind.verb.as_str(), kind.resource.as_str()),
                (verb, resource),
                "{path}"
            );
        }
        assert_eq!(classify(&Method::GET, "/apis/apps/v1", None), None);
        assert_eq!(classify(&Method::GET, "/version", None), None);
    }

    #[test]
    fn the_nth_matching_request_fails_once() {
        let knobs = Knobs::default();
        knobs.inject(InjectedFailure::new("patch", "*", 2, 503));
        let patch = RequestKind {
            verb: "patch".to_owned(),
            resource: "configmaps".to_owned(),
        };
        let get = RequestKind {
            verb: "get".to_owned(),
            resource: "configmaps".to_owned(),
        };
        assert_eq!(knobs.observe(&patch), None);
        assert_eq!(knobs.observe(&get), None);
        assert_eq!(knobs.observe(&patch), Some(503));
        assert_eq!(knobs.observe(&patch), None);
        let counts = knobs.counts();
        assert_eq!(counts[&("patch".to_owned(), "configmaps".to_owned())], 3);
        assert_eq!(counts[&("get".to_owned(), "configmaps".to_owned())], 1);
    }
}
