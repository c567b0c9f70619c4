//! Go programs the tests build from a module under `tools/` (flect, Helm), as the control
//! plane is built: `go build` with the module's pinned `go.sum`, and the binary kept under the
//! cargo target directory until the module's files change. Every Go build of the repository
//! shares one module cache and one build cache, the control plane's (`target/controlplane/`):
//! the modules several programs need (Kubernetes' `k8s.io/api` at the control plane's version,
//! the standard library) are downloaded and compiled once, and `scripts/go-tools.sh` can fill
//! the build cache ahead of the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::repository_root;

/// Builds `package` (`.` or an import path the module requires) of the module
/// `tools/<module>` into `out` (a directory under the cargo target directory), unless a binary
/// built from the same module files is there, and returns its path.
///
/// # Panics
/// When the module's files cannot be read or `go build` fails (the message says why, and that
/// a cold build needs the Go module proxy).
pub fn build_go_tool(module: &str, package: &str, out: &Path) -> PathBuf {
    let directory = repository_root().join("tools").join(module);
    let mut inputs = format!("{package}\n").into_bytes();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", directory.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension().is_some_and(|extension| extension == "go")
                || path
                    .file_name()
                    .is_some_and(|name| name == "go.mod" || name == "go.sum")
        })
        .collect();
    files.sort();
    for path in &files {
        let bytes = std::fs::read(path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        inputs.extend_from_slice(&bytes);
    }
    let binary = out.join(format!("bin/{module}-{:016x}", fnv1a(&inputs)));
    if binary.is_file() {
        return binary;
    }
    let bin = binary.parent().unwrap_or(out);
    std::fs::create_dir_all(bin)
        .unwrap_or_else(|error| panic!("cannot create {}: {error}", bin.display()));
    // Tests of one process may build the same tool at once: each builds into a file of its own.
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let partial = binary.with_extension(format!("{}-{thread}.tmp", std::process::id()));
    let output = go_command(&directory, out)
        // Without the symbol table and DWARF the link takes a fraction of the time; panics
        // still name their functions.
        .args(["build", "-ldflags=-s -w", "-o"])
        .arg(&partial)
        .arg(package)
        .output()
        .unwrap_or_else(|error| panic!("go build cannot run: {error}"));
    assert!(
        output.status.success(),
        "go build {package} in {} failed ({}); the Go module proxy must be reachable on a cold build:\n{}",
        directory.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    if let Err(error) = std::fs::rename(&partial, &binary) {
        assert!(
            binary.is_file(),
            "cannot move the built binary into place: {error}"
        );
    }
    binary
}

/// The directory of the module `path` (a module `tools/<module>` requires) in the module cache
/// that [`build_go_tool`] fills, downloading it if needed: where a test reads files a
/// module ships beside its code (upstream kro's CRDs, its examples).
///
/// # Panics
/// When `go list` cannot run or fails (the message says why).
pub fn go_module_dir(module: &str, path: &str, out: &Path) -> PathBuf {
    let directory = repository_root().join("tools").join(module);
    let output = go_command(&directory, out)
        .args(["list", "-m", "-f", "{{.Dir}}", path])
        .output()
        .unwrap_or_else(|error| panic!("go list cannot run: {error}"));
    assert!(
        output.status.success(),
        "go list -m {path} in {} failed ({}); the Go module proxy must be reachable on a cold run:\n{}",
        directory.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(
        !dir.is_empty(),
        "go list -m {path} named no directory (is it downloaded?)"
    );
    PathBuf::from(dir)
}

/// `go` run in `directory` with the repository's module and build caches (those
/// `scripts/controlplane.sh` uses), with telemetry counters under `out`.
fn go_command(directory: &Path, out: &Path) -> Command {
    let caches = repository_root().join("target/controlplane");
    // The user's Go settings (GOPROXY and so on) still apply, although XDG_CONFIG_HOME (where
    // the Go tool keeps telemetry counters) moves under the target directory.
    let goenv = std::env::var_os("GOENV").unwrap_or_else(|| {
        let output = Command::new("go")
            .args(["env", "GOENV"])
            .output()
            .unwrap_or_else(|error| panic!("go env cannot run: {error}"));
        String::from_utf8_lossy(&output.stdout).trim().into()
    });
    let mut command = Command::new("go");
    command
        .current_dir(directory)
        .env("GOENV", goenv)
        .env("XDG_CONFIG_HOME", out.join("config"))
        .env("GOPATH", caches.join("gopath"))
        .env("GOMODCACHE", caches.join("gopath/pkg/mod"))
        .env("GOCACHE", caches.join("gocache"))
        .env(
            "GOFLAGS",
            "-modcacherw -mod=readonly -trimpath -buildvcs=false",
        )
        .env("CGO_ENABLED", "0");
    command
}

/// FNV-1a, 64 bits: a stable name for what a binary was built from.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Runs a built tool that answers each line of its standard input with one line of standard
/// output (the differential tests' probes of upstream code: `tools/kro-json`,
/// `tools/kro-features`), feeding it `lines`, and returns its answers in order.
///
/// # Panics
/// When the tool cannot start, exits with a failure (its standard error is in the message) or
/// answers a different number of lines.
pub fn answer_lines(tool: &Path, lines: &[String]) -> Vec<String> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", tool.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    // Written from a thread: the tool answers while it reads, and a full stdout pipe would
    // otherwise block both.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .unwrap_or_else(|error| panic!("{} did not run to the end: {error}", tool.display()));
    let written = writer.join().expect("the writer thread does not panic");
    assert!(
        output.status.success(),
        "{} failed: {}",
        tool.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    written.unwrap_or_else(|error| panic!("{} did not read every line: {error}", tool.display()));
    let answers: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        answers.len(),
        lines.len(),
        "{} answered {} lines to {}",
        tool.display(),
        answers.len(),
        lines.len()
    );
    answers
}
