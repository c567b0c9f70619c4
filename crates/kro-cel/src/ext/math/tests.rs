use crate::error::{EvalErrorKind, TypeErrorKind};
use crate::ext::testing::{
    ErrorCheck, assert_errors, check_error, cost_with_input, env, error, is_invalid_argument,
    is_no_such_overload, output_type, value,
};
use crate::{Env, Type, Value};

fn math() -> Env {
    env(super::library())
}

fn assert_values(cases: &[(&str, Value)]) {
    let env = math();
    for (text, expected) in cases {
        assert_eq!(&value(&env, text), expected, "{text}");
    }
}

#[test]
fn greatest_and_least_pick_by_numeric_value_and_keep_the_winner_type() {
    assert_values(&[
        ("math.greatest(-5)", Value::Int(-5)),
        ("math.greatest(5u)", Value::Uint(5)),
        ("math.greatest(1, 2)", Value::Int(2)),
        ("math.greatest(1, 2u)", Value::Uint(2)),
        ("math.greatest(3u, 2.5)", Value::Uint(3)),
        ("math.greatest(1, 1.0)", Value::Int(1)),
        ("math.greatest(1.0, 1)", Value::Double(1.0)),
        ("math.greatest(-3, 3u)", Value::Uint(3)),
        ("math.greatest(1, 2, 3.5, 0u)", Value::Double(3.5)),
        ("math.greatest([1, 7, 3])", Value::Int(7)),
        (
            "math.greatest([dyn(5.4), dyn(10u), dyn(3)])",
            Value::Uint(10),
        ),
        ("math.least(-5.5)", Value::Double(-5.5)),
        ("math.least(5, -7)", Value::Int(-7)),
        ("math.least(1u, 1)", Value::Uint(1)),
        ("math.least(5.4, 10, 3u, -5.0)", Value::Double(-5.0)),
        ("math.least([5.4, 10u, 1u, 3.5])", Value::Uint(1)),
        ("math.least(-9223372036854775808, 1)", Value::Int(i64::MIN)),
        (
            "math.greatest(18446744073709551615u, 1)",
            Value::Uint(u64::MAX),
        ),
    ]);
}

#[test]
fn greatest_and_least_reject_empty_lists_nan_and_non_numbers() {
    let env = math();
    let cases: &[(&str, ErrorCheck)] = &[
        ("math.greatest(dyn([]))", is_invalid_argument),
        ("math.least(dyn([]))", is_invalid_argument),
        ("math.greatest(1.0, 0.0 / 0.0)", is_invalid_argument),
        ("math.least([1, 0.0 / 0.0])", is_invalid_argument),
        ("math.greatest(dyn('a'))", is_no_such_overload),
        ("math.greatest(1, dyn('a'))", is_no_such_overload),
        ("math.least([1, dyn('a')])", is_no_such_overload),
        ("math.least(dyn(['a']))", is_no_such_overload),
    ];
    assert_errors(&env, cases);
}

#[test]
fn rounding_classification_and_roots_follow_ieee_doubles() {
    assert_values(&[
        ("math.ceil(-1.2)", Value::Double(-1.0)),
        ("math.ceil(1.2)", Value::Double(2.0)),
        ("math.floor(-1.2)", Value::Double(-2.0)),
        ("math.floor(1.2)", Value::Double(1.0)),
        ("math.round(-1.5)", Value::Double(-2.0)),
        ("math.round(1.5)", Value::Double(2.0)),
        ("math.round(1.4)", Value::Double(1.0)),
        ("math.trunc(-1.7)", Value::Double(-1.0)),
        ("math.isNaN(math.trunc(0.0 / 0.0))", Value::Bool(true)),
        ("math.isNaN(1.0 / 0.0)", Value::Bool(false)),
        ("math.isInf(-1.0 / 0.0)", Value::Bool(true)),
        ("math.isInf(0.0 / 0.0)", Value::Bool(false)),
        ("math.isFinite(1.5)", Value::Bool(true)),
        ("math.isFinite(0.0 / 0.0)", Value::Bool(false)),
        ("math.sqrt(49.0)", Value::Double(7.0)),
        ("math.sqrt(81)", Value::Double(9.0)),
        ("math.sqrt(4u)", Value::Double(2.0)),
        ("math.isNaN(math.sqrt(-1))", Value::Bool(true)),
    ]);
}

#[test]
fn abs_and_sign_work_on_every_numeric_type() {
    assert_values(&[
        ("math.abs(-11)", Value::Int(11)),
        ("math.abs(3u)", Value::Uint(3)),
        ("math.abs(-11.5)", Value::Double(11.5)),
        ("math.sign(-11)", Value::Int(-1)),
        ("math.sign(0)", Value::Int(0)),
        ("math.sign(100u)", Value::Uint(1)),
        ("math.sign(0u)", Value::Uint(0)),
        ("math.sign(-32.0)", Value::Double(-1.0)),
        ("math.sign(0.0)", Value::Double(0.0)),
        ("math.sign(100.5)", Value::Double(1.0)),
        ("math.isNaN(math.sign(0.0 / 0.0))", Value::Bool(true)),
    ]);
}

