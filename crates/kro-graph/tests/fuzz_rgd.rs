//! Fuzzing YAML and RGD decoding, the path `kro validate` reads files through: upstream's
//! examples (vendored under testdata/) mutated byte- and line-wise, plus the corpus under
//! `testdata/fuzz/rgd/` (alias bombs, deep nesting, duplicate keys, wrong types). Properties:
//! no panic; alias expansion and nesting stay within the limits; every error names a line and
//! column or a field path; an RGD that decodes builds or fails with located errors.
//!
//! From a fixed seed, so CI always tries the same documents; `PROPTEST_RNG_SEED=<n>`
//! explores others. A document that fails goes into the corpus (one file per case) and stays.

use std::path::{Path, PathBuf};

use kro_graph::{BuiltinCatalog, SchemaSources, YamlErrorKind, build_graph, parse_yaml_documents};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Upstream's Kubernetes examples that hold an RGD, sorted.
fn examples() -> Vec<String> {
    let dir = root().join("../../testdata/kro-upstream/examples/kubernetes");
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("testdata/ is vendored")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "yaml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter(|text| text.contains("kind: ResourceGraphDefinition"))
        .collect()
}

/// Checks every property on one text; panics (naming the problem) when one does not hold.
fn check(text: &str) {
    let lines = text.lines().count() + 1;
    let documents = match parse_yaml_documents(text) {
        Ok(documents) => documents,
        Err(error) => {
            if let Some(at) = error.location {
                assert!(
                    (at.line as usize) <= lines + 1,
                    "error at line {} of {lines}",
                    at.line
                );
            }
            return;
        }
    };
    let sources = SchemaSources::new().with(BuiltinCatalog);
    for document in documents {
        if !document.is_resource_graph_definition() {
            continue;
        }
        match document.to_resource_graph_definition() {
            Ok(rgd) => {
                if let Err(errors) = build_graph(&rgd, &sources) {
                    assert!(!errors.errors.is_empty(), "a failed build says why");
                }
            }
            Err(error) => assert!(
                error.location.is_some() || !error.path.is_root(),
                "a decoding error names its place: {error}"
            ),
        }
    }
}

/// One change to a document.
#[derive(Debug, Clone)]
enum Mutation {
    /// Inserts text at a position (a fraction of the length).
    Insert(f64, &'static str),
    /// Removes bytes from a position.
    Delete(f64, usize),
    /// Repeats a line (a duplicate key, mostly).
    DuplicateLine(f64),
    /// Cuts the text.
    Truncate(f64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just(": "),
        Just("- "),
        Just("\n"),
        Just("\n  "),
        Just("\t"),
        Just("&a "),
        Just("*a"),
        Just("<<: *a\n"),
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just("\""),
        Just("'"),
        Just("${"),
        Just("}}"),
        Just("!!binary "),
        Just("!!str "),
        Just(".nan"),
        Just("? "),
        Just("---\n"),
        Just("1e999"),
        Just("null"),
        Just("[[[[[[[["),
        Just("é🦀"),
    ];
    prop_oneof![
        (0.0..1.0f64, token).prop_map(|(at, text)| Mutation::Insert(at, text)),
        (0.0..1.0f64, 1..40usize).prop_map(|(at, length)| Mutation::Delete(at, length)),
        (0.0..1.0f64).prop_map(Mutation::DuplicateLine),
        (0.0..1.0f64).prop_map(Mutation::Truncate),
    ]
}

/// The byte offset nearest `at` (a fraction) that is a character boundary.
fn boundary(text: &str, at: f64) -> usize {
    let mut offset = ((text.len() as f64) * at) as usize;
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset.min(text.len())
}

fn apply(text: &mut String, mutation: &Mutation) {
    match *mutation {
        Mutation::Insert(at, token) => {
            let offset = boundary(text, at);
            text.insert_str(offset, token);
        }
        Mutation::Delete(at, length) => {
            let start = boundary(text, at);
            let mut end = (start + length).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, "");
        }
        Mutation::DuplicateLine(at) => {
            let offset = boundary(text, at);
            let start = text[..offset].rfind('\n').map_or(0, |at| at + 1);
            let end = text[offset..]
                .find('\n')
                .map_or(text.len(), |at| offset + at + 1);
            let line = text[start..end].to_owned();
            text.insert_str(end, &line);
        }
        Mutation::Truncate(at) => {
            let offset = boundary(text, at);
            text.truncate(offset);
        }
    }
}

fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(150);
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x6b72_6f5f_7267_6473);
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_examples_decode_or_fail_at_a_place(
        example in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6)
    ) {
        let examples = examples();
        let mut text = example.get(&examples).clone();
        for mutation in &mutations {
            apply(&mut text, mutation);
        }
        check(&text);
    }
}

/// Every file of the corpus passes the properties (crashes found once stay fixed).
#[test]
fn the_rgd_corpus_replays() {
    let dir = root().join("testdata/fuzz/rgd");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is checked in") {
        let path = entry.expect("a corpus entry").path();
        let text = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        check(&text);
        count += 1;
    }
    assert!(count >= 5, "{count} corpus files in {}", dir.display());
}

/// Nine levels of ten aliases each would expand to 10⁹ nodes: refused at the node limit,
/// without building them.
#[test]
fn an_alias_bomb_is_refused_at_the_node_limit() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 10].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    let error = parse_yaml_documents(&text).expect_err("too many nodes");
    assert!(
        matches!(error.kind, YamlErrorKind::LimitExceeded { .. }),
        "{error}"
    );
}

/// Nesting far past the depth limit is refused, not a stack overflow.
#[test]
fn deep_nesting_is_refused_at_the_depth_limit() {
    for text in [
        "[".repeat(100_000),
        format!("a: {}", "{b: ".repeat(50_000)),
        "- ".repeat(10_000) + "x",
    ] {
        let error = parse_yaml_documents(&text).expect_err("too deep");
        assert!(
            error.location.is_some() || matches!(error.kind, YamlErrorKind::LimitExceeded { .. }),
            "{error}"
        );
    }
}

/// A scalar of several megabytes is read (within the size limit) and decoding names the
/// field it is wrong for.
#[test]
fn a_huge_scalar_is_read_and_reported_at_its_field() {
    let text = format!(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: {}\nspec:\n  schema: 7\n",
        "a".repeat(4 * 1024 * 1024)
    );
    let documents = parse_yaml_documents(&text).expect("within the limits");
    let error = documents[0]
        .to_resource_graph_definition()
        .expect_err("spec.schema is not a map");
    assert!(!error.path.is_root() && error.location.is_some(), "{error}");
}
