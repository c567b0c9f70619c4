//! Upstream kro's integration scenarios (its `test/integration/suites/core`), restated against
//! the embedded API server: readiness gating (per item and per collection) with status
//! projection and author conditions, externalRefs, includeWhen with contagion and flipping,
//! collections, suspension, terminating children, ordered deletion, contention, and RGD
//! deletion with live instances.

mod common;

use std::time::Duration;

use common::{Cluster, at, cluster_at};
use serde_json::{Value, json};

const RGD_API: &str = "kro.run/v1alpha1";
const RGD_KIND: &str = "ResourceGraphDefinition";

async fn rgd_active(cluster: &Cluster, yaml: &str, name: &str) {
    cluster.apply_yaml(yaml).await;
    cluster
        .wait_for(cluster_at(RGD_API, RGD_KIND, name), "Active", |rgd| {
            let accepted = rgd.map(|rgd| condition(rgd, "GraphAccepted"));
            if let Some(accepted) = accepted.filter(|accepted| accepted["status"] == "False") {
                panic!("{name} is not accepted: {}", accepted["message"]);
            }
            rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active")
        })
        .await;
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data})
}

fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|condition| condition["type"] == kind)
        })
        .unwrap_or(&Value::Null)
}

const EXTERNAL: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: consumer}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Consumer
    spec:
      team: string | default="blue"
    status:
      copied: ${copy.data.value}
      teamConfigs: ${string(size(team))}
  resources:
    - id: settings
      externalRef:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: platform-settings}
    - id: team
      externalRef:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          selector:
            matchLabels: {team: "${schema.spec.team}"}
    - id: copy
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-copy'}"}
        data:
          value: ${settings.data.value}
"#;

async fn external_refs_wait_for_their_object_then_follow_its_changes(cluster: &Cluster) {
    rgd_active(cluster, EXTERNAL, "consumer").await;
    let instance = at(RGD_API, "Consumer", "reader");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Consumer", "metadata": {"name": "reader", "namespace": "default"}, "spec": {}}))
        .await;
    let waiting = cluster
        .wait_for(instance, "waiting for its externalRef", |object| {
            object.is_some_and(|object| {
                condition(object, "ResourcesReady")["message"]
                    .as_str()
                    .is_some_and(|message| message.contains("platform-settings does not exist"))
            })
        })
        .await
        .expect("the instance");
    assert_eq!(waiting["status"]["state"], "IN_PROGRESS", "{waiting}");
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "reader-copy"))
            .await
            .is_none(),
        "the dependent waits for the externalRef"
    );

    // The externalRef appears: the instance proceeds without any change of its own.
    let mut labelled = config_map("blue-1", json!({}));
    labelled["metadata"]["labels"] = json!({"team": "blue"});
    cluster.apply(&labelled).await;
    cluster
        .apply(&config_map("platform-settings", json!({"value": "one"})))
        .await;
    let active = cluster.wait_state(instance, "ACTIVE").await;
    assert_eq!(active["status"]["copied"], "one");
    assert_eq!(active["status"]["teamConfigs"], "1");

    // Its changes are followed: the watch on ConfigMaps wakes the instance.
    cluster
        .apply(&config_map("platform-settings", json!({"value": "two"})))
        .await;
    cluster
        .wait_for(at("v1", "ConfigMap", "reader-copy"), "copied", |object| {
            object.is_some_and(|object| object["data"]["value"] == "two")
        })
        .await;
    let mut second = config_map("blue-2", json!({}));
    second["metadata"]["labels"] = json!({"team": "blue"});
    cluster.apply(&second).await;
    cluster
        .wait_for(instance, "seeing two team configs", |object| {
            object.is_some_and(|object| object["status"]["teamConfigs"] == "2")
        })
        .await;

    // Deleting the instance leaves the externalRefs alone.
    cluster.delete(instance).await;
    cluster.wait_gone(instance).await;
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "reader-copy"))
            .await
            .is_none()
    );
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "platform-settings"))
            .await
            .is_some(),
        "an externalRef is never deleted"
    );
}

const INCLUDE_WHEN: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: toggles}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Toggle
    spec:
      enabled: boolean | default=false
  resources:
    - id: base
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-base'}"}
        data: {a: b}
    - id: optional
      includeWhen:
        - ${schema.spec.enabled}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-optional'}"}
        data: {from: "${base.metadata.name}"}
    - id: dependent
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-dependent'}"}
        data: {from: "${optional.metadata.name}"}
"#;

const GIZMO_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.scoped.example.com}
spec:
  group: scoped.example.com
  scope: Cluster
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                colour: {type: string}
"#;

const GIZMO_READER: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: gizmo-reader}
spec:
  schema:
    apiVersion: v1alpha1
    kind: GizmoReader
    spec: {}
    status:
      colour: ${gizmo.spec.colour}
  resources:
    - id: gizmo
      externalRef:
        apiVersion: scoped.example.com/v1
        kind: Gizmo
        metadata: {name: g1}
    - id: copy
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-gizmo'}"}
        data:
          colour: ${gizmo.spec.colour}
"#;

