//! kro's JSON library (upstream `pkg/cel/library/json.go`).
//!
//! - `json.unmarshal(string) -> dyn`: parses JSON text into maps, lists, strings, bools, null
//!   and numbers. Every number is a `double`, as upstream's (Go's `encoding/json` into `any`
//!   gives `float64`): `json.unmarshal('{"a": 5}').a` is `5.0`, dividing it by the int `2` is
//!   a no-such-overload error as there, and an integer past 2^53 is rounded to the nearest
//!   double. Numbers are parsed with correct rounding, as Go's `strconv.ParseFloat`; a number
//!   too large for a double is an error there and here. Checked against upstream's function
//!   on a corpus (`tests/json_unmarshal_upstream.rs`). Invalid JSON (including empty text and
//!   trailing characters) is an invalid-argument error.
//! - `json.marshal(dyn) -> string`: JSON text byte-for-byte as upstream writes it (Go's
//!   `encoding/json`): sorted keys, no whitespace, Go's number and string escaping; see
//!   [`marshal`] for the rules per type.
//!
//! Costs: parsing charges one unit per ten bytes of text plus four per value created; writing
//! charges one unit per ten bytes written and one per list or map element.

mod marshal;

pub use marshal::push_go_json_string;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::json::{JsonError, from_json};
use crate::types::Type;
use crate::value::Value;

const UNMARSHAL: &str = "json.unmarshal";
const MARSHAL: &str = "json.marshal";

/// The kro.json library.
pub(crate) fn library() -> Library {
    Library::new(
        "kro.json",
        vec![
            Function::new(UNMARSHAL).overload(
                Overload::global("json.unmarshal_string", &[Type::String], Type::Dyn).with_impl(
                    |args, budget| match args {
                        [Value::String(text)] => unmarshal(text, budget),
                        _ => Err(no_such_overload(UNMARSHAL, args)),
                    },
                ),
            ),
            Function::new(MARSHAL).overload(
                Overload::global("json.marshal_dyn", &[Type::Dyn], Type::String).with_impl(
                    |args, budget| match args {
                        [value] => marshal::marshal(value, budget).map(Value::from),
                        _ => Err(no_such_overload(MARSHAL, args)),
                    },
                ),
            ),
        ],
    )
}

fn no_such_overload(name: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(name, &args.iter().collect::<Vec<_>>())
}

/// `json.unmarshal(text)`
fn unmarshal(text: &str, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len()))?;
    let invalid = |reason: String| {
        EvalError::invalid_argument(UNMARSHAL, format!("failed to parse JSON: {reason}"))
    };
    let mut json: serde_json::Value =
        serde_json::from_str(text).map_err(|error| invalid(error.to_string()))?;
    // Four units per value: parsing it into JSON, then converting it into a CEL value.
    budget.charge(count_values(&json).saturating_mul(4))?;
    numbers_as_doubles(&mut json);
    from_json(&json, None, None).map_err(|error| match error {
        JsonError::TooDeep { limit, .. } => {
            EvalError::new(crate::EvalErrorKind::NestingTooDeep(limit))
        }
        other => invalid(other.to_string()),
    })
}

/// Makes every number of `json` a double, as Go's `encoding/json` reads numbers into `any`:
/// an integer is rounded to the nearest double (`as` rounds to nearest, ties to even, as
/// `strconv.ParseFloat` does).
fn numbers_as_doubles(json: &mut serde_json::Value) {
    let mut pending = vec![json];
    while let Some(next) = pending.pop() {
        match next {
            serde_json::Value::Number(number) if !number.is_f64() => {
                let double = number
                    .as_i64()
                    .map(|value| value as f64)
                    .or_else(|| number.as_u64().map(|value| value as f64));
                if let Some(double) = double.and_then(serde_json::Number::from_f64) {
                    *number = double;
                }
            }
            serde_json::Value::Array(items) => pending.extend(items),
            serde_json::Value::Object(fields) => pending.extend(fields.values_mut()),
            _ => {}
        }
    }
}

