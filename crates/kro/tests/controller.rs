//! `kro controller` as operators run it: two replicas against one API server (`kro apiserver`
//! with its simulated cluster), leader election through a Lease, Prometheus metrics, and a
//! graceful handover when the leader gets SIGTERM. kubectl 1.33 is the client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use kro_test_support::{eventually, kubectl_succeeds, repository_root};

/// A child process whose stderr lines arrive on a channel.
struct Process {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Process {
    fn spawn(args: &[&str]) -> Process {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(args)
            .env("KRO_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kro starts");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Process {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a stderr line containing `text`; returns it.
    fn wait_line(&mut self, text: &str, limit: Duration) -> String {
        if let Some(line) = self.seen.iter().find(|line| line.contains(text)) {
            return line.clone();
        }
        let started = Instant::now();
        loop {
            let left = limit.saturating_sub(started.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => panic!(
                    "no line with {text:?} within {limit:?}; stderr so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Whether a stderr line containing `text` has arrived (without waiting).
    fn said(&mut self, text: &str) -> bool {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.iter().any(|line| line.contains(text))
    }

    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kro apiserver` (with its simulated cluster) on a free port, its kubeconfig at `kubeconfig`.
fn apiserver(kubeconfig: &Path) -> Process {
    let mut apiserver = Process::spawn(&[
        "apiserver",
        "--port",
        "0",
        "--kubeconfig-out",
        kubeconfig.to_str().expect("a path"),
    ]);
    apiserver.wait_line("kro apiserver: serving", Duration::from_secs(30));
    apiserver
}

/// A replica of the controller with short lease timings; returns it and its metrics address.
fn replica(kubeconfig: &Path) -> (Process, String) {
    let kubeconfig = kubeconfig.to_str().expect("a path");
    let mut process = Process::spawn(&[
        "controller",
        "--kubeconfig",
        kubeconfig,
        "--leader-elect",
        "--leader-election-namespace",
        "default",
        "--lease-duration",
        "3s",
        "--renew-deadline",
        "2s",
        "--retry-period",
        "200ms",
        "--metrics-addr",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
    ]);
    let line = process.wait_line("metrics at http://", Duration::from_secs(30));
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .expect("the metrics address")
        .to_owned();
    (process, address)
}

/// GET `path` from `address` over plain HTTP/1.0; the status code and body.
fn http_get(address: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("the metrics server answers");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").expect("the request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("the response");
    let code = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// The value of one series in a scrape.
fn series(scrape: &str, name: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        line.strip_prefix(name)?
            .strip_prefix(' ')?
            .parse::<f64>()
            .ok()
    })
}

fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    kubectl_succeeds(33, kubeconfig, home, args)
}

const LEADER: &str = "leader_election_master_status{name=\"controller.kro.run\"}";
const WEBAPPS_ACTIVE: &str =
    "instance_count{gvr=\"kro.run/v1alpha1, Resource=webapps\",state=\"ACTIVE\"}";

#[test]
fn two_replicas_elect_one_leader_serve_metrics_and_hand_over_on_sigterm() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _apiserver = apiserver(&kubeconfig);

    let (mut first, first_metrics) = replica(&kubeconfig);
    first.wait_line("is the leader", Duration::from_secs(30));
    first.wait_line("kro controller: running", Duration::from_secs(30));
    let (mut second, second_metrics) = replica(&kubeconfig);
    second.wait_line("waiting to lead", Duration::from_secs(30));

    let example = repository_root().join("examples/webapp");
    let (rgd, instance) = (example.join("rgd.yaml"), example.join("instance.yaml"));
    let (rgd, instance) = (
        rgd.to_str().expect("a path"),
        instance.to_str().expect("a path"),
    );
    kubectl(&kubeconfig, home.path(), &["apply", "-f", rgd]);
    eventually("the RGD Active", || {
        let table = kubectl(&kubeconfig, home.path(), &["get", "rgd", "webapp"]);
        table.contains("Active").then_some(())
    });
    kubectl(&kubeconfig, home.path(), &["apply", "-f", instance]);
    eventually("the instance ACTIVE", || {
        let table = kubectl(&kubeconfig, home.path(), &["get", "webapp", "shop"]);
        table.contains("ACTIVE").then_some(())
    });

    // The leader's metrics tell what it did; the standby has done nothing.
    let scrape = eventually("the instance counted ACTIVE", || {
        let (code, scrape) = http_get(&first_metrics, "/metrics");
        assert_eq!(code, 200);
        (series(&scrape, WEBAPPS_ACTIVE) == Some(1.0)).then_some(scrape)
    });
    assert_eq!(series(&scrape, LEADER), Some(1.0), "{scrape}");
    // The three objects are created by apply (201); the instance's metadata is applied (200).
    let applies = ["200", "201"]
        .iter()
        .filter_map(|code| {
            series(
                &scrape,
                &format!("rest_client_requests_by_verb_total{{verb=\"apply\",code=\"{code}\"}}"),
            )
        })
        .sum::<f64>();
    assert!(applies >= 5.0, "{scrape}");
    assert!(
        series(
            &scrape,
            "instance_reconcile_total{gvr=\"kro.run/v1alpha1, Resource=webapps\"}"
        )
        .is_some_and(|reconciles| reconciles >= 1.0),
        "{scrape}"
    );
    assert_eq!(series(&scrape, "dynamic_controller_gvr_count"), Some(1.0));
    assert_eq!(http_get(&first_metrics, "/healthz"), (200, "ok".to_owned()));
    assert_eq!(http_get(&first_metrics, "/readyz"), (200, "ok".to_owned()));
    assert_eq!(
        http_get(&second_metrics, "/readyz"),
        (200, "ok".to_owned()),
        "a standby is ready to take over"
    );
    let (_, standby) = http_get(&second_metrics, "/metrics");
    assert_eq!(series(&standby, LEADER), Some(0.0), "{standby}");
    assert_eq!(series(&standby, WEBAPPS_ACTIVE), None, "{standby}");
    assert!(!second.said("is the leader"));

    // SIGTERM: the leader stops its controllers, releases the lease and exits 0; the standby
    // takes over at once (well before the 3 s lease would expire) and reconciles changes.
    first.terminate();
    let stopped = Instant::now();
    let status = first.child.wait().expect("the leader exits");
    assert!(status.success(), "the leader exits 0 on SIGTERM: {status}");
    second.wait_line("is the leader", Duration::from_secs(10));
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "the handover took {:?}; a released lease should not wait for its expiry",
        stopped.elapsed()
    );
    kubectl(
        &kubeconfig,
        home.path(),
        &[
            "patch",
            "webapp",
            "shop",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":1}}"#,
        ],
    );
    eventually("the new leader scales the Deployment", || {
        let replicas = kubectl(
            &kubeconfig,
            home.path(),
            &[
                "get",
                "deployment",
                "shop",
                "-o",
                "jsonpath={.spec.replicas}",
            ],
        );
        (replicas.trim() == "1").then_some(())
    });
    let (_, scrape) = http_get(&second_metrics, "/metrics");
    assert_eq!(series(&scrape, LEADER), Some(1.0), "{scrape}");
}

#[test]
fn a_leader_that_loses_its_api_server_exits_with_a_failure_after_the_renew_deadline() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let apiserver = apiserver(&kubeconfig);
    let (mut leader, _) = replica(&kubeconfig);
    leader.wait_line("kro controller: running", Duration::from_secs(30));

    drop(apiserver);
    let gone = Instant::now();
    leader.wait_line("leader election lost", Duration::from_secs(20));
    let status = leader.child.wait().expect("the leader exits");
    assert!(!status.success(), "losing the lease is a failure: {status}");
    // Renewals every 200 ms stop succeeding; the 2 s renew deadline ends leading.
    assert!(
        gone.elapsed() >= Duration::from_millis(1500),
        "gave up after {:?}, before the renew deadline",
        gone.elapsed()
    );
}

/// The address a line `... at http://ADDR/...` names.
fn address_in(line: &str) -> String {
    line.split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("an address")
        .to_owned()
}

#[test]
fn upstream_kro_s_flags_are_accepted_with_their_meanings() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _apiserver = apiserver(&kubeconfig);
    let kubeconfig_flag = format!("--kubeconfig={}", kubeconfig.to_str().expect("a path"));
    // The arguments of upstream kro's Helm chart (v0.9.3 deployment template), ports made free.
    let mut controller = Process::spawn(&[
        "controller",
        &kubeconfig_flag,
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--leader-elect=false",
        "--allow-crd-deletion=true",
        "--enable-controller-warmup=false",
        "--resource-graph-definition-concurrent-reconciles=1",
        "--graph-revision-concurrent-reconciles=1",
        "--dynamic-controller-concurrent-reconciles=2",
        "--dynamic-controller-default-resync-period=36000",
        "--dynamic-controller-default-queue-max-retries=20",
        "--client-qps=100",
        "--client-burst=150",
        "--rgd-max-collection-size=2",
        "--rgd-max-collection-dimension-size=1",
        "--graceful-shutdown-timeout=60s",
        "--zap-log-level=info",
        "--feature-gates=CELOmitFunction=true,InstanceConditionEvents=false",
    ]);
    controller.wait_line(
        "kro controller: feature gates CELOmitFunction=true,CELTimeFunctions=false,InstanceConditionEvents=false,InstanceConditionMetrics=false",
        Duration::from_secs(30),
    );
    let metrics = address_in(&controller.wait_line("metrics at http://", Duration::from_secs(30)));
    let health =
        address_in(&controller.wait_line("health probes at http://", Duration::from_secs(30)));
    assert_ne!(metrics, health, "the probes have a port of their own");
    for flag in [
        "--enable-controller-warmup=false",
        "--graph-revision-concurrent-reconciles=1",
        "--dynamic-controller-default-resync-period=36000",
    ] {
        controller.wait_line(
            &format!(
                "warning: {flag} is accepted for upstream kro's compatibility and has no effect"
            ),
            Duration::from_secs(5),
        );
    }
    controller.wait_line("kro controller: running", Duration::from_secs(30));
    assert_eq!(http_get(&health, "/healthz"), (200, "ok".to_owned()));
    eventually("/readyz ok", || {
        (http_get(&health, "/readyz").0 == 200).then_some(())
    });
    assert_eq!(
        http_get(&health, "/metrics").0,
        404,
        "metrics are on their own port"
    );
    assert!(http_get(&metrics, "/metrics").1.contains("rgd_count"));

    // --rgd-max-collection-dimension-size=1: a forEach of two dimensions is refused.
    let grid = home.path().join("grid.yaml");
    std::fs::write(
        &grid,
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: grid
spec:
  schema:
    apiVersion: v1alpha1
    kind: Grid
    spec:
      rows: '[]string'
      columns: '[]string'
  resources:
    - id: cells
      forEach:
        - row: ${schema.spec.rows}
        - column: ${schema.spec.columns}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${row + '-' + column}
",
    )
    .expect("written");
    kubectl(
        &kubeconfig,
        home.path(),
        &["apply", "-f", grid.to_str().expect("a path")],
    );
    eventually("the RGD refused for its dimensions", || {
        let json = kubectl(
            &kubeconfig,
            home.path(),
            &["get", "rgd", "grid", "-o", "json"],
        );
        json.contains("forEach has 2 dimensions; at most 1 are allowed")
            .then_some(())
    });

    // --allow-crd-deletion=true: deleting an RGD deletes the CRD kro made for it.
    let example = repository_root().join("examples/webapp/rgd.yaml");
    kubectl(
        &kubeconfig,
        home.path(),
        &["apply", "-f", example.to_str().expect("a path")],
    );
    eventually("the webapps CRD", || {
        let crds = kubectl(&kubeconfig, home.path(), &["get", "crd", "-o", "name"]);
        crds.contains("webapps.kro.run").then_some(())
    });
    kubectl(
        &kubeconfig,
        home.path(),
        &["delete", "rgd", "webapp", "--wait=true"],
    );
    eventually("the webapps CRD deleted with its RGD", || {
        let crds = kubectl(&kubeconfig, home.path(), &["get", "crd", "-o", "name"]);
        (!crds.contains("webapps.kro.run")).then_some(())
    });
}

#[test]
fn record_active_events_tells_in_an_event_that_an_instance_became_active() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _apiserver = apiserver(&kubeconfig);
    let mut controller = Process::spawn(&[
        "controller",
        "--kubeconfig",
        kubeconfig.to_str().expect("a path"),
        "--metrics-addr",
        "0",
        "--health-probe-bind-address",
        "0",
        "--record-active-events",
    ]);
    controller.wait_line("kro controller: running", Duration::from_secs(30));
    let example = repository_root().join("examples/webapp");
    let (rgd, instance) = (example.join("rgd.yaml"), example.join("instance.yaml"));
    kubectl(
        &kubeconfig,
        home.path(),
        &["apply", "-f", rgd.to_str().expect("a path")],
    );
    eventually("the RGD Active", || {
        let table = kubectl(&kubeconfig, home.path(), &["get", "rgd", "webapp"]);
        table.contains("Active").then_some(())
    });
    kubectl(
        &kubeconfig,
        home.path(),
        &["apply", "-f", instance.to_str().expect("a path")],
    );
    // Without the flag there is none (the determinism test counts every request).
    eventually("the instance's Active event", || {
        let reasons = kubectl(
            &kubeconfig,
            home.path(),
            &[
                "get",
                "events",
                "-n",
                "default",
                "-o",
                "jsonpath={range .items[?(@.involvedObject.kind==\"WebApp\")]}{.reason}{\"\\n\"}{end}",
            ],
        );
        reasons
            .lines()
            .any(|reason| reason == "Active")
            .then_some(())
    });
}