/// An externalRef to a cluster-scoped custom kind (whose scope no built-in schema knows) is
/// read by its name alone, not looked for in the instance's namespace.
async fn an_external_ref_reads_a_cluster_scoped_custom_kind(cluster: &Cluster) {
    cluster.apply_yaml(GIZMO_CRD).await;
    let gizmo = json!({"apiVersion": "scoped.example.com/v1", "kind": "Gizmo",
        "metadata": {"name": "g1"}, "spec": {"colour": "teal"}});
    let mut attempts = 0;
    loop {
        let kinds = kro_controller::kinds::Kinds::new(cluster.client.clone());
        if kinds
            .resolve("scoped.example.com", "v1", "Gizmo")
            .await
            .is_ok()
        {
            break;
        }
        attempts += 1;
        assert!(attempts < 100, "the Gizmo kind is never served");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    cluster.apply(&gizmo).await;
    rgd_active(cluster, GIZMO_READER, "gizmo-reader").await;
    let instance = at(RGD_API, "GizmoReader", "reader");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "GizmoReader", "metadata": {"name": "reader", "namespace": "default"}, "spec": {}}))
        .await;
    let active = cluster.wait_state(instance, "ACTIVE").await;
    assert_eq!(active["status"]["colour"], "teal", "{active}");
    let copy = cluster
        .get(at("v1", "ConfigMap", "reader-gizmo"))
        .await
        .expect("the copy");
    assert_eq!(copy["data"]["colour"], "teal");
    cluster.delete(instance).await;
    cluster.wait_gone(instance).await;
}

async fn include_when_skips_contagiously_and_flipping_it_creates_and_prunes(cluster: &Cluster) {
    rgd_active(cluster, INCLUDE_WHEN, "toggles").await;
    let toggle = |enabled: bool| json!({"apiVersion": RGD_API, "kind": "Toggle", "metadata": {"name": "t", "namespace": "default"}, "spec": {"enabled": enabled}});
    let instance = at(RGD_API, "Toggle", "t");
    cluster.apply(&toggle(false)).await;
    cluster.wait_state(instance, "ACTIVE").await;
    let names = || cluster.names_labelled("v1", "ConfigMap", "kro.run/instance-name", "t");
    assert_eq!(names().await, ["t-base"], "skipping is contagious");

    cluster.apply(&toggle(true)).await;
    cluster
        .wait_for(at("v1", "ConfigMap", "t-dependent"), "created", |object| {
            object.is_some()
        })
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    assert_eq!(names().await, ["t-base", "t-dependent", "t-optional"]);

    cluster.apply(&toggle(false)).await;
    cluster
        .wait_gone(at("v1", "ConfigMap", "t-dependent"))
        .await;
    cluster.wait_gone(at("v1", "ConfigMap", "t-optional")).await;
    assert_eq!(names().await, ["t-base"]);
}

const COLLECTION: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: teams}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Teams
    spec:
      names: "[]string"
    status:
      members: ${string(size(members))}
  resources:
    - id: members
      forEach: ${schema.spec.names}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${'member-' + each.item}"}
        data: {name: "${each.item}"}
    - id: badges
      forEach: ${members}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${'badge-' + each.item.data.name}"}
        data: {for: "${each.item.metadata.name}"}
"#;

async fn collections_grow_shrink_chain_empty_and_repair_drift(cluster: &Cluster) {
    rgd_active(cluster, COLLECTION, "teams").await;
    let teams = |names: &[&str]| json!({"apiVersion": RGD_API, "kind": "Teams", "metadata": {"name": "crew", "namespace": "default"}, "spec": {"names": names}});
    let instance = at(RGD_API, "Teams", "crew");
    let names = || cluster.names_labelled("v1", "ConfigMap", "kro.run/instance-name", "crew");
    let settle = |expected: Vec<&'static str>| async move {
        let expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        for _ in 0..600 {
            if names().await == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(names().await, expected);
    };

    cluster.apply(&teams(&["ann", "bob"])).await;
    cluster.wait_state(instance, "ACTIVE").await;
    settle(vec!["badge-ann", "badge-bob", "member-ann", "member-bob"]).await;
    let badge = cluster
        .get(at("v1", "ConfigMap", "badge-bob"))
        .await
        .expect("a badge");
    assert_eq!(badge["data"]["for"], "member-bob", "chained collection");
    assert_eq!(badge["metadata"]["labels"]["kro.run/collection-size"], "2");

    // Grow.
    cluster.apply(&teams(&["ann", "bob", "cy"])).await;
    settle(vec![
        "badge-ann",
        "badge-bob",
        "badge-cy",
        "member-ann",
        "member-bob",
        "member-cy",
    ])
    .await;

    // Drift: a changed item is restored, a deleted one recreated.
    cluster
        .merge(
            at("v1", "ConfigMap", "member-ann"),
            json!({"data": {"name": "mallory"}}),
        )
        .await;
    cluster
        .wait_for(at("v1", "ConfigMap", "member-ann"), "restored", |object| {
            object.is_some_and(|object| object["data"]["name"] == "ann")
        })
        .await;
    cluster.delete(at("v1", "ConfigMap", "badge-cy")).await;
    cluster
        .wait_for(at("v1", "ConfigMap", "badge-cy"), "recreated", |object| {
            object.is_some()
        })
        .await;

    // Shrink: the items that left are pruned.
    cluster.apply(&teams(&["bob"])).await;
    settle(vec!["badge-bob", "member-bob"]).await;
    cluster
        .wait_for(instance, "ACTIVE with one member", |object| {
            object.is_some_and(|object| {
                object["status"]["state"] == "ACTIVE" && object["status"]["members"] == "1"
            })
        })
        .await;

    // Empty: every item goes, and the instance is still ACTIVE.
    cluster.apply(&teams(&[])).await;
    settle(vec![]).await;
    cluster
        .wait_for(instance, "ACTIVE and empty", |object| {
            object.is_some_and(|object| {
                object["status"]["state"] == "ACTIVE" && object["status"]["members"] == "0"
            })
        })
        .await;
}

