//! The CRD kro-graph generates for an RGD against the one upstream kro v0.9.3 generates, built
//! from upstream's own packages.
//!
//! This suite builds `tools/kro-crd` (a Go module pinning github.com/kubernetes-sigs/kro v0.9.3,
//! whose `main.go` runs upstream's graph builder: `pkg/simpleschema` for the schema and its
//! markers, `pkg/graph/crd` for the CRD) into the cargo target directory and feeds it, and
//! `build_graph`, the same RGDs:
//!
//! - every RGD of upstream's examples (`testdata/kro-upstream/examples`) and of ours
//!   (`examples/`);
//! - a generated corpus of SimpleSchema fields and markers: every type (atomic, lists, maps,
//!   nested objects, custom types, `object`) with every marker, valid and malformed, plus type
//!   syntax, custom types, nesting and the CRD envelope (kind, group, version, scope, printer
//!   columns, CRD metadata);
//! - status fields whose expressions read the instance alone, whose schema upstream infers
//!   from the expression's CEL type.
//!
//! For each RGD the two CRDs (names, plural, schema, subresources, printer columns) must be equal
//! as JSON, and where upstream fails ours must fail too, and the other way round. Every mismatch
//! is reported with its case id and the JSON path of the first difference.
//!
//! What is not compared: the status of the examples. Upstream infers a status field's schema
//! with its whole graph builder, which for an expression reading a resource needs the OpenAPI
//! schema of the resource's kind from an API server; the tool runs the builder offline with
//! no kinds known, so the examples are sent without `resources` and without `status`, and
//! their status compared is the one every CRD has (`state` and `conditions`). The inference
//! itself is compared on the corpus' status expressions over the instance. Upstream examples
//! that upstream itself rejects (see `upstream_examples.rs`) are compared all the same: both
//! sides see only their schema.
//!
//! Where upstream builds a CRD that kube-apiserver refuses (the tool runs kube-apiserver's own
//! validation of a new CRD on it), ours must refuse the RGD instead: that is where kro reports
//! a problem earlier than upstream on purpose (a default that is not a valid value of its
//! field, a map list without keys, a set of objects, a rule that does not type-check). Where
//! both build the same CRD and kube-apiserver refuses it, the case counts as a match and is
//! printed. `required` lists are compared sorted:
//! upstream fills them in Go map order.
//!
//! Go is needed for that; without it the comparison is skipped with a printed reason, except
//! under `CI=true`, where that is a failure. The build runs once per change of
//! `tools/kro-crd`; module and build caches stay under the target directory.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kro_graph::{ResourceGraphDefinition, SchemaSources, build_graph, parse_yaml_documents};
use serde_json::{Value as Json, json};

/// Where ours differs from upstream on purpose: a text that the ids of the excepted cases
/// contain, and the reason (checked against upstream v0.9.3's code, and named in
/// docs/offline.md). The list only shrinks: an entry that excuses no mismatch fails the suite.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "minLength=-1",
        "upstream writes a negative minLength (strconv.ParseInt, no check) and kube-apiserver \
         accepts it; ours refuses the marker: kro-schema holds counts unsigned",
    ),
    (
        "maxLength=-1",
        "upstream writes a negative maxLength (strconv.ParseInt, no check) and kube-apiserver \
         accepts it; ours refuses the marker: kro-schema holds counts unsigned",
    ),
    (
        "minItems=-1",
        "upstream writes a negative minItems (strconv.ParseInt, no check) and kube-apiserver \
         accepts it; ours refuses the marker: kro-schema holds counts unsigned",
    ),
    (
        "status26:",
        "${schema.metadata}: upstream's status schema names ObjectMeta's namespace \
         __namespace__ (the CEL-escaped name, from the CEL declaration of the type), so \
         kube-apiserver prunes the namespace the controller writes; ours keeps the names",
    ),
    (
        "status8:",
        "${schema.spec.extra} of an `object` field: upstream infers {type: object} with no \
         properties and no x-kubernetes-preserve-unknown-fields, so kube-apiserver prunes \
         every field of the value; ours keeps them (additionalProperties open)",
    ),
    (
        "status-shape:state overridden",
        "status.state: upstream lets the author's expression replace the injected state \
         schema, and its controller overwrites the value with the instance state; ours \
         refuses the field (ReservedStatusField)",
    ),
    (
        "status-shape:a declared field",
        "a SimpleSchema declaration in status (`integer`): our extension for typed status \
         fields (docs/scaling.md, `integer | scale`); upstream v0.9.3 allows expressions only",
    ),
    (
        "status-shape:a list of expressions of two types",
        "list items of different types: upstream keeps the type of whichever item its Go map \
         iteration visits last, so its CRD differs from run to run; ours refuses the list, \
         naming both types",
    ),
    (
        "maxItems=-1",
        "upstream writes a negative maxItems (strconv.ParseInt, no check) and kube-apiserver \
         accepts it; ours refuses the marker: kro-schema holds counts unsigned",
    ),
];

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One RGD to compare.
struct Case {
    id: String,
    rgd: Json,
}

