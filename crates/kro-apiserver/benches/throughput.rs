//! Throughput of the embedded API server on loopback, through kube-rs as a controller would
//! use it, and the memory a stored ConfigMap costs (issue 9).
//!
//! `cargo bench -p kro-apiserver --bench throughput` prints:
//! - objects/s for create, get, list (pages of 1,000) and watch fan-out (events delivered per
//!   second to 20 watchers while objects are created);
//! - each against a baseline measured in the same run: the same writes straight into the
//!   server's store, without HTTP, so the ratio is the cost of the HTTP and JSON path;
//! - resident memory per 10,000 ConfigMaps, against the bytes of their JSON.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kro_apiserver::storage::{Mutation, ObjectKey, Store, StoreLimits};
use kro_apiserver::{ServerConfig, start};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::watcher;

const OBJECTS: usize = 2_000;
const WATCHERS: usize = 20;
const MEMORY_OBJECTS: usize = 10_000;

fn config_map(index: usize) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{index:05}"), "namespace": "default",
            "labels": {"app": "bench", "index": index.to_string()}},
        "data": {"config.yaml": "replicas: 3\nimage: nginx:1.27\nport: 8080\n", "mode": "fast"}
    })
}

/// Resident memory of this process (`/proc/self/statm`, second field, in pages).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // Baseline: the same writes straight into a store.
    let store = Store::new(StoreLimits::default());
    let started = Instant::now();
    for index in 0..OBJECTS {
        let object = config_map(index);
        let key = ObjectKey::new("", "configmaps", "default", &format!("cm-{index:05}"));
        store
            .mutate(&key, |_| Ok(Mutation::Put(object)))
            .await
            .expect("stored");
    }
    let direct = rate(OBJECTS, started.elapsed());
    drop(store);

    let server = start(ServerConfig {
        token: None,
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().expect("url")))
        .expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Watch fan-out: every watcher must see every creation.
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let watched = api.clone();
        watchers.push(tokio::spawn(async move {
            let stream = watcher(watched, watcher::Config::default());
            futures_util::pin_mut!(stream);
            let mut seen = 0;
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::Apply(_)) = event {
                    seen += 1;
                    if seen == OBJECTS {
                        return;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    for index in 0..OBJECTS {
        let object: ConfigMap = serde_json::from_value(config_map(index)).expect("ConfigMap");
        api.create(&PostParams::default(), &object)
            .await
            .expect("created");
    }
    let create_elapsed = started.elapsed();
    for watcher in watchers {
        watcher.await.expect("watcher");
    }
    let fan_out_elapsed = started.elapsed();

    let started = Instant::now();
    for index in 0..OBJECTS {
        api.get(&format!("cm-{index:05}")).await.expect("got");
    }
    let get_elapsed = started.elapsed();

    let lists = 10;
    let started = Instant::now();
    let mut listed = 0;
    for _ in 0..lists {
        listed += api
            .list(&ListParams::default().limit(1_000))
            .await
            .expect("listed")
            .items
            .len();
    }
    let list_elapsed = started.elapsed();

    println!("kro-apiserver on loopback through kube-rs, {OBJECTS} ConfigMaps:");
    println!("  baseline: store writes without HTTP  {direct:>10.0} objects/s");
    let report = |what: &str, unit: &str, value: f64| {
        println!(
            "  {what:<36} {value:>10.0} {unit}  (baseline/this = {:.1})",
            direct / value
        );
    };
    report("create", "objects/s", rate(OBJECTS, create_elapsed));
    report("get", "objects/s", rate(OBJECTS, get_elapsed));
    report(
        "list (pages of 1,000)",
        "objects/s",
        rate(listed, list_elapsed),
    );
    report(
        &format!("watch fan-out ({WATCHERS} watchers)"),
        "events/s ",
        rate(OBJECTS * WATCHERS, fan_out_elapsed),
    );

    // Memory: resident growth while 10,000 more ConfigMaps are stored.
    let before = resident_bytes();
    let mut json_bytes = 0;
    for index in OBJECTS..OBJECTS + MEMORY_OBJECTS {
        let value = config_map(index);
        json_bytes += value.to_string().len();
        let object: ConfigMap = serde_json::from_value(value).expect("ConfigMap");
        api.create(&PostParams::default(), &object)
            .await
            .expect("created");
    }
    let grown = resident_bytes().saturating_sub(before);
    println!(
        "  memory per 10,000 ConfigMaps         {:>10.1} MiB  ({} bytes each, {:.1}x their JSON)",
        grown as f64 / (1024.0 * 1024.0),
        grown / MEMORY_OBJECTS as u64,
        grown as f64 / json_bytes as f64
    );
    server.stop();
}
