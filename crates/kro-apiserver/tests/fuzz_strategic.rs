//! Fuzzing of strategic merge patch ([`apply_to_kind`]) with patches built from the
//! directives (`$patch`, `$retainKeys`, `$setElementOrder/<field>`,
//! `$deleteFromPrimitiveList/<field>`) over the merge lists of built-in kinds, arbitrary
//! patches, and mutated patch text.
//!
//! Properties: nothing panics; a refused patch is classified (400, 422, or the 500 without a
//! reason kube-apiserver gives for the errors it passes through) with a message; a patched
//! object is no larger than the object and the patch together; a deletion list removes
//! exactly its values and keeps the order of the rest; an order directive that permutes a
//! list puts it in that order; and on maps of strings a strategic merge patch is a JSON merge
//! patch.
//!
//! Fixed seed and corpus (`testdata/fuzz/strategic-merge-patch/`: the object, with its
//! `apiVersion` and `kind`, on the first line, the patch after it): see `fuzzing/mod.rs`.

mod fuzzing;

use kro_apiserver::ApiError;
use kro_apiserver::patch::merge_patch;
use kro_apiserver::strategic::{StrategicError, apply_to_kind};
use kro_schema::Gvk;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NAMES: &[&str] = &["web", "side", "init", "new", ""];

fn container(name: &str) -> Value {
    json!({"name": name, "image": format!("{name}:1"),
        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "args": ["-v", "run"]})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "d", "tier": "web"},
            "finalizers": ["a", "b", "c"]},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [container("web"), container("side")],
                    "volumes": [{"name": "v", "emptyDir": {}}]}}}})
}

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "c"}, "annotations": {"note": "x"},
            "finalizers": ["a", "b"]},
        "data": {"k": "v", "other": "w"}})
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}],
            "selector": {"app": "s"}}})
}

fn gvk_of(object: &Value) -> Gvk {
    let text = |field: &str| object[field].as_str().unwrap_or_default().to_owned();
    Gvk::from_api_version(&text("apiVersion"), &text("kind"))
        .unwrap_or_else(|_| Gvk::new("", "v1", "ConfigMap"))
}

/// A scalar, a null, or a small structure: what a patch may put anywhere.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-2i64..500).prop_map(Value::from),
        Just(json!(1.5)),
        prop::sample::select(NAMES).prop_map(|name| json!(name)),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Field names of the kinds fuzzed, directives among them.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "name",
                "image",
                "ports",
                "env",
                "args",
                "containerPort",
                "protocol",
                "value",
                "finalizers",
                "labels",
                "containers",
                "volumes",
                "type",
                "rollingUpdate",
                "$patch",
                "$retainKeys",
                "$setElementOrder/containers",
                "$setElementOrder/ports",
                "$setElementOrder/finalizers",
                "$deleteFromPrimitiveList/finalizers",
                "$deleteFromPrimitiveList/args",
                "$setElementOrder",
                "$deleteFromPrimitiveList",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-z$/]{1,6}",
    ]
}

/// A `$patch` directive value: the known ones and others.
fn directive() -> impl Strategy<Value = Value> {
    prop::sample::select(&["delete", "replace", "merge", "bogus"][..]).prop_map(|d| json!(d))
}

/// An item of a list merged by `name`: an update, a new item, a directive, or junk.
fn named_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (prop::sample::select(NAMES), any_json()).prop_map(|(name, image)| {
            json!({"name": name, "image": image})
        }),
        2 => (prop::sample::select(NAMES), directive())
            .prop_map(|(name, directive)| json!({"name": name, "$patch": directive})),
        1 => directive().prop_map(|directive| json!({"$patch": directive})),
        1 => prop::sample::select(NAMES).prop_map(|name| json!({"name": name, "ports": [
            {"containerPort": 80, "$patch": "delete"}, {"containerPort": 8080}]})),
        1 => any_json(),
    ]
}

fn names() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(NAMES).prop_map(|name| json!({"name": name})),
            1 => any_json(),
        ],
        0..5,
    )
    .prop_map(Value::Array)
}

fn strings() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(&["a", "b", "c", "d", "-v", "run"][..]).prop_map(|s| json!(s)),
            1 => any_json(),
        ],
        0..5,
    )
    .prop_map(Value::Array)
}

