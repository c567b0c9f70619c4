use super::*;
use crate::env::Env;

fn check_type(env: &Env, text: &str) -> Type {
    let ast = env
        .parse(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    let checked = env
        .check(&ast)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    checked.output_type().clone()
}

fn check_errors(env: &Env, text: &str) -> Vec<TypeErrorKind> {
    let ast = env.parse(text).expect("parses");
    env.check(&ast)
        .expect_err(text)
        .issues
        .into_iter()
        .map(|issue| issue.kind)
        .collect()
}

#[test]
fn literals_and_operators_have_their_types() {
    let env = Env::standard();
    let cases = [
        ("1 + 2", Type::Int),
        ("1u * 2u", Type::Uint),
        ("1.5 / 2.0", Type::Double),
        ("'a' + 'b'", Type::String),
        ("1 < 2.5", Type::Bool),
        ("[1, 2][0]", Type::Int),
        ("{'a': 1}['a']", Type::Int),
        ("size('abc')", Type::Int),
        (
            "timestamp('2020-01-01T00:00:00Z') - duration('1s')",
            Type::Timestamp,
        ),
        ("type(1)", Type::type_of(Type::Int)),
        ("int", Type::type_of(Type::Int)),
        ("null", Type::Null),
    ];
    for (text, expected) in cases {
        assert_eq!(check_type(&env, text), expected, "{text}");
    }
}

#[test]
fn mismatched_operands_report_no_matching_overload() {
    let env = Env::standard();
    assert_eq!(
        check_errors(&env, "1 + 'a'"),
        vec![TypeErrorKind::NoMatchingOverload {
            function: "_+_".into(),
            receiver: None,
            arguments: vec![Type::Int, Type::String],
        }]
    );
    let ast = env.parse("1 + 'a'").expect("parses");
    let message = env.check(&ast).expect_err("mismatch").to_string();
    assert_eq!(
        message,
        "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n | 1 + 'a'\n | ..^"
    );
}

#[test]
fn every_error_is_reported_not_just_the_first() {
    let env = Env::standard();
    let errors = check_errors(&env, "x + 1 == y && 1 + true");
    assert_eq!(errors.len(), 3, "{errors:?}");
}

#[test]
fn the_error_cap_stops_long_lists() {
    let env = Env::standard().with_max_check_errors(2);
    let errors = check_errors(&env, "a + b + c + d");
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[2], TypeErrorKind::TooManyErrors(2));
}

#[test]
fn variables_resolve_through_the_container() {
    let env = Env::standard()
        .with_container("a.b")
        .with_variable("a.b.x", Type::Int)
        .with_variable("y", Type::String);
    assert_eq!(check_type(&env, "x"), Type::Int);
    assert_eq!(check_type(&env, "y"), Type::String);
    assert!(matches!(
        check_errors(&env, ".x").as_slice(),
        [TypeErrorKind::UndeclaredReference { name, container }] if name == "x" && container == "a.b"
    ));
}

#[test]
fn qualified_variable_names_win_over_field_selection() {
    let env = Env::standard()
        .with_variable("a.b", Type::map(Type::String, Type::Int))
        .with_variable("a", Type::map(Type::String, Type::String));
    assert_eq!(check_type(&env, "a.b.c"), Type::Int);
    assert_eq!(check_type(&env, "a.z"), Type::String);
}

#[test]
fn macros_infer_element_types() {
    let env = Env::standard().with_variable("names", Type::list(Type::String));
    assert_eq!(
        check_type(&env, "names.map(n, size(n))"),
        Type::list(Type::Int)
    );
    assert_eq!(
        check_type(&env, "names.filter(n, n != '')"),
        Type::list(Type::String)
    );
    assert_eq!(
        check_type(&env, "names.all(n, n.startsWith('a'))"),
        Type::Bool
    );
    assert_eq!(
        check_type(&env, "names.transformMap(i, n, i * 2)"),
        Type::map(Type::Int, Type::Int)
    );
    assert_eq!(check_type(&env, "cel.bind(x, 2, x * x)"), Type::Int);
}

