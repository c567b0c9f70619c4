//! `kro dev` with the real kubectl 1.33: an RGD and an instance applied with kubectl become
//! an API and running resources; `kubectl get <kind>` shows STATE ACTIVE; deleting the
//! instance removes every resource it created.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kro_test_support::{eventually, kubectl_succeeds, repository_root};

struct Dev {
    child: Child,
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_dev(kubeconfig: &Path) -> Dev {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["dev", "--port", "0", "--kubeconfig-out"])
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("kro dev starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        first.contains("controllers running"),
        "kro dev said: {first:?}"
    );
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Dev { child }
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
