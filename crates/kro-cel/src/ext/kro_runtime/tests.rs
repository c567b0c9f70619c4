use super::super::testing;
use super::{RUNTIME_VARIABLE, condition_type, runtime_type, runtime_value};
use crate::{
    CompileError, ConditionError, ConditionSyntaxError, Env, EvalErrorKind, SyntaxErrorKind, Type,
    TypeErrorKind, Value, from_json,
};

/// The standard environment with the runtime library, `runtime` and a `schema` of any type.
fn env() -> Env {
    testing::env(super::library())
        .with_variable(RUNTIME_VARIABLE, runtime_type())
        .with_variable("schema", Type::Dyn)
}

fn run(text: &str, schema: serde_json::Value) -> Result<Value, EvalErrorKind> {
    let schema = from_json(&schema, None, None).expect("converts");
    env()
        .compile(text)
        .unwrap_or_else(|error| panic!("{text} does not compile: {error}"))
        .evaluate(&[(RUNTIME_VARIABLE, runtime_value()), ("schema", schema)])
        .map_err(|error| error.kind().clone())
}

fn value(text: &str, schema: serde_json::Value) -> Value {
    run(text, schema).unwrap_or_else(|error| panic!("{text} fails: {error:?}"))
}

fn condition(fields: [&str; 4]) -> Value {
    let text = format!(
        "{{'type': '{}', 'status': '{}', 'reason': '{}', 'message': '{}'}}",
        fields[0], fields[1], fields[2], fields[3]
    );
    testing::value(&Env::standard(), &text)
}

fn parse_problem(text: &str) -> ConditionSyntaxError {
    match env().compile(text) {
        Err(CompileError::Parse(error)) => match &error.issues[0].kind {
            SyntaxErrorKind::InvalidCondition(problem) => problem.clone(),
            other => panic!("{text}: expected a condition error, got {other:?}"),
        },
        Err(other) => panic!("{text}: expected a parse error, got {other}"),
        Ok(_) => panic!("{text} compiles"),
    }
}

#[test]
fn new_condition_builds_a_condition_from_identifier_keys() {
    let text = "runtime.newCondition({type: 'PrimaryReady', status: 'True', reason: 'Running', \
                message: 'OK'})";
    assert_eq!(
        value(text, serde_json::json!({})),
        condition(["PrimaryReady", "True", "Running", "OK"])
    );
    let minimal = "runtime.newCondition({status: 'Unknown', type: 'X'})";
    assert_eq!(
        value(minimal, serde_json::json!({})),
        condition(["X", "Unknown", "", ""])
    );
}

#[test]
fn condition_fields_are_typed_strings() {
    let env = env();
    let base = "runtime.newCondition({type: 'X', status: 'False', reason: 'R', message: 'M'})";
    assert_eq!(testing::output_type(&env, base), condition_type());
    let cases = [
        ("type", "X"),
        ("status", "False"),
        ("reason", "R"),
        ("message", "M"),
    ];
    for (field, expected) in cases {
        let text = format!("{base}.{field}");
        assert_eq!(testing::output_type(&env, &text), Type::String);
        assert_eq!(value(&text, serde_json::json!({})), Value::string(expected));
    }
    assert!(matches!(
        testing::check_error(&env, &format!("{base}.bogus")),
        TypeErrorKind::UndefinedField { field, .. } if field == "bogus"
    ));
}

#[test]
fn malformed_new_condition_arguments_are_parse_errors() {
    let cases = [
        (
            "runtime.newCondition({type: 'X', status: 'True', reason: 'R', message: 'M', extra: 'f'})",
            ConditionSyntaxError::UnknownKey("extra".to_string()),
        ),
        (
            r#"runtime.newCondition({"type": 'X', "status": 'True'})"#,
            ConditionSyntaxError::KeyNotAnIdentifier,
        ),
        (
            "runtime.newCondition({type: 'X', status: 'True', type: 'Y'})",
            ConditionSyntaxError::DuplicateKey("type".to_string()),
        ),
        (
            "runtime.newCondition({status: 'True', reason: 'R', message: 'M'})",
            ConditionSyntaxError::MissingKey("type"),
        ),
        (
            "runtime.newCondition({type: 'X', reason: 'R', message: 'M'})",
            ConditionSyntaxError::MissingKey("status"),
        ),
        (
            "runtime.newCondition(schema.spec)",
            ConditionSyntaxError::NotAMapLiteral,
        ),
        (
            "runtime.newCondition({type: 'X', status: 'Yes'})",
            ConditionSyntaxError::InvalidStatus("Yes".to_string()),
        ),
        (
            "runtime.newCondition({type: '', status: 'True'})",
            ConditionSyntaxError::EmptyType,
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_problem(text), expected, "{text}");
    }
}

#[test]
fn computed_values_are_checked_when_evaluating() {
    let text = "runtime.newCondition({type: schema.spec.name, status: schema.spec.s})";
    let cases = [
        (
            serde_json::json!({"spec": {"name": "X", "s": "YES"}}),
            ConditionError::InvalidStatus("YES".to_string()),
        ),
        (
            serde_json::json!({"spec": {"name": "", "s": "True"}}),
            ConditionError::EmptyType,
        ),
        (
            serde_json::json!({"spec": {"name": 3, "s": "True"}}),
            ConditionError::FieldNotAString {
                field: "type".to_string(),
                type_name: "int".to_string(),
            },
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            run(text, schema.clone()),
            Err(EvalErrorKind::InvalidCondition(expected)),
            "{schema}"
        );
    }
    let healthy = "runtime.newCondition({type: 'PrimaryReady', status: schema.spec.ok ? 'True' \
                   : 'False', reason: schema.spec.ok ? 'Healthy' : 'Unhealthy'})";
    assert_eq!(
        value(healthy, serde_json::json!({"spec": {"ok": false}})),
        condition(["PrimaryReady", "False", "Unhealthy", ""])
    );
}

