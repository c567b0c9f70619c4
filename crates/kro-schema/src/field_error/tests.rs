//! Every error type's rendering, pinned to the text of
//! k8s.io/apimachinery/pkg/util/validation/field/errors.go.

use serde_json::json;

use super::*;

fn spec(field: &str) -> FieldPath {
    FieldPath::new("spec").child(field)
}

#[test]
fn each_error_type_renders_as_kubernetes_renders_it() {
    let cases: Vec<(FieldError, &str)> = vec![
        (
            FieldError::required(spec("name"), ""),
            "spec.name: Required value",
        ),
        (
            FieldError::required(FieldPath::new("spec"), "name must be set"),
            "spec: Required value: name must be set",
        ),
        (
            FieldError::invalid(spec("replicas"), BadValue::from(0), "must be positive"),
            "spec.replicas: Invalid value: 0: must be positive",
        ),
        (
            FieldError::type_invalid(spec("x"), BadValue::text("string"), "wrong type"),
            "spec.x: Invalid value: \"string\": wrong type",
        ),
        (
            FieldError::not_supported(
                spec("mode"),
                BadValue::text("x"),
                &["a".to_string(), "b".to_string()],
            ),
            "spec.mode: Unsupported value: \"x\": supported values: \"a\", \"b\"",
        ),
        (
            FieldError::duplicate(
                FieldPath::new("spec").child("ports").index(1),
                BadValue::from(json!({"name": "http"})),
            ),
            "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
        ),
        (
            FieldError::forbidden(spec("x"), "may not be set"),
            "spec.x: Forbidden: may not be set",
        ),
        (
            FieldError::too_long(spec("name"), Some(5)),
            "spec.name: Too long: may not be more than 5 bytes",
        ),
        (
            FieldError::too_long(spec("name"), Some(1)),
            "spec.name: Too long: may not be more than 1 bytes",
        ),
        (
            FieldError::too_long(spec("name"), None),
            "spec.name: Too long: value is too long",
        ),
        (
            FieldError::too_many(spec("items"), Some(3), Some(2)),
            "spec.items: Too many: 3: must have at most 2 items",
        ),
        (
            FieldError::too_many(spec("items"), Some(2), Some(1)),
            "spec.items: Too many: 2: must have at most 1 items",
        ),
        (
            FieldError::too_many(spec("items"), None, None),
            "spec.items: Too many: has too many items",
        ),
        (
            FieldError::internal(FieldPath::new("spec"), "boom"),
            "spec: Internal error: boom",
        ),
    ];
    for (error, expected) in cases {
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn bad_values_render_by_their_go_type() {
    let path = || FieldPath::new("x");
    let cases: Vec<(BadValue, &str)> = vec![
        (BadValue::from(json!(0.9)), "x: Invalid value: 0.9: d"),
        (BadValue::from(json!(2.0)), "x: Invalid value: 2: d"),
        (BadValue::from(json!(1e6)), "x: Invalid value: 1e+06: d"),
        (BadValue::from(json!(true)), "x: Invalid value: true: d"),
        (BadValue::from(json!(null)), "x: Invalid value: \"null\": d"),
        (BadValue::text("a\"b"), "x: Invalid value: \"a\\\"b\": d"),
        (
            BadValue::from(json!([1, "a"])),
            "x: Invalid value: [1,\"a\"]: d",
        ),
        (
            BadValue::from(json!({"b": 1, "a": 2})),
            "x: Invalid value: {\"a\":2,\"b\":1}: d",
        ),
        (BadValue::Omitted, "x: Invalid value: d"),
    ];
    for (value, expected) in cases {
        assert_eq!(
            FieldError::invalid(path(), value, "d").to_string(),
            expected
        );
    }
}

#[test]
fn paths_render_fields_indices_and_keys() {
    let path = FieldPath::new("spec").child("ports").index(0).child("name");
    assert_eq!(path.to_string(), "spec.ports[0].name");
    let labels = FieldPath::new("metadata").child("labels").key("app");
    assert_eq!(labels.to_string(), "metadata.labels[app]");
    assert_eq!(FieldPath::root().to_string(), "<nil>");
    assert_eq!(FieldPath::root().index(2).to_string(), "[2]");
}

#[test]
fn error_types_have_kubernetes_cause_reasons() {
    let cases = [
        (FieldErrorType::Invalid, "FieldValueInvalid"),
        (FieldErrorType::TypeInvalid, "FieldValueTypeInvalid"),
        (FieldErrorType::Required, "FieldValueRequired"),
        (FieldErrorType::NotSupported, "FieldValueNotSupported"),
        (FieldErrorType::Duplicate, "FieldValueDuplicate"),
        (FieldErrorType::TooLong, "FieldValueTooLong"),
        (FieldErrorType::TooMany, "FieldValueTooMany"),
        (FieldErrorType::Forbidden, "FieldValueForbidden"),
        (FieldErrorType::Internal, "InternalError"),
    ];
    for (error_type, reason) in cases {
        assert_eq!(error_type.reason(), reason);
    }
}

#[test]
fn error_bodies_leave_out_the_path() {
    let error = FieldError::invalid(spec("replicas"), BadValue::from(0), "too small");
    assert_eq!(error.error_body(), "Invalid value: 0: too small");
}

#[test]
fn invalid_object_messages_aggregate_as_kubernetes_does() {
    let widget = Gvk::new("example.com", "v1", "Widget");
    let first = FieldError::invalid(spec("replicas"), BadValue::from(0), "too small");
    let second = FieldError::required(spec("name"), "");
    assert_eq!(
        invalid_object_message(&widget, "demo", std::slice::from_ref(&first)),
        "Widget.example.com \"demo\" is invalid: spec.replicas: Invalid value: 0: too small"
    );
    assert_eq!(
        invalid_object_message(&widget, "demo", &[first.clone(), second, first]),
        "Widget.example.com \"demo\" is invalid: [spec.replicas: Invalid value: 0: too small, \
         spec.name: Required value]"
    );
    let config_map = Gvk::new("", "v1", "ConfigMap");
    assert_eq!(
        invalid_object_message(&config_map, "x", &[]),
        "ConfigMap \"x\" is invalid"
    );
}
