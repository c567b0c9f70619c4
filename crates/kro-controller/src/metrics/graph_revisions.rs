//! The GraphRevision metrics, with upstream kro v0.9.4's names, labels and buckets
//! (`pkg/metrics/{graphrevision,revision_registry,rgd}.go`): compilations, status writes and
//! finalizer releases of revisions, the registry of revisions this controller knows by state,
//! and what the RGD controller decided (issue, wait, serve), with retention's deletions.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::buckets::{HistogramFamily, reconcile_histogram};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    from: &'static str,
    to: &'static str,
}

/// A revision's state in the registry, as upstream labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RevisionState {
    /// Issued, not yet compiled.
    Pending,
    /// Compiled and verified: it may serve.
    Active,
    /// Its snapshot does not compile.
    Failed,
}

impl RevisionState {
    fn label(self) -> &'static str {
        match self {
            RevisionState::Pending => "pending",
            RevisionState::Active => "active",
            RevisionState::Failed => "failed",
        }
    }
}

/// The GraphRevision families.
pub(crate) struct RevisionMetrics {
    compiles: Family<ResultLabel, Counter>,
    compile_duration: HistogramFamily<ResultLabel>,
    status_update_errors: Counter,
    activation_deferred: Counter,
    finalizer_evictions: Counter,
    registry_entries: Family<StateLabel, Gauge>,
    registry_transitions: Family<TransitionLabels, Counter>,
    registry_evictions: Counter,
    issues: Family<ReasonLabel, Counter>,
    waits: Family<ReasonLabel, Counter>,
    resolutions: Family<ResultLabel, Counter>,
    registry_misses: Family<ReasonLabel, Counter>,
    gc_deleted: Counter,
    gc_errors: Counter,
}

impl RevisionMetrics {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let metrics = RevisionMetrics {
            compiles: Family::default(),
            compile_duration: Family::new_with_constructor(reconcile_histogram),
            status_update_errors: Counter::default(),
            activation_deferred: Counter::default(),
            finalizer_evictions: Counter::default(),
            registry_entries: Family::default(),
            registry_transitions: Family::default(),
            registry_evictions: Counter::default(),
            issues: Family::default(),
            waits: Family::default(),
            resolutions: Family::default(),
            registry_misses: Family::default(),
            gc_deleted: Counter::default(),
            gc_errors: Counter::default(),
        };
        registry.register(
            "graph_revision_compile",
            "Total number of GraphRevision compile attempts by result",
            metrics.compiles.clone(),
        );
        registry.register(
            "graph_revision_compile_duration_seconds",
            "Duration of GraphRevision compile attempts in seconds",
            metrics.compile_duration.clone(),
        );
        registry.register(
            "graph_revision_status_update_errors",
            "Total number of GraphRevision status update failures",
            metrics.status_update_errors.clone(),
        );
        registry.register(
            "graph_revision_activation_deferred",
            "Total number of times GraphRevision activation was deferred until status persistence succeeds",
            metrics.activation_deferred.clone(),
        );
        registry.register(
            "graph_revision_finalizer_evictions",
            "Total number of registry evictions triggered by GraphRevision finalizer cleanup",
            metrics.finalizer_evictions.clone(),
        );
        registry.register(
            "graph_revision_registry_entries",
            "Current number of GraphRevision entries in the in-memory registry by state",
            metrics.registry_entries.clone(),
        );
        registry.register(
            "graph_revision_registry_transitions",
            "Total number of GraphRevision registry state transitions",
            metrics.registry_transitions.clone(),
        );
        registry.register(
            "graph_revision_registry_evictions",
            "Total number of GraphRevision registry evictions",
            metrics.registry_evictions.clone(),
        );
        registry.register(
            "rgd_graph_revision_issue",
            "Total number of GraphRevision objects issued by the RGD controller",
            metrics.issues.clone(),
        );
        registry.register(
            "rgd_graph_revision_wait",
            "Total number of times the RGD controller waited for GraphRevision progress",
            metrics.waits.clone(),
        );
        registry.register(
            "rgd_graph_revision_resolution",
            "Total number of GraphRevision resolution outcomes in the RGD controller",
            metrics.resolutions.clone(),
        );
        registry.register(
            "rgd_graph_revision_registry_miss",
            "Total number of times the RGD controller observed GraphRevisions ahead of the in-memory registry",
            metrics.registry_misses.clone(),
        );
        registry.register(
            "rgd_graph_revision_gc_deleted",
            "Total number of GraphRevision objects deleted by RGD garbage collection",
            metrics.gc_deleted.clone(),
        );
        registry.register(
            "rgd_graph_revision_gc_errors",
            "Total number of GraphRevision garbage collection errors in the RGD controller",
            metrics.gc_errors.clone(),
        );
        metrics
    }

    /// A revision's snapshot compiled (or not) in `seconds`.
    pub(crate) fn compiled(&self, succeeded: bool, seconds: f64) {
        let label = ResultLabel {
            result: if succeeded { "success" } else { "failed" },
        };
        self.compiles.get_or_create(&label).inc();
        let histogram: &Histogram = &self.compile_duration.get_or_create(&label);
        histogram.observe(seconds);
    }

    /// Writing a revision's status failed, so it was not made Active.
    pub(crate) fn status_update_failed(&self) {
        self.status_update_errors.inc();
        self.activation_deferred.inc();
    }

    /// A deleted revision's finalizer was released and its entry evicted.
    pub(crate) fn finalizer_evicted(&self) {
        self.finalizer_evictions.inc();
    }

    /// A registry entry changed from `from` (none when new) to `to`.
    pub(crate) fn registry_put(&self, from: Option<RevisionState>, to: RevisionState) {
        if let Some(from) = from {
            if from == to {
                return;
            }
            self.registry_entries
                .get_or_create(&StateLabel {
                    state: from.label(),
                })
                .dec();
            self.registry_transitions
                .get_or_create(&TransitionLabels {
                    from: from.label(),
                    to: to.label(),
                })
                .inc();
        }
        self.registry_entries
            .get_or_create(&StateLabel { state: to.label() })
            .inc();
    }

    /// A registry entry in state `state` was evicted.
    pub(crate) fn registry_evicted(&self, state: RevisionState) {
        self.registry_entries
            .get_or_create(&StateLabel {
                state: state.label(),
            })
            .dec();
        self.registry_evictions.inc();
    }

    /// A revision was issued: `no_revision` or `spec_changed`.
    pub(crate) fn issued(&self, reason: &'static str) {
        self.issues.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// The RGD controller waited: `settling` (for now the only wait here).
    pub(crate) fn waited(&self, reason: &'static str) {
        self.waits.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// How one RGD reconcile resolved its revisions: `serve`, `issue`, `wait` or `failed`.
    pub(crate) fn resolved(&self, result: &'static str) {
        self.resolutions
            .get_or_create(&ResultLabel { result })
            .inc();
    }

    /// The latest revision was not in the registry yet (`latest_not_warmed`).
    pub(crate) fn registry_missed(&self, reason: &'static str) {
        self.registry_misses
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// Retention deleted a revision.
    pub(crate) fn gc_deleted(&self) {
        self.gc_deleted.inc();
    }

    /// Retention could not delete a revision.
    pub(crate) fn gc_failed(&self) {
        self.gc_errors.inc();
    }
}