/// Sets `value` at `path` (keys, created as objects) in `patch`.
fn put(patch: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = patch;
    for parent in parents {
        let child = node
            .entry(parent.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !child.is_object() {
            *child = Value::Object(Map::new());
        }
        let Value::Object(map) = child else {
            return;
        };
        node = map;
    }
    node.insert(last.clone(), value);
}

/// A path of field names.
fn at(path: &[&str]) -> Vec<String> {
    path.iter().map(|field| (*field).to_owned()).collect()
}

/// A patch of a Deployment made of directives over its merge lists, and arbitrary fields.
fn deployment_patch() -> impl Strategy<Value = Value> {
    let part = prop_oneof![
        prop::collection::vec(named_item(), 0..5).prop_map(|items| (
            at(&["spec", "template", "spec", "containers"]),
            Value::Array(items)
        )),
        names().prop_map(|order| (
            at(&["spec", "template", "spec", "$setElementOrder/containers"]),
            order
        )),
        strings().prop_map(|list| (at(&["metadata", "finalizers"]), list)),
        strings().prop_map(|list| (
            at(&["metadata", "$deleteFromPrimitiveList/finalizers"]),
            list
        )),
        strings().prop_map(|list| (at(&["metadata", "$setElementOrder/finalizers"]), list)),
        prop::collection::vec(
            prop::sample::select(&["type", "rollingUpdate", "other"][..]).prop_map(|k| json!(k)),
            0..3
        )
        .prop_map(|keys| (at(&["spec", "strategy", "$retainKeys"]), Value::Array(keys))),
        prop::sample::select(&["Recreate", "RollingUpdate"][..])
            .prop_map(|kind| (at(&["spec", "strategy", "type"]), json!(kind))),
        directive().prop_map(|directive| (at(&["metadata", "labels", "$patch"]), directive)),
        any_json().prop_map(|value| (at(&["metadata", "labels", "app"]), value)),
        (0..=3usize, key(), any_json()).prop_map(|(depth, key, value)| {
            let mut path = at(&["spec", "template", "spec"][..depth]);
            path.push(key);
            (path, value)
        }),
    ];
    prop::collection::vec(part, 0..6).prop_map(|parts| {
        let mut patch = Map::new();
        for (path, value) in parts {
            put(&mut patch, &path, value);
        }
        Value::Object(patch)
    })
}

/// An object and a patch for it (the patch text may no longer parse once mutated: `None`).
fn case() -> impl Strategy<Value = (Value, Option<Value>)> {
    let corpus = fuzzing::corpus("strategic-merge-patch");
    let mutated =
        (prop::sample::select(corpus), fuzzing::mutations(4)).prop_map(|(entry, mutations)| {
            let (object, patch) = split_entry(&entry.bytes);
            let patch = fuzzing::mutate(patch.to_vec(), &mutations);
            (
                serde_json::from_slice(object).unwrap_or_else(|_| config_map()),
                serde_json::from_slice(&patch).ok(),
            )
        });
    let object = prop_oneof![Just(deployment()), Just(config_map()), Just(service())];
    prop_oneof![
        5 => deployment_patch().prop_map(|patch| (deployment(), Some(patch))),
        2 => (object, prop::collection::btree_map(key(), any_json(), 0..4))
            .prop_map(|(object, patch)| (object, Some(Value::Object(patch.into_iter().collect())))),
        3 => mutated,
    ]
}

/// A corpus entry: the object's line, then the patch.
fn split_entry(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|byte| *byte == b'\n') {
        Some(split) => (&bytes[..split], &bytes[split + 1..]),
        None => (bytes, &[]),
    }
}

fn size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |bytes| bytes.len())
}

/// The properties of applying any patch to any object.
fn check(object: &Value, patch: &Value) -> Result<(), String> {
    match apply_to_kind(object, patch, &gvk_of(object)) {
        Ok(patched) => {
            let bound = size(object) + size(patch);
            if size(&patched) > bound {
                return Err(format!(
                    "{} bytes patched, over {bound}: {patched}",
                    size(&patched)
                ));
            }
            Ok(())
        }
        Err(error) => {
            let reason = error.reason();
            let api = ApiError::from(error.clone());
            let classified = match error {
                StrategicError::BadRequest(_) => api.code == 400,
                StrategicError::Unprocessable(_) => api.code == 422,
                _ => api.code == 500,
            };
            if !classified || api.message.is_empty() || reason.is_empty() {
                return Err(format!("{error:?} answered {} {:?}", api.code, api.message));
            }
            Ok(())
        }
    }
}

