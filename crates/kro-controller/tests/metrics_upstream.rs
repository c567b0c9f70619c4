//! The metric families upstream kro v0.9.4's controller exposes (its `pkg/metrics` and
//! controller-runtime's, dumped with their types, label names and buckets by
//! `tools/kro-metrics`, built from the module), against ours scraped from running controllers
//! that reconciled RGDs and instances (and failed to): every family of upstream's is served
//! here with upstream's type, and with its labels and buckets wherever the scenarios give it
//! a series; the few they cannot give one are listed in [`SERVED_WITHOUT_SERIES_HERE`], each
//! with why.
//!
//! The Go runtime's `go_*` and the process collector's `process_*` families are left out:
//! they describe a Go process.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::Cluster;
use serde_json::{Value, json};

/// Upstream's families this controller registers, that the scenario of this test gives no
/// series (a Prometheus registry shows a family only once it has one), so their labels are not
/// compared here.
const SERVED_WITHOUT_SERIES_HERE: &[&str] = &[
    // No leader election runs.
    "leader_election_master_status",
    // No reconcile panics (a bug), and none fails for good (every error is retried).
    "controller_runtime_reconcile_panics_total",
    "controller_runtime_terminal_reconcile_errors_total",
    "dynamic_controller_reconcile_panics_total",
    // No server error is retried and no client-side rate limit is set here; unit tests in
    // `retry.rs` and `client_rate.rs` check their series.
    "rest_client_request_retries_total",
    "rest_client_rate_limiter_duration_seconds",
    // An instance controller always holds its kind's compiled graph: no resolution waits or
    // fails.
    "instance_graph_resolution_pending_total",
    "instance_graph_resolution_failures_total",
    // Events are routed by the labels kro writes: no instance registers watch requests.
    "dynamic_controller_watch_request_count",
    // kro serves no admission webhook; controller-runtime registers these in every manager.
    "controller_runtime_webhook_latency_seconds",
    "controller_runtime_webhook_requests_total",
    "controller_runtime_webhook_requests_in_flight",
];

/// One family: its type, the label names its series carry (`None` when it has none to show
/// them), and a histogram's bucket bounds.
#[derive(Debug, Clone, PartialEq)]
struct Family {
    kind: String,
    labels: Option<BTreeSet<String>>,
    buckets: Vec<f64>,
}

/// Upstream's families, without the Go process's own.
fn upstream(tool: &Path) -> BTreeMap<String, Family> {
    let output = std::process::Command::new(tool)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", tool.display()));
    assert!(
        output.status.success(),
        "kro-metrics failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dump: Value = serde_json::from_slice(&output.stdout).expect("kro-metrics prints JSON");
    dump["families"]
        .as_array()
        .expect("families")
        .iter()
        .filter(|family| !matches!(family["source"].as_str(), Some("go" | "process")))
        .map(|family| {
            let strings = |value: &Value| -> Vec<String> {
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            };
            (
                family["name"].as_str().expect("a name").to_owned(),
                Family {
                    kind: family["type"].as_str().expect("a type").to_owned(),
                    labels: Some(strings(&family["labels"]).into_iter().collect()),
                    buckets: family["buckets"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_f64)
                        .collect(),
                },
            )
        })
        .collect()
}

/// The label names and values of a sample line's `{...}`.
fn sample_labels(line: &str) -> Vec<(String, String)> {
    let Some(open) = line.find('{') else {
        return Vec::new();
    };
    let Some(close) = line.rfind('}') else {
        return Vec::new();
    };
    let mut labels = Vec::new();
    let mut rest = &line[open + 1..close];
    while let Some(equals) = rest.find("=\"") {
        let name = rest[..equals].trim_start_matches(',').to_owned();
        let value_start = equals + 2;
        let mut end = value_start;
        let bytes = rest.as_bytes();
        while end < bytes.len() && !(bytes[end] == b'"' && bytes[end - 1] != b'\\') {
            end += 1;
        }
        labels.push((name, rest[value_start..end].to_owned()));
        rest = &rest[(end + 1).min(rest.len())..];
    }
    labels
}

/// Our families from an OpenMetrics scrape, named as Prometheus names them (a counter with
/// `_total`).
fn ours(scrape: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let full = if kind == "counter" && !name.ends_with("_total") {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            kinds.insert(name.to_owned(), full.clone());
            families.insert(
                full,
                Family {
                    kind: kind.to_owned(),
                    labels: None,
                    buckets: Vec::new(),
                },
            );
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let sample = line.split(['{', ' ']).next().unwrap_or_default();
        let base = ["_bucket", "_sum", "_count", "_total", "_created"]
            .iter()
            .find_map(|suffix| {
                sample
                    .strip_suffix(suffix)
                    .filter(|base| kinds.contains_key(*base))
            })
            .unwrap_or(sample);
        let Some(full) = kinds.get(base) else {
            continue;
        };
        let Some(family) = families.get_mut(full) else {
            continue;
        };
        let labels = sample_labels(line);
        if sample.ends_with("_bucket")
            && let Some((_, bound)) = labels.iter().find(|(name, _)| name == "le")
            && let Ok(bound) = bound.parse::<f64>()
            && bound.is_finite()
            && !family.buckets.contains(&bound)
        {
            family.buckets.push(bound);
        }
        let names: BTreeSet<String> = labels
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| name != "le")
            .collect();
        family.labels = Some(names);
    }
    families
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12))
}

