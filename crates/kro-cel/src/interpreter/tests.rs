use super::*;
use crate::env::Env;
use crate::error::EvalErrorKind;

fn eval(text: &str) -> EvalResult<Value> {
    let env = Env::standard();
    let program = env
        .compile(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    program.evaluate(&NoVariables)
}

fn eval_unchecked(env: &Env, text: &str, activation: &dyn Activation) -> EvalResult<Value> {
    let ast = env.parse(text).expect("parses");
    env.program_unchecked(&ast).evaluate(activation)
}

#[test]
fn macros_evaluate() {
    assert_eq!(
        eval("[1, 2, 3].map(x, x * 2).filter(y, y > 2)").expect("evaluates"),
        Value::list(vec![Value::Int(4), Value::Int(6)])
    );
    assert_eq!(
        eval("[1, 2, 3].exists_one(x, x > 2)").expect("evaluates"),
        Value::Bool(true)
    );
    assert_eq!(
        eval("{'a': 1, 'b': 2}.transformMap(k, v, v * 10)").expect("evaluates"),
        eval("{'a': 10, 'b': 20}").expect("evaluates")
    );
}

#[test]
fn logical_operators_absorb_errors_when_decided() {
    assert_eq!(
        eval("1 / 0 == 1 || true").expect("absorbed"),
        Value::Bool(true)
    );
    assert_eq!(
        eval("false && 1 / 0 == 1").expect("absorbed"),
        Value::Bool(false)
    );
    assert_eq!(
        eval("1 / 0 == 1 && false").expect("absorbed"),
        Value::Bool(false)
    );
    let error = eval("1 / 0 == 1 && true").expect_err("not absorbed");
    assert_eq!(error.kind(), &EvalErrorKind::DivisionByZero);
    assert_eq!(
        eval("[1, 0].all(x, 1 / x > 0) || true").expect("absorbed"),
        Value::Bool(true)
    );
}

#[test]
fn all_absorbs_an_error_when_another_element_is_false() {
    assert_eq!(
        eval("[0, 1].all(x, 10 / x > 5)")
            .expect_err("error and true")
            .kind(),
        &EvalErrorKind::DivisionByZero
    );
    assert_eq!(
        eval("[0, 5].all(x, 10 / x > 5)").expect("error and false"),
        Value::Bool(false)
    );
}

#[test]
fn missing_data_is_a_pending_error_with_a_place() {
    let env = Env::standard().with_variable("m", Type::map(Type::String, Type::Dyn));
    let program = env.compile("m.status.ready").expect("compiles");
    let mut map = Map::new();
    map.insert(Key::String(Arc::from("spec")), Value::Null);
    let error = program
        .evaluate(&[("m", Value::Map(map))])
        .expect_err("missing key");
    assert!(error.is_pending());
    assert_eq!(error.kind(), &EvalErrorKind::NoSuchKey("status".into()));
    assert_eq!(error.span().map(|span| span.start), Some(1));
    let error = program
        .evaluate(&NoVariables)
        .expect_err("missing variable");
    assert!(error.is_pending());
    assert_eq!(error.kind(), &EvalErrorKind::NoSuchAttribute("m".into()));
}

#[test]
fn unchecked_programs_resolve_qualified_names_at_run_time() {
    let env = Env::standard();
    let mut inner = Map::new();
    inner.insert(Key::String(Arc::from("c")), Value::Int(7));
    let bindings = [("a.b", Value::Map(inner))];
    assert_eq!(
        eval_unchecked(&env, "a.b.c", &bindings).expect("found"),
        Value::Int(7)
    );
    assert_eq!(
        eval_unchecked(&env, "google.protobuf.Timestamp", &NoVariables).expect("type"),
        Value::Type(Arc::from("google.protobuf.Timestamp"))
    );
    assert!(
        eval_unchecked(&env, "nope", &NoVariables)
            .expect_err("unbound")
            .is_pending()
    );
}

#[test]
fn unchecked_calls_dispatch_on_runtime_types() {
    let env = Env::standard();
    assert_eq!(
        eval_unchecked(&env, "string(1u) + string(2.5)", &NoVariables).expect("evaluates"),
        Value::string("12.5")
    );
    let error = eval_unchecked(&env, "int([])", &NoVariables).expect_err("no overload");
    assert!(
        matches!(error.kind(), EvalErrorKind::NoSuchOverload { function, .. } if function == "int")
    );
}

#[test]
fn the_cost_budget_stops_runaway_comprehensions() {
    let env = Env::standard().with_cost_limit(Some(2_000));
    let program = env
        .compile("[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, a * b * c)))")
        .expect("compiles");
    let evaluation = program.evaluate_with_limit(&NoVariables, Some(2_000));
    assert!(matches!(
        evaluation.result.expect_err("over budget").kind(),
        EvalErrorKind::CostLimitExceeded { limit: 2_000 }
    ));
    let evaluation = program.evaluate_with_limit(&NoVariables, None);
    assert!(evaluation.result.is_ok());
    assert!(evaluation.cost > 2_000, "cost {}", evaluation.cost);
}

#[test]
fn accumulators_are_not_shared_between_evaluations() {
    let env = Env::standard();
    let program = env.compile("[1, 2].map(x, x)").expect("compiles");
    let first = program.evaluate(&NoVariables).expect("evaluates");
    let second = program.evaluate(&NoVariables).expect("evaluates");
    assert_eq!(first, second);
    assert_eq!(first, Value::list(vec![Value::Int(1), Value::Int(2)]));
}

#[test]
fn nested_comprehensions_keep_their_own_accumulators() {
    assert_eq!(
        eval("[1, 2].map(x, [10, 20].map(y, x * y))").expect("evaluates"),
        eval("[[10, 20], [20, 40]]").expect("evaluates")
    );
}

#[test]
fn duplicate_map_keys_are_errors() {
    let error = eval("{'a': 1, 'a': 2}").expect_err("duplicate");
    assert_eq!(error.kind(), &EvalErrorKind::DuplicateKey("\"a\"".into()));
    let error = eval("[1, 1].transformMapEntry(i, v, {v: i})").expect_err("duplicate");
    assert!(matches!(error.kind(), EvalErrorKind::DuplicateKey(_)));
}

#[test]
fn optional_or_value_evaluates_the_default_only_when_needed() {
    assert_eq!(
        eval("optional.of(1).orValue(1 / 0)").expect("lazy"),
        Value::Int(1)
    );
    assert_eq!(
        eval("{'a': 1}.?b.orValue(2)").expect("default"),
        Value::Int(2)
    );
}

#[test]
fn running_out_of_budget_is_never_absorbed_by_a_logical_operator() {
    // Found by the fuzzer: the right side of `&&` ran out of budget, and the left side's error
    // (or a decisive `false`) was returned instead, with the cost past the limit.
    let env = Env::kro();
    for text in [
        "dyn([1]).i == 1 && lists.range(5000).map(v, [v, v]).flatten().size() > 0",
        "lists.range(5000).map(v, [v, v]).flatten().size() > 0 && false",
        "lists.range(5000).map(v, [v, v]).flatten().size() > 0 || true",
    ] {
        let evaluation = env
            .compile(text)
            .expect("compiles")
            .evaluate_with_limit(&crate::NoVariables, Some(1_000));
        assert!(
            matches!(
                evaluation.result.as_ref().map_err(|error| error.kind()),
                Err(crate::EvalErrorKind::CostLimitExceeded { limit: 1_000 })
            ),
            "{text}: {:?}",
            evaluation.result
        );
    }
}
