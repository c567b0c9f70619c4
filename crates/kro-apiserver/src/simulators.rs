//! Simulated cluster behaviour: what kube-controller-manager does on a real cluster, run as
//! in-process clients of the embedded server through its HTTP API and watches, as any
//! controller would (so they exercise the same paths, and their writes are counted, recorded in
//! managed fields and seen by watchers).
//!
//! Each simulator is switchable: with none the server behaves like envtest (namespaces stay
//! Terminating), with them like a cluster. `kro apiserver` runs all by default; servers started
//! in process choose ([`ServerConfig::simulators`](crate::ServerConfig)).

mod namespaces;

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use tokio::sync::watch;

/// One simulated controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Simulator {
    /// The namespace controller: a deleted namespace's content is deleted (honouring
    /// finalizers), progress is reported in its conditions, then it is finalized and goes.
    Namespaces,
}

impl Simulator {
    /// Every simulator, in the order they are listed.
    pub const ALL: [Simulator; 1] = [Simulator::Namespaces];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Simulator::Namespaces => "namespaces",
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

    /// `none`, `all`, or a comma-separated list of names (`namespaces`).
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
    kubeconfig: &str,
    stop: watch::Receiver<bool>,
) -> Result<(), SimulatorStartError> {
    if simulators.is_empty() {
        return Ok(());
    }
    let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    if simulators.contains(Simulator::Namespaces) {
        tokio::spawn(namespaces::run(client, stop));
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
            "unknown simulator \"kubelet\": use none, all, or a comma-separated list of namespaces"
        );
    }
}
