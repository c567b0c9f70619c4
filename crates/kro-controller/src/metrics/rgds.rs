//! The RGD lifecycle families with upstream kro v0.9.4's names and labels: `status.state`
//! transitions and deletions, by RGD name.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::buckets::{HistogramFamily, reconcile_histogram};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    from: String,
    name: String,
    to: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

/// The RGD lifecycle families.
pub(crate) struct RgdFamilies {
    transitions: Family<TransitionLabels, Counter>,
    deletions: Family<NameLabel, Counter>,
    deletion_duration: HistogramFamily<NameLabel>,
}

impl RgdFamilies {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let families = RgdFamilies {
            transitions: Family::default(),
            deletions: Family::default(),
            deletion_duration: Family::new_with_constructor(reconcile_histogram),
        };
        registry.register(
            "rgd_state_transitions",
            "Total number of RGD state transitions",
            families.transitions.clone(),
        );
        registry.register(
            "rgd_deletions",
            "Total number of RGD deletions",
            families.deletions.clone(),
        );
        registry.register(
            "rgd_deletion_duration_seconds",
            "Duration of RGD deletions in seconds",
            families.deletion_duration.clone(),
        );
        families
    }

    /// The RGD `name` went from state `from` to `to` (a first state is not a transition, as
    /// upstream counts).
    pub(crate) fn state_changed(&self, name: &str, from: &str, to: &str) {
        if from.is_empty() || from == to {
            return;
        }
        self.transitions
            .get_or_create(&TransitionLabels {
                from: from.to_owned(),
                name: name.to_owned(),
                to: to.to_owned(),
            })
            .inc();
    }

    /// The RGD `name` was let go (its finalizer removed) after a cleanup of `seconds`.
    pub(crate) fn deleted(&self, name: &str, seconds: f64) {
        let label = NameLabel {
            name: name.to_owned(),
        };
        self.deletions.get_or_create(&label).inc();
        self.deletion_duration
            .get_or_create(&label)
            .observe(seconds);
    }
}