/// How many values a JSON document holds, counting every nested one.
fn count_values(json: &serde_json::Value) -> u64 {
    let mut count = 0u64;
    let mut pending = vec![json];
    while let Some(next) = pending.pop() {
        count += 1;
        match next {
            serde_json::Value::Array(items) => pending.extend(items),
            serde_json::Value::Object(fields) => pending.extend(fields.values()),
            _ => {}
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, is_invalid_argument};
    use super::marshal::go_duration;
    use crate::{Duration, Env, TypeErrorKind, Value};

    fn env() -> Env {
        testing::env(super::library()).with_library(super::super::kro_omit::library())
    }

    #[test]
    fn marshal_writes_upstreams_bytes() {
        // Expected values: upstream kro's json.marshal on the same expressions.
        let env = env();
        let cases = [
            (
                r#"{"name": "test", "count": 42}"#,
                r#"{"count":42,"name":"test"}"#,
            ),
            (
                r#"{"b": 1, "a": [1, 2.5, "x", true, null], "B": {}, "é": "ü", "aa": []}"#,
                r#"{"B":{},"a":[1,2.5,"x",true,null],"aa":[],"b":1,"é":"ü"}"#,
            ),
            (
                "[1.5, 100.0, 1e20, 1e21, 1e-6, 1e-7, 1.5e-7, 0.000001234, -0.0, 0.0, 1e300, \
                 5e-324, 123456789.125, 1e100, 1e-100, 12345678901234567890.0, 0.1, 2.5e-10]",
                "[1.5,100,100000000000000000000,1e+21,0.000001,1e-7,1.5e-7,0.000001234,-0,0,\
                 1e+300,5e-324,123456789.125,1e+100,1e-100,12345678901234567000,0.1,2.5e-10]",
            ),
            ("-1.5e-7", "-1.5e-7"),
            ("123456789012345680000.0", "123456789012345680000"),
            ("3.0e21", "3e+21"),
            (
                r#""<a href=\"x\">&amp;</a> \u2028 \u2029 \n \t \r \b \f \x01 \x1f \x7f é 😀 \\ /""#,
                "\"\\u003ca href=\\\"x\\\"\\u003e\\u0026amp;\\u003c/a\\u003e \\u2028 \\u2029 \\n \
                 \\t \\r \\b \\f \\u0001 \\u001f \u{7f} é 😀 \\\\ /\"",
            ),
            (r#"["\u0000"]"#, r#"["\u0000"]"#),
            ("\"\\ufeff\\u00ad\\u0600\"", "\"\u{feff}\u{ad}\u{600}\""),
            (r#"b"hello""#, r#""aGVsbG8=""#),
            (r#"{"a": b"\x00\xff"}"#, r#"{"a":"AP8="}"#),
            ("18446744073709551615u", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
            (
                "timestamp('2023-01-01T12:34:56.789Z')",
                r#""2023-01-01T12:34:56Z""#,
            ),
            (
                "timestamp('2023-06-01T12:00:00+02:00')",
                r#""2023-06-01T10:00:00Z""#,
            ),
            (
                "timestamp('0999-03-04T05:06:07Z')",
                r#""0999-03-04T05:06:07Z""#,
            ),
            ("timestamp('0001-01-01T00:00:00Z')", "null"),
            (
                "timestamp('0001-01-01T00:00:00.5Z')",
                r#""0001-01-01T00:00:00Z""#,
            ),
            (
                "[duration('1h30m'), duration('1.5s'), duration('0s'), duration('-90m'), \
                 duration('1ns'), duration('1500us'), duration('100ms'), duration('3723s'), \
                 duration('0.000001s'), duration('-0.5s')]",
                r#"["1h30m0s","1.5s","0s","-1h30m0s","1ns","1.5ms","100ms","1h2m3s","1µs","-500ms"]"#,
            ),
            ("duration('3600.001s')", r#""1h0m0.001s""#),
            ("duration('61s')", r#""1m1s""#),
            ("optional.of(1)", "1"),
            ("[optional.none(), optional.of('a')]", r#"[null,"a"]"#),
            ("null", "null"),
            ("omit()", "{}"),
            ("{'a': omit(), 'b': [omit()]}", r#"{"a":{},"b":[{}]}"#),
            ("[[[]]]", "[[[]]]"),
            (
                r#"json.unmarshal('{"z": 1, "a": {"y": 2, "b": 3}}')"#,
                r#"{"a":{"b":3,"y":2},"z":1}"#,
            ),
            (
                r#"json.unmarshal('[1, 1.0, 1e2, 12345678901234567890, 1.5e300]')"#,
                "[1,1,100,12345678901234567000,1.5e+300]",
            ),
        ];
        for (argument, expected) in cases {
            let text = format!("json.marshal({argument})");
            assert_eq!(
                testing::value(&env, &text),
                Value::string(expected),
                "{text}"
            );
        }
    }

    #[test]
    fn printing_charges_a_unit_per_element_beside_the_bytes() {
        // Found by the adversarial bench: a list holding one 1,000-element list ten times,
        // five levels deep, printed at a tenth of a unit per element took 80-100 ms.
        let env = crate::Env::kro().with_variable("x", crate::Type::Dyn);
        let cost = |text: &str| {
            let ints = Value::list((0..1000).map(|_| Value::Int(1)).collect());
            let evaluation = env
                .compile(text)
                .expect("compiles")
                .evaluate_with_limit(&[("x", ints)], None);
            assert!(evaluation.result.is_ok(), "{text}");
            evaluation.cost
        };
        // "[1,1,...,1]": 2,001 bytes, 1,000 elements.
        assert_eq!(cost("json.marshal(x)"), 1 + 201 + 1000);
        // The list literal, the template, then "[1, 1, ..., 1]": 3,000 bytes, 1,000
        // elements.
        assert_eq!(cost("'%s'.format([x])"), 1 + 2 + 1 + 300 + 1000);
    }

    #[test]
    fn marshal_rejects_values_json_cannot_hold() {
        testing::assert_errors(
            &env(),
            &[
                ("json.marshal({1: 'a'})", is_invalid_argument),
                ("json.marshal({true: 'a'})", is_invalid_argument),
                ("json.marshal(1.0/0.0)", is_invalid_argument),
                ("json.marshal([0.0/0.0])", is_invalid_argument),
                ("json.marshal(int)", is_invalid_argument),
            ],
        );
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        let cases = [
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (59_999_999_999, "59.999999999s"),
            (-1, "-1ns"),
            (1_001_000, "1.001ms"),
        ];
        for (nanos, expected) in cases {
            let duration = Duration::from_nanos(i128::from(nanos)).expect("in range");
            assert_eq!(go_duration(duration), expected);
        }
    }

    #[test]
    fn unmarshal_reads_json_values() {
        let env = env();
        let cases = [
            // Every number is a double, as upstream's (Go's float64).
            (
                r#"json.unmarshal('{"name": "test", "count": 42}')"#,
                "{'name': 'test', 'count': 42.0}",
            ),
            ("json.unmarshal('[1, 2, 3]')", "[1.0, 2.0, 3.0]"),
            (r#"json.unmarshal('"hello"')"#, "'hello'"),
            ("json.unmarshal('123')", "123.0"),
            ("json.unmarshal('-0')", "-0.0"),
            ("json.unmarshal('9007199254740993')", "9007199254740992.0"),
            (r#"json.unmarshal('{"a": 5}').a / 2.0"#, "2.5"),
            ("json.unmarshal('1.5')", "1.5"),
            ("json.unmarshal('1E2')", "100.0"),
            ("json.unmarshal('true')", "true"),
            ("json.unmarshal('null')", "null"),
            ("json.unmarshal('  [1] ')", "[1.0]"),
            (r#"json.unmarshal('{"a": 1, "a": 2}')"#, "{'a': 2.0}"),
            (
                r#"json.unmarshal('{"nested": {"value": "deep"}}').nested.value"#,
                "'deep'",
            ),
            ("json.unmarshal('[1, 2, 3]')[1]", "2.0"),
            (
                "json.unmarshal('12345678901234567890')",
                "12345678901234567890.0",
            ),
        ];
        for (text, expected) in cases {
            let expected_value = testing::value(&env, expected);
            assert_eq!(testing::value(&env, text), expected_value, "{text}");
        }
    }

    #[test]
    fn invalid_json_is_an_invalid_argument() {
        let env = env();
        for text in [
            r#"json.unmarshal('{"invalid"}')"#,
            "json.unmarshal('')",
            "json.unmarshal('1 2')",
            "json.unmarshal('[1,]')",
            r#"json.unmarshal('{"a":1}x')"#,
            "json.unmarshal('nul')",
            "json.unmarshal('1e400')",
        ] {
            assert!(is_invalid_argument(&testing::error(&env, text)), "{text}");
        }
        assert!(matches!(
            testing::check_error(&env, "json.unmarshal(123)"),
            TypeErrorKind::NoMatchingOverload { .. }
        ));
    }

    #[test]
    fn json_costs_in_proportion_to_its_size() {
        let env = env();
        let small = testing::cost_with_input(&env, "json.unmarshal(x)", Value::string("[1]"));
        let document = format!("[{}1]", "1,".repeat(5_000));
        let large = testing::cost_with_input(&env, "json.unmarshal(x)", Value::from(document));
        assert!(large >= small + 5_000, "{small} {large}");
        // A list holding one long string many times writes far more than it took to build.
        let result = env
            .with_library(super::super::lists::library())
            .with_cost_limit(Some(100_000))
            .with_variable("s", crate::Type::String)
            .compile("json.marshal(lists.range(1000).map(i, s))")
            .expect("compiles")
            .evaluate(&[("s", Value::from("x".repeat(10_000)))]);
        assert!(matches!(
            result.map_err(|error| error.kind().clone()),
            Err(crate::EvalErrorKind::CostLimitExceeded { .. })
        ));
    }
}