const CHAIN: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: chains}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
    spec:
      value: string | default="one"
  resources:
    - id: first
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-first'}"}
        data: {value: "${schema.spec.value}"}
    - id: second
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-second'}"}
        data: {value: "${first.data.value}"}
"#;

async fn suspension_stops_changes_until_lifted(cluster: &Cluster) {
    rgd_active(cluster, CHAIN, "chains").await;
    let instance = at(RGD_API, "Chain", "c");
    let chain = |value: &str, annotations: Value| json!({"apiVersion": RGD_API, "kind": "Chain", "metadata": {"name": "c", "namespace": "default", "annotations": annotations}, "spec": {"value": value}});
    cluster.apply(&chain("one", json!({}))).await;
    cluster.wait_state(instance, "ACTIVE").await;

    cluster
        .apply(&chain("two", json!({"kro.run/reconcile": "suspended"})))
        .await;
    let suspended = cluster
        .wait_for(instance, "suspended", |object| {
            object.is_some_and(|object| {
                condition(object, "ResourcesReady")["reason"] == "ReconciliationSuspended"
            })
        })
        .await
        .expect("the instance");
    assert_ne!(suspended["status"]["state"], "ACTIVE");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = cluster
        .get(at("v1", "ConfigMap", "c-first"))
        .await
        .expect("first");
    assert_eq!(
        first["data"]["value"], "one",
        "nothing applied while suspended"
    );

    cluster.apply(&chain("two", json!({}))).await;
    cluster
        .wait_for(at("v1", "ConfigMap", "c-second"), "updated", |object| {
            object.is_some_and(|object| object["data"]["value"] == "two")
        })
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
}

async fn a_terminating_child_blocks_its_dependents_until_it_is_gone(cluster: &Cluster) {
    rgd_active(cluster, CHAIN, "chains").await;
    let instance = at(RGD_API, "Chain", "c");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Chain", "metadata": {"name": "c", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    let first = at("v1", "ConfigMap", "c-first");
    cluster
        .merge(
            first,
            json!({"metadata": {"finalizers": ["example.com/hold"]}}),
        )
        .await;
    cluster.delete(first).await;
    let blocked = cluster
        .wait_for(instance, "blocked by a terminating child", |object| {
            object.is_some_and(|object| {
                condition(object, "ResourcesReady")["reason"] == "ResourceDeleting"
            })
        })
        .await
        .expect("the instance");
    assert_eq!(blocked["status"]["state"], "IN_PROGRESS", "{blocked}");

    // Once it is gone it is created again and the instance recovers.
    cluster
        .merge(first, json!({"metadata": {"finalizers": null}}))
        .await;
    cluster
        .wait_for(first, "recreated", |object| {
            object.is_some_and(|object| object["metadata"]["deletionTimestamp"].is_null())
        })
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
}

const HELD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: held}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Held
    spec: {}
  resources:
    - id: base
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-base'}"}
        data: {a: b}
    - id: top
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: "${schema.metadata.name + '-top'}"
          finalizers: [example.com/hold]
        data: {from: "${base.metadata.name}"}
"#;

async fn deletion_goes_in_reverse_order_and_waits_for_each_wave(cluster: &Cluster) {
    rgd_active(cluster, HELD, "held").await;
    let instance = at(RGD_API, "Held", "h");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Held", "metadata": {"name": "h", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    cluster.delete(instance).await;
    let top = at("v1", "ConfigMap", "h-top");
    cluster
        .wait_for(top, "terminating", |object| {
            object.is_some_and(|object| !object["metadata"]["deletionTimestamp"].is_null())
        })
        .await;
    let deleting = cluster
        .wait_for(instance, "DELETING", |object| {
            object.is_some_and(|object| object["status"]["state"] == "DELETING")
        })
        .await
        .expect("the instance");
    assert_eq!(
        condition(&deleting, "ResourcesReady")["reason"],
        "UnderDeletion"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = cluster
        .get(at("v1", "ConfigMap", "h-base"))
        .await
        .expect("the base waits for the top to be gone");
    assert!(base["metadata"]["deletionTimestamp"].is_null(), "{base}");

    // The top goes; then the base; then the instance.
    cluster
        .merge(top, json!({"metadata": {"finalizers": null}}))
        .await;
    cluster.wait_gone(at("v1", "ConfigMap", "h-base")).await;
    cluster.wait_gone(instance).await;
}

const SHARED: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: sharers}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Sharer
    spec: {}
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: shared}
        data: {owner: "${schema.metadata.name}"}
