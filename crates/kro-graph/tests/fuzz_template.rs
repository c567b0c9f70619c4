//! Fuzzing the `${...}` template scanner: strings built from the pieces that matter to it
//! (openings, braces, quotes, escapes, multi-byte text) and the checked-in corpus under
//! `testdata/fuzz/template/`. Properties: no panic; every expression found is a well-formed
//! slice of the input; every error points inside the input; a string of several expressions
//! is the sum of its pieces.
//!
//! From a fixed seed, so CI always tries the same strings; `PROPTEST_RNG_SEED=<n>` explores
//! others. A string that fails goes into the corpus (one file per case) and stays.

use std::path::Path;

use kro_graph::{Template, find_expressions, parse_template, scan_json};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Checks every property on one string; panics (with the string) when one does not hold.
fn check(text: &str) {
    match find_expressions(text) {
        Ok(expressions) => {
            let mut previous_end = 0;
            for expression in &expressions {
                assert!(expression.start >= previous_end, "{text:?}: overlapping");
                assert!(expression.end <= text.len(), "{text:?}: past the end");
                let slice = text
                    .get(expression.start..expression.end)
                    .unwrap_or_else(|| panic!("{text:?}: not on character boundaries"));
                assert!(slice.starts_with("${") && slice.ends_with('}'), "{text:?}");
                assert_eq!(slice[2..slice.len() - 1], expression.cel, "{text:?}");
                assert_eq!(
                    text.get(expression.cel_offset()..)
                        .map(|rest| rest.starts_with(&expression.cel)),
                    Some(true)
                );
                previous_end = expression.end;
            }
        }
        Err(error) => {
            assert!(
                error.offset < text.len(),
                "{text:?}: error at {}",
                error.offset
            );
            assert_eq!(
                text.get(error.offset..).map(|rest| rest.starts_with("${")),
                Some(true),
                "{text:?}: errors point at a `${{`"
            );
            assert_eq!(error.template, text);
        }
    }
    match parse_template(text) {
        Ok(Template::Literal) => {}
        Ok(Template::Standalone(expression)) => {
            assert_eq!(
                (expression.start, expression.end),
                (0, text.len()),
                "{text:?}"
            );
        }
        Ok(Template::Interpolated(interpolation)) => {
            assert!(interpolation.expressions().count() > 0, "{text:?}");
        }
        Err(error) => assert!(error.offset < text.len(), "{text:?}"),
    }
    let scanned = scan_json(&serde_json::json!({"key": text, "list": [text]}));
    if let Err(errors) = scanned {
        for error in &errors.errors {
            assert!(error.error.offset < text.len(), "{text:?}");
        }
    }
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(400);
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x6b72_6f5f_7465_6d70);
    }
    config
}

/// The pieces a template is made of, as the scanner sees them.
fn piece() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("${"),
        Just("}"),
        Just("{"),
        Just("\""),
        Just("\\"),
        Just("\\\""),
        Just("$"),
        Just("'"),
        Just(" "),
        Just("schema.spec.name"),
        Just("a"),
        Just("é"),
        Just("🦀"),
        Just("\n"),
        Just("\"${"),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_scanner_never_panics_and_its_answers_point_inside_the_input(
        pieces in prop::collection::vec(piece(), 0..40)
    ) {
        check(&pieces.concat());
    }

    #[test]
    fn the_scanner_never_panics_on_arbitrary_text(text in "\\PC{0,80}") {
        check(&text);
    }

    /// Well-formed expressions joined by literal text are found one by one, unchanged.
    #[test]
    fn expressions_between_text_are_found_as_written(
        parts in prop::collection::vec(("[a-z .-]{0,6}", "[a-z][a-z0-9.]{0,8}"), 1..6)
    ) {
        let mut text = String::new();
        let mut expected = Vec::new();
        for (literal, cel) in &parts {
            text.push_str(literal);
            expected.push(cel.clone());
            text.push_str(&format!("${{{cel}}}"));
        }
        let found: Vec<String> = find_expressions(&text)
            .expect("well-formed expressions")
            .into_iter()
            .map(|expression| expression.cel)
            .collect();
        prop_assert_eq!(found, expected);
    }
}

/// Every file of the corpus passes the properties (crashes found once stay fixed).
#[test]
fn the_template_corpus_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz/template");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is checked in") {
        let path = entry.expect("a corpus entry").path();
        let text = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        check(&text);
        count += 1;
    }
    assert!(count >= 10, "{count} corpus files in {}", dir.display());
}

/// A long string of unclosed openings inside string literals ends with an answer: the work
/// limit of the scanner holds for the shapes that defeat a naive rescanning.
#[test]
fn long_adversarial_strings_are_scanned() {
    for unit in ["${", "${\"", "${\"\\", "${{", "\"${"] {
        let text = unit.repeat(50_000);
        check(&text);
    }
}
