//! Prometheus metrics of the controllers, with upstream kro's names where upstream has the
//! metric: reconciles, their durations and errors, state transitions, queue lengths, instances
//! by state, API requests by verb, and leadership.
//!
//! Counters and histograms are updated as things happen; the gauges that describe what is (the
//! instances of each kind by state, queue lengths) are read from the controllers' caches when
//! scraped, so they can never drift from the caches.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::api::DynamicObject;
use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::queue::WorkQueue;

mod buckets;
mod conditions;
mod dynamic;
mod graph_revisions;
mod queues;
mod requests;
mod rgds;
mod runtime;
mod schema_resolver;

use buckets::{HistogramFamily, reconcile_histogram};
pub(crate) use conditions::{ConditionDurations, conditions_of, transitions};
pub(crate) use dynamic::{DynamicFamilies, WatchEventType};
pub(crate) use graph_revisions::{RevisionMetrics, RevisionState};
pub(crate) use queues::{
    INSTANCE_QUEUE, QueueFamilies, QueueMetrics, RGD_CONTROLLER, ReconcileResult,
};
pub(crate) use requests::RequestFamilies;
pub use requests::{ApiRequestLayer, ApiRequestService, request_verb};
pub(crate) use rgds::RgdFamilies;
pub(crate) use runtime::RuntimeFamilies;
pub use schema_resolver::SchemaResolverFamilies;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GvrLabel {
    gvr: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    gvr: String,
    from_state: String,
    to_state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    code: String,
}

/// controller-runtime's labels of `rest_client_requests_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpRequestLabels {
    code: String,
    host: String,
    method: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabel {
    verb: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

fn request_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// What a controller shows when scraped: its queue length and its objects by state.
pub(crate) struct LiveSource {
    /// Keys waiting in the queue.
    pub(crate) queue_length: Box<dyn Fn() -> usize + Send + Sync>,
    /// Objects by `status.state` (`""` for none yet).
    pub(crate) states: Box<dyn Fn() -> BTreeMap<String, u64> + Send + Sync>,
}

impl LiveSource {
    /// What a controller with `queue` over the objects of `store` shows.
    pub(crate) fn of<K>(queue: &WorkQueue<K>, store: &Store<DynamicObject>) -> LiveSource
    where
        K: Clone + Eq + std::hash::Hash + Send + 'static,
    {
        let queue = queue.clone();
        let store = store.clone();
        LiveSource {
            queue_length: Box::new(move || queue.len()),
            states: Box::new(move || states_of(&store)),
        }
    }
}

/// The cached objects by `status.state` (`""` for those without one).
fn states_of(store: &Store<DynamicObject>) -> BTreeMap<String, u64> {
    let mut states = BTreeMap::new();
    for object in store.state() {
        let state = object
            .data
            .pointer("/status/state")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        *states.entry(state.to_owned()).or_insert(0) += 1;
    }
    states
}

/// The controllers' live sources, read at each scrape.
#[derive(Default)]
struct Live {
    rgds: Mutex<Option<LiveSource>>,
    kinds: Mutex<BTreeMap<String, LiveSource>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Live").finish_non_exhaustive()
    }
}

fn gauge_family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Vec<(&'static str, String)>, i64)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in samples {
        ConstGauge::new(value).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: i64,
) -> Result<(), std::fmt::Error> {
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value).encode(metric)
}

fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl Collector for Live {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        gauge(
            &mut encoder,
            "dynamic_controller_gvr_count",
            "Number of instance kinds (GVRs) with a running controller.",
            count(kinds.len()),
        )?;
        let lengths: Vec<(String, usize)> = kinds
            .iter()
            .map(|(gvr, source)| (gvr.clone(), (source.queue_length)()))
            .collect();
        gauge(
            &mut encoder,
            "dynamic_controller_queue_length",
            "Current length of the workqueue: instances waiting, over every instance controller.",
            count(lengths.iter().map(|(_, length)| length).sum()),
        )?;
        gauge_family(
            &mut encoder,
            "instance_queue_length",
            "Instances waiting in the work queue of each instance controller.",
            lengths
                .into_iter()
                .map(|(gvr, length)| (vec![("gvr", gvr)], count(length))),
        )?;
        let mut instances = Vec::new();
        let mut watched = Vec::new();
        for (gvr, source) in kinds.iter() {
            let mut total = 0;
            for (state, number) in (source.states)() {
                let number = i64::try_from(number).unwrap_or(i64::MAX);
                total += number;
                instances.push((vec![("gvr", gvr.clone()), ("state", state)], number));
            }
            watched.push((vec![("parent_gvr", gvr.clone())], total));
        }
        // Every instance's objects are watched (through the shared watches of their kinds).
        gauge_family(
            &mut encoder,
            "dynamic_controller_instance_watch_count",
            "Number of active instance watchers by parent GVR",
            watched,
        )?;
        gauge_family(
            &mut encoder,
            "instance_count",
            "Instances of each kind, by status.state (empty before their first status).",
            instances,
        )?;
        drop(kinds);
        if let Some(source) = &*self.rgds.lock().unwrap_or_else(PoisonError::into_inner) {
            gauge(
                &mut encoder,
                "rgd_queue_length",
                "ResourceGraphDefinitions waiting in the work queue.",
                count((source.queue_length)()),
            )?;
            gauge_family(
                &mut encoder,
                "rgd_count",
                "ResourceGraphDefinitions by status.state.",
                (source.states)().into_iter().map(|(state, number)| {
                    (
                        vec![("state", state)],
                        i64::try_from(number).unwrap_or(i64::MAX),
                    )
                }),
            )?;
        }
        Ok(())
    }
}

struct Inner {
    registry: Registry,
    instance_reconciles: Family<GvrLabel, Counter>,
    instance_reconcile_errors: Family<GvrLabel, Counter>,
    instance_reconcile_duration: HistogramFamily<GvrLabel>,
    instance_state_transitions: Family<TransitionLabels, Counter>,
    set_reconciles: Family<GvrLabel, Counter>,
    set_reconcile_errors: Family<GvrLabel, Counter>,
    set_reconcile_duration: HistogramFamily<GvrLabel>,
    set_rollouts_in_progress: Family<GvrLabel, Gauge>,
    rgd_reconciles: Counter,
    rgd_reconcile_errors: Counter,
    rgd_reconcile_duration: Histogram,
    rgd_graph_builds: Family<NameLabel, Counter>,
    rgd_graph_build_errors: Family<NameLabel, Counter>,
    rgd_graph_build_duration: HistogramFamily<NameLabel>,
    api_requests: Family<RequestLabels, Counter>,
    http_requests: Family<HttpRequestLabels, Counter>,
    api_request_duration: HistogramFamily<VerbLabel>,
    leader: Family<NameLabel, Gauge>,
    live: Arc<Live>,
    conditions: Arc<ConditionDurations>,
    revisions: RevisionMetrics,
    queues: QueueFamilies,
    requests: RequestFamilies,
    rgds: RgdFamilies,
    schema_resolver: SchemaResolverFamilies,
    dynamic: DynamicFamilies,
    /// Shared with every plan as its observer.
    runtime: std::sync::Arc<RuntimeFamilies>,
}