"#;

async fn two_instances_cannot_take_one_object_from_each_other(cluster: &Cluster) {
    rgd_active(cluster, SHARED, "sharers").await;
    let sharer = |name: &str| json!({"apiVersion": RGD_API, "kind": "Sharer", "metadata": {"name": name, "namespace": "default"}, "spec": {}});
    cluster.apply(&sharer("first")).await;
    cluster
        .wait_state(at(RGD_API, "Sharer", "first"), "ACTIVE")
        .await;
    cluster.apply(&sharer("second")).await;
    let second = cluster
        .wait_state(at(RGD_API, "Sharer", "second"), "ERROR")
        .await;
    let message = condition(&second, "ResourcesReady")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("belongs to another instance"), "{message}");
    let shared = cluster
        .get(at("v1", "ConfigMap", "shared"))
        .await
        .expect("the object");
    assert_eq!(shared["data"]["owner"], "first");
    assert_eq!(
        shared["metadata"]["labels"]["kro.run/instance-name"],
        "first"
    );
}

async fn an_rgd_with_instances_waits_for_them_before_it_goes(cluster: &Cluster) {
    rgd_active(cluster, CHAIN, "chains").await;
    let rgd = cluster_at(RGD_API, RGD_KIND, "chains");
    let instance = at(RGD_API, "Chain", "c");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Chain", "metadata": {"name": "c", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    cluster.delete(rgd).await;
    let waiting = cluster
        .wait_for(rgd, "waiting for its instance", |object| {
            object
                .is_some_and(|object| condition(object, "ControllerReady")["reason"] == "Deleting")
        })
        .await
        .expect("the RGD");
    assert!(
        condition(&waiting, "ControllerReady")["message"]
            .as_str()
            .is_some_and(|message| message.contains("1 instance(s) of Chain")),
        "{waiting}"
    );
    // The instance is still managed: deleting it deletes its resources and lets it go.
    cluster.delete(instance).await;
    cluster.wait_gone(instance).await;
    cluster.wait_gone(at("v1", "ConfigMap", "c-first")).await;
    cluster.wait_gone(rgd).await;
}

async fn an_invalid_rgd_is_not_accepted_and_says_why(cluster: &Cluster) {
    let rgd = cluster_at(RGD_API, RGD_KIND, "broken");
    cluster
        .apply_yaml(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: broken}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Broken
    spec: {name: string}
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: x}
        data: {a: "${schema.spec.missing}"}
"#,
        )
        .await;
    let object = cluster.wait_state(rgd, "Inactive").await;
    let accepted = condition(&object, "GraphAccepted");
    assert_eq!(accepted["status"], "False", "{object}");
    assert_eq!(accepted["reason"], "InvalidResourceGraph");
    assert!(
        accepted["message"]
            .as_str()
            .is_some_and(|message| message.contains("undefined field 'missing'")),
        "{accepted}"
    );
}

async fn a_breaking_crd_change_is_refused_until_the_rgd_allows_it(cluster: &Cluster) {
    let rgd = cluster_at(RGD_API, RGD_KIND, "evolving");
    let definition = |kind: &str, annotations: Value| {
        json!({
            "apiVersion": RGD_API, "kind": RGD_KIND,
            "metadata": {"name": "evolving", "annotations": annotations},
            "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Evolving", "spec": {"size": kind}}},
        })
    };
    cluster.apply(&definition("string", json!({}))).await;
    cluster.wait_state(rgd, "Active").await;
    cluster.apply(&definition("integer", json!({}))).await;
    let refused = cluster
        .wait_for(rgd, "refused", |object| {
            object.is_some_and(|object| condition(object, "KindReady")["status"] == "False")
        })
        .await
        .expect("the RGD");
    assert_eq!(refused["status"]["state"], "Inactive");
    let message = condition(&refused, "KindReady")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("breaking changes") && message.contains("kro.run/allow-breaking-changes"),
        "{message}"
    );
    let applied = cluster
        .apply(&definition(
            "integer",
            json!({"kro.run/allow-breaking-changes": "true"}),
        ))
        .await;
    assert_eq!(
        applied["metadata"]["annotations"]["kro.run/allow-breaking-changes"],
        "true"
    );
    cluster.wait_state(rgd, "Active").await;
    let crd = cluster
        .get(cluster_at(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "evolvings.kro.run",
        ))
        .await
        .expect("the CRD");
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["type"],
        "integer"
    );
    assert_eq!(
        crd["metadata"]["labels"]["kro.run/resource-graph-definition-name"],
        "evolving"
    );
}

