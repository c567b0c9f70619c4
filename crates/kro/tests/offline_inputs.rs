//! Hostile inputs to the offline commands: directory walks with symbolic link loops and special
//! files, instance names that are not Kubernetes names, many RGDs using each other's kinds.
//! Each test ran forever or was accepted before the fix it guards.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs kro, killing it after `limit`: a walk that loops or blocks must fail the test, not hang it.
fn kro_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kro binary built by cargo runs");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("waiting for kro").is_some() {
            return child.wait_with_output().expect("kro's output");
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("kro's output");
            panic!(
                "kro {args:?} still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kro(args: &[&str]) -> Output {
    kro_within(args, Duration::from_secs(120))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("kro writes UTF-8")
}

fn rgd(name: &str, kind: &str, resources: &str) -> String {
    format!(
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: {name}
spec:
  schema:
    apiVersion: v1
    group: example.org
    kind: {kind}
    spec:
      name: string
  resources: {resources}
"
    )
}

const CONFIG_MAP: &str = "
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.spec.name}
        data:
          name: ${schema.spec.name}
";

const DEPLOYMENT: &str = "
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.spec.name}
        spec:
          selector:
            matchLabels: {app: \"${schema.spec.name}\"}
          template:
            metadata:
              labels: {app: \"${schema.spec.name}\"}
            spec:
              containers:
                - name: app
                  image: nginx
";

fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn a_symbolic_link_loop_is_reported_and_read_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let inner = dir.path().join("inner");
    std::fs::create_dir(&inner).expect("writable");
    std::fs::write(inner.join("app.yaml"), rgd("app", "App", CONFIG_MAP)).expect("writable");
    std::os::unix::fs::symlink(dir.path(), inner.join("back-to-top")).expect("a symlink");
    let output = kro_within(
        &["validate", "-R", "-f", &arg(dir.path())],
        Duration::from_secs(60),
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout).lines().count(), 1, "read once");
    assert!(
        stderr.contains(&format!(
            "{}: warning: skipped: a directory already read",
            arg(&inner.join("back-to-top"))
        )),
        "{stderr}"
    );
}

#[test]
fn a_fifo_in_an_input_directory_is_reported_and_never_opened() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("app.yaml"), rgd("app", "App", CONFIG_MAP)).expect("writable");
    let fifo = dir.path().join("pipe.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let output = kro_within(
        &["validate", "-f", &arg(dir.path())],
        Duration::from_secs(60),
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: warning: skipped: not a regular file",
            arg(&fifo)
        )),
        "{stderr}"
    );
}

#[test]
fn a_dangling_symbolic_link_is_reported_and_skipped() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("app.yaml"), rgd("app", "App", CONFIG_MAP)).expect("writable");
    let link = dir.path().join("gone.yaml");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &link).expect("a symlink");
    let output = kro(&["validate", "-f", &arg(dir.path())]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: warning: skipped: a symbolic link to nothing",
            arg(&link)
        )),
        "{stderr}"
    );
}

#[test]
fn render_refuses_an_instance_name_that_is_not_a_kubernetes_name() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let rgd_file = dir.path().join("app.yaml");
    std::fs::write(&rgd_file, rgd("app", "App", CONFIG_MAP)).expect("writable");
    for (metadata, field) in [
        ("name: ../../etc/passwd", "metadata.name"),
        ("name: Web_App", "metadata.name"),
        ("{name: web, namespace: ../x}", "metadata.namespace"),
    ] {
        let instance = dir.path().join("instance.yaml");
        let metadata = if metadata.starts_with('{') {
            format!("metadata: {metadata}")
        } else {
            format!("metadata:\n  {metadata}")
        };
        std::fs::write(
            &instance,
            format!("apiVersion: example.org/v1\nkind: App\n{metadata}\nspec:\n  name: web\n"),
        )
        .expect("writable");
        let output = kro(&["render", "-f", &arg(&rgd_file), "-i", &arg(&instance)]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{metadata}: {stderr}");
        assert_eq!(text(&output.stdout), "", "nothing is rendered");
        assert!(
            stderr.starts_with(&format!("{}: {field}: Invalid value: ", arg(&instance))),
            "{stderr}"
        );
    }
}

/// Peak resident set of a running process (VmHWM), 0 where /proc does not say.
fn peak_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// RGD `i` creates an object of the kind RGD `i - 1` defines. Each resolves the kind the other
/// defines (no "no schema" warning), each is reported once, and the process stays small: 300
/// such RGDs held 860 MiB (now 50 MiB) when each was rebuilt with the CRDs of all the others and every
/// graph was kept to the end.
#[test]
fn rgds_using_each_others_kinds_validate_together_in_little_memory() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let count = 300;
    for i in 0..count {
        let resources = if i == 0 {
            CONFIG_MAP.to_owned()
        } else {
            format!(
                "
    - id: previous
      template:
        apiVersion: example.org/v1
        kind: K{}
        metadata:
          name: ${{schema.spec.name}}
        spec:
          name: ${{schema.spec.name}}
",
                i - 1
            )
        };
        std::fs::write(
            dir.path().join(format!("k{i:03}.yaml")),
            rgd(
                &format!("k{i}"),
                &format!("K{i}"),
                &(resources + DEPLOYMENT),
            ),
        )
        .expect("writable");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["validate", "-f", &arg(dir.path())])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kro binary built by cargo runs");
    // Drain the pipes on threads so that kro never blocks on a full pipe while it is sampled.
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).expect("kro writes UTF-8");
            text
        })
    };
    let (stdout, stderr) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let mut peak = 0;
    let status = loop {
        peak = peak.max(peak_bytes(child.id()));
        if let Some(status) = child.try_wait().expect("waiting for kro") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (
        stdout.join().expect("reading stdout"),
        stderr.join().expect("reading stderr"),
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stderr, "", "every kind is known");
    assert_eq!(stdout.lines().count(), count);
    assert!(
        peak < 256 * 1024 * 1024,
        "validating {count} RGDs peaked at {} MiB",
        peak / (1024 * 1024)
    );
}
