//! How the simulated cluster behaves: stage delays and the pods that fail.

use std::str::FromStr;
use std::time::Duration;

use serde_json::json;

/// How the simulated cluster behaves: how long each stage takes, and which pods fail.
#[derive(Debug, Clone)]
pub struct SimulationKnobs {
    /// From a pod's creation to its binding to the simulated node.
    pub pod_schedule_delay: Duration,
    /// From a pod's binding to Running and Ready (or to failing).
    pub pod_ready_delay: Duration,
    /// How long a Job's pod runs before it succeeds.
    pub job_pod_duration: Duration,
    /// Until a LoadBalancer Service gets its ingress address.
    pub load_balancer_delay: Duration,
    /// Until a PersistentVolumeClaim is Bound.
    pub volume_bind_delay: Duration,
    /// Pods whose labels match fail instead of becoming ready: `restartPolicy: Never` pods
    /// end Failed, others crash-loop (Running, not Ready).
    pub failing_pods: Option<PodSelector>,
}

impl Default for SimulationKnobs {
    fn default() -> Self {
        SimulationKnobs {
            pod_schedule_delay: Duration::from_millis(100),
            pod_ready_delay: Duration::from_millis(300),
            job_pod_duration: Duration::from_millis(500),
            load_balancer_delay: Duration::from_millis(200),
            volume_bind_delay: Duration::from_millis(200),
            failing_pods: None,
        }
    }
}

/// A label selector over pods, given on the command line or in tests (`app=broken`).
#[derive(Debug, Clone)]
pub struct PodSelector {
    text: String,
    selector: crate::selectors::LabelSelector,
}

impl PodSelector {
    /// Whether the pod's labels match.
    pub(super) fn matches(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.selector
            .matches(&json!({"metadata": {"labels": labels}}))
    }
}

/// A pod selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {text:?}: {message}")]
pub struct InvalidPodSelector {
    text: String,
    message: String,
}

impl FromStr for PodSelector {
    type Err = InvalidPodSelector;

    /// Parses a label selector in kubectl's syntax.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let selector =
            crate::selectors::LabelSelector::parse(text).map_err(|error| InvalidPodSelector {
                text: text.to_owned(),
                message: error.message,
            })?;
        Ok(PodSelector {
            text: text.to_owned(),
            selector,
        })
    }
}

impl std::fmt::Display for PodSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}
