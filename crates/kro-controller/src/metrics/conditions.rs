//! Instance status conditions as upstream's alpha gates report them: each transition as an
//! Event (`InstanceConditionEvents`), and how long each condition has been in its state as the
//! `instance_condition_current_status_seconds` gauge, computed at scrape time so that it keeps
//! growing while the controller is idle (`InstanceConditionMetrics`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use serde_json::Value as Json;

/// One status condition as the telemetry sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConditionState {
    /// `type`.
    pub(crate) kind: String,
    /// `status`: `True`, `False` or `Unknown`.
    pub(crate) status: String,
    /// `reason`, empty when absent.
    pub(crate) reason: String,
    /// `lastTransitionTime`, when present and valid.
    pub(crate) since: Option<DateTime<Utc>>,
}

/// The conditions of a status object (`status.conditions`), in order; entries without a
/// type are skipped.
pub(crate) fn conditions_of(status: &Json) -> Vec<ConditionState> {
    let text = |condition: &Json, field: &str| {
        condition
            .get(field)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    status
        .get("conditions")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|condition| {
            let kind = text(condition, "type");
            (!kind.is_empty()).then(|| ConditionState {
                status: text(condition, "status"),
                reason: text(condition, "reason"),
                since: condition
                    .get("lastTransitionTime")
                    .and_then(Json::as_str)
                    .and_then(|time| DateTime::parse_from_rfc3339(time).ok())
                    .map(|time| time.with_timezone(&Utc)),
                kind,
            })
        })
        .collect()
}

/// A condition whose status changed (or that appeared) between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transition<'a> {
    /// The condition.
    pub(crate) condition: &'a ConditionState,
    /// Its status before, `none` when it was absent (upstream's word).
    pub(crate) from: &'a str,
}

impl Transition<'_> {
    /// The Event's type: Normal when the condition became `True`, else Warning.
    pub(crate) fn is_normal(&self) -> bool {
        self.condition.status == "True"
    }

    /// The Event's message, as upstream writes it: `False -> True: Ready`.
    pub(crate) fn message(&self) -> String {
        format!(
            "{} -> {}: {}",
            self.from, self.condition.status, self.condition.reason
        )
    }
}

/// The conditions of `after` whose status differs from `before` (or that `before` lacks).
pub(crate) fn transitions<'a>(
    before: &'a [ConditionState],
    after: &'a [ConditionState],
) -> Vec<Transition<'a>> {
    after
        .iter()
        .filter_map(
            |condition| match before.iter().find(|old| old.kind == condition.kind) {
                Some(old) if old.status == condition.status => None,
                Some(old) => Some(Transition {
                    condition,
                    from: &old.status,
                }),
                None => Some(Transition {
                    condition,
                    from: "none",
                }),
            },
        )
        .collect()
}

/// An instance of a kind: `(gvr, namespace, name)`.
type InstanceKey = (String, String, String);

#[derive(Debug, Clone, PartialEq)]
struct Held {
    status: String,
    reason: String,
    since: DateTime<Utc>,
}

/// The state of every condition of every instance reconciled since the controller started,
/// read by the gauge at each scrape.
#[derive(Debug, Default)]
pub(crate) struct ConditionDurations {
    held: Mutex<HashMap<InstanceKey, BTreeMap<String, Held>>>,
}

impl ConditionDurations {
    /// Records an instance's conditions as they now are, replacing what was recorded. A
    /// condition without a `lastTransitionTime` counts from the first time it is seen in its
    /// status and reason (as upstream's collector does).
    pub(crate) fn record(
        &self,
        gvr: &str,
        namespace: &str,
        name: &str,
        conditions: &[ConditionState],
        now: DateTime<Utc>,
    ) {
        let key = (gvr.to_owned(), namespace.to_owned(), name.to_owned());
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let previous = held.remove(&key).unwrap_or_default();
        let mut current = BTreeMap::new();
        for condition in conditions {
            let since = condition.since.unwrap_or_else(|| {
                previous
                    .get(&condition.kind)
                    .filter(|old| old.status == condition.status && old.reason == condition.reason)
                    .map_or(now, |old| old.since)
            });
            current.insert(
                condition.kind.clone(),
                Held {
                    status: condition.status.clone(),
                    reason: condition.reason.clone(),
                    since,
                },
            );
        }
        if !current.is_empty() {
            held.insert(key, current);
        }
    }

