//! Migrating from upstream kro and back, on the real kube-apiserver.
//!
//! Upstream kro's controller (v0.9.3 and v0.9.4, built from its Go module by `tools/kro-v0.9.3`
//! and `tools/kro-v0.9.4`) runs with upstream's own CRDs (read from that module) until an RGD
//! is Active and its instances ACTIVE. Then `kro controller` starts on the same cluster, both
//! with leader election as the charts run them: it stands by, writing nothing, until upstream
//! stops (as in a rolling upgrade); then:
//! - it brings the RGD CRD to its own schema (an RGD with a data node is kept whole), keeping
//!   the stored versions;
//! - every instance stays ACTIVE, no child is recreated (same UIDs), and the only change to
//!   each child is the `kro.run/kro-version` label (plus `internal.kro.run/apply-order`,
//!   which v0.9.3 does not write and v0.9.4 does), after which nothing is written again;
//! - an upstream GraphRevision that is deleted does not stay stuck on its finalizer;
//! - an RGD update rolls out.
//!
//! Then it stops and upstream starts again: it takes over without logging an error, the
//! instances stay ACTIVE and their children keep their UIDs and the update.
//!
//! Upstream's controller also runs unmodified on `kro dev --no-controllers` (the embedded API
//! server with its simulated cluster, without this project's controllers):
//! upstream's webapp example becomes Active and its instance ACTIVE, and upstream logs no error.
//!
//! The suite needs Go (to build upstream) and the real control plane; without them it is
//! skipped with a printed reason, except under `CI=true`, where that is a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kro_test_support::{eventually, repository_root};
use serde_json::Value;

/// Upstream kro's controller of one version and the directory of its CRDs.
struct Upstream {
    version: &'static str,
    controller: PathBuf,
    crds: PathBuf,
    /// The module's directory (its examples are under `examples/`).
    module: PathBuf,
}

/// Builds upstream kro `version`'s controller, or says why it cannot (a failure under CI).
fn upstream(version: &'static str) -> Option<Upstream> {
    if !kro_test_support::go_or_skip(
        "migration",
        "the migration suite needs Go to build upstream kro (tools/kro-v*)",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-upstream");
    let module = format!("kro-v{version}");
    let controller = kro_test_support::build_go_tool(
        &module,
        "github.com/kubernetes-sigs/kro/cmd/controller",
        &out,
    );
    let module = kro_test_support::go_module_dir(&module, "github.com/kubernetes-sigs/kro", &out);
    let crds = module.join("helm/crds");
    assert!(crds.is_dir(), "{} is missing", crds.display());
    Some(Upstream {
        version,
        controller,
        crds,
        module,
    })
}

/// A controller process, killed on drop (and with the test, when it is killed); its output goes
/// to `log`.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(program: &Path, args: &[&std::ffi::OsStr], log: PathBuf) -> Running {
        let file = std::fs::File::create(&log).expect("a log file");
        let child = kro_test_support::child_command(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|error| panic!("{} does not start: {error}", program.display()));
        Running { child, log }
    }

    /// Stops it as a rollout would (SIGTERM), waiting for it to exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The flags both controllers are started with: upstream's names, which this controller
/// accepts too; no metrics or probe listeners; leader election as the charts run it.
const CONTROLLER_FLAGS: &[&str] = &[
    "--metrics-bind-address",
    "0",
    "--health-probe-bind-address",
    "0",
    "--leader-elect=true",
    "--leader-election-namespace",
    "default",
];

/// Starts `program` with `first` (a subcommand, or nothing), the kubeconfig and
/// [`CONTROLLER_FLAGS`].
fn start_controller(program: &Path, first: &[&str], kubeconfig: &Path, log: PathBuf) -> Running {
    let mut args: Vec<&std::ffi::OsStr> = first.iter().map(|arg| arg.as_ref()).collect();
    args.extend(["--kubeconfig".as_ref(), kubeconfig.as_os_str()]);
    args.extend(CONTROLLER_FLAGS.iter().map(std::ffi::OsStr::new));
    Running::start(program, &args, log)
}

