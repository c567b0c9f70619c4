use std::sync::Arc;

use crate::{
    CompileError, Env, EvalError, EvalErrorKind, NoVariables, Program, Type, TypeErrorKind, Value,
};

fn env() -> Env {
    Env::standard().with_library(super::library())
}

fn compile(text: &str) -> Program {
    env()
        .compile(text)
        .unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn eval(text: &str) -> Value {
    compile(text)
        .evaluate(&NoVariables)
        .unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn eval_error(text: &str) -> EvalError {
    match compile(text).evaluate(&NoVariables) {
        Ok(value) => panic!("{text}: expected an error, got {value}"),
        Err(error) => error,
    }
}

fn list(items: &[&str]) -> Value {
    Value::list(items.iter().map(|item| Value::string(item)).collect())
}

/// Asserts each expression evaluates to the expected value.
fn assert_values(cases: &[(&str, Value)]) {
    for (text, expected) in cases {
        assert_eq!(&eval(text), expected, "{text}");
    }
}

/// Asserts each expression fails with an `InvalidArgument` error from the named function.
fn assert_invalid_arguments(cases: &[(&str, &str)]) {
    for (text, function) in cases {
        let error = eval_error(text);
        assert!(
            matches!(error.kind(), EvalErrorKind::InvalidArgument { function: f, .. } if f == function),
            "{text}: {error:?}"
        );
        assert!(!error.is_pending(), "{text}: must not read as pending data");
    }
}

#[test]
fn char_at_counts_code_points_and_allows_the_end() {
    assert_values(&[
        ("'tacocat'.charAt(3)", Value::string("o")),
        ("'tacocat'.charAt(7)", Value::string("")),
        ("'©αT'.charAt(1)", Value::string("α")),
        ("''.charAt(0)", Value::string("")),
    ]);
}

#[test]
fn index_of_searches_from_an_optional_code_point_offset() {
    assert_values(&[
        ("'tacocat'.indexOf('')", Value::Int(0)),
        ("'tacocat'.indexOf('ac')", Value::Int(1)),
        ("'tacocat'.indexOf('none')", Value::Int(-1)),
        ("'tacocat'.indexOf('', 3)", Value::Int(3)),
        ("'tacocat'.indexOf('', 7)", Value::Int(7)),
        ("'tacocat'.indexOf('a', 3)", Value::Int(5)),
        ("'tacocat'.indexOf('a', 7)", Value::Int(-1)),
        ("'ta©o©αT'.indexOf('©', 3)", Value::Int(4)),
        ("'ta©o©αT'.indexOf('©αT', 3)", Value::Int(4)),
        ("'ta©o©αT'.indexOf('©α', 5)", Value::Int(-1)),
        ("'ab'.indexOf('abc')", Value::Int(-1)),
    ]);
}

#[test]
fn last_index_of_finds_the_last_match_starting_at_or_before_the_offset() {
    assert_values(&[
        ("''.lastIndexOf('@@')", Value::Int(-1)),
        ("'tacocat'.lastIndexOf('')", Value::Int(7)),
        ("'tacocat'.lastIndexOf('at')", Value::Int(5)),
        ("'tacocat'.lastIndexOf('', 3)", Value::Int(3)),
        ("'tacocat'.lastIndexOf('a', 3)", Value::Int(1)),
        ("'tacocat'.lastIndexOf('t', 7)", Value::Int(6)),
        ("'ta©o©αT'.lastIndexOf('©')", Value::Int(4)),
        ("'ta©o©αT'.lastIndexOf('©', 3)", Value::Int(2)),
        ("'ta©o©αT'.lastIndexOf('©α', 4)", Value::Int(4)),
        ("'bananananana'.lastIndexOf('nana', 7)", Value::Int(6)),
        ("'hello wello'.lastIndexOf('hello wello')", Value::Int(0)),
        ("'ab'.lastIndexOf('abc', 1)", Value::Int(-1)),
    ]);
}

#[test]
fn ascii_casing_leaves_other_code_points_alone() {
    assert_values(&[
        ("'TacoCÆt Xii'.lowerAscii()", Value::string("tacocÆt xii")),
        ("'tacoCαt'.upperAscii()", Value::string("TACOCαT")),
        ("''.upperAscii()", Value::string("")),
    ]);
}

#[test]
fn replace_honours_the_limit_and_the_empty_pattern() {
    assert_values(&[
        (
            "'hello hello'.replace('he', 'we')",
            Value::string("wello wello"),
        ),
        (
            "'hello hello'.replace('he', 'we', -1)",
            Value::string("wello wello"),
        ),
        (
            "'hello hello'.replace('he', 'we', 1)",
            Value::string("wello hello"),
        ),
        (
            "'hello hello'.replace('he', 'we', 0)",
            Value::string("hello hello"),
        ),
        ("'abc'.replace('', '_')", Value::string("_a_b_c_")),
        ("'abc'.replace('', '_', 2)", Value::string("_a_bc")),
        ("'hello'.replace('h', '')", Value::string("ello")),
        (
            "'1 ©αT taco'.replace('αT', 'o©α')",
            Value::string("1 ©o©α taco"),
        ),
        ("'none'.replace('x', 'y')", Value::string("none")),
    ]);
}

#[test]
fn split_honours_the_limit_and_the_empty_separator() {
    assert_values(&[
        ("'a b c'.split(' ')", list(&["a", "b", "c"])),
        ("'a b c'.split(' ', 0)", list(&[])),
        ("'a b c'.split(' ', 1)", list(&["a b c"])),
        ("'a b c'.split(' ', 2)", list(&["a", "b c"])),
        ("'a b c'.split(' ', -1)", list(&["a", "b", "c"])),
        ("'o©o©o'.split('©')", list(&["o", "o", "o"])),
        ("'a,'.split(',')", list(&["a", ""])),
        ("''.split(',')", list(&[""])),
        ("'a©c'.split('')", list(&["a", "©", "c"])),
        ("'a©c'.split('', 2)", list(&["a", "©c"])),
        ("''.split('')", list(&[])),
    ]);
}

#[test]
fn substring_takes_code_point_ranges() {
    assert_values(&[
        ("'tacocat'.substring(4)", Value::string("cat")),
        ("'tacocat'.substring(7)", Value::string("")),
        ("'tacocat'.substring(0, 4)", Value::string("taco")),
        ("'tacocat'.substring(4, 4)", Value::string("")),
        ("'ta©o©αT'.substring(2, 6)", Value::string("©o©α")),
        ("'ta©o©αT'.substring(7, 7)", Value::string("")),
    ]);
}

#[test]
fn trim_removes_unicode_white_space_but_not_zero_width_characters() {
    assert_values(&[
        ("' \\f\\n\\r\\t\\vtext  '.trim()", Value::string("text")),
        (
            "'\\u0085\\u00a0\\u1680text\\u3000'.trim()",
            Value::string("text"),
        ),
        (
            "'\\u180etext\\u200b'.trim()",
            Value::string("\u{180e}text\u{200b}"),
        ),
    ]);
}

#[test]
fn reverse_reverses_code_points() {
    assert_values(&[
        ("''.reverse()", Value::string("")),
        ("'Ta©oCαt'.reverse()", Value::string("tαCo©aT")),
    ]);
}

#[test]
fn join_concatenates_with_an_optional_separator() {
    assert_values(&[
        ("['x', 'y'].join()", Value::string("xy")),
        ("['x', 'y'].join('-')", Value::string("x-y")),
        ("['x'].join('-')", Value::string("x")),
        ("[].join('-')", Value::string("")),
    ]);
}

#[test]
fn quote_escapes_what_cel_string_literals_escape() {
    assert_values(&[
        ("strings.quote('verbatim')", Value::string("\"verbatim\"")),
        ("strings.quote('')", Value::string("\"\"")),
        (
            "strings.quote('\\a\\b\\f\\n\\r\\t\\v')",
            Value::string("\"\\a\\b\\f\\n\\r\\t\\v\""),
        ),
        (
            "strings.quote('say \"hi\" \\\\o/')",
            Value::string("\"say \\\"hi\\\" \\\\o/\""),
        ),
        ("strings.quote('ta©o😀')", Value::string("\"ta©o😀\"")),
    ]);
}

#[test]
fn format_substitutes_each_verb() {
    assert_values(&[
        ("'%% and %s%%'.format(['x'])", Value::string("% and x%")),
        ("'%d %d'.format([-7, 7u])", Value::string("-7 7")),
        ("'%d'.format([3.25])", Value::string("3.25")),
        ("'%f'.format([2])", Value::string("2.000000")),
        ("'%.3f'.format([1.2345])", Value::string("1.234")),
        ("'%.0f %.0f'.format([2.5, 3.5])", Value::string("2 4")),
        ("'%.2f'.format([-0.0])", Value::string("-0.00")),
        (
            "'%e'.format([1052.032911275])",
            Value::string("1.052033e+03"),
        ),
        ("'%.1e'.format([-3.14])", Value::string("-3.1e+00")),
        ("'%e'.format([1e300])", Value::string("1.000000e+300")),
        ("'%e'.format([1.5e-7])", Value::string("1.500000e-07")),
        (
            "'%b %b %b'.format([5, -5, true])",
            Value::string("101 -101 1"),
        ),
        ("'%o %o'.format([-8, 8u])", Value::string("-10 10")),
        ("'%x %X'.format([-30, 30u])", Value::string("-1e 1E")),
        ("'%x'.format(['Hi'])", Value::string("4869")),
        ("'%X'.format([b'\\xff\\x01'])", Value::string("FF01")),
        (
            "'%f %e %d'.format([double('NaN'), double('Infinity'), double('-Infinity')])",
            Value::string("NaN Infinity -Infinity"),
        ),
        (
            "'%.3s'.format(['precision is ignored'])",
            Value::string("precision is ignored"),
        ),
        ("'héllo %s'.format(['wörld'])", Value::string("héllo wörld")),
    ]);
}

#[test]
fn format_s_renders_every_kind_of_value() {
    assert_values(&[
        ("'%s'.format([null])", Value::string("null")),
        ("'%s %s'.format([true, 1u])", Value::string("true 1")),
        (
            "'%s'.format([1e21])",
            Value::string("1000000000000000000000"),
        ),
        ("'%s'.format([1.5e-7])", Value::string("0.00000015")),
        ("'%s'.format([b'xyz'])", Value::string("xyz")),
        (
            "'%s'.format([b'a\\xff\\xfeb'])",
            Value::string("a\u{fffd}b"),
        ),
        (
            "'%s'.format([duration('1h45m47s')])",
            Value::string("6347s"),
        ),
        ("'%s'.format([duration('-1.5s')])", Value::string("-1.5s")),
        (
            "'%s'.format([timestamp('2023-02-03T23:31:20.5+01:00')])",
            Value::string("2023-02-03T22:31:20.5Z"),
        ),
        ("'%s'.format([type(1)])", Value::string("int")),
        (
            "'%s'.format([[1, 'a', [2.5, null]]])",
            Value::string("[1, a, [2.5, null]]"),
        ),
        (
            "'%s'.format([{'b': [1], 'a': {2: 'x'}, 10: true}])",
            Value::string("{10: true, a: {2: x}, b: [1]}"),
        ),
    ]);
}

#[test]
fn out_of_range_indexes_are_invalid_arguments() {
    assert_invalid_arguments(&[
        ("'tacocat'.charAt(8)", "charAt"),
        ("'tacocat'.charAt(-1)", "charAt"),
        ("'tacocat'.indexOf('a', 30)", "indexOf"),
        ("'tacocat'.indexOf('', -1)", "indexOf"),
        ("'tacocat'.lastIndexOf('a', -1)", "lastIndexOf"),
        ("'tacocat'.lastIndexOf('', 8)", "lastIndexOf"),
        ("'tacocat'.substring(40)", "substring"),
        ("'tacocat'.substring(-1)", "substring"),
        ("'tacocat'.substring(1, 50)", "substring"),
        ("'tacocat'.substring(4, 3)", "substring"),
        ("'©'.substring(2)", "substring"),
    ]);
}

#[test]
fn malformed_format_clauses_and_wrong_arguments_are_invalid_arguments() {
    assert_invalid_arguments(&[
        ("'%a'.format([1])", "format"),
        ("'%E'.format([1.0])", "format"),
        ("'%d %d'.format([1])", "format"),
        ("'%'.format([1])", "format"),
        ("'%.3'.format([1.0])", "format"),
        ("'%.f'.format([1.0])", "format"),
        ("'%.101f'.format([1.0])", "format"),
        ("'%.99999999999999999999f'.format([1.0])", "format"),
        ("'%b'.format(['abc'])", "format"),
        ("'%d'.format([duration('1s')])", "format"),
        ("'%d'.format([true])", "format"),
        ("'%o'.format([1.0])", "format"),
        ("'%x'.format([0.5])", "format"),
        ("'%f'.format([null])", "format"),
        ("'%e'.format(['1'])", "format"),
        ("'%s'.format([optional.of(1)])", "format"),
        ("'%s'.format([[1, optional.none()]])", "format"),
        ("'%s'.format([{'k': optional.none()}])", "format"),
    ]);
}

#[test]
fn wrong_argument_types_are_rejected_at_check_time() {
    let cases = [
        ("42.charAt(2)", "charAt"),
        ("'hello'.charAt(true)", "charAt"),
        ("'42'.indexOf(4, 0)", "indexOf"),
        ("'42'.indexOf('4', 0, 1)", "indexOf"),
        ("'42'.lastIndexOf(4)", "lastIndexOf"),
        ("1.lowerAscii()", "lowerAscii"),
        ("b'x'.upperAscii()", "upperAscii"),
        ("'42'.replace(2, 1)", "replace"),
        ("'42'.replace('2', '1', '1')", "replace"),
        ("'42'.split(2)", "split"),
        ("'42'.split('2', 1, 1)", "split"),
        ("'tacocat'.substring(0, false)", "substring"),
        ("'x'.trim(1)", "trim"),
        ("[1, 2].join()", "join"),
        ("['a'].join(1)", "join"),
        ("strings.quote(1)", "strings.quote"),
        ("1.reverse()", "reverse"),
        ("'%s'.format('x')", "format"),
        ("1.format([])", "format"),
    ];
    for (text, function) in cases {
        let error = env().compile(text).expect_err(text);
        let CompileError::Check(diagnostics) = error else {
            panic!("{text}: expected a check error, got {error:?}");
        };
        assert!(
            diagnostics.issues.iter().any(|issue| matches!(
                &issue.kind,
                TypeErrorKind::NoMatchingOverload { function: f, .. } if f == function
            )),
            "{text}: {diagnostics:?}"
        );
    }
}

#[test]
fn unchecked_calls_with_wrong_types_have_no_such_overload() {
    let env = env();
    for text in [
        "42.charAt(2)",
        "'42'.indexOf('4', '0')",
        "'42'.replace('2', 1, 1)",
        "30.substring(true, 3)",
        "[1, 2].join()",
        "['a', 1].join('-')",
    ] {
        let ast = env.parse(text).expect(text);
        let error = env
            .program_unchecked(&ast)
            .evaluate(&NoVariables)
            .expect_err(text);
        assert!(
            matches!(error.kind(), EvalErrorKind::NoSuchOverload { .. }),
            "{text}: {error:?}"
        );
    }
}

#[test]
fn results_have_the_declared_types() {
    let cases = [
        ("'a'.split(',')", Type::list(Type::String)),
        ("['a'].join()", Type::String),
        ("'a'.indexOf('a')", Type::Int),
        ("'%s'.format([1, 'a'])", Type::String),
    ];
    for (text, expected) in cases {
        assert_eq!(compile(text).output_type(), Some(&expected), "{text}");
    }
}

/// The cost of evaluating `text` with `s` bound to a string of `size` bytes.
fn cost_with_string_of(text: &str, size: usize) -> u64 {
    let env = env().with_variable("s", Type::String);
    let program = env.compile(text).expect(text);
    let s = Value::String(Arc::from("a".repeat(size)));
    let evaluation = program.evaluate_with_limit(&[("s", s)], None);
    assert!(evaluation.result.is_ok(), "{text}: {:?}", evaluation.result);
    evaluation.cost
}

#[test]
fn cost_grows_with_the_length_of_the_string() {
    for text in [
        "s.charAt(0)",
        "s.indexOf('b')",
        "s.lastIndexOf('b')",
        "s.lowerAscii()",
        "s.upperAscii()",
        "s.replace('a', 'b')",
        "s.split('a')",
        "s.substring(1)",
        "s.trim()",
        "s.reverse()",
        "strings.quote(s)",
        "[s, s].join('-')",
        "'%s'.format([s])",
    ] {
        let small = cost_with_string_of(text, 10);
        let large = cost_with_string_of(text, 10_000);
        assert!(
            large >= small + 900,
            "{text}: cost {small} for 10 bytes, {large} for 10000"
        );
    }
}

#[test]
fn results_far_larger_than_the_input_run_out_of_budget_before_they_are_built() {
    let env = env()
        .with_variable("s", Type::String)
        .with_variable("l", Type::list(Type::Dyn))
        .with_cost_limit(Some(100_000));
    let s = Value::String(Arc::from("a".repeat(10_000)));
    // 100 references to one list of 100 copies of a 10 kB string: about 100 MB as text.
    let inner = Value::list(vec![s.clone(); 100]);
    let l = Value::list(vec![inner; 100]);
    for text in [
        "s.replace('', s)",
        "'%s'.format([l])",
        "l.map(x, s).join(s)",
    ] {
        let program = env.compile(text).expect(text);
        let error = program
            .evaluate(&[("s", s.clone()), ("l", l.clone())])
            .expect_err(text);
        assert!(
            matches!(error.kind(), EvalErrorKind::CostLimitExceeded { .. }),
            "{text}: {error:?}"
        );
    }
}

#[test]
fn splitting_charges_for_each_piece_created() {
    // Found by the adversarial bench: splitting 1 MB into single characters made a million
    // strings for 0.2 units each (110 ms on the default budget).
    // The call, reading the text twice, and a thousand pieces at two units each.
    assert_eq!(
        cost_with_string_of("s.split('')", 1000),
        1 + 100 + 100 + 2000
    );
    assert_eq!(cost_with_string_of("s.split('b')", 1000), 1 + 101 + 100 + 2);
}
