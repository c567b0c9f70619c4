//! The same instance on a fresh server takes the same requests every time (issue #26): the
//! level chain of the `levels` bench (4 levels of 5 ConfigMaps), applied 20 times, each on a
//! server and controllers of its own, costs the controllers exactly the same requests by verb
//! and status code to ACTIVE and through a second of steady state. Extra re-applies of
//! unchanged objects (a reconcile that runs before the watch cache has seen kro's own write)
//! and duplicate Events would show as a different count.

#[path = "common/mod.rs"]
mod common;

#[path = "../benches/layers/mod.rs"]
mod layers;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Cluster, at, cluster_at};

const RUNS: usize = 20;

/// The controllers' requests so far, by verb and code (`rest_client_requests_by_verb_total`).
fn requests(cluster: &Cluster) -> BTreeMap<String, u64> {
    cluster
        .metrics
        .encode()
        .lines()
        .filter_map(|line| {
            let series = line.strip_prefix("rest_client_requests_by_verb_total")?;
            let (labels, count) = series.rsplit_once(' ')?;
            Some((labels.to_owned(), count.parse::<f64>().ok()? as u64))
        })
        .collect()
}

fn difference(
    after: &BTreeMap<String, u64>,
    before: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(series, count)| {
            (
                series.clone(),
                count - before.get(series).copied().unwrap_or(0),
            )
        })
        .filter(|(_, count)| *count > 0)
        .collect()
}

async fn one_run() -> BTreeMap<String, u64> {
    let cluster = Cluster::start().await;
    cluster.apply_yaml(&layers::rgd()).await;
    cluster
        .wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "layers"),
            "Active",
        )
        .await;
    // The RGD's own writes (status, events) are done before the instance comes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = requests(&cluster);
    cluster
        .apply(&serde_json::json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Layers",
            "metadata": {"name": "stack", "namespace": "default"}, "spec": {},
        }))
        .await;
    cluster
        .wait_state(at("kro.run/v1alpha1", "Layers", "stack"), "ACTIVE")
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let spent = difference(&requests(&cluster), &before);
    cluster.stop().await;
    spent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_instance_takes_the_same_requests_every_time() {
    let mut seen: BTreeMap<BTreeMap<String, u64>, Vec<usize>> = BTreeMap::new();
    for run in 0..RUNS {
        seen.entry(one_run().await).or_default().push(run);
    }
    let report: Vec<String> = seen
        .iter()
        .map(|(spent, runs)| {
            let total: u64 = spent.values().sum();
            format!("runs {runs:?}: {total} requests {spent:?}")
        })
        .collect();
    println!("{}", report.join("\n"));
    assert_eq!(
        seen.len(),
        1,
        "the same instance took different requests:\n{}",
        report.join("\n")
    );
    // And exactly these: the instance's finalizer and labels, then its ApplySet inventory
    // (2 applies), the 20 ConfigMaps created and one status write. No Event: `Active` is
    // off by default.
    let expected: BTreeMap<String, u64> = [
        ("{verb=\"apply\",code=\"200\"}", 2),
        ("{verb=\"apply\",code=\"201\"}", 20),
        ("{verb=\"patch\",code=\"200\"}", 1),
    ]
    .into_iter()
    .map(|(series, count)| (series.to_owned(), count))
    .collect();
    assert_eq!(seen.keys().next(), Some(&expected), "{}", report.join("\n"));
}
