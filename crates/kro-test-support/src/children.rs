//! Processes that do not outlive the test or bench that started them, even when it is killed
//! with SIGKILL and no destructor runs.
//!
//! A direct child is started through util-linux's `setpriv --pdeathsig SIGKILL`, which asks
//! the kernel to kill it when the thread that spawned it ends. The real control plane cannot be
//! held that way (`scripts/controlplane.sh start` starts etcd and kube-apiserver in sessions of
//! their own and exits): the start script gets SIGTERM instead, on which it stops what it
//! started, and once it is up a watchdog process waits for this process to end and then stops
//! it.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// A [`Command`] for `program` that the kernel kills (SIGKILL) when the thread that spawns it
/// ends: a test or bench killed with SIGKILL leaves no such child behind. Spawn it from a
/// thread that lives as long as the child should (a test's own thread, `main`, or a future
/// driven by `block_on` there), not from a pool thread that may exit when idle.
///
/// On Linux with util-linux's `setpriv` (the control plane needs util-linux already) the
/// command runs `setpriv --pdeathsig SIGKILL -- program`, which keeps its process id when it
/// execs the program (a thread that ends before setpriv has run, in its first milliseconds,
/// does not take the child with it); elsewhere it is a plain `Command::new(program)`.
///
/// ```
/// let output = kro_test_support::child_command("true").output().expect("true runs");
/// assert!(output.status.success());
/// ```
pub fn child_command(program: impl AsRef<OsStr>) -> Command {
    ended_with_thread(program, "SIGKILL")
}

/// A [`Command`] for `program` that gets SIGTERM when the thread that spawns it ends (as
/// [`child_command`] with SIGKILL): for a program that cleans up on SIGTERM, such as
/// `scripts/controlplane.sh start`, which then stops what it started.
pub(crate) fn terminated_with_thread(program: impl AsRef<OsStr>) -> Command {
    ended_with_thread(program, "SIGTERM")
}

fn ended_with_thread(program: impl AsRef<OsStr>, signal: &str) -> Command {
    if !has_setpriv() {
        return Command::new(program);
    }
    let mut command = Command::new("setpriv");
    command.args(["--pdeathsig", signal, "--"]).arg(program);
    command
}

/// Whether `setpriv --pdeathsig` works here (asked once).
fn has_setpriv() -> bool {
    static HAS_SETPRIV: OnceLock<bool> = OnceLock::new();
    *HAS_SETPRIV.get_or_init(|| {
        Command::new("setpriv")
            .args(["--pdeathsig", "SIGKILL", "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// What a watchdog reads on its stdin when the control plane is stopped by its owner.
const RELEASED: &str = "released";

/// A process that runs `scripts/controlplane.sh stop` for one control plane once this process
/// ends without having stopped it. It waits for the end of its stdin, whose only writer is this
/// process (Rust opens pipes close-on-exec, so no other child holds it), and runs in a process
/// group of its own, so the Ctrl-C that ends a test run does not end it first.
#[derive(Debug)]
pub(crate) struct Watchdog(Child);

impl Watchdog {
    /// Starts the watchdog of the control plane of `kubeconfig`, stopped with `script`; `None`
    /// when it cannot start (the control plane then outlives a killed test, as before).
    pub(crate) fn start(script: &Path, kubeconfig: &Path) -> Option<Watchdog> {
        let watch = format!(
            r#"read -r word; [ "$word" = {RELEASED} ] || exec bash "$0" stop "$1" >/dev/null 2>&1"#
        );
        Command::new("bash")
            .arg("-c")
            .arg(watch)
            .arg(script)
            .arg(kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map(Watchdog)
            .ok()
    }

    /// Tells the watchdog that the control plane is being stopped by its owner, and waits
    /// for it to exit.
    pub(crate) fn release(mut self) {
        if let Some(mut stdin) = self.0.stdin.take() {
            let _ = writeln!(stdin, "{RELEASED}");
        }
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    /// The child is the program itself (the same process id), with its arguments.
    #[test]
    fn a_child_command_runs_the_program_with_its_arguments() {
        let child = child_command("sh")
            .args(["-c", "echo $$ one"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh runs");
        let pid = child.id();
        let output = child.wait_with_output().expect("sh ends");
        assert!(output.status.success());
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("{pid} one\n")
        );
    }

    /// A child whose spawning thread ends is killed: what a SIGKILL of the whole process does
    /// to the children of every thread.
    #[test]
    fn a_child_dies_with_the_thread_that_spawned_it() {
        if !has_setpriv() {
            eprintln!("skipped: no setpriv --pdeathsig here");
            return;
        }
        let mut child = std::thread::spawn(|| {
            let child = child_command("sleep")
                .arg("600")
                .spawn()
                .expect("sleep starts");
            // setpriv asks for the signal before it execs the program: a thread that ended
            // before that would not be waited for.
            let comm = format!("/proc/{}/comm", child.id());
            while std::fs::read_to_string(&comm).is_ok_and(|name| name != "sleep\n") {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            child
        })
        .join()
        .expect("the spawning thread");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child's status") {
                break status;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "the child outlived the thread that spawned it"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.signal(), Some(9), "{status:?}");
    }

    /// A script standing in for `scripts/controlplane.sh` that records how it was called.
    fn recording_script(dir: &Path) -> std::path::PathBuf {
        let script = dir.join("controlplane.sh");
        std::fs::write(&script, "echo \"$@\" > \"$(dirname \"$0\")/called\"\n")
            .expect("the script");
        script
    }

    fn wait_for_exit(child: &mut Child) {
        let started = std::time::Instant::now();
        while child.try_wait().expect("the watchdog's status").is_none() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "the watchdog did not exit"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Its stdin ends without a word when this process dies (SIGKILL included): the watchdog
    /// stops the control plane.
    #[test]
    fn a_watchdog_whose_owner_is_gone_stops_the_control_plane() {
        let dir = std::env::temp_dir().join(format!("kro-watchdog-gone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let kubeconfig = dir.join("kubeconfig");
        let Watchdog(mut child) =
            Watchdog::start(&recording_script(&dir), &kubeconfig).expect("the watchdog starts");
        drop(child.stdin.take());
        wait_for_exit(&mut child);
        let called = std::fs::read_to_string(dir.join("called")).expect("the script was run");
        assert_eq!(called, format!("stop {}\n", kubeconfig.display()));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A control plane its owner stops is not stopped a second time.
    #[test]
    fn a_released_watchdog_exits_without_stopping_anything() {
        let dir = std::env::temp_dir().join(format!("kro-watchdog-kept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let watchdog = Watchdog::start(&recording_script(&dir), &dir.join("kubeconfig"))
            .expect("the watchdog starts");
        watchdog.release();
        assert!(!dir.join("called").exists(), "the script was run");
        let _ = std::fs::remove_dir_all(dir);
    }
}
