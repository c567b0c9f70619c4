//! Test knobs for fault trials and other crates' tests: latency added to every resource
//! request or to the requests naming one object, failures injected into chosen requests or
//! into a seeded random fraction of them, and request counters by client, verb and resource.
//!
//! They act on the resource API only (`/api/...` and `/apis/...` paths that name a
//! resource), not on discovery, OpenAPI or health endpoints.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use http::Method;

use crate::api_path::ApiPath;
use crate::error::ApiError;

mod failure_rate;

pub use failure_rate::{
    DEFAULT_CODES, FailureRate, KnobError, SUPPORTED_CODES, VERBS as FAILURE_VERBS,
};

use failure_rate::ActiveRate;

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

/// How long a client is told to wait (`Retry-After`) after an injected 429, 503 or 504.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// The `Status` of an injected failure with `code`, with kube-apiserver's reason and, for the answers a client should retry
/// later, `Retry-After`.
pub(crate) fn injected_error(code: u16, kind: &RequestKind) -> ApiError {
    let what = format!("{} {} (injected by a test knob)", kind.verb, kind.resource);
    match code {
        409 => ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {what}: the object has been modified"),
        ),
        429 => ApiError::new(
            429,
            "TooManyRequests",
            format!("Too many requests, please try again later: {what}"),
        )
        .with_retry_after(RETRY_AFTER_SECONDS),
        503 => ApiError::service_unavailable(format!("the server is unavailable for {what}"))
            .with_retry_after(RETRY_AFTER_SECONDS),
        504 => ApiError::new(
            504,
            "Timeout",
            format!(
                "The server was unable to return a response in the time allotted, but may \
                 still be processing the request: {what}"
            ),
        )
        .with_retry_after(RETRY_AFTER_SECONDS),
        500 => ApiError::internal(format!("injected failure for {what}")),
        // Any other code a rule for the nth request asks for, with no reason.
        _ => ApiError::new(code, "", format!("injected failure for {what}")),
    }
}

/// Requests counted and failures injected for one client, verb and resource.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCount {
    /// Who sent the requests: their `User-Agent` (the server has one user, so clients are told
    /// apart by what they call themselves), `unknown` without one.
    pub client: String,
    /// The verb.
    pub verb: String,
    /// The resource, with `/<subresource>` when there is one.
    pub resource: String,
    /// How many requests were received.
    pub count: u64,
    /// How many of them were answered with an injected failure.
    pub injected_failures: u64,
}

/// The longest client name kept; longer `User-Agent`s are cut.
pub const MAX_CLIENT_CHARS: usize = 128;

/// The most distinct (client, verb, resource) counters kept; requests past it are counted
/// under client `other` and resource `other`, so a client inventing names cannot grow the
/// table without end.
pub const MAX_COUNTERS: usize = 4_096;

/// The name counted for requests past [`MAX_COUNTERS`].
const OVERFLOW: &str = "other";

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    count: u64,
    injected_failures: u64,
}

/// The knobs' state, shared by the server and its handle.
#[derive(Debug, Default)]
pub(crate) struct Knobs {
    latency: Mutex<Duration>,
    /// How late every watch event reaches its client.
    watch_lag: Mutex<Duration>,
    /// Delays of the requests naming an object, by its name.
    object_delays: Mutex<Vec<(String, Duration)>>,
    failures: Mutex<Vec<InjectedFailure>>,
    rate: Mutex<Option<ActiveRate>>,
    counts: Mutex<BTreeMap<(String, String, String), Tally>>,
}

impl Knobs {
    pub(crate) fn set_latency(&self, latency: Duration) {
        *lock(&self.latency) = latency;
    }

    pub(crate) fn latency(&self) -> Duration {
        *lock(&self.latency)
    }

    pub(crate) fn set_watch_lag(&self, lag: Duration) {
        *lock(&self.watch_lag) = lag;
    }

    pub(crate) fn watch_lag(&self) -> Duration {
        *lock(&self.watch_lag)
    }

    /// Delays every request naming an object called `name` (of any kind and namespace) by
    /// `delay`, replacing what was set for that name; zero removes it.
    pub(crate) fn delay_object(&self, name: &str, delay: Duration) {
        let mut delays = lock(&self.object_delays);
        delays.retain(|(held, _)| held != name);
        if !delay.is_zero() {
            delays.push((name.to_owned(), delay));
        }
    }

    /// The delay set for the object the request path names, if any.
    pub(crate) fn object_delay(&self, path: &str) -> Option<Duration> {
        let delays = lock(&self.object_delays);
        if delays.is_empty() {
            return None;
        }
        let ApiPath::Resource(path) = ApiPath::parse(path) else {
            return None;
        };
        let name = path.name?;
        delays
            .iter()
            .find(|(held, _)| held == name)
            .map(|(_, delay)| *delay)
    }

    pub(crate) fn inject(&self, failure: InjectedFailure) {
        lock(&self.failures).push(failure);
    }

    pub(crate) fn clear_failures(&self) {
        lock(&self.failures).clear();
    }

    /// Puts a failure rate in force (replacing any other) and returns the seed it draws from.
    pub(crate) fn set_failure_rate(&self, rate: FailureRate) -> u64 {
        let active = ActiveRate::new(rate);
        let seed = active.seed;
        *lock(&self.rate) = Some(active);
        seed
    }

    pub(crate) fn clear_failure_rate(&self) {
        *lock(&self.rate) = None;
    }

    /// The failure rate in force and the seed it draws from.
    pub(crate) fn failure_rate(&self) -> Option<(FailureRate, u64)> {
        lock(&self.rate)
            .as_ref()
            .map(|active| (active.setting.clone(), active.seed))
    }

