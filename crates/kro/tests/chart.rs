//! The Helm chart (`charts/kro`) with real Helm (v3.22.0, built from Go modules as the control
//! plane is; `tools/helm`): it lints in both RBAC modes; it renders with its defaults and with
//! an upstream kro values file, and the controller accepts the command line each makes; its
//! CRD is the one the controller installs; what it renders passes a server-side dry run on
//! `kro apiserver`, on `kro dev` and on the real kube-apiserver; and `manifests/kro.yaml` is
//! what it renders
//! (`KRO_WRITE_MANIFESTS=1` rewrites it after a deliberate change). On the real, RBAC-enforcing
//! kube-apiserver, the controller runs with the token of the chart's ServiceAccount (not an
//! admin) and an RGD of a ConfigMap, a Secret, a Service and a custom resource becomes Active
//! and its instance ACTIVE.

use std::path::{Path, PathBuf};
use std::process::Command;

use kro_test_support::repository_root;
use serde_json::Value;

/// Helm, built, or `None` (after printing why) when Go is missing outside CI.
fn helm() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "chart",
        "the chart's tests need Go to build Helm (tools/helm)",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm");
    Some(kro_test_support::build_go_tool(
        "helm",
        "helm.sh/helm/v3/cmd/helm",
        &out,
    ))
}

