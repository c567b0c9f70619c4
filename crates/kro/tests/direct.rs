//! `kro apply` / `kro delete` (direct deploy) against fresh `kro apiserver`s: for every
//! example and an RGD with a collection, a data node and an includeWhen, the objects and the
//! status are those the controller makes for the same instance on another fresh server
//! (`kro dev`); re-applying prunes what left the plan; `kro delete` leaves nothing behind; a
//! Deployment whose pods fail makes `kro apply` fail in time, naming it, and
//! `--rollback-on-failure` removes what the run created.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use kro_test_support::{eventually, kubectl_succeeds, repository_root};
use serde_json::{Value, json};

/// A server process, killed on drop, and the kubeconfig it wrote.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    home: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `kro dev` (the API server and the controllers) or `kro apiserver` with `extra` flags;
    /// returns once it serves.
    fn start(command: &str, extra: &[&str]) -> Server {
        let home = tempfile::tempdir().expect("a HOME");
        let kubeconfig = home.path().join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args([command, "--port", "0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kro starts");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        // Keep draining both so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});
        let mut lines = BufReader::new(stdout).lines();
        let server = Server {
            child,
            kubeconfig,
            home,
        };
        if command == "dev" {
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            assert!(
                first.contains("controllers running"),
                "kro dev said: {first:?}"
            );
        }
        std::thread::spawn(move || for _ in lines.by_ref() {});
        eventually("the server serving", || {
            (server.kubeconfig.is_file() && server.try_kubectl(&["get", "namespace", "default"]))
                .then_some(())
        });
        server
    }

    fn try_kubectl(&self, args: &[&str]) -> bool {
        kro_test_support::run_kubectl_binary(
            &kro_test_support::kubectl_release(33),
            &self.kubeconfig,
            self.home.path(),
            args,
            None,
        )
        .status
        .success()
    }

    fn kubectl(&self, args: &[&str]) -> String {
        kubectl_succeeds(33, &self.kubeconfig, self.home.path(), args)
    }

    fn kubectl_json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&args)).expect("kubectl prints JSON")
    }

    /// Runs `kro <args> --kubeconfig <this server's>`.
    fn kro(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .output()
            .expect("kro runs")
    }

    /// The objects labelled as the instance `name`'s, of the `types` given (but the parent
    /// ConfigMap of a direct deploy, which carries the instance's name too).
    fn instance_objects(&self, types: &[String], name: &str) -> Vec<Value> {
        let list = self.kubectl_json(&[
            "get",
            &types.join(","),
            "--all-namespaces",
            "-l",
            &format!("kro.run/instance-name={name}"),
        ]);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|object| {
                !object["metadata"]["name"]
                    .as_str()
                    .is_some_and(|name| name.starts_with("kro-direct."))
            })
            .cloned()
            .collect()
    }
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The kubectl resource types (`deployment.apps`) of the objects `kro render` plans for
/// the instance.
fn planned_types(rgd: &Path, instance: &Path) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args([
            "render",
            "-f",
            path(rgd),
            "-i",
            path(instance),
            "--assume-ready",
            "-o",
            "json",
        ])
        .output()
        .expect("kro render runs");
    assert!(
        output.status.success(),
        "kro render: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let mut types: Vec<String> = report["levels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|level| level["nodes"].as_array().cloned().unwrap_or_default())
        .flat_map(|node| node["objects"].as_array().cloned().unwrap_or_default())
        .map(|object| {
            let kind = object["kind"].as_str().unwrap_or_default().to_lowercase();
            match object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .split_once('/')
            {
                Some((group, _)) => format!("{kind}.{group}"),
                None => kind,
            }
        })
        .collect();
    types.sort();
    types.dedup();
    types
}