    /// Counts the request of `client` and says whether it is to fail (and with which code):
    /// first the rules for the nth request (a rule that fired is removed), then the rate.
    pub(crate) fn observe(&self, kind: &RequestKind, client: &str) -> Option<u16> {
        let code = self.fire_rule(kind).or_else(|| {
            lock(&self.rate)
                .as_mut()
                .and_then(|active| active.draw(kind))
        });
        let mut counts = lock(&self.counts);
        let client: String = client.chars().take(MAX_CLIENT_CHARS).collect();
        let mut key = (client, kind.verb.clone(), kind.resource.clone());
        if counts.len() >= MAX_COUNTERS && !counts.contains_key(&key) {
            key = (OVERFLOW.to_owned(), kind.verb.clone(), OVERFLOW.to_owned());
        }
        let tally = counts.entry(key).or_default();
        tally.count += 1;
        if code.is_some() {
            tally.injected_failures += 1;
        }
        code
    }

    fn fire_rule(&self, kind: &RequestKind) -> Option<u16> {
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

    /// Requests by (verb, resource), over every client.
    pub(crate) fn counts(&self) -> BTreeMap<(String, String), u64> {
        let mut totals = BTreeMap::new();
        for ((_, verb, resource), tally) in lock(&self.counts).iter() {
            *totals.entry((verb.clone(), resource.clone())).or_default() += tally.count;
        }
        totals
    }

    /// Requests by client, verb and resource, in that order.
    pub(crate) fn counts_by_client(&self) -> Vec<RequestCount> {
        lock(&self.counts)
            .iter()
            .map(|((client, verb, resource), tally)| RequestCount {
                client: client.clone(),
                verb: verb.clone(),
                resource: resource.clone(),
                count: tally.count,
                injected_failures: tally.injected_failures,
            })
            .collect()
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
        assert_eq!(knobs.observe(&patch, "kubectl"), None);
        assert_eq!(knobs.observe(&get, "kubectl"), None);
        assert_eq!(knobs.observe(&patch, "kubectl"), Some(503));
        assert_eq!(knobs.observe(&patch, "kubectl"), None);
        let counts = knobs.counts();
        assert_eq!(counts[&("patch".to_owned(), "configmaps".to_owned())], 3);
        assert_eq!(counts[&("get".to_owned(), "configmaps".to_owned())], 1);
    }

    fn kind(verb: &str, resource: &str) -> RequestKind {
        RequestKind {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
        }
    }

    #[test]
    fn requests_are_counted_by_client_with_the_failures_injected() {
        let knobs = Knobs::default();
        let seed = knobs.set_failure_rate(
            FailureRate::new(1.0)
                .and_then(|rate| rate.with_verbs(&["patch"]))
                .and_then(|rate| rate.with_codes(&[429]))
                .expect("valid"),
        );
        assert_eq!(knobs.failure_rate().map(|(_, used)| used), Some(seed));
        assert_eq!(knobs.observe(&kind("get", "pods"), "kro-controller"), None);
        assert_eq!(
            knobs.observe(&kind("patch", "pods"), "kro-controller"),
            Some(429)
        );
        assert_eq!(knobs.observe(&kind("get", "pods"), "kubectl/v1.33"), None);
        knobs.clear_failure_rate();
        assert_eq!(
            knobs.observe(&kind("patch", "pods"), "kro-controller"),
            None
        );
        let count = |client: &str, verb: &str, count: u64, injected_failures: u64| RequestCount {
            client: client.to_owned(),
            verb: verb.to_owned(),
            resource: "pods".to_owned(),
            count,
            injected_failures,
        };
        assert_eq!(
            knobs.counts_by_client(),
            vec![
                count("kro-controller", "get", 1, 0),
                count("kro-controller", "patch", 2, 1),
                count("kubectl/v1.33", "get", 1, 0),
            ]
        );
        assert_eq!(knobs.counts()[&("get".to_owned(), "pods".to_owned())], 2);
    }

    #[test]
    fn a_delay_names_one_object_of_any_kind_and_namespace() {
        let knobs = Knobs::default();
        let slow = Duration::from_secs(3);
        assert_eq!(
            knobs.object_delay("/api/v1/namespaces/default/configmaps/slow"),
            None
        );
        knobs.delay_object("slow", slow);
        for path in [
            "/api/v1/namespaces/default/configmaps/slow",
            "/apis/apps/v1/namespaces/other/deployments/slow/status",
            "/api/v1/namespaces/slow",
        ] {
            assert_eq!(knobs.object_delay(path), Some(slow), "{path}");
        }
        for path in [
            "/api/v1/namespaces/default/configmaps/fast",
            "/api/v1/namespaces/slow/configmaps",
            "/apis/apps/v1",
        ] {
            assert_eq!(knobs.object_delay(path), None, "{path}");
        }
        knobs.delay_object("slow", Duration::ZERO);
        assert_eq!(
            knobs.object_delay("/api/v1/namespaces/default/configmaps/slow"),
            None
        );
    }

    #[test]
    fn counters_are_bounded_in_number_and_client_length() {
        let knobs = Knobs::default();
        let long = "x".repeat(10_000);
        knobs.observe(&kind("get", "pods"), &long);
        for index in 0..MAX_COUNTERS + 50 {
            knobs.observe(&kind("get", &format!("made-up-{index}")), "fuzzer");
        }
        let counts = knobs.counts_by_client();
        assert_eq!(counts.len(), MAX_COUNTERS + 1);
        assert!(
            counts
                .iter()
                .all(|count| count.client.len() <= MAX_CLIENT_CHARS)
        );
        let overflow = counts
            .iter()
            .find(|count| count.client == OVERFLOW)
            .expect("an overflow counter");
        assert_eq!(overflow.count, 51);
    }
}
