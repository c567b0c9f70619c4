//! How to run the server: the address, authentication, limits, persistence and simulated
//! controllers a [`ServerConfig`] chooses.

use std::net::SocketAddr;
use std::time::Duration;

use crate::storage::StoreLimits;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen; port 0 picks a free port. Loopback by default.
    pub address: SocketAddr,
    /// The bearer token clients must present; `None` serves without authentication
    /// (`--insecure`).
    pub token: Option<String>,
    /// Serve HTTPS with a certificate made at start (kubectl sends tokens only over TLS).
    pub tls: bool,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The most watches open at once.
    pub max_watches: usize,
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Storage limits (change log length for watch resumption).
    pub store_limits: StoreLimits,
    /// Where objects are persisted (SQLite); `None` keeps them in memory only.
    pub data_dir: Option<std::path::PathBuf>,
    /// The simulated controllers to run (none by default: envtest-like).
    pub simulators: crate::simulators::Simulators,
    /// How the simulated controllers behave (stage delays, failing pods).
    pub simulation: crate::simulators::SimulationKnobs,
    /// Latency added to every resource request (test knob; zero by default).
    pub latency: Duration,
    /// A seeded random fraction of resource requests to fail (test knob; none by default).
    pub failure_rate: Option<crate::knobs::FailureRate>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: Some(random_token()),
            tls: true,
            max_body_bytes: 3 * 1024 * 1024,
            max_watches: 1_000,
            bookmark_interval: Duration::from_secs(60),
            store_limits: StoreLimits::default(),
            data_dir: None,
            simulators: crate::simulators::Simulators::none(),
            simulation: crate::simulators::SimulationKnobs::default(),
            latency: Duration::ZERO,
            failure_rate: None,
        }
    }
}

/// A random bearer token.
pub fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}
