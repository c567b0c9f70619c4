//! Property tests: no input makes the parser, checker or interpreter panic; printing and
//! re-parsing gives the same tree; checked and unchecked evaluation agree; the static cost
//! estimate bounds the actual cost.
//!
//! The fuzzing part generates expressions from the library's functions (regexes, string
//! functions, list and map building, shared values) and mutations of them, and runs each
//! through parse, check, cost estimate and evaluation under a small budget: no panic, no
//! internal error, every evaluation ends within its budget with a value or a typed error,
//! and one whose estimate is under the budget never runs out of it. The checked-in corpus
//! (`testdata/fuzz/corpus.cel`) runs through the same pipeline.

use std::collections::HashMap;

use kro_cel::{
    Env, EvalErrorKind, Evaluation, Expr, ExprId, ExprKind, Key, Map, NoSizeHints, Span, Type,
    Value, estimate_cost, parse, unparse,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{RngSeed, TestCaseError};

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
    config_with(300)
}

/// `cases` cases from the fixed seed unless `PROPTEST_RNG_SEED` (or `PROPTEST_CASES`) says
/// otherwise.
fn config_with(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if std::env::var_os("PROPTEST_CASES").is_some() {
        config.cases = ProptestConfig::default().cases;
    }
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x006b_726f_5f63_656c);
    }
    config
}

/// The budget of fuzzed evaluations: small, so that a case stays quick in a debug build, and
/// large enough that the adversarial shapes reach it.
const FUZZ_LIMIT: u64 = 20_000;

/// The sizes of the bound variables, so that estimates over them can be bounded.
fn hints() -> HashMap<String, u64> {
    [("s", 6), ("l", 3), ("m", 2)]
        .into_iter()
        .map(|(path, size)| (path.to_string(), size))
        .collect()
}

/// Checks one evaluation against its budget: a value costs at most the budget, and running
/// out of it means having spent more.
fn check_budget(evaluation: &Evaluation, limit: u64, text: &str) -> Result<(), TestCaseError> {
    assert_not_internal(&evaluation.result, text);
    match &evaluation.result {
        Err(error) if matches!(error.kind(), EvalErrorKind::CostLimitExceeded { .. }) => {
            prop_assert!(
                evaluation.cost > limit,
                "{}: cost error at {}",
                text,
                evaluation.cost
            );
        }
        _ => prop_assert!(
            evaluation.cost <= limit,
            "{}: cost {} past the budget",
            text,
            evaluation.cost
        ),
    }
    Ok(())
}

/// Runs `text` through the whole pipeline under `limit` and checks every property.
fn run_pipeline(env: &Env, text: &str, limit: u64) -> Result<(), TestCaseError> {
    let bindings = bindings();
    let Ok(ast) = env.parse(text) else {
        return Ok(());
    };
    let unchecked = env
        .program_unchecked(&ast)
        .evaluate_with_limit(&bindings, Some(limit));
    check_budget(&unchecked, limit, text)?;
    let Ok(checked) = env.check(&ast) else {
        return Ok(());
    };
    let estimate = estimate_cost(&checked, &hints());
    let evaluation = env
        .program(&checked)
        .evaluate_with_limit(&bindings, Some(limit));
    check_budget(&evaluation, limit, text)?;
    if evaluation.result.is_ok() {
        prop_assert!(
            estimate.min <= evaluation.cost,
            "{}: estimated at least {}, cost {}",
            text,
            estimate.min,
            evaluation.cost
        );
    }
    if let Some(max) = estimate.max {
        prop_assert!(
            evaluation.cost <= max,
            "{}: estimated at most {}, cost {}",
            text,
            max,
            evaluation.cost
        );
    }
    Ok(())
}

fn string_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c ,é]{0,5}".prop_map(|s| format!("'{s}'")),
        Just("s".to_string()),
        Just("''".to_string()),
        Just("'aaaaaaaaaaaaaaaa'".to_string()),
        Just("string(x)".to_string()),
    ]
}

fn pattern_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("'a+'".to_string()),
        Just("''".to_string()),
        Just("'(a{0,100}){0,50}'".to_string()),
        Just("'\\\\w+'".to_string()),
        Just("'['".to_string()),
        Just("'(a|b)*c'".to_string()),
        Just("'((a{0,100}){0,100}){0,100}'".to_string()),
        string_leaf(),
    ]
}

fn number_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (-3i64..40).prop_map(|n| n.to_string()),
        Just("x".to_string()),
        (0i64..3000).prop_map(|n| n.to_string()),
    ]
}

/// Generators of expressions of one type each, built level by level so that each level's
/// expressions take arguments of the right types from the level below.
#[derive(Clone)]
struct Typed {
    string: BoxedStrategy<String>,
    int: BoxedStrategy<String>,
    ints: BoxedStrategy<String>,
    strings: BoxedStrategy<String>,
    boolean: BoxedStrategy<String>,
}

