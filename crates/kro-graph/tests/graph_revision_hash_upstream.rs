//! The GraphRevision spec hash as upstream kro v0.9.4 computes it (`pkg/graph/hash.Spec`, built
//! from the module as `tools/kro-hash`): on every RGD in this repository that upstream's types
//! can read, and on variations of them that reach each rule of the hash (resource order,
//! unsorted `readyWhen`/`includeWhen`, defaults, printer columns, metadata, externalRef
//! selectors, `forEach`, numbers of every magnitude, strings Go escapes), `spec_hash` gives
//! upstream's value, so the `kro.run/graph-revision-hash` label agrees on a shared cluster.

use std::path::{Path, PathBuf};

use kro_graph::spec_hash;
use serde_json::{Value as Json, json};

/// The `spec` of every RGD under the repository that upstream's types read unchanged (no data
/// nodes, no `spec.scaling`, no string `forEach`, no `propagateWhen`).
fn repository_specs() -> Vec<Json> {
    let root = kro_test_support::repository_root();
    let mut specs = Vec::new();
    for dir in ["examples", "testdata", "crates", "charts", "docs"] {
        for file in kro_test_support::yaml_files(&root.join(dir)) {
            if file.components().any(|part| part.as_os_str() == "target") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            if !text.contains("kind: ResourceGraphDefinition") {
                continue;
            }
            let Ok(documents) = serde_saphyr::from_multiple::<Json>(&text) else {
                continue;
            };
            for document in documents {
                if document["kind"] == "ResourceGraphDefinition"
                    && document["spec"].is_object()
                    && upstream_readable(&document["spec"])
                {
                    specs.push(document["spec"].clone());
                }
            }
        }
    }
    specs
}

fn upstream_readable(spec: &Json) -> bool {
    spec.get("scaling").is_none()
        && spec.get("propagateWhen").is_none()
        && spec["resources"].as_array().is_none_or(|resources| {
            resources.iter().all(|resource| {
                resource.get("data").is_none()
                    && resource.get("propagateWhen").is_none()
                    && resource.get("forEach").is_none_or(Json::is_array)
            })
        })
}

