//! kube-rs against the embedded server: a watcher sees every change of an object in order,
//! and recovers by re-listing when its watch is expired (410) and the change log compacted.

mod common;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kro_apiserver::Simulators;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

use common::serve;

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "data": {"value": value},
    }))
    .expect("a ConfigMap")
}

async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) {
    let patch = serde_json::json!({"data": {"value": value}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("merge patch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_follows_changes_across_a_forced_410() {
    let (server, client) = serve(Simulators::none()).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let watched = api.clone();
    let watch = tokio::spawn(async move {
        let stream = watcher(watched, watcher::Config::default()).default_backoff();
        futures_util::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            if events.send(event).is_err() {
                return;
            }
        }
    });

    // Observed (name, value, resourceVersion) in arrival order, and how many lists began.
    let mut seen: Vec<(String, String, u64)> = Vec::new();
    let mut lists = 0;
    let mut wait_for = async |seen: &mut Vec<(String, String, u64)>,
                              lists: &mut usize,
                              name: &str,
                              value: &str| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !seen.iter().any(|(n, v, _)| n == name && v == value) {
            let event = tokio::time::timeout_at(deadline, received.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("{name}={value} was not seen within 20 s; seen {seen:?}")
                })
                .expect("the watcher runs");
            match event {
                Ok(watcher::Event::Init) => *lists += 1,
                Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    let value = object
                        .data
                        .as_ref()
                        .and_then(|data| data.get("value").cloned())
                        .unwrap_or_default();
                    let version = object
                        .metadata
                        .resource_version
                        .as_deref()
                        .and_then(|version| version.parse().ok())
                        .expect("every event carries a resourceVersion");
                    seen.push((name, value, version));
                }
                Ok(_) => {}
                // The 410 reaches the stream as an error; the watcher then lists again.
                Err(error) if error.to_string().ends_with(": Expired") => {}
                Err(error) => panic!("the watcher failed: {error}"),
            }
        }
    };

    api.create(&PostParams::default(), &config_map("a", "1"))
        .await
        .expect("create");
    wait_for(&mut seen, &mut lists, "a", "1").await;
    for value in ["2", "3"] {
        set_value(&api, "a", value).await;
    }
    wait_for(&mut seen, &mut lists, "a", "3").await;
    assert_eq!(lists, 1, "one initial list");

    // Expire the watch and drop the history it would resume from: the watcher must list
    // again and carry on.
    server.compact();
    server.expire_watches();
    set_value(&api, "a", "4").await;
    api.create(&PostParams::default(), &config_map("b", "1"))
        .await
        .expect("create b");
    wait_for(&mut seen, &mut lists, "a", "4").await;
    wait_for(&mut seen, &mut lists, "b", "1").await;
    assert!(
        lists >= 2,
        "the watcher listed again after the 410: {lists} lists"
    );

    // Every change of `a` before the 410 arrived, in order; versions never go back.
    let values: Vec<&str> = seen
        .iter()
        .filter(|(name, _, _)| name == "a")
        .map(|(_, value, _)| value.as_str())
        .collect();
    assert!(values.starts_with(&["1", "2", "3"]), "{values:?}");
    let versions: Vec<u64> = seen
        .iter()
        .filter(|(name, _, _)| name == "a")
        .map(|(_, _, version)| *version)
        .collect();
    assert!(
        versions.windows(2).all(|pair| pair[0] <= pair[1]),
        "{versions:?}"
    );
    watch.abort();
    server.stop();
}

/// A reflector's store on a custom resource stays in step with the server across a forced
/// 410: the changes made while the watch was expired show up, and a deletion made then too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_on_a_custom_resource_recovers_from_a_forced_410() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, DeleteParams, DynamicObject};
    use kube::runtime::reflector;

    let (server, client) = serve(Simulators::none()).await;
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    }))
    .expect("CRD");
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");
    let resource = ApiResource {
        group: "example.com".to_owned(),
        version: "v1".to_owned(),
        api_version: "example.com/v1".to_owned(),
        kind: "Widget".to_owned(),
        plural: "widgets".to_owned(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let widget = |name: &str, size: i64| -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": size}}))
        .expect("Widget")
    };
    let size = |object: &DynamicObject| object.data["spec"]["size"].as_i64();

    let writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let reader = writer.as_reader();
    let watched = api.clone();
    let reflect = tokio::spawn(async move {
        let stream = reflector::reflector(
            writer,
            watcher(watched, watcher::Config::default()).default_backoff(),
        )
        .applied_objects();
        futures_util::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    let state = |reader: &reflector::Store<DynamicObject>| -> Vec<(String, Option<i64>)> {
        let mut objects: Vec<(String, Option<i64>)> = reader
            .state()
            .iter()
            .map(|object| {
                (
                    object.metadata.name.clone().unwrap_or_default(),
                    size(object),
                )
            })
            .collect();
        objects.sort();
        objects
    };
    let converge = async |reader: &reflector::Store<DynamicObject>,
                          expected: Vec<(String, Option<i64>)>| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while state(reader) != expected {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the reflector holds {:?}, expected {expected:?}",
                state(reader)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };

    for name in ["a", "b"] {
        api.create(&PostParams::default(), &widget(name, 1))
            .await
            .expect("created");
    }
    converge(&reader, vec![("a".into(), Some(1)), ("b".into(), Some(1))]).await;

    server.compact();
    server.expire_watches();
    let patch = serde_json::json!({"spec": {"size": 2}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patched");
    api.delete("b", &DeleteParams::default())
        .await
        .expect("deleted");
    api.create(&PostParams::default(), &widget("c", 3))
        .await
        .expect("created");
    converge(&reader, vec![("a".into(), Some(2)), ("c".into(), Some(3))]).await;
    reflect.abort();
    server.stop();
}