/// An RGD edit that only changes a field's CEL rules (`immutable=true`, `validation=`) reaches
/// the CRD, and the RGD is Active at that generation only once it has.
async fn a_validation_rule_change_reaches_the_crd(cluster: &Cluster) {
    let rgd = cluster_at(RGD_API, RGD_KIND, "guarded");
    let crd_at = cluster_at(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "guardeds.kro.run",
    );
    let definition = |marker: &str| {
        json!({
            "apiVersion": RGD_API, "kind": RGD_KIND,
            "metadata": {"name": "guarded"},
            "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Guarded",
                "spec": {"name": format!("string{marker}")}}},
        })
    };
    let rules = |crd: &Value| {
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["name"]["x-kubernetes-validations"]
            .clone()
    };
    let settled = |generation: i64| {
        move |object: Option<&Value>| {
            object.is_some_and(|object| {
                object["status"]["state"] == "Active"
                    && object["metadata"]["generation"] == generation
                    && condition(object, "KindReady")["observedGeneration"] == generation
            })
        }
    };
    for (generation, marker, expected) in [
        (
            1,
            " | immutable=true",
            json!([{"rule": "self == oldSelf", "message": "field is immutable"}]),
        ),
        (2, "", Value::Null),
        (
            3,
            " | validation=\"self.size() < 10\"",
            json!([{"rule": "self.size() < 10", "message": "validation failed"}]),
        ),
        (
            4,
            " | validation=\"self.size() < 20\"",
            json!([{"rule": "self.size() < 20", "message": "validation failed"}]),
        ),
    ] {
        cluster.apply(&definition(marker)).await;
        cluster
            .wait_for(rgd, "active at the new generation", settled(generation))
            .await
            .expect("the RGD");
        let crd = cluster.get(crd_at).await.expect("the CRD");
        assert_eq!(rules(&crd), expected, "after `string{marker}`");
    }
    // Settled: the CRD is not written again and again.
    let before = cluster.get(crd_at).await.expect("the CRD");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = cluster.get(crd_at).await.expect("the CRD");
    assert_eq!(
        before["metadata"]["resourceVersion"],
        after["metadata"]["resourceVersion"]
    );
}

const GATES: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: gates}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gate
    spec:
      names: "[]string"
    status:
      approved: ${string(size(entries.filter(i, has(i.data.approved))))}
      conditions:
        - "${runtime.newCondition({type: 'Approved', status: runtime.condition(schema, 'ResourcesReady').status, reason: 'Reviewed', message: string(size(entries)) + ' items'})}"
  resources:
    - id: entries
      forEach: ${schema.spec.names}
      readyWhen:
        - ${has(each.data.approved)}
        - ${entries.exists_one(i, has(i.data.lead))}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${'item-' + each.item}"}
        data: {name: "${each.item}"}
    - id: gate
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-gate'}"}
        data: {items: "${string(size(entries))}"}
"#;

async fn readiness_gates_the_next_level_per_item_and_per_collection_with_author_conditions(
    cluster: &Cluster,
) {
    rgd_active(cluster, GATES, "gates").await;
    let instance = at(RGD_API, "Gate", "g");
    let gate = at("v1", "ConfigMap", "g-gate");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Gate", "metadata": {"name": "g", "namespace": "default"}, "spec": {"names": ["a", "b"]}}))
        .await;
    let approved = |count: &'static str| {
        move |object: Option<&Value>| {
            object.is_some_and(|object| object["status"]["approved"] == count)
        }
    };
    let waiting = cluster
        .wait_for(instance, "projecting no approvals", approved("0"))
        .await
        .expect("the instance");
    // Author conditions replace the built-in ones; the built-ins are read through
    // runtime.condition.
    let conditions = waiting["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert_eq!(conditions.len(), 1, "{waiting}");
    assert_eq!(condition(&waiting, "Approved")["status"], "False");
    assert_eq!(condition(&waiting, "Approved")["message"], "2 items");
    assert_eq!(waiting["status"]["state"], "IN_PROGRESS");

    // Per item: every item must be approved.
    let approve = |name: &'static str, data: Value| {
        cluster.merge(at("v1", "ConfigMap", name), json!({"data": data}))
    };
    approve("item-a", json!({"approved": "yes"})).await;
    cluster
        .wait_for(instance, "projecting one approval", approved("1"))
        .await;
    approve("item-b", json!({"approved": "yes"})).await;
    cluster
        .wait_for(instance, "projecting two approvals", approved("2"))
        .await;
    // Per collection: exactly one item must lead; until then the next level waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cluster.get(gate).await.is_none(), "the gate waits");
    let instance_now = cluster.get(instance).await.expect("the instance");
    assert_eq!(instance_now["status"]["state"], "IN_PROGRESS");

    // One leads now, but it is no longer approved: the per-item gate holds.
    approve("item-b", json!({"lead": "true", "approved": null})).await;
    cluster
        .wait_for(instance, "projecting one approval", approved("1"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cluster.get(gate).await.is_none(), "the gate still waits");

    approve("item-b", json!({"approved": "yes"})).await;
    cluster
        .wait_for(gate, "created", |object| object.is_some())
        .await;
    let active = cluster.wait_state(instance, "ACTIVE").await;
    assert_eq!(condition(&active, "Approved")["status"], "True", "{active}");
    assert_eq!(
        cluster.get(gate).await.expect("the gate")["data"]["items"],
        "2"
    );
}

