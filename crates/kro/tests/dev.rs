//! `kro dev` with the real kubectl 1.33: an RGD and an instance applied with kubectl become
//! an API and running resources; `kubectl get <kind>` shows STATE ACTIVE; deleting the
//! instance removes every resource it created. And the first commands anyone types, with
//! kubectl 1.27 and 1.33 and no flags (issue #25).

use std::path::{Path, PathBuf};
use std::process::Command;

use kro_test_support::{KroDev, eventually, kubectl_succeeds, repository_root};

fn start_dev(kubeconfig: &Path) -> KroDev {
    KroDev::start(Path::new(env!("CARGO_BIN_EXE_kro")), kubeconfig, &[])
}

fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    kubectl_succeeds(33, kubeconfig, home, args)
}

#[test]
fn kubectl_applies_an_rgd_and_an_instance_to_kro_dev_and_deletes_it_completely() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig: PathBuf = home.path().join("kubeconfig");
    let _dev = start_dev(&kubeconfig);
    let example = repository_root().join("examples/webapp");
    let rgd = example.join("rgd.yaml");
    let instance = example.join("instance.yaml");
    let (rgd, instance) = (
        rgd.to_str().expect("a path"),
        instance.to_str().expect("a path"),
    );
    kubectl(&kubeconfig, home.path(), &["apply", "-f", rgd]);
    eventually("Active", || {
        let table = kubectl(&kubeconfig, home.path(), &["get", "rgd", "webapp"]);
        table.contains("Active").then_some(table)
    });
    kubectl(&kubeconfig, home.path(), &["apply", "-f", instance]);
    let table = eventually("ACTIVE", || {
        let table = kubectl(&kubeconfig, home.path(), &["get", "webapp", "shop"]);
        table.contains("ACTIVE").then_some(table)
    });
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("STATE"), "{table}");
    let resources = kubectl(
        &kubeconfig,
        home.path(),
        &[
            "get",
            "deployments,services,ingresses",
            "-l",
            "kro.run/instance-name=shop",
            "-o",
            "name",
        ],
    );
    let mut names: Vec<&str> = resources.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "deployment.apps/shop",
            "ingress.networking.k8s.io/shop",
            "service/shop"
        ]
    );

    kubectl(
        &kubeconfig,
        home.path(),
        &["delete", "-f", instance, "--wait=true"],
    );
    eventually("emptied", || {
        let left = kubectl(
            &kubeconfig,
            home.path(),
            &[
                "get",
                "deployments,services,ingresses,replicasets,pods",
                "-l",
                "kro.run/instance-name=shop",
                "-o",
                "name",
            ],
        );
        let pods = kubectl(
            &kubeconfig,
            home.path(),
            &[
                "get",
                "pods",
                "-l",
                "app.kubernetes.io/name=shop",
                "-o",
                "name",
            ],
        );
        (left.trim().is_empty() && pods.trim().is_empty()).then_some(left)
    });
}

#[test]
fn the_demo_runs_an_example_to_active_and_exits_with_once() {
    let dir = tempfile::tempdir().expect("a directory");
    let output = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["dev", "--port", "0", "--once", "--demo"])
        .arg(repository_root().join("examples/stack"))
        .current_dir(dir.path())
        .output()
        .expect("kro dev runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("is ACTIVE after"), "{stdout}");
    assert!(stdout.contains("state: ACTIVE"), "{stdout}");
    assert!(
        dir.path().join("kro-dev.kubeconfig").is_file(),
        "the kubeconfig is written where it said"
    );
}

