//! What the integration suites of this crate share: an in-process server and its client.

use kro_apiserver::{RunningServer, ServerConfig, SimulationKnobs, Simulators, start};

/// An in-process server over plain HTTP with the given simulators, and a kube-rs client of it.
pub async fn serve(simulators: Simulators) -> (RunningServer, kube::Client) {
    serve_with(simulators, SimulationKnobs::default()).await
}

/// An in-process server with the given simulators and knobs, and a kube-rs client of it.
#[allow(dead_code)]
pub async fn serve_with(
    simulators: Simulators,
    simulation: SimulationKnobs,
) -> (RunningServer, kube::Client) {
    let server = start(ServerConfig {
        token: None,
        tls: false,
        simulators,
        simulation,
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let url = server.url().parse().expect("URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("client");
    (server, client)
}