#[test]
fn non_string_values_are_rejected_by_the_checker() {
    assert!(matches!(
        testing::check_error(&env(), "runtime.newCondition({type: 1, status: 2})"),
        TypeErrorKind::NoMatchingOverload { .. }
    ));
}

#[test]
fn condition_finds_an_objects_condition_by_type() {
    let schema = serde_json::json!({"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "AllOK", "message": "everything good"},
        {"type": "ResourcesReady", "status": "False", "reason": "NotReady"},
        {"type": "Ready", "status": "False"},
    ]}});
    let cases = [
        ("Ready", ["Ready", "True", "AllOK", "everything good"]),
        (
            "ResourcesReady",
            ["ResourcesReady", "False", "NotReady", ""],
        ),
        ("Missing", ["", "", "", ""]),
    ];
    for (wanted, expected) in cases {
        let text = format!("runtime.condition(schema, '{wanted}')");
        assert_eq!(
            value(&text, schema.clone()),
            condition(expected),
            "{wanted}"
        );
    }
    assert_eq!(
        testing::output_type(&env(), "runtime.condition(schema, 'Ready').status"),
        Type::String
    );
}

#[test]
fn condition_of_an_object_without_conditions_is_empty() {
    for schema in [
        serde_json::json!({}),
        serde_json::json!({"status": {}}),
        serde_json::json!({"status": {"conditions": []}}),
    ] {
        assert_eq!(
            value("runtime.condition(schema, 'Whatever').status", schema),
            Value::string("")
        );
    }
}

#[test]
fn condition_of_malformed_objects_is_an_error() {
    let cases = [
        (
            serde_json::json!("text"),
            ConditionError::ObjectNotAMap {
                type_name: "string".to_string(),
            },
        ),
        (
            serde_json::json!({"status": 1}),
            ConditionError::StatusNotAMap,
        ),
        (
            serde_json::json!({"status": {"conditions": {}}}),
            ConditionError::ConditionsNotAList,
        ),
        (
            serde_json::json!({"status": {"conditions": [{"type": "A"}, "B"]}}),
            ConditionError::UnexpectedElement {
                type_name: "string".to_string(),
            },
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            run("runtime.condition(schema, 'A')", schema.clone()),
            Err(EvalErrorKind::InvalidCondition(expected)),
            "{schema}"
        );
    }
}

#[test]
fn conditions_compose_in_ternaries_and_lists() {
    let text = "runtime.condition(schema, 'ResourcesReady').status == 'True' \
                ? runtime.newCondition({type: 'Ready', status: 'True', reason: 'AllReady'}) \
                : runtime.newCondition({type: 'Ready', status: 'False', reason: 'NotYet'})";
    for (resources, status, reason) in [("True", "True", "AllReady"), ("False", "False", "NotYet")]
    {
        let schema = serde_json::json!({"status": {"conditions": [
            {"type": "ResourcesReady", "status": resources},
        ]}});
        assert_eq!(
            value(text, schema),
            condition(["Ready", status, reason, ""])
        );
    }
    let list = "[runtime.newCondition({type: 'A', status: 'True'}), \
                runtime.newCondition({type: 'B', status: 'False'})]";
    assert_eq!(
        testing::output_type(&env(), list),
        Type::list(condition_type())
    );
}

#[test]
fn the_functions_need_the_runtime_receiver() {
    let env = env();
    for text in [
        "newCondition({'type': 'X', 'status': 'True'})",
        "condition(schema, 'X')",
        "{}.condition(schema, 'X')",
    ] {
        assert!(
            matches!(
                testing::check_error(&env, text),
                TypeErrorKind::NoMatchingOverload { .. } | TypeErrorKind::UndeclaredFunction { .. }
            ),
            "{text}"
        );
    }
    // A `dyn` receiver checks, as in cel-go, but must be the runtime value when evaluated.
    assert!(matches!(
        run("schema.condition(schema, 'X')", serde_json::json!({})),
        Err(EvalErrorKind::NoSuchOverload { .. })
    ));
    // Without the `runtime` variable (outside status conditions) the name is undeclared.
    let undeclared = testing::env(super::library());
    assert!(matches!(
        testing::check_error(&undeclared, "runtime.condition({}, 'X')"),
        TypeErrorKind::UndeclaredReference { .. }
    ));
}

#[test]
fn other_receivers_keep_their_own_new_condition() {
    // The macro only rewrites calls on `runtime`.
    let ast = env().parse("x.newCondition({type: 'X'})").expect("parses");
    let crate::ExprKind::Call(call) = &ast.expr.kind else {
        panic!("not a call");
    };
    let crate::ExprKind::Map(map) = &call.args[0].kind else {
        panic!("not a map");
    };
    assert!(matches!(&map.entries[0].key.kind, crate::ExprKind::Ident(name) if name == "type"));
}
