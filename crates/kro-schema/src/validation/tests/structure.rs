//! List types, embedded resources and ratcheting on update.

use super::*;

fn lists() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}
                }}
            },
            "routes": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "protocol"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "protocol": {"type": "string"}
                }}
            }
        }}}
    }))
}

#[test]
fn set_lists_report_repeated_items() {
    let object = json!({"spec": {"tags": ["a", "b", "a", "a", "b"]}});
    assert_eq!(
        rendered(&lists(), &object, None),
        [
            r#"spec.tags[2]: Duplicate value: "a""#,
            r#"spec.tags[4]: Duplicate value: "b""#,
        ]
    );
}

#[test]
fn map_lists_report_repeated_keys() {
    let object = json!({"spec": {
        "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}],
        "routes": [
            {"name": "a", "protocol": "TCP"},
            {"name": "a", "protocol": "UDP"},
            {"name": "a", "protocol": "TCP"}
        ]
    }});
    assert_eq!(
        rendered(&lists(), &object, None),
        [
            r#"spec.ports[1]: Duplicate value: {"name":"http"}"#,
            r#"spec.routes[2]: Duplicate value: {"name":"a","protocol":"TCP"}"#,
        ]
    );
}

#[test]
fn map_lists_need_object_items() {
    let object = json!({"spec": {"ports": ["http"]}});
    let errors = rendered(&lists(), &object, None);
    assert_eq!(
        errors.last().map(String::as_str),
        Some(
            r#"spec.ports[0]: Invalid value: "http": must be an object for an array of list-type map"#
        )
    );
}

#[test]
fn duplicates_already_in_the_old_object_are_tolerated() {
    let old = json!({"spec": {"tags": ["a", "a"]}});
    let new = json!({"spec": {"tags": ["a", "a", "b"]}});
    assert_eq!(rendered(&lists(), &new, Some(&old)), Vec::<String>::new());
    assert_eq!(
        rendered(&lists(), &new, None),
        [r#"spec.tags[1]: Duplicate value: "a""#]
    );
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    let schema = with_field(json!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    }));
    assert_eq!(
        rendered(&schema, &json!({"spec": {"x": {}}}), None),
        [
            "spec.x.apiVersion: Required value",
            "spec.x.kind: Required value"
        ]
    );
    let object =
        json!({"spec": {"x": {"apiVersion": "a/b/c", "kind": "Bad_Kind", "metadata": "m"}}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec.x.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            "spec.x.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise \
             match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
             start with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            r#"spec.x.metadata: Invalid value: "m": json: cannot unmarshal string into Go value of type v1.ObjectMeta"#,
        ]
    );
    let valid =
        json!({"spec": {"x": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}}});
    assert_eq!(rendered(&schema, &valid, None), Vec::<String>::new());
}

#[test]
fn unchanged_invalid_fields_ratchet_on_update() {
    let schema = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 3},
            "replicas": {"type": "integer", "minimum": 1},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}
                }}
            }
        }}}
    }));
    let old =
        json!({"spec": {"name": "toolong", "replicas": 1, "ports": [{"name": "a", "port": 200}]}});
    let new = json!({"spec": {
        "name": "toolong",
        "replicas": 2,
        "ports": [{"name": "b", "port": 300}, {"name": "a", "port": 200}]
    }});
    assert_eq!(
        rendered(&schema, &new, Some(&old)),
        [
            "spec.ports[0].port: Invalid value: 300: spec.ports[0].port in body should be less than or equal to 100"
        ]
    );
    assert_eq!(rendered(&schema, &new, None).len(), 3);
}
