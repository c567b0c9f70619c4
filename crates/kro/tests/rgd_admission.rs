//! The ResourceGraphDefinition CRD's admission rules against upstream kro v0.9.4's (issue #40):
//! a corpus of RGDs, each malformed in one way (and a few valid ones, with upstream's and this
//! project's examples), is written to kube-apiserver under upstream's CRD and then under ours
//! (`kro_graph::resource_graph_definition_crd`). Each refusal must be the same under both: the
//! status code, reason and message, and every cause (field and message). The cases where the
//! two differ on purpose say so and why, in the corpus. The embedded API server (`kro
//! apiserver`, which `kro dev` runs) gets the same corpus under both CRDs, and must answer each
//! case exactly as kube-apiserver does.
//!
//! Both CRDs are named `resourcegraphdefinitions.kro.run`, so a server has one, then the
//! other; the kube-apiserver is one of this suite's own. Without a real control plane (no Go,
//! no built binaries) the corpus still runs on the embedded server alone.

use std::path::Path;
use std::time::Duration;

use axum::http::{Method, Request};
use kro_apiserver::{ServerConfig, Simulators};
use kro_test_support::{private_control_plane_or_skip, repository_root, yaml_files};
use serde_json::{Value as Json, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const RGD_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/resourcegraphdefinitions.kro.run";
const RGDS: &str = "/apis/kro.run/v1alpha1/resourcegraphdefinitions";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

/// What a case gets under each CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Both refuse it, for the same fields with the same messages.
    Refused,
    /// Both admit it.
    Admitted,
    /// Upstream's CRD refuses it and ours admits it: it uses an addition of this project.
    OursAdmits,
    /// Upstream's CRD admits it (pruning a field it does not know) and ours refuses it.
    OursRefuses,
}

/// One RGD of the corpus.
struct Case {
    /// What is wrong with it (or right).
    name: String,
    expect: Expect,
    /// The RGD: created with a dry run or, with `update`, created for real first.
    rgd: Json,
    /// A merge patch applied to the created RGD with a dry run.
    update: Option<Json>,
}

/// What a server answered: the status code and, for a refusal, the whole `Status`.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    code: u16,
    status: Option<Json>,
}

impl Verdict {
    fn is_admitted(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

/// A valid RGD: one ConfigMap per instance.
fn valid() -> Json {
    json!({
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "metadata": {"name": "app"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1",
                "kind": "App",
                "spec": {"name": "string"},
                "status": {"data": "${config.data}"},
            },
            "resources": [{
                "id": "config",
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "${schema.spec.name}"},
                    "data": {"a": "b"},
                },
            }],
        },
    })
}

fn create(name: &str, expect: Expect, edit: impl FnOnce(&mut Json)) -> Case {
    let mut rgd = valid();
    edit(&mut rgd);
    Case {
        name: name.to_owned(),
        expect,
        rgd,
        update: None,
    }
}

fn update(name: &str, expect: Expect, edit: impl FnOnce(&mut Json), patch: Json) -> Case {
    Case {
        update: Some(patch),
        ..create(name, expect, edit)
    }
}

/// Sets `value` at the JSON pointer `at` (parents must exist).
fn set(rgd: &mut Json, at: &str, value: Json) {
    let (parent, key) = at.rsplit_once('/').expect("a pointer with a parent");
    let parent = rgd
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{parent} exists"));
    match parent {
        Json::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Json::Array(items) => {
            let index: usize = key.parse().expect("an index");
            if index == items.len() {
                items.push(value);
            } else {
                items[index] = value;
            }
        }
        _ => panic!("{parent} is neither an object nor a list"),
    }
}

fn remove(rgd: &mut Json, at: &str) {
    let (parent, key) = at.rsplit_once('/').expect("a pointer with a parent");
    rgd.pointer_mut(parent)
        .and_then(Json::as_object_mut)
        .and_then(|map| map.remove(key))
        .unwrap_or_else(|| panic!("{at} exists"));
}

/// A create with `value` at `at`.
fn with(name: &str, expect: Expect, at: &str, value: Json) -> Case {
    create(name, expect, |rgd| set(rgd, at, value))
}

