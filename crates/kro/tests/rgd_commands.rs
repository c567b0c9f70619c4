//! `kro validate`, `kro generate crd`, `kro generate instance` and `kro graph`, run as a user
//! runs them, on upstream's examples and on RGDs written to a temporary directory.

mod apiserver_support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kro_graph::parse_yaml_documents;

fn kro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("the kro binary built by cargo runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("kro writes UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("kro writes UTF-8")
}

fn testdata() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    assert!(
        path.is_dir(),
        "{} is missing: the upstream examples are vendored under testdata/ in the repository",
        path.display()
    );
    path
}

fn examples(path: &str) -> String {
    testdata()
        .join("kro-upstream/examples")
        .join(path)
        .to_string_lossy()
        .into_owned()
}

/// Writes `files` into a fresh directory that lives as long as the returned guard.
fn directory(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("writable temporary directory");
    }
    dir
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_string_lossy().into_owned()
}

const WEB_APP: &str = "\
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: web-app
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      name: string
      replicas: integer | default=1
    status:
      available: ${deployment.status.availableReplicas}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.spec.name}
        spec:
          replicas: ${schema.spec.replicas}
          selector:
            matchLabels: {app: \"${schema.spec.name}\"}
          template:
            metadata:
              labels: {app: \"${schema.spec.name}\"}
            spec:
              containers:
                - name: web
                  image: nginx
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${deployment.metadata.name}
        spec:
          selector: ${deployment.spec.selector.matchLabels}
          ports:
            - port: 80
";

const SCALING: &str = "\
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: my-objects
spec:
  scaling:
    kind: MyObjectSet
    method: replicas
  schema:
    apiVersion: v1
    kind: MyObject
    group: example.org
    spec:
      desiredReplicas: integer | scale
    status:
      replicas: integer | scale
      podSelector: string | scaleSelector
";

#[test]
fn every_kubernetes_example_validates_offline() {
    let output = kro(&["validate", "-R", "-f", &examples("kubernetes")]);
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    let summary = stdout(&output);
    let lines: Vec<&str> = summary.lines().collect();
    assert!(lines.len() >= 12, "one line per RGD expected:\n{summary}");
    assert!(
        lines.contains(
            &format!(
                "{}: webapp.kro.run: valid: kind WebApp (kro.run/v1alpha1), 3 resources, 3 levels",
                examples("kubernetes/webapp/rg.yaml")
            )
            .as_str()
        ),
        "{summary}"
    );
    // The tenant RGD uses the kinds its two siblings define: read together, no kind is unknown.
    assert!(
        !stderr(&output).contains("no schema for"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn cloud_examples_validate_with_the_integration_crds() {
    let crds = testdata().join("kro-upstream/test/integration/crds");
    let output = kro(&[
        "validate",
        "-R",
        "-f",
        &examples("azure"),
        "--crds",
        &crds.to_string_lossy(),
    ]);
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(!stdout(&output).is_empty());
}

#[test]
fn a_kind_no_source_knows_is_a_located_warning() {
    let file = examples("kubernetes/saas-multi-tenant/tenant-rgd.yaml");
    let output = kro(&["validate", "-f", &file]);
    assert!(output.status.success(), "{}", stderr(&output));
    let warnings = stderr(&output);
    assert!(
        warnings.contains(&format!(
            "{file}:17:7: warning: resource tenantEnvironment: no schema for kro.run/v1alpha1, \
             Kind=TenantEnvironment"
        )),
        "{warnings}"
    );
}

#[test]
fn omit_validates_only_for_a_controller_with_its_feature_gate() {
    let omitting = WEB_APP.replace(
        "replicas: ${schema.spec.replicas}",
        "replicas: \"${schema.spec.replicas > 0 ? schema.spec.replicas : omit()}\"",
    );
    let dir = directory(&[("omit.yaml", &omitting)]);
    let file = path(&dir, "omit.yaml");
    let output = kro(&["validate", "-f", &file]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "{file}:22:11: error: web-app: resource deployment: \
             spec.resources[0].template.spec.replicas: expression \
             \"schema.spec.replicas > 0 ? schema.spec.replicas : omit()\": omit() requires the \
             CELOmitFunction feature gate to be enabled (--feature-gates=CELOmitFunction=true)"
        )),
        "{}",
        stderr(&output)
    );
    let output = kro(&[
        "validate",
        "-f",
        &file,
        "--feature-gates=CELOmitFunction=true",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = kro(&["validate", "-f", &file, "--feature-gates=CELOmit=true"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unrecognized feature gate: CELOmit (known: CELOmitFunction,"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_type_mismatch_exits_1_naming_file_line_column_and_field() {
    let bad = WEB_APP.replace(
        "replicas: ${schema.spec.replicas}",
        "replicas: ${schema.spec.name}",
    );
    let dir = directory(&[("bad.yaml", &bad)]);
    let file = path(&dir, "bad.yaml");
    let output = kro(&["validate", "-f", &file]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!(
            "{file}:22:11: error: web-app: resource deployment: \
             spec.resources[0].template.spec.replicas: expression \"schema.spec.name\" has type \
             string, but the field expects int\n1 of 1 ResourceGraphDefinitions is invalid\n"
        )
    );
}

#[test]
fn every_invalid_rgd_and_file_is_reported_and_valid_ones_still_summarised() {
    let cycle = WEB_APP.replace("name: web-app", "name: cyclic").replace(
        "name: ${schema.spec.name}\n        spec:\n          replicas",
        "name: ${service.metadata.name}\n        spec:\n          replicas",
    );
    let dir = directory(&[
        ("a-good.yaml", WEB_APP),
        ("b-cycle.yaml", &cycle),
        (
            "c-broken.yaml",
            "apiVersion: kro.run/v1alpha1\nkind: [unclosed\n",
        ),
        (
            "d-shape.yaml",
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: x\nspec:\n  schema: 3\n",
        ),
        ("notes.txt", "not read: no YAML extension"),
    ]);
    let output = kro(&["validate", "-f", &dir.path().to_string_lossy()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        format!(
            "{}: web-app: valid: kind WebApp (kro.run/v1alpha1), 2 resources, 2 levels\n",
            path(&dir, "a-good.yaml")
        )
    );
    let errors = stderr(&output);
    let lines: Vec<&str> = errors.lines().collect();
    assert!(
        lines[0].starts_with(&format!("{}:", path(&dir, "b-cycle.yaml")))
            && lines[0].contains("error: cyclic:")
            && lines[0].contains("deployment -> service -> deployment"),
        "{errors}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{}:2:7: error: ", path(&dir, "c-broken.yaml")))),
        "{errors}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with(&format!(
            "{}:6:3: error: spec.schema: ",
            path(&dir, "d-shape.yaml")
        ))),
        "{errors}"
    );
    assert_eq!(
        lines.last(),
        Some(&"1 of 2 ResourceGraphDefinitions is invalid")
    );
}

#[test]
fn files_without_an_rgd_are_an_error() {
    let dir = directory(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )]);
    let output = kro(&["validate", "-f", &path(&dir, "cm.yaml")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no ResourceGraphDefinition"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let output = kro(&["validate", "-f", "/no/such/rgd.yaml"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("/no/such/rgd.yaml: cannot read"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn validate_reads_standard_input() {
    let output = validate_stdin(WEB_APP);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("<stdin>: web-app: valid"));
}

/// `kro validate -f -` on `text`.
fn validate_stdin(text: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["validate", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kro binary runs");
    child
        .stdin
        .take()
        .expect("a stdin pipe")
        .write_all(text.as_bytes())
        .expect("kro reads its input");
    child.wait_with_output().expect("kro finishes")
}

#[test]
fn validate_names_the_fix_for_the_forms_the_design_documents_use() {
    // Snippets of the KREP-2 and KREP-011 documents, as written there.
    let cases = [
        (
            "kind: ResourceGraphDefinition\n# ...\nspec:\n  resources: []\n",
            "<stdin>:1:1: error: apiVersion: a ResourceGraphDefinition needs apiVersion: kro.run/v1alpha1 (found none)",
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema:\n    spec:\n      workers: []string\n",
            "<stdin>:6:18: error: invalid YAML: []string begins with `[`, which YAML reads as the start of a list; quote it: '[]string'",
        ),
        (
            "- id: workers\n  forEach: ${spec.workers}\n  template:\n    kind: Pod\n",
            "<stdin>:1:1: error: this document is a list of RGD resources (items with an `id`), not a ResourceGraphDefinition: put the list under `spec.resources` of one",
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: app}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: App\n    spec: {workers: '[]string'}\n  resources:\n    - id: workers\n      forEach: ${spec.workers}\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${each.item}'}}\n",
            "hint: the instance is the variable `schema`: write `schema.spec.workers` instead of `spec.workers`",
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: app}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: App\n    spec: {workers: '[]string'}\n    status:\n      totalWorkers: ${size(workerPods.items)}\n  resources:\n    - id: workerPods\n      forEach: ${schema.spec.workers}\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${each.item}'}}\n",
            "hint: `workerPods` is a collection (forEach): it is the list of its objects and has no field `items`; use `workerPods` itself, for example `size(workerPods)` or `workerPods.map(item, item.metadata.name)`",
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: app}\nspec:\n  schema: {apiVersion: v1alpha1, kind: App}\n  resources:\n    - id: workers\n      readyWhen: ${workers.all(w, w.status.phase == 'Running')}\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
            "<stdin>:8:7: error: spec.resources[0].readyWhen: readyWhen is a list of expressions, all of which must hold: write it as one `- ` item per expression (`readyWhen: [\"${workers.all(w, w.status.phase == 'Running')}\"]`)",
        ),
    ];
    for (text, line) in cases {
        let output = validate_stdin(text);
        assert_eq!(output.status.code(), Some(1), "{text}");
        let stderr = stderr(&output);
        assert!(
            stderr.lines().any(|printed| printed == line),
            "{text}\nwanted the line: {line}\ngot:\n{stderr}"
        );
    }
}

