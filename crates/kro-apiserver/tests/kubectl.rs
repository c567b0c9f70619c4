//! Real kubectl against the embedded API server, over TLS with a bearer token, as users run
//! it: no `--validate=false`, a fresh HOME per test. Every scenario runs with kubectl 1.27
//! (which reads only the protobuf OpenAPI v2 document) and with kubectl 1.33 (OpenAPI v3,
//! aggregated discovery).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use kro_apiserver::{RunningServer, ServerConfig, Simulators, start_in_background};
use kro_test_support::{kubectl_release, run_kubectl_binary};

struct Sandbox {
    server: RunningServer,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    home: PathBuf,
    kubectl: PathBuf,
}

/// Runs each named scenario (a `fn(&Sandbox)`) as two tests, `<scenario>::kubectl_1_27` and
/// `<scenario>::kubectl_1_33`, each with its own server.
macro_rules! with_each_kubectl {
    ($($scenario:ident),* $(,)?) => {
        $(mod $scenario {
            #[test]
            fn kubectl_1_27() {
                super::$scenario(&super::Sandbox::start(27));
            }

            #[test]
            fn kubectl_1_33() {
                super::$scenario(&super::Sandbox::start(33));
            }
        })*
    };
}

with_each_kubectl!(
    version_discovery_and_explain,
    client_side_apply_creates_then_reports_unchanged_without_a_write,
    errors_read_as_kubernetes_words_them,
    replace_with_a_stale_resource_version_conflicts,
    label_annotate_patch_and_selectors,
    finalizers_hold_deletion_until_removed,
    services_get_a_cluster_ip_and_defaults,
    get_watch_streams_changes,
    a_wrong_token_is_unauthorized,
    custom_resources_are_served_validated_scaled_and_deleted_with_their_definition,
    server_side_apply_tracks_owners_conflicts_and_removals,
    events_recorded_through_events_k8s_io_show_everywhere,
    whoami_shows_whom_a_request_impersonates,
);

impl Sandbox {
    /// A fresh server (without simulated controllers) and HOME driven by kubectl 1.`minor`.
    fn start(minor: u32) -> Sandbox {
        Sandbox::start_with(minor, Simulators::none())
    }

    /// A fresh server running `simulators`, and HOME, driven by kubectl 1.`minor`.
    fn start_with(minor: u32, simulators: Simulators) -> Sandbox {
        let kubectl = kubectl_release(minor);
        let config = ServerConfig {
            simulators,
            ..ServerConfig::default()
        };
        let server = start_in_background(config).expect("the server starts");
        let dir = tempfile::tempdir().expect("temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, server.kubeconfig()).expect("write kubeconfig");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        Sandbox {
            server,
            _dir: dir,
            kubeconfig,
            home,
            kubectl,
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run_kubectl_binary(&self.kubectl, &self.kubeconfig, &self.home, args, stdin)
    }

    /// Runs kubectl, requires success, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None)
    }

    fn ok_with(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\nstdout: {stdout}\nstderr: {stderr}"
        );
        stdout
    }

    /// Runs kubectl, requires failure, returns stderr.
    fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        assert!(
            !output.status.success(),
            "kubectl {args:?} succeeded: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    fn resource_version(&self, what: &[&str]) -> String {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend_from_slice(&["-o", "jsonpath={.metadata.resourceVersion}"]);
        self.ok(&args)
    }
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  colour: blue
";

fn version_discovery_and_explain(sandbox: &Sandbox) {
    let version = sandbox.ok(&["version", "-o", "json"]);
    let version: serde_json::Value = serde_json::from_str(&version).expect("version JSON");
    assert_eq!(version["serverVersion"]["minor"], "33");
    let resources = sandbox.ok(&["api-resources"]);
    let deployments = resources
        .lines()
        .find(|line| line.starts_with("deployments "))
        .expect("deployments listed");
    assert!(
        deployments.contains("deploy") && deployments.contains("apps/v1"),
        "{deployments}"
    );
    assert!(
        resources
            .lines()
            .any(|line| line.starts_with("customresourcedefinitions "))
    );
    let namespaces = sandbox.ok(&["get", "namespaces", "-o", "name"]);
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            namespaces.contains(&format!("namespace/{name}\n")),
            "{namespaces}"
        );
    }
    let explained = sandbox.ok(&["explain", "deployment.spec.replicas"]);
    assert!(
        explained.contains("FIELD: replicas <integer>"),
        "{explained}"
    );
    // The OpenAPI v2 models (protobuf), parsed whole by kubectl: every reference resolves.
    let explained = sandbox.ok(&[
        "explain",
        "deployment.spec.template.spec.containers",
        "--output",
        "plaintext-openapiv2",
    ]);
    assert!(
        explained.contains("RESOURCE: containers <[]Object>"),
        "{explained}"
    );
    // `get all` needs the `all` category in discovery.
    sandbox.ok_with(&["apply", "-f", "-"], Some(DEPLOYMENT));
    let all = sandbox.ok(&["get", "all", "-o", "name"]);
    assert!(all.contains("deployment.apps/web"), "{all}");
}

