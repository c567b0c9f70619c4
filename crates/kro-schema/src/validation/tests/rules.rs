//! `x-kubernetes-validations`: `self`, `oldSelf`, messages, reasons, field paths, errors and
//! cost limits, with Kubernetes' texts (`pkg/apiserver/schema/cel/validation.go`).

use super::*;

/// A resource whose `spec` has `name`, `replicas`, `max`, `version`, `zero` and `ports`, and
/// the given rules on `spec`.
fn spec_with_rules(rules: Value) -> Schema {
    schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": rules,
            "properties": {
                "name": {"type": "string"},
                "replicas": {"type": "integer"},
                "max": {"type": "integer"},
                "zero": {"type": "integer"},
                "ports": {"type": "array", "items": {"type": "integer"}}
            }
        }}
    }))
}

#[test]
fn failing_rules_report_their_message_or_the_rule() {
    let schema = spec_with_rules(json!([
        {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
        {"rule": "self.replicas >= 0"},
        {"rule": "self.name.startsWith('app-')", "message": "   padded message  "}
    ]));
    let object = json!({"spec": {"name": "web", "replicas": -5, "max": -6}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec: Invalid value: "object": replicas must not exceed max"#,
            r#"spec: Invalid value: "object": failed rule: self.replicas >= 0"#,
            r#"spec: Invalid value: "object": padded message"#,
        ]
    );
    let valid = json!({"spec": {"name": "app-web", "replicas": 1, "max": 3}});
    assert_eq!(rendered(&schema, &valid, None), Vec::<String>::new());
}

#[test]
fn failed_rules_report_the_schema_type_as_the_value() {
    let schema = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 4"}]},
            "ports": {"type": "array", "items": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self <= 65535", "message": "port out of range"}]
            }},
            "labels": {"type": "object", "additionalProperties": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self != ''"}]
            }}
        }}}
    }));
    let object = json!({"spec": {"name": "toolong", "ports": [80, 70000], "labels": {"app": ""}}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec.labels[app]: Invalid value: "string": failed rule: self != ''"#,
            r#"spec.name: Invalid value: "string": failed rule: self.size() < 4"#,
            r#"spec.ports[1]: Invalid value: "integer": port out of range"#,
        ]
    );
}

#[test]
fn immutable_fields_fail_on_change_and_pass_on_create() {
    let schema = with_field(json!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "x is immutable"}]
    }));
    let created = json!({"spec": {"x": "a"}});
    assert_eq!(rendered(&schema, &created, None), Vec::<String>::new());
    assert_eq!(
        rendered(&schema, &created, Some(&created)),
        Vec::<String>::new()
    );
    let changed = json!({"spec": {"x": "b"}});
    assert_eq!(
        rendered(&schema, &changed, Some(&created)),
        [r#"spec.x: Invalid value: "string": x is immutable"#]
    );
    // Without an old value for the field, the transition rule does not run.
    let added = json!({"spec": {}});
    assert_eq!(
        rendered(&schema, &changed, Some(&added)),
        Vec::<String>::new()
    );
}