/// Phase 1 of horizontal scaling with the real kubectl: `kubectl scale` on an instance of an
/// RGD with `| scale` markers changes its spec, the Deployment follows, and
/// `kubectl get --subresource=scale` shows spec and status converge with the
/// `| scaleSelector` selector; the HorizontalPodAutoscaler of the example then keeps the
/// instance within its minimum and maximum.
#[test]
fn kubectl_scales_an_instance_and_an_autoscaler_keeps_it_in_range() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig: PathBuf = home.path().join("kubeconfig");
    let _dev = start_dev(&kubeconfig);
    let example = repository_root().join("examples/scalable-web");
    let file = |name: &str| example.join(name).to_str().expect("a path").to_owned();
    let kubectl = |args: &[&str]| kubectl(&kubeconfig, home.path(), args);
    kubectl(&["apply", "-f", &file("rgd.yaml")]);
    eventually("Active", || {
        let table = kubectl(&["get", "rgd", "scalable-web"]);
        table.contains("Active").then_some(table)
    });
    kubectl(&["apply", "-f", &file("instance.yaml")]);
    eventually("ACTIVE", || {
        let table = kubectl(&["get", "scalableweb", "shop"]);
        table.contains("ACTIVE").then_some(table)
    });

    let scaled = kubectl(&["scale", "scalableweb/shop", "--replicas=4"]);
    assert!(scaled.contains("scaled"), "{scaled}");
    let scale = eventually("spec and status at 4", || {
        let scale = kubectl(&[
            "get",
            "scalableweb",
            "shop",
            "--subresource=scale",
            "-o",
            "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}",
        ]);
        (scale == "4 4 app.kubernetes.io/name=shop").then_some(scale)
    });
    assert_eq!(scale, "4 4 app.kubernetes.io/name=shop");
    let replicas = kubectl(&[
        "get",
        "deployment",
        "shop",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(replicas, "4");

    // Below the autoscaler's minimum of 3: it raises the instance to 3.
    kubectl(&["scale", "scalableweb/shop", "--replicas=1"]);
    kubectl(&["apply", "-f", &file("autoscaler.yaml")]);
    eventually("raised to the autoscaler's minimum", || {
        let scale = kubectl(&[
            "get",
            "scalableweb",
            "shop",
            "--subresource=scale",
            "-o",
            "jsonpath={.spec.replicas} {.status.replicas}",
        ]);
        (scale == "3 3").then_some(scale)
    });
    let available = kubectl(&[
        "get",
        "scalableweb",
        "shop",
        "-o",
        "jsonpath={.status.availableReplicas}",
    ]);
    assert_eq!(available, "3");
}

/// Phase 2 with the real kubectl on `kro dev`: the example SiteSet runs three Sites, `kubectl
/// scale siteset/team` grows it, a template change reaches every Site, and deleting the Set
/// deletes its Sites and what they made.
#[test]
fn kubectl_runs_scales_updates_and_deletes_a_set() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig: PathBuf = home.path().join("kubeconfig");
    let _dev = start_dev(&kubeconfig);
    let example = repository_root().join("examples/site-set");
    let file = |name: &str| example.join(name).to_str().expect("a path").to_owned();
    let kubectl = |args: &[&str]| kubectl(&kubeconfig, home.path(), args);
    kubectl(&["apply", "-f", &file("rgd.yaml")]);
    eventually("Active", || {
        let table = kubectl(&["get", "rgd", "site"]);
        table.contains("Active").then_some(table)
    });
    kubectl(&["apply", "-f", &file("set.yaml")]);
    let counts = "jsonpath={.spec.replicas} {.status.replicas} {.status.readyReplicas} {.status.updatedReplicas}";
    eventually("3 Sites ready", || {
        let status = kubectl(&["get", "siteset", "team", "-o", counts]);
        (status == "3 3 3 3").then_some(status)
    });
    let table = kubectl(&["get", "siteset", "team"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["DESIRED", "READY", "UPDATED", "AGE"] {
        assert!(header.contains(column), "{table}");
    }

    let scaled = kubectl(&["scale", "siteset/team", "--replicas=5"]);
    assert!(scaled.contains("scaled"), "{scaled}");
    eventually("5 Sites ready", || {
        let status = kubectl(&["get", "siteset", "team", "-o", counts]);
        (status == "5 5 5 5").then_some(status)
    });

    kubectl(&[
        "patch",
        "siteset",
        "team",
        "--type=merge",
        "-p",
        r#"{"spec":{"template":{"spec":{"version":"1.28"}}}}"#,
    ]);
    eventually("every Site on nginx:1.28", || {
        let images = kubectl(&[
            "get",
            "deployments",
            "-l",
            "kro.run/instance-kind=Site",
            "-o",
            "jsonpath={.items[*].spec.template.spec.containers[0].image}",
        ]);
        let status = kubectl(&["get", "siteset", "team", "-o", counts]);
        (images
            .split_whitespace()
            .filter(|image| *image == "nginx:1.28")
            .count()
            == 5
            && status == "5 5 5 5")
            .then_some(images)
    });

    kubectl(&["delete", "siteset", "team", "--wait=true"]);
    eventually("Sites and their objects gone", || {
        let left = kubectl(&[
            "get",
            "sites,deployments,services",
            "-l",
            "kro.run/set-name=team",
            "-o",
            "name",
        ]);
        let made = kubectl(&[
            "get",
            "deployments,services",
            "-l",
            "kro.run/instance-kind=Site",
            "-o",
            "name",
        ]);
        (left.trim().is_empty() && made.trim().is_empty()).then_some(left)
    });
}

/// A fresh HOME, a `kro dev` and one kubectl release, run as a new user runs them: no flags.
struct Session {
    _dev: KroDev,
    home: tempfile::TempDir,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
}

impl Session {
    fn start(minor: u32) -> Session {
        let home = tempfile::tempdir().expect("a HOME");
        let kubeconfig = home.path().join("kubeconfig");
        let dev = start_dev(&kubeconfig);
        Session {
            _dev: dev,
            kubeconfig,
            kubectl: kro_test_support::kubectl_release(minor),
            home,
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    /// kubectl's stdout, with `KUBE_EDITOR` set when `editor` is given.
    fn run(&self, args: &[&str], editor: Option<&Path>) -> String {
        let mut command = Command::new(&self.kubectl);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("HOME", self.home());
        if let Some(editor) = editor {
            command.env("KUBE_EDITOR", editor);
        }
        let output = command.output().expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    fn ok(&self, args: &[&str]) -> String {
        self.run(args, None)
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl prints JSON")
    }

    fn image(&self) -> String {
        self.ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
    }

    fn rolled_out(&self) {
        let status = self.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
        assert!(status.contains("successfully rolled out"), "{status}");
    }
}

/// The first commands anyone types (issue #25): kubectl sends built-in objects as protobuf and
/// does not fall back to JSON, and each answers as against kube-apiserver.
fn first_commands_succeed(minor: u32) {
    let session = Session::start(minor);
    assert_eq!(
        session.ok(&["create", "namespace", "foo"]),
        "namespace/foo created\n"
    );
    assert_eq!(
        session.ok(&[
            "create",
            "configmap",
            "x",
            "--from-literal=a=b",
            "-n",
            "foo"
        ]),
        "configmap/x created\n"
    );
    assert_eq!(
        session.json(&["get", "configmap", "x", "-n", "foo"])["data"],
        serde_json::json!({"a": "b"})
    );
    assert_eq!(
        session.ok(&[
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=password=hunter2"
        ]),
        "secret/s created\n"
    );
    assert_eq!(
        session.json(&["get", "secret", "s"])["data"]["password"],
        "aHVudGVyMg=="
    );
    assert_eq!(
        session.ok(&["create", "deployment", "web", "--image=nginx"]),
        "deployment.apps/web created\n"
    );
    let deployment = session.json(&["get", "deployment", "web"]);
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(session.image(), "nginx");
    session.rolled_out();
    assert_eq!(
        session.ok(&["create", "service", "clusterip", "db", "--tcp=5432:5432"]),
        "service/db created\n"
    );
    assert_eq!(
        session.ok(&["create", "job", "once", "--image=busybox"]),
        "job.batch/once created\n"
    );
    assert_eq!(
        session.ok(&[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *"
        ]),
        "cronjob.batch/tick created\n"
    );
    assert_eq!(
        session.ok(&["run", "shell", "--image=busybox"]),
        "pod/shell created\n"
    );
    assert_eq!(
        session.ok(&["expose", "deployment", "web", "--port=80"]),
        "service/web exposed\n"
    );
    assert_eq!(
        session.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]),
        "deployment.apps/web image updated\n"
    );
    session.rolled_out();
    assert_eq!(
        session.ok(&["rollout", "restart", "deployment/web"]),
        "deployment.apps/web restarted\n"
    );
    session.rolled_out();
    let history = session.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .skip_while(|line| !line.starts_with("REVISION"))
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(revisions, ["1", "2", "3"], "{history}");
    // Back to revision 2: the image stays, the restart's annotation goes.
    assert_eq!(
        session.ok(&["rollout", "undo", "deployment/web"]),
        "deployment.apps/web rolled back\n"
    );
    session.rolled_out();
    let template = session.json(&["get", "deployment", "web"])["spec"]["template"].clone();
    assert_eq!(template["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(
        template
            .pointer("/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
            .is_none(),
        "{template}"
    );
    assert_eq!(
        session.ok(&["rollout", "undo", "deployment/web", "--to-revision=1"]),
        "deployment.apps/web rolled back\n"
    );
    session.rolled_out();
    assert_eq!(session.image(), "nginx");
    assert_eq!(
        session.ok(&["label", "configmap", "x", "-n", "foo", "tier=gold"]),
        "configmap/x labeled\n"
    );
    // kubectl 1.27 says "annotate", later releases "annotated".
    assert!(
        session
            .ok(&["annotate", "configmap", "x", "-n", "foo", "note=hi"])
            .starts_with("configmap/x annotate")
    );
    let config_map = session.json(&["get", "configmap", "x", "-n", "foo"]);
    assert_eq!(config_map["metadata"]["labels"]["tier"], "gold");
    assert_eq!(config_map["metadata"]["annotations"]["note"], "hi");
    // `kubectl edit` with an editor that changes one value, as a person would.
    let editor = session.home().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/^  a: b$/  a: edited/' \"$1\"\n",
    )
    .expect("write the editor");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("make the editor executable");
    assert_eq!(
        session.run(&["edit", "configmap", "x", "-n", "foo"], Some(&editor)),
        "configmap/x edited\n"
    );
    assert_eq!(
        session.json(&["get", "configmap", "x", "-n", "foo"])["data"]["a"],
        "edited"
    );
    // The simulated deployment controller's events, through both commands.
    for command in [&["get", "events"][..], &["events"][..]] {
        let listed = session.ok(command);
        let header: Vec<&str> = listed
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "kubectl {command:?}:\n{listed}"
        );
        assert!(
            listed
                .lines()
                // `get events` prints `deployment/web`, `events` `Deployment/web`.
                .any(|line| line.contains("ScalingReplicaSet")
                    && line.to_lowercase().contains("deployment/web")),
            "kubectl {command:?}:\n{listed}"
        );
    }
    assert_eq!(
        session.ok(&["delete", "configmap", "x", "-n", "foo"]),
        "configmap \"x\" deleted\n"
    );
}

#[test]
fn the_first_commands_succeed_with_kubectl_1_27() {
    first_commands_succeed(27);
}

#[test]
fn the_first_commands_succeed_with_kubectl_1_33() {
    first_commands_succeed(33);
}