/// A small deterministic generator.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap_or(0) % bound.max(1)
    }

    fn pick(&mut self, values: &[&'static str]) -> &'static str {
        values[self.below(values.len())]
    }
}

const STRINGS: &[&str] = &[
    "plain",
    "<html> & friends",
    "line\nbreak\ttab\r",
    "\u{8}\u{c}\u{1}\u{1f}",
    "\u{2028}\u{2029}",
    "é ü 中文 😀",
    "quote \" and \\ backslash",
    "${schema.spec.name}-<x>",
    "",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-7",
    "0.1",
    "2.5e3",
    "1e21",
    "1e20",
    "123456789012345678901234567890",
    "9007199254740993",
    "0.000001",
    "0.0000001",
    "1.5e-7",
    "1e-300",
    "1.7976931348623157e308",
    "-0.000123",
    "3.14159265358979323846",
];

/// A free-form value built from the pieces above.
fn value(random: &mut Random, depth: usize) -> Json {
    match random.below(if depth > 2 { 4 } else { 6 }) {
        0 => json!(random.pick(STRINGS)),
        1 => serde_json::from_str(random.pick(NUMBERS)).expect("a JSON number"),
        2 => json!(random.below(2) == 0),
        3 => Json::Null,
        4 => Json::Array(
            (0..random.below(4))
                .map(|_| value(random, depth + 1))
                .collect(),
        ),
        _ => {
            let mut object = serde_json::Map::new();
            for _ in 0..random.below(4) {
                object.insert(random.pick(STRINGS).to_string(), value(random, depth + 1));
            }
            Json::Object(object)
        }
    }
}

/// One variation of `spec`.
fn vary(spec: &Json, random: &mut Random) -> Json {
    let mut spec = spec.clone();
    let schema = &mut spec["schema"];
    if schema.is_object() {
        match random.below(4) {
            0 => {
                if let Some(schema) = schema.as_object_mut() {
                    schema.remove("group");
                    schema.remove("scope");
                }
            }
            1 => schema["scope"] = json!("Cluster"),
            2 => schema["group"] = json!(random.pick(STRINGS)),
            _ => {}
        }
        if random.below(3) == 0 {
            schema["additionalPrinterColumns"] = json!([
                {"name": random.pick(STRINGS), "type": "string", "jsonPath": ".spec.x"},
                {"jsonPath": ".status.y", "name": "Y", "type": "integer", "priority": random.below(3),
                 "format": "int32", "description": random.pick(STRINGS)},
            ]);
        }
        if random.below(3) == 0 {
            schema["shortNames"] = json!([random.pick(STRINGS), "b"]);
            schema["categories"] = json!(["all", random.pick(STRINGS)]);
        }
        match random.below(4) {
            0 => schema["metadata"] = json!({}),
            1 => {
                schema["metadata"] = json!({
                    "labels": {random.pick(STRINGS).to_string(): random.pick(STRINGS), "a": "1"},
                    "annotations": {"z": random.pick(STRINGS)},
                })
            }
            _ => {}
        }
        match random.below(5) {
            0 => schema["spec"] = value(random, 0),
            1 => {
                if let Some(schema) = schema.as_object_mut() {
                    schema.remove("spec");
                }
            }
            2 => schema["types"] = value(random, 0),
            3 => schema["status"] = json!({"n": random.pick(STRINGS)}),
            _ => {}
        }
    }
    if let Some(resources) = spec["resources"].as_array_mut() {
        if resources.len() > 1 && random.below(2) == 0 {
            resources.reverse();
        }
        for resource in resources.iter_mut() {
            if random.below(2) == 0 {
                resource["readyWhen"] = json!([random.pick(STRINGS), "${b}", "${a}"]);
            }
            if random.below(3) == 0 {
                resource["includeWhen"] = json!(["${z}", random.pick(STRINGS)]);
            }
            if random.below(4) == 0 && resource["template"].is_object() {
                resource["template"]["data"] = value(random, 0);
            }
            if random.below(6) == 0 {
                resource["forEach"] = json!([{"b": "${x}", "a": random.pick(STRINGS)}, {}]);
            }
        }
        if random.below(4) == 0 {
            resources.push(json!({
                "id": random.pick(STRINGS),
                "externalRef": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": match random.below(3) {
                        0 => json!({"name": "n", "namespace": random.pick(STRINGS)}),
                        1 => json!({"selector": {"matchLabels": {"app": random.pick(STRINGS)}}}),
                        _ => json!({}),
                    },
                },
            }));
        }
    }
    spec
}

fn corpus() -> Vec<Json> {
    let specs = repository_specs();
    assert!(
        specs.len() >= 40,
        "the repository holds {} RGDs upstream can read; expected at least 40",
        specs.len()
    );
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    let mut corpus = specs.clone();
    for _ in 0..8 {
        for spec in &specs {
            corpus.push(vary(spec, &mut random));
        }
    }
    corpus.push(json!({}));
    corpus.push(json!({"schema": {"apiVersion": "v1alpha1", "kind": "Empty"}}));
    corpus
}

/// The built tools/kro-hash, or `None` (after saying why) when Go is missing outside CI.
fn tool_or_skip() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "graph_revision_hash_upstream",
        "comparing with upstream kro needs Go to build tools/kro-hash",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-hash");
    Some(kro_test_support::build_go_tool("kro-hash", ".", &out))
}

#[test]
fn spec_hashes_are_upstreams() {
    let Some(tool) = tool_or_skip() else {
        return;
    };
    let corpus = corpus();
    let lines: Vec<String> = corpus.iter().map(Json::to_string).collect();
    let expected = kro_test_support::answer_lines(&tool, &lines);
    assert_eq!(expected.len(), corpus.len(), "one answer per spec");
    // A spec upstream's types cannot decode (the fuzz corpus's ill-typed RGDs) has no hash
    // upstream; the API server refuses it under either CRD, so none is compared.
    let undecodable = expected.iter().filter(|answer| *answer == "error").count();
    assert!(
        undecodable * 20 < corpus.len(),
        "{undecodable} of {} specs do not decode upstream: the corpus is mostly broken",
        corpus.len()
    );
    let differences: Vec<String> = corpus
        .iter()
        .zip(&expected)
        .filter(|(spec, expected)| *expected != "error" && spec_hash(spec) != **expected)
        .map(|(spec, expected)| format!("upstream {expected}, ours {}: {spec}", spec_hash(spec)))
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} specs hash differently from upstream kro v0.9.4:\n{}",
        differences.len(),
        corpus.len(),
        differences
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
