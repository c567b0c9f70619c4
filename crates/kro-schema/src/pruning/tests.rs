//! Pruning cases after `pkg/apiserver/schema/pruning/algorithm_test.go`, with the unknown
//! field paths strict field validation reports.

use serde_json::{Value, json};

use super::*;

fn schema(json: Value) -> Schema {
    serde_json::from_value(json).expect("a schema")
}

fn app() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "port": {"type": "integer"}
                }}},
                "byName": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"size": {"type": "integer"}}
                }},
                "config": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}
                },
                "loose": {}
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    }))
}

#[test]
fn unknown_fields_are_removed_and_reported_sorted() {
    let mut object = json!({
        "apiVersion": "example.com/v1",
        "kind": "App",
        "metadata": {"name": "demo"},
        "spec": {
            "replicas": 1,
            "zeta": true,
            "ports": [{"port": 80, "name": "http"}],
            "byName": {"a": {"size": 1, "colour": "red"}},
            "loose": {"anything": 1}
        },
        "extra": 1
    });
    let unknown = prune(&app(), &mut object, true);
    assert_eq!(
        unknown,
        [
            "extra",
            "spec.byName.a.colour",
            "spec.loose.anything",
            "spec.ports[0].name",
            "spec.zeta"
        ]
    );
    assert_eq!(
        object,
        json!({
            "apiVersion": "example.com/v1",
            "kind": "App",
            "metadata": {"name": "demo"},
            "spec": {"replicas": 1, "ports": [{"port": 80}], "byName": {"a": {"size": 1}}, "loose": {}}
        })
    );
}

#[test]
fn preserved_subtrees_keep_unknown_fields_but_prune_known_ones() {
    let mut object = json!({"spec": {"config": {
        "whatever": {"deep": [1, 2]},
        "known": {"a": "x", "b": "pruned"}
    }}});
    let unknown = prune(&app(), &mut object, true);
    assert_eq!(unknown, ["spec.config.known.b"]);
    assert_eq!(
        object,
        json!({"spec": {"config": {"whatever": {"deep": [1, 2]}, "known": {"a": "x"}}}})
    );
}

#[test]
fn root_metadata_keeps_object_meta_fields_only() {
    let mut object = json!({
        "apiVersion": "example.com/v1",
        "kind": "App",
        "metadata": {
            "name": "demo",
            "labels": {"app": "demo"},
            "annotations": {},
            "colour": "blue",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Owner", "name": "o", "uid": "1", "x": 1}]
        }
    });
    let unknown = prune(&app(), &mut object, true);
    assert_eq!(
        unknown,
        ["metadata.colour", "metadata.ownerReferences[0].x"]
    );
    assert_eq!(
        object["metadata"],
        json!({
            "name": "demo",
            "labels": {"app": "demo"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Owner", "name": "o", "uid": "1"}]
        })
    );
}

#[test]
fn embedded_resources_keep_type_and_object_meta() {
    let mut object = json!({"spec": {"template": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "bogus": true},
        "spec": {"image": "nginx", "command": ["sh"]},
        "status": {}
    }}});
    let unknown = prune(&app(), &mut object, true);
    assert_eq!(
        unknown,
        [
            "spec.template.spec.command",
            "spec.template.status",
            "spec.template.metadata.bogus"
        ]
    );
    assert_eq!(
        object,
        json!({"spec": {"template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"image": "nginx"}
        }}})
    );
}

#[test]
fn outside_a_resource_root_type_fields_are_pruned_silently() {
    let mut object = json!({"kind": "App", "status": {"ready": true, "phase": "x"}});
    let unknown = prune(&app(), &mut object, false);
    assert_eq!(unknown, ["status.phase"]);
    assert_eq!(object, json!({"status": {"ready": true}}));
}

#[test]
fn pruning_is_idempotent() {
    let mut object = json!({"spec": {"replicas": 1, "zeta": 1, "config": {"x": 1}}});
    prune(&app(), &mut object, true);
    let once = object.clone();
    assert!(prune(&app(), &mut object, true).is_empty());
    assert_eq!(object, once);
}
