//! Fuzzing SimpleSchema: type expressions built from its grammar (scalars, `[]X`,
//! `map[string]X`, custom types, nesting) with markers (`default=`, `minimum=`, `enum=`,
//! quoted and bracketed values), then mutated; and the checked-in corpus under
//! `testdata/fuzz/simpleschema/` (one declaration per line). Properties: no panic; an error
//! names the field path it is about; an accepted declaration compiles to a structural OpenAPI
//! schema (every node typed, arrays with items, maps with a value schema) that round-trips
//! through JSON, and whose default, when there is one, is valid against it.
//!
//! From a fixed seed, so CI always tries the same declarations; `PROPTEST_RNG_SEED=<n>`
//! explores others. A declaration that fails goes into the corpus and stays.

use std::path::Path;

use kro_schema::{AdditionalProperties, Schema, compile_field, compile_spec, validate};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::json;

const PATH: &str = "spec.field";

/// Panics naming the first node of `schema` (at `at`) that is not structural.
fn assert_structural(schema: &Schema, at: &str) {
    let typed = schema.type_.is_some()
        || schema.x_kubernetes_int_or_string
        || schema.x_kubernetes_preserve_unknown_fields == Some(true);
    assert!(typed, "{at}: no type");
    if let Some(type_) = &schema.type_ {
        assert!(
            ["object", "array", "string", "integer", "number", "boolean"].contains(&type_.as_str()),
            "{at}: type {type_:?}"
        );
        if type_ == "array" {
            let items = schema
                .items
                .as_deref()
                .unwrap_or_else(|| panic!("{at}: array without items"));
            assert_structural(items, &format!("{at}[]"));
        }
    }
    assert!(
        schema.properties.is_empty()
            || !matches!(
                schema.additional_properties,
                Some(AdditionalProperties::Schema(_))
            ),
        "{at}: properties and additionalProperties together"
    );
    for (name, property) in &schema.properties {
        assert_structural(property, &format!("{at}.{name}"));
    }
    if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
        assert_structural(values, &format!("{at}{{}}"));
    }
}

/// Checks every property on one declaration.
fn check(declaration: &str) {
    match compile_field(declaration, PATH) {
        Ok(compiled) => {
            assert_structural(&compiled.schema, PATH);
            let round_trip: Schema = serde_json::to_value(&compiled.schema)
                .and_then(serde_json::from_value)
                .unwrap_or_else(|error| panic!("{declaration:?}: does not round-trip: {error}"));
            assert_eq!(round_trip, compiled.schema, "{declaration:?}");
            if let Some(default) = &compiled.schema.default {
                let errors = validate(&compiled.schema, default, None);
                assert!(
                    errors.is_empty(),
                    "{declaration:?}: its default {default} is invalid: {errors:?}"
                );
            }
        }
        Err(error) => assert!(
            error.path.starts_with(PATH),
            "{declaration:?}: error at {:?}",
            error.path
        ),
    }
    // The same declaration as fields of a spec, and in a custom type (`Custom`, which the
    // declarations use, is defined apart so that none is cyclic).
    let spec =
        json!({"field": declaration, "nested": {"inner": declaration}, "wrapped": "Wrapper"});
    let types = json!({"Custom": {"value": "string"}, "Wrapper": {"value": declaration}});
    if let Err(error) = compile_spec(&spec, Some(&types)) {
        assert!(
            error.path.starts_with("spec.") || error.path.starts_with("types."),
            "{declaration:?}: error at {:?}",
            error.path
        );
    }
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("string"),
        Just("integer"),
        Just("boolean"),
        Just("number"),
        Just("object"),
        Just("Custom"),
        Just("Unknown"),
    ]
    .prop_map(str::to_owned)
}

fn type_expression() -> impl Strategy<Value = String> {
    scalar().prop_recursive(4, 16, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|element| format!("[]{element}")),
            inner
                .clone()
                .prop_map(|value| format!("map[string]{value}")),
            inner.prop_map(|value| format!("map[int]{value}")),
        ]
    })
}

fn marker() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("1".to_owned()),
        Just("-3".to_owned()),
        Just("2.5".to_owned()),
        Just("1e400".to_owned()),
        Just("true".to_owned()),
        Just("\"text\"".to_owned()),
        Just("\"a,b\"".to_owned()),
        Just("a,b,c".to_owned()),
        Just("[1, 2]".to_owned()),
        Just("{\"k\": \"v\"}".to_owned()),
        Just("\"unclosed".to_owned()),
        Just("[unbalanced".to_owned()),
        Just(String::new()),
        Just("\"^[a-z]+$\"".to_owned()),
        Just("\"self.size() > 1\"".to_owned()),
        "[a-z0-9 ]{0,6}",
    ];
    let name = prop_oneof![
        Just("default"),
        Just("required"),
        Just("description"),
        Just("enum"),
        Just("minimum"),
        Just("maximum"),
        Just("pattern"),
        Just("minLength"),
        Just("maxLength"),
        Just("minItems"),
        Just("maxItems"),
        Just("uniqueItems"),
        Just("immutable"),
        Just("validation"),
        Just("scale"),
        Just("unknownMarker"),
        Just(""),
    ];
    prop_oneof![
        (name.clone(), value).prop_map(|(name, value)| format!("{name}={value}")),
        name.prop_map(str::to_owned),
    ]
}

fn declaration() -> impl Strategy<Value = String> {
    (type_expression(), prop::collection::vec(marker(), 0..4)).prop_map(|(ty, markers)| {
        if markers.is_empty() {
            ty
        } else {
            format!("{ty} | {}", markers.join(" "))
        }
    })
}

/// One byte-level change: insert a character that matters to the grammar, or cut.
fn mutate(declaration: &str, at: prop::sample::Index, what: u8) -> String {
    let mut text = declaration.to_owned();
    let mut offset = at.index(text.len() + 1);
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    match what % 8 {
        0 => text.insert(offset, '|'),
        1 => text.insert(offset, '='),
        2 => text.insert(offset, '"'),
        3 => text.insert(offset, '['),
        4 => text.insert(offset, ']'),
        5 => text.insert(offset, '\\'),
        6 => text.insert(offset, 'é'),
        _ => text.truncate(offset),
    }
    text
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(400);
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x6b72_6f5f_7373_6368);
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn generated_declarations_compile_to_structural_schemas_or_fail_at_their_field(
        declaration in declaration()
    ) {
        check(&declaration);
    }

    #[test]
    fn mutated_declarations_never_panic(
        declaration in declaration(),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)
    ) {
        let mut text = declaration;
        for (at, what) in mutations {
            text = mutate(&text, at, what);
        }
        check(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,60}") {
        check(&text);
    }
}

/// Every line of the corpus passes the properties (crashes found once stay fixed).
#[test]
fn the_simpleschema_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/simpleschema");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is checked in") {
        let path = entry.expect("a corpus entry").path();
        let text = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            check(line);
            count += 1;
        }
    }
    assert!(count >= 10, "{count} corpus lines in {}", dir.display());
}

/// Type nesting far past the limit is an error at the field, not a stack overflow.
#[test]
fn deeply_nested_types_are_refused_at_their_field() {
    for declaration in [
        "[]".repeat(10_000) + "string",
        "map[string]".repeat(10_000) + "string",
    ] {
        let error = compile_field(&declaration, PATH).expect_err("too deep");
        assert_eq!(error.path, PATH);
    }
}