/// What must be equal between the controller's objects and direct deploy's: identity, kro's
/// labels (but the instance UID and ApplySet id, which name different parents) and
/// annotations, and the content (spec without allocated addresses, data).
fn comparable(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .map(|object| {
            let metadata = &object["metadata"];
            let key = format!(
                "{} {}/{}",
                object["kind"].as_str().unwrap_or_default(),
                metadata["namespace"].as_str().unwrap_or_default(),
                metadata["name"].as_str().unwrap_or_default()
            );
            let mut labels = metadata["labels"].clone();
            if let Some(labels) = labels.as_object_mut() {
                labels.remove("kro.run/instance-id");
                labels.remove("applyset.kubernetes.io/part-of");
            }
            let mut spec = without(&object["spec"], metadata["uid"].as_str().unwrap_or("-"));
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            let annotations: BTreeMap<String, Value> = metadata["annotations"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, _)| key.contains("kro.run"))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            let value = json!({
                "apiVersion": object["apiVersion"],
                "labels": labels,
                "annotations": annotations,
                "spec": spec,
                "data": object["data"],
                "stringData": object["stringData"],
            });
            (key, value)
        })
        .collect()
}

/// `value` with every string equal to `uid` (a Job's selector names its own UID) replaced.
fn without(value: &Value, uid: &str) -> Value {
    match value {
        Value::String(text) if text == uid => json!("<uid>"),
        Value::Array(items) => items.iter().map(|item| without(item, uid)).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| (key.clone(), without(value, uid)))
            .collect(),
        other => other.clone(),
    }
}

/// A status with the times of its conditions left out.
fn timeless(status: &Value) -> Value {
    let mut status = status.clone();
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for condition in conditions {
            if let Some(condition) = condition.as_object_mut() {
                condition.remove("lastTransitionTime");
            }
        }
    }
    status
}

