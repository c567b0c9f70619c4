use serde_json::json;

use super::*;

fn compile(spec: Json) -> Schema {
    compile_spec(&spec, None)
        .unwrap_or_else(|error| panic!("{error}"))
        .schema
}

fn compile_with_types(spec: Json, types: Json) -> Schema {
    compile_spec(&spec, Some(&types))
        .unwrap_or_else(|error| panic!("{error}"))
        .schema
}

fn error(spec: Json) -> SimpleSchemaError {
    compile_spec(&spec, None).expect_err("invalid schema")
}

fn as_json(schema: &Schema) -> Json {
    serde_json::to_value(schema).expect("serializes")
}

#[test]
fn atomic_types_map_to_openapi_types() {
    let schema = compile(json!({
        "name": "string", "count": "integer", "enabled": "boolean", "ratio": "float", "extra": "object"
    }));
    assert_eq!(
        as_json(&schema),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer"},
                "enabled": {"type": "boolean"},
                "ratio": {"type": "number"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        })
    );
}

#[test]
fn lists_and_maps_nest() {
    let schema = compile(json!({
        "tags": "[]string",
        "matrix": "[][]integer",
        "labels": "map[string]string",
        "groups": "map[string][]string",
        "records": "[]map[string]object"
    }));
    assert_eq!(
        as_json(&schema)["properties"],
        json!({
            "tags": {"type": "array", "items": {"type": "string"}},
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "groups": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
            "records": {"type": "array", "items": {"type": "object", "additionalProperties": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
        })
    );
}

#[test]
fn nested_maps_are_objects_with_sorted_required_lists() {
    let schema = compile(json!({
        "ingress": {
            "zeta": "string | required=true",
            "alpha": "string | required=true",
            "host": "string"
        }
    }));
    assert_eq!(schema.properties["ingress"].required, vec!["alpha", "zeta"]);
}

#[test]
fn every_marker_lands_in_the_schema() {
    let schema = compile_with_types(
        json!({
            "name": r#"string | required=true description="The name" minLength=1 maxLength=63 pattern="^[a-z]+$" immutable=true"#,
            "replicas": "integer | default=3 minimum=1 maximum=10",
            "price": "float | minimum=0.01 maximum=999.99 default=1.5",
            "mode": r#"string | enum="debug,info" default="info""#,
            "level": "integer | enum=\"1, 2, 3\"",
            "tags": "[]string | uniqueItems=true minItems=1 maxItems=5",
            "ports": "[]Port | listType=map listMapKey=name listMapKey=port",
            "elements": r#"[]string | default=["a","b"]"#,
            "even": r#"integer | validation="self % 2 == 0""#
        }),
        json!({"Port": {"name": "string | required=true", "port": "integer | required=true"}}),
    );
    assert_eq!(
        as_json(&schema),
        json!({
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {
                    "type": "string", "description": "The name", "minLength": 1, "maxLength": 63,
                    "pattern": "^[a-z]+$",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]
                },
                "replicas": {"type": "integer", "default": 3, "minimum": 1, "maximum": 10},
                "price": {"type": "number", "default": 1.5, "minimum": 0.01, "maximum": 999.99},
                "mode": {"type": "string", "enum": ["debug", "info"], "default": "info"},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5,
                         "x-kubernetes-list-type": "set"},
                "ports": {"type": "array",
                          "items": {"type": "object", "required": ["name", "port"],
                                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}},
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"]},
                "elements": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]},
                "even": {"type": "integer", "x-kubernetes-validations": [{"rule": "self % 2 == 0", "message": "validation failed"}]}
            }
        })
    );
}

