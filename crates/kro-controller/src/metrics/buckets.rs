//! The histogram shapes the metric families share: upstream kro's buckets for reconcile (and
//! compile, sync, deletion) durations.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

/// Upstream's buckets for reconcile durations, in seconds.
const RECONCILE_BUCKETS: [f64; 16] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 45.0, 60.0, 120.0,
];

/// A family of histograms made by a constructor.
pub(crate) type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// A histogram with upstream's reconcile buckets.
pub(crate) fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}