fn start_upstream(upstream: &Upstream, kubeconfig: &Path, log: PathBuf) -> Running {
    start_controller(&upstream.controller, &[], kubeconfig, log)
}

fn start_ours(kubeconfig: &Path, log: PathBuf) -> Running {
    start_controller(
        Path::new(env!("CARGO_BIN_EXE_kro")),
        &["controller"],
        kubeconfig,
        log,
    )
}

/// kubectl on one cluster, with a HOME of its own.
struct Kubectl<'a> {
    kubeconfig: &'a Path,
    home: &'a Path,
}

impl Kubectl<'_> {
    fn run(&self, args: &[&str]) -> String {
        kro_test_support::kubectl_succeeds(33, self.kubeconfig, self.home, args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.run(&all)).expect("kubectl printed JSON")
    }

    fn apply_file(&self, path: &Path) {
        self.run(&["apply", "-f", path.to_str().expect("a path")]);
    }

    fn apply_json(&self, object: &Value) {
        let file = self.home.join("object.json");
        std::fs::write(&file, object.to_string()).expect("written");
        self.apply_file(&file);
    }
}

/// The namespaces and names of the instances.
const INSTANCES: &[(&str, &str)] = &[
    ("shops-a", "north"),
    ("shops-a", "south"),
    ("shops-b", "east"),
];

/// Every child the instances own, by kind, namespace and name.
fn children(kubectl: &Kubectl) -> BTreeMap<String, Value> {
    let list = kubectl.json(&[
        "get",
        "configmaps,secrets,services,widgets",
        "--all-namespaces",
        "-l",
        "kro.run/owned=true",
    ]);
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|object| {
            let key = format!(
                "{}/{}/{}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["namespace"].as_str().unwrap_or_default(),
                object["metadata"]["name"].as_str().unwrap_or_default()
            );
            (key, object.clone())
        })
        .collect()
}

fn label<'a>(object: &'a Value, name: &str) -> Option<&'a str> {
    object["metadata"]["labels"][name].as_str()
}

/// What this controller writes on children that upstream kro (of some version) does not:
/// where a child from upstream lacks one, the takeover may add it.
const ADDED: &[(&str, &str)] = &[
    // v0.9.4 writes it, v0.9.3 does not.
    ("annotations", "internal.kro.run/apply-order"),
    // A collection item's key (KREP-2), which upstream does not write.
    ("labels", "kro.run/collection-key"),
];

/// `object` without what a takeover may change: the kro version label, what [`ADDED`] names
/// where the `before` object lacks it, and the server's bookkeeping.
fn comparable(object: &Value, before: &Value) -> Value {
    let mut object = object.clone();
    let Some(metadata) = object["metadata"].as_object_mut() else {
        return object;
    };
    metadata.remove("resourceVersion");
    metadata.remove("managedFields");
    if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
        labels.remove("kro.run/kro-version");
    }
    for (field, key) in ADDED {
        if before["metadata"][field].get(key).is_none()
            && let Some(map) = metadata.get_mut(*field).and_then(Value::as_object_mut)
        {
            map.remove(*key);
            if map.is_empty() {
                metadata.remove(*field);
            }
        }
    }
    object
}

/// The state of each instance, in [`INSTANCES`] order.
fn states(kubectl: &Kubectl) -> Vec<String> {
    INSTANCES
        .iter()
        .map(|(namespace, name)| {
            kubectl.run(&[
                "-n",
                namespace,
                "get",
                "shop",
                name,
                "-o",
                "jsonpath={.status.state}",
            ])
        })
        .collect()
}

fn all_active(kubectl: &Kubectl) -> bool {
    states(kubectl).iter().all(|state| state == "ACTIVE")
}

