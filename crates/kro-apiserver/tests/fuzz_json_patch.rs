//! Fuzzing of JSON patch and JSON merge patch application ([`json_patch`], [`merge_patch`])
//! with operations aimed at the paths of Kubernetes-shaped documents, arbitrary operations,
//! and mutated patch text.
//!
//! Properties: nothing panics; a refused patch is a 400, 413 or 422 with a message; a patched
//! document stays within the document, the patch and the copy budget
//! ([`MAX_JSON_PATCH_COPY_BYTES`]); `add` then `test` of the same value succeeds, `remove`
//! makes a member absent, replacing a value by itself changes nothing, and a merge patch
//! applied twice gives what it gave once.
//!
//! Fixed seed and corpus (`testdata/fuzz/json-patch/`: the document on the first line, the
//! patch after it): see `fuzzing/mod.rs`.

mod fuzzing;

use kro_apiserver::bounds::MAX_JSON_PATCH_COPY_BYTES;
use kro_apiserver::patch::{json_patch, merge_patch};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"app": "web"},
            "finalizers": ["a", "b"]},
        "data": {"k": "v", "a/b": "slash", "m~n": "tilde"}})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]},
                    {"name": "side", "image": "busybox", "args": ["-c", "true"]}]}}}})
}

/// A JSON value of bounded size and depth.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|number| json!(number)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z~/]{0,4}", inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A Kubernetes-shaped document, or an arbitrary one.
fn document() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(config_map()),
        3 => Just(deployment()),
        1 => any_json(),
    ]
}

/// Every JSON pointer that names a value of `value`.
fn pointers(value: &Value, prefix: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let token = key.replace('~', "~0").replace('/', "~1");
                let path = format!("{prefix}/{token}");
                pointers(child, path.clone(), out);
                out.push(path);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                let path = format!("{prefix}/{index}");
                pointers(child, path.clone(), out);
                out.push(path);
            }
        }
        _ => {}
    }
}

/// A pointer into `document`: one that names a value, a child of one (`-`, a new key, an
/// index past the end), or something malformed.
fn pointer_into(document: &Value) -> BoxedStrategy<String> {
    let mut existing = Vec::new();
    pointers(document, String::new(), &mut existing);
    existing.push(String::new());
    let existing = prop::sample::select(existing);
    prop_oneof![
        4 => existing.clone().boxed(),
        2 => (existing, prop_oneof![
            Just("-".to_owned()),
            Just("new".to_owned()),
            Just("99".to_owned()),
            Just("0".to_owned()),
            Just("~2".to_owned()),
            Just("01".to_owned()),
            "[a-z0-9~]{0,3}",
        ]).prop_map(|(parent, child)| format!("{parent}/{child}")).boxed(),
        1 => prop_oneof![
            Just("a".to_owned()),
            Just("/".to_owned()),
            Just("//".to_owned()),
            Just("/~".to_owned()),
            "\\PC{0,8}",
        ].boxed(),
    ]
    .boxed()
}

const OPERATIONS: &[&str] = &["add", "remove", "replace", "move", "copy", "test", "bogus"];

/// One operation: mostly well-formed, sometimes with a field missing or of the wrong type.
fn operation(document: &Value) -> impl Strategy<Value = Value> + use<> {
    (
        prop::sample::select(OPERATIONS),
        pointer_into(document),
        pointer_into(document),
        any_json(),
        0..8u8,
    )
        .prop_map(|(op, path, from, value, shape)| {
            let mut operation = Map::new();
            operation.insert("op".to_owned(), json!(op));
            operation.insert("path".to_owned(), json!(path));
            operation.insert("from".to_owned(), json!(from));
            operation.insert("value".to_owned(), value);
            match shape {
                0 => {
                    operation.remove("path");
                }
                1 => {
                    operation.remove("value");
                }
                2 => {
                    operation.insert("path".to_owned(), json!(7));
                }
                3 => {
                    operation.insert("op".to_owned(), Value::Null);
                }
                _ => {}
            }
            Value::Object(operation)
        })
}

/// A document and a patch for it: operations aimed at its paths, an arbitrary value, or a
/// mutated corpus entry (whose patch text may no longer parse: `None`).
fn case() -> impl Strategy<Value = (Value, Option<Value>)> {
    let aimed = document().prop_flat_map(|document| {
        let operations = prop::collection::vec(operation(&document), 0..16);
        (
            Just(document),
            operations.prop_map(|ops| Some(Value::Array(ops))),
        )
    });
    let corpus = fuzzing::corpus("json-patch");
    let mutated =
        (prop::sample::select(corpus), fuzzing::mutations(4)).prop_map(|(entry, mutations)| {
            let (document, patch) = split_entry(&entry.bytes);
            let patch = fuzzing::mutate(patch.to_vec(), &mutations);
            (
                serde_json::from_slice(document).unwrap_or(Value::Null),
                serde_json::from_slice(&patch).ok(),
            )
        });
    prop_oneof![
        6 => aimed,
        1 => (document(), any_json().prop_map(Some)),
        3 => mutated,
    ]
}