#[test]
fn abs_of_the_smallest_int_overflows() {
    assert_eq!(
        error(&math(), "math.abs(-9223372036854775808)"),
        EvalErrorKind::Overflow("math.abs")
    );
}

#[test]
fn bitwise_functions_work_on_ints_and_uints() {
    assert_values(&[
        ("math.bitAnd(1, 3)", Value::Int(1)),
        ("math.bitAnd(1, -1)", Value::Int(1)),
        ("math.bitAnd(1u, 2u)", Value::Uint(0)),
        ("math.bitOr(4, -2)", Value::Int(-2)),
        ("math.bitOr(1u, 4u)", Value::Uint(5)),
        ("math.bitXor(4, -2)", Value::Int(-6)),
        ("math.bitXor(1u, 3u)", Value::Uint(2)),
        ("math.bitNot(0)", Value::Int(-1)),
        ("math.bitNot(1u)", Value::Uint(u64::MAX - 1)),
        ("math.bitShiftLeft(1, 2)", Value::Int(4)),
        ("math.bitShiftLeft(-1, 63)", Value::Int(i64::MIN)),
        ("math.bitShiftLeft(1, 64)", Value::Int(0)),
        ("math.bitShiftLeft(1u, 200)", Value::Uint(0)),
        ("math.bitShiftRight(1024, 2)", Value::Int(256)),
        (
            "math.bitShiftRight(-1024, 3)",
            Value::Int(2_305_843_009_213_693_824),
        ),
        ("math.bitShiftRight(-1024, 64)", Value::Int(0)),
        ("math.bitShiftRight(1024u, 2)", Value::Uint(256)),
        (
            "math.bitShiftRight(1u, 9223372036854775807)",
            Value::Uint(0),
        ),
    ]);
}

#[test]
fn negative_shifts_and_dynamic_mismatches_fail_at_run_time() {
    let env = math();
    let cases: &[(&str, ErrorCheck)] = &[
        ("math.bitShiftLeft(1u, -1)", is_invalid_argument),
        ("math.bitShiftRight(1, -64)", is_invalid_argument),
        ("math.bitShiftLeft(dyn(4.3), 1)", is_no_such_overload),
        ("math.bitAnd(2u, dyn(''))", is_no_such_overload),
        ("math.bitOr(dyn(1.2), 1)", is_no_such_overload),
        ("math.bitNot(dyn(''))", is_no_such_overload),
        ("math.ceil(dyn(1))", is_no_such_overload),
        ("math.isNaN(dyn(true))", is_no_such_overload),
        ("math.sign(dyn(true))", is_no_such_overload),
        ("math.abs(dyn('a'))", is_no_such_overload),
        ("math.sqrt(dyn(b'1'))", is_no_such_overload),
    ];
    assert_errors(&env, cases);
}

#[test]
fn wrong_argument_types_are_rejected_when_checking() {
    let env = math();
    for text in [
        "math.ceil(1)",
        "math.isInf(1u)",
        "math.abs('a')",
        "math.sqrt(true)",
        "math.bitAnd(1, 1u)",
        "math.bitNot(1.0)",
        "math.bitShiftLeft(1, 1u)",
        "math.greatest(['a'][0])",
        "math.least(1, ['a'][0])",
        "math.greatest([['a']][0])",
    ] {
        assert!(
            matches!(
                check_error(&env, text),
                TypeErrorKind::NoMatchingOverload { .. }
            ),
            "{text}"
        );
    }
}

#[test]
fn result_types_follow_the_overloads() {
    let env = math();
    let cases = [
        ("math.greatest(1)", Type::Int),
        ("math.greatest(1, 2)", Type::Int),
        ("math.least(1u, 2u)", Type::Uint),
        ("math.least(1.0, 2.0, 3.0)", Type::Double),
        ("math.greatest([1, 2])", Type::Int),
        ("math.greatest(1, 2u)", Type::Dyn),
        ("math.greatest(1, 2u, 3.0)", Type::Dyn),
        ("math.ceil(1.5)", Type::Double),
        ("math.isFinite(1.5)", Type::Bool),
        ("math.abs(-1)", Type::Int),
        ("math.sign(1u)", Type::Uint),
        ("math.sqrt(4)", Type::Double),
        ("math.bitOr(1u, 2u)", Type::Uint),
        ("math.bitShiftRight(1u, 2)", Type::Uint),
    ];
    for (text, expected) in cases {
        assert_eq!(output_type(&env, text), expected, "{text}");
    }
}

#[test]
fn extremum_of_a_list_is_charged_by_its_size() {
    let env = math();
    let list = |size| Value::list(vec![Value::Int(1); size]);
    let cheap = cost_with_input(&env, "math.greatest(x)", list(10));
    let dear = cost_with_input(&env, "math.greatest(x)", list(1000));
    assert!(dear >= cheap + 99, "{cheap} vs {dear}");
}
