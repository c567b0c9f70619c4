//! `kro validate --kubeconfig`: the schemas of installed CRDs come from a real API server's
//! OpenAPI v3 documents, so a type error in a field of a CRD kind is caught that offline
//! checking can only warn about.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kro_test_support::{real_control_plane_or_skip, run_kubectl};

const GADGET_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.live.kro.run
spec:
  group: live.kro.run
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
";

const RGD: &str = "\
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gadget-app
spec:
  schema:
    apiVersion: v1alpha1
    kind: GadgetApp
    spec:
      name: string
  resources:
    - id: gadget
      template:
        apiVersion: live.kro.run/v1
        kind: Gadget
        metadata:
          name: ${schema.spec.name}
        spec:
          size: ${schema.spec.name}
";

fn kro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("the kro binary built by cargo runs")
}

/// Waits until the server publishes the OpenAPI v3 document of `group_version`.
fn wait_for_openapi(kubeconfig: &Path, home: &Path, group_version: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let index = run_kubectl(kubeconfig, home, &["get", "--raw", "/openapi/v3"], None);
        if String::from_utf8_lossy(&index.stdout).contains(&format!("\"apis/{group_version}\"")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the API server never published apis/{group_version}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn validate_reads_crd_schemas_from_the_api_server() {
    let Some(control_plane) = real_control_plane_or_skip("live_schemas") else {
        return;
    };
    let home = tempfile::tempdir().expect("a fresh HOME");
    let kubeconfig = control_plane.kubeconfig().to_path_buf();
    let applied = run_kubectl(
        &kubeconfig,
        home.path(),
        &["apply", "-f", "-"],
        Some(GADGET_CRD),
    );
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    wait_for_openapi(&kubeconfig, home.path(), "live.kro.run/v1");

    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("rgd.yaml");
    std::fs::write(&file, RGD).expect("writable temporary directory");
    let file = file.to_string_lossy().into_owned();

    // Offline, the kind is unknown: a warning, and the mistake goes unnoticed.
    let offline = kro(&["validate", "-f", &file]);
    assert!(offline.status.success());
    assert!(String::from_utf8_lossy(&offline.stderr).contains("no schema for live.kro.run/v1"));

    // Online, the CRD's schema types `spec.size` and the string is caught.
    let online = kro(&[
        "validate",
        "-f",
        &file,
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
    ]);
    let errors = String::from_utf8_lossy(&online.stderr);
    assert_eq!(online.status.code(), Some(1), "{errors}");
    assert!(
        errors.contains(&format!(
            "{file}:19:11: error: gadget-app: resource gadget: spec.resources[0].template.spec.size: \
             expression \"schema.spec.name\" has type string, but the field expects int"
        )),
        "{errors}"
    );
    assert!(!errors.contains("no schema for"), "{errors}");

    // Built-in kinds still resolve, and a fixed RGD is valid online.
    let fixed = RGD.replace("size: ${schema.spec.name}", "color: ${schema.spec.name}");
    std::fs::write(dir.path().join("rgd.yaml"), fixed).expect("writable temporary directory");
    let online = kro(&[
        "validate",
        "-f",
        &file,
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
    ]);
    assert!(
        online.status.success(),
        "{}",
        String::from_utf8_lossy(&online.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&online.stderr), "");
    control_plane.stop().expect("the control plane stops");
}

#[test]
fn an_unreachable_api_server_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
",
    )
    .expect("writable temporary directory");
    let file = dir.path().join("rgd.yaml");
    std::fs::write(&file, RGD).expect("writable temporary directory");
    let output = kro(&[
        "validate",
        "-f",
        &file.to_string_lossy(),
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        errors.contains("cannot read schemas from the API server at https://127.0.0.1:1/"),
        "{errors}"
    );
}