/// Runs helm with `args` from the repository's root; its standard output.
fn run_helm(helm: &Path, args: &[&str]) -> String {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-home");
    let output = Command::new(helm)
        .args(args)
        .current_dir(repository_root())
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("helm runs");
    assert!(
        output.status.success(),
        "helm {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("helm prints UTF-8")
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(yaml)
        .expect("the rendered chart is YAML")
        .into_iter()
        .filter(|document| !document.is_null())
        .collect()
}

fn kro(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("kro runs")
}

/// The rendered Deployment's container arguments, which the controller must accept.
fn accepts_its_command_line(rendered: &[Value]) -> Vec<String> {
    let deployment = rendered
        .iter()
        .find(|document| document["kind"] == "Deployment")
        .expect("a Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|arg| arg.as_str().expect("a string").to_owned())
        .collect();
    let mut help = args.clone();
    help.push("--help".to_owned());
    let output = kro(&help);
    assert!(
        output.status.success(),
        "kro {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    args
}

#[test]
fn the_chart_lints_renders_and_makes_a_command_line_the_controller_accepts() {
    let Some(helm) = helm() else {
        return;
    };
    for mode in ["unrestricted", "aggregation"] {
        run_helm(
            &helm,
            &[
                "lint",
                "--strict",
                "charts/kro",
                "--set",
                &format!("rbac.mode={mode}"),
            ],
        );
    }

    let defaults = documents(&run_helm(
        &helm,
        &["template", "kro", "charts/kro", "--namespace", "kro-system"],
    ));
    let kinds: Vec<&str> = defaults
        .iter()
        .filter_map(|document| document["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment"
        ]
    );
    let args = accepts_its_command_line(&defaults);
    assert!(args.contains(&"--leader-elect=true".to_owned()), "{args:?}");
    let deployment = defaults
        .iter()
        .find(|document| document["kind"] == "Deployment")
        .expect("a Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["ports"][1]["containerPort"], 8079);

    let upstream = documents(&run_helm(
        &helm,
        &[
            "template",
            "kro",
            "charts/kro",
            "--namespace",
            "kro-system",
            "--values",
            "crates/kro/tests/chart/upstream-values.yaml",
        ],
    ));
    let args = accepts_its_command_line(&upstream);
    for expected in [
        "--client-qps=50",
        "--allow-crd-deletion=true",
        "--leader-election-namespace=kro-system",
        "--dynamic-controller-concurrent-reconciles=8",
        "--apply-concurrency=20",
        "--cel-cost-limit=250000",
        "--zap-log-level=debug",
        "--enable-controller-warmup=true",
        "--feature-gates=CELOmitFunction=true",
    ] {
        assert!(
            args.contains(&expected.to_owned()),
            "{expected} in {args:?}"
        );
    }
    let kinds: Vec<&str> = upstream
        .iter()
        .filter_map(|document| document["kind"].as_str())
        .collect();
    for kind in ["Service", "ServiceMonitor"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let aggregated = upstream
        .iter()
        .find(|document| {
            document["kind"] == "ClusterRole" && document["aggregationRule"].is_object()
        })
        .expect("the aggregated ClusterRole");
    assert_eq!(
        aggregated["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.kro.run/aggregate-to-controller"],
        "true"
    );

    let bad = Command::new(&helm)
        .args(["template", "kro", "charts/kro", "--set", "rbac.mode=admin"])
        .current_dir(repository_root())
        .output()
        .expect("helm runs");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("use unrestricted or aggregation"));
}

/// The chart's CRDs, each with the `kro generate` subcommand that prints it.
const CHART_CRDS: [(&str, &str); 2] = [
    ("rgd-crd", "kro.run_resourcegraphdefinitions.yaml"),
    ("graph-revision-crd", "internal.kro.run_graphrevisions.yaml"),
];

#[test]
fn the_chart_s_crds_are_the_ones_the_controller_installs() {
    for (command, file) in CHART_CRDS {
        let generated = kro(&["generate".to_owned(), command.to_owned()]);
        assert!(generated.status.success());
        let path = repository_root().join("charts/kro/crds").join(file);
        let in_chart = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            in_chart == String::from_utf8_lossy(&generated.stdout),
            "{} is not what `kro generate {command}` prints: regenerate it with\n  kro generate {command} > charts/kro/crds/{file}",
            path.display()
        );
    }
}

#[test]
fn the_plain_manifests_are_what_the_chart_renders() {
    let Some(helm) = helm() else {
        return;
    };
    let crd: String = CHART_CRDS
        .iter()
        .map(|(_, file)| {
            std::fs::read_to_string(repository_root().join("charts/kro/crds").join(file))
                .expect("the chart's CRD")
        })
        .collect::<Vec<_>>()
        .join("---\n");
    let rendered = run_helm(
        &helm,
        &["template", "kro", "charts/kro", "--namespace", "kro-system"],
    );
    let expected = format!(
        "# kro for clusters without Helm: `helm template kro charts/kro --namespace kro-system`\n\
         # with the chart's default values, its CRDs and the namespace. Do not edit: regenerate\n\
         # with `KRO_WRITE_MANIFESTS=1 cargo test -p kro --test chart` (docs/install.md).\n\
         apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kro-system\n---\n{crd}---\n{}",
        rendered.trim_start_matches("---\n")
    );
    let path = repository_root().join("manifests/kro.yaml");
    if std::env::var("KRO_WRITE_MANIFESTS").is_ok_and(|value| value == "1") {
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("manifests/");
        std::fs::write(&path, &expected).expect("written");
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == expected,
        "{} is not what the chart renders: regenerate it with\n  KRO_WRITE_MANIFESTS=1 cargo test -p kro --test chart",
        path.display()
    );
    assert!(!documents(&current).is_empty());
}

/// A `kro` process of a test, stopped on drop.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `kro` with `args`; stderr is piped when `stderr` is set, else dropped.
fn spawn_kro(args: &[&std::ffi::OsStr], stderr: bool) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(if stderr {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .spawn()
        .expect("kro starts")
}

/// `kro apiserver` on a free port, writing its kubeconfig to `kubeconfig`.
fn start_apiserver(kubeconfig: &Path) -> Running {
    use std::io::{BufRead, BufReader};
    let mut child = spawn_kro(
        &[
            "apiserver".as_ref(),
            "--port".as_ref(),
            "0".as_ref(),
            "--kubeconfig-out".as_ref(),
            kubeconfig.as_os_str(),
        ],
        true,
    );
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let serving = lines.any(|line| line.is_ok_and(|line| line.contains("kro apiserver: serving")));
    assert!(serving, "kro apiserver did not start");
    std::thread::spawn(move || for _ in lines {});
    Running(child)
}

/// `kro dev` on a free port (the API server with the controllers), writing its kubeconfig to
/// `kubeconfig`.
fn start_dev(kubeconfig: &Path) -> kro_test_support::KroDev {
    kro_test_support::KroDev::start(Path::new(env!("CARGO_BIN_EXE_kro")), kubeconfig, &[])
}

/// `kro controller` with `kubeconfig`, no metrics or probe listeners.
fn start_controller(kubeconfig: &Path) -> Running {
    Running(spawn_kro(
        &[
            "controller".as_ref(),
            "--metrics-addr".as_ref(),
            "0".as_ref(),
            "--health-probe-bind-address".as_ref(),
            "0".as_ref(),
            "--kubeconfig".as_ref(),
            kubeconfig.as_os_str(),
        ],
        false,
    ))
}

#[test]
fn the_rendered_chart_passes_a_server_side_dry_run() {
    let Some(helm) = helm() else {
        return;
    };
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _apiserver = start_apiserver(&kubeconfig);
    dry_run(&helm, &kubeconfig, home.path());
}

#[test]
fn the_rendered_chart_passes_a_server_side_dry_run_on_kro_dev() {
    let Some(helm) = helm() else {
        return;
    };
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _dev = start_dev(&kubeconfig);
    dry_run(&helm, &kubeconfig, home.path());
}

#[test]
fn the_rendered_chart_passes_a_server_side_dry_run_on_the_real_kube_apiserver() {
    let Some(helm) = helm() else {
        return;
    };
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("chart") else {
        return;
    };
    let home = tempfile::tempdir().expect("a HOME");
    dry_run(&helm, control_plane.kubeconfig(), home.path());
}

/// `helm template` in both RBAC modes, then `kubectl apply --dry-run=server` of what it renders
/// and of the chart's CRD, on the server `kubeconfig` names.
fn dry_run(helm: &Path, kubeconfig: &Path, home: &Path) {
    for mode in ["unrestricted", "aggregation"] {
        let rendered = run_helm(
            helm,
            &[
                "template",
                "kro",
                "charts/kro",
                "--set",
                &format!("rbac.mode={mode}"),
            ],
        );
        let file = home.join(format!("{mode}.yaml"));
        std::fs::write(&file, rendered).expect("written");
        let applied = kro_test_support::kubectl_succeeds(
            33,
            kubeconfig,
            home,
            &[
                "apply",
                "--dry-run=server",
                "-f",
                file.to_str().expect("a path"),
            ],
        );
        assert!(
            applied.contains("deployment.apps/kro created (server dry run)"),
            "{applied}"
        );
    }
    let crds = repository_root().join("charts/kro/crds");
    let applied = kro_test_support::kubectl_succeeds(
        33,
        kubeconfig,
        home,
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            crds.to_str().expect("a path"),
        ],
    );
    assert!(
        applied.contains("resourcegraphdefinitions.kro.run"),
        "{applied}"
    );
}

/// The kubeconfig of `admin` with its user replaced by a bearer `token`.
fn token_kubeconfig(admin: &Path, token: &str, out: &Path) {
    let text = std::fs::read_to_string(admin).expect("the admin kubeconfig");
    let mut config: Value = serde_saphyr::from_str(&text).expect("a kubeconfig");
    let users = config["users"].as_array_mut().expect("users");
    for user in users {
        user["user"] = serde_json::json!({ "token": token });
    }
    std::fs::write(out, serde_json::to_string(&config).expect("JSON")).expect("written");
}

/// The chart's ServiceAccount and RBAC in `mode`, in the namespace `namespace` (cluster-scoped
/// names suffixed with it, so that runs do not share them), the chart's CRD and the Widget CRD,
/// applied as the admin of `admin`; returns a kubeconfig with the ServiceAccount's token.
fn install_rbac(helm: &Path, admin: &Path, home: &Path, namespace: &str, mode: &str) -> PathBuf {
    let kubectl = |args: &[&str]| kro_test_support::kubectl_succeeds(33, admin, home, args);
    kubectl(&["create", "namespace", namespace]);
    // The Deployment is not applied: the controller runs here, with the ServiceAccount's token.
    let rendered = run_helm(
        helm,
        &[
            "template",
            "kro",
            "charts/kro",
            "--namespace",
            namespace,
            "--set",
            &format!("rbac.mode={mode}"),
        ],
    );
    let suffixed =
        |name: &Value| Value::from(format!("{}-{namespace}", name.as_str().unwrap_or_default()));
    let rbac: Vec<Value> = documents(&rendered)
        .into_iter()
        .filter(|document| document["kind"] != "Deployment")
        .map(|mut document| {
            if document["metadata"]["namespace"].is_null() {
                document["metadata"]["name"] = suffixed(&document["metadata"]["name"]);
            }
            if document["kind"] == "ClusterRoleBinding" {
                document["roleRef"]["name"] = suffixed(&document["roleRef"]["name"]);
            }
            document
        })
        .collect();
    let file = home.join(format!("rbac-{mode}.json"));
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": rbac});
    std::fs::write(&file, list.to_string()).expect("written");
    kubectl(&["apply", "-f", file.to_str().expect("a path")]);
    let crds = repository_root().join("charts/kro/crds");
    kubectl(&[
        "apply",
        "--server-side",
        "-f",
        crds.to_str().expect("a path"),
    ]);
    let widgets = repository_root().join("crates/kro/tests/chart/widget-crd.yaml");
    kubectl(&["apply", "-f", widgets.to_str().expect("a path")]);
    let token = kubectl(&[
        "-n",
        namespace,
        "create",
        "token",
        "kro",
        "--duration",
        "1h",
    ]);
    let controller_kubeconfig = home.join(format!("controller-{mode}.kubeconfig"));
    token_kubeconfig(admin, token.trim(), &controller_kubeconfig);
    controller_kubeconfig
}

/// What kube-controller-manager's ClusterRole aggregation does (the test control plane runs
/// no controller-manager): the rules of every ClusterRole labelled for aggregation into the
/// aggregated role `name`.
fn aggregate(admin: &Path, home: &Path, name: &str) {
    let kubectl = |args: &[&str]| kro_test_support::kubectl_succeeds(33, admin, home, args);
    let roles: Value = serde_json::from_str(&kubectl(&[
        "get",
        "clusterroles",
        "-l",
        "rbac.kro.run/aggregate-to-controller=true",
        "-o",
        "json",
    ]))
    .expect("JSON");
    let rules: Vec<Value> = roles["items"]
        .as_array()
        .expect("items")
        .iter()
        .flat_map(|role| role["rules"].as_array().cloned().unwrap_or_default())
        .collect();
    let patch = serde_json::json!({"rules": rules}).to_string();
    kubectl(&["patch", "clusterrole", name, "--type=merge", "-p", &patch]);
}

#[test]
fn the_controller_runs_with_the_chart_s_rbac_on_an_rbac_enforcing_api_server() {
    let Some(helm) = helm() else {
        return;
    };
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("chart") else {
        return;
    };
    let admin = control_plane.kubeconfig();
    let home = tempfile::tempdir().expect("a HOME");
    let kubectl = |args: &[&str]| kro_test_support::kubectl_succeeds(33, admin, home.path(), args);
    let namespace = format!("kro-rbac-{}", std::process::id());
    let token = install_rbac(&helm, admin, home.path(), &namespace, "unrestricted");
    let anything = kro_test_support::run_kubectl(
        &token,
        home.path(),
        &["-n", "kube-system", "get", "secrets"],
        None,
    );
    assert!(
        anything.status.success(),
        "unrestricted: the controller reads anything"
    );

    let _controller = start_controller(&token);
    let data = repository_root().join("crates/kro/tests/chart");
    kubectl(&[
        "apply",
        "-f",
        data.join("rbac-rgd.yaml").to_str().expect("a path"),
    ]);
    kro_test_support::eventually("the RGD Active", || {
        kubectl(&["get", "rgd", "bundle", "-o", "jsonpath={.status.state}"])
            .contains("Active")
            .then_some(())
    });
    let instance = home.path().join("instance.json");
    let object = serde_json::json!({
        "apiVersion": "kro.run/v1alpha1",
        "kind": "Bundle",
        "metadata": {"name": "one", "namespace": namespace},
    });
    std::fs::write(&instance, object.to_string()).expect("written");
    kubectl(&["apply", "-f", instance.to_str().expect("a path")]);
    kro_test_support::eventually("the instance ACTIVE", || {
        kubectl(&[
            "-n",
            &namespace,
            "get",
            "bundle",
            "one",
            "-o",
            "jsonpath={.status.state}",
        ])
        .contains("ACTIVE")
        .then_some(())
    });
    for object in [
        "configmap/one-settings",
        "secret/one-credentials",
        "service/one",
        "widget/one",
    ] {
        kubectl(&["-n", &namespace, "get", object]);
    }
    kubectl(&["-n", &namespace, "delete", "bundle", "one", "--wait=true"]);
    kubectl(&["delete", "rgd", "bundle", "--wait=true"]);
}

#[test]
fn in_aggregation_mode_the_rgd_names_the_permissions_the_controller_lacks() {
    let Some(helm) = helm() else {
        return;
    };
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("chart") else {
        return;
    };
    let admin = control_plane.kubeconfig();
    let home = tempfile::tempdir().expect("a HOME");
    let kubectl = |args: &[&str]| kro_test_support::kubectl_succeeds(33, admin, home.path(), args);
    let namespace = format!("kro-aggregation-{}", std::process::id());
    let token = install_rbac(&helm, admin, home.path(), &namespace, "aggregation");
    let aggregated = format!("kro:controller-{namespace}");
    aggregate(admin, home.path(), &aggregated);

    let _controller = start_controller(&token);
    let data = repository_root().join("crates/kro/tests/chart");
    let rgd = data.join("rbac-rgd.yaml");
    let rgd = rgd.to_str().expect("a path");
    // The RGD's name is cluster-wide: this test's own, so that it runs beside the other.
    let text = std::fs::read_to_string(rgd)
        .expect("the RGD")
        .replace("name: bundle", "name: bundle-aggregation")
        .replace("kind: Bundle", "kind: BundleAggregation");
    let own = home.path().join("rgd.yaml");
    std::fs::write(&own, text).expect("written");
    kubectl(&["apply", "-f", own.to_str().expect("a path")]);
    let message = kro_test_support::eventually("ControllerReady names what is missing", || {
        let reason = kubectl(&[
            "get",
            "rgd",
            "bundle-aggregation",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"ControllerReady\")].reason}",
        ]);
        (reason == "MissingPermissions").then(|| {
            kubectl(&[
                "get",
                "rgd",
                "bundle-aggregation",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"ControllerReady\")].message}",
            ])
        })
    });
    for missing in [
        "secrets: get, list, watch, create, patch, delete",
        "services: get, list, watch, create, patch, delete",
        "widgets.example.com: get, list, watch, create, patch, delete",
        "rbac.kro.run/aggregate-to-controller",
    ] {
        assert!(message.contains(missing), "{missing} in {message}");
    }
    assert!(
        !message.contains("configmaps"),
        "ConfigMaps are granted: {message}"
    );

    // Granted as the chart's docs say, the RGD becomes Active.
    let grant = home.path().join("grant.json");
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": format!("kro-manages-bundles-{namespace}"),
            "labels": {"rbac.kro.run/aggregate-to-controller": "true"},
        },
        "rules": [
            {"apiGroups": [""], "resources": ["secrets", "services"], "verbs": ["*"]},
            {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]},
        ],
    });
    std::fs::write(&grant, role.to_string()).expect("written");
    kubectl(&["apply", "-f", grant.to_str().expect("a path")]);
    aggregate(admin, home.path(), &aggregated);
    kro_test_support::eventually("the RGD Active once granted", || {
        let reason = kubectl(&[
            "get",
            "rgd",
            "bundle-aggregation",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"ControllerReady\")].reason}",
        ]);
        (reason == "Running").then_some(())
    });
    kubectl(&["delete", "rgd", "bundle-aggregation", "--wait=true"]);
}
