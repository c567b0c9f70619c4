//! The simulated controllers, switched on and off: what a deleted namespace does with the
//! namespace simulator (its content goes, finalizers hold it, then it goes) and without it
//! (it stays Terminating with its content, as under envtest).

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kro_apiserver::Simulators;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

use common::serve;

async fn populate(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the namespace");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), name);
    for (map, finalizers) in [("plain", vec![]), ("held", vec!["example.com/hold"])] {
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": map, "finalizers": finalizers},
            "data": {"k": "v"},
        }))
        .expect("a ConfigMap");
        config_maps
            .create(&PostParams::default(), &object)
            .await
            .expect("create a ConfigMap");
    }
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the namespace");
}

/// Polls until `check` holds, for at most 10 s.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 10 s");
}

fn condition(namespace: &Namespace, kind: &str) -> Option<(String, String, String)> {
    namespace
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == kind)
        .map(|condition| {
            (
                condition.status.clone(),
                condition.reason.clone().unwrap_or_default(),
                condition.message.clone().unwrap_or_default(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_namespace_empties_waits_for_finalizers_then_goes() {
    let (_server, client) = serve(Simulators::all()).await;
    populate(&client, "team").await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    eventually("the content without finalizers goes", || async {
        config_maps.get_opt("plain").await.expect("get").is_none()
    })
    .await;
    eventually("the namespace reports the finalizer that holds it", || async {
        let namespace = namespaces.get("team").await.expect("still there");
        condition(&namespace, "NamespaceFinalizersRemaining")
            == Some((
                "True".to_owned(),
                "SomeFinalizersRemain".to_owned(),
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances".to_owned(),
            ))
            && condition(&namespace, "NamespaceContentRemaining")
                == Some((
                    "True".to_owned(),
                    "SomeResourcesRemain".to_owned(),
                    "Some resources are remaining: configmaps. has 1 resource instances"
                        .to_owned(),
                ))
    })
    .await;
    let held = config_maps
        .get("held")
        .await
        .expect("held by its finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    config_maps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the finalizer");
    eventually("the namespace goes", || async {
        namespaces.get_opt("team").await.expect("get").is_none()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_simulators_a_deleted_namespace_stays_terminating() {
    let (_server, client) = serve(Simulators::none()).await;
    populate(&client, "team").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces.get("team").await.expect("still there");
    assert_eq!(
        namespace.status.and_then(|status| status.phase).as_deref(),
        Some("Terminating")
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    assert!(config_maps.get_opt("plain").await.expect("get").is_some());
}
