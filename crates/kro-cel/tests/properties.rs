//! Property tests: no input makes the parser, checker or interpreter panic; printing and
//! re-parsing gives the same tree; checked and unchecked evaluation agree; the static cost
//! estimate bounds the actual cost.

use std::collections::HashMap;

use kro_cel::{
    Env, EvalErrorKind, Expr, ExprId, ExprKind, Key, Map, NoSizeHints, Span, Type, Value,
    estimate_cost, parse, unparse,
};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn env() -> Env {
    Env::kro()
        .with_variable("x", Type::Int)
        .with_variable("y", Type::Double)
        .with_variable("s", Type::String)
        .with_variable("l", Type::list(Type::Int))
        .with_variable("m", Type::map(Type::String, Type::Dyn))
        .with_cost_limit(Some(100_000))
}

fn bindings() -> HashMap<String, Value> {
    let mut map = Map::new();
    map.insert(Key::String("a".into()), Value::Int(1));
    map.insert(Key::String("b".into()), Value::string("two"));
    [
        ("x", Value::Int(7)),
        ("y", Value::Double(2.5)),
        ("s", Value::string("héllo")),
        (
            "l",
            Value::list(vec![Value::Int(3), Value::Int(1), Value::Int(2)]),
        ),
        ("m", Value::Map(map)),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value))
    .collect()
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (0u64..1000).prop_map(|u| format!("{u}u")),
        (-1e6f64..1e6).prop_map(|d| format!("{d:?}")),
        "[a-z .]{0,6}".prop_map(|s| format!("'{s}'")),
        Just("true".to_string()),
        Just("false".to_string()),
        Just("null".to_string()),
        Just("x".to_string()),
        Just("y".to_string()),
        Just("s".to_string()),
        Just("l".to_string()),
        Just("m".to_string()),
        Just("v".to_string()),
        Just("b'a\\x00'".to_string()),
        Just("duration('90s')".to_string()),
        Just("timestamp('2020-01-01T00:00:00Z')".to_string()),
        Just("int".to_string()),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    leaf().prop_recursive(5, 48, 4, |inner| {
        let binary = prop_oneof![
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("%"),
            Just("=="),
            Just("!="),
            Just("<"),
            Just("<="),
            Just(">"),
            Just(">="),
            Just("&&"),
            Just("||"),
            Just("in"),
        ];
        let field = prop_oneof![Just("a"), Just("b"), Just("c")];
        prop_oneof![
            (inner.clone(), binary, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(|entries| {
                let entries: Vec<String> = entries
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                format!("{{{}}}", entries.join(", "))
            }),
            (inner.clone(), field.clone()).prop_map(|(a, f)| format!("({a}).{f}")),
            (inner.clone(), field.clone()).prop_map(|(a, f)| format!("({a}).?{f}")),
            (inner.clone(), field).prop_map(|(a, f)| format!("has(({a}).{f})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})[{b}]")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})[?{b}]")),
            inner.clone().prop_map(|a| format!("size({a})")),
            inner.clone().prop_map(|a| format!("string({a})")),
            inner.clone().prop_map(|a| format!("int({a})")),
            inner.clone().prop_map(|a| format!("type({a})")),
            inner.clone().prop_map(|a| format!("dyn({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).contains({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).orValue({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).all(v, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).exists(v, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).exists_one(v, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).map(v, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}).filter(v, {b})")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("({a}).transformList(i, v, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("cel.bind(v, {a}, {b})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("optional.of({a}).optMap(v, {b})")),
        ]
    })
}

/// A copy with every id and position cleared, to compare trees from different texts.
fn strip(expr: &Expr) -> Expr {
    let mut copy = expr.clone();
    strip_in(&mut copy);
    copy
}