impl Typed {
    fn leaves() -> Typed {
        Typed {
            string: string_leaf().boxed(),
            int: number_leaf().boxed(),
            ints: prop_oneof![
                number_leaf().prop_map(|n| format!("lists.range({n})")),
                Just("l".to_string()),
                Just("[1, 2, 3]".to_string()),
                Just("[]".to_string()),
            ]
            .boxed(),
            strings: prop_oneof![
                Just("['b', 'a']".to_string()),
                string_leaf().prop_map(|s| format!("[{s}]")),
                Just("m.map(k, k)".to_string()),
            ]
            .boxed(),
            boolean: prop_oneof![Just("true".to_string()), Just("x > 3".to_string())].boxed(),
        }
    }

    /// The next level: functions of the library over this level's expressions.
    fn next(&self) -> Typed {
        let Typed {
            string: s,
            int: i,
            ints: l,
            strings: ls,
            boolean: b,
        } = self.clone();
        let p = pattern_leaf;
        let string = prop_oneof![
            s.clone(),
            s.clone()
                .prop_map(|a| format!("{a}.lowerAscii().upperAscii().trim()")),
            s.clone().prop_map(|a| format!("{a}.reverse()")),
            s.clone().prop_map(|a| format!("strings.quote({a})")),
            (s.clone(), s.clone(), s.clone())
                .prop_map(|(a, b, c)| format!("{a}.replace({b}, {c})")),
            (ls.clone(), s.clone()).prop_map(|(a, b)| format!("{a}.join({b})")),
            (s.clone(), i.clone()).prop_map(|(a, n)| format!("{a}.substring({n})")),
            (s.clone(), i.clone()).prop_map(|(a, n)| format!("{a}.charAt({n})")),
            (s.clone(), s.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            (s.clone(), i.clone(), l.clone())
                .prop_map(|(a, n, c)| format!("'%s %d %s'.format([{a}, {n}, {c}])")),
            (s.clone(), p()).prop_map(|(a, p)| format!("{a}.find({p})")),
            l.clone().prop_map(|a| format!("json.marshal({a})")),
            i.clone().prop_map(|n| format!("string({n})")),
            s.clone()
                .prop_map(|a| format!("cel.bind(v, {a}, v + v + v + v)")),
            (b.clone(), s.clone(), s.clone()).prop_map(|(c, a, d)| format!("({c} ? {a} : {d})")),
        ]
        .boxed();
        let int = prop_oneof![
            i.clone(),
            s.clone().prop_map(|a| format!("size({a})")),
            (s.clone(), s.clone()).prop_map(|(a, b)| format!("{a}.indexOf({b})")),
            (i.clone(), i.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            l.clone().prop_map(|a| format!("size({a})")),
            l.clone().prop_map(|a| format!("{a}.sum()")),
            (l.clone(), i.clone()).prop_map(|(a, n)| format!("{a}.indexOf({n})")),
        ]
        .boxed();
        let ints = prop_oneof![
            l.clone(),
            i.clone().prop_map(|n| format!("lists.range({n})")),
            (i.clone(), i.clone()).prop_map(|(a, n)| format!("[{a}, {n}]")),
            (l.clone(), l.clone()).prop_map(|(a, c)| format!("({a} + {c})")),
            l.clone().prop_map(|a| format!("{a}.map(v, v * 2)")),
            (l.clone(), i.clone()).prop_map(|(a, n)| format!("{a}.filter(v, v > {n})")),
            l.clone().prop_map(|a| format!("{a}.sort()")),
            l.clone().prop_map(|a| format!("{a}.distinct()")),
            l.clone().prop_map(|a| format!("{a}.sortBy(v, -v)")),
            l.clone().prop_map(|a| format!("[{a}, {a}].flatten()")),
            l.clone()
                .prop_map(|a| format!("cel.bind(v, {a}, [v, v, v, v].flatten())")),
            l.clone()
                .prop_map(|a| format!("{a}.map(v, [v, v]).flatten()")),
            ls.clone().prop_map(|a| format!("{a}.map(v, size(v))")),
        ]
        .boxed();
        let strings = prop_oneof![
            ls.clone(),
            (s.clone(), s.clone()).prop_map(|(a, b)| format!("{a}.split({b})")),
            (s.clone(), p(), i.clone()).prop_map(|(a, p, n)| format!("{a}.findAll({p}, {n})")),
            (ls.clone(), s.clone()).prop_map(|(a, b)| format!("{a}.map(v, v + {b})")),
            ls.clone().prop_map(|a| format!("{a}.sort()")),
            ls.clone().prop_map(|a| format!("{a}.distinct()")),
            (s.clone(), s.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
            l.clone().prop_map(|a| format!("{a}.map(v, string(v))")),
            l.clone()
                .prop_map(|a| format!("{a}.transformMapEntry(k, v, {{string(k): v}}).map(k, k)")),
        ]
        .boxed();
        let boolean = prop_oneof![
            b.clone(),
            (s.clone(), p()).prop_map(|(a, p)| format!("{a}.matches({p})")),
            (s.clone(), s.clone()).prop_map(|(a, c)| format!("{a}.contains({c})")),
            (s.clone(), s.clone()).prop_map(|(a, c)| format!("({a} < {c})")),
            (l.clone(), l.clone()).prop_map(|(a, c)| format!("({a} == {c})")),
            (l.clone(), l.clone()).prop_map(|(a, c)| format!("([{a}, {a}] == [{c}, {c}])")),
            (ls.clone(), ls.clone()).prop_map(|(a, c)| format!("({a} == {c})")),
            (s.clone(), l.clone(), s.clone(), l.clone())
                .prop_map(|(k, a, j, c)| format!("({{{k}: {a}}} == {{{j}: {c}}})")),
            (i.clone(), l.clone()).prop_map(|(n, a)| format!("({n} in {a})")),
            (l.clone(), l.clone()).prop_map(|(a, c)| format!("([{a}] in [[], {c}])")),
            (s.clone(), ls.clone()).prop_map(|(a, c)| format!("({a} in {c})")),
            (s.clone(), s.clone()).prop_map(|(a, c)| format!("({a} in {{{c}: 1}})")),
            (l.clone(), l.clone()).prop_map(|(a, c)| format!("sets.contains({a}, {c})")),
            (l.clone(), b.clone()).prop_map(|(a, c)| format!("{a}.all(v, {c})")),
            (ls.clone(), p()).prop_map(|(a, p)| format!("{a}.exists(v, v.matches({p}))")),
            l.clone().prop_map(|a| format!("{a}.isSorted()")),
            ls.clone().prop_map(|a| format!("{a}.isSorted()")),
            (b.clone(), b.clone()).prop_map(|(a, c)| format!("({a} && {c})")),
        ]
        .boxed();
        Typed {
            string,
            int,
            ints,
            strings,
            boolean,
        }
    }
}

/// Expressions built from the library's functions, three levels deep, well typed by
/// construction.
fn library_expression() -> impl Strategy<Value = String> {
    let top = Typed::leaves().next().next().next();
    prop_oneof![top.string, top.int, top.ints, top.strings, top.boolean]
}

/// A mutation of an expression's text: a slice deleted, a slice repeated, or a token
/// inserted, at code-point positions.
fn mutate(text: &str, kind: u8, first: Index, second: Index, token: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return token.to_string();
    }
    let (a, b) = {
        let (a, b) = (first.index(chars.len()), second.index(chars.len()));
        (a.min(b), a.max(b))
    };
    let piece = |range: std::ops::Range<usize>| chars[range].iter().collect::<String>();
    match kind % 3 {
        0 => piece(0..a) + &piece(b..chars.len()),
        1 => piece(0..b) + &piece(a..b) + &piece(b..chars.len()),
        _ => piece(0..a) + token + &piece(a..chars.len()),
    }
}

fn token() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("("),
        Just(")"),
        Just("["),
        Just("]"),
        Just("{"),
        Just("}"),
        Just("."),
        Just(","),
        Just("'"),
        Just("\\"),
        Just("?"),
        Just(":"),
        Just("+"),
        Just("=="),
        Just("!"),
        Just("1"),
        Just("'x'"),
        Just("v"),
        Just(".all(v, "),
        Just("cel.bind(v, "),
        Just("lists.range(100000)"),
        Just("{'a': 1}"),
        Just("[?"),
        Just("`"),
    ]
}

