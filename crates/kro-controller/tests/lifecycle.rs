//! An RGD becomes an API and its instance becomes resources, on the embedded API server with
//! its simulated cluster: create, steady state, update, delete.

mod common;

use std::time::Duration;

use common::{Cluster, at, cluster_at};
use serde_json::json;

/// Scales the webapp `shop` to `replicas` without its Ingress; waits until the Ingress is
/// pruned, the Deployment scaled and the instance ACTIVE again, and returns the instance.
async fn shrink_shop(cluster: &Cluster, replicas: u32) -> serde_json::Value {
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {"replicas": replicas, "ingress": {"enabled": false}},
        }))
        .await;
    cluster
        .wait_gone(at("networking.k8s.io/v1", "Ingress", "shop"))
        .await;
    cluster
        .wait_for(
            at("apps/v1", "Deployment", "shop"),
            "scaled",
            |deployment| {
                deployment.is_some_and(|deployment| deployment["spec"]["replicas"] == replicas)
            },
        )
        .await;
    cluster
        .wait_for(
            at("kro.run/v1alpha1", "WebApp", "shop"),
            "ACTIVE with the new replicas",
            |instance| {
                instance.is_some_and(|instance| {
                    instance["status"]["state"] == "ACTIVE"
                        && instance["status"]["availableReplicas"] == replicas
                })
            },
        )
        .await
        .expect("the instance")
}

/// Deletes the webapp `shop` and checks that its Deployment and Service went with it.
async fn delete_shop(cluster: &Cluster) {
    let shop = at("kro.run/v1alpha1", "WebApp", "shop");
    cluster.delete(shop).await;
    cluster.wait_gone(shop).await;
    for (api_version, kind) in [("apps/v1", "Deployment"), ("v1", "Service")] {
        assert!(
            cluster.get(at(api_version, kind, "shop")).await.is_none(),
            "{kind} shop survived its instance"
        );
    }
}

const WEBAPP_RECONCILES: &str =
    "instance_reconcile_total{gvr=\"kro.run/v1alpha1, Resource=webapps\"}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webapp_lifecycle_create_steady_state_update_delete() {
    // With the `Active` Event, which is off by default (the determinism test sees none).
    let cluster = Cluster::start_with(kro_controller::Settings {
        active_events: true,
        ..kro_controller::Settings::default()
    })
    .await;
    let rgd = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "webapp");
    let shop = at("kro.run/v1alpha1", "WebApp", "shop");
    cluster.apply_example("webapp", "rgd.yaml").await;
    let object = cluster.wait_state(rgd, "Active").await;
    assert_eq!(
        object["status"]["topologicalOrder"],
        json!(["deployment", "service", "ingress"])
    );
    assert!(
        object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|finalizers| finalizers.iter().any(|f| f == "kro.run/finalizer")),
        "{object}"
    );

    cluster.apply_example("webapp", "instance.yaml").await;
    let instance = cluster.wait_state(shop, "ACTIVE").await;
    assert_eq!(instance["status"]["availableReplicas"], 3, "{instance}");
    // The instance is written three times: the test's apply, kro's finalizer and labels, and
    // the ApplySet inventory, once, though its three levels each bring a new kind.
    let counts = cluster.server().request_counts();
    assert_eq!(
        counts.get(&("patch".to_owned(), "webapps".to_owned())),
        Some(&3),
        "{counts:?}"
    );
    assert_eq!(
        instance["status"]["endpoint"], "http://shop.default:80",
        "{instance}"
    );
    let labels = &instance["metadata"]["labels"];
    assert_eq!(labels["kro.run/owned"], "true");
    assert_eq!(labels["kro.run/resource-graph-definition-name"], "webapp");
    assert!(
        labels["applyset.kubernetes.io/id"]
            .as_str()
            .is_some_and(|id| id.starts_with("applyset-")),
        "{instance}"
    );
    assert_eq!(
        instance["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "Deployment.apps,Ingress.networking.k8s.io,Service"
    );
    let deployment = cluster
        .get(at("apps/v1", "Deployment", "shop"))
        .await
        .expect("the Deployment");
    let labels = &deployment["metadata"]["labels"];
    assert_eq!(labels["kro.run/node-id"], "deployment");
    assert_eq!(labels["kro.run/instance-name"], "shop");
    assert_eq!(labels["app.kubernetes.io/managed-by"], "kro");
    for (api_version, kind) in [("v1", "Service"), ("networking.k8s.io/v1", "Ingress")] {
        assert!(
            cluster.get(at(api_version, kind, "shop")).await.is_some(),
            "{kind} shop"
        );
    }

    // Steady state: a resync writes nothing (counted by the server and by the controllers'
    // own metrics).
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.server().reset_request_counts();
    let written = cluster.controller_writes();
    let reconciles = cluster
        .metric(WEBAPP_RECONCILES)
        .expect("counted reconciles");
    cluster.manager.as_ref().expect("running").resync().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        cluster.writes(),
        0,
        "writes after a resync in steady state: {:?}",
        cluster.server().request_counts()
    );
    assert_eq!(cluster.controller_writes(), written);
    assert!(
        cluster.metric(WEBAPP_RECONCILES) > Some(reconciles),
        "the resync reconciled"
    );
    assert_eq!(
        cluster
            .metric("instance_count{gvr=\"kro.run/v1alpha1, Resource=webapps\",state=\"ACTIVE\"}"),
        Some(1.0)
    );
    assert_eq!(
        cluster.metric(
            "instance_state_transitions_total{gvr=\"kro.run/v1alpha1, Resource=webapps\",from_state=\"IN_PROGRESS\",to_state=\"ACTIVE\"}"
        ),
        Some(1.0),
        "{}",
        cluster.metrics.encode()
    );

    // Update: the Ingress goes away when it is no longer wanted (pruned), replicas change.
    let instance = shrink_shop(&cluster, 2).await;
    assert_eq!(
        instance["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "Deployment.apps,Service"
    );

    // What happened is told in events, as `kubectl describe` shows them.
    let reasons = cluster.event_reasons("shop").await;
    for reason in ["Active", "Pruned"] {
        assert!(
            reasons.iter().any(|seen| seen == reason),
            "{reason} in {reasons:?}"
        );
    }
    assert!(
        cluster
            .event_reasons("webapp")
            .await
            .iter()
            .any(|seen| seen == "CRDWritten"),
        "the RGD's events"
    );

    // Delete: every resource goes, then the instance.
    delete_shop(&cluster).await;
    cluster.delete(rgd).await;
    cluster.wait_gone(rgd).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_controllers_take_over_what_earlier_ones_created() {
    let mut cluster = Cluster::start().await;
    let rgd = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "webapp");
    let shop = at("kro.run/v1alpha1", "WebApp", "shop");
    cluster.apply_example("webapp", "rgd.yaml").await;
    cluster.wait_state(rgd, "Active").await;
    cluster.apply_example("webapp", "instance.yaml").await;
    cluster.wait_state(shop, "ACTIVE").await;

    // New controllers know the objects only from their watch caches (list answers whose
    // items carry no apiVersion or kind): they must still update, prune and delete them.
    cluster.restart_controllers().await;
    shrink_shop(&cluster, 1).await;

    cluster.restart_controllers().await;
    delete_shop(&cluster).await;
    cluster.stop().await;
}