#[test]
fn the_upstream_defaults_example_compiles_as_upstream() {
    let schema = compile(json!({
        "name": "string",
        "elements": r#"[]string | default=["a","b","c","d"]"#,
        "required": "integer | required=true",
        "element": r#"string | default="e""#,
        "enabled": "boolean | default=true",
        "number": "integer | default=100",
        "config": {"field": "string", "field2": "integer | default=200", "field3": "integer | default=2002"}
    }));
    let json = as_json(&schema);
    assert_eq!(json["required"], json!(["required"]));
    assert!(
        json.get("default").is_none(),
        "spec has a required field, so no default {{}}"
    );
    assert_eq!(
        json["properties"]["elements"]["default"],
        json!(["a", "b", "c", "d"])
    );
    assert_eq!(json["properties"]["element"]["default"], json!("e"));
    assert_eq!(json["properties"]["enabled"]["default"], json!(true));
    assert_eq!(json["properties"]["number"]["default"], json!(100));
    assert_eq!(
        json["properties"]["config"]["default"],
        json!({}),
        "nested defaults propagate"
    );
    assert_eq!(
        json["properties"]["config"]["properties"]["field2"]["default"],
        json!(200)
    );
}

#[test]
fn objects_with_required_children_get_no_default() {
    let schema = compile(json!({
        "a": {"x": "string | default=1", "y": "string | required=true"},
        "b": {"x": "string"}
    }));
    assert!(schema.properties["a"].default.is_none());
    assert!(schema.properties["b"].default.is_none());
}

#[test]
fn custom_types_are_inlined_in_dependency_order() {
    let schema = compile_with_types(
        json!({"containers": "[]Container | listType=map listMapKey=name", "primary": "Container", "port": "Port"}),
        json!({
            "Container": {"name": "string | required=true", "ports": "[]Port"},
            "Port": "integer | minimum=1 maximum=65535",
        }),
    );
    let json = as_json(&schema);
    assert_eq!(
        json["properties"]["containers"]["items"]["required"],
        json!(["name"])
    );
    assert_eq!(
        json["properties"]["containers"]["items"]["properties"]["ports"]["items"],
        json!({"type": "integer", "minimum": 1, "maximum": 65535})
    );
    assert_eq!(
        json["properties"]["port"],
        json!({"type": "integer", "minimum": 1, "maximum": 65535})
    );
}

#[test]
fn a_required_alias_makes_every_use_required() {
    let schema = compile_with_types(
        json!({"id": "Identifier"}),
        json!({"Identifier": "string | required=true"}),
    );
    assert_eq!(schema.required, vec!["id"]);
}

#[test]
fn cyclic_and_unknown_types_are_rejected() {
    let cyclic = compile_spec(
        &json!({"a": "A"}),
        Some(&json!({"A": {"b": "B"}, "B": {"a": "[]A"}})),
    )
    .expect_err("cycle");
    assert_eq!(
        cyclic.kind,
        SimpleSchemaErrorKind::CyclicTypes(vec!["A".into(), "B".into()])
    );
    assert_eq!(
        error(json!({"spec": {"x": "Missing"}})),
        SimpleSchemaError {
            path: "spec.spec.x".into(),
            kind: SimpleSchemaErrorKind::UnknownType("Missing".into())
        }
    );
}