/// Runs every line of the checked-in corpus that is not a comment through the pipeline
/// under `limit`.
fn run_corpus(limit: u64) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/fuzz/corpus.cel");
    let corpus = std::fs::read_to_string(path).expect("the corpus is checked in");
    let env = env();
    let mut cases = 0;
    for line in corpus.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        cases += 1;
        if let Err(failure) = run_pipeline(&env, line, limit) {
            panic!("corpus case failed: {failure}");
        }
    }
    assert!(cases >= 50, "the corpus has {cases} cases");
}

#[test]
fn corpus_runs_through_the_pipeline_under_a_small_budget() {
    run_corpus(FUZZ_LIMIT);
}

#[test]
fn corpus_runs_through_the_pipeline_under_the_default_budget() {
    run_corpus(kro_cel::DEFAULT_COST_LIMIT);
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

proptest! {
    #![proptest_config(config_with(200))]

    #[test]
    fn library_expressions_end_within_their_budget(text in library_expression()) {
        run_pipeline(&env(), &text, FUZZ_LIMIT)?;
    }

    #[test]
    fn mutated_expressions_end_within_their_budget(
        text in library_expression(),
        kind in any::<u8>(),
        first in any::<Index>(),
        second in any::<Index>(),
        token in token(),
    ) {
        let mutated = mutate(&text, kind, first, second, token);
        run_pipeline(&env(), &mutated, FUZZ_LIMIT)?;
    }
}