/// Our CRD for an RGD, or why there is none.
fn ours(rgd: &Json) -> Result<Json, String> {
    let rgd: ResourceGraphDefinition =
        serde_json::from_value(rgd.clone()).map_err(|error| error.to_string())?;
    build_graph(&rgd, &SchemaSources::new())
        .map(|graph| graph.crd)
        .map_err(|errors| errors.to_string())
}

#[test]
fn the_corpus_is_large_and_its_ids_are_unique() {
    let cases = all_cases();
    let mut seen = BTreeSet::new();
    let repeated: Vec<&str> = cases
        .iter()
        .filter(|case| !seen.insert(case.id.as_str()))
        .map(|case| case.id.as_str())
        .collect();
    assert!(repeated.is_empty(), "repeated ids: {repeated:?}");
    let generated = cases
        .iter()
        .filter(|case| !case.id.starts_with("example:"))
        .count();
    assert!(generated >= 500, "only {generated} generated cases");
    let examples = cases.len() - generated;
    assert!(examples >= 40, "only {examples} example RGDs");
}

#[test]
fn crds_match_upstream_v0_9_3() {
    let Some(tool) = tool_or_skip() else {
        return;
    };
    let cases = all_cases();
    let answers = run_tool(&tool, &cases);
    let excepted = |id: &str| {
        EXCEPTIONS
            .iter()
            .map(|(pattern, _)| *pattern)
            .find(|pattern| id.contains(pattern))
    };
    let mut mismatches = Vec::new();
    let mut still_listed: BTreeSet<&str> = EXCEPTIONS.iter().map(|(pattern, _)| *pattern).collect();
    let (mut both_built, mut both_failed, mut refused, mut examples_built) = (0, 0, 0, 0);
    let mut both_refused = Vec::new();
    for case in &cases {
        let theirs = answers
            .get(&case.id)
            .unwrap_or_else(|| panic!("kro-crd gave no answer for {}", case.id));
        let mismatch = match (ours(&case.rgd), theirs) {
            (Ok(ours), Ok(Upstream { crd, refused: None })) => {
                both_built += 1;
                if case.id.starts_with("example:") {
                    examples_built += 1;
                }
                first_difference(&ours, crd, "$").map(|difference| format!("differs {difference}"))
            }
            // Upstream makes a CRD kube-apiserver refuses; ours reports the RGD instead.
            (
                Err(_),
                Ok(Upstream {
                    refused: Some(_), ..
                }),
            ) => {
                refused += 1;
                None
            }
            // Both make a CRD kube-apiserver refuses: the same one is a match (and noted).
            (
                Ok(ours),
                Ok(Upstream {
                    crd,
                    refused: Some(why),
                }),
            ) => {
                let difference = first_difference(&ours, crd, "$");
                if difference.is_none() {
                    both_refused.push(format!("{}: {why}", case.id));
                }
                difference.map(|difference| format!("differs {difference}"))
            }
            (Err(_), Err(_)) => {
                both_failed += 1;
                None
            }
            (Ok(_), Err(error)) => Some(format!("upstream fails ({error}) but ours builds")),
            (Err(error), Ok(_)) => Some(format!("ours fails ({error}) but upstream builds")),
        };
        if let Some(mismatch) = mismatch {
            if let Some(pattern) = excepted(&case.id) {
                still_listed.remove(pattern);
            } else {
                mismatches.push(format!(
                    "{}: {mismatch}\n    rgd: {}",
                    case.id, case.rgd["spec"]["schema"]
                ));
            }
        }
    }
    eprintln!(
        "crd_upstream: {} cases, {both_built} built by both ({examples_built} examples), \
         {both_failed} refused by both, {refused} refused by ours where kube-apiserver refuses \
         upstream's CRD, {} mismatches",
        cases.len(),
        mismatches.len()
    );
    // Most examples have a schema both accept; a drop means the comparison lost its subject.
    assert!(
        examples_built >= 55,
        "only {examples_built} example RGDs built by both"
    );
    if !both_refused.is_empty() {
        eprintln!(
            "crd_upstream: {} cases where both build the same CRD and kube-apiserver refuses it:\n{}",
            both_refused.len(),
            both_refused.join("\n")
        );
    }
    assert!(
        still_listed.is_empty(),
        "exceptions that excuse no mismatch now: {still_listed:?}"
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ from upstream kro v0.9.3:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}

/// The JSON path and both values at the first place `ours` and `theirs` differ. Numbers are
/// equal when their values are (`1` and `1.0`).
fn first_difference(ours: &Json, theirs: &Json, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Json::Object(a), Json::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| {
                let path = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(a), Some(b)) => first_difference(a, b, &path),
                    (a, b) => Some(format!("at {path}: ours {}, upstream {}", show(a), show(b))),
                }
            })
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(index, (a, b))| first_difference(a, b, &format!("{path}[{index}]"))),
        (Json::Number(a), Json::Number(b)) if a.as_f64() == b.as_f64() => None,
        (a, b) if a == b => None,
        (a, b) => Some(format!("at {path}: ours {a}, upstream {b}")),
    }
}

