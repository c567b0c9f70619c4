//! Test support for kro's integration suites: the real Kubernetes control plane (kube-apiserver
//! and etcd built from Go modules by `scripts/controlplane.sh`, see `docs/testing.md`) that the
//! suites run beside the embedded API server, and finding kubectl.
//!
//! **Owns:** starting, reusing (`KRO_TEST_KUBECONFIG`) and stopping the real control plane;
//! finding kubectl; building the Go programs under `tools/` ([`build_go_tool`]); polling
//! helpers the suites share; hand-built protobuf bodies ([`protobuf_bodies`]); child processes
//! that die with the test ([`child_command`]); logs in the test's output
//! ([`log_to_test_output`]).
//!
//! **Must not:** be a dependency of anything but tests.

mod children;
mod go_tool;
mod kro_dev;
mod logs;
pub mod protobuf_bodies;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use children::child_command;
pub use go_tool::{answer_lines, build_go_tool, go_module_dir};
pub use kro_dev::KroDev;
pub use logs::log_to_test_output;

/// The environment variable naming the kubeconfig of an already running real control plane.
pub const KUBECONFIG_VARIABLE: &str = "KRO_TEST_KUBECONFIG";

/// Why test support could not provide what a suite asked for.
#[derive(Debug, thiserror::Error)]
pub enum SupportError {
    /// The control-plane script could not be run.
    #[error("cannot run {script}: {source}")]
    Spawn {
        /// The script's path.
        script: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The control-plane script failed.
    #[error("{script} {command} failed ({status}):\n{stderr}")]
    ScriptFailed {
        /// The script's path.
        script: PathBuf,
        /// The subcommand.
        command: &'static str,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The script succeeded but printed no kubeconfig path.
    #[error("{0} start printed no kubeconfig path")]
    NoKubeconfig(PathBuf),
}

/// The repository's root directory.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.yaml` and `.yml` file under `dir`, at any depth, sorted; unreadable directories are
/// passed over.
pub fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether a `go` toolchain is on the PATH (needed only to build the control plane).
pub fn go_available() -> bool {
    Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// For suites that build a Go program: whether Go is here. When it is not, the suite is
/// skipped with `reason` printed, except under `CI=true`, where that is a failure.
///
/// # Panics
/// Under CI when Go is missing.
pub fn go_or_skip(suite: &str, reason: &str) -> bool {
    if go_available() {
        return true;
    }
    assert!(
        !in_ci(),
        "{suite}: {reason}, and CI=true makes that a failure"
    );
    eprintln!("{suite}: skipped: {reason}");
    false
}

/// Whether the control-plane binaries are already built (then Go is not needed).
pub fn control_plane_built() -> bool {
    repository_root()
        .join("target/controlplane/bin/versions.stamp")
        .is_file()
}

/// Whether this run is under CI (`CI=true`), where a missing prerequisite is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

/// The newest kubectl found: `kubectl.1.33` from the Google Cloud SDK, else `kubectl`.
pub fn kubectl() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("/usr/lib/google-cloud-sdk/bin/kubectl.1.33"),
        PathBuf::from("/usr/bin/kubectl"),
        PathBuf::from("/usr/local/bin/kubectl"),
    ];
    candidates.into_iter().find(|path| path.is_file())
}

/// Where the Google Cloud SDK installs the kubectl of each minor release (`kubectl.1.27` …).
pub const KUBECTL_RELEASES_DIR: &str = "/usr/lib/google-cloud-sdk/bin";

/// The kubectl of one minor release, `kubectl.1.<minor>` from the Google Cloud SDK.
///
/// # Panics
/// When that release is not installed: a suite that names a kubectl version cannot run
/// without it, and says which one is missing.
pub fn kubectl_release(minor: u32) -> PathBuf {
    let path = Path::new(KUBECTL_RELEASES_DIR).join(format!("kubectl.1.{minor}"));
    assert!(
        path.is_file(),
        "kubectl 1.{minor} is not installed at {} (the Google Cloud SDK's kubectl.1.{minor}; \
         `gcloud components install kubectl` provides them)",
        path.display()
    );
    path
}

/// Runs `kubectl` (as found by [`kubectl`]) against `kubeconfig` with `HOME` set to `home`
/// (so no cache or config of the user leaks in), feeding `stdin` when given.
///
/// # Panics
/// When no kubectl is installed or it cannot be started: the suites using it cannot run.
pub fn run_kubectl(kubeconfig: &Path, home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let Some(kubectl) = kubectl() else {
        panic!(
            "kubectl is not installed (kubectl.1.33 from the Google Cloud SDK, or Debian's kubernetes-client)"
        );
    };
    run_kubectl_binary(&kubectl, kubeconfig, home, args, stdin)
}

/// Runs the given kubectl binary as [`run_kubectl`] does.
///
/// # Panics
/// When the binary cannot be started.
pub fn run_kubectl_binary(
    kubectl: &Path,
    kubeconfig: &Path,
    home: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Output {
    let mut child = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{}: {error}", kubectl.display()));
    if let Some(input) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        // kubectl may exit before reading everything; its output then says why.
        let _ = pipe.write_all(input.as_bytes());
    }
    child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{}: {error}", kubectl.display()))
}

/// Runs kubectl 1.`minor` as [`run_kubectl_binary`] does and returns its stdout.
///
/// # Panics
/// When that release is missing or the command fails (with kubectl's stderr).
pub fn kubectl_succeeds(minor: u32, kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    let output = run_kubectl_binary(&kubectl_release(minor), kubeconfig, home, args, None);
    assert!(
        output.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Calls `check` every 200 ms until it returns something, and returns that.
///
/// # Panics
/// When a minute passes first, naming `what` was awaited.
pub fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "not {what} after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A running real control plane; stopped on drop unless it was reused from
/// `KRO_TEST_KUBECONFIG`. One this process started is stopped too when the process is
/// killed (SIGKILL, no drop): a watchdog process waits for that.
#[derive(Debug)]
pub struct RealControlPlane {
    kubeconfig: PathBuf,
    owned: bool,
    watchdog: Option<children::Watchdog>,
}

impl RealControlPlane {
    /// Reuses the control plane named by `KRO_TEST_KUBECONFIG`, or starts a new one with
    /// `scripts/controlplane.sh start` (building it first if needed).
    ///
    /// # Errors
    /// [`SupportError`] when the script cannot run or fails.
    pub fn start() -> Result<Self, SupportError> {
        if let Some(kubeconfig) = std::env::var_os(KUBECONFIG_VARIABLE) {
            return Ok(RealControlPlane {
                kubeconfig: PathBuf::from(kubeconfig),
                owned: false,
                watchdog: None,
            });
        }
        Self::start_new(&[])
    }

    /// Starts a new control plane, never the one of `KRO_TEST_KUBECONFIG`: for suites that
    /// replace cluster-wide definitions other suites rely on.
    ///
    /// # Errors
    /// [`SupportError`] when the script cannot run or fails.
    pub fn start_private() -> Result<Self, SupportError> {
        Self::start_new(&[])
    }

    /// Starts a new control plane (never the one of `KRO_TEST_KUBECONFIG`) whose
    /// kube-apiserver writes an audit log of every request but its own at level Metadata
    /// (`KRO_CONTROLPLANE_AUDIT=1` of `scripts/controlplane.sh`); [`Self::audit_log`] is where.
    ///
    /// # Errors
    /// [`SupportError`] when the script cannot run or fails.
    pub fn start_audited() -> Result<Self, SupportError> {
        Self::start_new(&[("KRO_CONTROLPLANE_AUDIT", "1")])
    }

    fn start_new(envs: &[(&str, &str)]) -> Result<Self, SupportError> {
        let output = run_script_with("start", &[], envs)?;
        let stdout = String::from_utf8_lossy(&output);
        let script = script_path();
        let kubeconfig = stdout
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .map(|line| PathBuf::from(line.trim()))
            .ok_or_else(|| SupportError::NoKubeconfig(script.clone()))?;
        let watchdog = children::Watchdog::start(&script, &kubeconfig);
        Ok(RealControlPlane {
            kubeconfig,
            owned: true,
            watchdog,
        })
    }

    /// The kubeconfig that reaches it.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Its kube-apiserver's audit log (JSON lines), when it was started with one
    /// ([`Self::start_audited`]).
    pub fn audit_log(&self) -> Option<PathBuf> {
        let log = self.kubeconfig.parent()?.join("audit.log");
        let policy = self.kubeconfig.parent()?.join("audit-policy.yaml");
        policy.exists().then_some(log)
    }

    /// Kills its kube-apiserver with SIGKILL, waits `down`, and starts it again on the same
    /// address (etcd keeps running); returns once it is ready.
    ///
    /// # Errors
    /// [`SupportError`] when the script fails (the control plane was not started by this
    /// checkout's script, or kube-apiserver does not come back).
    pub fn restart_apiserver(&self, down: std::time::Duration) -> Result<(), SupportError> {
        let kubeconfig = self.kubeconfig.to_string_lossy().into_owned();
        let down = format!("{:.3}", down.as_secs_f64());
        run_script("restart-apiserver", &[&kubeconfig, &down]).map(|_| ())
    }

    /// Stops it now (when owned), reporting failure instead of ignoring it as drop must.
    ///
    /// # Errors
    /// [`SupportError`] when the stop script fails.
    pub fn stop(mut self) -> Result<(), SupportError> {
        let result = self.stop_owned();
        self.owned = false;
        result
    }

    fn stop_owned(&mut self) -> Result<(), SupportError> {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.release();
        }
        if !self.owned {
            return Ok(());
        }
        let kubeconfig = self.kubeconfig.to_string_lossy().into_owned();
        run_script("stop", &[&kubeconfig]).map(|_| ())
    }
}

impl Drop for RealControlPlane {
    fn drop(&mut self) {
        if let Err(error) = self.stop_owned() {
            eprintln!("kro-test-support: stopping the control plane failed: {error}");
        }
    }
}

fn script_path() -> PathBuf {
    repository_root().join("scripts/controlplane.sh")
}

fn run_script(command: &'static str, args: &[&str]) -> Result<Vec<u8>, SupportError> {
    run_script_with(command, args, &[])
}

fn run_script_with(
    command: &'static str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Result<Vec<u8>, SupportError> {
    let script = script_path();
    // A start interrupted by the end of this process undoes itself (the script stops what it
    // started on SIGTERM); a stop or a restart carries on.
    let mut bash = if command == "start" {
        children::terminated_with_thread("bash")
    } else {
        Command::new("bash")
    };
    let output = bash
        .arg(&script)
        .arg(command)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .map_err(|source| SupportError::Spawn {
            script: script.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(SupportError::ScriptFailed {
            script,
            command,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output.stdout)
}

/// For suites that need the real control plane: `Some` when it can run here. When it cannot
/// (no Go and no built binaries) the suite is skipped with a printed reason, except under
/// `CI=true`, where that is a failure.
///
/// # Panics
/// Under CI when the control plane cannot be built, or when starting it fails.
pub fn real_control_plane_or_skip(suite: &str) -> Option<RealControlPlane> {
    let reusable = std::env::var_os(KUBECONFIG_VARIABLE).is_some();
    if !reusable && !can_build_control_plane(suite) {
        return None;
    }
    match RealControlPlane::start() {
        Ok(control_plane) => Some(control_plane),
        Err(error) => panic!("{suite}: the real control plane did not start: {error}"),
    }
}

/// As [`real_control_plane_or_skip`], but always a control plane of the suite's own
/// ([`RealControlPlane::start_private`]), even when `KRO_TEST_KUBECONFIG` names one.
///
/// # Panics
/// Under CI when the control plane cannot be built, or when starting it fails.
pub fn private_control_plane_or_skip(suite: &str) -> Option<RealControlPlane> {
    if !can_build_control_plane(suite) {
        return None;
    }
    match RealControlPlane::start_private() {
        Ok(control_plane) => Some(control_plane),
        Err(error) => panic!("{suite}: the real control plane did not start: {error}"),
    }
}

/// Whether a control plane can be started here; prints why not (a failure under CI).
fn can_build_control_plane(suite: &str) -> bool {
    if control_plane_built() || go_available() {
        return true;
    }
    let reason = "the real control plane needs Go to build (scripts/controlplane.sh build)";
    assert!(
        !in_ci(),
        "{suite}: {reason}, and CI=true makes that a failure"
    );
    eprintln!("{suite}: skipped: {reason}");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_root_holds_the_control_plane_script() {
        assert!(script_path().is_file(), "{}", script_path().display());
    }

    /// The versus bench counts a controller's requests on kube-apiserver from this log.
    #[test]
    fn an_audited_control_plane_logs_each_request_with_its_user_agent() {
        if !control_plane_built() && !go_available() {
            assert!(!in_ci(), "the control plane needs Go to build, and CI=true");
            eprintln!("skipped: the control plane needs Go to build");
            return;
        }
        let control_plane = RealControlPlane::start_audited().expect("an audited control plane");
        let log = control_plane.audit_log().expect("an audit log");
        let home = tempfile_dir();
        let output = run_kubectl(
            control_plane.kubeconfig(),
            &home,
            &["get", "configmaps", "-n", "kube-system"],
            None,
        );
        assert!(output.status.success(), "{output:?}");
        let probes = eventually("the request in the audit log", || {
            let text = std::fs::read_to_string(&log).ok()?;
            let lines: Vec<&str> = text
                .lines()
                .filter(|line| {
                    line.contains("\"userAgent\":\"kubectl")
                        && line.contains("\"resource\":\"configmaps\"")
                })
                .collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        });
        assert!(
            probes.contains("\"verb\":\"list\"") && probes.contains("\"resource\":\"configmaps\""),
            "{probes}"
        );
        assert!(
            !std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("\"username\":\"system:apiserver\""),
            "kube-apiserver's own requests are left out"
        );
        control_plane.stop().expect("the control plane stops");
        let _ = std::fs::remove_dir_all(home);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kro-audit-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary HOME");
        dir
    }
}