fn assert_all_active(kubectl: &Kubectl, when: &str) {
    let states = states(kubectl);
    assert!(
        states.iter().all(|state| state == "ACTIVE"),
        "{when}: the shops {INSTANCES:?} are {states:?}"
    );
}

fn wait_rgd_active(kubectl: &Kubectl, name: &str) {
    eventually(&format!("RGD {name} Active"), || {
        (kubectl.run(&["get", "rgd", name, "-o", "jsonpath={.status.state}"]) == "Active")
            .then_some(())
    });
}

/// Waits until every child carries kro version `version`, asserting meanwhile that every
/// instance stays ACTIVE; the children then. On failure, the log of `controller` (the one
/// taking over) is printed with the children's labels.
fn wait_relabelled(
    kubectl: &Kubectl,
    controller: &Running,
    version: &str,
    expected: usize,
) -> BTreeMap<String, Value> {
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eventually(&format!("every child labelled kro {version}"), || {
            assert_all_active(kubectl, "during the takeover");
            let children = children(kubectl);
            (children.len() == expected
                && children
                    .values()
                    .all(|child| label(child, "kro.run/kro-version") == Some(version)))
            .then_some(children)
        })
    }));
    waited.unwrap_or_else(|panic| {
        for (key, child) in children(kubectl) {
            eprintln!("{key}: {:?}", label(&child, "kro.run/kro-version"));
        }
        eprintln!("the controller's log:\n{}", controller.log());
        std::panic::resume_unwind(panic)
    })
}

/// The GraphRevisions, by name, with their number and UID.
fn graph_revisions(kubectl: &Kubectl<'_>) -> std::collections::BTreeMap<String, (i64, String)> {
    let listed = kubectl.json(&["get", "graphrevisions"]);
    listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            (
                item["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                (
                    item["spec"]["revision"].as_i64().unwrap_or_default(),
                    item["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ),
            )
        })
        .collect()
}

/// The RGD's `status.lastIssuedRevision` (0 when unset).
fn last_issued_revision(kubectl: &Kubectl<'_>, rgd: &str) -> i64 {
    kubectl.json(&["get", "rgd", rgd])["status"]["lastIssuedRevision"]
        .as_i64()
        .unwrap_or(0)
}

fn no_errors_logged(controller: &Running, who: &str) {
    let log = controller.log();
    let errors: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("\tERROR\t"))
        .collect();
    assert!(
        errors.is_empty(),
        "{who} logged errors:\n{}",
        errors.join("\n")
    );
}

/// Prints how far into the test a step is, so that a slow step shows in the test's output.
fn phase(started: Instant, what: &str) {
    eprintln!("[{:6.1} s] {what}", started.elapsed().as_secs_f64());
}

/// A temporary directory that is kept, and named on stderr, when the test fails: the
/// controllers' logs in it say what happened.
struct KeptOnFailure(Option<tempfile::TempDir>);

impl KeptOnFailure {
    fn new() -> Self {
        KeptOnFailure(Some(tempfile::tempdir().expect("a temporary directory")))
    }

    fn path(&self) -> &Path {
        self.0.as_ref().expect("kept until dropped").path()
    }
}

impl Drop for KeptOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(dir) = self.0.take()
        {
            eprintln!("the controllers' logs are kept in {}", dir.keep().display());
        }
    }
}