#[allow(clippy::float_cmp)] // Counts, compared exactly.
async fn a_resync_in_steady_state_writes_nothing(cluster: &Cluster) {
    rgd_active(cluster, CHAIN, "chains").await;
    let instance = at(RGD_API, "Chain", "steady");
    cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Chain", "metadata": {"name": "steady", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    // Let the last watch events of the creation arrive and be reconciled.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let written = cluster.controller_writes();
    let reconciles = cluster.metric("rgd_reconcile_total").expect("counted");
    cluster.manager.as_ref().expect("running").resync().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        cluster.metric("rgd_reconcile_total") > Some(reconciles),
        "the RGD was reconciled again"
    );
    assert_eq!(
        cluster.controller_writes(),
        written,
        "writes after a resync in steady state:\n{}",
        cluster.metrics.encode()
    );
}

const SCALABLE: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: scalables}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Scalable
    spec:
      desiredReplicas: integer | scale default=1
    status:
      replicas: integer | scale
      podSelector: ${"app=" + schema.metadata.name} | scaleSelector
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name}"}
        spec:
          replicas: ${schema.spec.desiredReplicas}
          selector:
            matchLabels: {app: "${schema.metadata.name}"}
          template:
            metadata:
              labels: {app: "${schema.metadata.name}"}
            spec:
              containers:
                - {name: web, image: "nginx:1.27"}
"#;

/// Phase 1 of horizontal scaling through the controller: the instance's scale subresource
/// (what `kubectl scale` and an autoscaler use) changes the spec field marked `| scale`, the
/// Deployment templated from it follows, and the status reports the size once Ready with the
/// `| scaleSelector` field as the scale's selector. An `autoscaling/v2` HPA targeting the
/// instance is accepted; on the embedded server its simulator moves the instance within
/// min/max (a real control plane here has no controller-manager to run it).
async fn an_instance_scales_through_its_scale_subresource_and_an_autoscaler(cluster: &Cluster) {
    rgd_active(cluster, SCALABLE, "scalables").await;
    let instance = at(RGD_API, "Scalable", "web");
    let deployment = at("apps/v1", "Deployment", "web");
    let object = cluster
        .apply(&json!({"apiVersion": RGD_API, "kind": "Scalable",
            "metadata": {"name": "web", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    let instances = cluster
        .kind_of(&object)
        .await
        .api(&cluster.client, Some("default"));

    // What `kubectl scale scalable/web --replicas=3` sends.
    let scale = instances
        .patch_scale(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("the instance has a scale subresource");
    assert_eq!(scale.spec.and_then(|spec| spec.replicas), Some(3));
    cluster
        .wait_for(deployment, "scaled to 3", |deployment| {
            deployment.is_some_and(|deployment| deployment["spec"]["replicas"] == 3)
        })
        .await;
    cluster
        .wait_for(instance, "reporting 3 replicas", |instance| {
            instance.is_some_and(|instance| {
                instance["spec"]["desiredReplicas"] == 3 && instance["status"]["replicas"] == 3
            })
        })
        .await;
    let scale = instances.get_scale("web").await.expect("GET scale");
    assert_eq!(scale.spec.as_ref().and_then(|spec| spec.replicas), Some(3));
    let status = scale.status.clone().expect("the scale's status");
    assert_eq!(status.replicas, 3);
    assert_eq!(status.selector.as_deref(), Some("app=web"));
    // What an HPA controller sends: PUT of the Scale it read, with a new size.
    let mut resized = scale;
    if let Some(spec) = resized.spec.as_mut() {
        spec.replicas = Some(2);
    }
    let put = instances
        .replace_scale("web", &kube::api::PostParams::default(), &resized)
        .await
        .expect("PUT scale");
    assert_eq!(put.spec.and_then(|spec| spec.replicas), Some(2));
    cluster
        .wait_for(deployment, "scaled to 2", |deployment| {
            deployment.is_some_and(|deployment| deployment["spec"]["replicas"] == 2)
        })
        .await;

    let autoscaler = cluster
        .apply(&json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "kro.run/v1alpha1", "kind": "Scalable", "name": "web"},
                "minReplicas": 4, "maxReplicas": 6,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70}}}]
            }
        }))
        .await;
    assert_eq!(autoscaler["spec"]["scaleTargetRef"]["kind"], "Scalable");
    if matches!(cluster.backend, common::Backend::Embedded(_)) {
        cluster
            .wait_for(
                deployment,
                "scaled to the autoscaler's minimum",
                |deployment| {
                    deployment.is_some_and(|deployment| deployment["spec"]["replicas"] == 4)
                },
            )
            .await;
        cluster
            .wait_for(instance, "reporting 4 replicas", |instance| {
                instance.is_some_and(|instance| {
                    instance["spec"]["desiredReplicas"] == 4 && instance["status"]["replicas"] == 4
                })
            })
            .await;
        cluster
            .wait_for(
                at("autoscaling/v2", "HorizontalPodAutoscaler", "web"),
                "reporting the instance's size",
                |autoscaler| {
                    autoscaler.is_some_and(|autoscaler| {
                        autoscaler["status"]["currentReplicas"] == 4
                            && autoscaler["status"]["desiredReplicas"] == 4
                    })
                },
            )
            .await;
    }
}