fn show(value: Option<&Json>) -> String {
    value.map_or_else(|| "absent".to_string(), Json::to_string)
}

/// The built kro-crd binary, or `None` (after printing why) when Go is missing outside CI.
fn tool_or_skip() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "crd_upstream",
        "comparing with upstream kro needs Go to build tools/kro-crd",
    ) {
        return None;
    }
    // Shared with the migration suite's builds of upstream kro: one module and build cache.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-upstream");
    Some(kro_test_support::build_go_tool("kro-crd", ".", &out))
}

/// A CRD upstream built, and why kube-apiserver's validation of a new CRD refuses it, if it does.
struct Upstream {
    crd: Json,
    refused: Option<String>,
}

/// Upstream's answer for each case id: its CRD, or its error.
fn run_tool(tool: &Path, cases: &[Case]) -> BTreeMap<String, Result<Upstream, String>> {
    let mut child = Command::new(tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", tool.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input: String = cases
        .iter()
        .map(|case| format!("{}\n", json!({"id": case.id, "rgd": case.rgd})))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("kro-crd runs to the end");
    writer
        .join()
        .expect("the writer thread does not panic")
        .expect("kro-crd reads every case");
    assert!(
        output.status.success(),
        "{} failed ({}):\n{}",
        tool.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("kro-crd prints UTF-8");
    let mut answers = BTreeMap::new();
    for line in text.lines() {
        let answer: Json = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("kro-crd printed {line:?}: {error}"));
        let id = answer["id"]
            .as_str()
            .expect("every answer has an id")
            .to_string();
        let result = match (&answer["crd"], &answer["error"]) {
            (Json::Null, Json::String(error)) => Err(error.clone()),
            (crd, Json::Null) => Ok(Upstream {
                crd: crd.clone(),
                refused: answer["refused"].as_str().map(str::to_owned),
            }),
            _ => panic!("kro-crd answered neither a CRD nor an error: {line}"),
        };
        answers.insert(id, result);
    }
    assert_eq!(answers.len(), cases.len(), "one answer per case");
    answers
}

fn all_cases() -> Vec<Case> {
    let mut cases = example_cases();
    cases.extend(corpus::cases());
    cases
}

/// Every RGD of upstream's examples and of ours, without resources and status (see the
/// module docs).
fn example_cases() -> Vec<Case> {
    let root = repository_root();
    let mut cases = Vec::new();
    for (label, dir) in [
        ("upstream", root.join("testdata/kro-upstream/examples")),
        ("ours", root.join("examples")),
    ] {
        for file in kro_test_support::yaml_files(&dir) {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            if !text.contains("ResourceGraphDefinition") {
                continue;
            }
            // Helm templates and a file that is not valid YAML (upstream's too) hold no RGD.
            let Ok(documents) = parse_yaml_documents(&text) else {
                continue;
            };
            let relative = file
                .strip_prefix(&dir)
                .unwrap_or(&file)
                .display()
                .to_string();
            for (index, document) in documents
                .iter()
                .filter(|document| document.is_resource_graph_definition())
                .enumerate()
            {
                // A controlled rollout (spec.propagateWhen) needs the gate PropagationControl
                // and adds `status.observedRevision` and a Revision column to the instance CRD
                // by design (docs/rollout.md): upstream has no such thing to compare with.
                if document.value["spec"].get("propagateWhen").is_some() {
                    continue;
                }
                let mut rgd = document.value.clone();
                if let Some(spec) = rgd.get_mut("spec").and_then(Json::as_object_mut) {
                    spec.remove("resources");
                    if let Some(schema) = spec.get_mut("schema").and_then(Json::as_object_mut) {
                        schema.remove("status");
                    }
                }
                cases.push(Case {
                    id: format!("example:{label}/{relative}#{index}"),
                    rgd,
                });
            }
        }
    }
    cases
}

/// The generated corpus.
mod corpus {
    use super::Case;
    use serde_json::{Value as Json, json};

    /// An RGD of kind `WebApp` whose schema has `schema` merged into the defaults.
    fn rgd(schema: Json) -> Json {
        let mut full = json!({"apiVersion": "v1alpha1", "kind": "WebApp"});
        if let (Some(full), Json::Object(extra)) = (full.as_object_mut(), schema) {
            full.extend(extra);
        }
        json!({
            "apiVersion": "kro.run/v1alpha1",
            "kind": "ResourceGraphDefinition",
            "metadata": {"name": "corpus"},
            "spec": {"schema": full},
        })
    }

    fn case(id: String, schema: Json) -> Case {
        Case {
            id,
            rgd: rgd(schema),
        }
    }

    /// Custom types every field case may use.
    fn types() -> Json {
        json!({
            "Person": {"name": "string | required=true", "age": "integer | default=30"},
            "Tag": "string | default=\"none\"",
            "Id": "string | required=true minLength=3",
            "Port": "integer | minimum=1 maximum=65535",
            "Labels": "map[string]string",
        })
    }

    /// Types written on one field, with every marker.
    const TYPES: &[&str] = &[
        "string",
        "integer",
        "boolean",
        "float",
        "object",
        "[]string",
        "[]integer",
        "[]float",
        "[]object",
        "[][]string",
        "map[string]string",
        "map[string]integer",
        "map[string][]boolean",
        "[]map[string]string",
        "Person",
        "[]Person",
        "map[string]Person",
        "Tag",
        "Id",
        "Port",
        "Labels",
    ];

    /// Marker lists after `|`, valid and malformed.
    const MARKERS: &[&str] = &[
        "required=true",
        "required=false",
        "required=True",
        "required=1",
        "required=yes",
        "required=true required=true",
        "default=hello",
        "default=\"hello world\"",
        "default=\"\"",
        "default=\"with \\\"quotes\\\"\"",
        "default=5",
        "default=-3",
        "default=007",
        "default=+5",
        "default=1.5",
        "default=1e3",
        "default=.5",
        "default=true",
        "default=false",
        "default=True",
        "default=1",
        "default=null",
        "default={}",
        "default={\"a\": 1}",
        "default={\"name\": \"x\"}",
        "default=[1, 2]",
        "default=[\"a\", \"b\"]",
        "default=[]",
        "default={\"a\": 1",
        "default=]",
        "default=abc",
        "description=plain",
        "description=\"A field with spaces\"",
        "description=\"a = b, and \\\"c\\\"\"",
        "description=\"\"",
        "minimum=1",
        "minimum=-1.5",
        "minimum=1e3",
        "minimum=abc",
        "maximum=10",
        "maximum=0.25",
        "minimum=5 maximum=1",
        "minimum=1 maximum=5 default=3",
        "minimum=1 default=0",
        "enum=\"a,b,c\"",
        "enum=\"1,2,3\"",
        "enum=\"x, y\"",
        "enum=\"a,,b\"",
        "enum=single",
        "enum=\"1.5,2\"",
        "enum=\"a,b\" default=c",
        "pattern=\"^[a-z]+$\"",
        "pattern=\"\\\\d+\"",
        "pattern=\"\"",
        "pattern=\"(\"",
        "pattern=\"(?=x)\"",
        "pattern=\"^a\" default=b",
        "minLength=1",
        "maxLength=10",
        "minLength=-1",
        "maxLength=-1",
        "minLength=x",
        "minLength=5 maxLength=2",
        "minLength=3 default=ab",
        "minItems=1",
        "maxItems=3",
        "minItems=-1",
        "maxItems=-1",
        "maxItems=x",
        "minItems=3 maxItems=1",
        "uniqueItems=true",
        "uniqueItems=false",
        "uniqueItems=maybe",
        "uniqueItems=true listType=atomic",
        "uniqueItems=true listType=set",
        "immutable=true",
        "immutable=false",
        "immutable=x",
        "validation=\"self != ''\"",
        "validation=\"self.size() > 1\"",
        "validation=\"\"",
        "validation=\"self >\"",
        "listType=set",
        "listType=atomic",
        "listType=map listMapKey=name",
        "listType=map",
        "listType=bogus",
        "listMapKey=name",
        "listType=map listMapKey=a listMapKey=b",
        "listType=map listMapKey=a listMapKey=a",
        "required=true default=\"x\" description=\"both\"",
        "bogus=1",
        "required",
        "=1",
        "description=\"open",
        "description=\"",
        "required=true bogus",
        "scale",
    ];

    pub(super) fn cases() -> Vec<Case> {
        let mut cases = Vec::new();
        for (t, type_text) in TYPES.iter().enumerate() {
            cases.push(case(
                format!("type{t}:{type_text}"),
                json!({"spec": {"field": type_text}, "types": types()}),
            ));
            for (m, markers) in MARKERS.iter().enumerate() {
                cases.push(case(
                    format!("type{t}-marker{m}:{type_text} | {markers}"),
                    json!({"spec": {"field": format!("{type_text} | {markers}")}, "types": types()}),
                ));
            }
        }
        for (index, declaration) in DECLARATIONS.iter().enumerate() {
            cases.push(case(
                format!("declaration{index}:{declaration:?}"),
                json!({"spec": {"field": declaration}, "types": types()}),
            ));
        }
        for (index, (name, schema)) in structures().into_iter().enumerate() {
            cases.push(case(format!("structure{index}:{name}"), schema));
        }
        for (index, (name, schema)) in envelopes().into_iter().enumerate() {
            cases.push(case(format!("envelope{index}:{name}"), schema));
        }
        for (index, status) in STATUS_EXPRESSIONS.iter().enumerate() {
            cases.push(case(
                format!("status{index}:{status}"),
                json!({"spec": status_spec(), "types": types(), "status": {"field": status}}),
            ));
        }
        for (name, status) in status_shapes() {
            cases.push(case(
                format!("status-shape:{name}"),
                json!({"spec": status_spec(), "types": types(), "status": status}),
            ));
        }
        cases
    }

    /// The spec the status cases read: a field of every type.
    fn status_spec() -> Json {
        json!({
            "name": "string | default=web",
            "count": "integer | default=1",
            "ratio": "float",
            "enabled": "boolean",
            "tags": "[]string",
            "ports": "[]integer",
            "labels": "map[string]string",
            "limits": "map[string]integer",
            "extra": "object",
            "owner": "Person",
            "people": "[]Person",
            "tag": "Tag",
            "nested": {"inner": {"deep": "string"}, "flag": "boolean"},
        })
    }

    /// Status expressions over the instance alone (no resources), whose types upstream infers
    /// for the status schema.
    const STATUS_EXPRESSIONS: &[&str] = &[
        "${schema.spec.name}",
        "${schema.spec.count}",
        "${schema.spec.ratio}",
        "${schema.spec.enabled}",
        "${schema.spec.tags}",
        "${schema.spec.ports}",
        "${schema.spec.labels}",
        "${schema.spec.limits}",
        "${schema.spec.extra}",
        "${schema.spec.owner}",
        "${schema.spec.owner.name}",
        "${schema.spec.owner.age}",
        "${schema.spec.people}",
        "${schema.spec.people[0]}",
        "${schema.spec.people[0].age}",
        "${schema.spec.tag}",
        "${schema.spec.nested}",
        "${schema.spec.nested.inner}",
        "${schema.spec.nested.inner.deep}",
        "${schema.spec.tags[0]}",
        "${schema.spec.labels['a']}",
        "${schema.spec.limits['cpu']}",
        "${schema.spec.extra.anything}",
        "${schema.metadata.name}",
        "${schema.metadata.namespace}",
        "${schema.metadata.labels}",
        "${schema.metadata}",
        "${schema.spec.count + 1}",
        "${schema.spec.count * 2.0}",
        "${double(schema.spec.count) * schema.spec.ratio}",
        "${schema.spec.ratio > 0.5}",
        "${schema.spec.name + '-suffix'}",
        "${schema.spec.name.size()}",
        "${size(schema.spec.tags)}",
        "${schema.spec.tags.size() > 0}",
        "${schema.spec.enabled ? 'on' : 'off'}",
        "${schema.spec.enabled ? 1 : 0}",
        "${has(schema.spec.extra.x)}",
        "${schema.spec.tags.map(t, t + 'x')}",
        "${schema.spec.ports.filter(p, p > 80)}",
        "${schema.spec.ports.all(p, p > 0)}",
        "${schema.spec.people.map(p, p.name)}",
        "${schema.spec.labels.map(k, k)}",
        "${[schema.spec.name, 'b']}",
        "${[1, 2, 3]}",
        "${[]}",
        "${{'a': schema.spec.count}}",
        "${{'a': 1, 'b': 'x'}}",
        "${{}}",
        "${string(schema.spec.count)}",
        "${int(schema.spec.ratio)}",
        "${uint(schema.spec.count)}",
        "${schema.spec.name.startsWith('w')}",
        "${schema.spec.name.split('-')}",
        "${schema.spec.name.upperAscii()}",
        "${schema.spec.name.matches('^w')}",
        "${duration('1h')}",
        "${timestamp('2024-01-01T00:00:00Z')}",
        "${b'bytes'}",
        "${null}",
        "${schema.spec.?extra.?x.orValue('d')}",
        "${schema.spec.count == 1 ? schema.spec.name : schema.spec.tags[0]}",
        "prefix-${schema.spec.name}",
        "${schema.spec.name}-${schema.spec.count}",
        "${schema.spec.name}${schema.spec.name}",
        "count is ${string(schema.spec.count)}",
        "plain text",
        "",
        "${schema.spec.missing}",
        "${schema.spec.name.missing}",
        "${deployment.status}",
        "${schema.status.state}",
        "${schema.spec.count + 'x'}",
        "${schema.spec.name +}",
        "${",
        "${}",
    ];

    /// Status maps: nesting, several fields, conditions, values other than expressions.
    fn status_shapes() -> Vec<(&'static str, Json)> {
        vec![
            ("empty", json!({})),
            (
                "nested",
                json!({"a": {"b": "${schema.spec.name}", "c": {"d": "${schema.spec.count}"}}}),
            ),
            (
                "several",
                json!({"x": "${schema.spec.name}", "y": "${schema.spec.tags}", "z": "${schema.spec.owner}"}),
            ),
            ("a number", json!({"a": 5})),
            ("a boolean", json!({"a": true})),
            (
                "a list of expressions",
                json!({"a": ["${schema.spec.name}"]}),
            ),
            (
                "a list of expressions of one type",
                json!({"a": ["${schema.spec.name}", "${schema.spec.name + 'x'}"]}),
            ),
            (
                "a list of expressions of two types",
                json!({"a": ["${schema.spec.name}", "${schema.spec.count}"]}),
            ),
            (
                "a list of objects merging their fields",
                json!({"a": [{"b": "${schema.spec.name}"}, {"c": "${schema.spec.count}", "b": "${schema.spec.tag}"}]}),
            ),
            (
                "a list of lists",
                json!({"a": [["${schema.spec.name}"], ["${schema.spec.tag}", "${schema.spec.name}"]]}),
            ),
            (
                "a list of objects from expressions",
                json!({"a": ["${schema.spec.owner}", "${schema.spec.owner}"]}),
            ),
            (
                "an empty list",
                json!({"a": [], "b": "${schema.spec.name}"}),
            ),
            (
                "a list with a literal",
                json!({"a": ["x", "${schema.spec.name}"]}),
            ),
            (
                "a list with a constant expression",
                json!({"a": ["${1}", "${schema.spec.name}"]}),
            ),
            ("null", json!({"a": null})),
            ("state overridden", json!({"state": "${schema.spec.count}"})),
            (
                "conditions",
                json!({"conditions": ["${{'type': 'Custom', 'status': 'True'}}"], "a": "${schema.spec.name}"}),
            ),
            (
                "conditions not a list",
                json!({"conditions": "${schema.spec.name}"}),
            ),
            ("conditions with a number", json!({"conditions": [5]})),
            ("a declared field", json!({"a": "integer"})),
        ]
    }

    /// Whole declarations: type syntax, spacing and the marker separator.
    const DECLARATIONS: &[&str] = &[
        "",
        " ",
        " string ",
        "string|required=true",
        "string |",
        "string | ",
        "string | required=true ",
        "string |  required=true   default=x",
        " | required=true",
        "string | required=true | default=x",
        "[] string",
        "[]",
        "[][]",
        "map[string] integer",
        "map[string]",
        "map[string] ",
        "map[integer]string",
        "map[ string]string",
        "map[string ]string",
        "map[string]map[string]string",
        "map[string]",
        "map[]string",
        "map[string]]string",
        "number",
        "int",
        "bool",
        "String",
        "unknownType",
        "Strin g",
        "[]Unknown",
        "map[string]Unknown",
        "[][][][][][][][][][][][][][][][]string",
        "[][][][][][][][][][][][][][][][][]string",
        "map[string][]map[string][]Person",
        "Person | required=true",
        "Person | default={}",
        "Person | default={\"name\": \"n\"}",
        "Tag | required=true",
        "Id | required=false",
        "[]Id",
        "object | default={\"any\": [1]}",
        "string | description=\"tab\there\"",
        "string | description=\"back\\\\slash\"",
        "string | description=\"ünïcödé\"",
        "string | default=\"a b\" description=c",
        "string | default={\"a\": \"b c\"}",
        "[]string | default=[\"a b\", \"c\"]",
        "string | enum=\"a b,c\"",
        "string|default=x|required=true",
    ];

    /// Nested objects, custom types and field values of other kinds.
    fn structures() -> Vec<(&'static str, Json)> {
        vec![
            ("empty spec", json!({"spec": {}})),
            ("no spec", json!({})),
            (
                "nested object",
                json!({"spec": {"a": {"b": "string", "c": {"d": "integer | default=1"}}}}),
            ),
            (
                "nested required",
                json!({"spec": {"a": {"b": "string | required=true", "c": "integer | default=1"}}}),
            ),
            (
                "nested default propagates",
                json!({"spec": {"a": {"b": {"c": "string | default=x"}}, "d": "string"}}),
            ),
            (
                "required and default siblings",
                json!({"spec": {"a": "string | required=true", "b": "string | default=y"}}),
            ),
            ("empty nested object", json!({"spec": {"a": {}}})),
            ("field is a number", json!({"spec": {"a": 5}})),
            ("field is a boolean", json!({"spec": {"a": true}})),
            ("field is null", json!({"spec": {"a": null}})),
            ("field is a list", json!({"spec": {"a": ["string"]}})),
            ("spec is a string", json!({"spec": "string"})),
            ("spec is a list", json!({"spec": ["a"]})),
            (
                "struct type",
                json!({"spec": {"p": "Person"}, "types": {"Person": {"name": "string"}}}),
            ),
            (
                "struct type with default",
                json!({"spec": {"p": "Person"}, "types": {"Person": {"name": "string | default=n"}}}),
            ),
            (
                "alias required",
                json!({"spec": {"p": "Name"}, "types": {"Name": "string | required=true"}}),
            ),
            (
                "alias required in a list",
                json!({"spec": {"p": "[]Name"}, "types": {"Name": "string | required=true"}}),
            ),
            (
                "alias required and marked required",
                json!({"spec": {"p": "Name | required=true"}, "types": {"Name": "string | required=true"}}),
            ),
            (
                "alias markers and field markers",
                json!({"spec": {"p": "Name | description=field"}, "types": {"Name": "string | description=type default=d"}}),
            ),
            (
                "type chain",
                json!({"spec": {"a": "A"}, "types": {"A": {"b": "B"}, "B": {"c": "C"}, "C": "integer | default=1"}}),
            ),
            (
                "type chain of lists",
                json!({"spec": {"a": "[]A"}, "types": {"A": {"b": "map[string]B"}, "B": "[]string"}}),
            ),
            (
                "type cycle",
                json!({"spec": {"a": "A"}, "types": {"A": {"b": "B"}, "B": {"a": "A"}}}),
            ),
            (
                "type self cycle",
                json!({"spec": {"a": "A"}, "types": {"A": {"a": "[]A"}}}),
            ),
            (
                "type uses an unknown type",
                json!({"spec": {"a": "string"}, "types": {"A": {"b": "Missing"}}}),
            ),
            (
                "unused type with bad markers",
                json!({"spec": {"a": "string"}, "types": {"A": "string | bogus=1"}}),
            ),
            (
                "type is a number",
                json!({"spec": {"a": "string"}, "types": {"A": 5}}),
            ),
            (
                "types is a list",
                json!({"spec": {"a": "string"}, "types": ["A"]}),
            ),
            (
                "type named like an atomic",
                json!({"spec": {"a": "string"}, "types": {"string": {"x": "integer"}}}),
            ),
            (
                "type name with a space",
                json!({"spec": {"a": "My Type"}, "types": {"My Type": "string"}}),
            ),
            (
                "type name with a dot",
                json!({"spec": {"a": "my.Type"}, "types": {"my.Type": "integer"}}),
            ),
            (
                "type name lower case",
                json!({"spec": {"a": "person"}, "types": {"person": {"n": "string"}}}),
            ),
            (
                "nested struct type with required",
                json!({"spec": {"a": {"p": "Person"}}, "types": {"Person": {"n": "string | required=true"}}}),
            ),
            (
                "struct type inside struct type",
                json!({"spec": {"a": "Outer"}, "types": {"Outer": {"in": "Inner", "x": "string"}, "Inner": {"y": "string | default=z"}}}),
            ),
            (
                "struct type with nested object",
                json!({"spec": {"a": "Outer"}, "types": {"Outer": {"in": {"y": "string | required=true"}}}}),
            ),
            (
                "many fields",
                json!({"spec": {
                    "name": "string | required=true description=\"The name\"",
                    "replicas": "integer | default=1 minimum=0 maximum=10",
                    "image": "string | default=\"nginx:latest\"",
                    "ports": "[]integer | uniqueItems=true",
                    "env": "map[string]string",
                    "enabled": "boolean | default=true",
                    "ratio": "float | default=0.5",
                    "extra": "object",
                    "ingress": {"enabled": "boolean | default=false", "host": "string"},
                }}),
            ),
            (
                "field named required",
                json!({"spec": {"required": "string | required=true", "default": "string"}}),
            ),
            (
                "field named with a dash",
                json!({"spec": {"my-field": "string", "with.dot": "integer"}}),
            ),
            (
                "status only",
                json!({"spec": {"a": "string"}, "status": {}}),
            ),
        ]
    }

    /// The CRD's envelope: names, group, version, scope, printer columns, metadata.
    fn envelopes() -> Vec<(&'static str, Json)> {
        let spec = json!({"name": "string"});
        let with = |extra: Json| {
            let mut schema = json!({"spec": spec});
            if let (Some(schema), Json::Object(extra)) = (schema.as_object_mut(), extra) {
                schema.extend(extra);
            }
            schema
        };
        let mut envelopes = vec![
            ("group", with(json!({"group": "example.com"}))),
            ("empty group", with(json!({"group": ""}))),
            ("version v1", with(json!({"apiVersion": "v1"}))),
            ("version v2beta3", with(json!({"apiVersion": "v2beta3"}))),
            ("cluster scope", with(json!({"scope": "Cluster"}))),
            ("namespaced scope", with(json!({"scope": "Namespaced"}))),
            ("lower-case kind", with(json!({"kind": "webApp"}))),
            ("kind with a dash", with(json!({"kind": "Web-App"}))),
            ("kind with digits", with(json!({"kind": "App2"}))),
            (
                "printer columns",
                with(json!({"additionalPrinterColumns": [
                    {"name": "Name", "type": "string", "jsonPath": ".spec.name"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": "age", "priority": 1, "format": "date-time"},
                ]})),
            ),
            (
                "printer column with priority 0",
                with(json!({"additionalPrinterColumns": [
                    {"name": "Name", "type": "string", "jsonPath": ".spec.name", "priority": 0},
                ]})),
            ),
            (
                "no printer columns",
                with(json!({"additionalPrinterColumns": []})),
            ),
            (
                "crd labels and annotations",
                with(json!({"metadata": {"labels": {"team": "a"}, "annotations": {"note": "b"}}})),
            ),
            (
                "empty crd metadata",
                with(json!({"metadata": {"labels": {}, "annotations": {}}})),
            ),
        ];
        for kind in [
            "Person",
            "Box",
            "Policy",
            "Status",
            "Index",
            "Database",
            "DNS",
            "RDSPostgres",
            "Ox",
            "Sheep",
            "Child",
            "Analysis",
            "Matrix",
            "Leaf",
            "Cactus",
            "Quiz",
        ] {
            envelopes.push((kind, with(json!({"kind": kind}))));
        }
        envelopes
    }
}