fn migrate(version: &'static str) {
    let started = Instant::now();
    let Some(upstream) = upstream(version) else {
        return;
    };
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("migration") else {
        return;
    };
    let home = KeptOnFailure::new();
    let kubectl = Kubectl {
        kubeconfig: control_plane.kubeconfig(),
        home: home.path(),
    };
    let data = repository_root().join("crates/kro/tests");
    kubectl.run(&[
        "apply",
        "--server-side",
        "-f",
        upstream.crds.to_str().expect("a path"),
    ]);
    kubectl.apply_file(&data.join("chart/widget-crd.yaml"));
    kubectl.run(&[
        "wait",
        "--for=condition=Established",
        "crd/resourcegraphdefinitions.kro.run",
        "crd/graphrevisions.internal.kro.run",
        "crd/widgets.example.com",
    ]);
    for namespace in ["shops-a", "shops-b"] {
        kubectl.run(&["create", "namespace", namespace]);
    }

    phase(started, "control plane up, CRDs established");
    // Upstream runs the RGD and its instances.
    let first = start_upstream(
        &upstream,
        kubectl.kubeconfig,
        home.path().join("upstream.log"),
    );
    kubectl.apply_file(&data.join("migration/rgd.yaml"));
    wait_rgd_active(&kubectl, "shop");
    for (namespace, name) in INSTANCES {
        let with_service = *name != "east";
        kubectl.apply_json(&serde_json::json!({
            "apiVersion": "kro.run/v1alpha1",
            "kind": "Shop",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"withService": with_service},
        }));
    }
    // Per instance: settings, credentials, widget, two regions; a Service for two of three.
    let expected = INSTANCES.len() * 5 + 2;
    eventually("the instances ACTIVE under upstream", || {
        (all_active(&kubectl) && children(&kubectl).len() == expected).then_some(())
    });
    phase(started, "instances ACTIVE under upstream");
    let before = children(&kubectl);
    let upstream_label = label(
        before.values().next().expect("children"),
        "kro.run/kro-version",
    )
    .expect("upstream labels its children")
    .to_owned();
    let upstream_revisions = graph_revisions(&kubectl);
    let upstream_last = last_issued_revision(&kubectl, "shop");
    assert!(
        upstream_last >= 1
            && upstream_revisions
                .values()
                .any(|(number, _)| *number == upstream_last),
        "upstream issued revision {upstream_last} of shop: {upstream_revisions:?}"
    );
    let revision = format!("shop-r{upstream_last:05}");
    no_errors_logged(&first, &format!("upstream {}", upstream.version));

    // This controller starts while upstream still leads (a rolling upgrade): both elect a
    // leader through the Lease controller.kro.run, so it stands by until upstream stops.
    let ours = start_ours(kubectl.kubeconfig, home.path().join("ours.log"));
    std::thread::sleep(Duration::from_secs(3));
    let standing_by = children(&kubectl);
    for (key, object) in &before {
        assert_eq!(
            standing_by[key]["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"],
            "{key} was written while upstream led"
        );
    }
    phase(started, "ours started, standing by");
    first.stop();
    phase(started, "upstream stopped");
    let rgd_crd = eventually("the RGD CRD at this controller's schema", || {
        let crd = kubectl.json(&["get", "crd", "resourcegraphdefinitions.kro.run"]);
        let resources = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["resources"]["items"]["properties"];
        (!resources["data"].is_null()).then_some(crd)
    });
    let ours_crd = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["generate", "rgd-crd", "-o", "json"])
        .output()
        .expect("kro generate rgd-crd runs");
    let ours_crd: Value = serde_json::from_slice(&ours_crd.stdout).expect("a CRD in JSON");
    assert_eq!(
        rgd_crd["spec"]["versions"], ours_crd["spec"]["versions"],
        "the RGD CRD's versions are this controller's, with nothing of upstream's schema left over"
    );
    assert_eq!(
        rgd_crd["status"]["storedVersions"],
        serde_json::json!(["v1alpha1"]),
        "the stored versions are kept"
    );
    let crd = kubectl.json(&["get", "crd", "shops.kro.run"]);
    let ours_version = eventually("the generated CRD relabelled", || {
        let crd = kubectl.json(&["get", "crd", "shops.kro.run"]);
        label(&crd, "kro.run/kro-version")
            .filter(|label| *label != upstream_label)
            .map(str::to_owned)
    });
    assert_eq!(
        crd["metadata"]["uid"],
        kubectl.json(&["get", "crd", "shops.kro.run"])["metadata"]["uid"],
        "the generated CRD is kept"
    );
    phase(started, "generated CRD relabelled by ours");
    let after = wait_relabelled(&kubectl, &ours, &ours_version, expected);
    for (key, old) in &before {
        let new = &after[key];
        assert_eq!(
            new["metadata"]["uid"], old["metadata"]["uid"],
            "{key} was recreated"
        );
        assert_eq!(
            comparable(new, old),
            comparable(old, old),
            "{key} changed beyond its kro version label"
        );
    }
    phase(started, "children relabelled by ours");
    std::thread::sleep(Duration::from_secs(3));
    let settled = children(&kubectl);
    for (key, object) in &after {
        assert_eq!(
            settled[key]["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"],
            "{key} was written again after the takeover"
        );
    }
    wait_rgd_active(&kubectl, "shop");
    assert_all_active(&kubectl, "after the takeover");

    // Upstream's GraphRevisions are kept as they were, and the unchanged spec issues none.
    assert_eq!(
        graph_revisions(&kubectl),
        upstream_revisions,
        "the GraphRevisions after the takeover"
    );
    assert_eq!(last_issued_revision(&kubectl, "shop"), upstream_last);
    let resolved = kubectl.run(&[
        "get",
        "rgd",
        "shop",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"GraphRevisionsResolved\")].message}",
    ]);
    assert_eq!(
        resolved,
        format!("revision {upstream_last} compiled and active")
    );

    // A deleted upstream GraphRevision is released, not stuck on its finalizer, and the spec
    // it held is issued again under the next number.
    kubectl.run(&["delete", "graphrevision", &revision, "--wait=false"]);
    let reissued = upstream_last + 1;
    eventually(
        "the deleted GraphRevision gone, the next one issued",
        || {
            let now = graph_revisions(&kubectl);
            (!now.contains_key(&revision)
                && now.contains_key(&format!("shop-r{reissued:05}"))
                && last_issued_revision(&kubectl, "shop") == reissued)
                .then_some(())
        },
    );
    phase(started, "GraphRevisions continued by ours");

    // An RGD only this controller accepts keeps its data node.
    kubectl.apply_file(&data.join("migration/data-rgd.yaml"));
    let kept = kubectl.run(&[
        "get",
        "rgd",
        "labelled",
        "-o",
        "jsonpath={.spec.resources[0].data.owner}",
    ]);
    assert!(
        kept.contains("-owner"),
        "the data node was pruned: {kept:?}"
    );
    wait_rgd_active(&kubectl, "labelled");
    kubectl.run(&["delete", "rgd", "labelled", "--wait=true"]);

    // An RGD update rolls out.
    let mut rgd: Value = kubectl.json(&["get", "rgd", "shop"]);
    rgd["spec"]["resources"][0]["template"]["data"]["migrated"] = Value::from("yes");
    for key in [
        "resourceVersion",
        "managedFields",
        "uid",
        "creationTimestamp",
        "generation",
    ] {
        rgd["metadata"]
            .as_object_mut()
            .map(|metadata| metadata.remove(key));
    }
    rgd.as_object_mut().map(|rgd| rgd.remove("status"));
    kubectl.apply_json(&rgd);
    eventually("the update rolled out", || {
        INSTANCES
            .iter()
            .all(|(namespace, name)| {
                kubectl.run(&[
                    "-n",
                    namespace,
                    "get",
                    "configmap",
                    &format!("{name}-settings"),
                    "-o",
                    "jsonpath={.data.migrated}",
                ]) == "yes"
            })
            .then_some(())
    });
    wait_rgd_active(&kubectl, "shop");
    eventually("the instances ACTIVE after the update", || {
        all_active(&kubectl).then_some(())
    });
    // The spec change is the next revision.
    let changed = reissued + 1;
    eventually("the changed spec issued as the next revision", || {
        (last_issued_revision(&kubectl, "shop") == changed
            && graph_revisions(&kubectl).contains_key(&format!("shop-r{changed:05}")))
        .then_some(())
    });
    let handed_back = graph_revisions(&kubectl);
    phase(started, "update rolled out");
    ours.stop();

    // And back: upstream takes over again.
    let second = start_upstream(
        &upstream,
        kubectl.kubeconfig,
        home.path().join("upstream-2.log"),
    );
    phase(started, "ours stopped, upstream started again");
    let back = wait_relabelled(&kubectl, &second, &upstream_label, expected);
    for (key, old) in &before {
        assert_eq!(
            back[key]["metadata"]["uid"], old["metadata"]["uid"],
            "{key} was recreated by upstream"
        );
    }
    for (namespace, name) in INSTANCES {
        assert_eq!(
            back[&format!("ConfigMap/{namespace}/{name}-settings")]["data"]["migrated"],
            "yes",
            "upstream keeps the update"
        );
    }
    phase(started, "children relabelled by upstream");
    wait_rgd_active(&kubectl, "shop");
    assert_all_active(&kubectl, "after going back");
    // Upstream serves the revision this controller issued: same high-water mark, no new one.
    assert_eq!(last_issued_revision(&kubectl, "shop"), changed);
    assert_eq!(
        graph_revisions(&kubectl),
        handed_back,
        "upstream issues no GraphRevision of its own for the spec ours issued"
    );
    no_errors_logged(
        &second,
        &format!("upstream {} after going back", upstream.version),
    );
    second.stop();
}