fn client_side_apply_creates_then_reports_unchanged_without_a_write(sandbox: &Sandbox) {
    let created = sandbox.ok_with(&["apply", "-f", "-"], Some(DEPLOYMENT));
    assert_eq!(created.trim(), "deployment.apps/web created");
    let before = sandbox.resource_version(&["deployment", "web"]);
    let again = sandbox.ok_with(&["apply", "-f", "-"], Some(DEPLOYMENT));
    assert_eq!(again.trim(), "deployment.apps/web unchanged");
    assert_eq!(sandbox.resource_version(&["deployment", "web"]), before);
    let generation = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.metadata.generation}",
    ]);
    assert_eq!(generation, "1");
    // Server-side columns, as kube-apiserver's printers give them.
    let wide = sandbox.ok(&["get", "deployment", "-o", "wide"]);
    let lines: Vec<Vec<&str>> = wide
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{wide}"
    );
    assert_eq!(lines[1][..4], ["web", "0/2", "0", "0"], "{wide}");
    assert_eq!(lines[1][5..], ["web", "nginx:1.27", "app=web"], "{wide}");
    // describe dereferences the defaults kube-apiserver sets.
    let described = sandbox.ok(&["describe", "deployment", "web"]);
    // (Column alignment differs between kubectl releases.)
    let describes = |label: &str, value: &str| {
        described
            .lines()
            .any(|line| line.split_whitespace().collect::<Vec<_>>() == [label, value])
    };
    assert!(describes("StrategyType:", "RollingUpdate"), "{described}");
    assert!(describes("Image:", "nginx:1.27"), "{described}");
    let yaml = sandbox.ok(&["get", "deployment", "web", "-o", "yaml"]);
    assert!(
        yaml.contains("kubectl.kubernetes.io/last-applied-configuration"),
        "{yaml}"
    );
    assert!(yaml.contains("uid: "), "{yaml}");
    assert!(yaml.contains("creationTimestamp: "), "{yaml}");

    // A changed manifest goes out as a three-way strategic merge patch: the container list
    // merges by name, a removed container goes away, the generation moves.
    let changed = DEPLOYMENT.replace("replicas: 2", "replicas: 3").replace(
        "image: nginx:1.27",
        "image: nginx:1.28\n      - name: sidecar\n        image: busybox",
    );
    let output = sandbox.run(&["apply", "-f", "-"], Some(&changed));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "deployment.apps/web configured"
    );
    // kubectl 1.27 computes the patch from the OpenAPI v2 models and warns when it cannot.
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let images = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[*].image} {.metadata.generation}",
    ]);
    assert_eq!(images, "3 nginx:1.28 busybox 2");
    let configured = sandbox.ok_with(&["apply", "-f", "-"], Some(DEPLOYMENT));
    assert_eq!(configured.trim(), "deployment.apps/web configured");
    let images = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name}={.spec.template.spec.containers[*].image}",
    ]);
    assert_eq!(images, "web=nginx:1.27");

    // `kubectl patch` defaults to a strategic merge patch: the list item merges by name.
    sandbox.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","value":"1"}]}]}}}}"#,
    ]);
    let env = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].name}",
    ]);
    assert_eq!(env, "nginx:1.27 A");
    let missing_key = sandbox.fails(
        &[
            "patch",
            "deployment",
            "web",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
        ],
        None,
    );
    assert!(
        missing_key.contains(
            "Error from server: map: map[image:x] does not contain declared merge key: name"
        ),
        "{missing_key}"
    );
}