/// The metrics of one process; clones share them.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, all zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let instance_reconciles = Family::<GvrLabel, Counter>::default();
        registry.register(
            "instance_reconcile",
            "Instance reconciles, per instance kind",
            instance_reconciles.clone(),
        );
        let instance_reconcile_errors = Family::<GvrLabel, Counter>::default();
        registry.register(
            "instance_reconcile_errors",
            "Instance reconciles that failed (and are retried), per instance kind",
            instance_reconcile_errors.clone(),
        );
        let instance_reconcile_duration: HistogramFamily<GvrLabel> =
            Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "instance_reconcile_duration_seconds",
            "Duration of instance reconciles in seconds, per instance kind",
            instance_reconcile_duration.clone(),
        );
        let instance_state_transitions = Family::<TransitionLabels, Counter>::default();
        registry.register(
            "instance_state_transitions",
            "Changes of an instance's status.state, per instance kind",
            instance_state_transitions.clone(),
        );
        let set_reconciles = Family::<GvrLabel, Counter>::default();
        registry.register(
            "set_reconcile",
            "<Kind>Set reconciles, per Set kind",
            set_reconciles.clone(),
        );
        let set_reconcile_errors = Family::<GvrLabel, Counter>::default();
        registry.register(
            "set_reconcile_errors",
            "<Kind>Set reconciles that failed (and are retried), per Set kind",
            set_reconcile_errors.clone(),
        );
        let set_reconcile_duration: HistogramFamily<GvrLabel> =
            Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "set_reconcile_duration_seconds",
            "Duration of <Kind>Set reconciles in seconds, per Set kind",
            set_reconcile_duration.clone(),
        );
        let set_rollouts_in_progress = Family::<GvrLabel, Gauge>::default();
        registry.register(
            "set_rollouts_in_progress",
            "<Kind>Sets still creating, deleting, updating or waiting for instances to be Ready, per Set kind",
            set_rollouts_in_progress.clone(),
        );
        let rgd_reconciles = Counter::default();
        registry.register(
            "rgd_reconcile",
            "ResourceGraphDefinition reconciles",
            rgd_reconciles.clone(),
        );
        let rgd_reconcile_errors = Counter::default();
        registry.register(
            "rgd_reconcile_errors",
            "ResourceGraphDefinition reconciles that failed (and are retried)",
            rgd_reconcile_errors.clone(),
        );
        let rgd_reconcile_duration = reconcile_histogram();
        registry.register(
            "rgd_reconcile_duration_seconds",
            "Duration of ResourceGraphDefinition reconciles in seconds",
            rgd_reconcile_duration.clone(),
        );
        let rgd_graph_builds = Family::<NameLabel, Counter>::default();
        registry.register(
            "rgd_graph_build",
            "Compilations of a ResourceGraphDefinition into a graph, by RGD name",
            rgd_graph_builds.clone(),
        );
        let rgd_graph_build_errors = Family::<NameLabel, Counter>::default();
        registry.register(
            "rgd_graph_build_errors",
            "Compilations that found the ResourceGraphDefinition invalid, by RGD name",
            rgd_graph_build_errors.clone(),
        );
        let rgd_graph_build_duration: HistogramFamily<NameLabel> =
            Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "rgd_graph_build_duration_seconds",
            "Duration of compilations (schemas read from the API server included) in seconds",
            rgd_graph_build_duration.clone(),
        );
        let api_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "rest_client_requests_by_verb",
            "Requests to the API server, by Kubernetes verb and HTTP status code",
            api_requests.clone(),
        );
        let http_requests = Family::<HttpRequestLabels, Counter>::default();
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            http_requests.clone(),
        );
        let api_request_duration: HistogramFamily<VerbLabel> =
            Family::new_with_constructor(request_histogram);
        registry.register(
            "rest_client_request_duration_seconds",
            "Time to the API server's response headers in seconds, by Kubernetes verb",
            api_request_duration.clone(),
        );
        let leader = Family::<NameLabel, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "1 while this process holds the leader election lease, else 0",
            leader.clone(),
        );
        let revisions = RevisionMetrics::register(&mut registry);
        let queues = QueueFamilies::register(&mut registry);
        let requests = RequestFamilies::register(&mut registry);
        let rgds = RgdFamilies::register(&mut registry);
        let schema_resolver = SchemaResolverFamilies::register(&mut registry);
        let dynamic = DynamicFamilies::register(&mut registry);
        let runtime = Arc::new(RuntimeFamilies::register(&mut registry));
        // controller-runtime's metrics server registers its certificate watcher's counters;
        // this controller serves metrics over plain HTTP and reads no certificate, so they stay
        // at zero (as upstream's do unless it is given a serving certificate).
        registry.register(
            "certwatcher_read_certificate",
            "Total number of certificate reads",
            Counter::<u64>::default(),
        );
        registry.register(
            "certwatcher_read_certificate_errors",
            "Total number of certificate read errors",
            Counter::<u64>::default(),
        );
        let live = Arc::new(Live::default());
        registry.register_collector(Box::new(Arc::clone(&live)));
        let conditions = Arc::new(ConditionDurations::default());
        registry.register_collector(Box::new(Arc::clone(&conditions)));
        Metrics {
            inner: Arc::new(Inner {
                registry,
                instance_reconciles,
                instance_reconcile_errors,
                instance_reconcile_duration,
                instance_state_transitions,
                set_reconciles,
                set_reconcile_errors,
                set_reconcile_duration,
                set_rollouts_in_progress,
                rgd_reconciles,
                rgd_reconcile_errors,
                rgd_reconcile_duration,
                rgd_graph_builds,
                rgd_graph_build_errors,
                rgd_graph_build_duration,
                api_requests,
                http_requests,
                api_request_duration,
                leader,
                live,
                conditions,
                revisions,
                queues,
                requests,
                rgds,
                schema_resolver,
                dynamic,
                runtime,
            }),
        }
    }

    /// Every metric in the OpenMetrics text format (served as [`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(error) =
            prometheus_client::encoding::text::encode(&mut text, &self.inner.registry)
        {
            // Writing into a String cannot fail; say so rather than serve half a page silently.
            let _ = writeln!(text, "# encoding failed: {error}");
        }
        text
    }

    /// A tower layer for the API client that counts requests by verb and status code and
    /// times them (`rest_client_requests_total`, `rest_client_request_duration_seconds`).
    pub fn api_layer(&self) -> ApiRequestLayer {
        ApiRequestLayer {
            metrics: self.clone(),
        }
    }

    /// Records whether this process leads under the lease `name`.
    pub fn set_leader(&self, name: &str, leading: bool) {
        self.inner
            .leader
            .get_or_create(&NameLabel {
                name: name.to_owned(),
            })
            .set(i64::from(leading));
    }

    /// Records one instance reconcile of kind `gvr`.
    pub(crate) fn instance_reconciled(&self, gvr: &str, took: Duration, succeeded: bool) {
        let label = GvrLabel {
            gvr: gvr.to_owned(),
        };
        self.inner.instance_reconciles.get_or_create(&label).inc();
        if !succeeded {
            self.inner
                .instance_reconcile_errors
                .get_or_create(&label)
                .inc();
        }
        self.inner
            .instance_reconcile_duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    /// Records one reconcile of a Set of kind `gvr`.
    pub(crate) fn set_reconciled(&self, gvr: &str, took: Duration, succeeded: bool) {
        let label = GvrLabel {
            gvr: gvr.to_owned(),
        };
        self.inner.set_reconciles.get_or_create(&label).inc();
        if !succeeded {
            self.inner.set_reconcile_errors.get_or_create(&label).inc();
        }
        self.inner
            .set_reconcile_duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    /// Sets how many Sets of kind `gvr` have a rollout in progress.
    pub(crate) fn set_rollouts(&self, gvr: &str, in_progress: usize) {
        self.inner
            .set_rollouts_in_progress
            .get_or_create(&GvrLabel {
                gvr: gvr.to_owned(),
            })
            .set(i64::try_from(in_progress).unwrap_or(i64::MAX));
    }

    /// Records an instance of kind `gvr` changing state.
    pub(crate) fn instance_state_changed(&self, gvr: &str, from: &str, to: &str) {
        self.inner
            .instance_state_transitions
            .get_or_create(&TransitionLabels {
                gvr: gvr.to_owned(),
                from_state: from.to_owned(),
                to_state: to.to_owned(),
            })
            .inc();
    }

    /// Records one RGD reconcile.
    pub(crate) fn rgd_reconciled(&self, took: Duration, succeeded: bool) {
        self.inner.rgd_reconciles.inc();
        if !succeeded {
            self.inner.rgd_reconcile_errors.inc();
        }
        self.inner
            .rgd_reconcile_duration
            .observe(took.as_secs_f64());
    }

    /// Records one compilation of the RGD `name`.
    pub(crate) fn graph_built(&self, name: &str, took: Duration, valid: bool) {
        let label = NameLabel {
            name: name.to_owned(),
        };
        self.inner.rgd_graph_builds.get_or_create(&label).inc();
        if !valid {
            self.inner
                .rgd_graph_build_errors
                .get_or_create(&label)
                .inc();
        }
        self.inner
            .rgd_graph_build_duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    /// Shows the instance controller of `gvr` in the gauges until [`Self::forget_kind`].
    pub(crate) fn watch_kind(&self, gvr: &str, source: LiveSource) {
        let replaced = self
            .inner
            .live
            .kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(gvr.to_owned(), source);
        if replaced.is_none() {
            self.inner.dynamic.parent_handler(true);
            // The instance watch of the kind.
            self.inner.dynamic.watching(1);
        }
    }

    /// The state of each instance's conditions (`instance_condition_current_status_seconds`,
    /// fed only with the `InstanceConditionMetrics` gate on).
    pub(crate) fn conditions(&self) -> &ConditionDurations {
        &self.inner.conditions
    }

    /// The GraphRevision families.
    pub(crate) fn revisions(&self) -> &RevisionMetrics {
        &self.inner.revisions
    }

    /// The API client's request families (sizes, retries, rate limiter waits).
    pub(crate) fn requests(&self) -> &RequestFamilies {
        &self.inner.requests
    }

    /// The schema reader's families (for a [`crate::schemas::SchemaCache`]).
    pub fn schema_resolver(&self) -> &SchemaResolverFamilies {
        &self.inner.schema_resolver
    }

    /// The planning families, as the observer a plan reports to.
    pub(crate) fn plan_observer(&self) -> Arc<dyn kro_runtime::PlanObserver> {
        Arc::clone(&self.inner.runtime) as Arc<dyn kro_runtime::PlanObserver>
    }

    /// The dynamic controller's watch and routing families.
    pub(crate) fn dynamic(&self) -> &DynamicFamilies {
        &self.inner.dynamic
    }

    /// The RGD lifecycle families.
    pub(crate) fn rgds(&self) -> &RgdFamilies {
        &self.inner.rgds
    }

    /// The work queue and reconcile loop families.
    pub(crate) fn queues(&self) -> &QueueFamilies {
        &self.inner.queues
    }

    /// Stops showing the instance controller of `gvr`, and its instances' conditions.
    pub(crate) fn forget_kind(&self, gvr: &str) {
        self.inner.conditions.forget_kind(gvr);
        let removed = self
            .inner
            .live
            .kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(gvr);
        if removed.is_some() {
            self.inner.dynamic.parent_handler(false);
            self.inner.dynamic.watching(-1);
        }
    }

    /// Shows the RGD controller in the gauges.
    pub(crate) fn watch_rgds(&self, source: LiveSource) {
        *self
            .inner
            .live
            .rgds
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(source);
    }

    fn request_done(
        &self,
        verb: &'static str,
        method: &http::Method,
        host: String,
        code: String,
        took: Duration,
    ) {
        self.inner
            .http_requests
            .get_or_create(&HttpRequestLabels {
                code: code.clone(),
                host,
                method: method.as_str().to_owned(),
            })
            .inc();
        self.inner
            .api_requests
            .get_or_create(&RequestLabels { verb, code })
            .inc();
        self.inner
            .api_request_duration
            .get_or_create(&VerbLabel { verb })
            .observe(took.as_secs_f64());
    }
}

/// The label upstream kro puts on per-kind metrics: Go's `GroupVersionResource.String()`.
pub(crate) fn gvr_label(group: &str, version: &str, plural: &str) -> String {
    format!("{group}/{version}, Resource={plural}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(method: &str, path: &str, query: &str, content_type: &str) -> &'static str {
        let method = http::Method::from_bytes(method.as_bytes()).expect("a method");
        request_verb(&method, path, query, content_type)
    }

    #[test]
    fn requests_are_named_by_their_kubernetes_verb() {
        let cases = [
            ("GET", "/api/v1/namespaces/default/configmaps", "", "list"),
            (
                "GET",
                "/api/v1/namespaces/default/configmaps",
                "watch=true&resourceVersion=5",
                "watch",
            ),
            ("GET", "/api/v1/namespaces/default/configmaps/a", "", "get"),
            ("GET", "/api/v1/namespaces", "", "list"),
            ("GET", "/api/v1/namespaces/default", "", "get"),
            ("GET", "/apis/apps/v1/deployments", "", "list"),
            (
                "GET",
                "/apis/apps/v1/namespaces/shop/deployments/web/status",
                "",
                "get",
            ),
            ("GET", "/apis/kro.run/v1alpha1", "", "get"),
            ("GET", "/openapi/v3/apis/apps/v1", "", "get"),
            ("POST", "/api/v1/namespaces/default/events", "", "create"),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kro/leases/l",
                "",
                "update",
            ),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/a/deployments/b",
                "fieldManager=x&force=true",
                "apply",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/configmaps/a",
                "",
                "delete",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/configmaps",
                "",
                "deletecollection",
            ),
        ];
        for (method, path, query, expected) in cases {
            let content_type = if expected == "apply" {
                "application/apply-patch+yaml"
            } else {
                ""
            };
            assert_eq!(
                verb(method, path, query, content_type),
                expected,
                "{method} {path}?{query}"
            );
        }
        assert_eq!(
            verb(
                "PATCH",
                "/api/v1/namespaces/a/configmaps/b",
                "",
                "application/merge-patch+json"
            ),
            "patch"
        );
    }

    #[test]
    fn scrapes_show_counts_and_live_gauges() {
        let metrics = Metrics::new();
        let gvr = gvr_label("kro.run", "v1alpha1", "webapps");
        metrics.instance_reconciled(&gvr, Duration::from_millis(20), true);
        metrics.instance_reconciled(&gvr, Duration::from_millis(30), false);
        metrics.instance_state_changed(&gvr, "IN_PROGRESS", "ACTIVE");
        metrics.request_done(
            "apply",
            &http::Method::PATCH,
            "127.0.0.1:6443".to_owned(),
            "200".to_owned(),
            Duration::from_millis(3),
        );
        metrics.set_leader("controller.kro.run", true);
        metrics.watch_kind(
            &gvr,
            LiveSource {
                queue_length: Box::new(|| 2),
                states: Box::new(|| BTreeMap::from([("ACTIVE".to_owned(), 3)])),
            },
        );
        let text = metrics.encode();
        for line in [
            "instance_reconcile_total{gvr=\"kro.run/v1alpha1, Resource=webapps\"} 2",
            "instance_reconcile_errors_total{gvr=\"kro.run/v1alpha1, Resource=webapps\"} 1",
            "instance_reconcile_duration_seconds_count{gvr=\"kro.run/v1alpha1, Resource=webapps\"} 2",
            "instance_state_transitions_total{gvr=\"kro.run/v1alpha1, Resource=webapps\",from_state=\"IN_PROGRESS\",to_state=\"ACTIVE\"} 1",
            "rest_client_requests_by_verb_total{verb=\"apply\",code=\"200\"} 1",
            "rest_client_requests_total{code=\"200\",host=\"127.0.0.1:6443\",method=\"PATCH\"} 1",
            "leader_election_master_status{name=\"controller.kro.run\"} 1",
            "dynamic_controller_gvr_count 1",
            "dynamic_controller_queue_length 2",
            "instance_queue_length{gvr=\"kro.run/v1alpha1, Resource=webapps\"} 2",
            "instance_count{gvr=\"kro.run/v1alpha1, Resource=webapps\",state=\"ACTIVE\"} 3",
        ] {
            assert!(
                text.lines().any(|seen| seen == line),
                "{line}\nnot in\n{text}"
            );
        }
        metrics.forget_kind(&gvr);
        assert!(
            metrics
                .encode()
                .lines()
                .any(|seen| seen == "dynamic_controller_gvr_count 0")
        );
    }
}