/// The controllers' scrape once it shows every one of `series` (within 10 s).
async fn scrape_showing(cluster: &Cluster, series: &[&str]) -> String {
    for _ in 0..200 {
        let scrape = cluster.metrics.encode();
        if series.iter().all(|wanted| scrape.contains(wanted)) {
            return scrape;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "the controllers' metrics did not show {series:?} within 10 s:\n{}",
        cluster.metrics.encode()
    );
}

/// A scrape of controllers whose reconciles fail: an instance whose ConfigMap the server
/// refuses (an invalid name), then every RGD reconcile cut off by a 1 ms reconcile timeout.
async fn failing_reconciles() -> [String; 2] {
    let cluster = Cluster::start().await;
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "named"},
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "Named", "spec": {"name": "string"}},
                "resources": [{"id": "map", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.name}"},
                }}],
            },
        }))
        .await;
    cluster
        .wait_state(
            common::cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "named"),
            "Active",
        )
        .await;
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Named",
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"name": "Not_A_Valid_Name"},
        }))
        .await;
    scrape_showing(&cluster, &["instance_reconcile_errors_total{"]).await;
    // The RGD deleted while its instance exists: Active to Deleting, then gone with it.
    let named = common::cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "named");
    cluster.delete(named).await;
    cluster
        .delete(common::at("kro.run/v1alpha1", "Named", "bad"))
        .await;
    cluster.wait_gone(named).await;
    let scrape = scrape_showing(&cluster, &["rgd_deletions_total{"]).await;
    cluster.stop().await;
    let timing_out = Cluster::start_with(kro_controller::Settings {
        reconcile_timeout: std::time::Duration::from_millis(1),
        ..kro_controller::Settings::default()
    })
    .await;
    timing_out.apply_notes_rgd().await;
    let timeouts = scrape_showing(
        &timing_out,
        &["controller_runtime_reconcile_timeouts_total{"],
    )
    .await;
    timing_out.stop().await;
    [scrape, timeouts]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_upstream_family_we_serve_has_its_type_labels_and_buckets() {
    if !kro_test_support::go_or_skip(
        "metrics_upstream",
        "comparing with upstream kro needs Go to build tools/kro-metrics",
    ) {
        return;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-metrics");
    let tool = kro_test_support::build_go_tool("kro-metrics", ".", &out);
    let expected = upstream(&tool);
    assert!(
        expected.len() > 90,
        "upstream's kro and controller-runtime families: {}",
        expected.len()
    );

    let cluster = Cluster::start().await;
    cluster.active_note("one").await;
    let revisions = cluster.graph_revisions();
    // A revision held while it is deleted: the RGD waits for it to settle.
    let hold = kube::api::Patch::Merge(
        json!({"metadata": {"finalizers": ["kro.run/finalizer", "example.com/hold"]}}),
    );
    revisions
        .patch("notes-r00001", &kube::api::PatchParams::default(), &hold)
        .await
        .expect("held");
    revisions
        .delete("notes-r00001", &kube::api::DeleteParams::default())
        .await
        .expect("deleting");
    scrape_showing(
        &cluster,
        &["rgd_graph_revision_wait_total{reason=\"settling\"}"],
    )
    .await;
    let release = kube::api::Patch::Merge(json!({"metadata": {"finalizers": []}}));
    revisions
        .patch("notes-r00001", &kube::api::PatchParams::default(), &release)
        .await
        .expect("released");
    // A revision this controller did not issue (as upstream leaves them), for the registry
    // miss of the RGD that finds it.
    let foreign: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "internal.kro.run/v1alpha1", "kind": "GraphRevision",
        "metadata": {"name": "broken-r00001"},
        "spec": {"revision": 1, "snapshot": {"name": "broken", "generation": 1, "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Broken"}}}},
    }))
    .expect("a GraphRevision");
    revisions
        .create(&kube::api::PostParams::default(), &foreign)
        .await
        .expect("created");
    // An RGD that does not compile, for the build error series.
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "broken"},
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "Broken", "spec": {"text": "string"}},
                "resources": [{"id": "note", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.nothere}"},
                }}],
            },
        }))
        .await;
    let scrape = scrape_showing(
        &cluster,
        &[
            "rgd_graph_build_errors_total{name=\"broken\"}",
            "rgd_graph_revision_registry_miss_total{",
        ],
    )
    .await;
    cluster.stop().await;
    // Families fed by what happened, not standing at zero: the instance was planned (its
    // node evaluated, its readiness checked, its expressions run), and the queues used.
    for counter in [
        "runtime_creation_total",
        "runtime_node_eval_total",
        "runtime_node_ready_check_total",
        "cel_expr_eval_total",
        "workqueue_adds_total{controller=\"resourcegraphdefinition\",name=\"resourcegraphdefinition\"}",
        "workqueue_adds_total{controller=\"dynamic-controller-queue\",name=\"dynamic-controller-queue\"}",
        "schema_resolver_cache_misses_total",
    ] {
        let value = scrape
            .lines()
            .find_map(|line| line.strip_prefix(counter)?.strip_prefix(' '))
            .and_then(|value| value.parse::<f64>().ok());
        assert!(
            value.is_some_and(|value| value > 0.0),
            "{counter} is {value:?} after an instance was reconciled"
        );
    }
    let mut served = ours(&scrape);
    // Reconciles that fail: the error, timeout and requeue series.
    for (name, family) in failing_reconciles()
        .await
        .iter()
        .flat_map(|scrape| ours(scrape))
    {
        match served.get_mut(&name) {
            Some(known) if known.labels.is_none() => *known = family,
            Some(_) => {}
            None => {
                served.insert(name, family);
            }
        }
    }

    let mut problems = Vec::new();
    let mut missing = Vec::new();
    for (name, want) in &expected {
        let Some(have) = served.get(name) else {
            missing.push(name.as_str());
            continue;
        };
        if have.kind != want.kind {
            problems.push(format!(
                "{name}: type {} here, {} upstream",
                have.kind, want.kind
            ));
        }
        match &have.labels {
            Some(labels) if Some(labels) != want.labels.as_ref() => problems.push(format!(
                "{name}: labels {labels:?} here, {:?} upstream",
                want.labels
                    .as_ref()
                    .map(|labels| labels.iter().collect::<Vec<_>>())
            )),
            _ => {}
        }
        if want.kind == "histogram" && !have.buckets.is_empty() {
            let mut buckets = have.buckets.clone();
            buckets.sort_by(f64::total_cmp);
            if !close(&buckets, &want.buckets) {
                problems.push(format!(
                    "{name}: buckets {buckets:?} here, {:?} upstream",
                    want.buckets
                ));
            }
        }
    }
    let listed: BTreeSet<&str> = SERVED_WITHOUT_SERIES_HERE.iter().copied().collect();
    let missing_set: BTreeSet<&str> = missing.iter().copied().collect();
    for name in missing_set.difference(&listed) {
        problems.push(format!(
            "{name}: upstream serves it and we do not (not listed)"
        ));
    }
    for name in listed.difference(&missing_set) {
        problems.push(format!(
            "{name}: listed as without series, but it has some (or upstream has no such family): take it off SERVED_WITHOUT_SERIES_HERE"
        ));
    }
    eprintln!(
        "upstream: {} families; served here without a series to compare labels: {}",
        expected.len(),
        SERVED_WITHOUT_SERIES_HERE.len()
    );
    assert!(
        problems.is_empty(),
        "{} differences from upstream kro v0.9.4's metrics:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_scrape_is_read_into_families() {
    let scrape = "# HELP a_total A.\n# TYPE a counter\na_total{gvr=\"x\",state=\"y\\\"z\"} 1\n\
                  # TYPE h histogram\nh_bucket{verb=\"get\",le=\"0.5\"} 1\n\
                  h_bucket{verb=\"get\",le=\"+Inf\"} 1\nh_sum{verb=\"get\"} 0.1\n\
                  # TYPE g gauge\n# EOF\n";
    let families = ours(scrape);
    assert_eq!(
        families["a_total"].labels,
        Some(["gvr".to_owned(), "state".to_owned()].into())
    );
    assert_eq!(families["h"].buckets, [0.5]);
    assert_eq!(families["h"].labels, Some(["verb".to_owned()].into()));
    assert_eq!(families["g"].labels, None);
}