const TENANTS: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: tenants}
spec:
  scaling: {kind: TenantSet, method: replicas}
  schema:
    apiVersion: v1alpha1
    kind: Tenant
    spec:
      plan: string | default="free"
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data: {plan: "${schema.spec.plan}"}
"#;

/// The members of the Set `set`, oldest first (by creation time, then name), with the plan
/// their ConfigMap holds.
async fn set_members(cluster: &Cluster, set: &str) -> Vec<(String, String)> {
    let served = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": "Tenant"}))
        .await;
    let list = served
        .api(&cluster.client, Some("default"))
        .list(&kube::api::ListParams::default().labels(&format!("kro.run/set-name={set}")))
        .await
        .expect("LIST");
    let mut members: Vec<(String, String, String)> = Vec::new();
    for instance in list.items {
        if instance.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = instance.metadata.name.clone().unwrap_or_default();
        let created = instance
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|time| time.0.to_string())
            .unwrap_or_default();
        let owners = instance
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default();
        assert!(
            owners.iter().any(|owner| owner.kind == "TenantSet"
                && owner.name == set
                && owner.controller == Some(true)
                && owner.block_owner_deletion == Some(true)),
            "{name} is not controlled by its Set: {owners:?}"
        );
        assert!(
            name.starts_with(&format!("{set}-")) && name.len() == set.len() + 6,
            "{name}"
        );
        let plan = cluster
            .get(at("v1", "ConfigMap", &name))
            .await
            .map(|config_map| config_map["data"]["plan"].as_str().unwrap_or("").to_owned())
            .unwrap_or_default();
        members.push((created, name, plan));
    }
    members.sort();
    members
        .into_iter()
        .map(|(_, name, plan)| (name, plan))
        .collect()
}

/// Waits until the Set's status reports `replicas` instances, all Ready and updated.
async fn set_settled(cluster: &Cluster, set: &str, replicas: u64) -> Value {
    cluster
        .wait_for(at(RGD_API, "TenantSet", set), "settled", |object| {
            object.is_some_and(|object| {
                let status = &object["status"];
                status["replicas"] == replicas
                    && status["readyReplicas"] == replicas
                    && status["updatedReplicas"] == replicas
                    && status["observedGeneration"] == object["metadata"]["generation"]
                    && condition(object, "Ready")["status"] == "True"
            })
        })
        .await
        .expect("the Set")
}

