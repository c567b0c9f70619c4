//! `kro apply` and `kro delete` against an API server that accepts connections and never
//! answers end within their `--timeout` and the 2 s a request under way is given (they took
//! 120 s and 30 s: reading schemas and finding the instance were outside the timeout), and a
//! kubeconfig that never ends is read no further than the input cap. A refused connection is
//! reported once, on one line.

use std::io::Write;
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A server that accepts every connection and says nothing; its port.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming().flatten() {
            held.push(connection);
        }
    });
    port
}

fn kubeconfig(directory: &std::path::Path, port: u16) -> std::path::PathBuf {
    let path = directory.join("kubeconfig");
    let mut file = std::fs::File::create(&path).expect("a kubeconfig");
    write!(
        file,
        "apiVersion: v1\nkind: Config\n\
         clusters: [{{name: c, cluster: {{server: \"http://127.0.0.1:{port}\"}}}}]\n\
         users: [{{name: u, user: {{token: t}}}}]\n\
         contexts: [{{name: c, context: {{cluster: c, user: u, namespace: default}}}}]\n\
         current-context: c\n"
    )
    .expect("written");
    path
}

fn kro(home: &std::path::Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kro runs");
    (output, started.elapsed())
}

fn data(file: &str) -> String {
    format!("{}/tests/direct/{file}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn apply_and_delete_end_by_their_timeout_when_the_server_never_answers() {
    let home = tempfile::tempdir().expect("a home");
    let config = kubeconfig(home.path(), silent_server());
    let config = config.to_str().expect("a UTF-8 path");
    let (rgd, instance) = (data("job-rgd.yaml"), data("job-instance.yaml"));
    let runs: [(&str, Vec<&str>); 3] = [
        (
            "apply",
            vec![
                "apply",
                "-f",
                &rgd,
                "-i",
                &instance,
                "--kubeconfig",
                config,
                "--timeout",
                "1s",
            ],
        ),
        (
            "delete by name",
            vec!["delete", "maps", "--kubeconfig", config, "--timeout", "1s"],
        ),
        (
            "delete from files",
            vec![
                "delete",
                "-f",
                &rgd,
                "-i",
                &instance,
                "--kubeconfig",
                config,
                "--timeout",
                "1s",
            ],
        ),
    ];
    for (what, args) in runs {
        let (output, took) = kro(home.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}: {stderr}");
        assert!(
            stderr.contains("no answer"),
            "{what} says why it gave up: {stderr}"
        );
        // The promise is 1 s and 2 s of grace; the bound leaves room for a loaded machine
        // and still fails the 30 s and 120 s this used to take.
        assert!(
            took < Duration::from_secs(15),
            "{what} took {took:?}: {stderr}"
        );
    }
}

#[test]
fn an_endless_kubeconfig_is_read_no_further_than_the_input_cap() {
    let home = tempfile::tempdir().expect("a home");
    let (output, _) = kro(
        home.path(),
        &[
            "delete",
            "maps",
            "--kubeconfig",
            "/dev/zero",
            "--timeout",
            "1s",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("/dev/zero: the kubeconfig is larger than"),
        "{stderr}"
    );
}

#[test]
fn a_refused_connection_is_reported_once() {
    let home = tempfile::tempdir().expect("a home");
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a port")
        .port();
    let config = kubeconfig(home.path(), port);
    let config = config.to_str().expect("a UTF-8 path");
    let (rgd, instance) = (data("job-rgd.yaml"), data("job-instance.yaml"));
    for args in [
        vec!["delete", "maps", "--kubeconfig", config],
        vec!["apply", "-f", &rgd, "-i", &instance, "--kubeconfig", config],
    ] {
        let (output, _) = kro(home.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        // One line, `error: ...`, each cause said once (it used to say "client error
        // (Connect)" three times, after a log line from the client library saying it too).
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert_eq!(
            stderr.matches("client error (Connect)").count(),
            1,
            "{stderr}"
        );
        assert_eq!(stderr.matches("Connection refused").count(), 1, "{stderr}");
    }
}
