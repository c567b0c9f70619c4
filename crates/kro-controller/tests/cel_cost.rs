//! `--cel-cost-limit` (Settings::cel_cost_limit) bounds every expression of an RGD while it
//! runs: an instance whose expression costs more fails its reconcile, saying so, and the same
//! instance within the limit is created.

mod common;

use common::{Cluster, at, cluster_at};
use kro_controller::Settings;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expression_past_the_cost_limit_fails_its_instance() {
    let cluster = Cluster::start_with(Settings {
        cel_cost_limit: 500,
        ..Settings::default()
    })
    .await;
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "tallies"},
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "Tally",
                    "spec": {"count": "integer"}},
                "resources": [{"id": "tally", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"sum": "${string(lists.range(schema.spec.count).map(i, i * 2).size())}"},
                }}],
            },
        }))
        .await;
    cluster
        .wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "tallies"),
            "Active",
        )
        .await;
    for (name, count) in [("small", 10), ("large", 10_000)] {
        cluster
            .apply(&json!({
                "apiVersion": "kro.run/v1alpha1", "kind": "Tally",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"count": count},
            }))
            .await;
    }
    cluster
        .wait_for(at("v1", "ConfigMap", "small"), "created", |map| {
            map.is_some()
        })
        .await;
    let failed = cluster
        .wait_for(
            at("kro.run/v1alpha1", "Tally", "large"),
            "failed",
            |tally| {
                tally.is_some_and(|tally| {
                    tally["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|condition| {
                            condition["status"] == "False"
                                && condition["message"]
                                    .as_str()
                                    .is_some_and(|message| message.contains("cost"))
                        })
                })
            },
        )
        .await
        .expect("the instance");
    eprintln!(
        "{}",
        serde_json::to_string_pretty(&failed["status"]).unwrap_or_default()
    );
    assert!(cluster.get(at("v1", "ConfigMap", "large")).await.is_none());
    cluster.stop().await;
}
