//! `kro apiserver --data-dir`: a write the server acknowledged survives `kill -9`; the
//! restarted server has every object with its resourceVersion, continues the sequence, keeps
//! its credentials, serves its CRDs again, and kube-rs watchers carry on across the restart.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

mod trials;

use trials::connect;

const OBJECTS: usize = 100;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

fn spawn(data_dir: &Path, port: u16, kubeconfig: &Path) -> Child {
    let _ = std::fs::remove_file(kubeconfig);
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["apiserver", "--port", &port.to_string(), "--data-dir"])
        .arg(data_dir)
        .arg("--kubeconfig-out")
        .arg(kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kro apiserver starts")
}

fn resource_version(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|version| version.parse().ok())
        .expect("a numeric resourceVersion")
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}"#;

/// Collects (name, resourceVersion) of every object a watcher reports, in order.
fn watch<K>(api: Api<K>) -> tokio::sync::mpsc::UnboundedReceiver<(String, u64)>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let (events, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects();
        futures_util::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            // Errors while the server is down are retried by the backoff.
            if let Ok(object) = event {
                let meta = object.meta();
                let name = meta.name.clone().unwrap_or_default();
                if events.send((name, resource_version(meta))).is_err() {
                    return;
                }
            }
        }
    });
    received
}

async fn wait_for(
    received: &mut tokio::sync::mpsc::UnboundedReceiver<(String, u64)>,
    seen: &mut Vec<(String, u64)>,
    name: &str,
    version: u64,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !seen.iter().any(|(n, v)| n == name && *v == version) {
        let next = tokio::time::timeout_at(deadline, received.recv())
            .await
            .unwrap_or_else(|_| panic!("the watcher never saw {name} at {version}: {seen:?}"));
        seen.push(next.expect("the watcher runs"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9_and_watchers_carry_on() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let port = free_port();
    let mut server = spawn(&data_dir, port, &kubeconfig);
    let client = connect(&kubeconfig).await;
    let first_kubeconfig = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_str(WIDGET_CRD).expect("CRD");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let widget_type = ApiResource {
        group: "example.com".to_owned(),
        version: "v1".to_owned(),
        api_version: "example.com/v1".to_owned(),
        kind: "Widget".to_owned(),
        plural: "widgets".to_owned(),
    };
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_type);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut configmap_events = watch(configmaps.clone());
    let mut widget_events = watch(widgets.clone());

    let mut written: BTreeMap<String, u64> = BTreeMap::new();
    for index in 0..OBJECTS {
        let name = format!("cm-{index:03}");
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name}, "data": {"index": index.to_string()}}))
        .expect("ConfigMap");
        let created = configmaps
            .create(&PostParams::default(), &object)
            .await
            .expect("created");
        written.insert(name, resource_version(&created.metadata));
    }
    let widget: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 1}}))
    .expect("Widget");
    let widget = widgets
        .create(&PostParams::default(), &widget)
        .await
        .expect("widget created");
    let mut configmap_seen = Vec::new();
    let last = format!("cm-{:03}", OBJECTS - 1);
    wait_for(
        &mut configmap_events,
        &mut configmap_seen,
        &last,
        written[&last],
    )
    .await;
    let mut widget_seen = Vec::new();
    wait_for(
        &mut widget_events,
        &mut widget_seen,
        "w1",
        resource_version(&widget.metadata),
    )
    .await;

    // kill -9: no chance to flush anything that was not already written.
    server.kill().expect("SIGKILL");
    server.wait().expect("reaped");
    let mut server = spawn(&data_dir, port, &kubeconfig);
    let client = connect(&kubeconfig).await;
    assert_eq!(
        std::fs::read_to_string(&kubeconfig).expect("kubeconfig"),
        first_kubeconfig,
        "the restarted server keeps its address, authority and token"
    );

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let listed = configmaps.list(&Default::default()).await.expect("list");
    let stored: BTreeMap<String, u64> = listed
        .items
        .iter()
        .map(|object| {
            (
                object.metadata.name.clone().unwrap_or_default(),
                resource_version(&object.metadata),
            )
        })
        .filter(|(name, _)| name.starts_with("cm-"))
        .collect();
    assert_eq!(stored, written, "every object, with its resourceVersion");

    let newest = *written.values().max().expect("written");
    let after: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "after-restart"}}))
    .expect("ConfigMap");
    let after = configmaps
        .create(&PostParams::default(), &after)
        .await
        .expect("created after the restart");
    let after_version = resource_version(&after.metadata);
    assert!(
        after_version > newest,
        "the sequence continues: {after_version} after {newest}"
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_type);
    let patch = serde_json::json!({"spec": {"size": 2}});
    let patched = widgets
        .patch("w1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the CRD is served again");

    // The watchers started before the kill report the changes made after the restart, and
    // every watcher saw resourceVersions only grow for each object.
    wait_for(
        &mut configmap_events,
        &mut configmap_seen,
        "after-restart",
        after_version,
    )
    .await;
    wait_for(
        &mut widget_events,
        &mut widget_seen,
        "w1",
        resource_version(&patched.metadata),
    )
    .await;
    for seen in [&configmap_seen, &widget_seen] {
        let mut latest: BTreeMap<&str, u64> = BTreeMap::new();
        for (name, version) in seen {
            let previous = latest.insert(name, *version).unwrap_or(0);
            assert!(
                *version >= previous,
                "{name} went back from {previous} to {version}"
            );
        }
    }
    server.kill().expect("stop");
    let _ = server.wait();
}