/// Phase 2 of horizontal scaling: a `<Kind>Set` runs its replicas as instances named
/// `<set>-xxxxx`, owned by it; a template change rolls out to every instance; scaling down
/// deletes the newest; scaling through `/scale` (what `kubectl scale` sends) makes new ones;
/// deleting the Set deletes its instances (the embedded server's garbage collector; a real
/// control plane here has no controller-manager to run one).
async fn a_set_runs_scales_and_updates_its_instances(cluster: &Cluster) {
    rgd_active(cluster, TENANTS, "tenants").await;
    let rgd = cluster
        .get(cluster_at(RGD_API, RGD_KIND, "tenants"))
        .await
        .expect("the RGD");
    let kind_ready = condition(&rgd, "KindReady");
    assert!(
        kind_ready["message"]
            .as_str()
            .is_some_and(|message| message.contains("TenantSet is served")),
        "{kind_ready}"
    );
    let set = |replicas: u64, plan: &str| {
        json!({"apiVersion": RGD_API, "kind": "TenantSet",
            "metadata": {"name": "team", "namespace": "default"},
            "spec": {"replicas": replicas, "rollingUpdate": {"maxConcurrentUpdated": 2},
                "template": {"spec": {"plan": plan}}}})
    };
    cluster.apply(&set(3, "free")).await;
    let status = set_settled(cluster, "team", 3).await;
    assert_eq!(status["status"]["selector"], "kro.run/set-name=team");
    let members = set_members(cluster, "team").await;
    assert_eq!(members.len(), 3, "{members:?}");
    assert!(
        members.iter().all(|(_, plan)| plan == "free"),
        "{members:?}"
    );

    // A template change reaches every instance.
    cluster.apply(&set(3, "pro")).await;
    set_settled(cluster, "team", 3).await;
    let updated = set_members(cluster, "team").await;
    assert_eq!(
        updated.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        members.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        "updated in place"
    );
    assert!(updated.iter().all(|(_, plan)| plan == "pro"), "{updated:?}");

    let reasons = cluster.event_reasons("team").await;
    for reason in ["Scaling", "SuccessfulCreate", "SuccessfulUpdate"] {
        assert!(reasons.iter().any(|seen| seen == reason), "{reasons:?}");
    }
    let reasons = cluster.event_reasons(&members[0].0).await;
    for reason in ["CreatedBySet", "UpdatedBySet"] {
        assert!(reasons.iter().any(|seen| seen == reason), "{reasons:?}");
    }

    // Scaling down keeps the oldest.
    let sets = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": "TenantSet"}))
        .await
        .api(&cluster.client, Some("default"));
    sets.patch_scale(
        "team",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("the Set has a scale subresource");
    set_settled(cluster, "team", 1).await;
    let kept = set_members(cluster, "team").await;
    assert_eq!(kept, updated[..1], "the newest two go");
    let reasons = cluster.event_reasons(&updated[2].0).await;
    assert!(
        reasons.iter().any(|seen| seen == "DeletedBySet"),
        "{reasons:?}"
    );

    // Scaling up makes new names.
    sets.patch_scale(
        "team",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .expect("scaled");
    set_settled(cluster, "team", 3).await;
    let grown = set_members(cluster, "team").await;
    assert_eq!(grown.len(), 3);
    assert!(grown.contains(&kept[0]), "{grown:?}");
    for (name, _) in &grown {
        assert!(
            name == &kept[0].0 || !updated.iter().any(|(old, _)| old == name),
            "{name} reused a deleted instance's name"
        );
    }
    let scale = sets.get_scale("team").await.expect("GET scale");
    assert_eq!(scale.status.map(|status| status.replicas), Some(3));

    // Without spec.scaling the Set controller stops: a Set change is no longer acted on.
    let without_scaling = TENANTS.replace("  scaling: {kind: TenantSet, method: replicas}\n", "");
    assert_ne!(without_scaling, TENANTS);
    cluster.apply_yaml(&without_scaling).await;
    cluster
        .wait_for(
            cluster_at(RGD_API, RGD_KIND, "tenants"),
            "without the Set",
            |rgd| {
                rgd.is_some_and(|rgd| {
                    condition(rgd, "KindReady")["message"]
                        .as_str()
                        .is_some_and(|message| !message.contains("TenantSet"))
                })
            },
        )
        .await;
    sets.patch_scale(
        "team",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 4}})),
    )
    .await
    .expect("the CRD stays");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        set_members(cluster, "team").await.len(),
        3,
        "no Set controller runs"
    );
    cluster.apply_yaml(TENANTS).await;
    set_settled(cluster, "team", 4).await;
    let gvr = r#"{gvr="kro.run/v1alpha1, Resource=tenantsets"}"#;
    assert!(
        cluster.metric(&format!("set_reconcile_total{gvr}")) > Some(3.0),
        "{}",
        cluster.metrics.encode()
    );
    let settled = std::time::Instant::now();
    while cluster.metric(&format!("set_rollouts_in_progress{gvr}")) != Some(0.0) {
        assert!(
            settled.elapsed() < Duration::from_secs(30),
            "a settled Set still counts as rolling out:\n{}",
            cluster.metrics.encode()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    if matches!(cluster.backend, common::Backend::Embedded(_)) {
        cluster.delete(at(RGD_API, "TenantSet", "team")).await;
        for (name, _) in set_members(cluster, "team").await.iter().chain(&grown) {
            cluster.wait_gone(at(RGD_API, "Tenant", name)).await;
            cluster.wait_gone(at("v1", "ConfigMap", name)).await;
        }
    }
}

/// Each scenario as a test of its own on a fresh embedded server, and all of them in one test
/// on real kube-apiserver + etcd (a fresh control plane each, one after another).
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let cluster = Cluster::start().await;
                    super::$name(&cluster).await;
                    cluster.stop().await;
                }
            )*
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn every_scenario_holds_on_a_real_control_plane() {
            $(
                let started = std::time::Instant::now();
                let control_plane = tokio::task::spawn_blocking(|| {
                    kro_test_support::real_control_plane_or_skip("controller scenarios")
                })
                .await
                .expect("the start task");
                let Some(control_plane) = control_plane else {
                    return;
                };
                let cluster = Cluster::start_real(control_plane).await;
                $name(&cluster).await;
                cluster.stop().await;
                eprintln!("{} on kube-apiserver: {:?}", stringify!($name), started.elapsed());
            )*
        }
    };
}

scenarios!(
    a_resync_in_steady_state_writes_nothing,
    external_refs_wait_for_their_object_then_follow_its_changes,
    an_external_ref_reads_a_cluster_scoped_custom_kind,
    include_when_skips_contagiously_and_flipping_it_creates_and_prunes,
    collections_grow_shrink_chain_empty_and_repair_drift,
    suspension_stops_changes_until_lifted,
    a_terminating_child_blocks_its_dependents_until_it_is_gone,
    deletion_goes_in_reverse_order_and_waits_for_each_wave,
    two_instances_cannot_take_one_object_from_each_other,
    an_rgd_with_instances_waits_for_them_before_it_goes,
    an_invalid_rgd_is_not_accepted_and_says_why,
    a_breaking_crd_change_is_refused_until_the_rgd_allows_it,
    a_validation_rule_change_reaches_the_crd,
    readiness_gates_the_next_level_per_item_and_per_collection_with_author_conditions,
    an_instance_scales_through_its_scale_subresource_and_an_autoscaler,
    a_set_runs_scales_and_updates_its_instances,
);