/// A create without the field at `at`.
fn without(name: &str, expect: Expect, at: &str) -> Case {
    create(name, expect, |rgd| remove(rgd, at))
}

/// A create whose first resource is `resource`.
fn resource(name: &str, expect: Expect, resource: Json) -> Case {
    with(name, expect, "/spec/resources/0", resource)
}

fn config_map() -> Json {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${schema.spec.name}"}})
}

fn external_ref() -> Json {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}})
}

fn names(count: usize) -> Json {
    Json::Array((0..count).map(|index| json!(format!("n{index}"))).collect())
}

/// The RGDs, each with what both CRDs must make of it.
fn corpus() -> Vec<Case> {
    use Expect::{Admitted, OursAdmits, OursRefuses, Refused};
    let schema = |field: &str| format!("/spec/schema/{field}");
    let mut cases = vec![
        // spec.schema: the generated API's names.
        with(
            "apiVersion is not a version",
            Refused,
            &schema("apiVersion"),
            json!("1.0"),
        ),
        with(
            "apiVersion has an unknown stage",
            Refused,
            &schema("apiVersion"),
            json!("v1gamma1"),
        ),
        with(
            "apiVersion is empty",
            Refused,
            &schema("apiVersion"),
            json!(""),
        ),
        with(
            "apiVersion is a number",
            Refused,
            &schema("apiVersion"),
            json!(1),
        ),
        without("apiVersion is missing", Refused, &schema("apiVersion")),
        with(
            "kind is lowerCamelCase",
            Refused,
            &schema("kind"),
            json!("app"),
        ),
        with(
            "kind has a dash",
            Refused,
            &schema("kind"),
            json!("App-Server"),
        ),
        with(
            "kind is 64 characters long",
            Refused,
            &schema("kind"),
            json!(format!("A{}", "b".repeat(63))),
        ),
        with("kind is empty", Refused, &schema("kind"), json!("")),
        without("kind is missing", Refused, &schema("kind")),
        with("group is a number", Refused, &schema("group"), json!(7)),
        with(
            "scope is not an enum value",
            Refused,
            &schema("scope"),
            json!("Global"),
        ),
        with(
            "scope is lower-case",
            Refused,
            &schema("scope"),
            json!("namespaced"),
        ),
        without("schema is missing", Refused, "/spec/schema"),
        with("schema is a string", Refused, "/spec/schema", json!("App")),
        with("spec is a string", Refused, "/spec", json!("app")),
        with(
            "schema.spec is a string",
            Refused,
            &schema("spec"),
            json!("string"),
        ),
        with(
            "schema.types is a list",
            Refused,
            &schema("types"),
            json!(["a"]),
        ),
        with(
            "schema.status is a number",
            Refused,
            &schema("status"),
            json!(1),
        ),
        // Short names and categories of the generated kind.
        with(
            "a short name is upper-case",
            Refused,
            &schema("shortNames"),
            json!(["App"]),
        ),
        with(
            "a short name ends with a dash",
            Refused,
            &schema("shortNames"),
            json!(["app-"]),
        ),
        with(
            "a short name is 64 characters long",
            Refused,
            &schema("shortNames"),
            json!(["a".repeat(64)]),
        ),
        with(
            "short names repeat",
            Refused,
            &schema("shortNames"),
            json!(["app", "app"]),
        ),
        with("33 short names", Refused, &schema("shortNames"), names(33)),
        with(
            "shortNames is a string",
            Refused,
            &schema("shortNames"),
            json!("app"),
        ),
        with(
            "a category starts with a digit",
            Refused,
            &schema("categories"),
            json!(["1apps"]),
        ),
        with(
            "categories repeat",
            Refused,
            &schema("categories"),
            json!(["apps", "apps"]),
        ),
        with("33 categories", Refused, &schema("categories"), names(33)),
        with(
            "a category is a number",
            Refused,
            &schema("categories"),
            json!([1]),
        ),
        // Printer columns.
        with(
            "a printer column has no name",
            Refused,
            &schema("additionalPrinterColumns"),
            json!([{"type": "string", "jsonPath": ".spec.name"}]),
        ),
        with(
            "a printer column has no type",
            Refused,
            &schema("additionalPrinterColumns"),
            json!([{"name": "NAME", "jsonPath": ".spec.name"}]),
        ),
        with(
            "a printer column has no jsonPath",
            Refused,
            &schema("additionalPrinterColumns"),
            json!([{"name": "NAME", "type": "string"}]),
        ),
        with(
            "a printer column is empty",
            Refused,
            &schema("additionalPrinterColumns"),
            json!([{}]),
        ),
        with(
            "a printer column's priority is a string",
            Refused,
            &schema("additionalPrinterColumns"),
            json!([{"name": "NAME", "type": "string", "jsonPath": ".spec.name", "priority": "high"}]),
        ),
        with(
            "printer columns are an object",
            Refused,
            &schema("additionalPrinterColumns"),
            json!({"name": "NAME"}),
        ),
        // Labels and annotations of the generated CRD.
        with(
            "a CRD label is a number",
            Refused,
            &schema("metadata"),
            json!({"labels": {"team": 1}}),
        ),
        with(
            "CRD annotations are a list",
            Refused,
            &schema("metadata"),
            json!({"annotations": ["a"]}),
        ),
        // spec.resources.
        with(
            "resources is an object",
            Refused,
            "/spec/resources",
            json!({"id": "config"}),
        ),
        without("a resource has no id", Refused, "/spec/resources/0/id"),
        with(
            "a resource's id is a number",
            Refused,
            "/spec/resources/0/id",
            json!(1),
        ),
        resource(
            "a resource has both a template and an externalRef",
            Refused,
            json!({"id": "config", "template": config_map(), "externalRef": external_ref()}),
        ),
        resource(
            "a resource has neither a template nor an externalRef",
            Refused,
            json!({"id": "config"}),
        ),
        resource(
            "a resource has only readyWhen",
            Refused,
            json!({"id": "config", "readyWhen": ["${config.data != null}"]}),
        ),
        with(
            "a template is a string",
            Refused,
            "/spec/resources/0/template",
            json!("ConfigMap"),
        ),
        with(
            "readyWhen is a string",
            Refused,
            "/spec/resources/0/readyWhen",
            json!("${true}"),
        ),
        with(
            "an includeWhen entry is a boolean",
            Refused,
            "/spec/resources/0/includeWhen",
            json!([true]),
        ),
        with(
            "a forEach dimension has two variables",
            Refused,
            "/spec/resources/0/forEach",
            json!([{"a": "${schema.spec.items}", "b": "${schema.spec.items}"}]),
        ),
        with(
            "a forEach dimension is empty",
            Refused,
            "/spec/resources/0/forEach",
            json!([{}]),
        ),
        with(
            "a forEach dimension's expression is a number",
            Refused,
            "/spec/resources/0/forEach",
            json!([{"a": 1}]),
        ),
        with(
            "a forEach dimension is a string",
            Refused,
            "/spec/resources/0/forEach",
            json!(["${schema.spec.items}"]),
        ),
        // externalRef.
        resource(
            "an externalRef has no apiVersion",
            Refused,
            json!({"id": "shared", "externalRef": {"kind": "ConfigMap", "metadata": {"name": "a"}}}),
        ),
        resource(
            "an externalRef has no kind",
            Refused,
            json!({"id": "shared", "externalRef": {"apiVersion": "v1", "metadata": {"name": "a"}}}),
        ),
        resource(
            "an externalRef has no metadata",
            Refused,
            json!({"id": "shared", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap"}}),
        ),
        resource(
            "an externalRef's name is empty",
            Refused,
            json!({"id": "shared", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}}),
        ),
        resource(
            "an externalRef is a string",
            Refused,
            json!({"id": "shared", "externalRef": "v1/ConfigMap"}),
        ),
        // Several problems at once: every cause, in the same order, and the CEL rules not run.
        create("several fields are wrong at once", Refused, |rgd| {
            set(rgd, &schema("kind"), json!("app"));
            set(rgd, &schema("scope"), json!("Global"));
            set(rgd, &schema("shortNames"), json!(["a", "a"]));
            set(rgd, "/spec/resources/0/externalRef", external_ref());
        }),
        create(
            "two resources break the template-or-externalRef rule",
            Refused,
            |rgd| {
                set(rgd, "/spec/resources/0/externalRef", external_ref());
                set(rgd, "/spec/resources/1", json!({"id": "other"}));
            },
        ),
        // The generated API's names do not change once created.
        update(
            "kind changes",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"kind": "Other"}}}),
        ),
        update(
            "apiVersion changes",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"apiVersion": "v1"}}}),
        ),
        update(
            "group is set where it was defaulted",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"group": "example.com"}}}),
        ),
        update(
            "group changes",
            Refused,
            |rgd| set(rgd, &schema("group"), json!("example.com")),
            json!({"spec": {"schema": {"group": "example.org"}}}),
        ),
        update(
            "scope changes",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"scope": "Cluster"}}}),
        ),
        update(
            "kind and apiVersion change",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"kind": "Other", "apiVersion": "v2"}}}),
        ),
        update(
            "kind changes to an invalid kind",
            Refused,
            |_| {},
            json!({"spec": {"schema": {"kind": "other"}}}),
        ),
        // Valid RGDs and updates.
        create("the valid RGD", Admitted, |_| {}),
        create("every field upstream knows", Admitted, |rgd| {
            set(
                rgd,
                "/spec/schema",
                json!({
                    "apiVersion": "v1beta2",
                    "kind": "Z9",
                    "group": "example.com",
                    "scope": "Cluster",
                    "spec": {"name": "string", "items": "[]string"},
                    "types": {"Port": {"number": "integer"}},
                    "status": {"data": "${config.data}"},
                    "additionalPrinterColumns": [{"name": "NAME", "type": "string", "jsonPath": ".spec.name",
                        "description": "d", "format": "name", "priority": 1}],
                    "shortNames": ["z", "z9-a"],
                    "categories": ["all", "apps"],
                    "metadata": {"labels": {"team": "a"}, "annotations": {"note": "b"}},
                }),
            );
            set(
                rgd,
                "/spec/resources/0/readyWhen",
                json!(["${config.data != null}"]),
            );
            set(
                rgd,
                "/spec/resources/0/includeWhen",
                json!(["${schema.spec.name != ''}"]),
            );
            set(
                rgd,
                "/spec/resources/0/forEach",
                json!([{"item": "${schema.spec.items}"}]),
            );
            set(
                rgd,
                "/spec/resources/1",
                json!({"id": "shared", "externalRef": external_ref()}),
            );
        }),
        with("32 short names", Admitted, &schema("shortNames"), names(32)),
        with(
            "a short name of 63 characters",
            Admitted,
            &schema("shortNames"),
            json!(["a".repeat(63)]),
        ),
        with(
            "a kind of 63 characters",
            Admitted,
            &schema("kind"),
            json!(format!("A{}", "b".repeat(62))),
        ),
        resource(
            "an externalRef by selector",
            Admitted,
            json!({"id": "shared", "externalRef": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"selector": {"matchLabels": {"a": "b"}}}}}),
        ),
        // Upstream v0.9.4 has no rule that exactly one of name and selector is set; the
        // controller refuses it when it compiles the RGD.
        resource(
            "an externalRef with neither name nor selector",
            Admitted,
            json!({"id": "shared", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}}),
        ),
        with("an empty id", Admitted, "/spec/resources/0/id", json!("")),
        without("no resources", Admitted, "/spec/resources"),
        update(
            "the resources change",
            Admitted,
            |_| {},
            json!({"spec": {"resources": [{"id": "other", "template": config_map()}]}}),
        ),
        update(
            "group is set to its default",
            Admitted,
            |_| {},
            json!({"spec": {"schema": {"group": "kro.run"}}}),
        ),
        update(
            "scope is set to its default",
            Admitted,
            |_| {},
            json!({"spec": {"schema": {"scope": "Namespaced"}}}),
        ),
        // This project's additions.
        resource(
            "a data node",
            OursAdmits,
            json!({"id": "vars", "data": {"name": "${schema.spec.name}"}}),
        ),
        resource(
            "a data node holding one expression",
            OursAdmits,
            json!({"id": "vars", "data": "${schema.spec.name}"}),
        ),
        with(
            "forEach as one expression",
            OursAdmits,
            "/spec/resources/0/forEach",
            json!("${schema.spec.items}"),
        ),
        // Neither a list nor an expression: the controller refuses it when it compiles the RGD
        // (the CRD cannot tell a string from a number where a field has no type).
        with(
            "forEach is a number",
            OursAdmits,
            "/spec/resources/0/forEach",
            json!(3),
        ),
        resource(
            "a data node with a template",
            OursRefuses,
            json!({"id": "config", "data": {"a": "b"}, "template": config_map()}),
        ),
        resource(
            "a data node with an externalRef",
            OursRefuses,
            json!({"id": "config", "data": "x", "externalRef": external_ref()}),
        ),
        with(
            "scaling has no method",
            OursRefuses,
            "/spec/scaling",
            json!({"kind": "AppSet"}),
        ),
        with(
            "scaling has an unknown method",
            OursRefuses,
            "/spec/scaling",
            json!({"kind": "AppSet", "method": "percent"}),
        ),
        with(
            "scaling's kind is lower-case",
            OursRefuses,
            "/spec/scaling",
            json!({"kind": "appSet", "method": "replicas"}),
        ),
        with(
            "scaling",
            Admitted,
            "/spec/scaling",
            json!({"kind": "AppSet", "method": "replicas"}),
        ),
    ];
    cases.extend(examples());
    for (index, case) in cases.iter_mut().enumerate() {
        case.rgd["metadata"]["name"] = json!(format!("case-{index:03}"));
    }
    cases
}

