//! `kro apiserver` under hostile input, as a process: the JSON-patch copy bombs of the
//! hardening issue (22 and 24 `copy` operations each doubling `/data`), a YAML alias bomb,
//! deep nesting and an oversized body are refused with a Kubernetes `Status` while the
//! server's peak memory (VmHWM) stays under 256 MiB; watches opened and dropped by their
//! clients are released.

mod apiserver_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use apiserver_support::{Server, http, try_http};
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The acceptance bound of the hardening issue.
const PEAK_BOUND_KIB: u64 = 256 * 1024;

fn copy_bomb(operations: usize) -> String {
    let operations: Vec<Value> = (0..operations)
        .map(|index| json!({"op": "copy", "from": "/data", "path": format!("/data/k{index}")}))
        .collect();
    Value::Array(operations).to_string()
}

fn patch(server: &Server, path: &str, media_type: &str, body: &[u8]) -> (u16, Value) {
    let answer = try_http(
        server.port,
        "PATCH",
        path,
        "bomber",
        Some(body),
        &[("Content-Type", media_type)],
    )
    .expect("an answer");
    let status = answer.json();
    (answer.code, status)
}

#[test]
#[cfg(target_os = "linux")]
fn patch_bombs_are_refused_within_256_mib_of_peak_memory() {
    let server = Server::start(&["--simulators", "none"]);
    let created = http(
        server.port,
        "POST",
        CONFIGMAPS,
        "bomber",
        Some(
            r#"{"metadata":{"name":"target"},"data":{"a":"0123456789012345678901234567890123456789"}}"#,
        ),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    let item = format!("{CONFIGMAPS}/target");

    for operations in [22, 24, 40] {
        let body = copy_bomb(operations);
        assert!(body.len() < 2_500, "a small request: {} bytes", body.len());
        let (code, status) = patch(
            &server,
            &item,
            "application/json-patch+json",
            body.as_bytes(),
        );
        assert_eq!(
            (code, &status["reason"]),
            (422, &json!("Invalid")),
            "{status}"
        );
    }

    // A body over the 3 MiB limit.
    let huge = format!(
        r#"{{"data":{{"big":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 1)
    );
    let (code, status) = patch(
        &server,
        &item,
        "application/merge-patch+json",
        huge.as_bytes(),
    );
    assert_eq!(
        (code, &status["reason"]),
        (413, &json!("RequestEntityTooLarge"))
    );

    // Billion laughs: each alias level multiplies the one below ten times.
    let mut yaml = String::from(
        "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for level in 1..10 {
        let below = level - 1;
        yaml.push_str(&format!(
            "a{level}: &a{level} [*a{below},*a{below},*a{below},*a{below},*a{below},*a{below},*a{below},*a{below},*a{below},*a{below}]\n"
        ));
    }
    yaml.push_str("metadata: {name: laughs}\n");
    let answer = try_http(
        server.port,
        "POST",
        CONFIGMAPS,
        "bomber",
        Some(yaml.as_bytes()),
        &[("Content-Type", "application/yaml")],
    )
    .expect("an answer");
    assert_eq!(answer.code, 400, "{}", answer.body);
    assert_eq!(answer.json()["kind"], "Status");

    // Nesting deeper than any decoder allows.
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let (code, status) = patch(
        &server,
        &item,
        "application/json-patch+json",
        deep.as_bytes(),
    );
    assert_eq!((code, &status["kind"]), (400, &json!("Status")));

    // The server still serves, and the object is as it was.
    let stored = http(server.port, "GET", &item, "bomber", None).json();
    assert_eq!(
        stored["data"],
        json!({"a": "0123456789012345678901234567890123456789"})
    );
    let peak = server.status_kib("VmHWM").expect("VmHWM of the server");
    assert!(
        peak < PEAK_BOUND_KIB,
        "peak memory {peak} KiB over {PEAK_BOUND_KIB} KiB"
    );
    eprintln!("peak memory under the patch bombs: {} MiB", peak / 1024);
}

/// Opens a watch of `collection` and reads until its first bytes arrive.
fn open_watch(port: u16, collection: &str) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let request = format!(
        "GET {collection}?watch=true HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: watcher\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).expect("sent");
    let mut first = [0u8; 512];
    let read = stream.read(&mut first).expect("the watch answers");
    assert!(String::from_utf8_lossy(&first[..read]).starts_with("HTTP/1.1 200"));
    stream
}

#[test]
#[cfg(target_os = "linux")]
fn watches_of_clients_that_do_not_read_hold_a_bounded_buffer_each() {
    let server = Server::start(&["--simulators", "none"]);
    // 2 MB of objects for each watch to start with.
    for index in 0..40 {
        let body = format!(
            r#"{{"metadata":{{"name":"big-{index}"}},"data":{{"v":"{}"}}}}"#,
            "z".repeat(50_000)
        );
        assert_eq!(
            http(server.port, "POST", CONFIGMAPS, "setup", Some(&body)).code,
            201
        );
    }
    // Clients that read the first bytes and then nothing: every watch would hold the whole
    // list (800 MB for 400 of them) if it were encoded up front.
    let watches: Vec<TcpStream> = (0..400)
        .map(|_| open_watch(server.port, CONFIGMAPS))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let resident = server.status_kib("VmHWM").expect("VmHWM of the server");
    drop(watches);
    assert!(
        resident < PEAK_BOUND_KIB,
        "400 stalled watches took the server to {resident} KiB"
    );
    eprintln!(
        "peak memory with 400 stalled watches: {} MiB",
        resident / 1024
    );
}

fn open_watches(server: &Server) -> u64 {
    http(server.port, "GET", "/debug/kro/requests", "probe", None).json()["openWatches"]
        .as_u64()
        .expect("openWatches")
}

#[test]
fn watches_dropped_by_their_clients_are_released() {
    let server = Server::start(&["--simulators", "none"]);
    // Some objects, so each watch starts with a list to send.
    for index in 0..20 {
        let body = format!(
            r#"{{"metadata":{{"name":"cm-{index}"}},"data":{{"v":"{}"}}}}"#,
            "y".repeat(10_000)
        );
        assert_eq!(
            http(server.port, "POST", CONFIGMAPS, "setup", Some(&body)).code,
            201
        );
    }
    for _round in 0..3 {
        // Half start with a list to send; half are idle (nothing to send, so only reading
        // tells the server that the client left).
        let watches: Vec<TcpStream> = (0..200)
            .map(|index| {
                let collection = if index % 2 == 0 {
                    CONFIGMAPS
                } else {
                    "/api/v1/namespaces/kube-public/configmaps"
                };
                open_watch(server.port, collection)
            })
            .collect();
        assert_eq!(open_watches(&server), 200);
        drop(watches);
        let deadline = Instant::now() + Duration::from_secs(20);
        while open_watches(&server) > 0 {
            assert!(
                Instant::now() < deadline,
                "{} watches still open after their clients left",
                open_watches(&server)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