#[test]
fn generate_crd_prints_yaml_that_reads_back() {
    let output = kro(&[
        "generate",
        "crd",
        "-f",
        &examples("kubernetes/webapp/rg.yaml"),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let documents = parse_yaml_documents(&stdout(&output)).expect("valid YAML");
    assert_eq!(documents.len(), 1);
    let crd = &documents[0].value;
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "webapps.kro.run");
    assert_eq!(crd["spec"]["names"]["kind"], "WebApp");
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["image"]["default"],
        "nginx"
    );
}

/// Every example RGD, upstream's and ours, gets an instance from `kro generate instance` that
/// `kro apiserver` accepts once the CRD `kro generate crd` prints is installed: its schema,
/// defaults and CEL rules all admit it.
#[test]
fn generated_instances_are_admitted_under_their_generated_crds() {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let ours = ours.to_string_lossy();
    let upstream = examples("kubernetes");
    // examples/rollout uses spec.propagateWhen, behind its gate.
    let inputs = [
        "--feature-gates",
        "PropagationControl=true",
        "-R",
        "-f",
        upstream.as_str(),
        "-f",
        &ours,
    ];
    let crds = kro(&[&["generate", "crd"][..], &inputs].concat());
    assert!(crds.status.success(), "{}", stderr(&crds));
    let instances = kro(&[&["generate", "instance", "-n", "default"][..], &inputs].concat());
    assert!(instances.status.success(), "{}", stderr(&instances));
    assert!(
        !stderr(&instances).contains("warning: ") || stderr(&instances).contains("repeated"),
        "every field was filled: {}",
        stderr(&instances)
    );
    let crds = parse_yaml_documents(&stdout(&crds)).expect("CRDs in YAML");
    let instances = parse_yaml_documents(&stdout(&instances)).expect("instances in YAML");
    assert!(instances.len() >= 20, "{} instances", instances.len());

    let server = apiserver_support::Server::start(&["--simulators", "none"]);
    let post = |path: &str, object: &serde_json::Value| {
        apiserver_support::http(server.port, "POST", path, "test", Some(&object.to_string()))
    };
    // Two of the examples define the same kind; the first of each is installed (the CRDs and
    // the instances come in the order of their RGDs).
    let mut installed = std::collections::BTreeSet::new();
    for crd in &crds {
        if !installed.insert(crd.value["metadata"]["name"].to_string()) {
            continue;
        }
        let created = post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd.value,
        );
        assert_eq!(created.code, 201, "{}", created.body);
    }
    let mut kinds = std::collections::BTreeSet::new();
    for instance in &instances {
        let instance = &instance.value;
        let kind = instance["kind"].as_str().expect("a kind");
        if !kinds.insert(kind) {
            continue;
        }
        let crd = crds
            .iter()
            .find(|crd| crd.value["spec"]["names"]["kind"] == kind)
            .unwrap_or_else(|| panic!("the CRD of {kind}"));
        let path = format!(
            "/apis/{}/namespaces/default/{}",
            instance["apiVersion"].as_str().expect("an apiVersion"),
            crd.value["spec"]["names"]["plural"]
                .as_str()
                .expect("a plural"),
        );
        let created = post(&path, instance);
        assert_eq!(created.code, 201, "{kind}: {}", created.body);
    }
}