/// Upstream's examples (admitted by both) and this project's (admitted by ours; those that use
/// its additions are refused by upstream's CRD).
fn examples() -> Vec<Case> {
    let root = repository_root();
    let mut files = yaml_files(&root.join("testdata/kro-upstream/examples"));
    files.extend(yaml_files(&root.join("examples")));
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("an example");
        // Some files of upstream's examples are Helm templates, not YAML.
        if !text.contains("kind: ResourceGraphDefinition") {
            continue;
        }
        let documents = kro_graph::parse_yaml_documents(&text)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for document in documents {
            if document.value["kind"] != "ResourceGraphDefinition" {
                continue;
            }
            let expect = if OURS_ONLY.contains(&relative.as_str()) {
                Expect::OursAdmits
            } else if REFUSED_BY_UPSTREAM.contains(&relative.as_str()) {
                Expect::Refused
            } else {
                Expect::Admitted
            };
            cases.push(Case {
                name: relative.clone(),
                expect,
                rgd: document.value,
                update: None,
            });
        }
    }
    cases
}

/// This project's examples that use its additions (data nodes, `forEach` as one expression).
const OURS_ONLY: &[&str] = &["examples/data-node/rgd.yaml", "examples/workers/rgd.yaml"];

/// Upstream's examples that its own CRD refuses: an externalRef whose `metadata:` is empty (its
/// fields are indented one level too little).
const REFUSED_BY_UPSTREAM: &[&str] = &["testdata/kro-upstream/examples/gcp/gemma-on-tpu/rgd.yaml"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_rgds_are_refused_as_upstream_refuses_them() {
    let cases = corpus();
    let upstream = upstream_crd();
    let ours = kro_graph::resource_graph_definition_crd();
    let mut mismatches = Vec::new();

    let (_server, embedded) = embedded_server().await;
    let embedded_upstream = verdicts(&embedded, &upstream, &cases).await;
    let embedded_ours = verdicts(&embedded, &ours, &cases).await;

    match private_control_plane_or_skip("rgd_admission") {
        Some(control_plane) => {
            let real = real_client(control_plane.kubeconfig()).await;
            let real_upstream = verdicts(&real, &upstream, &cases).await;
            let real_ours = verdicts(&real, &ours, &cases).await;
            expectations(
                &cases,
                &real_upstream,
                &real_ours,
                "kube-apiserver",
                &mut mismatches,
            );
            equal(
                &cases,
                &real_ours,
                &embedded_ours,
                "our CRD",
                &mut mismatches,
            );
            equal(
                &cases,
                &real_upstream,
                &embedded_upstream,
                "upstream's CRD",
                &mut mismatches,
            );
            summary(&cases, &real_ours);
        }
        None => {
            expectations(
                &cases,
                &embedded_upstream,
                &embedded_ours,
                "kro apiserver",
                &mut mismatches,
            );
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches in a corpus of {} RGDs:\n\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n\n")
    );
}

/// Prints how many cases of each kind were run.
fn summary(cases: &[Case], ours: &[Verdict]) {
    let count = |expect: Expect| cases.iter().filter(|case| case.expect == expect).count();
    let refused = ours.iter().filter(|verdict| !verdict.is_admitted()).count();
    eprintln!(
        "rgd_admission: {} RGDs ({} refused by both, {} admitted by both, {} admitted by ours only, {} refused by ours only); our CRD refused {refused}",
        cases.len(),
        count(Expect::Refused),
        count(Expect::Admitted),
        count(Expect::OursAdmits),
        count(Expect::OursRefuses),
    );
}

/// Each case's verdicts under upstream's CRD and ours, held to what the case expects.
fn expectations(
    cases: &[Case],
    upstream: &[Verdict],
    ours: &[Verdict],
    server: &str,
    mismatches: &mut Vec<String>,
) {
    for ((case, upstream), ours) in cases.iter().zip(upstream).zip(ours) {
        let holds = match case.expect {
            Expect::Refused => !upstream.is_admitted() && upstream == ours,
            Expect::Admitted => upstream.is_admitted() && ours.is_admitted(),
            Expect::OursAdmits => !upstream.is_admitted() && ours.is_admitted(),
            Expect::OursRefuses => upstream.is_admitted() && !ours.is_admitted(),
        };
        if !holds {
            mismatches.push(format!(
                "{server}: {} (expected {:?}):\n  upstream's CRD: {}\n  ours:           {}",
                case.name,
                case.expect,
                show(upstream),
                show(ours)
            ));
        }
    }
}

/// The two servers' verdicts must be the same, case by case.
fn equal(
    cases: &[Case],
    real: &[Verdict],
    embedded: &[Verdict],
    crd: &str,
    mismatches: &mut Vec<String>,
) {
    for ((case, real), embedded) in cases.iter().zip(real).zip(embedded) {
        if real != embedded {
            mismatches.push(format!(
                "{crd}: {}: kro apiserver answers otherwise than kube-apiserver:\n  kube-apiserver: {}\n  kro apiserver:  {}",
                case.name,
                show(real),
                show(embedded)
            ));
        }
    }
}

fn show(verdict: &Verdict) -> String {
    match &verdict.status {
        None => verdict.code.to_string(),
        Some(status) => format!("{} {}", verdict.code, status),
    }
}

/// Upstream kro v0.9.4's CRD, vendored from its Helm chart.
fn upstream_crd() -> Json {
    let path = repository_root()
        .join("testdata/kro-upstream/crds/v0.9.4/kro.run_resourcegraphdefinitions.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut documents = kro_graph::parse_yaml_documents(&text).expect("upstream's CRD is YAML");
    documents.remove(0).value
}

/// Installs `crd`, answers every case under it, and removes it again.
async fn verdicts(client: &kube::Client, crd: &Json, cases: &[Case]) -> Vec<Verdict> {
    install(client, crd).await;
    let mut verdicts = Vec::with_capacity(cases.len());
    for case in cases {
        verdicts.push(verdict(client, case).await);
    }
    uninstall(client).await;
    verdicts
}

async fn verdict(client: &kube::Client, case: &Case) -> Verdict {
    let Some(patch) = &case.update else {
        let dry_run = format!("{RGDS}?dryRun=All");
        return answer(send(client, Method::POST, &dry_run, JSON, Some(&case.rgd)).await);
    };
    let (code, body) = send(client, Method::POST, RGDS, JSON, Some(&case.rgd)).await;
    assert_eq!(
        code, 201,
        "{}: the RGD to update is created: {body}",
        case.name
    );
    let path = format!(
        "{RGDS}/{}",
        case.rgd["metadata"]["name"].as_str().expect("a name")
    );
    let verdict = answer(
        send(
            client,
            Method::PATCH,
            &format!("{path}?dryRun=All"),
            MERGE,
            Some(patch),
        )
        .await,
    );
    let (code, body) = send(client, Method::DELETE, &path, JSON, None).await;
    assert_eq!(code, 200, "{}: the RGD is deleted: {body}", case.name);
    verdict
}

fn answer((code, body): (u16, Json)) -> Verdict {
    let status = (!(200..300).contains(&code)).then(|| in_cause_order(body));
    Verdict { code, status }
}

/// A refusal with its causes sorted, and its message listing them in that order.
/// kube-apiserver checks an object's properties in Go map order, which changes from one
/// request to the next, and so does the order of the causes of one refusal.
fn in_cause_order(mut status: Json) -> Json {
    let Some(causes) = status["details"]["causes"].as_array().cloned() else {
        return status;
    };
    let Some(message) = status["message"].as_str() else {
        return status;
    };
    let line = |cause: &Json| {
        format!(
            "{}: {}",
            cause["field"].as_str().unwrap_or_default(),
            cause["message"].as_str().unwrap_or_default()
        )
    };
    let listed = |causes: &[Json]| match causes {
        [one] => line(one),
        _ => format!(
            "[{}]",
            causes.iter().map(line).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut sorted = causes.clone();
    sorted.sort_by_key(line);
    // Only a message that lists exactly its causes is rewritten; any other is compared as is.
    if let Some(head) = message.strip_suffix(&listed(&causes)) {
        status["message"] = json!(format!("{head}{}", listed(&sorted)));
        status["details"]["causes"] = Json::Array(sorted);
    }
    status
}

async fn install(client: &kube::Client, crd: &Json) {
    let crd = json!({
        "apiVersion": crd["apiVersion"],
        "kind": crd["kind"],
        "metadata": {"name": crd["metadata"]["name"]},
        "spec": crd["spec"],
    });
    let (code, body) = send(client, Method::POST, CRDS, JSON, Some(&crd)).await;
    assert_eq!(code, 201, "the RGD CRD is created: {body}");
    eventually(
        client,
        "the RGD CRD is established",
        RGD_CRD,
        |code, body| {
            code == 200
                && body["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|condition| {
                        condition["type"] == "Established" && condition["status"] == "True"
                    })
        },
    )
    .await;
    // kube-apiserver may serve the resource a moment after Established.
    eventually(client, "RGDs are served", RGDS, |code, _| code == 200).await;
}

async fn uninstall(client: &kube::Client) {
    let (code, body) = send(client, Method::DELETE, RGD_CRD, JSON, None).await;
    assert_eq!(code, 200, "the RGD CRD is deleted: {body}");
    eventually(client, "the RGD CRD is gone", RGD_CRD, |code, _| {
        code == 404
    })
    .await;
    eventually(client, "RGDs are no longer served", RGDS, |code, _| {
        code == 404
    })
    .await;
}

/// Polls `path` until `done` holds for its answer (60 seconds at most).
async fn eventually(
    client: &kube::Client,
    what: &str,
    path: &str,
    done: impl Fn(u16, &Json) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = send(client, Method::GET, path, JSON, None).await;
        if done(code, &body) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: still {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends a request; the answer's status code and body (`Null` when it is not JSON).
async fn send(
    client: &kube::Client,
    method: Method,
    path: &str,
    content_type: &str,
    body: Option<&Json>,
) -> (u16, Json) {
    let bytes = body
        .map(|body| serde_json::to_vec(body).expect("JSON"))
        .unwrap_or_default();
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("Accept", JSON)
        .header("Content-Type", content_type)
        .body(kube::client::Body::from(bytes))
        .expect("a request");
    let response = client
        .send(request)
        .await
        .unwrap_or_else(|error| panic!("{path}: {error}"));
    let code = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|error| panic!("{path}: reading the body: {error}"));
    (code, serde_json::from_slice(&bytes).unwrap_or(Json::Null))
}

/// The embedded API server alone, as `kro apiserver` runs it (no simulated controllers).
async fn embedded_server() -> (kro_apiserver::RunningServer, kube::Client) {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::none(),
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let url = server.url().parse().expect("URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("client");
    (server, client)
}

async fn real_client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}