    /// Forgets an instance (deleted).
    pub(crate) fn forget_instance(&self, gvr: &str, namespace: &str, name: &str) {
        let key = (gvr.to_owned(), namespace.to_owned(), name.to_owned());
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
    }

    /// Forgets every instance of a kind (its RGD is gone).
    pub(crate) fn forget_kind(&self, gvr: &str) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(kind, _, _), _| kind != gvr);
    }

    /// Every recorded condition with the seconds it has held its state at `now`, sorted.
    fn samples(&self, now: DateTime<Utc>) -> Vec<(Vec<(&'static str, String)>, f64)> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let mut samples: Vec<_> = held
            .iter()
            .flat_map(|((gvr, namespace, name), conditions)| {
                conditions.iter().map(move |(kind, state)| {
                    let seconds = (now - state.since).num_milliseconds().max(0) as f64 / 1000.0;
                    (
                        vec![
                            ("gvr", gvr.clone()),
                            ("namespace", namespace.clone()),
                            ("name", name.clone()),
                            ("condition_type", kind.clone()),
                            ("condition_status", state.status.clone()),
                            ("reason", state.reason.clone()),
                        ],
                        seconds,
                    )
                })
            })
            .collect();
        samples.sort_by(|a, b| a.0.cmp(&b.0));
        samples
    }
}

/// The gauge's name, as upstream registers it.
pub(crate) const CONDITION_SECONDS: &str = "instance_condition_current_status_seconds";

impl Collector for ConditionDurations {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let samples = self.samples(Utc::now());
        let mut metric = encoder.encode_descriptor(
            CONDITION_SECONDS,
            "The current amount of time in seconds that an instance status condition has been in a specific state.",
            None,
            MetricType::Gauge,
        )?;
        for (labels, seconds) in samples {
            ConstGauge::new(seconds).encode(metric.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("valid time")
            .with_timezone(&Utc)
    }

    #[test]
    fn transitions_are_status_changes_and_new_conditions() {
        let before = conditions_of(&json!({"conditions": [
            {"type": "Ready", "status": "False", "reason": "Pending"},
            {"type": "GraphResolved", "status": "True", "reason": "Resolved"},
        ]}));
        let after = conditions_of(&json!({"conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready"},
            {"type": "GraphResolved", "status": "True", "reason": "Other"},
            {"type": "ResourcesReady", "status": "Unknown"},
        ]}));
        let found: Vec<(String, bool)> = transitions(&before, &after)
            .iter()
            .map(|transition| (transition.message(), transition.is_normal()))
            .collect();
        assert_eq!(
            found,
            [
                ("False -> True: Ready".to_owned(), true),
                ("none -> Unknown: ".to_owned(), false),
            ]
        );
    }

    #[test]
    fn the_gauge_counts_from_the_last_transition_and_forgets_deleted_instances() {
        let durations = ConditionDurations::default();
        let conditions = conditions_of(&json!({"conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Odd", "status": "False", "reason": "NoTime"},
        ]}));
        durations.record("g", "ns", "a", &conditions, at("2026-01-01T00:00:30Z"));
        durations.record("g", "ns", "b", &conditions, at("2026-01-01T00:00:30Z"));
        // Seen again later with the same state: a condition without a time keeps its start.
        durations.record("g", "ns", "a", &conditions, at("2026-01-01T00:00:50Z"));
        let samples = durations.samples(at("2026-01-01T00:01:00Z"));
        let values: Vec<(String, String, f64)> = samples
            .iter()
            .map(|(labels, seconds)| (labels[2].1.clone(), labels[3].1.clone(), *seconds))
            .collect();
        assert_eq!(
            values,
            [
                ("a".into(), "Odd".into(), 30.0),
                ("a".into(), "Ready".into(), 60.0),
                ("b".into(), "Odd".into(), 30.0),
                ("b".into(), "Ready".into(), 60.0),
            ]
        );
        durations.forget_instance("g", "ns", "a");
        assert_eq!(durations.samples(at("2026-01-01T00:01:00Z")).len(), 2);
        durations.forget_kind("g");
        assert!(durations.samples(at("2026-01-01T00:01:00Z")).is_empty());
    }
}