fn strip_in(expr: &mut Expr) {
    expr.id = ExprId::default();
    expr.span = Span::default();
    match &mut expr.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Select(select) => strip_in(&mut select.operand),
        ExprKind::Call(call) => {
            if let Some(target) = &mut call.target {
                strip_in(target);
            }
            call.args.iter_mut().for_each(strip_in);
        }
        ExprKind::List(list) => list.elements.iter_mut().for_each(strip_in),
        ExprKind::Map(map) => {
            for entry in &mut map.entries {
                entry.id = ExprId::default();
                entry.span = Span::default();
                strip_in(&mut entry.key);
                strip_in(&mut entry.value);
            }
        }
        ExprKind::Struct(object) => {
            for field in &mut object.fields {
                field.id = ExprId::default();
                field.span = Span::default();
                strip_in(&mut field.value);
            }
        }
        ExprKind::Comprehension(comprehension) => {
            strip_in(&mut comprehension.iter_range);
            strip_in(&mut comprehension.accu_init);
            strip_in(&mut comprehension.loop_condition);
            strip_in(&mut comprehension.loop_step);
            strip_in(&mut comprehension.result);
        }
    }
}

fn assert_not_internal(result: &Result<Value, kro_cel::EvalError>, text: &str) {
    if let Err(error) = result {
        assert!(
            !matches!(error.kind(), EvalErrorKind::Internal(_)),
            "{text}: internal error {error}"
        );
    }
}

/// 300 cases from a fixed seed, so every run (CI's included) tries the same expressions; set
/// `PROPTEST_RNG_SEED=<number>` to explore others, and add what fails to the regressions file.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(300);
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x006b_726f_5f63_656c);
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_parser_never_panics_on_arbitrary_text(text in "\\PC{0,120}") {
        let _ = parse(&text);
    }

    #[test]
    fn the_parser_never_panics_on_token_soup(tokens in prop::collection::vec(
        prop_oneof![
            Just("("), Just(")"), Just("["), Just("]"), Just("{"), Just("}"), Just("."), Just(".?"),
            Just(","), Just(":"), Just("?"), Just("!"), Just("-"), Just("+"), Just("=="), Just("&&"),
            Just("||"), Just("in"), Just("x"), Just("1"), Just("1u"), Just("1.5"), Just("'s'"),
            Just("b'\\x00'"), Just("r'\\d'"), Just("'''t'''"), Just("has"), Just("all"), Just("map"),
            Just("cel.bind"), Just("`k-1`"), Just("null"), Just("if"),
        ],
        0..40,
    )) {
        let text = tokens.join(" ");
        let _ = parse(&text);
    }

    #[test]
    fn printing_and_reparsing_gives_the_same_tree(text in expression()) {
        let ast = parse(&text).expect("generated expressions are valid syntax");
        let printed = unparse(&ast);
        let reparsed = parse(&printed).unwrap_or_else(|error| panic!("{printed}: {error}"));
        prop_assert_eq!(strip(&ast.expr), strip(&reparsed.expr), "{} printed as {}", text, printed);
    }

    #[test]
    fn checked_and_unchecked_evaluation_agree(text in expression()) {
        let env = env();
        let bindings = bindings();
        let ast = env.parse(&text).expect("generated expressions are valid syntax");
        let unchecked = env.program_unchecked(&ast).evaluate(&bindings);
        assert_not_internal(&unchecked, &text);
        if let Ok(checked) = env.check(&ast) {
            let program = env.program(&checked);
            let evaluation = program.evaluate_with_limit(&bindings, Some(100_000));
            assert_not_internal(&evaluation.result, &text);
            match (&evaluation.result, &unchecked) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", text),
                (Err(a), Err(b)) => prop_assert_eq!(a.kind(), b.kind(), "{}", text),
                (a, b) => prop_assert!(false, "{}: checked {:?} but unchecked {:?}", text, a, b),
            }
            let estimate = estimate_cost(&checked, &NoSizeHints);
            if evaluation.result.is_ok() {
                prop_assert!(estimate.min <= evaluation.cost, "{}: min {} > cost {}", text, estimate.min, evaluation.cost);
            }
            if let Some(max) = estimate.max {
                prop_assert!(evaluation.cost <= max, "{}: cost {} > max {}", text, evaluation.cost, max);
            }
        }
    }
}
