//! `kro render`, run as a user runs it: upstream's webapp example, admission of the instance,
//! observed objects, the assume flags, and errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kro_graph::parse_yaml_documents;
use serde_json::Value;

fn kro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("the kro binary built by cargo runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn webapp() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kro-upstream/examples/kubernetes/webapp");
    assert!(
        path.is_dir(),
        "{} is missing (vendored under testdata/ in the repository)",
        path.display()
    );
    path
}

fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The report, parsed.
fn parse_report(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "kro render failed:\n{}",
        stderr(output)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let documents = parse_yaml_documents(&text).expect("the report is YAML");
    documents[0].value.clone()
}

/// `(id, state, kinds of its objects)` per node, level by level.
fn node_states(report: &Value) -> Vec<(String, String, Vec<String>)> {
    report["levels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|level| level["nodes"].as_array().cloned().unwrap_or_default())
        .map(|node| {
            let kinds = node["objects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|object| object["kind"].as_str().unwrap_or("").to_owned())
                .collect();
            (
                node["id"].as_str().unwrap_or("").to_owned(),
                node["state"].as_str().unwrap_or("").to_owned(),
                kinds,
            )
        })
        .collect()
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("writable temporary directory");
    arg(&path)
}

#[test]
fn the_webapp_example_renders_the_deployment_and_includes_per_include_when() {
    let rgd = arg(&webapp().join("rg.yaml"));
    let output = kro(&[
        "render",
        "-f",
        &rgd,
        "-i",
        &arg(&webapp().join("instance.yaml")),
    ]);
    let report = parse_report(&output);
    assert_eq!(report["instance"]["namespace"], "default");
    let nodes = node_states(&report);
    assert_eq!(
        nodes,
        vec![
            (
                "deployment".to_owned(),
                "Waiting".to_owned(),
                vec!["Deployment".to_owned()]
            ),
            ("service".to_owned(), "Waiting".to_owned(), vec![]),
            ("ingress".to_owned(), "Waiting".to_owned(), vec![]),
        ]
    );
    let deployment = &report["levels"][0]["nodes"][0]["objects"][0];
    assert_eq!(deployment["metadata"]["name"], "test-app");
    // The instance's port (80) overrides the default (8080); replicas comes from the default.
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(report["status"]["state"], "IN_PROGRESS");

    // With the ingress disabled, includeWhen skips it at once.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let instance = std::fs::read_to_string(webapp().join("instance.yaml"))
        .expect("readable instance")
        .replace("enabled: true", "enabled: false");
    let instance = write(&dir, "instance.yaml", &instance);
    let report = parse_report(&kro(&["render", "-f", &rgd, "-i", &instance]));
    let nodes = node_states(&report);
    assert_eq!(nodes[2].0, "ingress");
    assert_eq!(nodes[2].1, "Skipped");
    assert_eq!(
        report["levels"][2]["nodes"][0]["reason"],
        "includeWhen \"schema.spec.ingress.enabled\" is false"
    );
}

#[test]
fn assume_ready_renders_the_whole_graph_and_lists_what_it_assumed() {
    let output = kro(&[
        "render",
        "-f",
        &arg(&webapp().join("rg.yaml")),
        "-i",
        &arg(&webapp().join("instance.yaml")),
        "--assume-ready",
    ]);
    let report = parse_report(&output);
    let nodes = node_states(&report);
    let states: Vec<(&str, &str, Vec<String>)> = nodes
        .iter()
        .map(|(id, state, kinds)| (id.as_str(), state.as_str(), kinds.clone()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("deployment", "Ready", vec!["Deployment".to_owned()]),
            ("service", "Ready", vec!["Service".to_owned()]),
            ("ingress", "Ready", vec!["Ingress".to_owned()]),
        ]
    );
    let assumed = &report["levels"][0]["nodes"][0]["assumedReady"][0];
    assert!(
        assumed
            .as_str()
            .is_some_and(|text| text.contains("deployment.status.availableReplicas")),
        "{assumed}"
    );
    let pending: Vec<&str> = report["pendingStatus"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|field| field["field"].as_str())
        .collect();
    assert_eq!(
        pending,
        [
            "status.availableReplicas",
            "status.deploymentConditions",
            "status.url"
        ]
    );
    let ingress = &report["levels"][2]["nodes"][0]["objects"][0];
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
        "test-app"
    );
    assert!(report["rounds"].as_u64().is_some_and(|rounds| rounds > 1));
}

#[test]
fn observed_objects_drive_readiness_and_status() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let observed = write(
        &dir,
        "observed.yaml",
        "apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: test-app, namespace: default}
  spec: {replicas: 1}
  status: {availableReplicas: 1, conditions: [{type: Available, status: 'True'}]}
",
    );
    let output = kro(&[
        "render",
        "-f",
        &arg(&webapp().join("rg.yaml")),
        "-i",
        &arg(&webapp().join("instance.yaml")),
        "--observed",
        &observed,
        "-o",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("the report is JSON");
    let nodes = node_states(&report);
    assert_eq!(nodes[0].1, "Ready");
    assert_eq!(
        nodes[1],
        (
            "service".to_owned(),
            "Waiting".to_owned(),
            vec!["Service".to_owned()]
        )
    );
    assert_eq!(report["status"]["availableReplicas"], 1);
    assert_eq!(
        report["status"]["deploymentConditions"][0]["type"],
        "Available"
    );
}

#[test]
fn an_invalid_instance_is_refused_as_the_api_server_would() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let instance = write(
        &dir,
        "instance.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: WebApp\nmetadata: {name: bad}\nspec: {name: bad, port: eighty}\n",
    );
    let output = kro(&[
        "render",
        "-f",
        &arg(&webapp().join("rg.yaml")),
        "-i",
        &instance,
    ]);
    assert_eq!(output.status.code(), Some(1));
    let errors = stderr(&output);
    assert!(
        errors.contains("WebApp.kro.run \"bad\" is invalid: spec.port: Invalid value: \"string\": spec.port in body must be of type integer: \"string\""),
        "{errors}"
    );

    // Unknown fields are dropped with a warning, as the API server does.
    let instance = write(
        &dir,
        "pruned.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: WebApp\nmetadata: {name: ok}\nspec: {name: ok, colour: red}\n",
    );
    let output = kro(&[
        "render",
        "-f",
        &arg(&webapp().join("rg.yaml")),
        "-i",
        &instance,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("Warning: unknown field \"spec.colour\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_instance_of_another_kind_is_an_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let instance = write(
        &dir,
        "instance.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: Other\nmetadata: {name: x}\n",
    );
    let output = kro(&[
        "render",
        "-f",
        &arg(&webapp().join("rg.yaml")),
        "-i",
        &instance,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "the instance is kro.run/v1alpha1 Other, but the RGDs define kro.run/v1alpha1 WebApp"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_node_error_exits_1_at_its_place_in_the_rgd() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let rgd = write(
        &dir,
        "rgd.yaml",
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: divide}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Divide
    spec:
      divisor: integer | default=0
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: config}
        data:
          ratio: ${string(10 / schema.spec.divisor)}
",
    );
    let instance = write(
        &dir,
        "instance.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: Divide\nmetadata: {name: d}\nspec: {}\n",
    );
    let output = kro(&["render", "-f", &rgd, "-i", &instance]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "{rgd}:17:11: error: resource config: spec.resources[0].template.data.ratio: expression \"string(10 / schema.spec.divisor)\": division by zero"
        )),
        "{}",
        stderr(&output)
    );
    let report = report_ignoring_status(&output);
    assert_eq!(report["status"]["state"], "ERROR");
}

fn report_ignoring_status(output: &Output) -> Value {
    let text = String::from_utf8_lossy(&output.stdout);
    parse_yaml_documents(&text).expect("the report is YAML")[0]
        .value
        .clone()
}

const RENEWAL_RGD: &str = "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: certs
spec:
  schema:
    apiVersion: v1alpha1
    kind: Cert
    spec:
      notAfter: string
  resources:
    - id: renewal
      includeWhen:
        - ${time.now() >= timestamp(schema.spec.notAfter) - duration('720h')}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-renew
        data:
          dueSince: ${string(timestamp(schema.spec.notAfter) - duration('720h'))}
";

const RENEWAL_INSTANCE: &str = "apiVersion: kro.run/v1alpha1
kind: Cert
metadata:
  name: shop
spec:
  notAfter: 2026-06-30T12:00:00Z
";

#[test]
fn now_shows_what_the_time_functions_decide_and_when_it_changes() {
    let dir = tempfile::tempdir().expect("a directory");
    let rgd = write(&dir, "rgd.yaml", RENEWAL_RGD);
    let instance = write(&dir, "instance.yaml", RENEWAL_INSTANCE);
    let render = |now: &str, gates: &str| {
        kro(&[
            "render",
            "-f",
            &rgd,
            "-i",
            &instance,
            "--now",
            now,
            "--feature-gates",
            gates,
        ])
    };
    let before = parse_report(&render("2026-05-01T00:00:00Z", "CELTimeFunctions=true"));
    assert_eq!(
        node_states(&before),
        [("renewal".to_owned(), "Skipped".to_owned(), Vec::new())]
    );
    assert_eq!(before["requeueAt"], "2026-05-31T12:00:00Z");
    let due = parse_report(&render("2026-05-31T12:00:00Z", "CELTimeFunctions=true"));
    assert_eq!(
        node_states(&due),
        [(
            "renewal".to_owned(),
            "Waiting".to_owned(),
            vec!["ConfigMap".to_owned()]
        )]
    );
    assert!(due.get("requeueAt").is_none(), "{due:?}");
    // Without the gate the RGD is refused, naming it.
    let refused = render("2026-05-01T00:00:00Z", "");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("--feature-gates=CELTimeFunctions=true"),
        "{}",
        stderr(&refused)
    );
    // A malformed --now is refused before anything is read.
    let malformed = render("yesterday", "CELTimeFunctions=true");
    assert!(!malformed.status.success());
    assert!(
        stderr(&malformed).contains("is not an RFC 3339 time"),
        "{}",
        stderr(&malformed)
    );
}
