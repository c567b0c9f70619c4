//! `kro apiserver` with fault-injection flags: the latency, a seeded failure rate limited to
//! chosen verbs and codes, and the request counters by client served at
//! `/debug/kro/requests`, observed over HTTP; the same seed fails the same requests; clap
//! refuses bad knob values.

mod apiserver_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use apiserver_support::{Server, http};
use serde_json::Value;

const ITEM: &str = "/api/v1/namespaces/default/configmaps/absent";
const COLLECTION: &str = "/api/v1/namespaces/default/configmaps";
const GETS: usize = 40;

fn faulty_server() -> Server {
    Server::start(&[
        "--simulators",
        "none",
        "--latency",
        "50ms",
        "--failure-rate",
        "0.5",
        "--failure-seed",
        "7",
        "--failure-codes",
        "503",
        "--failure-verbs",
        "get",
    ])
}

/// The codes of `GETS` reads of a missing object by client `trial-a`.
fn read_codes(server: &Server) -> Vec<u16> {
    (0..GETS)
        .map(|_| {
            let answer = http(server.port, "GET", ITEM, "trial-a", None);
            match answer.code {
                503 => {
                    assert_eq!(answer.header("retry-after"), Some("1"));
                    let status = answer.json();
                    assert_eq!(
                        (&status["kind"], &status["reason"], &status["code"]),
                        (
                            &Value::from("Status"),
                            &Value::from("ServiceUnavailable"),
                            &Value::from(503)
                        )
                    );
                    assert_eq!(status["details"]["retryAfterSeconds"], 1);
                }
                404 => assert_eq!(answer.json()["reason"], "NotFound"),
                other => panic!("unexpected {other}: {}", answer.body),
            }
            answer.code
        })
        .collect()
}

#[test]
fn latency_failures_and_counters_are_observed_over_http() {
    let server = faulty_server();
    let knobs = http(server.port, "GET", "/debug/kro/requests", "probe", None).json();
    assert_eq!(knobs["latencyMillis"], 50);
    assert_eq!(knobs["failureRate"]["seed"], 7);
    assert_eq!(knobs["failureRate"]["rate"], 0.5);
    assert_eq!(knobs["failureRate"]["codes"], serde_json::json!([503]));

    let started = Instant::now();
    let codes = read_codes(&server);
    let elapsed = started.elapsed();
    let failed = codes.iter().filter(|code| **code == 503).count();
    assert!(
        (8..=32).contains(&failed),
        "{failed} of {GETS} reads failed at rate 0.5"
    );
    // A lower bound from the latency knob, not a timing target.
    assert!(elapsed >= Duration::from_millis(50) * u32::try_from(GETS).expect("small"));

    for index in 0..10 {
        let body = format!(r#"{{"metadata":{{"name":"cm-{index}"}}}}"#);
        let created = http(server.port, "POST", COLLECTION, "trial-b", Some(&body));
        assert_eq!(created.code, 201, "creates are not among the verbs failed");
    }

    let counts = http(server.port, "GET", "/debug/kro/requests", "probe", None).json();
    let requests = counts["requests"].as_array().expect("requests");
    let find = |client: &str, verb: &str| {
        requests
            .iter()
            .find(|entry| entry["client"] == client && entry["verb"] == verb)
            .unwrap_or_else(|| panic!("no counter for {client} {verb}: {requests:?}"))
            .clone()
    };
    let reads = find("trial-a", "get");
    assert_eq!(
        (
            &reads["resource"],
            &reads["count"],
            &reads["injectedFailures"]
        ),
        (
            &Value::from("configmaps"),
            &Value::from(GETS),
            &Value::from(failed)
        )
    );
    let creates = find("trial-b", "create");
    assert_eq!(
        (&creates["count"], &creates["injectedFailures"]),
        (&Value::from(10), &Value::from(0))
    );

    let reset = http(server.port, "DELETE", "/debug/kro/requests", "probe", None);
    assert_eq!(reset.code, 204);
    let after = http(server.port, "GET", "/debug/kro/requests", "probe", None).json();
    assert_eq!(after["requests"], serde_json::json!([]));
}

#[test]
fn the_same_seed_fails_the_same_requests_across_runs() {
    let first = read_codes(&faulty_server());
    let second = read_codes(&faulty_server());
    assert_eq!(first, second);
    assert!(first.contains(&503) && first.contains(&404));
}

#[test]
fn bad_knob_values_are_refused_by_the_command_line() {
    let refused = [
        &["apiserver", "--failure-rate", "1.5"][..],
        &["apiserver", "--failure-rate", "half"],
        &[
            "apiserver",
            "--failure-rate",
            "0.1",
            "--failure-codes",
            "418",
        ],
        &[
            "apiserver",
            "--failure-rate",
            "0.1",
            "--failure-verbs",
            "fetch",
        ],
        &["apiserver", "--failure-seed", "3"],
        &["apiserver", "--latency", "5 parsecs"],
        &["dev", "--failure-rate=-0.5"],
    ];
    for args in refused {
        let output = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("kro runs");
        assert_eq!(output.status.code(), Some(2), "{args:?} was accepted");
        let flag = args
            .iter()
            .rev()
            .find(|arg| arg.starts_with("--"))
            .and_then(|arg| arg.split('=').next())
            .expect("a flag");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}