fn errors_read_as_kubernetes_words_them(sandbox: &Sandbox) {
    sandbox.ok_with(&["create", "-f", "-"], Some(CONFIG_MAP));
    let exists = sandbox.fails(&["create", "-f", "-"], Some(CONFIG_MAP));
    assert!(
        exists.contains("Error from server (AlreadyExists): error when creating \"STDIN\": configmaps \"settings\" already exists"),
        "{exists}"
    );
    let missing = sandbox.fails(&["get", "configmap", "nope"], None);
    assert_eq!(
        missing.trim(),
        "Error from server (NotFound): configmaps \"nope\" not found"
    );
    let no_namespace = sandbox.fails(&["apply", "-n", "nope", "-f", "-"], Some(CONFIG_MAP));
    assert!(
        no_namespace.contains("namespaces \"nope\" not found"),
        "{no_namespace}"
    );
    let unknown_field = CONFIG_MAP
        .replace("name: settings", "name: fresh")
        .replace("\ndata:", "\ncolour: red\ndata:");
    let strict = sandbox.fails(&["apply", "-f", "-"], Some(&unknown_field));
    assert!(strict.contains("unknown field \"colour\""), "{strict}");
    let bad_name = CONFIG_MAP.replace("name: settings", "name: Bad_Name");
    let invalid = sandbox.fails(&["apply", "-f", "-"], Some(&bad_name));
    assert!(
        invalid.contains("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{invalid}"
    );
    let selector = sandbox.fails(&["get", "configmaps", "--field-selector", "spec.x=y"], None);
    assert!(
        selector.contains(
            r#""spec.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
        ),
        "{selector}"
    );
    let immortal = sandbox.fails(&["delete", "namespace", "default", "--wait=false"], None);
    assert!(
        immortal.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"),
        "{immortal}"
    );
}

fn replace_with_a_stale_resource_version_conflicts(sandbox: &Sandbox) {
    sandbox.ok_with(&["create", "-f", "-"], Some(CONFIG_MAP));
    let stale = sandbox.ok(&["get", "configmap", "settings", "-o", "json"]);
    sandbox.ok(&["label", "configmap", "settings", "team=a"]);
    let conflict = sandbox.fails(&["replace", "-f", "-"], Some(&stale));
    assert!(
        conflict.contains("Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again"),
        "{conflict}"
    );
}

fn label_annotate_patch_and_selectors(sandbox: &Sandbox) {
    sandbox.ok_with(&["create", "-f", "-"], Some(CONFIG_MAP));
    let other = CONFIG_MAP.replace("name: settings", "name: other");
    sandbox.ok_with(&["create", "-f", "-"], Some(&other));
    sandbox.ok(&["label", "configmap", "settings", "tier=front"]);
    sandbox.ok(&["annotate", "configmap", "settings", "note=hello"]);
    sandbox.ok(&[
        "patch",
        "configmap",
        "other",
        "--type=merge",
        "-p",
        r#"{"data":{"colour":"green"}}"#,
    ]);
    sandbox.ok(&[
        "patch",
        "configmap",
        "other",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/data/colour","value":"green"},{"op":"add","path":"/data/size","value":"L"}]"#,
    ]);
    let failed = sandbox.fails(
        &[
            "patch",
            "configmap",
            "other",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/data/colour","value":"red"}]"#,
        ],
        None,
    );
    assert!(
        failed.contains("the server rejected our request due to an error in our request"),
        "{failed}"
    );
    assert_eq!(
        sandbox
            .ok(&["get", "cm", "-l", "tier in (front,back)", "-o", "name"])
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        sandbox
            .ok(&["get", "cm", "-l", "!tier", "-o", "name"])
            .trim(),
        "configmap/other"
    );
    assert_eq!(
        sandbox.ok(&[
            "get",
            "cm",
            "--field-selector",
            "metadata.name=other",
            "-o",
            "jsonpath={.items[0].data.size}"
        ]),
        "L"
    );
    assert_eq!(
        sandbox.ok(&[
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.metadata.annotations.note}"
        ]),
        "hello"
    );
    // Pages of one object each still list everything.
    let paged = sandbox.ok(&["get", "cm", "--chunk-size=1", "-o", "name"]);
    assert_eq!(paged.lines().count(), 2, "{paged}");
}

