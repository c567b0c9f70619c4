//! The imperative kubectl commands, which send built-in objects as protobuf
//! (`Content-Type: application/vnd.kubernetes.protobuf`) without a JSON fallback (issue #25),
//! with no flags, against the embedded server: kubectl 1.27 and 1.33, a fresh HOME each.

use std::path::PathBuf;
use std::process::Output;

use kro_apiserver::{RunningServer, ServerConfig, start_in_background};
use kro_test_support::{kubectl_release, run_kubectl_binary};
use serde_json::Value;

struct Sandbox {
    _server: RunningServer,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    home: PathBuf,
    kubectl: PathBuf,
}

impl Sandbox {
    fn start(minor: u32) -> Sandbox {
        let kubectl = kubectl_release(minor);
        let server = start_in_background(ServerConfig::default()).expect("the server starts");
        let dir = tempfile::tempdir().expect("temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, server.kubeconfig()).expect("write kubeconfig");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        Sandbox {
            _server: server,
            _dir: dir,
            kubeconfig,
            home,
            kubectl,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        run_kubectl_binary(&self.kubectl, &self.kubeconfig, &self.home, args, None)
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl prints JSON")
    }
}

fn imperative_commands_succeed(minor: u32) {
    let sandbox = Sandbox::start(minor);
    assert_eq!(
        sandbox.ok(&["create", "namespace", "foo"]),
        "namespace/foo created\n"
    );
    assert_eq!(
        sandbox.ok(&[
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
        sandbox.json(&["get", "configmap", "x", "-n", "foo"])["data"],
        serde_json::json!({"a": "b"})
    );
    assert_eq!(
        sandbox.ok(&[
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=password=hunter2"
        ]),
        "secret/s created\n"
    );
    assert_eq!(
        sandbox.json(&["get", "secret", "s"])["data"]["password"],
        "aHVudGVyMg=="
    );
    assert_eq!(
        sandbox.ok(&["create", "deployment", "web", "--image=nginx"]),
        "deployment.apps/web created\n"
    );
    let deployment = sandbox.json(&["get", "deployment", "web"]);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        sandbox.ok(&["create", "service", "clusterip", "db", "--tcp=5432:5432"]),
        "service/db created\n"
    );
    assert_eq!(
        sandbox.ok(&["create", "job", "once", "--image=busybox"]),
        "job.batch/once created\n"
    );
    assert_eq!(
        sandbox.ok(&[
            "create",
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *"
        ]),
        "cronjob.batch/tick created\n"
    );
    assert_eq!(
        sandbox.ok(&["run", "shell", "--image=busybox"]),
        "pod/shell created\n"
    );
    assert_eq!(
        sandbox.ok(&["expose", "deployment", "web", "--port=80"]),
        "service/web exposed\n"
    );
    assert_eq!(
        sandbox.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]),
        "deployment.apps/web image updated\n"
    );
    assert_eq!(
        sandbox.ok(&["rollout", "restart", "deployment/web"]),
        "deployment.apps/web restarted\n"
    );
    assert_eq!(
        sandbox.ok(&["label", "configmap", "x", "-n", "foo", "tier=gold"]),
        "configmap/x labeled\n"
    );
    // kubectl 1.27 says "annotate", later releases "annotated".
    assert!(
        sandbox
            .ok(&["annotate", "configmap", "x", "-n", "foo", "note=hi"])
            .starts_with("configmap/x annotate")
    );
    let config_map = sandbox.json(&["get", "configmap", "x", "-n", "foo"]);
    assert_eq!(config_map["metadata"]["labels"]["tier"], "gold");
    assert_eq!(config_map["metadata"]["annotations"]["note"], "hi");
    assert_eq!(
        sandbox.ok(&["delete", "configmap", "x", "-n", "foo"]),
        "configmap \"x\" deleted\n"
    );
}

#[test]
fn imperative_commands_succeed_with_kubectl_1_27() {
    imperative_commands_succeed(27);
}

#[test]
fn imperative_commands_succeed_with_kubectl_1_33() {
    imperative_commands_succeed(33);
}
