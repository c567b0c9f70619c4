//! Simulated cluster behaviour: what kube-controller-manager does on a real cluster, run as
//! in-process clients of the embedded server through its HTTP API and watches, as any
//! controller would (so they exercise the same paths, and their writes are counted, recorded in
//! managed fields and seen by watchers).
//!
//! Each simulator is switchable: with none the server behaves like envtest (namespaces stay
//! Terminating), with them like a cluster. `kro apiserver` runs all by default; servers started
//! in process choose ([`ServerConfig::simulators`](crate::ServerConfig)).

mod autoscalers;
mod deployments;
mod endpoints;
mod garbage_collector;
mod jobs;
mod knobs;
mod namespaces;
mod pod_sets;
mod pods;
mod replica_sets;
mod revisions;
mod services;
mod stateful_sets;
mod support;
mod volumes;

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use tokio::sync::watch;

pub use knobs::{InvalidPodSelector, PodSelector, SimulationKnobs};

/// One simulated controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Simulator {
    /// The namespace controller: a deleted namespace's content is deleted (honouring
    /// finalizers), progress is reported in its conditions, then it is finalized and goes.
    Namespaces,
    /// The garbage collector: dependents of deleted owners go (background and foreground
    /// propagation, `blockOwnerDeletion`), orphaned ones lose their owner reference.
    GarbageCollector,
    /// The deployment controller: a ReplicaSet per pod template, rolling updates, status
    /// and the `Available` and `Progressing` conditions.
    Deployments,
    /// The replica set controller: pods for each ReplicaSet, and its status.
    ReplicaSets,
    /// The stateful set and daemon set controllers: ordered pods (and claims) per
    /// StatefulSet, a pod on the node per DaemonSet, a ControllerRevision per pod template
    /// (reused when a rollback brings its template back, pruned to `revisionHistoryLimit`),
    /// and their status.
    StatefulSets,
    /// The job controller: pods until enough succeeded, status and `Complete`/`Failed`.
    Jobs,
    /// The scheduler and a kubelet on one simulated node: pods bound, then Running and Ready
    /// (or failing, when chosen), Job pods Succeeded.
    Pods,
    /// The service account controller (a `default` ServiceAccount per namespace), the root CA
    /// publisher (a `kube-root-ca.crt` ConfigMap per namespace, with TLS), the EndpointSlice
    /// and Endpoints controllers (the addresses of the pods a Service selects) and a
    /// load-balancer provider (LoadBalancer Services get an ingress IP).
    Services,
    /// The volume binder: PersistentVolumeClaims become Bound.
    Volumes,
    /// The horizontal pod autoscaler: keeps its target within bounds and reports status.
    Autoscalers,
}

impl Simulator {
    /// Every simulator, in the order they are listed.
    pub const ALL: [Simulator; 10] = [
        Simulator::Namespaces,
        Simulator::GarbageCollector,
        Simulator::Deployments,
        Simulator::ReplicaSets,
        Simulator::StatefulSets,
        Simulator::Jobs,
        Simulator::Pods,
        Simulator::Services,
        Simulator::Volumes,
        Simulator::Autoscalers,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Simulator::Namespaces => "namespaces",
            Simulator::GarbageCollector => "garbage-collector",
            Simulator::Deployments => "deployments",
            Simulator::ReplicaSets => "replicasets",
            Simulator::StatefulSets => "statefulsets",
            Simulator::Jobs => "jobs",
            Simulator::Pods => "pods",
            Simulator::Services => "services",
            Simulator::Volumes => "volumes",
            Simulator::Autoscalers => "autoscalers",
        }
    }
}

/// A set of simulators to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simulators(BTreeSet<Simulator>);

impl Simulators {
    /// No simulator (envtest-like).
    pub fn none() -> Self {
        Simulators(BTreeSet::new())
    }

    /// Every simulator (cluster-like).
    pub fn all() -> Self {
        Simulators(Simulator::ALL.into_iter().collect())
    }

    /// Whether `simulator` is in the set.
    pub fn contains(&self, simulator: Simulator) -> bool {
        self.0.contains(&simulator)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A `--simulators` value that names no simulator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown simulator {name:?}: use none, all, or a comma-separated list of {known}")]
pub struct UnknownSimulator {
    name: String,
    known: String,
}

impl FromStr for Simulators {
    type Err = UnknownSimulator;

    /// `none`, `all`, or a comma-separated list of names (`namespaces,pods`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "none" | "" => return Ok(Simulators::none()),
            "all" => return Ok(Simulators::all()),
            _ => {}
        }
        let mut set = BTreeSet::new();
        for name in text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            let simulator = Simulator::ALL
                .into_iter()
                .find(|simulator| simulator.name() == name)
                .ok_or_else(|| UnknownSimulator {
                    name: name.to_owned(),
                    known: Simulator::ALL.map(Simulator::name).join(", "),
                })?;
            set.insert(simulator);
        }
        Ok(Simulators(set))
    }
}

