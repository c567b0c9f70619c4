//! The propagation rate of a controlled rollout (issue 41): 20 instances under
//! `kro.run/propagation-rate: "10/m"` should take between 100 and 140 s to move to a new
//! revision (one every 6 s: the last moves 19 × 6 = 114 s after the first).
//!
//! `cargo bench -p kro-controller --bench propagation_rate` runs the embedded API server and
//! the controllers with the gate `PropagationControl`, an RGD of one ConfigMap per instance and
//! 20 instances, and times from a change of the RGD until `Propagated` says every instance is
//! on the new revision:
//! - the baseline, in the same run: the policy `${true}` (every instance moves at once);
//! - the rate (`KRO_BENCH_RATE`, by default `10/m`).
//!
//! It prints both, the ideal (19 intervals), and the ratio of the rate's time to the ideal;
//! with the default rate it exits with a failure outside 100–140 s.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster_at};
use kro_controller::Settings;
use kro_graph::propagation::PropagationRate;
use kro_graph::{Feature, FeatureGates};
use serde_json::{Value, json};

const INSTANCES: usize = 20;

fn rgd(data: &str, rate: Option<&str>) -> Value {
    let annotations = match rate {
        Some(rate) => json!({"kro.run/propagation-rate": rate}),
        None => json!({}),
    };
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "paced", "annotations": annotations},
        "spec": {
            "propagateWhen": ["${true}"],
            "schema": {"apiVersion": "v1alpha1", "kind": "Paced"},
            "resources": [{"id": "config", "template": {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}"},
                "data": {"value": data},
            }}],
        },
    })
}

/// Waits until `Propagated` says every instance is on `revision`.
async fn propagated(cluster: &Cluster, revision: i64) {
    let expected = format!("all {INSTANCES} instances on revision {revision}");
    cluster
        .wait_for_within(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "paced"),
            &expected,
            Duration::from_secs(600),
            |rgd| {
                rgd.and_then(|rgd| rgd["status"]["conditions"].as_array())
                    .is_some_and(|conditions| {
                        conditions.iter().any(|condition| {
                            condition["type"] == "Propagated" && condition["message"] == expected
                        })
                    })
            },
        )
        .await;
}

/// Applies `rgd` and times until revision `revision` reached every instance.
async fn change(cluster: &Cluster, rgd: &Value, revision: i64) -> Duration {
    let started = Instant::now();
    cluster.apply(rgd).await;
    propagated(cluster, revision).await;
    started.elapsed()
}

fn main() {
    let rate_text = std::env::var("KRO_BENCH_RATE").unwrap_or_else(|_| "10/m".to_owned());
    let rate = PropagationRate::parse(&rate_text)
        .unwrap_or_else(|error| panic!("KRO_BENCH_RATE={rate_text:?}: {error}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (baseline, paced) = runtime.block_on(async {
        let settings = Settings {
            features: FeatureGates::default().with(Feature::PropagationControl, true),
            ..Settings::default()
        };
        let cluster = Cluster::start_configured(settings, Default::default()).await;
        cluster.apply(&rgd("1", None)).await;
        cluster
            .wait_for(
                cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "paced"),
                "Active",
                |rgd| rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active"),
            )
            .await;
        for index in 0..INSTANCES {
            cluster
                .apply(&json!({
                    "apiVersion": "kro.run/v1alpha1", "kind": "Paced",
                    "metadata": {"name": format!("paced-{index:02}"), "namespace": "default"},
                }))
                .await;
        }
        propagated(&cluster, 1).await;
        let baseline = change(&cluster, &rgd("2", None), 2).await;
        // The annotation alone issues no revision; the change after it is paced.
        cluster.apply(&rgd("2", Some(&rate_text))).await;
        let paced = change(&cluster, &rgd("3", Some(&rate_text)), 3).await;
        cluster.stop().await;
        (baseline, paced)
    });
    let intervals = u32::try_from(INSTANCES - 1).unwrap_or(u32::MAX);
    let ideal = rate.interval() * intervals;
    println!("| rollout of {INSTANCES} instances | time | ratio to the ideal |");
    println!("|---|---|---|");
    println!("| all at once (`${{true}}`, baseline) | {baseline:.2?} | |");
    println!(
        "| `kro.run/propagation-rate: {rate_text}` | {paced:.2?} | {:.3} (ideal {ideal:.0?}: {intervals} intervals of {:.1?}) |",
        paced.as_secs_f64() / ideal.as_secs_f64().max(f64::EPSILON),
        rate.interval()
    );
    if rate_text == "10/m" && !(100..=140).contains(&paced.as_secs()) {
        eprintln!("20 instances at 10/m took {paced:.1?}, outside 100–140 s");
        std::process::exit(1);
    }
}