fn finalizers_hold_deletion_until_removed(sandbox: &Sandbox) {
    let held = CONFIG_MAP.replace(
        "  name: settings",
        "  name: settings\n  finalizers: [example.com/hold]",
    );
    sandbox.ok_with(&["create", "-f", "-"], Some(&held));
    sandbox.ok(&["delete", "configmap", "settings", "--wait=false"]);
    let stamp = sandbox.ok(&[
        "get",
        "cm",
        "settings",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(!stamp.is_empty(), "the object stays, marked for deletion");
    let refused = sandbox.fails(
        &[
            "patch",
            "cm",
            "settings",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]"#,
        ],
        None,
    );
    assert!(
        refused.contains("no new finalizers can be added if the object is being deleted"),
        "{refused}"
    );
    sandbox.ok(&[
        "patch",
        "cm",
        "settings",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
    ]);
    let gone = sandbox.fails(&["get", "cm", "settings"], None);
    assert!(gone.contains("not found"), "{gone}");
}

fn services_get_a_cluster_ip_and_defaults(sandbox: &Sandbox) {
    let service = "apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
";
    sandbox.ok_with(&["apply", "-f", "-"], Some(service));
    let ip = sandbox.ok(&["get", "svc", "web", "-o", "jsonpath={.spec.clusterIP} {.spec.type} {.spec.ports[0].targetPort} {.spec.ports[0].protocol}"]);
    let parts: Vec<&str> = ip.split(' ').collect();
    assert!(parts[0].starts_with("10.96."), "{ip}");
    assert_eq!(&parts[1..], ["ClusterIP", "80", "TCP"]);
    // Applying again keeps the allocated address and writes nothing.
    let before = sandbox.resource_version(&["svc", "web"]);
    let again = sandbox.ok_with(&["apply", "-f", "-"], Some(service));
    assert_eq!(again.trim(), "service/web unchanged");
    assert_eq!(sandbox.resource_version(&["svc", "web"]), before);
}

fn get_watch_streams_changes(sandbox: &Sandbox) {
    let mut watcher = Command::new(&sandbox.kubectl)
        .arg("--kubeconfig")
        .arg(&sandbox.kubeconfig)
        .args([
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
            "-o",
            r#"jsonpath={.type} {.object.metadata.name}{"\n"}"#,
        ])
        .env("HOME", &sandbox.home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watcher.stdout.take().expect("stdout");
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let next = || {
        received
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("a watch event within 20 s")
    };
    // The watch starts after the list: wait until it is open before changing anything.
    let mut opened = false;
    for _ in 0..100 {
        sandbox.ok_with(&["apply", "-f", "-"], Some(CONFIG_MAP));
        if received
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_ok()
        {
            opened = true;
            break;
        }
    }
    assert!(opened, "the watch reported the first configmap");
    sandbox.ok(&["label", "cm", "settings", "a=b"]);
    assert_eq!(next(), "MODIFIED settings");
    sandbox.ok(&["delete", "cm", "settings"]);
    assert_eq!(next(), "DELETED settings");
    let _ = watcher.kill();
    let _ = watcher.wait();
    assert!(sandbox.server.revision() >= 3);
}

fn a_wrong_token_is_unauthorized(sandbox: &Sandbox) {
    let text = std::fs::read_to_string(&sandbox.kubeconfig).expect("kubeconfig");
    let token = sandbox.server.token().expect("a token");
    std::fs::write(&sandbox.kubeconfig, text.replace(token, "wrong")).expect("rewrite");
    let refused = sandbox.fails(&["get", "configmaps"], None);
    assert!(
        refused.contains("Unauthorized") || refused.contains("provide credentials"),
        "{refused}"
    );
}

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Size, type: string, jsonPath: .spec.size, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, default: 1, minimum: 0}
              size: {type: string, x-kubernetes-validations: [{rule: \"self != 'huge'\", message: too big}]}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
";

const WIDGET: &str = "apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: small}
";

fn custom_resources_are_served_validated_scaled_and_deleted_with_their_definition(
    sandbox: &Sandbox,
) {
    let created = sandbox.ok_with(&["apply", "-f", "-"], Some(WIDGET_CRD));
    assert_eq!(
        created.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    );
    sandbox.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);
    let created = sandbox.ok_with(&["apply", "-f", "-"], Some(WIDGET));
    assert_eq!(created.trim(), "widget.example.com/w1 created");
    // Defaulted from the schema; generation starts at 1.
    assert_eq!(
        sandbox.ok(&[
            "get",
            "wd",
            "w1",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}"
        ]),
        "1 1"
    );
    let again = sandbox.ok_with(&["apply", "-f", "-"], Some(WIDGET));
    assert_eq!(again.trim(), "widget.example.com/w1 unchanged");
    // additionalPrinterColumns, the priority-1 column only with -o wide.
    let table = sandbox.ok(&["get", "widgets"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "REPLICAS"], "{table}");
    let wide = sandbox.ok(&["get", "widgets", "-o", "wide"]);
    let row: Vec<&str> = wide
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row, ["w1", "1", "small"], "{wide}");

    // x-kubernetes-validations run on the server.
    let rejected = sandbox.fails(
        &[
            "patch",
            "widget",
            "w1",
            "--type=merge",
            "-p",
            r#"{"spec":{"size":"huge"}}"#,
        ],
        None,
    );
    assert!(
        rejected
            .contains(r#"The Widget "w1" is invalid: spec.size: Invalid value: "string": too big"#),
        "{rejected}"
    );
    // No strategic merge patch for custom resources.
    let refused = sandbox.fails(
        &["patch", "widget", "w1", "-p", r#"{"spec":{"size":"big"}}"#],
        None,
    );
    assert!(
        refused.contains(
            "application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget"
        ),
        "{refused}"
    );

    // The scale subresource reads and writes the definition's paths.
    let scaled = sandbox.ok(&["scale", "widget", "w1", "--replicas=3"]);
    assert_eq!(scaled.trim(), "widget.example.com/w1 scaled");
    assert_eq!(
        sandbox.ok(&[
            "get",
            "widget",
            "w1",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}"
        ]),
        "3 2"
    );
    let scale = sandbox.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
    ]);
    let scale: serde_json::Value = serde_json::from_str(&scale).expect("Scale JSON");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 3);
    let negative = sandbox.fails(&["scale", "widget", "w1", "--replicas=-1"], None);
    assert!(negative.contains("replicas"), "{negative}");

    let explained = sandbox.ok(&["explain", "widget.spec"]);
    assert!(explained.contains("replicas\t<integer>"), "{explained}");
    let resources = sandbox.ok(&["api-resources", "--api-group=example.com"]);
    assert!(
        resources.contains("widgets") && resources.contains("wd"),
        "{resources}"
    );

    // Deleting the definition deletes its instances; a finalizer holds both.
    sandbox.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    sandbox.ok(&["delete", "crd", "widgets.example.com", "--wait=false"]);
    let terminating = sandbox.ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={.metadata.finalizers} {.status.conditions[?(@.type==\"Terminating\")].status}",
    ]);
    assert_eq!(
        terminating,
        r#"["customresourcecleanup.apiextensions.k8s.io"] True"#
    );
    let refused = sandbox.fails(
        &["create", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\n"),
    );
    assert!(
        refused.contains("create not allowed while custom resource definition is terminating"),
        "{refused}"
    );
    sandbox.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let gone = sandbox.fails(&["get", "crd", "widgets.example.com"], None);
    assert!(gone.contains("NotFound"), "{gone}");
    // kubectl's discovery cache still knows the type; the server no longer serves it.
    let unserved = sandbox.fails(&["get", "widgets"], None);
    assert!(
        unserved.contains(r#"Unable to list "example.com/v1, Resource=widgets": the server could not find the requested resource"#),
        "{unserved}"
    );
}

fn server_side_apply_tracks_owners_conflicts_and_removals(sandbox: &Sandbox) {
    let config = "apiVersion: v1
kind: ConfigMap
metadata: {name: owned, labels: {team: a}}
data: {k1: v1, k2: v2}
";
    let applied = sandbox.ok_with(&["apply", "--server-side", "-f", "-"], Some(config));
    assert_eq!(applied.trim(), "configmap/owned serverside-applied");
    let before = sandbox.resource_version(&["configmap", "owned"]);
    sandbox.ok_with(&["apply", "--server-side", "-f", "-"], Some(config));
    assert_eq!(
        sandbox.resource_version(&["configmap", "owned"]),
        before,
        "an unchanged apply writes nothing"
    );
    let managers = sandbox.ok(&[
        "get",
        "configmap",
        "owned",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}/{.metadata.managedFields[*].operation}",
    ]);
    assert_eq!(managers, "kubectl/Apply");

    sandbox.ok(&[
        "patch",
        "configmap",
        "owned",
        "--type=merge",
        "-p",
        r#"{"data":{"k1":"changed","k3":"v3"}}"#,
    ]);
    let conflict = sandbox.fails(&["apply", "--server-side", "-f", "-"], Some(config));
    assert!(
        conflict.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: .data.k1"#
        ),
        "{conflict}"
    );
    // Forced with a smaller configuration: k1 is taken back, k2 and the label go, k3 (owned
    // by the patch) stays.
    let smaller = "apiVersion: v1
kind: ConfigMap
metadata: {name: owned}
data: {k1: v1}
";
    sandbox.ok_with(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(smaller),
    );
    let state = sandbox.ok(&[
        "get",
        "configmap",
        "owned",
        "-o",
        "jsonpath={.data} {.metadata.labels}",
    ]);
    assert_eq!(state.trim(), r#"{"k1":"v1","k3":"v3"}"#);
    let yaml = sandbox.ok(&[
        "get",
        "configmap",
        "owned",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(yaml.contains("manager: kubectl-patch"), "{yaml}");
    assert!(yaml.contains("f:k3: {}"), "{yaml}");

    // Apply creates, and merges list items by key with another manager's.
    sandbox.ok_with(&["apply", "--server-side", "-f", "-"], Some(DEPLOYMENT));
    let sidecar = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - {name: sidecar, image: busybox}
";
    sandbox.ok_with(
        &[
            "apply",
            "--server-side",
            "--field-manager=sidecar-injector",
            "-f",
            "-",
        ],
        Some(sidecar),
    );
    let names = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name} {.spec.replicas}",
    ]);
    assert_eq!(names, "web sidecar 2");
    let diff = sandbox.run(&["diff", "--server-side", "-f", "-"], Some(DEPLOYMENT));
    assert_eq!(
        diff.status.code(),
        Some(0),
        "no differences: {}",
        String::from_utf8_lossy(&diff.stdout)
    );
}

