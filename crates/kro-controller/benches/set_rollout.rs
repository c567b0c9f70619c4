//! A `<Kind>Set` rolling update of 20 instances against its bound (issue 21).
//!
//! `cargo bench -p kro-controller --bench set_rollout` runs the embedded API server with its
//! simulated cluster (Pods take their stage delays to become Ready), an RGD of one Deployment
//! per instance, and:
//! - a baseline measured in the same run: a Set of 1 whose template changes, timed until its
//!   instance is updated and Ready again (the time one instance needs);
//! - a Set of 20 with `maxConcurrentUpdated` 2, 5 and 20, timed the same way.
//!
//! The bound is 20 / maxConcurrentUpdated × the baseline; it prints each time, the bound and
//! the ratio, and exits with a failure when the rollout two at a time (the design's example)
//! takes more than 1.5 times its bound. Wider rollouts are printed only: with 5 or 20
//! instances rolling at once, the simulated cluster itself (every Deployment, ReplicaSet and
//! Pod of the batch on 2 cores) makes one instance slower than the baseline.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Cluster, WEB_SET_RGD, at, cluster_at};
use serde_json::{Value, json};

const RGD_API: &str = "kro.run/v1alpha1";
const INSTANCES: u64 = 20;

fn web_set(name: &str, replicas: u64, concurrency: u64, version: &str) -> Value {
    json!({"apiVersion": RGD_API, "kind": "WebSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "rollingUpdate": {"maxConcurrentUpdated": concurrency},
            "template": {"spec": {"version": version}}}})
}

/// Waits (up to 5 minutes) until the Set `name` reports `replicas` instances, all Ready and
/// from its current template.
async fn settled(cluster: &Cluster, name: &str, replicas: u64) {
    let started = Instant::now();
    loop {
        let set = cluster.get(at(RGD_API, "WebSet", name)).await;
        if set.as_ref().is_some_and(|set| {
            let status = &set["status"];
            status["replicas"] == replicas
                && status["readyReplicas"] == replicas
                && status["updatedReplicas"] == replicas
                && status["observedGeneration"] == set["metadata"]["generation"]
        }) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{name} did not settle: {set:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates the Set, waits until it settled, changes its template and returns how long the
/// rollout took.
async fn rollout(cluster: &Cluster, name: &str, replicas: u64, concurrency: u64) -> Duration {
    cluster
        .apply(&web_set(name, replicas, concurrency, "1"))
        .await;
    settled(cluster, name, replicas).await;
    let started = Instant::now();
    cluster
        .apply(&web_set(name, replicas, concurrency, "2"))
        .await;
    // The status is written after the update: wait for the new generation first.
    settled(cluster, name, replicas).await;
    started.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let within_bound = runtime.block_on(async {
        let cluster = Cluster::start().await;
        cluster.apply_yaml(WEB_SET_RGD).await;
        cluster
            .wait_state(cluster_at(RGD_API, "ResourceGraphDefinition", "webs"), "Active")
            .await;
        let mut singles = Vec::new();
        for run in 0..3 {
            singles.push(rollout(&cluster, &format!("single-{run}"), 1, 1).await);
        }
        singles.sort();
        let one = singles[1];
        println!(
            "one instance updated and Ready again: {:.2} s (median of 3)",
            one.as_secs_f64()
        );
        let mut within = true;
        for concurrency in [2, 5, 20] {
            let took = rollout(&cluster, &format!("wide-{concurrency}"), INSTANCES, concurrency).await;
            let bound = one.mul_f64(INSTANCES as f64 / concurrency as f64);
            let ratio = took.as_secs_f64() / bound.as_secs_f64().max(0.001);
            println!(
                "{INSTANCES} instances, maxConcurrentUpdated {concurrency}: {:.2} s; bound {INSTANCES}/{concurrency} x {:.2} s = {:.2} s ({ratio:.2}x the bound)",
                took.as_secs_f64(),
                one.as_secs_f64(),
                bound.as_secs_f64(),
            );
            if concurrency == 2 {
                within &= ratio <= 1.5;
            }
        }
        cluster.stop().await;
        within
    });
    if !within_bound {
        eprintln!("the rollout two at a time took more than 1.5 times its bound");
        std::process::exit(1);
    }
}
