//! The CRDs kro generates are watched: one edited behind kro's back is written back to what
//! its RGD generates, and one deleted is created again while its RGD exists; on the embedded
//! server and on a real kube-apiserver + etcd.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster_at};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

const RGD_API: &str = "kro.run/v1alpha1";
const RGD_KIND: &str = "ResourceGraphDefinition";
const CRD_API: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";
const CRD: &str = "guardians.kro.run";

fn crd_api(cluster: &Cluster) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "apiextensions.k8s.io".to_owned(),
        version: "v1".to_owned(),
        api_version: CRD_API.to_owned(),
        kind: CRD_KIND.to_owned(),
        plural: "customresourcedefinitions".to_owned(),
    };
    Api::all_with(cluster.client.clone(), &resource)
}

fn spec_fields(crd: &Value) -> Vec<String> {
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .as_object()
        .map(|fields| fields.keys().cloned().collect())
        .unwrap_or_default()
}

/// Waits until the CRD satisfies `check`; how long it took.
async fn restored(cluster: &Cluster, what: &str, check: impl Fn(&Value) -> bool) -> Duration {
    let started = Instant::now();
    cluster
        .wait_for(cluster_at(CRD_API, CRD_KIND, CRD), what, |crd| {
            crd.is_some_and(&check)
        })
        .await;
    started.elapsed()
}

async fn an_edited_or_deleted_crd_is_restored(cluster: &Cluster) {
    cluster
        .apply(&json!({
            "apiVersion": RGD_API, "kind": RGD_KIND,
            "metadata": {"name": "guardian"},
            "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Guardian",
                "spec": {"name": "string", "size": "integer | default=3"}}},
        }))
        .await;
    cluster
        .wait_state(cluster_at(RGD_API, RGD_KIND, "guardian"), "Active")
        .await;
    let crds = crd_api(cluster);
    let before = cluster
        .get(cluster_at(CRD_API, CRD_KIND, CRD))
        .await
        .expect("the CRD");
    assert_eq!(spec_fields(&before), ["name", "size"]);

    // A field removed by hand comes back.
    let remove = json!([{"op": "remove",
        "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size"}]);
    crds.patch(
        CRD,
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(remove).expect("a JSON patch")),
    )
    .await
    .expect("the CRD is edited");
    let took = restored(cluster, "given its field back", |crd| {
        spec_fields(crd) == ["name", "size"]
    })
    .await;
    eprintln!("an edited CRD was restored in {took:?}");

    // A deleted CRD is created again.
    crds.delete(CRD, &DeleteParams::default())
        .await
        .expect("the CRD is deleted");
    let uid = before["metadata"]["uid"].clone();
    let took = restored(cluster, "created again", |crd| {
        crd["metadata"]["uid"] != uid
            && crd["metadata"]["deletionTimestamp"].is_null()
            && spec_fields(crd) == ["name", "size"]
    })
    .await;
    eprintln!("a deleted CRD was created again in {took:?}");
    cluster
        .wait_state(cluster_at(RGD_API, RGD_KIND, "guardian"), "Active")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_or_deleted_crd_is_restored_on_the_embedded_server() {
    let cluster = Cluster::start().await;
    an_edited_or_deleted_crd_is_restored(&cluster).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_or_deleted_crd_is_restored_on_a_real_control_plane() {
    let control_plane = tokio::task::spawn_blocking(|| {
        kro_test_support::real_control_plane_or_skip("generated CRD watch")
    })
    .await
    .expect("the start task");
    let Some(control_plane) = control_plane else {
        return;
    };
    let cluster = Cluster::start_real(control_plane).await;
    an_edited_or_deleted_crd_is_restored(&cluster).await;
    cluster.stop().await;
}