const SHOP: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

/// With the simulated cluster, a Deployment rolls out as on a cluster: `rollout status`
/// completes, `wait` sees it Available, `describe` shows its ReplicaSet and the controller's
/// events, and deleting its namespace removes the Deployment, its ReplicaSet and pods, then
/// the namespace.
#[test]
fn deployments_roll_out_and_namespaces_empty_with_the_simulated_cluster() {
    let sandbox = Sandbox::start_with(33, Simulators::all());
    sandbox.ok_with(&["apply", "-f", "-"], Some(SHOP));
    let rollout = sandbox.ok(&[
        "rollout",
        "status",
        "deployment/web",
        "-n",
        "shop",
        "--timeout=60s",
    ]);
    assert!(
        rollout.contains("deployment \"web\" successfully rolled out"),
        "{rollout}"
    );
    let waited = sandbox.ok(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "-n",
        "shop",
        "--timeout=60s",
    ]);
    assert!(waited.contains("condition met"), "{waited}");
    let described = sandbox.ok(&["describe", "deployment", "web", "-n", "shop"]);
    let hash = sandbox.ok(&[
        "get",
        "replicasets",
        "-n",
        "shop",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.labels.pod-template-hash}",
    ]);
    assert!(!hash.is_empty(), "a ReplicaSet with the template hash");
    for expected in [
        format!("NewReplicaSet:   web-{hash} (3/3 replicas created)"),
        "Replicas:               3 desired | 3 updated | 3 total | 3 available | 0 unavailable"
            .to_owned(),
        "Available      True    MinimumReplicasAvailable".to_owned(),
        "Progressing    True    NewReplicaSetAvailable".to_owned(),
        "ScalingReplicaSet  ".to_owned(),
        format!("deployment-controller  Scaled up replica set web-{hash} from 0 to 3"),
    ] {
        assert!(
            described.contains(&expected),
            "{expected:?} in:\n{described}"
        );
    }
    let pods = sandbox.ok(&["get", "pods", "-n", "shop", "-o", "name"]);
    assert_eq!(pods.lines().count(), 3, "{pods}");

    sandbox.ok(&["delete", "namespace", "shop", "--timeout=60s"]);
    let gone = sandbox.fails(&["get", "namespace", "shop"], None);
    assert!(gone.contains("namespaces \"shop\" not found"), "{gone}");
    for kind in ["deployments", "replicasets", "pods"] {
        let left = sandbox.ok(&["get", kind, "-n", "shop", "-o", "name"]);
        assert!(left.is_empty(), "{kind} left: {left}");
    }
}

