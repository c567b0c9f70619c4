//! Defaulting cases after `pkg/apiserver/schema/defaulting/algorithm_test.go`.

use serde_json::{Value, json};

use super::*;

fn schema(json: Value) -> Schema {
    serde_json::from_value(json).expect("a schema")
}

fn defaulted(schema: &Schema, mut value: Value) -> Value {
    apply_defaults(schema, &mut value);
    value
}

fn workload() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "paused": {"type": "boolean", "nullable": true, "default": false},
                "image": {"type": "string"},
                "strategy": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "type": {"type": "string", "default": "RollingUpdate"},
                        "maxSurge": {"x-kubernetes-int-or-string": true, "default": "25%"}
                    }
                },
                "ports": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "port": {"type": "integer"},
                        "protocol": {"type": "string", "default": "TCP"}
                    }
                }},
                "sidecars": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "default": {},
                    "properties": {"pull": {"type": "string", "default": "IfNotPresent"}}
                }},
                "weights": {"type": "array", "items": {"type": "integer", "default": 1}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                          "properties": {"level": {"type": "integer", "default": 3}}}
            }
        }}
    }))
}

#[test]
fn defaults_create_objects_that_are_defaulted_further() {
    assert_eq!(
        defaulted(&workload(), json!({})),
        json!({"spec": {
            "replicas": 1,
            "paused": false,
            "strategy": {"type": "RollingUpdate", "maxSurge": "25%"}
        }})
    );
}

#[test]
fn values_that_are_present_are_kept() {
    let object = json!({"spec": {"replicas": 3, "paused": true, "strategy": {"type": "Recreate"}}});
    assert_eq!(
        defaulted(&workload(), object),
        json!({"spec": {
            "replicas": 3,
            "paused": true,
            "strategy": {"type": "Recreate", "maxSurge": "25%"}
        }})
    );
}

#[test]
fn list_items_and_map_values_are_defaulted() {
    let object = json!({"spec": {
        "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
        "sidecars": {"proxy": {}, "logger": null},
        "weights": [5, null]
    }});
    let spec = &defaulted(&workload(), object)["spec"];
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
    assert_eq!(
        spec["sidecars"],
        json!({"proxy": {"pull": "IfNotPresent"}, "logger": {"pull": "IfNotPresent"}})
    );
    assert_eq!(spec["weights"], json!([5, 1]));
}

#[test]
fn nulls_are_replaced_by_defaults_or_dropped_unless_nullable() {
    let object = json!({"spec": {"replicas": null, "image": null, "paused": null}});
    assert_eq!(
        defaulted(&workload(), object),
        json!({"spec": {
            "replicas": 1,
            "paused": null,
            "strategy": {"type": "RollingUpdate", "maxSurge": "25%"}
        }})
    );
}

#[test]
fn preserved_subtrees_still_get_the_defaults_of_their_known_fields() {
    let object = json!({"spec": {"extra": {"anything": {"level": "kept"}}}});
    assert_eq!(
        defaulted(&workload(), object)["spec"]["extra"],
        json!({"anything": {"level": "kept"}, "level": 3})
    );
}

#[test]
fn defaulting_is_idempotent() {
    let once = defaulted(&workload(), json!({"spec": {"ports": [{"port": 1}]}}));
    assert_eq!(defaulted(&workload(), once.clone()), once);
}