#[test]
fn optional_old_self_rules_run_on_create_with_an_empty_optional() {
    let schema = with_field(json!({
        "type": "integer",
        "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true,
             "message": "x may not decrease"},
            {"rule": "oldSelf.hasValue()", "optionalOldSelf": true}
        ]
    }));
    let object = json!({"spec": {"x": 1}});
    assert_eq!(
        rendered(&schema, &object, None),
        [r#"spec.x: Invalid value: "integer": failed rule: oldSelf.hasValue()"#]
    );
    let old = json!({"spec": {"x": 2}});
    assert_eq!(
        rendered(&schema, &object, Some(&old)),
        [r#"spec.x: Invalid value: "integer": x may not decrease"#]
    );
}

#[test]
fn message_expressions_build_the_message() {
    let schema = spec_with_rules(json!([
        {"rule": "self.replicas <= self.max",
         "messageExpression": "'replicas ' + string(self.replicas) + ' exceeds ' + string(self.max)"},
        {"rule": "self.replicas < 0", "message": "fallback",
         "messageExpression": "'ratio ' + string(10 / self.zero)"},
        {"rule": "self.replicas < 0", "messageExpression": "'   '"}
    ]));
    let object = json!({"spec": {"replicas": 5, "max": 3, "zero": 0}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec: Invalid value: "object": replicas 5 exceeds 3"#,
            r#"spec: Invalid value: "object": fallback"#,
            r#"spec: Invalid value: "object": failed rule: self.replicas < 0"#,
        ]
    );
}

#[test]
fn reasons_choose_the_error_type_and_field_paths_the_field() {
    let schema = spec_with_rules(json!([
        {"rule": "!has(self.name)", "reason": "FieldValueForbidden", "message": "name is set by the system",
         "fieldPath": ".name"},
        {"rule": "has(self.max)", "reason": "FieldValueRequired", "message": "max is required"},
        {"rule": "self.ports.size() == 0", "reason": "FieldValueDuplicate", "fieldPath": ".ports"},
        {"rule": "self.replicas > 0", "reason": "FieldValueInvalid", "fieldPath": ".nope"}
    ]));
    let object = json!({"spec": {"name": "x", "replicas": 0, "ports": [1]}});
    let errors = validate(&schema, &object, None);
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "spec.name: Forbidden: name is set by the system",
            "spec: Required value: max is required",
            r#"spec.ports: Duplicate value: "object""#,
            r#"spec: Invalid value: "object": failed rule: self.replicas > 0"#,
        ]
    );
    let types: Vec<FieldErrorType> = errors.iter().map(|error| error.error_type).collect();
    assert_eq!(
        types,
        [
            FieldErrorType::Forbidden,
            FieldErrorType::Required,
            FieldErrorType::Duplicate,
            FieldErrorType::Invalid
        ]
    );
}

#[test]
fn evaluation_errors_are_reported_with_the_schema_type() {
    let schema = spec_with_rules(json!([
        {"rule": "10 / self.zero == 1"},
        {"rule": "self.ports[3] == 1", "message": "fourth port"}
    ]));
    let object = json!({"spec": {"zero": 0, "ports": [1]}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec: Invalid value: "object": division by zero evaluating rule: 10 / self.zero == 1"#,
            r#"spec: Invalid value: "object": index out of bounds: 3 (size 1) evaluating rule: fourth port"#,
        ]
    );
}

#[test]
fn rules_that_do_not_compile_are_reported() {
    let schema = spec_with_rules(json!([{"rule": "self.replicas"}, {"rule": "self.nope == 1"}]));
    let errors = validate(&schema, &json!({"spec": {}}), None);
    assert_eq!(
        errors[0].to_string(),
        r#"spec: Invalid value: "object": rule compile error: cel expression must evaluate to a bool"#
    );
    assert_eq!(errors[1].bad_value, BadValue::text("object"));
    assert_eq!(
        errors[1].detail,
        "rule compile error: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n \
         | self.nope == 1\n | ....^"
    );
}

#[test]
fn a_hostile_rule_fails_with_a_cost_error_instead_of_hanging() {
    let range = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]";
    let rule = format!(
        "{range}.all(a, {range}.all(b, {range}.all(c, {range}.all(d, {range}.all(e, a + b + c + d + e >= 0)))))"
    );
    let schema =
        spec_with_rules(json!([{"rule": rule}, {"rule": "false", "message": "never reached"}]));
    let started = std::time::Instant::now();
    let errors = rendered(&schema, &json!({"spec": {}}), None);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(
        errors,
        [format!(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no \
             further validation rules will be run due to call cost exceeds limit for rule: {rule}"
        )]
    );
}

#[test]
fn the_object_budget_stops_further_rules() {
    let schema = spec_with_rules(json!([
        {"rule": "[1,2,3,4,5,6,7,8,9,10].all(x, x > 0)"},
        {"rule": "false"}
    ]));
    let config = ValidationConfig::default().with_cost_budget(5);
    let errors = Validator::with_config(&schema, config).validate(&json!({"spec": {}}), None);
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            r#"spec: Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run"#
        ]
    );
}