impl fmt::Display for Simulators {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.0.iter().map(|simulator| simulator.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// The header that marks the simulated controllers' requests.
pub(crate) const SIMULATOR_HEADER: &str = "x-kro-simulated-controller";

/// Why the simulators could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulatorStartError {
    /// The server's own kubeconfig did not give a client configuration.
    #[error("cannot configure the simulators' client: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// The client could not be built.
    #[error("cannot build the simulators' client: {0}")]
    Client(#[from] kube::Error),
}

/// Starts the chosen simulators as tasks of the current runtime, talking to the server with
/// `kubeconfig`; they stop when `stop` turns true.
pub(crate) async fn spawn(
    simulators: &Simulators,
    knobs: &SimulationKnobs,
    kubeconfig: &str,
    stop: watch::Receiver<bool>,
) -> Result<(), SimulatorStartError> {
    if simulators.is_empty() {
        return Ok(());
    }
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig)?;
    let authority_pem = parsed
        .clusters
        .first()
        .and_then(|cluster| cluster.cluster.as_ref())
        .and_then(|cluster| cluster.certificate_authority_data.as_deref())
        .and_then(|data| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(data).ok()
        })
        .and_then(|pem| String::from_utf8(pem).ok());
    let mut config = kube::Config::from_custom_kubeconfig(parsed, &Default::default()).await?;
    // The test knobs (latency, injected failures, request counts) are for the clients under
    // test: the simulated cluster's own requests pass them by.
    config.headers.push((
        http::HeaderName::from_static(SIMULATOR_HEADER),
        http::HeaderValue::from_static("true"),
    ));
    let client = kube::Client::try_from(config)?;
    let context = Arc::new(support::Context::new(
        client.clone(),
        knobs.clone(),
        authority_pem,
    ));
    for simulator in &simulators.0 {
        let context = Arc::clone(&context);
        let stop = stop.clone();
        match simulator {
            Simulator::Namespaces => {
                tokio::spawn(namespaces::run(client.clone(), stop));
            }
            Simulator::GarbageCollector => {
                tokio::spawn(garbage_collector::run(context, stop));
            }
            Simulator::Deployments => {
                tokio::spawn(deployments::run(context, stop));
            }
            Simulator::ReplicaSets => {
                tokio::spawn(replica_sets::run(context, stop));
            }
            Simulator::StatefulSets => {
                tokio::spawn(stateful_sets::run(Arc::clone(&context), stop.clone()));
                tokio::spawn(stateful_sets::run_daemon_sets(context, stop));
            }
            Simulator::Jobs => {
                tokio::spawn(jobs::run(context, stop));
            }
            Simulator::Pods => {
                tokio::spawn(pods::run(context, stop));
            }
            Simulator::Services => {
                tokio::spawn(services::run_service_accounts(
                    Arc::clone(&context),
                    stop.clone(),
                ));
                tokio::spawn(endpoints::run(Arc::clone(&context), stop.clone()));
                tokio::spawn(services::run_load_balancers(context, stop));
            }
            Simulator::Volumes => {
                tokio::spawn(volumes::run(context, stop));
            }
            Simulator::Autoscalers => {
                tokio::spawn(autoscalers::run(context, stop));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulator_lists_parse_and_print() {
        assert_eq!("none".parse::<Simulators>(), Ok(Simulators::none()));
        assert_eq!("all".parse::<Simulators>(), Ok(Simulators::all()));
        let chosen: Simulators = " namespaces ".parse().expect("known");
        assert!(chosen.contains(Simulator::Namespaces));
        assert_eq!(chosen.to_string(), "namespaces");
        assert_eq!(Simulators::none().to_string(), "none");
        let error = "namespaces,kubelet"
            .parse::<Simulators>()
            .expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "unknown simulator \"kubelet\": use none, all, or a comma-separated list of namespaces, garbage-collector, deployments, replicasets, statefulsets, jobs, pods, services, volumes, autoscalers"
        );
    }
}
