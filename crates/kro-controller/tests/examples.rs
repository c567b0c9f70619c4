//! Every example under `examples/` becomes ACTIVE under the controllers, on the embedded API
//! server with its simulated cluster (Deployments roll out, StatefulSets and Jobs run), and
//! goes away completely when deleted.

mod common;

use std::time::Instant;

use common::{Cluster, Target, cluster_at};

fn instance_of(example: &str) -> (String, String, String, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example)
        .join("instance.yaml");
    let text = std::fs::read_to_string(path).expect("the instance");
    let document = kro_graph::parse_yaml_documents(&text).expect("YAML")[0]
        .value
        .clone();
    let text = |pointer: &str| {
        document
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (
        text("/apiVersion"),
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

fn rgd_name(example: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example)
        .join("rgd.yaml");
    let text = std::fs::read_to_string(path).expect("the RGD");
    kro_graph::parse_yaml_documents(&text).expect("YAML")[0].value["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_becomes_active_and_is_deleted_completely() {
    let cluster = Cluster::start().await;
    for example in [
        "webapp",
        "workers",
        "data-node",
        "stack",
        "scalable-web",
        "site-set",
    ] {
        let started = Instant::now();
        cluster.apply_example(example, "rgd.yaml").await;
        let rgd = rgd_name(example);
        cluster
            .wait_state(
                cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", &rgd),
                "Active",
            )
            .await;
        cluster.apply_example(example, "instance.yaml").await;
        let (api_version, kind, namespace, name) = instance_of(example);
        let namespace = (!namespace.is_empty())
            .then_some(namespace.as_str())
            .or(Some("default"));
        let target = Target {
            api_version: &api_version,
            kind: &kind,
            namespace,
            name: &name,
        };
        let instance = cluster.wait_state(target, "ACTIVE").await;
        eprintln!("{example}: ACTIVE after {:?}", started.elapsed());
        let uid = instance["metadata"]["uid"]
            .as_str()
            .expect("a uid")
            .to_owned();
        let members = cluster
            .names_labelled("v1", "ConfigMap", "kro.run/instance-id", &uid)
            .await;
        cluster.delete(target).await;
        cluster.wait_gone(target).await;
        let left = cluster
            .names_labelled("v1", "ConfigMap", "kro.run/instance-id", &uid)
            .await;
        assert!(left.is_empty(), "{example}: {left:?} left of {members:?}");
    }
    cluster.stop().await;
}