#[test]
fn generate_instance_names_what_no_plain_value_satisfies() {
    let rgd = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: tickets}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Ticket
    spec:
      code: string | required=true pattern="^[A-Z]{3}-[0-9]{4}$"
      owner: string | required=true
      priority: integer | default=3 minimum=1
  resources: []
"#;
    let dir = directory(&[("rgd.yaml", rgd)]);
    let output = kro(&[
        "generate",
        "instance",
        "-f",
        &path(&dir, "rgd.yaml"),
        "--name",
        "first",
        "-o",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let instance: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(
        instance,
        serde_json::json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Ticket",
            "metadata": {"name": "first"},
            "spec": {"code": "example", "owner": "example", "priority": 3},
        })
    );
    let warnings = stderr(&output);
    assert!(
        warnings.contains("warning: Ticket: spec.code: Invalid value")
            && warnings.contains("set a value its schema accepts"),
        "{warnings}"
    );
}

#[test]
fn generate_crd_with_scaling_prints_the_instance_and_set_crds() {
    let dir = directory(&[("scaling.yaml", SCALING)]);
    let file = path(&dir, "scaling.yaml");

    let output = kro(&["generate", "crd", "-f", &file]);
    assert!(output.status.success(), "{}", stderr(&output));
    let names: Vec<String> = parse_yaml_documents(&stdout(&output))
        .expect("valid YAML")
        .iter()
        .map(|document| {
            document.value["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["myobjects.example.org", "myobjectsets.example.org"]);

    let output = kro(&["generate", "crd", "-f", &file, "-o", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.starts_with("{\n    \"apiVersion\": \"v1\",\n"),
        "{text:.80}"
    );
    let list: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(list["kind"], "List");
    assert_eq!(
        list["items"][0]["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"],
        ".spec.desiredReplicas"
    );
    assert_eq!(list["items"][1]["spec"]["names"]["kind"], "MyObjectSet");
}

#[test]
fn generate_crd_of_an_invalid_rgd_prints_errors_and_no_crd() {
    let bad = WEB_APP.replace("${schema.spec.replicas}", "${schema.spec.nope}");
    let dir = directory(&[("bad.yaml", &bad)]);
    let output = kro(&["generate", "crd", "-f", &path(&dir, "bad.yaml")]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("spec.resources[0].template.spec.replicas"));
}

#[test]
fn graph_draws_levels_as_text_by_default() {
    let output = kro(&["graph", "-f", &examples("kubernetes/webapp/rg.yaml")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("3 nodes in 3 levels\n"), "{text}");
    assert!(
        text.contains("ingress     Ingress     <- deployment, service"),
        "{text}"
    );
}

#[test]
fn graph_svg_is_a_well_formed_svg_picture_of_every_node() {
    let output = kro(&[
        "graph",
        "-f",
        &examples("kubernetes/core-dns/core-dns.yaml"),
        "--format",
        "svg",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let svg = stdout(&output);
    let document = roxmltree::Document::parse(&svg).expect("the output parses as XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    for attribute in ["width", "height", "viewBox"] {
        assert!(root.attribute(attribute).is_some(), "no {attribute}");
    }
    let texts: Vec<&str> = document
        .descendants()
        .filter(|node| node.has_tag_name("text"))
        .filter_map(|node| node.text())
        .collect();
    for id in [
        "clusterRole",
        "clusterRoleBinding",
        "configMap",
        "deployment",
        "service",
    ] {
        assert!(texts.contains(&id), "{id} is not drawn: {texts:?}");
    }
}

#[test]
fn graph_dot_and_mermaid_name_every_edge() {
    let file = examples("kubernetes/webapp/rg.yaml");
    let dot = stdout(&kro(&["graph", "-f", &file, "--format", "dot"]));
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.contains("->"), "{dot}");
    let mermaid = stdout(&kro(&["graph", "-f", &file, "--format", "mermaid"]));
    assert!(mermaid.starts_with("flowchart"), "{mermaid}");
    assert_eq!(mermaid.matches(" --> ").count(), 3, "{mermaid}");
}

#[test]
fn graph_of_several_rgds_needs_a_name() {
    let dir = examples("kubernetes/saas-multi-tenant");
    let output = kro(&["graph", "-f", &dir]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("choose one with --name"),
        "{}",
        stderr(&output)
    );

    let output = kro(&["graph", "-f", &dir, "--name", "tenant.kro.run"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("tenantEnvironment"));
}