/// A corpus entry: the document's line, then the patch.
fn split_entry(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|byte| *byte == b'\n') {
        Some(split) => (&bytes[..split], &bytes[split + 1..]),
        None => (bytes, &[]),
    }
}

/// Whether an object inside a list of `value` has a null member.
fn has_null_member_in_a_list(value: &Value, in_list: bool) -> bool {
    match value {
        Value::Object(map) => map.values().any(|member| {
            (in_list && member.is_null()) || has_null_member_in_a_list(member, in_list)
        }),
        Value::Array(items) => items
            .iter()
            .any(|item| has_null_member_in_a_list(item, true)),
        _ => false,
    }
}

fn size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |bytes| bytes.len())
}

/// The properties of applying `patch` to `document`, both as a JSON patch and as a merge
/// patch.
fn check(document: &Value, patch: &Value) -> Result<(), String> {
    match json_patch(document, patch) {
        Ok(patched) => {
            let bound = size(document) + size(patch) + MAX_JSON_PATCH_COPY_BYTES;
            if size(&patched) > bound {
                return Err(format!("{} bytes patched, over {bound}", size(&patched)));
            }
        }
        Err(error) => {
            if ![400, 413, 422].contains(&error.code) || error.message.is_empty() {
                return Err(format!("refused with {} {:?}", error.code, error.message));
            }
        }
    }
    let mut once = document.clone();
    merge_patch(&mut once, patch);
    let mut twice = once.clone();
    merge_patch(&mut twice, patch);
    // A list that replaces an object keeps the null members of its objects, and loses them
    // when it lands on the list the second time: evanphx/json-patch's merge, kept as it is.
    if once != twice && !has_null_member_in_a_list(patch, false) {
        return Err(format!(
            "merge patch is not idempotent: {once} then {twice}"
        ));
    }
    if size(&once) > size(document) + size(patch) {
        return Err(format!("merge patch grew to {} bytes", size(&once)));
    }
    Ok(())
}

fn config() -> ProptestConfig {
    fuzzing::config(2_000, 0x006b_726f_6a73_6f6e)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_patch_applies_or_is_refused_with_a_client_error((document, patch) in case()) {
        if let Some(patch) = patch {
            check(&document, &patch).map_err(|problem| {
                TestCaseError::fail(format!("{problem}\n  document {document}\n  patch {patch}"))
            })?;
        }
    }

    #[test]
    fn members_added_removed_and_replaced_say_so(
        (document, path, value) in prop_oneof![Just(config_map()), Just(deployment())]
            .prop_flat_map(|document| {
            let mut existing = Vec::new();
            pointers(&document, String::new(), &mut existing);
            (Just(document), prop::sample::select(existing), any_json())
        })
    ) {
        let (parent, _) = path.rsplit_once('/').unwrap_or_default();
        let parent_is_object = document.pointer(parent).is_some_and(Value::is_object);
        let added = json_patch(&document, &json!([
            {"op": "add", "path": path, "value": value},
            {"op": "test", "path": path, "value": value},
        ]));
        let added = added.map_err(|error| TestCaseError::fail(format!("add {path}: {}", error.message)))?;
        prop_assert_eq!(added.pointer(&path), Some(&value));
        let current = document.pointer(&path).cloned().unwrap_or_default();
        let replaced = json_patch(&document, &json!([{"op": "replace", "path": path, "value": current}]));
        let replaced = replaced.ok();
        prop_assert_eq!(replaced.as_ref(), Some(&document), "replacing {} by itself", path);
        let removed = json_patch(&document, &json!([{"op": "remove", "path": path}]));
        let removed = removed.map_err(|error| TestCaseError::fail(format!("remove {path}: {}", error.message)))?;
        if parent_is_object {
            prop_assert!(removed.pointer(&path).is_none(), "{} is still there", path);
        }
    }
}

#[test]
fn the_corpus_of_patches_applies_or_is_refused_with_a_client_error() {
    for entry in fuzzing::corpus("json-patch") {
        let (document, patch) = split_entry(&entry.bytes);
        let document: Value = serde_json::from_slice(document)
            .unwrap_or_else(|error| panic!("{}: the document: {error}", entry.name));
        let patch: Value = serde_json::from_slice(patch)
            .unwrap_or_else(|error| panic!("{}: the patch: {error}", entry.name));
        if let Err(problem) = check(&document, &patch) {
            panic!("{}: {problem}", entry.name);
        }
    }
}
