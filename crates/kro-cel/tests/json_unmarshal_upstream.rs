//! `json.unmarshal` against upstream kro v0.9.4's own function (`pkg/cel/library/json.go`,
//! built from its module as `tools/kro-json`): on a corpus of JSON texts (numbers of every
//! shape, integers past 2^53 and 2^64, negative zero, subnormals, overflow, nesting, escapes,
//! duplicate keys, invalid texts) and a few thousand random numbers from a fixed seed, both
//! give the same value of the same CEL types, doubles compared by their bits, or both fail.

use std::path::{Path, PathBuf};

use kro_cel::{Env, Key, Type, Value};
use serde_json::{Value as Json, json};

/// JSON texts chosen for what they test.
const CORPUS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1",
    "-1",
    "42",
    "1.5",
    "1E2",
    "1e+2",
    "1e-2",
    "0.1",
    "0.30000000000000004",
    "9007199254740992",
    "9007199254740993",
    "9007199254740995",
    "-9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678901234567890",
    "12345678901234567890.5",
    "1e308",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1.7976931348623159e308",
    "1e309",
    "-1e309",
    "1e400",
    "5e-324",
    "2e-324",
    "3e-324",
    "1e-400",
    "2.2250738585072011e-308",
    "2.2250738585072012e-308",
    "4.9406564584124654e-324",
    "0.000000000000000000000000000001",
    "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203124",
    "1.00000000000000011102230246251565404236316680908203126",
    "7.038531e-26",
    "8.533e+68",
    "4.1006e-184",
    "9.998e+307",
    "9.9538452227e-280",
    "6.47660115e-260",
    "7.4e+47",
    "5.92e+48",
    "7.35e+66",
    "8.32116e+55",
    "100000000000000000000000",
    "0e0",
    "0E-5",
    "-0e10",
    "[]",
    "{}",
    "[1, 2.5, -3, 4e1]",
    "{\"a\": 5, \"b\": {\"c\": [1, {\"d\": 1e3}]}}",
    "{\"a\": 1, \"a\": 2.5}",
    "[[[[[[[[1]]]]]]]]",
    "\"text\"",
    "\"\\u00e9\\u4e2d\\ud83d\\ude00\"",
    "\"tab\\tnew\\nline\\\\ \\/ \\\"\"",
    "true",
    "false",
    "null",
    "[null, true, false]",
    "  {\"spaced\" : [ 1 , 2 ] }  ",
    "",
    " ",
    "01",
    "1.",
    ".5",
    "+1",
    "-",
    "1e",
    "0x10",
    "NaN",
    "Infinity",
    "[1,]",
    "{\"a\":1,}",
    "{'a': 1}",
    "1 2",
    "[1] x",
    "\"unterminated",
    "{\"a\"}",
];

/// Random numbers from a fixed seed: digits, a fraction and an exponent of random lengths.
fn random_numbers(count: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: u64| {
        // xorshift64*: deterministic, good enough to spread the digits.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound
    };
    let digits = |length: u64, next: &mut dyn FnMut(u64) -> u64| -> String {
        (0..length)
            .map(|_| char::from(b'0' + u8::try_from(next(10)).unwrap_or(0)))
            .collect()
    };
    (0..count)
        .map(|_| {
            let mut text = String::new();
            if next(2) == 0 {
                text.push('-');
            }
            let whole = digits(1 + next(25), &mut next);
            text.push_str(whole.trim_start_matches('0'));
            if text.is_empty() || text == "-" {
                text.push('0');
            }
            if next(2) == 0 {
                text.push('.');
                text.push_str(&digits(1 + next(25), &mut next));
            }
            if next(3) == 0 {
                text.push('e');
                if next(2) == 0 {
                    text.push('-');
                }
                text.push_str(&(next(330)).to_string());
            }
            text
        })
        .collect()
}

/// The value in the typed form tools/kro-json prints.
fn typed(value: &Value) -> Json {
    match value {
        Value::Double(double) => json!({"double": format!("{:x}", double.to_bits())}),
        Value::Int(int) => json!({"int": int.to_string()}),
        Value::Uint(uint) => json!({"uint": uint.to_string()}),
        Value::String(text) => json!({"string": text.as_ref()}),
        Value::Bool(flag) => json!({"bool": flag}),
        Value::Null => json!({"null": null}),
        Value::List(items) => json!({"list": items.iter().map(typed).collect::<Vec<_>>()}),
        Value::Map(map) => {
            let fields: serde_json::Map<String, Json> = map
                .iter()
                .map(|(key, value)| match key {
                    Key::String(key) => (key.to_string(), typed(value)),
                    other => (format!("{other:?}"), typed(value)),
                })
                .collect();
            json!({"map": fields})
        }
        other => json!({"other": format!("{other:?}")}),
    }
}

fn ours(texts: &[String]) -> Vec<Json> {
    let program = Env::kro()
        .with_variable("text", Type::String)
        .compile("json.unmarshal(text)")
        .expect("json.unmarshal(text) compiles");
    texts
        .iter()
        .map(|text| {
            let bindings =
                std::collections::HashMap::from([("text".to_owned(), Value::from(text.clone()))]);
            match program.evaluate(&bindings) {
                Ok(value) => typed(&value),
                Err(_) => json!({"error": true}),
            }
        })
        .collect()
}

fn upstream(tool: &Path, texts: &[String]) -> Vec<Json> {
    let lines: Vec<String> = texts
        .iter()
        .map(|value| Json::String(value.clone()).to_string())
        .collect();
    kro_test_support::answer_lines(tool, &lines)
        .iter()
        .map(|line| serde_json::from_str(line).expect("kro-json prints JSON lines"))
        .collect()
}

/// The built tools/kro-json, or `None` (after saying why) when Go is missing outside CI.
fn tool_or_skip() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "json_unmarshal_upstream",
        "comparing with upstream kro needs Go to build tools/kro-json",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-json");
    Some(kro_test_support::build_go_tool("kro-json", ".", &out))
}

#[test]
fn json_unmarshal_gives_upstreams_values_and_types() {
    let Some(tool) = tool_or_skip() else {
        return;
    };
    let mut texts: Vec<String> = CORPUS.iter().map(|text| (*text).to_owned()).collect();
    texts.extend(random_numbers(3_000));
    let expected = upstream(&tool, &texts);
    assert_eq!(expected.len(), texts.len(), "one answer per text");
    let got = ours(&texts);
    let differences: Vec<String> = texts
        .iter()
        .zip(expected.iter().zip(&got))
        .filter(|(_, (expected, got))| expected != got)
        .map(|(text, (expected, got))| format!("{text:?}: upstream {expected}, ours {got}"))
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} texts differ from upstream kro v0.9.4:\n{}",
        differences.len(),
        texts.len(),
        differences.join("\n")
    );
}
