//! Resource lifecycles (KREP-014) on both servers: what a `retain` lifecycle keeps is released
//! instead of deleted (at instance deletion, when includeWhen turns false, and when its
//! resource leaves the RGD): it stays, with no kro label, annotation or managedFields entry,
//! and a later instance with the same names adopts it. `kro.run/detach-on-deletion` releases
//! everything.

mod common;

use common::{Cluster, at, cluster_at};
use serde_json::{Value, json};

/// An RGD with a policy decided from the instance (production retains, anything else
/// deletes), a static retain behind includeWhen, a static retain that may leave the RGD, and
/// a resource with no lifecycle. `with_scratch: false` is the RGD without `scratch`.
fn keeper_rgd(with_scratch: bool) -> Value {
    let config_map = |suffix: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("${{schema.metadata.name}}-{suffix}")},
            "data": {"environment": "${schema.spec.environment}"},
        })
    };
    let mut resources = vec![
        json!({
            "id": "database",
            "lifecycle":
                "${schema.spec.environment == \"production\" ? policy().withRetain() : policy()}",
            "template": config_map("db"),
        }),
        json!({
            "id": "cache",
            "includeWhen": ["${schema.spec.cache}"],
            "lifecycle": {"deletePolicy": "retain"},
            "template": config_map("cache"),
        }),
        json!({"id": "temp", "template": config_map("temp")}),
    ];
    if with_scratch {
        resources.push(json!({
            "id": "scratch",
            "lifecycle": "${policy().withRetain()}",
            "template": config_map("scratch"),
        }));
    }
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "keeper"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1", "kind": "Keeper",
                "spec": {
                    "environment": "string | default=dev",
                    "cache": "boolean | default=true",
                },
            },
            "resources": resources,
        },
    })
}

fn keeper(name: &str, spec: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "Keeper",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": spec,
    })
}