/// Runs the instance through the controller on one fresh server and through `kro apply` on
/// another, and holds the objects and the status equal; then `kro delete` on the second
/// leaves nothing of the instance behind.
fn parity(rgd: &Path, instance: &Path) {
    let document: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(instance).expect("the instance"))
            .expect("the instance is YAML");
    let name = document["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    let kind = document["kind"].as_str().expect("a kind").to_lowercase();
    let types = planned_types(rgd, instance);

    // The controller's side goes through `kro apply --mode kro`: the RGD, then the instance,
    // each waited for.
    let controlled = Server::start("dev", &[]);
    let through_kro = controlled.kro(&[
        "apply",
        "--mode",
        "kro",
        "-f",
        path(rgd),
        "-i",
        path(instance),
        "-o",
        "json",
    ]);
    assert!(
        through_kro.status.success(),
        "kro apply --mode kro failed:\n{}",
        String::from_utf8_lossy(&through_kro.stderr)
    );
    let by_controller: Value =
        serde_json::from_slice(&through_kro.stdout).expect("kro apply prints JSON");
    assert_eq!(
        by_controller["status"]["state"], "ACTIVE",
        "{by_controller}"
    );

    let direct = Server::start("apiserver", &[]);
    let applied = direct.kro(&["apply", "-f", path(rgd), "-i", path(instance), "-o", "json"]);
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "kro apply failed:\n{stderr}");
    let by_direct: Value = serde_json::from_slice(&applied.stdout).expect("kro apply prints JSON");

    // The controller goes on updating the status as its objects' status changes (a field
    // read from a Deployment's status appears once it is available); kro apply waited for
    // readiness, so the controller's status must come to what kro apply printed.
    let wanted = timeless(&by_direct["status"]);
    let started = std::time::Instant::now();
    loop {
        let status = timeless(&controlled.kubectl_json(&["get", &kind, &name])["status"]);
        if status == wanted {
            break;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            assert_eq!(
                wanted, status,
                "kro apply's status differs from the controller's"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let controller_objects = comparable(&controlled.instance_objects(&types, &name));
    let direct_objects = comparable(&direct.instance_objects(&types, &name));
    assert!(!direct_objects.is_empty(), "kro apply made nothing");
    assert_eq!(
        direct_objects.keys().collect::<Vec<_>>(),
        controller_objects.keys().collect::<Vec<_>>(),
        "kro apply made other objects than the controller"
    );
    for (key, object) in &direct_objects {
        assert_eq!(object, &controller_objects[key], "{key} differs");
    }
    let unchanged = direct.kro(&["apply", "-f", path(rgd), "-i", path(instance), "-o", "json"]);
    assert!(
        unchanged.status.success(),
        "applying again failed:\n{}",
        String::from_utf8_lossy(&unchanged.stderr)
    );

    let deleted = direct.kro(&["delete", &name]);
    assert!(
        deleted.status.success(),
        "kro delete failed:\n{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    assert_eq!(direct.instance_objects(&types, &name), Vec::<Value>::new());
    let parents = direct.kubectl_json(&["get", "configmaps", "-l", "applyset.kubernetes.io/id"]);
    assert_eq!(parents["items"], json!([]), "the parent ConfigMap is left");
}

fn example(name: &str) {
    let dir = repository_root().join("examples").join(name);
    parity(&dir.join("rgd.yaml"), &dir.join("instance.yaml"));
}

fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/direct")
        .join(name)
}

#[test]
fn webapp_deploys_directly_as_under_the_controller() {
    example("webapp");
}

#[test]
fn workers_deploys_directly_as_under_the_controller() {
    example("workers");
}

#[test]
fn data_node_deploys_directly_as_under_the_controller() {
    example("data-node");
}

#[test]
fn stack_deploys_directly_as_under_the_controller() {
    example("stack");
}

#[test]
fn scalable_web_deploys_directly_as_under_the_controller() {
    example("scalable-web");
}

#[test]
fn site_set_deploys_directly_as_under_the_controller() {
    example("site-set");
}

#[test]
fn a_collection_a_data_node_and_an_include_when_deploy_directly_as_under_the_controller() {
    parity(
        &test_data("parity-rgd.yaml"),
        &test_data("parity-instance.yaml"),
    );
}

/// The parity instance with other regions and exposure, written to `dir`.
fn regional_instance(dir: &Path, regions: &[&str], expose: bool) -> PathBuf {
    let instance = json!({
        "apiVersion": "kro.run/v1alpha1",
        "kind": "RegionalApp",
        "metadata": {"name": "maps", "namespace": "default"},
        "spec": {"regions": regions, "expose": expose},
    });
    let file = dir.join(format!("maps-{}-{expose}.json", regions.join("-")));
    std::fs::write(&file, instance.to_string()).expect("the instance is written");
    file
}

fn names(objects: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|object| {
            format!(
                "{}/{}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect();
    names.sort();
    names
}

const REGIONAL_TYPES: [&str; 3] = ["configmap", "deployment.apps", "service"];

fn regional_types() -> Vec<String> {
    REGIONAL_TYPES
        .iter()
        .map(|kind| (*kind).to_owned())
        .collect()
}

#[test]
fn a_server_dry_run_plans_every_level_and_stores_nothing() {
    let server = Server::start("apiserver", &[]);
    let applied = server.kro(&[
        "apply",
        "--dry-run=server",
        "-f",
        path(&test_data("parity-rgd.yaml")),
        "-i",
        path(&test_data("parity-instance.yaml")),
        "-o",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{stderr}");
    for line in [
        "level 1: ConfigMap/default/maps-app-eu created (server dry run)",
        "level 2: Deployment.apps/default/maps-app created (server dry run)",
        "level 3: Service/default/maps-app created (server dry run)",
    ] {
        assert!(stderr.contains(line), "{line:?} missing:\n{stderr}");
    }
    let shown: Value = serde_json::from_slice(&applied.stdout).expect("JSON");
    assert_eq!(shown["status"]["regions"], 3, "{shown}");
    assert_eq!(
        server.instance_objects(&regional_types(), "maps"),
        Vec::<Value>::new()
    );
    let parents = server.kubectl_json(&["get", "configmaps", "-l", "applyset.kubernetes.io/id"]);
    assert_eq!(parents["items"], json!([]), "a dry run stores no parent");
}

#[test]
fn mode_kro_says_when_the_cluster_has_no_kro() {
    let server = Server::start("apiserver", &[]);
    let example = repository_root().join("examples/webapp");
    let applied = server.kro(&[
        "apply",
        "--mode",
        "kro",
        "-f",
        path(&example.join("rgd.yaml")),
        "-i",
        path(&example.join("instance.yaml")),
    ]);
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "{stderr}");
    assert!(
        stderr.contains("error: the cluster does not serve ResourceGraphDefinitions"),
        "{stderr}"
    );
}

#[test]
fn applying_again_prunes_what_left_the_plan() {
    let server = Server::start("apiserver", &[]);
    let dir = tempfile::tempdir().expect("a directory");
    let rgd = test_data("parity-rgd.yaml");
    let first = server.kro(&[
        "apply",
        "-f",
        path(&rgd),
        "-i",
        path(&regional_instance(dir.path(), &["eu", "us", "ap"], true)),
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        names(&server.instance_objects(&regional_types(), "maps")),
        [
            "ConfigMap/maps-app-ap",
            "ConfigMap/maps-app-eu",
            "ConfigMap/maps-app-us",
            "Deployment/maps-app",
            "Service/maps-app"
        ]
    );
    // The collection shrinks and the includeWhen turns false.
    let second = server.kro(&[
        "apply",
        "-f",
        path(&rgd),
        "-i",
        path(&regional_instance(dir.path(), &["eu"], false)),
        "-o",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    for pruned in [
        "ConfigMap/default/maps-app-us",
        "ConfigMap/default/maps-app-ap",
        "Service/default/maps-app",
    ] {
        assert!(
            stderr.contains(&format!("pruned {pruned}")),
            "{pruned} not pruned:\n{stderr}"
        );
    }
    assert_eq!(
        names(&server.instance_objects(&regional_types(), "maps")),
        ["ConfigMap/maps-app-eu", "Deployment/maps-app"]
    );
    let status: Value = serde_json::from_slice(&second.stdout).expect("JSON");
    assert_eq!(status["status"]["regions"], 1);
    let parent = server.kubectl_json(&["get", "configmap", "kro-direct.regionalapp.kro.run.maps"]);
    assert_eq!(
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap,Deployment.apps",
        "the inventory is trimmed to what remains"
    );
}

#[test]
fn a_deployment_whose_pods_fail_fails_the_apply_in_time_naming_it() {
    let server = Server::start("apiserver", &["--fail-pods", "app=maps-app"]);
    let rgd = test_data("parity-rgd.yaml");
    let started = std::time::Instant::now();
    let applied = server.kro(&[
        "apply",
        "-f",
        path(&rgd),
        "-i",
        path(&test_data("parity-instance.yaml")),
        "--timeout",
        "5s",
    ]);
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "kro apply succeeded:\n{stderr}");
    assert!(
        stderr.contains(
            "error: timed out waiting for: app (level 2): Deployment.apps/default/maps-app"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("left in place"), "{stderr}");
    assert!(
        elapsed < std::time::Duration::from_secs(30),
        "kro apply took {elapsed:?} with a 5 s timeout"
    );
    // What it made stays (no rollback was asked for).
    assert_eq!(
        names(&server.instance_objects(&regional_types(), "maps")).len(),
        4,
        "three ConfigMaps and the Deployment"
    );
}

#[test]
fn rollback_on_failure_leaves_nothing_behind() {
    let server = Server::start("apiserver", &["--fail-pods", "app=maps-app"]);
    let rgd = test_data("parity-rgd.yaml");
    let applied = server.kro(&[
        "apply",
        "-f",
        path(&rgd),
        "-i",
        path(&test_data("parity-instance.yaml")),
        "--timeout",
        "5s",
        "--rollback-on-failure",
    ]);
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "kro apply succeeded:\n{stderr}");
    assert!(
        stderr.contains("rolled back: deleted the 4 object(s) this run created"),
        "{stderr}"
    );
    assert_eq!(
        server.instance_objects(&regional_types(), "maps"),
        Vec::<Value>::new()
    );
    let parents = server.kubectl_json(&["get", "configmaps", "-l", "applyset.kubernetes.io/id"]);
    assert_eq!(parents["items"], json!([]), "the parent ConfigMap is left");
}

/// Against the real kube-apiserver (no workload controllers there): a CRD and a custom
/// resource of it, a ConfigMap, a Secret and a Service deploy, read back their status fields,
/// apply again unchanged, and are deleted (the custom resource before its CRD).
#[test]
fn deploys_to_the_real_kube_apiserver_and_deletes_everything() {
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("direct") else {
        return;
    };
    let kubeconfig = control_plane.kubeconfig().to_path_buf();
    let home = tempfile::tempdir().expect("a HOME");
    let kro = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .output()
            .expect("kro runs")
    };
    let kubectl = |args: &[&str]| -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&kubectl_succeeds(33, &kubeconfig, home.path(), &args))
            .expect("kubectl prints JSON")
    };
    let rgd = test_data("widgets-rgd.yaml");
    let instance = test_data("widgets-instance.yaml");
    let labelled = "kro.run/instance-name=corner";
    // A server dry run first: the cluster checks every object and stores none; a dry run
    // stores no CRD, so the custom resource of the graph's own CRD is reported unchecked.
    let dry = kro(&[
        "apply",
        "--dry-run=server",
        "-f",
        path(&rgd),
        "-i",
        path(&instance),
    ]);
    let dry_stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "the dry run failed:\n{dry_stderr}");
    assert!(
        dry_stderr.contains(
            "level 1: Widget.example.com/default/corner not checked: example.com/v1 Widget is not served"
        ),
        "{dry_stderr}"
    );
    let stored = kubectl(&["get", "configmaps,secrets,services,crds", "-l", labelled]);
    assert_eq!(stored["items"], json!([]), "a dry run stored: {stored}");

    let apply = || {
        kro(&[
            "apply",
            "-f",
            path(&rgd),
            "-i",
            path(&instance),
            "-o",
            "json",
            "--timeout",
            "60s",
        ])
    };
    let applied = apply();
    assert!(
        applied.status.success(),
        "kro apply failed:\n{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let shown: Value = serde_json::from_slice(&applied.stdout).expect("JSON");
    let status = &shown["status"];
    assert_eq!(status["state"], "ACTIVE", "{shown}");
    assert_eq!(status["crd"], "widgets.example.com");
    assert_eq!(status["widgetColour"], "green");
    assert!(
        status["serviceIP"]
            .as_str()
            .is_some_and(|ip| !ip.is_empty()),
        "{status}"
    );
    let objects = kubectl(&[
        "get",
        "configmaps,secrets,services,widgets.example.com",
        "-l",
        labelled,
    ]);
    assert_eq!(
        names(objects["items"].as_array().expect("items")),
        [
            "ConfigMap/corner-settings",
            "ConfigMap/kro-direct.widgetshop.kro.run.corner",
            "Secret/corner-secret",
            "Service/corner",
            "Widget/corner"
        ]
    );
    let again = apply();
    assert!(
        again.status.success(),
        "applying again failed:\n{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let deleted = kro(&["delete", "corner", "--timeout", "60s"]);
    let stderr = String::from_utf8_lossy(&deleted.stderr);
    assert!(deleted.status.success(), "kro delete failed:\n{stderr}");
    let widget_first = stderr.find("Widget.example.com/default/corner");
    let crd_after =
        stderr.find("CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com");
    assert!(
        widget_first.is_some() && widget_first < crd_after,
        "the custom resource goes before its CRD:\n{stderr}"
    );
    let left = kubectl(&["get", "configmaps,secrets,services,crds", "-l", labelled]);
    assert_eq!(left["items"], json!([]), "left behind: {left}");
}

#[test]
fn ctrl_c_stops_the_apply_and_says_what_was_left() {
    let server = Server::start("apiserver", &["--fail-pods", "app=maps-app"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["apply", "-f"])
        .arg(test_data("parity-rgd.yaml"))
        .arg("-i")
        .arg(test_data("parity-instance.yaml"))
        .args(["--timeout", "2m", "--kubeconfig"])
        .arg(&server.kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kro apply starts");
    let stderr = child.stderr.take().expect("stderr");
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = received
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "kro apply never waited for the Deployment:\n{}",
                    seen.join("\n")
                )
            });
        let waiting = line.starts_with("level 2: app waiting: Deployment");
        seen.push(line);
        if waiting {
            break;
        }
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("kro apply can be waited for") {
            break status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "kro apply did not stop on Ctrl-C"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // The reader ends at the end of the pipe, which ends the channel.
    while let Ok(line) = received.recv_timeout(std::time::Duration::from_secs(5)) {
        seen.push(line);
    }
    let stderr = seen.join("\n");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        stderr.contains(
            "error: stopped; left waiting: app (level 2): Deployment.apps/default/maps-app"
        ),
        "{stderr}"
    );
}

#[test]
fn a_job_out_of_retries_fails_the_apply_at_once() {
    let server = Server::start("apiserver", &["--fail-pods", "task=migrate"]);
    let started = std::time::Instant::now();
    let applied = server.kro(&[
        "apply",
        "-f",
        path(&test_data("job-rgd.yaml")),
        "-i",
        path(&test_data("job-instance.yaml")),
        "--timeout",
        "2m",
    ]);
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "{stderr}");
    assert!(
        stderr.contains("error: resource job (level 0): spec.resources[0]: Job.batch/default/migrate: BackoffLimitExceeded"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "a failed Job waited {:?}",
        started.elapsed()
    );
    let after = server.kubectl_json(&["get", "configmaps", "-l", "kro.run/node-id=after"]);
    assert_eq!(after["items"], json!([]), "the next level started: {after}");
}

/// Applies `rgd` and `instance` (test data files) with `extra` flags.
fn apply_files(server: &Server, rgd: &str, instance: &str, extra: &[&str]) -> Output {
    let (rgd, instance) = (test_data(rgd), test_data(instance));
    let mut args = vec!["apply", "-f", path(&rgd), "-i", path(&instance)];
    args.extend(extra);
    server.kro(&args)
}

#[test]
fn a_rollback_removes_every_object_its_batch_created_even_after_a_refusal() {
    let server = Server::start("apiserver", &[]);
    // Sixteen ConfigMaps in one level, one with a name the server refuses.
    let applied = apply_files(
        &server,
        "bad-item-collection.yaml",
        "bad-item-collection-instance.yaml",
        &["--rollback-on-failure", "--timeout", "30s"],
    );
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "{stderr}");
    assert!(
        stderr.contains("ConfigMap/default/BAD_NAME (level 0)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rolled back: deleted the 15 object(s) this run created"),
        "{stderr}"
    );
    let left = server.kubectl_json(&["get", "configmaps", "-l", "kro.run/instance-name=co"]);
    assert_eq!(left["items"], json!([]), "left behind: {left}");
}

#[test]
fn a_failing_status_expression_fails_the_apply_at_once_naming_the_field() {
    let server = Server::start("apiserver", &[]);
    let started = std::time::Instant::now();
    let applied = apply_files(
        &server,
        "failing-status.yaml",
        "failing-status-instance.yaml",
        &["--timeout", "60s"],
    );
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(!applied.status.success(), "{stderr}");
    assert!(
        stderr.contains("error: the instance status: spec.schema.status.port: expression \"int(config.data.port)\""),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "it waited {:?}",
        started.elapsed()
    );
}

#[test]
fn an_external_ref_to_a_cluster_scoped_custom_kind_is_read() {
    let server = Server::start("apiserver", &[]);
    server.kubectl(&["apply", "-f", path(&test_data("cluster-widget-crd.yaml"))]);
    eventually("the Widget kind served", || {
        server
            .try_kubectl(&["get", "widgets.example.com"])
            .then_some(())
    });
    server.kubectl(&["apply", "-f", path(&test_data("cluster-widget.yaml"))]);
    let applied = apply_files(
        &server,
        "cluster-external-ref.yaml",
        "cluster-external-ref-instance.yaml",
        &["--timeout", "30s"],
    );
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{stderr}");
    let config = server.kubectl_json(&["get", "configmap", "uw"]);
    assert_eq!(config["data"]["color"], "red");
}

#[test]
fn a_graph_owning_a_cluster_scoped_crd_and_its_objects_settles() {
    let server = Server::start("apiserver", &[]);
    let applied = apply_files(
        &server,
        "own-cluster-crd.yaml",
        "own-cluster-crd-instance.yaml",
        &["--timeout", "30s"],
    );
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("Thing.example.com/things.example.com-x created")
            .count(),
        1,
        "the Thing is created once:\n{stderr}"
    );
    let deleted = server.kro(&["delete", "oc"]);
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
}

#[test]
fn instances_of_same_named_kinds_in_two_groups_do_not_prune_each_other() {
    let server = Server::start("apiserver", &[]);
    for (rgd, instance) in [
        ("same-kind-a.yaml", "same-kind-a-instance.yaml"),
        ("same-kind-b.yaml", "same-kind-b-instance.yaml"),
    ] {
        let applied = apply_files(&server, rgd, instance, &["--timeout", "30s"]);
        let stderr = String::from_utf8_lossy(&applied.stderr);
        assert!(applied.status.success(), "{stderr}");
        assert!(!stderr.contains("pruned"), "{stderr}");
    }
    let both = server.kubectl_json(&["get", "configmaps", "-l", "kro.run/instance-name=shop"]);
    assert_eq!(
        names(both["items"].as_array().expect("items")),
        [
            "ConfigMap/kro-direct.app.a.example.com.shop",
            "ConfigMap/kro-direct.app.b.example.com.shop",
            "ConfigMap/shop-a",
            "ConfigMap/shop-b"
        ]
    );
}

#[test]
fn a_server_dry_run_of_a_graph_with_its_own_namespace_checks_what_it_can() {
    let server = Server::start("apiserver", &[]);
    let applied = apply_files(
        &server,
        "own-namespace.yaml",
        "own-namespace-instance.yaml",
        &["--dry-run=server"],
    );
    let stderr = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{stderr}");
    assert!(
        stderr.contains("level 1: ConfigMap/team-ns/cfg not checked"),
        "{stderr}"
    );
    assert!(
        !server.try_kubectl(&["get", "namespace", "team-ns"]),
        "a dry run made the namespace"
    );
}

/// An RGD of one Deployment per zone whose items move one at a time (`propagateWhen` on the
/// collection); `broken` labels the pods so that `--fail-pods broken=true` fails them.
fn zoned_rgd(dir: &Path, broken: bool) -> PathBuf {
    let extra = if broken {
        "\n                broken: \"true\""
    } else {
        ""
    };
    let text = format!(
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: zoned
spec:
  schema:
    apiVersion: v1alpha1
    kind: Zoned
    spec:
      zones: '[]string'
  resources:
    - id: deployments
      forEach:
        - zone: ${{schema.spec.zones}}
      propagateWhen:
        - ${{linearlyReady(zone, deployments, 1)}}
      readyWhen:
        - ${{each.status.observedGeneration == each.metadata.generation && each.status.replicas == 1 && each.status.updatedReplicas == 1 && each.status.availableReplicas == 1}}
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${{schema.metadata.name + '-' + zone}}
        spec:
          replicas: 1
          selector:
            matchLabels:
              app: ${{zone}}
          template:
            metadata:
              labels:
                app: ${{zone}}{extra}
            spec:
              containers:
                - name: app
                  image: nginx:1
"
    );
    let path = dir.join(if broken { "broken.yaml" } else { "rgd.yaml" });
    std::fs::write(&path, text).expect("written");
    path
}

#[test]
fn a_gated_collection_moves_one_item_at_a_time_under_kro_apply_too() {
    let server = Server::start("apiserver", &["--fail-pods", "broken=true"]);
    let dir = tempfile::tempdir().expect("a directory");
    let instance = dir.path().join("instance.yaml");
    std::fs::write(
        &instance,
        "apiVersion: kro.run/v1alpha1\nkind: Zoned\nmetadata:\n  name: shop\n  namespace: default\nspec:\n  zones: [a, b, c]\n",
    )
    .expect("written");
    let apply = |rgd: &Path, timeout: &str| {
        server.kro(&[
            "apply",
            "--feature-gates",
            "PropagationControl=true",
            "-f",
            path(rgd),
            "-i",
            path(&instance),
            "--timeout",
            timeout,
        ])
    };
    let applied = apply(&zoned_rgd(dir.path(), false), "60s");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let versions = |zone: &str| {
        server.kubectl_json(&["get", "deployment", &format!("shop-{zone}")])["metadata"]
            ["resourceVersion"]
            .clone()
    };
    let (b, c) = (versions("b"), versions("c"));
    // Pods that never become ready: the first zone moves, the others wait for it.
    let failed = apply(&zoned_rgd(dir.path(), true), "5s");
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "kro apply succeeded:\n{stderr}");
    let first = server.kubectl_json(&["get", "deployment", "shop-a"]);
    assert_eq!(
        first["spec"]["template"]["metadata"]["labels"]["broken"], "true",
        "{stderr}"
    );
    assert_eq!(versions("b"), b, "zone b moved before zone a was ready");
    assert_eq!(versions("c"), c, "zone c moved before zone a was ready");
}

/// `kro apply` reads the time once for the whole run, as the controller does per reconcile.
#[test]
fn time_functions_read_one_instant_per_apply() {
    let server = Server::start("apiserver", &[]);
    let dir = tempfile::tempdir().expect("a directory");
    let rgd = dir.path().join("rgd.yaml");
    std::fs::write(
        &rgd,
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: stamped
spec:
  schema:
    apiVersion: v1alpha1
    kind: Stamped
  resources:
    - id: first
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: first
        data:
          at: ${string(time.now())}
    - id: second
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: second
        data:
          at: ${string(time.now())}
          after: ${first.data.at}
",
    )
    .expect("the RGD");
    let instance = dir.path().join("instance.yaml");
    std::fs::write(
        &instance,
        "apiVersion: kro.run/v1alpha1\nkind: Stamped\nmetadata:\n  name: s\n",
    )
    .expect("the instance");
    let apply = |gates: &str| {
        server.kro(&[
            "apply",
            "-f",
            path(&rgd),
            "-i",
            path(&instance),
            "--feature-gates",
            gates,
        ])
    };
    let refused = apply("");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("CELTimeFunctions"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let applied = apply("CELTimeFunctions=true");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let second = server.kubectl_json(&["get", "configmap", "second"]);
    let at = second["data"]["at"].as_str().expect("a time");
    assert_eq!(
        Some(at),
        second["data"]["after"].as_str(),
        "one instant per run"
    );
    assert!(at.starts_with("20") && at.ends_with('Z'), "{at}");
}
