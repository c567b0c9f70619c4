//! Unit tests of field management and server-side apply.

use kro_schema::Gvk;

use super::fields::FieldSet;
use super::shape::Shape;
use super::*;

fn configmap() -> Shape<'static> {
    Shape::of_kind(&Gvk::new("", "v1", "ConfigMap"), None)
}

fn deployment() -> Shape<'static> {
    Shape::of_kind(&Gvk::new("apps", "v1", "Deployment"), None)
}

fn writer(manager: &str) -> Writer<'_> {
    Writer {
        manager,
        api_version: "v1",
        endpoint: Endpoint::Main { has_status: false },
    }
}

fn fields(object: &Value) -> Vec<(String, String, Value)> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            (
                entry["manager"].as_str().unwrap_or_default().to_owned(),
                entry["operation"].as_str().unwrap_or_default().to_owned(),
                entry["fieldsV1"].clone(),
            )
        })
        .collect()
}

#[test]
fn apply_records_the_configuration_fields() {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "b"}, "annotations": {}},
        "data": {"k1": "v1", "k2": "v2"}});
    let applied = apply(None, &config, configmap(), &writer("kubectl"), false).expect("apply");
    assert_eq!(
        fields(&applied),
        [(
            "kubectl".to_owned(),
            "Apply".to_owned(),
            json!({"f:data": {"f:k1": {}, "f:k2": {}},
                "f:metadata": {"f:annotations": {}, "f:labels": {"f:a": {}}}})
        )]
    );
}

#[test]
fn an_empty_map_applied_before_is_kept_when_keys_are_applied_into_it() {
    let empty = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {}}});
    let live = apply(None, &empty, configmap(), &writer("kubectl"), false).expect("apply");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {"a": "b"}}});
    let applied =
        apply(Some(&live), &config, configmap(), &writer("kubectl"), false).expect("apply");
    assert_eq!(applied["metadata"]["annotations"], json!({"a": "b"}));
    // Dropping the map from the configuration still removes it.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let removed = apply(
        Some(&applied),
        &bare,
        configmap(),
        &writer("kubectl"),
        false,
    )
    .expect("apply");
    assert!(
        removed["metadata"].get("annotations").is_none(),
        "{removed}"
    );
}

#[test]
fn updates_take_changed_fields_and_applies_conflict_then_force() {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k1": "v1", "k2": "v2"}});
    let live = apply(None, &config, configmap(), &writer("kubectl"), false).expect("apply");
    let mut patched = live.clone();
    patched["data"]["k1"] = json!("changed");
    patched["data"]["k3"] = json!("v3");
    record_update(
        Some(&live),
        &mut patched,
        configmap(),
        &writer("kubectl-patch"),
    )
    .expect("update");
    assert_eq!(
        fields(&patched),
        [
            (
                "kubectl".to_owned(),
                "Apply".to_owned(),
                json!({"f:data": {"f:k2": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
            ),
            (
                "kubectl-patch".to_owned(),
                "Update".to_owned(),
                json!({"f:data": {"f:k1": {}, "f:k3": {}}})
            ),
        ]
    );
    let error = apply(
        Some(&patched),
        &config,
        configmap(),
        &writer("kubectl"),
        false,
    )
    .expect_err("conflict");
    assert_eq!(error.code, 409);
    assert!(
        error
            .message
            .starts_with("Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1"),
        "{}",
        error.message
    );
    assert!(error.message.ends_with(": .data.k1"), "{}", error.message);
    // Forced, with a smaller configuration: k1 comes back, k2 and the label go.
    let smaller = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": {"k1": "v1"}});
    let forced = apply(
        Some(&patched),
        &smaller,
        configmap(),
        &writer("kubectl"),
        true,
    )
    .expect("forced");
    assert_eq!(forced["data"], json!({"k1": "v1", "k3": "v3"}));
    assert!(forced["metadata"].get("labels").is_none(), "{forced}");
    assert_eq!(
        fields(&forced),
        [
            (
                "kubectl".to_owned(),
                "Apply".to_owned(),
                json!({"f:data": {"f:k1": {}}})
            ),
            (
                "kubectl-patch".to_owned(),
                "Update".to_owned(),
                json!({"f:data": {"f:k3": {}}})
            ),
        ]
    );
}

#[test]
fn map_lists_merge_by_key_and_keep_other_managers_items() {
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "a", "image": "a"}]}}}});
    let live = apply(None, &config, deployment(), &writer("kubectl"), false).expect("apply");
    assert_eq!(
        fields(&live)[0].2,
        json!({"f:spec": {"f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    );
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b"}]}}}});
    let both = apply(Some(&live), &sidecar, deployment(), &writer("other"), false).expect("apply");
    let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    // The first manager drops its container: only "b" remains.
    let without = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}}, "spec": {"containers": []}}}});
    let after = apply(
        Some(&both),
        &without,
        deployment(),
        &writer("kubectl"),
        false,
    )
    .expect("apply");
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"],
        json!([{"name": "b", "image": "b"}])
    );
}

#[test]
fn creates_record_new_maps_as_members() {
    let mut created = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"a": "b"}});
    record_update(None, &mut created, configmap(), &writer("kubectl-create")).expect("create");
    assert_eq!(
        fields(&created)[0].2,
        json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
}

#[test]
fn fields_v1_round_trips() {
    let json = json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}},
        "f:finalizers": {"v:\"x\"": {}}}});
    let set = FieldSet::from_json(&json).expect("parse");
    assert_eq!(set.to_json(), json);
    assert!(FieldSet::from_json(&json!({"x:y": {}})).is_err());
}

#[test]
fn long_sets_and_map_lists_are_compared_and_merged_in_linear_time() {
    // 100,000 finalizers (a set) and 20,000 containers (a map list): comparing and merging
    // them item by item against each other took time quadratic in their length (20,000
    // finalizers: 8 s to create the object in a debug build); this runs in about a second.
    let finalizers: Vec<String> = (0..100_000).map(|index| format!("x.io/{index}")).collect();
    let mut created = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "finalizers": finalizers}});
    record_update(None, &mut created, configmap(), &writer("kubectl-create")).expect("create");
    let recorded = &fields(&created)[0].2["f:metadata"]["f:finalizers"];
    assert_eq!(
        recorded.as_object().map(serde_json::Map::len),
        Some(100_001)
    );
    let mut fewer = created.clone();
    fewer["metadata"]["finalizers"] = json!(finalizers[50_000..]);
    record_update(Some(&created), &mut fewer, configmap(), &writer("trimmer")).expect("update");

    let containers = |from: usize, to: usize| -> Vec<Value> {
        (from..to)
            .map(|index| json!({"name": format!("c{index}"), "image": "i"}))
            .collect()
    };
    let deployment_of = |containers: Vec<Value>| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": containers}}}})
    };
    let live = apply(
        None,
        &deployment_of(containers(0, 20_000)),
        deployment(),
        &writer("kubectl"),
        false,
    )
    .expect("apply");
    let both = apply(
        Some(&live),
        &deployment_of(containers(10_000, 30_000)),
        deployment(),
        &writer("other"),
        false,
    )
    .expect("apply");
    let merged = both["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(Vec::len);
    assert_eq!(merged, Some(30_000));
}
