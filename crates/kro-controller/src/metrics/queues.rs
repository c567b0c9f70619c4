//! The families of work queues and reconcile loops, with the names, labels and buckets client-go
//! (`workqueue_*`), controller-runtime (`controller_runtime_*`) and upstream kro's dynamic
//! controller (`dynamic_controller_reconcile_*`, `dynamic_controller_requeue_total`) give them:
//! the RGD controller is controller-runtime's `resourcegraphdefinition`, and the instance
//! controllers share upstream's one queue name, `dynamic-controller-queue`, with their kind in
//! the `gvr` label where upstream has one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::buckets::{HistogramFamily, reconcile_histogram};

/// The queue (and controller) name of the RGD controller, as controller-runtime names it.
pub(crate) const RGD_CONTROLLER: &str = "resourcegraphdefinition";
/// The queue name of upstream's dynamic controller, which the instance controllers share.
pub(crate) const INSTANCE_QUEUE: &str = "dynamic-controller-queue";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    controller: &'static str,
    name: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    controller: &'static str,
    name: &'static str,
    priority: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabel {
    webhook: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    code: String,
    webhook: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GvrLabel {
    gvr: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GvrReasonLabels {
    gvr: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequeueLabels {
    gvr: String,
    r#type: &'static str,
}

/// client-go's buckets of queue and work durations: 10 ns to 1000 s, tenfold.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// controller-runtime's buckets of reconcile times.
fn reconcile_time_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// controller-runtime's buckets of webhook latencies (the same as client-go's queue buckets).
fn webhook_histogram() -> Histogram {
    queue_histogram()
}

/// The metrics of one named work queue (several queues may share a name: the instance
/// controllers all count as `dynamic-controller-queue`).
pub(crate) struct QueueMetrics {
    adds: Counter,
    retries: Counter,
    depth: Gauge,
    queue_duration: Histogram,
    work_duration: Histogram,
    /// When each item being processed was taken, by a token the queue holds.
    in_flight: Mutex<HashMap<u64, Instant>>,
    next_token: AtomicU64,
}

impl QueueMetrics {
    /// An item was added (not already waiting).
    pub(crate) fn added(&self) {
        self.adds.inc();
        self.depth.inc();
    }

    /// `count` waiting items were dropped (the queue shut down).
    pub(crate) fn dropped(&self, count: usize) {
        self.depth.dec_by(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// An item added `since` was taken for processing: returns the token to pass to
    /// [`Self::done`].
    pub(crate) fn taken(&self, since: Option<Instant>) -> u64 {
        self.depth.dec();
        if let Some(since) = since {
            self.queue_duration.observe(since.elapsed().as_secs_f64());
        }
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token, Instant::now());
        token
    }

    /// The item taken with `token` was processed.
    pub(crate) fn done(&self, token: u64) {
        let started = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token);
        if let Some(started) = started {
            self.work_duration.observe(started.elapsed().as_secs_f64());
        }
    }

    /// An item was put back after a failure (client-go's `AddRateLimited`).
    pub(crate) fn retried(&self) {
        self.retries.inc();
    }

    /// The seconds of work in progress, and the longest one's.
    fn in_progress(&self) -> (f64, f64) {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        in_flight
            .values()
            .fold((0.0, 0.0), |(total, longest), started| {
                let seconds = started.elapsed().as_secs_f64();
                (total + seconds, f64::max(longest, seconds))
            })
    }
}

/// Every named queue's metrics, shared with the collector of their in-progress times.
type NamedQueues = Arc<Mutex<Vec<(&'static str, Arc<QueueMetrics>)>>>;

/// How one reconcile ended, for the reconcile families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReconcileResult {
    /// Succeeded; nothing asked.
    Success,
    /// Succeeded, and asked to be looked at again after a delay.
    RequeueAfter,
    /// Failed (retried with backoff).
    Error,
    /// Abandoned after the reconcile timeout (retried with backoff).
    TimedOut,
    /// Panicked (recovered, retried with backoff).
    Panicked,
}

impl ReconcileResult {
    /// Whether the reconcile succeeded.
    pub(crate) fn succeeded(self) -> bool {
        matches!(
            self,
            ReconcileResult::Success | ReconcileResult::RequeueAfter
        )
    }
}

/// The queue and reconcile families.
pub(crate) struct QueueFamilies {
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    depth: Family<DepthLabels, Gauge>,
    queue_duration: HistogramFamily<QueueLabels>,
    work_duration: HistogramFamily<QueueLabels>,
    queues: NamedQueues,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabel, Counter>,
    reconcile_time: HistogramFamily<ControllerLabel>,
    reconcile_panics: Family<ControllerLabel, Counter>,
    reconcile_timeouts: Family<ControllerLabel, Counter>,
    active_workers: Family<ControllerLabel, Gauge>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    dynamic_reconciles: Family<GvrLabel, Counter>,
    dynamic_duration: HistogramFamily<GvrLabel>,
    dynamic_panics: Family<GvrLabel, Counter>,
    dynamic_requeues: Family<RequeueLabels, Counter>,
    handler_errors: Family<GvrLabel, Counter>,
    resolved: Family<GvrLabel, Counter>,
}

/// The longest-running and unfinished work of every named queue, computed when scraped.
struct QueueTimes(NamedQueues);

impl std::fmt::Debug for QueueTimes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("QueueTimes").finish_non_exhaustive()
    }
}

impl Collector for QueueTimes {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let queues = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let times: Vec<(&'static str, (f64, f64))> = queues
            .iter()
            .map(|(name, queue)| (*name, queue.in_progress()))
            .collect();
        drop(queues);
        for (family, help, pick) in [
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
                0,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                1,
            ),
        ] {
            let mut metric = encoder.encode_descriptor(family, help, None, MetricType::Gauge)?;
            for (name, (total, longest)) in &times {
                let labels = QueueLabels {
                    controller: name,
                    name,
                };
                let value = if pick == 0 { *total } else { *longest };
                ConstGauge::new(value).encode(metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl QueueFamilies {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let families = QueueFamilies {
            adds: Family::default(),
            retries: Family::default(),
            depth: Family::default(),
            queue_duration: Family::new_with_constructor(queue_histogram),
            work_duration: Family::new_with_constructor(queue_histogram),
            queues: Arc::default(),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_time_histogram),
            reconcile_panics: Family::default(),
            reconcile_timeouts: Family::default(),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            dynamic_reconciles: Family::default(),
            dynamic_duration: Family::new_with_constructor(reconcile_histogram),
            dynamic_panics: Family::default(),
            dynamic_requeues: Family::default(),
            handler_errors: Family::default(),
            resolved: Family::default(),
        };
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            families.adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, including AddAfter)",
            families.retries.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            families.depth.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            families.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            families.work_duration.clone(),
        );
        registry.register_collector(Box::new(QueueTimes(Arc::clone(&families.queues))));
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            families.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            families.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            families.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            families.reconcile_panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            families.reconcile_timeouts.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            // Every error is retried here: none is terminal.
            Family::<ControllerLabel, Counter>::default(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            families.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            families.max_concurrent.clone(),
        );
        // controller-runtime registers its webhook families in every manager; kro serves no
        // webhook, so they have no series (as upstream's).
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            HistogramFamily::<WebhookLabel>::new_with_constructor(webhook_histogram),
        );
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            Family::<WebhookCodeLabels, Counter>::default(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            Family::<WebhookLabel, Gauge>::default(),
        );
        registry.register(
            "controller_runtime_webhook_panics",
            "Total number of webhook panics",
            Counter::<u64>::default(),
        );
        registry.register(
            "controller_runtime_conversion_webhook_panics",
            "Total number of conversion webhook panics",
            Counter::<u64>::default(),
        );
        registry.register(
            "dynamic_controller_reconcile",
            "Total number of reconciliations per GVR",
            families.dynamic_reconciles.clone(),
        );
        registry.register(
            "dynamic_controller_reconcile_duration_seconds",
            "Duration of reconciliations per GVR",
            families.dynamic_duration.clone(),
        );
        registry.register(
            "dynamic_controller_reconcile_panics",
            "Total number of panics recovered during reconciliation per GVR",
            families.dynamic_panics.clone(),
        );
        registry.register(
            "dynamic_controller_requeue",
            "Total number of requeues per GVR",
            families.dynamic_requeues.clone(),
        );
        registry.register(
            "dynamic_controller_handler_errors",
            "Total number of errors encountered by handlers per GVR",
            families.handler_errors.clone(),
        );
        registry.register(
            "instance_graph_resolution_success",
            "Total number of successful graph resolutions during instance reconciliation",
            families.resolved.clone(),
        );
        // An instance controller here always holds its kind's compiled graph (a spec that
        // does not compile leaves the last one serving): no resolution waits or fails.
        registry.register(
            "instance_graph_resolution_pending",
            "Total number of graph resolutions deferred due to pending revision",
            Family::<GvrLabel, Counter>::default(),
        );
        registry.register(
            "instance_graph_resolution_failures",
            "Total number of graph resolution failures during instance reconciliation",
            Family::<GvrReasonLabels, Counter>::default(),
        );
        families
    }

    /// An instance reconcile of kind `gvr` found its graph (every one does here).
    pub(crate) fn graph_resolved(&self, gvr: &str) {
        self.resolved
            .get_or_create(&GvrLabel {
                gvr: gvr.to_owned(),
            })
            .inc();
    }

    /// The metrics of a queue named `name` (queues of one name share them).
    pub(crate) fn queue(&self, name: &'static str) -> Arc<QueueMetrics> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, queue)) = queues.iter().find(|(known, _)| *known == name) {
            return Arc::clone(queue);
        }
        let labels = QueueLabels {
            controller: name,
            name,
        };
        let queue = Arc::new(QueueMetrics {
            adds: self.adds.get_or_create(&labels).clone(),
            retries: self.retries.get_or_create(&labels).clone(),
            depth: self
                .depth
                .get_or_create(&DepthLabels {
                    controller: name,
                    name,
                    priority: "",
                })
                .clone(),
            queue_duration: self.queue_duration.get_or_create(&labels).clone(),
            work_duration: self.work_duration.get_or_create(&labels).clone(),
            in_flight: Mutex::default(),
            next_token: AtomicU64::new(0),
        });
        queues.push((name, Arc::clone(&queue)));
        queue
    }

    /// The controller-runtime controller `controller` runs `workers` workers.
    pub(crate) fn workers(&self, controller: &'static str, workers: usize) {
        self.max_concurrent
            .get_or_create(&ControllerLabel { controller })
            .set(i64::try_from(workers).unwrap_or(i64::MAX));
    }

    /// A worker of `controller` started (`1`) or finished (`-1`) a reconcile.
    pub(crate) fn working(&self, controller: &'static str, delta: i64) {
        self.active_workers
            .get_or_create(&ControllerLabel { controller })
            .inc_by(delta);
    }

    /// A reconcile of the controller-runtime controller `controller` ended.
    pub(crate) fn reconciled(
        &self,
        controller: &'static str,
        result: ReconcileResult,
        seconds: f64,
    ) {
        let label = ControllerLabel { controller };
        let result = match result {
            ReconcileResult::Success => "success",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Error | ReconcileResult::TimedOut | ReconcileResult::Panicked => {
                self.reconcile_errors.get_or_create(&label).inc();
                match result {
                    ReconcileResult::TimedOut => {
                        self.reconcile_timeouts.get_or_create(&label).inc();
                    }
                    ReconcileResult::Panicked => {
                        self.reconcile_panics.get_or_create(&label).inc();
                    }
                    _ => {}
                }
                "error"
            }
        };
        self.reconciles
            .get_or_create(&ResultLabels { controller, result })
            .inc();
        self.reconcile_time.get_or_create(&label).observe(seconds);
    }

    /// A reconcile of an instance of kind `gvr` ended, as upstream's dynamic controller counts
    /// it: every reconcile and its duration; a requeue by its type; a panic and an error as
    /// handler errors.
    pub(crate) fn instance_reconciled(&self, gvr: &str, result: ReconcileResult, seconds: f64) {
        let label = GvrLabel {
            gvr: gvr.to_owned(),
        };
        self.dynamic_reconciles.get_or_create(&label).inc();
        self.dynamic_duration.get_or_create(&label).observe(seconds);
        let requeue = match result {
            ReconcileResult::Success => None,
            ReconcileResult::RequeueAfter => Some("requeue_after"),
            ReconcileResult::Error | ReconcileResult::TimedOut | ReconcileResult::Panicked => {
                self.handler_errors.get_or_create(&label).inc();
                if result == ReconcileResult::Panicked {
                    self.dynamic_panics.get_or_create(&label).inc();
                }
                Some("rate_limited")
            }
        };
        if let Some(kind) = requeue {
            self.dynamic_requeues
                .get_or_create(&RequeueLabels {
                    gvr: gvr.to_owned(),
                    r#type: kind,
                })
                .inc();
        }
    }
}