#[test]
fn from_upstream_v0_9_3_and_back() {
    migrate("0.9.3");
}

#[test]
fn from_upstream_v0_9_4_and_back() {
    migrate("0.9.4");
}

/// `kro dev` with its controllers switched off: the embedded API server and its simulated
/// cluster, for another controller to run against.
fn start_kro_dev_without_controllers(kubeconfig: &Path) -> Running {
    use std::io::{BufRead, BufReader};
    let log = kubeconfig.with_extension("log");
    let mut child = kro_test_support::child_command(env!("CARGO_BIN_EXE_kro"))
        .args(["dev", "--no-controllers", "--port", "0", "--kubeconfig-out"])
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kro dev starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let serving = lines.any(|line| line.is_ok_and(|line| line.contains("(controllers off)")));
    assert!(serving, "kro dev --no-controllers did not start");
    std::thread::spawn(move || for _ in lines {});
    Running { child, log }
}

#[test]
fn upstream_v0_9_3_runs_unmodified_on_kro_dev() {
    let Some(upstream) = upstream("0.9.3") else {
        return;
    };
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _server = start_kro_dev_without_controllers(&kubeconfig);
    let kubectl = Kubectl {
        kubeconfig: &kubeconfig,
        home: home.path(),
    };
    kubectl.run(&[
        "apply",
        "--server-side",
        "-f",
        upstream.crds.to_str().expect("a path"),
    ]);
    kubectl.run(&[
        "wait",
        "--for=condition=Established",
        "crd/resourcegraphdefinitions.kro.run",
        "crd/graphrevisions.internal.kro.run",
    ]);
    let controller = start_upstream(&upstream, &kubeconfig, home.path().join("upstream.log"));
    let example = upstream.module.join("examples/kubernetes/webapp");
    kubectl.apply_file(&example.join("rg.yaml"));
    wait_rgd_active(&kubectl, "webapp.kro.run");
    kubectl.apply_file(&example.join("instance.yaml"));
    eventually("upstream's webapp instance ACTIVE", || {
        (kubectl.run(&[
            "-n",
            "default",
            "get",
            "webapp",
            "test-app",
            "-o",
            "jsonpath={.status.state}",
        ]) == "ACTIVE")
            .then_some(())
    });
    let ready = kubectl.run(&["get", "rgd", "webapp.kro.run"]);
    assert!(
        ready.lines().nth(1).is_some_and(|row| row.contains("True")),
        "the READY column (a filter JSONPath) shows the Ready condition:\n{ready}"
    );
    no_errors_logged(&controller, "upstream 0.9.3 on kro dev");
    controller.stop();
}