#[test]
fn schema_errors_block_the_rules() {
    let schema = spec_with_rules(json!([{"rule": "false"}]));
    let object = json!({"spec": {"replicas": "three"}});
    assert_eq!(
        rendered(&schema, &object, None),
        [
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            "<nil>: Invalid value: \"null\": some validation rules were not checked because the object \
             was invalid; correct the existing errors to complete validation",
        ]
    );
}

#[test]
fn root_rules_see_the_object_metadata() {
    let schema = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('demo')", "message": "names start with demo"}
        ],
        "properties": {"spec": {"type": "object"}}
    }));
    let object = json!({"apiVersion": "x.dev/v1", "kind": "X", "metadata": {"name": "other"}});
    assert_eq!(
        rendered(&schema, &object, None),
        [r#"<nil>: Invalid value: "object": names start with demo"#]
    );
}

#[test]
fn unchanged_values_ratchet_but_transition_rules_do_not() {
    let schema = with_field(json!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": "self.size() < 3"}, {"rule": "self == oldSelf"}]
    }));
    let old = json!({"spec": {"x": "long"}});
    assert_eq!(rendered(&schema, &old, Some(&old)), Vec::<String>::new());
    let changed = json!({"spec": {"x": "longer"}});
    assert_eq!(
        rendered(&schema, &changed, Some(&old)),
        [
            r#"spec.x: Invalid value: "string": failed rule: self.size() < 3"#,
            r#"spec.x: Invalid value: "string": failed rule: self == oldSelf"#,
        ]
    );
}

#[test]
fn a_validator_compiles_once_and_validates_many_objects() {
    let schema = spec_with_rules(json!([{"rule": "self.replicas <= self.max"}]));
    let validator = Validator::new(&schema);
    let shared = validator.clone();
    let handle = std::thread::spawn(move || {
        (0..50)
            .map(|replicas| {
                shared
                    .validate(&json!({"spec": {"replicas": replicas, "max": 25}}), None)
                    .len()
            })
            .sum::<usize>()
    });
    assert_eq!(handle.join().expect("the thread finishes"), 24);
    assert!(
        validator
            .validate(&json!({"spec": {"replicas": 1, "max": 2}}), None)
            .is_empty()
    );
}

#[test]
fn self_is_typed_from_the_schema() {
    let schema = schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.createdAt < timestamp('2030-01-01T00:00:00Z')"},
                {"rule": "size(self.cert) == 2"},
                {"rule": "self.ratio / 2.0 == 0.5"},
                {"rule": "self.timeout == duration('90s')"}
            ],
            "properties": {
                "createdAt": {"type": "string", "format": "date-time"},
                "cert": {"type": "string", "format": "byte"},
                "ratio": {"type": "number"},
                "timeout": {"type": "string", "format": "duration"}
            }
        }}
    }));
    let object = json!({"spec": {
        "createdAt": "2024-05-01T10:00:00Z", "cert": "aGk=", "ratio": 1, "timeout": "1m30s"
    }});
    assert_eq!(rendered(&schema, &object, None), Vec::<String>::new());
}

#[test]
fn int_or_string_values_are_dynamic_and_mismatches_are_overload_errors() {
    let schema = with_field(json!({
        "x-kubernetes-int-or-string": true,
        "x-kubernetes-validations": [
            {"rule": "type(self) == string || self > 0"},
            {"rule": "self + 1 > 0"}
        ]
    }));
    assert_eq!(
        rendered(&schema, &json!({"spec": {"x": 3}}), None),
        Vec::<String>::new()
    );
    assert_eq!(
        rendered(&schema, &json!({"spec": {"x": "50%"}}), None),
        [
            "spec.x: Invalid value: \"\": 'no such overload: _+_(string, int)': call arguments did \
             not match a supported operator, function or macro signature for rule: self + 1 > 0"
        ]
    );
}
