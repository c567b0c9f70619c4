//! The settings every controller shares.

use std::time::Duration;

use kro_runtime::Scheduling;

/// Settings every controller shares.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Workers per controller (instances reconciled at once per kind).
    pub workers: usize,
    /// RGDs reconciled at once.
    pub rgd_workers: usize,
    /// The most objects a collection may have (upstream's `--rgd-max-collection-size`).
    pub max_collection_size: usize,
    /// The most dimensions a `forEach` may have (upstream's
    /// `--rgd-max-collection-dimension-size`).
    pub max_collection_dimensions: usize,
    /// Whether deleting an RGD also deletes the CRDs kro made for it (upstream's
    /// `--allow-crd-deletion`; off by default, so that deleting an RGD never deletes the
    /// custom resources stored under its kind).
    pub allow_crd_deletion: bool,
    /// Objects applied at once within a level.
    pub apply_concurrency: usize,
    /// The CEL cost limit of each expression of an RGD, checked while it runs (`--cel-cost-limit`;
    /// kro-cel's default, 1,000,000, unless set).
    pub cel_cost_limit: u64,
    /// How many GraphRevisions of each RGD are kept (`--rgd-max-graph-revisions`, default 5
    /// as upstream; `0` or less keeps every one).
    pub max_graph_revisions: i64,
    /// How soon an RGD waiting for a GraphRevision to be deleted is looked at again
    /// (`--rgd-progress-requeue-delay`, default 3s as upstream).
    pub progress_requeue_delay: Duration,
    /// The kro version written into labels.
    pub kro_version: String,
    /// Level barrier or wavefront.
    pub scheduling: Scheduling,
    /// How soon a deletion in progress is looked at again without a watch event.
    pub deletion_poll: Duration,
    /// The first retry delay after an error (doubling up to [`max_backoff`](Self::max_backoff)).
    pub backoff: Duration,
    /// The longest retry delay.
    pub max_backoff: Duration,
    /// How long one reconcile may take. One that takes longer (a request the server never
    /// answers, say after it restarted) is abandoned — as if its worker had crashed, which every
    /// reconcile is written to survive — and retried with backoff, so a worker is never held
    /// forever.
    pub reconcile_timeout: Duration,
    /// How many times a read, patch, replace or delete answered 500 or 502 is sent again
    /// (after [`backoff`](Self::backoff), doubling) before its reconcile fails; `0` turns this
    /// off. kube-rs retries 429, 503 and 504 itself.
    pub request_retries: u32,
    /// Whether an instance becoming ACTIVE is told in a Normal `Active` Event. Off by default:
    /// it is one more write per instance (10,000 of them when as many instances are created),
    /// and upstream kro records no Events about instances unless its alpha
    /// `InstanceConditionEvents` gate is on. Warnings (`ReconcileFailed`) and the Events of
    /// pruning and deletion are recorded either way.
    pub active_events: bool,
    /// Upstream's feature gates (`--feature-gates`): `CELOmitFunction` lets RGDs use `omit()`,
    /// `InstanceConditionEvents` records an Event per condition transition,
    /// `InstanceConditionMetrics` feeds `instance_condition_current_status_seconds`. All off by
    /// default, as upstream.
    pub features: kro_graph::FeatureGates,
    /// The clock `time.now()` reads (gate `CELTimeFunctions`) and instances are brought back
    /// by when what they read changes: the system's; tests move a manual one.
    pub clock: crate::clock::Clock,
}

impl Settings {
    /// The delay before retry number `attempt` (from 1): the backoff doubled per attempt,
    /// capped.
    pub(crate) fn retry_delay(&self, attempt: u32) -> Duration {
        self.backoff
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1).min(16)))
            .min(self.max_backoff)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            workers: 4,
            rgd_workers: 4,
            max_collection_size: kro_runtime::DEFAULT_MAX_COLLECTION_SIZE,
            max_collection_dimensions: kro_graph::DEFAULT_MAX_COLLECTION_DIMENSIONS,
            allow_crd_deletion: false,
            apply_concurrency: 16,
            cel_cost_limit: kro_cel::DEFAULT_COST_LIMIT,
            max_graph_revisions: 5,
            progress_requeue_delay: Duration::from_secs(3),
            kro_version: format!("v{}", env!("CARGO_PKG_VERSION")),
            scheduling: Scheduling::Levels,
            deletion_poll: Duration::from_secs(2),
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(60),
            reconcile_timeout: Duration::from_secs(120),
            request_retries: 3,
            active_events: false,
            features: kro_graph::FeatureGates::upstream_defaults(),
            clock: crate::clock::Clock::system(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_doubling_up_to_the_cap() {
        let settings = Settings::default();
        assert_eq!(settings.retry_delay(1), Duration::from_millis(10));
        assert_eq!(settings.retry_delay(2), Duration::from_millis(20));
        assert_eq!(settings.retry_delay(4), Duration::from_millis(80));
        assert_eq!(settings.retry_delay(40), Duration::from_secs(60));
    }
}