/// Without the simulated cluster (envtest-like), the same Deployment stays without status or
/// ReplicaSet, `rollout status` times out, and its namespace stays Terminating.
#[test]
fn without_the_simulated_cluster_deployments_never_roll_out() {
    let sandbox = Sandbox::start_with(33, Simulators::none());
    sandbox.ok_with(&["apply", "-f", "-"], Some(SHOP));
    let timed_out = sandbox.fails(
        &[
            "rollout",
            "status",
            "deployment/web",
            "-n",
            "shop",
            "--timeout=2s",
        ],
        None,
    );
    assert!(
        timed_out.contains("timed out waiting for the condition"),
        "{timed_out}"
    );
    let status = sandbox.ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        "shop",
        "-o",
        "jsonpath={.status}",
    ]);
    assert_eq!(status, "{}");
    let sets = sandbox.ok(&["get", "replicasets", "-n", "shop", "-o", "name"]);
    assert!(sets.is_empty(), "{sets}");
    sandbox.ok(&["delete", "namespace", "shop", "--wait=false"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let phase = sandbox.ok(&["get", "namespace", "shop", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Terminating");
    sandbox.ok(&["get", "deployment", "web", "-n", "shop"]);
}

/// `kubectl get events` prints kube-apiserver's Event columns (before: only NAME and CREATED
/// AT, with kubectl 1.27, which reads the server's Table); `-o wide` adds the rest.
#[test]
fn get_events_prints_the_event_columns() {
    for minor in [27, 33] {
        let sandbox = Sandbox::start_with(minor, Simulators::all());
        sandbox.ok_with(&["apply", "-f", "-"], Some(SHOP));
        sandbox.ok(&[
            "rollout",
            "status",
            "deployment/web",
            "-n",
            "shop",
            "--timeout=60s",
        ]);
        let table = sandbox.ok(&["get", "events", "-n", "shop"]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "kubectl 1.{minor}:\n{table}"
        );
        assert!(
            table.lines().any(|line| line.contains("Normal")
                && line.contains("ScalingReplicaSet")
                && line.contains("deployment/web")
                && line.contains("Scaled up replica set web-")),
            "kubectl 1.{minor}:\n{table}"
        );
        let wide = sandbox.ok(&["get", "events", "-n", "shop", "-o", "wide"]);
        let header = wide.lines().next().unwrap_or_default();
        for column in ["SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"] {
            assert!(header.contains(column), "kubectl 1.{minor}:\n{wide}");
        }
    }
}

/// An Event recorded through `events.k8s.io/v1` (as kube-rs's recorder and kro's controller
/// record them) is what `kubectl get events`, `kubectl events` and `kubectl describe` show:
/// they read core/v1 Events, which is one resource with it.
fn events_recorded_through_events_k8s_io_show_everywhere(sandbox: &Sandbox) {
    sandbox.ok_with(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: default\n"),
    );
    let uid = sandbox.ok(&["get", "configmap", "web", "-o", "jsonpath={.metadata.uid}"]);
    let event = format!(
        r#"apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: web.1
  namespace: default
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: kro.run/controller
reportingInstance: kro-1
action: Reconcile
reason: ResourcesReady
type: Normal
note: all resources are ready
regarding:
  apiVersion: v1
  kind: ConfigMap
  name: web
  namespace: default
  uid: {uid}
"#
    );
    sandbox.ok_with(&["create", "-f", "-"], Some(&event));
    let table = sandbox.ok(&["get", "events", "-n", "default"]);
    assert!(
        table.lines().any(|line| line.contains("ResourcesReady")
            && line.contains("configmap/web")
            && line.contains("all resources are ready")),
        "{table}"
    );
    let described = sandbox.ok(&["describe", "configmap", "web", "-n", "default"]);
    assert!(
        described.contains("ResourcesReady") && described.contains("all resources are ready"),
        "{described}"
    );
    let listed = sandbox.ok(&["events", "-n", "default"]);
    assert!(
        listed.contains("ResourcesReady") && listed.contains("all resources are ready"),
        "{listed}"
    );
}

/// `kubectl rollout history` lists a StatefulSet's ControllerRevisions, one per template.
#[test]
fn rollout_history_lists_a_stateful_sets_revisions() {
    for minor in [27, 33] {
        let sandbox = Sandbox::start_with(minor, Simulators::all());
        let set = |image: &str| {
            format!(
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: default\nspec:\n  replicas: 1\n  serviceName: db\n  selector:\n    matchLabels: {{app: db}}\n  template:\n    metadata:\n      labels: {{app: db}}\n    spec:\n      containers:\n      - {{name: db, image: \"{image}\"}}\n"
            )
        };
        let history_with = |revision: char| {
            let mut history = String::new();
            for _ in 0..100 {
                history = sandbox.ok(&["rollout", "history", "statefulset/db", "-n", "default"]);
                if history.lines().any(|line| line.starts_with(revision)) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            history
        };
        sandbox.ok_with(&["apply", "-f", "-"], Some(&set("postgres:16")));
        history_with('1');
        sandbox.ok_with(&["apply", "-f", "-"], Some(&set("postgres:17")));
        let history = history_with('2');
        let revisions: Vec<&str> = history
            .lines()
            .skip_while(|line| !line.starts_with("REVISION"))
            .skip(1)
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        assert_eq!(revisions, ["1", "2"], "kubectl 1.{minor}:\n{history}");
    }
}

/// `kubectl rollout undo` of a StatefulSet (to the previous revision, and `--to-revision`)
/// brings its template back through the revision that holds it, which `rollout history` then
/// lists under a new number; the ControllerRevisions stay within `revisionHistoryLimit` (plus
/// the one in use).
#[test]
fn rollout_undo_brings_a_stateful_sets_template_back_and_history_stays_bounded() {
    for minor in [27, 33] {
        let sandbox = Sandbox::start_with(minor, Simulators::all());
        let set = |image: &str| {
            format!(
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: default\nspec:\n  replicas: 1\n  revisionHistoryLimit: 2\n  serviceName: db\n  selector:\n    matchLabels: {{app: db}}\n  template:\n    metadata:\n      labels: {{app: db}}\n    spec:\n      containers:\n      - {{name: db, image: \"{image}\"}}\n"
            )
        };
        let rolled_out = || {
            sandbox.ok(&[
                "rollout",
                "status",
                "statefulset/db",
                "-n",
                "default",
                "--timeout=30s",
            ]);
        };
        // (revision, name) of each ControllerRevision, once there are `count` of them.
        let revisions = |count: usize| {
            let mut listed = Vec::new();
            for _ in 0..100 {
                let text = sandbox.ok(&[
                    "get",
                    "controllerrevisions",
                    "-n",
                    "default",
                    "-l",
                    "app=db",
                    "-o",
                    "jsonpath={range .items[*]}{.revision} {.metadata.name}{\"\\n\"}{end}",
                ]);
                listed = text
                    .lines()
                    .filter_map(|line| line.split_once(' '))
                    .filter_map(|(number, name)| {
                        Some((number.parse::<i64>().ok()?, name.to_owned()))
                    })
                    .collect::<Vec<_>>();
                listed.sort();
                if listed.len() == count {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            listed
        };
        let history = || {
            let history = sandbox.ok(&["rollout", "history", "statefulset/db", "-n", "default"]);
            history
                .lines()
                .skip_while(|line| !line.starts_with("REVISION"))
                .skip(1)
                .filter_map(|line| line.split_whitespace().next())
                .filter_map(|number| number.parse::<i64>().ok())
                .collect::<Vec<_>>()
        };
        let image = || {
            sandbox.ok(&[
                "get",
                "statefulset",
                "db",
                "-n",
                "default",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ])
        };
        sandbox.ok_with(&["apply", "-f", "-"], Some(&set("postgres:15")));
        rolled_out();
        for version in 16..=19 {
            sandbox.ok_with(
                &["apply", "-f", "-"],
                Some(&set(&format!("postgres:{version}"))),
            );
            rolled_out();
        }
        // Two old revisions and the one in use: 1 and 2 were pruned.
        let before = revisions(3);
        let numbers: Vec<i64> = before.iter().map(|(number, _)| *number).collect();
        assert_eq!(numbers, [3, 4, 5], "kubectl 1.{minor}: {before:?}");
        assert_eq!(history(), [3, 4, 5], "kubectl 1.{minor}");

        let undone = sandbox.ok(&["rollout", "undo", "statefulset/db", "-n", "default"]);
        assert_eq!(undone.trim(), "statefulset.apps/db rolled back");
        rolled_out();
        assert_eq!(image(), "postgres:18", "kubectl 1.{minor}");
        let after = revisions(3);
        assert_eq!(
            after,
            [
                before[0].clone(),
                before[2].clone(),
                (6, before[1].1.clone())
            ],
            "kubectl 1.{minor}: revision 4 is reused as 6"
        );
        assert_eq!(history(), [3, 5, 6], "kubectl 1.{minor}");
        let status = sandbox.ok(&[
            "get",
            "statefulset",
            "db",
            "-n",
            "default",
            "-o",
            "jsonpath={.status.updateRevision} {.status.currentRevision}",
        ]);
        assert_eq!(status, format!("{0} {0}", before[1].1), "kubectl 1.{minor}");

        sandbox.ok(&[
            "rollout",
            "undo",
            "statefulset/db",
            "-n",
            "default",
            "--to-revision=3",
        ]);
        rolled_out();
        assert_eq!(image(), "postgres:17", "kubectl 1.{minor}");
        let last = revisions(3);
        assert_eq!(
            last,
            [
                (5, before[2].1.clone()),
                (6, before[1].1.clone()),
                (7, before[0].1.clone())
            ],
            "kubectl 1.{minor}: revision 3 is reused as 7"
        );
        assert_eq!(history(), [5, 6, 7], "kubectl 1.{minor}");
        let shown = sandbox.ok(&[
            "rollout",
            "history",
            "statefulset/db",
            "-n",
            "default",
            "--revision=7",
        ]);
        assert!(shown.contains("postgres:17"), "kubectl 1.{minor}: {shown}");
        let skipped = sandbox.ok(&[
            "rollout",
            "undo",
            "statefulset/db",
            "-n",
            "default",
            "--to-revision=7",
        ]);
        // kubectl finds revision 7's data byte for byte in its own encoding of the set.
        assert_eq!(
            skipped.trim(),
            "statefulset.apps/db skipped rollback (current template already matches revision 7)",
            "kubectl 1.{minor}"
        );
    }
}

/// `kubectl rollout undo` of a DaemonSet reuses the revision holding the template it brings
/// back, and its history keeps `revisionHistoryLimit` old revisions.
#[test]
fn rollout_undo_brings_a_daemon_sets_template_back() {
    for minor in [27, 33] {
        let sandbox = Sandbox::start_with(minor, Simulators::all());
        let set = |image: &str| {
            format!(
                "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  namespace: default\nspec:\n  revisionHistoryLimit: 1\n  selector:\n    matchLabels: {{app: agent}}\n  template:\n    metadata:\n      labels: {{app: agent}}\n    spec:\n      containers:\n      - {{name: agent, image: \"{image}\"}}\n"
            )
        };
        let rolled_out = || {
            sandbox.ok(&[
                "rollout",
                "status",
                "daemonset/agent",
                "-n",
                "default",
                "--timeout=30s",
            ]);
        };
        // The revision numbers `rollout history` lists, once there are `count`.
        let history = |count: usize| {
            let mut numbers = Vec::new();
            for _ in 0..100 {
                let history =
                    sandbox.ok(&["rollout", "history", "daemonset/agent", "-n", "default"]);
                numbers = history
                    .lines()
                    .skip_while(|line| !line.starts_with("REVISION"))
                    .skip(1)
                    .filter_map(|line| line.split_whitespace().next())
                    .filter_map(|number| number.parse::<i64>().ok())
                    .collect::<Vec<_>>();
                if numbers.len() == count {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            numbers
        };
        let image = || {
            sandbox.ok(&[
                "get",
                "daemonset",
                "agent",
                "-n",
                "default",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ])
        };
        for version in 1..=3 {
            sandbox.ok_with(
                &["apply", "-f", "-"],
                Some(&set(&format!("agent:{version}"))),
            );
            rolled_out();
        }
        assert_eq!(history(2), [2, 3], "kubectl 1.{minor}");
        let undone = sandbox.ok(&["rollout", "undo", "daemonset/agent", "-n", "default"]);
        assert_eq!(undone.trim(), "daemonset.apps/agent rolled back");
        rolled_out();
        assert_eq!(image(), "agent:2", "kubectl 1.{minor}");
        assert_eq!(history(2), [3, 4], "kubectl 1.{minor}");
        sandbox.ok(&[
            "rollout",
            "undo",
            "daemonset/agent",
            "-n",
            "default",
            "--to-revision=3",
        ]);
        rolled_out();
        assert_eq!(image(), "agent:3", "kubectl 1.{minor}");
        assert_eq!(history(2), [4, 5], "kubectl 1.{minor}");
    }
}

/// `kubectl auth whoami` (a `SelfSubjectReview`: v1 for kubectl 1.33, v1beta1 for 1.27), as
/// the credentials' holder and impersonating a ServiceAccount with `--as`/`--as-group`.
fn whoami_shows_whom_a_request_impersonates(sandbox: &Sandbox) {
    let review = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["auth", "whoami", "-o", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&sandbox.ok(&all)).expect("a review")
    };
    let admin = review(&[]);
    assert_eq!(admin["status"]["userInfo"]["username"], "kro:admin");
    let account = review(&["--as", "system:serviceaccount:apps:deployer"]);
    assert_eq!(
        account["status"]["userInfo"],
        serde_json::json!({
            "username": "system:serviceaccount:apps:deployer",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:apps", "system:authenticated"],
        })
    );
    let grouped = review(&["--as", "jane", "--as-group", "team-a", "--as-uid", "u-1"]);
    assert_eq!(
        grouped["status"]["userInfo"],
        serde_json::json!({"username": "jane", "uid": "u-1", "groups": ["team-a", "system:authenticated"]})
    );
}
