//! GraphRevisions as upstream kro v0.9.4 keeps them, on the embedded API server: the first
//! spec issues `<rgd>-r00001` (labels, owner, finalizer, snapshot, verified status), a change
//! that is not to the spec issues nothing, a spec change issues the next number, a spec that
//! does not compile issues nothing and keeps the last revision serving, retention keeps
//! `--rgd-max-graph-revisions`, a revision deleted by hand is released and the numbering goes
//! on past it, and deleting the RGD takes its revisions with it.

mod common;

use std::collections::BTreeMap;

use common::{Cluster, cluster_at};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

/// The RGD's GraphRevisions by name, as JSON.
async fn revisions(cluster: &Cluster) -> BTreeMap<String, Value> {
    cluster
        .graph_revisions()
        .list(&ListParams::default())
        .await
        .expect("GraphRevisions are served")
        .items
        .into_iter()
        .map(|revision| {
            let value = serde_json::to_value(&revision).expect("JSON");
            (revision.metadata.name.unwrap_or_default(), value)
        })
        .collect()
}

/// Waits until the revisions are exactly `names`.
async fn wait_revisions(cluster: &Cluster, names: &[&str]) -> BTreeMap<String, Value> {
    let started = std::time::Instant::now();
    loop {
        let found = revisions(cluster).await;
        if found.keys().map(String::as_str).eq(names.iter().copied()) {
            return found;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "GraphRevisions {:?}, expected {names:?}",
            found.keys().collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn rgd(text: &str) -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "notes"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Note", "spec": {"text": format!("string | default=\"{text}\"")}},
            "resources": [{"id": "note", "template": {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}"},
                "data": {"text": "${schema.spec.text}"},
            }}],
        },
    })
}

fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// Waits until the RGD reports revision `revision` resolved and is Active.
async fn wait_resolved(cluster: &Cluster, revision: i64) -> Value {
    let message = format!("revision {revision} compiled and active");
    cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "notes"),
            &message,
            |object| {
                object.is_some_and(|object| {
                    object["status"]["state"] == "Active"
                        && condition(object, "GraphRevisionsResolved")["message"]
                            == message.as_str()
                        && object["status"]["lastIssuedRevision"] == revision
                })
            },
        )
        .await
        .expect("the RGD")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_are_issued_verified_retained_and_released_as_upstream() {
    let cluster = Cluster::start_with(kro_controller::Settings {
        max_graph_revisions: 2,
        ..kro_controller::Settings::default()
    })
    .await;
    cluster.apply(&rgd("one")).await;
    let first = wait_resolved(&cluster, 1).await;
    let found = wait_revisions(&cluster, &["notes-r00001"]).await;
    let revision = &found["notes-r00001"];
    assert_eq!(revision["spec"]["revision"], 1);
    assert_eq!(revision["spec"]["snapshot"]["name"], "notes");
    assert_eq!(revision["spec"]["snapshot"]["spec"], first["spec"]);
    assert_eq!(
        revision["spec"]["snapshot"]["generation"],
        first["metadata"]["generation"]
    );
    let labels = &revision["metadata"]["labels"];
    assert_eq!(labels["kro.run/resource-graph-definition-name"], "notes");
    assert_eq!(labels["kro.run/owned"], "true");
    assert_eq!(
        labels["kro.run/graph-revision-hash"],
        kro_graph::spec_hash(&first["spec"]).as_str()
    );
    assert_eq!(
        revision["metadata"]["finalizers"],
        json!(["kro.run/finalizer"])
    );
    let owner = &revision["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            owner["kind"].as_str(),
            owner["uid"].as_str(),
            owner["controller"].as_bool()
        ),
        (
            Some("ResourceGraphDefinition"),
            first["metadata"]["uid"].as_str(),
            Some(true)
        )
    );
    assert_eq!(condition(revision, "GraphVerified")["reason"], "Verified");
    assert_eq!(condition(revision, "Ready")["status"], "True");
    assert_eq!(revision["status"]["topologicalOrder"], json!(["note"]));

    // A change outside the spec issues nothing.
    cluster
        .merge(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "notes"),
            json!({"metadata": {"annotations": {"team": "a"}}}),
        )
        .await;
    // A spec change issues the next number.
    cluster.apply(&rgd("two")).await;
    wait_resolved(&cluster, 2).await;
    wait_revisions(&cluster, &["notes-r00001", "notes-r00002"]).await;

    // A spec that does not compile issues nothing; revision 2 keeps serving.
    let mut broken = rgd("three");
    broken["spec"]["resources"][0]["template"]["data"]["text"] = json!("${schema.spec.nope}");
    cluster.apply(&broken).await;
    let rejected = cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "notes"),
            "rejected",
            |object| {
                object.is_some_and(|object| condition(object, "GraphAccepted")["status"] == "False")
            },
        )
        .await
        .expect("the RGD");
    assert_eq!(
        condition(&rejected, "GraphRevisionsResolved")["message"],
        "revision 2 compiled and active"
    );
    assert_eq!(rejected["status"]["lastIssuedRevision"], 2);
    wait_revisions(&cluster, &["notes-r00001", "notes-r00002"]).await;

    // Retention keeps two: revision 3 deletes revision 1, and its finalizer is released.
    cluster.apply(&rgd("three")).await;
    wait_resolved(&cluster, 3).await;
    wait_revisions(&cluster, &["notes-r00002", "notes-r00003"]).await;
    assert_eq!(
        cluster.metric("rgd_graph_revision_gc_deleted_total"),
        Some(1.0)
    );
    assert_eq!(
        cluster.metric("rgd_graph_revision_issue_total{reason=\"spec_changed\"}"),
        Some(2.0)
    );
    assert_eq!(
        cluster.metric("rgd_graph_revision_issue_total{reason=\"no_revision\"}"),
        Some(1.0)
    );

    // The latest revision deleted by hand: released, and the spec is issued again as revision
    // 4, past the high-water mark.
    cluster
        .graph_revisions()
        .delete("notes-r00003", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_resolved(&cluster, 4).await;
    wait_revisions(&cluster, &["notes-r00002", "notes-r00004"]).await;

    // Deleting the RGD takes its revisions along (owner references, then their finalizers).
    cluster
        .delete(cluster_at(
            "kro.run/v1alpha1",
            "ResourceGraphDefinition",
            "notes",
        ))
        .await;
    wait_revisions(&cluster, &[]).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_rgd_adopts_its_revisions_and_numbers_on() {
    let mut cluster = Cluster::start().await;
    cluster.apply(&rgd("one")).await;
    wait_resolved(&cluster, 1).await;
    wait_revisions(&cluster, &["notes-r00001"]).await;
    // The RGD deleted with its revisions orphaned (as `kubectl delete --cascade=orphan`
    // leaves them: no owner reference), with no controller running, then created again with
    // another spec.
    cluster.stop_controllers().await;
    let orphaned = Patch::Merge(json!({"metadata": {"ownerReferences": []}}));
    cluster
        .graph_revisions()
        .patch("notes-r00001", &PatchParams::default(), &orphaned)
        .await
        .expect("orphaned");
    let rgds: Api<DynamicObject> =
        Api::all_with(cluster.client.clone(), &kro_controller::rgd_resource());
    let released = Patch::Merge(json!({"metadata": {"finalizers": []}}));
    rgds.patch("notes", &PatchParams::default(), &released)
        .await
        .expect("kro's finalizer removed");
    rgds.delete("notes", &DeleteParams::default())
        .await
        .expect("deleted");
    cluster
        .wait_gone(cluster_at(
            "kro.run/v1alpha1",
            "ResourceGraphDefinition",
            "notes",
        ))
        .await;
    cluster.start_controllers().await;
    cluster.apply(&rgd("two")).await;
    let recreated = wait_resolved(&cluster, 2).await;
    let found = wait_revisions(&cluster, &["notes-r00001", "notes-r00002"]).await;
    for revision in found.values() {
        assert_eq!(
            revision["metadata"]["ownerReferences"][0]["uid"], recreated["metadata"]["uid"],
            "{} is owned by the RGD as it is now",
            revision["metadata"]["name"]
        );
    }
    cluster.stop().await;
}