/// What of kro's is still on `object`: labels, internal annotations, field managers.
fn kro_traces(object: &Value) -> Vec<String> {
    let mut traces = Vec::new();
    let metadata = &object["metadata"];
    for (key, value) in metadata["labels"].as_object().into_iter().flatten() {
        if key.starts_with("kro.run/")
            || key.starts_with("applyset.kubernetes.io/")
            || (key == "app.kubernetes.io/managed-by" && value == "kro")
        {
            traces.push(format!("label {key}"));
        }
    }
    for key in metadata["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, _)| key)
    {
        if key.starts_with("internal.kro.run/") {
            traces.push(format!("annotation {key}"));
        }
    }
    for entry in metadata["managedFields"].as_array().into_iter().flatten() {
        let manager = entry["manager"].as_str().unwrap_or_default();
        if manager.starts_with("kro.run/") {
            traces.push(format!("field manager {manager}"));
        }
    }
    traces
}

/// Waits until the ConfigMap `name` is released: still there, with nothing of kro's on it.
async fn wait_released(cluster: &Cluster, name: &str) -> Value {
    cluster
        .wait_for(at("v1", "ConfigMap", name), "released", |object| {
            object.is_some_and(|object| kro_traces(object).is_empty())
        })
        .await
        .unwrap_or_else(|| panic!("ConfigMap {name} is gone: it should have been released"))
}

/// Waits until the ConfigMap `name` is kro's with the delete policy `policy` stamped.
async fn wait_managed(cluster: &Cluster, name: &str, instance: &str, policy: Option<&str>) {
    let policy = policy.map(|policy| json!(policy));
    cluster
        .wait_for(at("v1", "ConfigMap", name), "managed by kro", |object| {
            object.is_some_and(|object| {
                object["metadata"]["labels"]["kro.run/instance-name"] == instance
                    && object["metadata"]["annotations"].get("internal.kro.run/lifecycle-policy")
                        == policy.as_ref()
            })
        })
        .await;
}

async fn scenario(cluster: &Cluster) {
    let rgd = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "keeper");
    let prod = at("kro.run/v1alpha1", "Keeper", "prod");
    cluster.apply(&keeper_rgd(true)).await;
    cluster.wait_state(rgd, "Active").await;

    // The decision is stamped on each object at apply; no lifecycle, no annotation.
    cluster
        .apply(&keeper(
            "prod",
            json!({"environment": "production"}),
            json!({}),
        ))
        .await;
    cluster.wait_state(prod, "ACTIVE").await;
    wait_managed(cluster, "prod-db", "prod", Some("retain")).await;
    wait_managed(cluster, "prod-cache", "prod", Some("retain")).await;
    wait_managed(cluster, "prod-scratch", "prod", Some("retain")).await;
    wait_managed(cluster, "prod-temp", "prod", None).await;

    // Pruned by includeWhen: released, not deleted.
    cluster
        .apply(&keeper(
            "prod",
            json!({"environment": "production", "cache": false}),
            json!({}),
        ))
        .await;
    wait_released(cluster, "prod-cache").await;

    // Pruned by leaving the RGD: released too.
    cluster.apply(&keeper_rgd(false)).await;
    wait_released(cluster, "prod-scratch").await;

    // Instance deletion: production retains the database; temp goes.
    cluster.delete(prod).await;
    cluster.wait_gone(prod).await;
    let database = wait_released(cluster, "prod-db").await;
    assert_eq!(database["data"]["environment"], "production");
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "prod-temp"))
            .await
            .is_none(),
        "a resource with no lifecycle is deleted with its instance"
    );
    let reasons = cluster.event_reasons("prod").await;
    assert!(
        reasons
            .iter()
            .filter(|reason| *reason == "Released")
            .count()
            >= 3,
        "{reasons:?}"
    );

    // A later instance with the same names adopts what was released; in dev it deletes.
    cluster
        .apply(&keeper(
            "prod",
            json!({"environment": "dev", "cache": false}),
            json!({}),
        ))
        .await;
    cluster.wait_state(prod, "ACTIVE").await;
    wait_managed(cluster, "prod-db", "prod", Some("delete")).await;
    let adopted = cluster
        .get(at("v1", "ConfigMap", "prod-db"))
        .await
        .expect("adopted");
    assert_eq!(adopted["data"]["environment"], "dev");
    cluster.delete(prod).await;
    cluster.wait_gone(prod).await;
    cluster.wait_gone(at("v1", "ConfigMap", "prod-db")).await;
    // What the RGD no longer names, and what includeWhen left out, stay unmanaged.
    for name in ["prod-scratch", "prod-cache"] {
        let object = cluster
            .get(at("v1", "ConfigMap", name))
            .await
            .unwrap_or_else(|| panic!("{name} stays"));
        assert_eq!(kro_traces(&object), Vec::<String>::new(), "{name}");
    }

    // detach-on-deletion releases everything, whatever each lifecycle says.
    let detached = at("kro.run/v1alpha1", "Keeper", "detached");
    cluster
        .apply(&keeper(
            "detached",
            json!({}),
            json!({"kro.run/detach-on-deletion": "true"}),
        ))
        .await;
    cluster.wait_state(detached, "ACTIVE").await;
    cluster.delete(detached).await;
    cluster.wait_gone(detached).await;
    for name in ["detached-db", "detached-cache", "detached-temp"] {
        wait_released(cluster, name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_resources_are_released_on_the_embedded_server() {
    let cluster = Cluster::start().await;
    scenario(&cluster).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_resources_are_released_on_a_real_control_plane() {
    let control_plane = tokio::task::spawn_blocking(|| {
        kro_test_support::real_control_plane_or_skip("resource lifecycles")
    })
    .await
    .expect("the start task");
    let Some(control_plane) = control_plane else {
        return;
    };
    let cluster = Cluster::start_real(control_plane).await;
    scenario(&cluster).await;
    cluster.stop().await;
}