#[test]
fn loop_variables_are_scoped_to_their_loop() {
    let env = Env::standard();
    assert!(matches!(
        check_errors(&env, "[1].all(x, x > 0) && x > 0").as_slice(),
        [TypeErrorKind::UndeclaredReference { name, .. }] if name == "x"
    ));
}

#[test]
fn heterogeneous_literals_are_dyn() {
    let env = Env::standard();
    assert_eq!(check_type(&env, "[1, 'a']"), Type::list(Type::Dyn));
    assert_eq!(check_type(&env, "[]"), Type::list(Type::Dyn));
    assert_eq!(
        check_type(&env, "{'a': 1, 'b': 2.0}"),
        Type::map(Type::String, Type::Dyn)
    );
}

#[test]
fn ranging_over_a_scalar_is_an_error() {
    let env = Env::standard();
    assert_eq!(
        check_errors(&env, "1.all(x, true)"),
        vec![TypeErrorKind::NotARange(Type::Int)]
    );
}

#[test]
fn optionals_check_through_selection_and_or_value() {
    let env = Env::standard().with_variable("m", Type::map(Type::String, Type::Int));
    assert_eq!(check_type(&env, "m.?a"), Type::optional(Type::Int));
    assert_eq!(check_type(&env, "m.?a.orValue(0)"), Type::Int);
    assert_eq!(
        check_type(&env, "optional.none()"),
        Type::optional(Type::Dyn)
    );
    assert_eq!(check_type(&env, "[?m.?a]"), Type::list(Type::Int));
}

#[derive(Debug)]
struct Deployments;

impl TypeProvider for Deployments {
    fn has_type(&self, name: &str) -> bool {
        matches!(name, "Deployment" | "Spec")
    }

    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
        match (type_name, field) {
            ("Deployment", "spec") => FieldLookup::Found(Type::object("Spec")),
            ("Spec", "replicas") => FieldLookup::Found(Type::Int),
            ("Spec", "labels") => FieldLookup::Found(Type::map(Type::String, Type::String)),
            _ => FieldLookup::NoSuchField,
        }
    }
}

#[test]
fn object_fields_come_from_the_type_provider() {
    let env = Env::standard()
        .with_type_provider(Arc::new(Deployments))
        .with_variable("deployment", Type::object("Deployment"));
    assert_eq!(check_type(&env, "deployment.spec.replicas + 1"), Type::Int);
    assert_eq!(check_type(&env, "has(deployment.spec.labels)"), Type::Bool);
    assert_eq!(check_type(&env, "Spec{replicas: 2}"), Type::object("Spec"));
    assert_eq!(
        check_errors(&env, "deployment.spec.replica"),
        vec![TypeErrorKind::UndefinedField {
            object_type: Type::object("Spec"),
            field: "replica".into()
        }]
    );
    assert!(matches!(
        check_errors(&env, "Spec{replicas: 'two'}").as_slice(),
        [TypeErrorKind::TypeMismatch {
            expected: Type::Int,
            actual: Type::String
        }]
    ));
}

#[test]
fn references_record_variables_and_overloads() {
    let env = Env::standard().with_variable("x", Type::Int);
    let ast = env.parse("x + 1").expect("parses");
    let checked = env.check(&ast).expect("checks");
    assert_eq!(checked.referenced_variables(), vec!["x"]);
    assert_eq!(
        checked.reference(ast.expr.id),
        Some(&Reference::Function {
            name: "_+_".into(),
            overloads: vec!["add_int64".into()]
        })
    );
}

#[test]
fn namespaced_functions_are_global_calls() {
    let env = Env::standard();
    assert_eq!(
        check_type(&env, "optional.of(1)"),
        Type::optional(Type::Int)
    );
}
