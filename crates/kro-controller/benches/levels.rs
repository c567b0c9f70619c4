//! Level-by-level parallel apply under API latency (issue 11).
//!
//! `cargo bench -p kro-controller --bench levels` starts the embedded API server with 50 ms of
//! latency injected into every request, applies a 4-level RGD of 20 ConfigMaps (5 per level,
//! each depending on one of the level before) and an instance, and prints how long the
//! instance takes to be ACTIVE against the bound of 3 round trips per level — and against a
//! baseline measured in the same run: the same controller applying one object at a time
//! (`apply_concurrency = 1`). It also prints the requests made, by verb. It exits with a
//! failure when the parallel run misses the bound.

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "layers/mod.rs"]
mod layers;

use layers::{LEVELS, WIDTH, rgd};
use std::time::{Duration, Instant};

use common::{Cluster, at, cluster_at};
use kro_controller::Settings;

const LATENCY: Duration = Duration::from_millis(50);

/// The time from applying the instance to seeing it ACTIVE, and the requests by verb.
async fn run(apply_concurrency: usize) -> (Duration, String) {
    let cluster = Cluster::start_with(Settings {
        apply_concurrency,
        ..Settings::default()
    })
    .await;
    cluster.apply_yaml(&rgd()).await;
    cluster
        .wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "layers"),
            "Active",
        )
        .await;
    cluster.server().set_latency(LATENCY);
    cluster.server().reset_request_counts();
    let started = Instant::now();
    cluster
        .apply(&serde_json::json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Layers",
            "metadata": {"name": "stack", "namespace": "default"}, "spec": {},
        }))
        .await;
    cluster
        .wait_state(at("kro.run/v1alpha1", "Layers", "stack"), "ACTIVE")
        .await;
    let took = started.elapsed();
    let mut by_verb = std::collections::BTreeMap::new();
    for ((verb, _), count) in cluster.server().request_counts() {
        *by_verb.entry(verb).or_insert(0u64) += count;
    }
    let summary = by_verb
        .iter()
        .map(|(verb, count)| format!("{verb} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    cluster.stop().await;
    (took, summary)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bound = LATENCY * (LEVELS as u32) * 3;
    let (parallel, parallel_requests) = run(16).await;
    let (sequential, sequential_requests) = run(1).await;
    let trips = |took: Duration| took.as_secs_f64() / LATENCY.as_secs_f64();
    println!(
        "{LEVELS} levels x {WIDTH} ConfigMaps, {} ms latency per request (the test's own apply and polls included)",
        LATENCY.as_millis()
    );
    println!(
        "  parallel (apply concurrency 16): ACTIVE after {:>5} ms = {:.1} round trips; bound {} ms ({} round trips); requests: {parallel_requests}",
        parallel.as_millis(),
        trips(parallel),
        bound.as_millis(),
        LEVELS * 3
    );
    println!(
        "  baseline (one apply at a time):  ACTIVE after {:>5} ms = {:.1} round trips; requests: {sequential_requests}",
        sequential.as_millis(),
        trips(sequential)
    );
    println!(
        "  parallel / baseline: {:.2}",
        parallel.as_secs_f64() / sequential.as_secs_f64()
    );
    if parallel > bound {
        eprintln!("the parallel run missed its bound");
        std::process::exit(1);
    }
}