/// A map of strings with some nulls and nested maps (no lists, no directives).
fn string_map_patch() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        prop::sample::select(&["v", "w", ""][..]).prop_map(|s| json!(s)),
    ];
    let value = leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
    });
    prop::collection::btree_map(
        prop::sample::select(&["k", "other", "new", "note", "app"][..]).prop_map(str::to_owned),
        value,
        0..4,
    )
    .prop_map(|map| Value::Object(map.into_iter().collect()))
}

fn config() -> ProptestConfig {
    fuzzing::config(5_000, 0x006b_726f_736d_7031)
}

/// Fewer cases for the properties of long lists, each of which costs more.
fn long_list_config() -> ProptestConfig {
    fuzzing::config(100, 0x006b_726f_736d_7032)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_patch_applies_or_is_refused_as_kube_apiserver_classifies_it((object, patch) in case()) {
        if let Some(patch) = patch {
            check(&object, &patch).map_err(|problem| {
                TestCaseError::fail(format!("{problem}\n  object {object}\n  patch {patch}"))
            })?;
        }
    }

    #[test]
    fn on_maps_of_strings_a_strategic_merge_patch_is_a_merge_patch(
        data in string_map_patch(),
        labels in string_map_patch(),
    ) {
        let object = config_map();
        let patch = json!({"data": data, "metadata": {"labels": labels}});
        let patched = apply_to_kind(&object, &patch, &gvk_of(&object))
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        let mut merged = object.clone();
        merge_patch(&mut merged, &patch);
        prop_assert_eq!(patched, merged);
    }
}

proptest! {
    #![proptest_config(long_list_config())]

    #[test]
    fn a_deletion_list_removes_exactly_its_values_in_order(
        live in prop::collection::vec(0u16..600, 0..1_500),
        deleted in prop::collection::vec(0u16..600, 0..1_500),
    ) {
        let finalizers = |items: &[u16]| -> Vec<Value> { items.iter().map(|n| json!(format!("f{n}"))).collect() };
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "finalizers": finalizers(&live)}});
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": finalizers(&deleted)}});
        let patched = apply_to_kind(&object, &patch, &gvk_of(&object))
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        let kept: Vec<u16> = live.iter().copied().filter(|n| !deleted.contains(n)).collect();
        prop_assert_eq!(&patched["metadata"]["finalizers"], &Value::Array(finalizers(&kept)));
    }

    #[test]
    fn an_order_directive_that_permutes_a_list_puts_it_in_that_order(
        order in Just((0..800u16).collect::<Vec<_>>()).prop_shuffle(),
        named in any::<bool>(),
    ) {
        let item = |n: u16| if named { json!({"name": format!("c{n}")}) } else { json!(format!("f{n}")) };
        let live: Vec<Value> = (0..).take(order.len()).map(item).collect();
        let wanted: Vec<Value> = order.iter().copied().map(item).collect();
        let (object, patch, field) = if named {
            (
                json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": live}}),
                json!({"spec": {"$setElementOrder/containers": wanted}}),
                "/spec/containers",
            )
        } else {
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": live}}),
                json!({"metadata": {"$setElementOrder/finalizers": wanted}}),
                "/metadata/finalizers",
            )
        };
        let patched = apply_to_kind(&object, &patch, &gvk_of(&object))
            .map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(patched.pointer(field), Some(&Value::Array(wanted)));
    }
}

#[test]
fn the_corpus_of_patches_applies_or_is_refused_as_kube_apiserver_classifies_it() {
    for entry in fuzzing::corpus("strategic-merge-patch") {
        let (object, patch) = split_entry(&entry.bytes);
        let object: Value = serde_json::from_slice(object)
            .unwrap_or_else(|error| panic!("{}: the object: {error}", entry.name));
        let patch: Value = serde_json::from_slice(patch)
            .unwrap_or_else(|error| panic!("{}: the patch: {error}", entry.name));
        if let Err(problem) = check(&object, &patch) {
            panic!("{}: {problem}", entry.name);
        }
    }
}