#[test]
fn errors_name_the_field_and_the_marker() {
    let cases = [
        (
            json!({"a": "string | bogus=1"}),
            "spec.a",
            SimpleSchemaErrorKind::UnknownMarker("bogus".into()),
        ),
        (
            json!({"a": "integer | minLength=1"}),
            "spec.a",
            SimpleSchemaErrorKind::MarkerNotApplicable {
                marker: "minLength",
                type_name: "integer".into(),
            },
        ),
        (
            json!({"a": "string | minLength=-1"}),
            "spec.a",
            SimpleSchemaErrorKind::InvalidMarkerValue {
                marker: "minLength",
                value: "-1".into(),
                reason: "must not be negative".into(),
            },
        ),
        (
            json!({"a": "integer | default=abc"}),
            "spec.a",
            SimpleSchemaErrorKind::InvalidMarkerValue {
                marker: "default",
                value: "abc".into(),
                reason: "expected an integer".into(),
            },
        ),
        (
            json!({"a": "boolean | enum=\"a,b\""}),
            "spec.a",
            SimpleSchemaErrorKind::MarkerNotApplicable {
                marker: "enum",
                type_name: "boolean".into(),
            },
        ),
        (
            json!({"a": "string | enum=\"a,,b\""}),
            "spec.a",
            SimpleSchemaErrorKind::InvalidMarkerValue {
                marker: "enum",
                value: "a,,b".into(),
                reason: "empty enum values are not allowed".into(),
            },
        ),
        (
            json!({"a": "[]string | uniqueItems=true listType=atomic"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers(
                "listType=atomic conflicts with listType set".into(),
            ),
        ),
        (
            json!({"a": "[]object | listMapKey=name"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers("listMapKey requires listType=map".into()),
        ),
        (
            json!({"a": "[]object | listType=map"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers(
                "listType=map requires at least one listMapKey".into(),
            ),
        ),
        (
            json!({"a": "[]object | uniqueItems=true"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers(
                "a set (uniqueItems or listType=set) cannot hold objects".into(),
            ),
        ),
        (
            json!({"a": "[]string | listType=map listMapKey=name"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers(
                "listType=map needs object items, not string".into(),
            ),
        ),
        (
            json!({"a": "string | required=true "}),
            "spec.a",
            SimpleSchemaErrorKind::MissingMarker,
        ),
        (
            json!({"a": "[]object | listType=map listMapKey=k listMapKey=k"}),
            "spec.a",
            SimpleSchemaErrorKind::ConflictingMarkers("listMapKey=k is given twice".into()),
        ),
        (
            json!({"a": "integer | default=007"}),
            "spec.a",
            SimpleSchemaErrorKind::InvalidMarkerValue {
                marker: "default",
                value: "007".into(),
                reason: "not valid JSON: invalid number at line 1 column 2".into(),
            },
        ),
        (
            json!({"a": {"b": 3}}),
            "spec.a.b",
            SimpleSchemaErrorKind::InvalidFieldValue("a number".into()),
        ),
        (
            json!({"a": "map[int]string"}),
            "spec.a",
            SimpleSchemaErrorKind::UnsupportedMapKey("int".into()),
        ),
        (
            json!({"a": "string | required"}),
            "spec.a",
            SimpleSchemaErrorKind::MarkerWithoutValue("required".into()),
        ),
    ];
    for (spec, path, kind) in cases {
        let found = error(spec.clone());
        assert_eq!((found.path.as_str(), &found.kind), (path, &kind), "{spec}");
    }
}

#[test]
fn patterns_must_compile_and_rules_must_parse() {
    let bad_pattern = error(json!({"a": r#"string | pattern="[""#}));
    assert!(matches!(
        bad_pattern.kind,
        SimpleSchemaErrorKind::InvalidMarkerValue {
            marker: "pattern",
            ..
        }
    ));
    let bad_rule = error(json!({"a": r#"string | validation="self ==""#}));
    assert!(matches!(
        bad_rule.kind,
        SimpleSchemaErrorKind::InvalidMarkerValue {
            marker: "validation",
            ..
        }
    ));
}

#[test]
fn invalid_json_defaults_are_rejected() {
    let found = error(json!({"a": "[]string | default=[a,b]"}));
    assert!(matches!(
        found.kind,
        SimpleSchemaErrorKind::InvalidMarkerValue {
            marker: "default",
            ..
        }
    ));
}

#[test]
fn scale_markers_are_recorded_and_checked() {
    let spec = compile_spec(&json!({"desiredReplicas": "integer | scale"}), None).expect("valid");
    let status = compile_spec(
        &json!({"replicas": "integer | scale", "podSelector": "string | scaleSelector"}),
        None,
    )
    .expect("valid");
    assert_eq!(
        scale_fields(&spec, &status).expect("valid scaling"),
        ScaleFields {
            spec_replicas: Some("desiredReplicas".into()),
            status_replicas: Some("replicas".into()),
            status_selector: Some("podSelector".into()),
        }
    );
    let none = compile_spec(&json!({}), None).expect("valid");
    assert!(matches!(
        scale_fields(&spec, &none).expect_err("spec only").kind,
        SimpleSchemaErrorKind::InvalidScaleMarker(_)
    ));
    assert!(matches!(
        scale_fields(&none, &status).expect_err("status only").kind,
        SimpleSchemaErrorKind::InvalidScaleMarker(_)
    ));
    assert!(matches!(
        error(json!({"n": "string | scale"})).kind,
        SimpleSchemaErrorKind::InvalidScaleMarker(_)
    ));
    assert!(matches!(
        error(json!({"n": "integer | scaleSelector"})).kind,
        SimpleSchemaErrorKind::InvalidScaleMarker(_)
    ));
    let selector_in_spec = compile_spec(
        &json!({"s": "string | scaleSelector", "r": "integer | scale"}),
        None,
    )
    .expect("valid alone");
    assert!(scale_fields(&selector_in_spec, &status).is_err());
    let field = compile_field("integer | scale", "status.replicas").expect("valid");
    assert_eq!(field.scale_fields, vec!["replicas".to_string()]);
}

/// Found by tests/fuzz_simpleschema.rs: defaults that break their own field's constraints or
/// type were accepted, and kube-apiserver then refused the generated CRD.
#[test]
fn a_default_that_is_not_a_valid_value_of_its_field_is_an_error_at_the_field() {
    for declaration in [
        "integer | default=0 minimum=1",
        "string | default=\"UPPER\" pattern=\"^[a-z]+$\"",
        "string | enum=a,b default=c",
        "[]map[string]object | default=[1, 2]",
        "[]string | default={\"k\": \"v\"}",
    ] {
        let error = error(json!({"field": declaration}));
        assert_eq!(error.path, "spec.field", "{declaration}");
        assert!(
            matches!(
                error.kind,
                SimpleSchemaErrorKind::InvalidMarkerValue {
                    marker: "default",
                    ..
                }
            ),
            "{declaration}: {error:?}"
        );
    }
    compile(json!({"field": "integer | default=2 minimum=1 maximum=3"}));
}

#[test]
fn markers_are_written_as_upstream_writes_them() {
    let schema = compile(json!({
        "bounds": "string | minimum=5 maximum=1 minLength=5 maxLength=3",
        "twice": "string | required=true required=true description=\"\"",
        "escaped": "string | default=\"a\\\\nb\"",
        "nothing": "object | default=null",
        "spaced": "[] map[string] integer",
    }));
    // A `default=null` child still makes its parent default to {} (when nothing is required).
    let parent = compile(json!({"a": {"nothing": "object | default=null"}}));
    assert_eq!(as_json(&parent)["properties"]["a"]["default"], json!({}));
    assert_eq!(
        as_json(&schema),
        json!({
            "type": "object",
            "required": ["twice", "twice"],
            "properties": {
                "bounds": {"type": "string", "minimum": 5, "maximum": 1, "minLength": 5, "maxLength": 3},
                "twice": {"type": "string"},
                "escaped": {"type": "string", "default": "a\nb"},
                "nothing": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "spaced": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "integer"}}},
            },
        })
    );
}

#[test]
fn rules_must_type_check_against_their_field() {
    let ill_typed = error(json!({"a": r#"integer | validation="self != ''""#}));
    assert!(matches!(
        ill_typed.kind,
        SimpleSchemaErrorKind::InvalidMarkerValue {
            marker: "validation",
            ..
        }
    ));
    let schema = compile(json!({"a": r#"string | validation="self != ''" immutable=true"#}));
    assert_eq!(schema.properties["a"].x_kubernetes_validations.len(), 2);
}
