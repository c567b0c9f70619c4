use super::parse::{QuantityError, parse_quantity};
use super::*;
use crate::error::EvalErrorKind;
use crate::ext::testing::{assert_evaluations, eval, eval_error, is_rejected_for_overloads};
use crate::to_json;

fn canonical(text: &str) -> String {
    let quantity = parse_quantity(text).unwrap_or_else(|error| panic!("{text}: {error}"));
    canonical::canonical_text(&quantity)
}

#[test]
fn quantities_print_in_kubernetes_canonical_form() {
    let cases = [
        ("0", "0"),
        ("-0", "0"),
        ("1.5", "1500m"),
        ("-1.5", "-1500m"),
        ("0.1", "100m"),
        ("1000m", "1"),
        ("100m", "100m"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("12Mi", "12Mi"),
        ("1024Ki", "1Mi"),
        ("1Ki", "1Ki"),
        ("1.5k", "1500"),
        ("1e3", "1e3"),
        ("1000e0", "1e3"),
        ("1E3", "1E3"),
        ("1e-3", "1e-3"),
        ("1.5n", "2n"),
        ("0.0000000001", "1n"),
        ("1Pi", "1Pi"),
        ("12345678901234567890", "12345678901234567890"),
        ("9223372036854775808Ki", "9223372036854775807"),
        ("0.5Ki", "512"),
        ("100Ki", "100Ki"),
        // Canonical input is kept verbatim, as Kubernetes does.
        ("+1Ki", "+1Ki"),
        ("1500", "1500"),
        // Kubernetes has no suffix for 10^21 and prints the mantissa alone.
        ("1000E", "1"),
        // Parses, as in Kubernetes: no digits is zero.
        ("Mi", "0"),
        (".", "0"),
    ];
    for (input, expected) in cases {
        assert_eq!(canonical(input), expected, "{input}");
    }
}

#[test]
fn malformed_quantities_are_rejected_with_kubernetes_errors() {
    let cases = [
        ("", QuantityError::FormatWrong),
        ("10Mo", QuantityError::FormatWrong),
        ("1,3G", QuantityError::FormatWrong),
        ("Three", QuantityError::FormatWrong),
        (" 1", QuantityError::FormatWrong),
        ("1 ", QuantityError::FormatWrong),
        ("1.1.M", QuantityError::FormatWrong),
        ("1+1.0M", QuantityError::FormatWrong),
        ("-3.01e-", QuantityError::Suffix),
        ("10Mm", QuantityError::Suffix),
        ("200K", QuantityError::Suffix),
        ("0.1mi", QuantityError::Suffix),
        ("1i", QuantityError::Suffix),
        ("1e99999999999999999999", QuantityError::Suffix),
    ];
    for (input, expected) in cases {
        match parse_quantity(input) {
            Ok(quantity) => panic!("{input}: parsed as {quantity:?}"),
            Err(error) => assert_eq!(error, expected, "{input}"),
        }
    }
}

#[test]
fn library_functions_follow_kubernetes() {
    assert_evaluations(&[
        (
            "quantity('1.5Gi').add(quantity('512Mi')).isGreaterThan(quantity('2G'))",
            Value::Bool(true),
        ),
        ("isQuantity('20')", Value::Bool(true)),
        ("isQuantity('20Mi')", Value::Bool(true)),
        ("isQuantity('1,3G')", Value::Bool(false)),
        ("isQuantity('20Mo')", Value::Bool(false)),
        ("isQuantity('10Mm')", Value::Bool(false)),
        ("quantity('200M') == quantity('0.2G')", Value::Bool(true)),
        ("quantity('0.2G') == quantity('200M')", Value::Bool(true)),
        ("quantity('200M') == quantity('0.3G')", Value::Bool(false)),
        (
            "quantity('1Pi') == quantity('1125899906842624')",
            Value::Bool(true),
        ),
        (
            "quantity('50M').isLessThan(quantity('50Mi'))",
            Value::Bool(true),
        ),
        (
            "quantity('100M').isLessThan(quantity('50M'))",
            Value::Bool(false),
        ),
        (
            "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
            Value::Bool(true),
        ),
        (
            "quantity('200M').compareTo(quantity('0.2G'))",
            Value::Int(0),
        ),
        (
            "quantity('50M').compareTo(quantity('50Mi'))",
            Value::Int(-1),
        ),
        ("quantity('50Mi').compareTo(quantity('50M'))", Value::Int(1)),
        (
            "quantity('50k').add(quantity('20')) == quantity('50.02k')",
            Value::Bool(true),
        ),
        (
            "quantity('50k').add(20).isLessThan(quantity('50020'))",
            Value::Bool(false),
        ),
        (
            "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
            Value::Bool(true),
        ),
        (
            "quantity('50k').sub(20) == quantity('49980')",
            Value::Bool(true),
        ),
        (
            "quantity('50k').add(20).sub(quantity('100k')).asInteger()",
            Value::Int(-49980),
        ),
        (
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger()",
            Value::Int(20),
        ),
        ("sign(quantity('-3'))", Value::Int(-1)),
        ("sign(quantity('0'))", Value::Int(0)),
        ("sign(quantity('1n'))", Value::Int(1)),
        ("quantity('50k').asInteger()", Value::Int(50000)),
        ("quantity('50000000G').isInteger()", Value::Bool(true)),
        ("quantity('50').isInteger()", Value::Bool(true)),
        ("quantity('1Ki').asInteger()", Value::Int(1024)),
        (
            "quantity('9999999999999999999999999999999999999G').isInteger()",
            Value::Bool(false),
        ),
        // Kubernetes quirks: only the 64-bit form with a whole scale converts.
        ("quantity('1000m').isInteger()", Value::Bool(false)),
        ("quantity('1.5Gi').isInteger()", Value::Bool(false)),
        ("quantity('1Pi').isInteger()", Value::Bool(false)),
        (
            "quantity('50.703k').asApproximateFloat()",
            Value::Double(50703.0),
        ),
        (
            "quantity('1.5Gi').asApproximateFloat()",
            Value::Double(1_610_612_736.0),
        ),
        (
            "quantity('-100m').asApproximateFloat()",
            Value::Double(-0.1),
        ),
        (
            "quantity('1e400').asApproximateFloat()",
            Value::Double(f64::INFINITY),
        ),
        (
            "type(quantity('1')) == type(quantity('2Gi'))",
            Value::Bool(true),
        ),
    ]);
}

#[test]
fn integer_conversion_errors_on_overflow_and_fractions() {
    for text in [
        "quantity('9999999999999999999999999999999999999G').asInteger()",
        "quantity('10E').asInteger()",
        "quantity('1.5').asInteger()",
    ] {
        let error = eval_error(text);
        assert!(
            matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
            "{text}"
        );
    }
}

#[test]
fn bad_quantities_are_runtime_errors() {
    for text in ["quantity('200K')", "quantity('Three')", "quantity('')"] {
        let error = eval_error(text);
        assert!(
            matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
            "{text}"
        );
    }
}

#[test]
fn wrong_types_are_rejected_at_check_time() {
    for text in [
        "isQuantity([1, 2, 3])",
        "quantity(1)",
        "quantity('1').sign()",
        "quantity('1').add('1')",
        "quantity('1').add(1.5)",
        "quantity('1').isGreaterThan(1)",
        "quantity('1').compareTo(semver('1.0.0'))",
        "string(quantity('1'))",
    ] {
        assert!(is_rejected_for_overloads(text), "{text}");
    }
}

#[test]
fn arithmetic_keeps_the_kubernetes_format_rules() {
    let json = |text: &str| to_json(&eval(text)).expect("quantities have a JSON form");
    assert_eq!(
        json("quantity('0').add(quantity('1Ki'))"),
        serde_json::json!("1Ki")
    );
    assert_eq!(json("quantity('0').add(5000)"), serde_json::json!("5e3"));
    assert_eq!(
        json("quantity('1Gi').add(quantity('1M'))"),
        serde_json::json!("1074741824")
    );
    assert_eq!(
        json("quantity('1Ki').sub(quantity('1Ki'))"),
        serde_json::json!("0")
    );
    assert_eq!(
        json("quantity('1.5Gi').add(quantity('512Mi'))"),
        serde_json::json!("2Gi")
    );
    assert_eq!(json("quantity('+1Ki')"), serde_json::json!("+1Ki"));
}

#[test]
fn scaled_addition_overflows_into_the_decimal_form() {
    assert_eq!(add_scaled((1, 3), (2, 0)), Some((1002, 0)));
    assert_eq!(add_scaled((0, 5), (2, -3)), Some((2, -3)));
    assert_eq!(add_scaled((7, 5), (0, -3)), Some((7, 5)));
    assert_eq!(add_scaled((1, 30), (1, 0)), None);
    let min = Quantity::from_int(i64::MIN);
    let one = Quantity::from_int(1);
    let difference = one.sub(&min).expect("fits in the decimal form");
    assert_eq!(
        canonical::canonical_text(&difference),
        "9223372036854775809"
    );
    let huge = parse_quantity("1e99999").expect("fits the 64-bit form");
    assert_eq!(huge.add(&one).err(), Some(QuantityError::TooLarge));
    assert_eq!(huge.compare(&one), Ordering::Greater);
}

#[test]
fn go_powers_of_ten_match_math_pow10() {
    assert_eq!(go_pow10(0), 1.0);
    assert_eq!(go_pow10(-9), 1.0 / 1e9);
    assert_eq!(go_pow10(300), 1e300);
    assert_eq!(go_pow10(309), f64::INFINITY);
    assert_eq!(go_pow10(-324), 0.0);
}

#[test]
fn cost_grows_with_the_digits_of_decimal_quantities() {
    let small = parse_quantity("1").expect("valid");
    let large = parse_quantity(&"9".repeat(400)).expect("valid");
    let mut cheap = Budget::new(None);
    charge_digits(&small, &small, &mut cheap).expect("unlimited");
    let mut costly = Budget::new(None);
    charge_digits(&large, &large, &mut costly).expect("unlimited");
    assert!(costly.used() > 10 * cheap.used());
}
