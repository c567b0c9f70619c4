//! Upstream's feature gates (Settings::features, `--feature-gates`), honoured: an RGD that calls
//! `omit()` is refused unless `CELOmitFunction` is on; condition transitions become Events with
//! `InstanceConditionEvents` and the `instance_condition_current_status_seconds` gauge with
//! `InstanceConditionMetrics`, and neither without its gate. Ours: `InstanceManagedResources`
//! lists an instance's objects in `status.managedResources`, and a resync writes nothing
//! more.

mod common;

use common::{Cluster, at, cluster_at};
use kro_controller::Settings;
use kro_graph::{Feature, FeatureGates};
use serde_json::{Value, json};

fn omitting_rgd() -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "tagged"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Tagged",
                "spec": {"tag": "string | default=\"\""}},
            "resources": [{"id": "settings", "template": {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}"},
                "data": {"tag": "${schema.spec.tag != '' ? schema.spec.tag : omit()}"},
            }}],
        },
    })
}

fn settings_with(features: &[Feature]) -> Settings {
    Settings {
        features: features
            .iter()
            .fold(FeatureGates::default(), |gates, feature| {
                gates.with(*feature, true)
            }),
        ..Settings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_is_refused_unless_the_controller_has_its_gate() {
    let cluster = Cluster::start().await;
    cluster.apply(&omitting_rgd()).await;
    let refused = cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "tagged"),
            "refused",
            |rgd| {
                rgd.is_some_and(|rgd| {
                    rgd["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|condition| {
                            condition["status"] == "False"
                                && condition["message"].as_str().is_some_and(|message| {
                                    message.contains(
                                        "omit() requires the CELOmitFunction feature gate",
                                    )
                                })
                        })
                })
            },
        )
        .await
        .expect("the RGD");
    assert_ne!(refused["status"]["state"], "Active", "{refused}");
    cluster.stop().await;

    let cluster = Cluster::start_with(settings_with(&[Feature::CelOmitFunction])).await;
    cluster.apply(&omitting_rgd()).await;
    cluster
        .wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "tagged"),
            "Active",
        )
        .await;
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Tagged",
            "metadata": {"name": "plain", "namespace": "default"},
            "spec": {},
        }))
        .await;
    let map = cluster
        .wait_for(at("v1", "ConfigMap", "plain"), "created", |map| {
            map.is_some()
        })
        .await
        .expect("the ConfigMap");
    assert!(map["data"].get("tag").is_none(), "omitted: {map}");
    cluster.stop().await;
}

/// The `instance_condition_current_status_seconds` samples of the instance `name`, as
/// `(condition_type, condition_status)`.
fn condition_gauges(cluster: &Cluster, name: &str) -> Vec<(String, String)> {
    let text = cluster.metrics.encode();
    let mut found: Vec<(String, String)> = text
        .lines()
        .filter(|line| line.starts_with("instance_condition_current_status_seconds{"))
        .filter(|line| line.contains(&format!("name=\"{name}\"")))
        .filter_map(|line| {
            let label = |key: &str| {
                let start = line.find(&format!("{key}=\""))? + key.len() + 2;
                let end = start + line[start..].find('"')?;
                Some(line[start..end].to_owned())
            };
            Some((label("condition_type")?, label("condition_status")?))
        })
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn condition_transitions_are_events_and_gauges_only_with_their_gates() {
    let cluster = Cluster::start_with(settings_with(&[
        Feature::InstanceConditionEvents,
        Feature::InstanceConditionMetrics,
    ]))
    .await;
    cluster.active_note("first").await;
    let gauges = condition_gauges(&cluster, "first");
    assert!(
        gauges.contains(&("Ready".to_owned(), "True".to_owned())),
        "{gauges:?}\n{}",
        cluster.metrics.encode()
    );
    // Events are recorded after the status write that makes the transition.
    let mut reasons = Vec::new();
    for _ in 0..100 {
        reasons = cluster.event_reasons("first").await;
        if reasons.iter().any(|reason| reason == "Ready") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        reasons.iter().any(|reason| reason == "Ready"),
        "{reasons:?}"
    );
    cluster
        .delete(at("kro.run/v1alpha1", "Note", "first"))
        .await;
    cluster
        .wait_gone(at("kro.run/v1alpha1", "Note", "first"))
        .await;
    for _ in 0..100 {
        if condition_gauges(&cluster, "first").is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        condition_gauges(&cluster, "first"),
        [],
        "a deleted instance leaves no gauge"
    );
    cluster.stop().await;

    let cluster = Cluster::start().await;
    cluster.active_note("second").await;
    assert_eq!(condition_gauges(&cluster, "second"), []);
    let reasons = cluster.event_reasons("second").await;
    assert!(
        !reasons.iter().any(|reason| reason == "Ready"),
        "no condition Events without the gate: {reasons:?}"
    );
    cluster.stop().await;
}

/// A ConfigMap, then a collection of ConfigMaps that reads it (two levels).
fn listed_rgd() -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "listed"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Listed",
                "spec": {"names": "[]string"}},
            "resources": [
                {"id": "entries", "forEach": [{"entry": "${schema.spec.names}"}], "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${config.metadata.name + '-' + entry}"},
                }},
                {"id": "config", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                }},
            ],
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_resources_list_an_instance_s_objects_in_apply_order_with_their_gate_only() {
    for gated in [true, false] {
        let features: &[Feature] = if gated {
            &[Feature::InstanceManagedResources]
        } else {
            &[]
        };
        let cluster = Cluster::start_with(settings_with(features)).await;
        cluster.apply(&listed_rgd()).await;
        cluster
            .wait_for(
                cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "listed"),
                "Active",
                |rgd| rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active"),
            )
            .await;
        cluster
            .apply(&json!({
                "apiVersion": "kro.run/v1alpha1", "kind": "Listed",
                "metadata": {"name": "shop", "namespace": "default"},
                "spec": {"names": ["b", "a"]},
            }))
            .await;
        let instance = cluster
            .wait_state(at("kro.run/v1alpha1", "Listed", "shop"), "ACTIVE")
            .await;
        if !gated {
            assert_eq!(instance["status"].get("managedResources"), None);
            cluster.stop().await;
            continue;
        }
        let uid = |name: &str| {
            let cluster = &cluster;
            let name = name.to_owned();
            async move {
                cluster
                    .get(at("v1", "ConfigMap", &name))
                    .await
                    .expect("the ConfigMap")["metadata"]["uid"]
                    .clone()
            }
        };
        let entry = |node: &str, name: &str, uid: Value| {
            json!({"nodeID": node, "apiVersion": "v1", "kind": "ConfigMap",
                "namespace": "default", "name": name, "uid": uid})
        };
        let expected = json!([
            entry("config", "shop", uid("shop").await),
            entry("entries", "shop-b", uid("shop-b").await),
            entry("entries", "shop-a", uid("shop-a").await),
        ]);
        let listed = cluster
            .wait_for(
                at("kro.run/v1alpha1", "Listed", "shop"),
                "listing its objects",
                |found| found.is_some_and(|found| found["status"]["managedResources"] == expected),
            )
            .await;
        assert!(listed.is_some());
        // Steady state: a resync writes nothing, the list included.
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
        let written = cluster.controller_writes();
        cluster.manager.as_ref().expect("running").resync().await;
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
        assert_eq!(
            cluster.controller_writes(),
            written,
            "writes after a resync"
        );
        cluster.stop().await;
    }
}
