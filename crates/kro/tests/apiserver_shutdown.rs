//! `kro apiserver --data-dir` keeps its data private (directory 0700, files 0600, tightened
//! when they were looser) and stops gracefully on SIGTERM and SIGINT: open watches end, the
//! process exits 0, and what was written is there after a restart.

#![cfg(unix)]

mod apiserver_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiserver_support::{free_port, http, try_http};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn spawn(data_dir: &Path, port: u16) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["apiserver", "--insecure", "--simulators", "none", "--port"])
        .arg(port.to_string())
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kro apiserver starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while try_http(port, "GET", "/healthz", "probe", None, &[]).is_none_or(|a| a.code != 200) {
        assert!(Instant::now() < deadline, "the server did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Waits for the process to exit (at most 20 s) and returns its exit code.
fn exit_code(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server did not stop");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_data_directory_is_private_and_signals_stop_the_server_gracefully() {
    let root = tempfile::tempdir().expect("temporary directory");
    let data_dir = root.path().join("data");
    // Left loose by an older version: tightened at start.
    std::fs::create_dir(&data_dir).expect("created");
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o755)).expect("mode");

    for (round, signal_name) in ["TERM", "INT"].into_iter().enumerate() {
        let port = free_port();
        let mut server = spawn(&data_dir, port);
        assert_eq!(mode(&data_dir), 0o700);
        let name = format!("kept-{round}");
        let body = format!(r#"{{"metadata":{{"name":"{name}"}},"data":{{"secret":"v"}}}}"#);
        assert_eq!(
            http(port, "POST", CONFIGMAPS, "test", Some(&body)).code,
            201
        );
        for entry in std::fs::read_dir(&data_dir).expect("listed") {
            let path = entry.expect("entry").path();
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }

        let mut watch = TcpStream::connect(("127.0.0.1", port)).expect("connects");
        watch
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let request =
            format!("GET {CONFIGMAPS}?watch=true&resourceVersion=1 HTTP/1.1\r\nHost: x\r\n\r\n");
        watch.write_all(request.as_bytes()).expect("sent");
        let mut first = [0u8; 256];
        assert!(watch.read(&mut first).expect("answers") > 0);

        signal(&server, signal_name);
        assert_eq!(exit_code(&mut server), Some(0), "after SIG{signal_name}");
        // The watch stream ended (not cut by a timeout).
        let mut rest = Vec::new();
        assert!(
            watch.read_to_end(&mut rest).is_ok(),
            "the watch ended cleanly"
        );
    }

    // What was written before each stop is there after a restart.
    let port = free_port();
    let mut server = spawn(&data_dir, port);
    for round in 0..2 {
        let stored = http(
            port,
            "GET",
            &format!("{CONFIGMAPS}/kept-{round}"),
            "t",
            None,
        );
        assert_eq!(stored.code, 200);
    }
    signal(&server, "TERM");
    assert_eq!(exit_code(&mut server), Some(0));
}
