//! This controller and upstream kro v0.9.3 side by side: `cargo bench -p kro --bench versus`.
//!
//! Every workload runs twice, each time on a fresh `kro apiserver` (in memory, TLS, with the
//! knobs a workload asks for on its command line): once under `kro controller`, once under
//! upstream's controller built from its Go module (`tools/kro-v0.9.3`), both with default
//! flags and as processes of their own. The requests each controller sends are read from the
//! server's counters by `User-Agent` (`/debug/kro/requests`), with no proxy in between; CPU
//! and peak RSS from `/proc`. The bench's own client (user agent `kro-bench`) is not counted.
//!
//! With `KRO_BENCH_SERVER=kube-apiserver` every run has a fresh real control plane instead
//! (etcd and kube-apiserver from `scripts/controlplane.sh`, built from Go modules), and the
//! requests are counted from kube-apiserver's audit log (level Metadata, by `User-Agent`).
//! kube-apiserver has no latency knob, so the chain runs without its 50 ms; and with no
//! kube-controller-manager, the bench stands in for the Deployment controller (it marks each
//! Deployment's replicas available, uncounted), which the webapp's `readyWhen` waits for.
//!
//! Workloads: `chain` (4 levels of 5 ConfigMaps, 50 ms of latency on every request, one
//! instance), `webapp` (upstream's `examples/kubernetes/webapp`), `collection` (a `forEach`
//! of 50 ConfigMaps), and `scale-N` (N instances of a 5-ConfigMap graph created at once).
//! For each `scale-N` the bench also times a plain client making the same writes as our
//! controller (read back from its run: per instance the metadata writes, the children by
//! server-side apply, the status, the Event if one was recorded): the floor. Ours' instance
//! reconciles are read from its metrics and printed with the request counts. Ours against the
//! floor is the median of `KRO_BENCH_TRIALS` pairs of runs (ours, then the plain client, each
//! on a fresh server): on a shared machine one run's time varies by a quarter either way.
//!
//! Environment:
//! - `KRO_BENCH_WORKLOADS`: comma-separated (default `chain,webapp,collection,scale`);
//! - `KRO_BENCH_INSTANCES`: the N of the scale workloads (default `200,2000,10000`);
//! - `KRO_BENCH_STEADY`: seconds of steady state counted after ACTIVE (default 60);
//! - `KRO_BENCH_UPSTREAM=0`: ours alone (upstream needs Go and, on a cold cache, the module
//!   proxy);
//! - `KRO_BENCH_TIMEOUT`: seconds a run may take to ACTIVE (default 1800);
//! - `KRO_BENCH_KRO`: the `kro` binary whose controller runs (default: the one built with the
//!   bench; the server is always that one), to compare two builds of ours;
//! - `KRO_BENCH_SERVER`: `kro` (default) or `kube-apiserver`;
//! - `KRO_BENCH_TRIALS`: the pairs of ours and the floor a scale workload is timed over
//!   (default 3; the first is ours' run in the table, the others skip the steady state).
//!
//! Killing the bench, even with SIGKILL, takes what it started with it: the servers and
//! controllers die with it (`kro_test_support::child_command`), and a watchdog stops a real
//! control plane.
//!
//! Prints one markdown table: a row per workload and controller, and the upstream/ours ratio
//! per workload (above 1 means ours is better, for every column).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

/// The bench's own `User-Agent`: its requests are not counted.
const BENCH_AGENT: &str = "kro-bench";
/// Requests the bench's plain client keeps in flight.
const CLIENT_CONCURRENCY: usize = 32;

fn main() {
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let upstream = settings.upstream.then(build_upstream);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut rows = Vec::new();
    for workload in settings.workloads() {
        let name = workload.title(settings.server);
        eprintln!("== {name}");
        let mut runs = Vec::new();
        let mut writes = None;
        for controller in [
            Some(ControllerKind::Ours),
            upstream.clone().map(ControllerKind::Upstream),
        ]
        .into_iter()
        .flatten()
        {
            let run_dir = dir
                .path()
                .join(format!("{}-{}", workload.name, controller.name()));
            let (figures, ours_writes) =
                runtime.block_on(run(&workload, &controller, &run_dir, &settings));
            writes = writes.or(ours_writes);
            eprintln!("   {}: {}", controller.name(), figures.cells().join(" | "));
            eprintln!("     {}", figures.detail);
            runs.push((controller.name(), figures));
        }
        let floor = match (workload.floor_instances, runs.first()) {
            (Some(instances), Some((_, ours))) => {
                let writes = writes
                    .as_ref()
                    .expect("ours ran first and its writes were read back");
                let unsteady = Settings {
                    steady: Duration::ZERO,
                    ..settings.clone()
                };
                let mut trials = Vec::new();
                for trial in 1..=settings.trials {
                    let ours = if trial == 1 {
                        ours.all_active
                    } else {
                        let run_dir = dir.path().join(format!("{}-ours-{trial}", workload.name));
                        let ours = &ControllerKind::Ours;
                        runtime
                            .block_on(run(&workload, ours, &run_dir, &unsteady))
                            .0
                            .all_active
                    };
                    let ours = ours.expect("ours made every instance ACTIVE");
                    let plain = runtime.block_on(floor(
                        &workload,
                        instances,
                        writes,
                        &dir.path().join(format!("{}-floor-{trial}", workload.name)),
                        settings.server,
                    ));
                    eprintln!(
                        "   trial {trial}: ours {:.2} s, plain client {:.2} s ({:.2}×)",
                        ours.as_secs_f64(),
                        plain.as_secs_f64(),
                        ours.as_secs_f64() / plain.as_secs_f64()
                    );
                    trials.push((ours, plain));
                }
                Some(FloorComparison::of(&trials))
            }
            _ => None,
        };
        rows.push((name, runs, floor));
    }
    println!("{}", table(&rows));
}

/// Ours and the plain client over paired trials.
struct FloorComparison {
    /// The median of ours' times to all ACTIVE.
    ours: Duration,
    /// The median of the plain client's times.
    floor: Duration,
    /// How many pairs.
    trials: usize,
}

impl FloorComparison {
    fn of(trials: &[(Duration, Duration)]) -> FloorComparison {
        let median = |mut times: Vec<Duration>| {
            times.sort();
            let middle = times.len() / 2;
            if times.len().is_multiple_of(2) {
                (times[middle - 1] + times[middle]) / 2
            } else {
                times[middle]
            }
        };
        FloorComparison {
            ours: median(trials.iter().map(|(ours, _)| *ours).collect()),
            floor: median(trials.iter().map(|(_, floor)| *floor).collect()),
            trials: trials.len(),
        }
    }
}

/// What the environment asks for.
#[derive(Clone)]
struct Settings {
    workloads: Vec<String>,
    instances: Vec<usize>,
    steady: Duration,
    upstream: bool,
    timeout: Duration,
    server: ServerKind,
    /// Pairs of ours and the floor per scale workload (at least 1).
    trials: usize,
}

/// The API server every run gets a fresh one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerKind {
    /// `kro apiserver`, counting requests itself.
    Kro,
    /// A real control plane, counting requests in kube-apiserver's audit log.
    KubeApiserver,
}

impl Settings {
    fn from_env() -> Settings {
        let var =
            |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_owned());
        let list = |text: String| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let seconds = |name: &str, default: &str| {
            Duration::from_secs(
                var(name, default)
                    .parse()
                    .unwrap_or_else(|_| panic!("{name} must be a number of seconds")),
            )
        };
        Settings {
            workloads: list(var("KRO_BENCH_WORKLOADS", "chain,webapp,collection,scale")),
            instances: list(var("KRO_BENCH_INSTANCES", "200,2000,10000"))
                .iter()
                .map(|n| {
                    n.parse()
                        .unwrap_or_else(|_| panic!("KRO_BENCH_INSTANCES: {n:?} is not a number"))
                })
                .collect(),
            steady: seconds("KRO_BENCH_STEADY", "60"),
            upstream: var("KRO_BENCH_UPSTREAM", "1") != "0",
            timeout: seconds("KRO_BENCH_TIMEOUT", "1800"),
            server: match var("KRO_BENCH_SERVER", "kro").as_str() {
                "kro" => ServerKind::Kro,
                "kube-apiserver" => ServerKind::KubeApiserver,
                other => panic!("KRO_BENCH_SERVER: {other:?} is neither kro nor kube-apiserver"),
            },
            trials: match var("KRO_BENCH_TRIALS", "3").parse() {
                Ok(trials) if trials >= 1 => trials,
                _ => panic!("KRO_BENCH_TRIALS must be a whole number of at least 1"),
            },
        }
    }

    fn workloads(&self) -> Vec<Workload> {
        let mut workloads = Vec::new();
        for name in &self.workloads {
            match name.as_str() {
                "chain" => workloads.push(Workload::chain()),
                "webapp" => workloads.push(Workload::webapp()),
                "collection" => workloads.push(Workload::collection()),
                "scale" => workloads.extend(self.instances.iter().map(|n| Workload::scale(*n))),
                other => panic!(
                    "KRO_BENCH_WORKLOADS: no workload {other:?} (chain, webapp, collection, scale)"
                ),
            }
        }
        workloads
    }
}

/// One workload: an RGD, its instances, and the server's knobs.
struct Workload {
    name: String,
    rgd: Value,
    instances: Vec<Value>,
    server_flags: Vec<String>,
    /// What `server_flags` do, in the workload's title (`kro apiserver` only).
    server_knobs: Option<&'static str>,
    /// For scale workloads: the instances the plain client's floor creates.
    floor_instances: Option<usize>,
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("the bench's YAML parses")
}

impl Workload {
    /// Its name in the table: with the server's knobs where they apply.
    fn title(&self, server: ServerKind) -> String {
        match (server, self.server_knobs) {
            (ServerKind::Kro, Some(knobs)) => match self.name.strip_suffix(')') {
                Some(open) => format!("{open}, {knobs})"),
                None => format!("{} ({knobs})", self.name),
            },
            _ => self.name.clone(),
        }
    }

    fn chain() -> Workload {
        let mut resources = Vec::new();
        for level in 0..4 {
            for item in 0..5 {
                let from = if level == 0 {
                    "${schema.metadata.name}".to_owned()
                } else {
                    format!("${{l{}i{item}.metadata.name}}", level - 1)
                };
                resources.push(json!({
                    "id": format!("l{level}i{item}"),
                    "template": {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("${{schema.metadata.name + '-l{level}i{item}'}}")},
                        "data": {"from": from}},
                }));
            }
        }
        Workload {
            name: "chain (4×5)".to_owned(),
            rgd: rgd("chains", "Chain", json!({}), resources),
            instances: vec![instance("Chain", "one", json!({}))],
            server_flags: vec!["--latency".to_owned(), "50ms".to_owned()],
            server_knobs: Some("50 ms"),
            floor_instances: None,
        }
    }

    fn webapp() -> Workload {
        let module = upstream_module();
        let example = module.join("examples/kubernetes/webapp");
        let read = |file: &str| {
            std::fs::read_to_string(example.join(file))
                .unwrap_or_else(|error| panic!("{}: {error}", example.join(file).display()))
        };
        let mut instance = yaml(&read("instance.yaml"));
        instance["metadata"]["namespace"] = json!("default");
        Workload {
            name: "webapp".to_owned(),
            rgd: yaml(&read("rg.yaml")),
            instances: vec![instance],
            server_flags: Vec::new(),
            server_knobs: None,
            floor_instances: None,
        }
    }

    fn collection() -> Workload {
        let items: Vec<String> = (0..50).map(|item| format!("item{item:02}")).collect();
        Workload {
            name: "collection (forEach 50)".to_owned(),
            rgd: rgd(
                "collections",
                "Collection",
                json!({"items": "[]string"}),
                vec![json!({
                    "id": "configs",
                    "forEach": [{"entry": "${schema.spec.items}"}],
                    "template": {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name + '-' + entry}"},
                        "data": {"entry": "${entry}"}},
                })],
            ),
            instances: vec![instance("Collection", "one", json!({"items": items}))],
            server_flags: Vec::new(),
            server_knobs: None,
            floor_instances: None,
        }
    }

    fn scale(count: usize) -> Workload {
        Workload {
            name: format!("scale {count}"),
            rgd: rgd(
                "fives",
                "Five",
                json!({"value": "string | default=v"}),
                five_config_maps(),
            ),
            instances: (0..count)
                .map(|index| {
                    instance(
                        "Five",
                        &format!("i{index:05}"),
                        json!({"value": format!("v{index}")}),
                    )
                })
                .collect(),
            server_flags: Vec::new(),
            server_knobs: None,
            floor_instances: Some(count),
        }
    }
}

/// The children of the scale workload: one ConfigMap, and four reading it.
fn five_config_maps() -> Vec<Value> {
    let mut resources = vec![json!({
        "id": "base",
        "template": {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name + '-base'}"},
            "data": {"value": "${schema.spec.value}"}},
    })];
    for item in 0..4 {
        resources.push(json!({
            "id": format!("leaf{item}"),
            "template": {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("${{schema.metadata.name + '-leaf{item}'}}")},
                "data": {"from": "${base.data.value}"}},
        }));
    }
    resources
}

fn rgd(name: &str, kind: &str, spec: Value, resources: Vec<Value>) -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": name},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": kind, "spec": spec}, "resources": resources},
    })
}

fn instance(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": kind,
        "metadata": {"name": name, "namespace": "default"}, "spec": spec,
    })
}

/// Upstream's controller and CRDs.
#[derive(Clone)]
struct Upstream {
    controller: PathBuf,
    crds: PathBuf,
}

fn upstream_out() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-upstream")
}

fn upstream_module() -> PathBuf {
    kro_test_support::go_module_dir(
        "kro-v0.9.3",
        "github.com/kubernetes-sigs/kro",
        &upstream_out(),
    )
}

fn build_upstream() -> Upstream {
    eprintln!("building upstream kro v0.9.3 (tools/kro-v0.9.3)…");
    let controller = kro_test_support::build_go_tool(
        "kro-v0.9.3",
        "github.com/kubernetes-sigs/kro/cmd/controller",
        &upstream_out(),
    );
    Upstream {
        controller,
        crds: upstream_module().join("helm/crds"),
    }
}

#[derive(Clone)]
enum ControllerKind {
    Ours,
    Upstream(Upstream),
}

impl ControllerKind {
    fn name(&self) -> &'static str {
        match self {
            ControllerKind::Ours => "ours",
            ControllerKind::Upstream(_) => "upstream v0.9.3",
        }
    }
}

/// A process killed on drop, and by the kernel when the bench is killed
/// ([`kro_test_support::child_command`]).
struct Process {
    child: Child,
    /// Where ours serves its metrics (upstream's are not read).
    metrics_port: Option<u16>,
}

impl Process {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `kro` binary whose controller the bench runs.
fn kro() -> PathBuf {
    std::env::var_os("KRO_BENCH_KRO")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kro")), PathBuf::from)
}

/// A fresh API server of one run, stopped on drop, and how the requests sent to it are counted.
struct Server {
    kubeconfig: PathBuf,
    counters: Counters,
    _process: Option<Process>,
    _control_plane: Option<kro_test_support::RealControlPlane>,
}

/// Where the requests of every client but the bench are counted.
enum Counters {
    /// `kro apiserver`'s `/debug/kro/requests`.
    Debug,
    /// kube-apiserver's audit log: the requests received since the last reset.
    Audit {
        log: PathBuf,
        since: chrono::DateTime<chrono::Utc>,
    },
}

impl Server {
    /// A fresh server of `kind` (with `flags`, for `kro apiserver`), its files under `dir`.
    fn start(kind: ServerKind, dir: &Path, flags: &[String]) -> Server {
        std::fs::create_dir_all(dir).expect("the run's directory");
        match kind {
            ServerKind::Kro => {
                let (process, kubeconfig) = start_kro_apiserver(dir, flags);
                Server {
                    kubeconfig,
                    counters: Counters::Debug,
                    _process: Some(process),
                    _control_plane: None,
                }
            }
            ServerKind::KubeApiserver => {
                let control_plane =
                    tokio::task::block_in_place(kro_test_support::RealControlPlane::start_audited)
                        .unwrap_or_else(|error| {
                            panic!("the real control plane did not start: {error}")
                        });
                let log = control_plane
                    .audit_log()
                    .expect("a control plane started with an audit log");
                Server {
                    kubeconfig: control_plane.kubeconfig().to_owned(),
                    counters: Counters::Audit {
                        log,
                        since: chrono::Utc::now(),
                    },
                    _process: None,
                    _control_plane: Some(control_plane),
                }
            }
        }
    }

    /// Starts counting from zero.
    async fn reset(&mut self, client: &kube::Client) {
        match &mut self.counters {
            Counters::Debug => reset_requests(client).await,
            Counters::Audit { since, .. } => *since = chrono::Utc::now(),
        }
    }

    /// Requests by verb and resource from every client but the bench, since the last reset
    /// and (on kube-apiserver) received by `until`.
    ///
    /// kube-apiserver logs a request once its response is written, so the request that made
    /// the last instance ACTIVE may reach the log after the bench saw ACTIVE: the log is read
    /// a second later, and a request counts by when it was received.
    async fn requests(&self, client: &kube::Client, until: Instant) -> Requests {
        match &self.counters {
            Counters::Debug => controller_requests(client).await,
            Counters::Audit { log, since } => {
                let until = chrono::Utc::now()
                    - chrono::Duration::from_std(until.elapsed()).unwrap_or_default();
                tokio::time::sleep(Duration::from_secs(1)).await;
                let mut requests = Requests::new();
                read_audit_log(log, *since, until, |key| {
                    *requests.entry(key).or_insert(0) += 1;
                });
                requests
            }
        }
    }
}

/// Calls `each` with the verb and resource of every request in the audit log `log` that was
/// received from `since` to `until` and not sent by the bench, once per request (a watch is
/// logged when its response starts and again when it completes).
fn read_audit_log(
    log: &Path,
    since: chrono::DateTime<chrono::Utc>,
    until: chrono::DateTime<chrono::Utc>,
    mut each: impl FnMut((String, String)),
) {
    let text = std::fs::read_to_string(log)
        .unwrap_or_else(|error| panic!("the audit log {}: {error}", log.display()));
    let mut counted = HashSet::new();
    // The last line may be cut short by a write in progress: only whole lines count.
    for line in text.lines().filter(|line| line.ends_with('}')) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let received =
            chrono::DateTime::parse_from_rfc3339(text_of(&event, "/requestReceivedTimestamp"))
                .map(|time| time.with_timezone(&chrono::Utc));
        let in_window = received.is_ok_and(|received| since <= received && received <= until);
        let id = text_of(&event, "/auditID");
        if !in_window
            || text_of(&event, "/userAgent").starts_with(BENCH_AGENT)
            || !counted.insert(id.to_owned())
        {
            continue;
        }
        let resource = match (
            event.pointer("/objectRef/resource").and_then(Value::as_str),
            event
                .pointer("/objectRef/subresource")
                .and_then(Value::as_str),
        ) {
            (Some(resource), Some(subresource)) => format!("{resource}/{subresource}"),
            (Some(resource), None) => resource.to_owned(),
            _ => text_of(&event, "/requestURI")
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned(),
        };
        each((text_of(&event, "/verb").to_owned(), resource));
    }
}

/// `kro apiserver` on a free port with `flags`; its kubeconfig.
fn start_kro_apiserver(dir: &Path, flags: &[String]) -> (Process, PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let kubeconfig = dir.join("kubeconfig");
    let child = kro_test_support::child_command(env!("CARGO_BIN_EXE_kro"))
        .args(["apiserver", "--port", &port.to_string(), "--kubeconfig-out"])
        .arg(&kubeconfig)
        .args(flags)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("apiserver.log")).expect("a log file"))
        .spawn()
        .expect("kro apiserver starts");
    (
        Process {
            child,
            metrics_port: None,
        },
        kubeconfig,
    )
}

fn start_controller(kind: &ControllerKind, kubeconfig: &Path, log: &Path) -> Process {
    let mut metrics_port = None;
    let mut command = match kind {
        ControllerKind::Ours => {
            // A port free a moment ago: the bench reads the reconcile counter there.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port();
            metrics_port = Some(port);
            let mut command = kro_test_support::child_command(kro());
            command.args(["controller", "--metrics-addr", &format!("127.0.0.1:{port}")]);
            command
        }
        ControllerKind::Upstream(upstream) => {
            let mut command = kro_test_support::child_command(&upstream.controller);
            command.args(["--metrics-bind-address", "0"]);
            command
        }
    };
    let child = command
        .args(["--health-probe-bind-address", "0", "--kubeconfig"])
        .arg(kubeconfig)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("a log file"))
        .spawn()
        .expect("the controller starts");
    Process {
        child,
        metrics_port,
    }
}

/// A client of the server, once it answers, calling itself [`BENCH_AGENT`].
async fn connect(kubeconfig: &Path) -> kube::Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(file) = Kubeconfig::read_from(kubeconfig)
            && let Ok(mut config) =
                kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await
        {
            config.headers.push((
                axum::http::header::USER_AGENT,
                axum::http::HeaderValue::from_static(BENCH_AGENT),
            ));
            if let Ok(client) = kube::Client::try_from(config)
                && client.apiserver_version().await.is_ok()
            {
                return client;
            }
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// CPU seconds (user and system) and peak RSS in MiB of process `pid`.
fn process_figures(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the file: 12 and 13 after the command.
    let cpu = (ticks(11) + ticks(12)) / clock_ticks();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let peak_kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    (cpu, peak_kib / 1024.0)
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}

/// Requests by verb and resource from every client but the bench.
async fn controller_requests(client: &kube::Client) -> Requests {
    let request = axum::http::Request::get("/debug/kro/requests")
        .body(Vec::new())
        .expect("a request");
    let counts: Value = client.request(request).await.expect("the request counters");
    let mut requests = Requests::new();
    for count in counts["requests"].as_array().into_iter().flatten() {
        if count["client"] != BENCH_AGENT {
            let key = (
                count["verb"].as_str().unwrap_or("?").to_owned(),
                count["resource"].as_str().unwrap_or("?").to_owned(),
            );
            *requests.entry(key).or_insert(0) += count["count"].as_u64().unwrap_or(0);
        }
    }
    requests
}

/// Ours' instance reconciles so far (`instance_reconcile_total` on its metrics port).
async fn reconciles(port: u16) -> Option<u64> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        let total = text
            .lines()
            .filter(|line| line.starts_with("instance_reconcile_total"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
        Some(total as u64)
    })
    .await
    .ok()
    .flatten()
}

/// Requests counted by verb and resource.
type Requests = BTreeMap<(String, String), u64>;

async fn reset_requests(client: &kube::Client) {
    let request = axum::http::Request::delete("/debug/kro/requests")
        .body(Vec::new())
        .expect("a request");
    client
        .request_text(request)
        .await
        .expect("the counters reset");
}

fn total(requests: &Requests) -> u64 {
    requests.values().sum()
}

fn writes(requests: &Requests) -> u64 {
    requests
        .iter()
        .filter(|((verb, _), _)| {
            matches!(
                verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .map(|(_, count)| count)
        .sum()
}

/// `verb resource count, …`.
fn detail(requests: &Requests) -> String {
    requests
        .iter()
        .map(|((verb, resource), count)| format!("{verb} {resource} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figures of one run.
#[derive(Debug, Clone, Default)]
struct Figures {
    /// Requests to ACTIVE and in steady state, by verb and resource (printed to stderr).
    detail: String,
    first_active: Option<Duration>,
    all_active: Option<Duration>,
    requests: u64,
    writes: u64,
    steady_requests: u64,
    cpu_seconds: f64,
    peak_rss_mib: f64,
}

impl Figures {
    fn cells(&self) -> Vec<String> {
        let time = |time: Option<Duration>| {
            time.map_or("not ACTIVE".to_owned(), |time| {
                format!("{:.2} s", time.as_secs_f64())
            })
        };
        vec![
            time(self.first_active),
            time(self.all_active),
            self.requests.to_string(),
            self.writes.to_string(),
            self.steady_requests.to_string(),
            format!("{:.1}", self.cpu_seconds),
            format!("{:.0}", self.peak_rss_mib),
        ]
    }
}

fn resource(kind: &str) -> ApiResource {
    ApiResource {
        group: "kro.run".to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: "kro.run/v1alpha1".to_owned(),
        kind: kind.to_owned(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// The resource of the kro.run kind `kind`, once the server serves it (at most a minute).
async fn served(client: &kube::Client, kind: &str) -> ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("kro.run", "v1alpha1", kind);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match kube::discovery::pinned_kind(client, &gvk).await {
            Ok((resource, _)) => return resource,
            Err(error) => {
                assert!(Instant::now() < deadline, "{kind} is not served: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Applies `object`, of `resource`, as the bench.
async fn apply(client: &kube::Client, resource: &ApiResource, object: &Value) {
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let name = object["metadata"]["name"].as_str().expect("a name");
    api.patch(
        name,
        &PatchParams::apply(BENCH_AGENT).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|error| panic!("applying {} {name}: {error}", resource.kind));
}

async fn wait_for(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "not {what} after {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `workload` under `controller` on a fresh server.
async fn run(
    workload: &Workload,
    controller: &ControllerKind,
    dir: &Path,
    settings: &Settings,
) -> (Figures, Option<InstanceWrites>) {
    let mut server = Server::start(settings.server, dir, &workload.server_flags);
    let client = connect(&server.kubeconfig).await;
    let _deployments = (settings.server == ServerKind::KubeApiserver)
        .then(|| tokio::spawn(stand_in_for_deployments(client.clone())))
        .map(AbortOnDrop);
    if let ControllerKind::Upstream(upstream) = controller {
        install_crds(&client, &upstream.crds).await;
    }
    let process = start_controller(controller, &server.kubeconfig, &dir.join("controller.log"));
    let rgds: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("ResourceGraphDefinition"));
    let rgd_name = workload.rgd["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    wait_for("the RGD CRD served", Duration::from_secs(60), async || {
        rgds.list(&Default::default()).await.is_ok()
    })
    .await;
    apply(&client, &resource("ResourceGraphDefinition"), &workload.rgd).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rgd = rgds.get(&rgd_name).await.ok();
        let status = rgd
            .map(|rgd| rgd.data["status"].clone())
            .unwrap_or_default();
        if status["state"] == "Active" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "RGD {rgd_name} not Active after a minute under {}: {status}",
            controller.name()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kind = workload.instances[0]["kind"]
        .as_str()
        .expect("a kind")
        .to_owned();
    let instances = served(&client, &kind).await;
    settle(&server, &client).await;
    let (cpu_before, _) = process_figures(process.pid());
    server.reset(&client).await;
    let started = Instant::now();
    let (first_active, all_active) = tokio::join!(
        watch_active(
            &client,
            &instances,
            workload.instances.len(),
            settings.timeout,
            started
        ),
        async {
            futures_util::stream::iter(&workload.instances)
                .for_each_concurrent(CLIENT_CONCURRENCY, |instance| {
                    apply(&client, &instances, instance)
                })
                .await
        }
    )
    .0;
    let active_at = Instant::now();
    let to_active = server.requests(&client, active_at).await;
    let (cpu_after, _) = process_figures(process.pid());
    let reconciles = match process.metrics_port {
        Some(port) => reconciles(port).await,
        None => None,
    };
    // Not reset: a request between the two readings counts in steady state, not nowhere.
    tokio::time::sleep(settings.steady).await;
    let mut steady = server.requests(&client, Instant::now()).await;
    for (key, count) in &to_active {
        if let Some(total) = steady.get_mut(key) {
            *total = total.saturating_sub(*count);
        }
    }
    steady.retain(|_, count| *count > 0);
    let (_, peak_rss_mib) = process_figures(process.pid());
    let read_back = match (controller, workload.floor_instances) {
        (ControllerKind::Ours, Some(_)) => {
            let name = workload.instances[0]["metadata"]["name"]
                .as_str()
                .expect("a name");
            Some(InstanceWrites::read_back(&client, &instances, name).await)
        }
        _ => None,
    };
    let figures = Figures {
        detail: format!(
            "to ACTIVE: {}; steady: {}{}",
            detail(&to_active),
            detail(&steady),
            reconciles.map_or(String::new(), |count| format!(
                "; instance reconciles to ACTIVE: {count} ({:.2} per instance)",
                count as f64 / workload.instances.len() as f64
            ))
        ),
        first_active,
        all_active,
        requests: total(&to_active),
        writes: writes(&to_active),
        steady_requests: total(&steady),
        cpu_seconds: cpu_after - cpu_before,
        peak_rss_mib,
    };
    (figures, read_back)
}

/// Waits until the controller has sent no request for a second (for at most ten): what it
/// still does about the RGD once the RGD is Active (a last read of its CRD, say) is not counted
/// as the instances'.
async fn settle(server: &Server, client: &kube::Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut before = total(&server.requests(client, Instant::now()).await);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = total(&server.requests(client, Instant::now()).await);
        if now == before {
            return;
        }
        before = now;
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// On a control plane without kube-controller-manager, does what its Deployment controller
/// would for the webapp's `readyWhen`: reports every Deployment's replicas as updated, ready
/// and available (as the bench: these writes are not counted).
async fn stand_in_for_deployments(client: kube::Client) {
    let deployments: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &served_resource("apps", "v1", "Deployment", "deployments"),
    );
    let events = watcher::watcher(deployments, watcher::Config::default()).applied_objects();
    let mut events = std::pin::pin!(events);
    loop {
        let deployment = match events.try_next().await {
            Ok(Some(deployment)) => deployment,
            Ok(None) => return,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let object = serde_json::to_value(&deployment).expect("JSON");
        let replicas = object["spec"]["replicas"].as_i64().unwrap_or(1);
        let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
        if object["status"]["observedGeneration"].as_i64() == Some(generation)
            && object["status"]["availableReplicas"].as_i64() == Some(replicas)
        {
            continue;
        }
        let (Some(name), Some(namespace)) = (
            deployment.metadata.name.as_deref(),
            deployment.metadata.namespace.as_deref(),
        ) else {
            continue;
        };
        let api: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            namespace,
            &served_resource("apps", "v1", "Deployment", "deployments"),
        );
        let status = json!({"status": {
            "observedGeneration": generation, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [{"type": "Available", "status": "True",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability."}],
        }});
        let _ = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await;
    }
}

/// Watches the instances (of `resource`) until `count` are ACTIVE (or `limit` passes): when the
/// first and the last became so, from `started`.
async fn watch_active(
    client: &kube::Client,
    resource: &ApiResource,
    count: usize,
    limit: Duration,
    started: Instant,
) -> (Option<Duration>, Option<Duration>) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let mut active = std::collections::HashSet::new();
    let mut first = None;
    let events = watcher::watcher(api, watcher::Config::default()).applied_objects();
    let mut events = std::pin::pin!(events);
    let deadline = tokio::time::sleep(limit);
    let mut deadline = std::pin::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return (first, None),
            event = events.try_next() => match event {
                Ok(Some(object)) => {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    if object.data["status"]["state"] == "ACTIVE" {
                        active.insert(name);
                        first.get_or_insert_with(|| started.elapsed());
                        if active.len() == count {
                            return (first, Some(started.elapsed()));
                        }
                    } else {
                        active.remove(&name);
                    }
                }
                Ok(None) => return (first, None),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// Applies the CRDs in the YAML files of `dir` (upstream's `helm/crds`).
async fn install_crds(client: &kube::Client, dir: &Path) {
    let crds = served_resource(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        apply(client, &crds, &yaml(&text)).await;
    }
}

/// What our controller wrote for one instance of the scale workload, read back from the
/// server once it was ACTIVE: the floor's plain client repeats exactly these writes for every
/// instance (with the instance's name and UID put in), so the floor is what the server needs
/// for our controller's writes, whatever they are.
struct InstanceWrites {
    /// The instance's name and UID in the bodies below.
    name: String,
    uid: String,
    /// Server-side apply bodies of the instance's metadata as `kro.run/labeller` (finalizer,
    /// kro's labels) and as `kro.run/applyset-parent` (the ApplySet parent's labels and
    /// annotations).
    labeller: String,
    parent: String,
    /// The children by apply level (the base ConfigMap, then the four reading it), as applied
    /// by `kro.run/applyset`.
    levels: Vec<Vec<String>>,
    /// The status merge patch of `kro.run/status`.
    status: String,
    /// The Event of becoming ACTIVE.
    event: Option<String>,
}

impl InstanceWrites {
    async fn read_back(client: &kube::Client, resource: &ApiResource, name: &str) -> Self {
        use kro_graph::metadata as kro;
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", resource);
        let instance =
            serde_json::to_value(api.get(name).await.expect("the instance")).expect("JSON");
        let uid = instance["metadata"]["uid"]
            .as_str()
            .expect("a UID")
            .to_owned();
        let pick = |part: &str, keep: &dyn Fn(&str) -> bool| -> Value {
            instance["metadata"][part]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, _)| keep(key))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let envelope = |metadata: Value| {
            let mut metadata = metadata;
            metadata["name"] = json!(name);
            metadata["namespace"] = json!("default");
            json!({"apiVersion": instance["apiVersion"], "kind": instance["kind"], "metadata": metadata})
                .to_string()
        };
        let labeller_labels = [
            kro::OWNED_LABEL,
            kro::KRO_VERSION_LABEL,
            kro::RGD_ID_LABEL,
            kro::RGD_NAME_LABEL,
        ];
        let labeller = envelope(json!({
            "finalizers": [kro::FINALIZER],
            "labels": pick("labels", &|key| labeller_labels.contains(&key)),
        }));
        let parent = envelope(json!({
            "labels": pick("labels", &|key| key == kro::APPLYSET_ID_LABEL),
            "annotations": pick("annotations", &|key| {
                key.starts_with("applyset.kubernetes.io/")
                    || key == kro::APPLYSET_INVENTORY_HASH_ANNOTATION
            }),
        }));
        let maps: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            "default",
            &served_resource("", "v1", "ConfigMap", "configmaps"),
        );
        let listed = maps
            .list(
                &kube::api::ListParams::default()
                    .labels(&format!("{}={name}", kro::INSTANCE_NAME_LABEL)),
            )
            .await
            .expect("the instance's ConfigMaps");
        let mut levels = vec![Vec::new(), Vec::new()];
        for map in listed {
            let map = serde_json::to_value(map).expect("JSON");
            let metadata = &map["metadata"];
            let mut applied = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                    "labels": metadata["labels"], "annotations": metadata["annotations"]},
                "data": map["data"],
            });
            if let Some(owners) = metadata.get("ownerReferences") {
                applied["metadata"]["ownerReferences"] = owners.clone();
            }
            let level = usize::from(!text_of(&map, "/metadata/name").ends_with("-base"));
            levels[level].push(applied.to_string());
        }
        assert_eq!(
            (levels[0].len(), levels[1].len()),
            (1, 4),
            "the scale instance {name} has a base ConfigMap and four reading it"
        );
        let status = json!({"status": instance["status"]}).to_string();
        let events: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            "default",
            &served_resource("", "v1", "Event", "events"),
        );
        let event = events
            .list(&Default::default())
            .await
            .expect("the events")
            .items
            .into_iter()
            .map(|event| serde_json::to_value(event).expect("JSON"))
            .find(|event| event["involvedObject"]["uid"] == uid.as_str())
            .map(|mut event| {
                let metadata = &event["metadata"];
                event["metadata"] =
                    json!({"name": metadata["name"], "namespace": metadata["namespace"]});
                event.to_string()
            });
        InstanceWrites {
            name: name.to_owned(),
            uid,
            labeller,
            parent,
            levels,
            status,
            event,
        }
    }

    /// `body` for the instance `name` with UID `uid`.
    fn body(&self, body: &str, name: &str, uid: &str) -> Value {
        serde_json::from_str(&body.replace(&self.uid, uid).replace(&self.name, name))
            .expect("a body read back parses")
    }
}

/// A kind the server serves, by its group, version, kind and plural.
fn served_resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(group, version, kind),
        plural,
    )
}

fn text_of<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The time a plain client takes for our controller's writes (`writes`, read back from ours'
/// run) of `instances` instances of the scale workload: each instance applied as the bench
/// applies it, then what our controller writes for it, in the same order (its metadata twice,
/// the base ConfigMap, the four others at once, the Event, the status),
/// `CLIENT_CONCURRENCY` instances at a time.
async fn floor(
    workload: &Workload,
    instances: usize,
    writes: &InstanceWrites,
    dir: &Path,
    server: ServerKind,
) -> Duration {
    let server = Server::start(server, dir, &workload.server_flags);
    let client = connect(&server.kubeconfig).await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "fives.kro.run"},
        "spec": {"group": "kro.run", "scope": "Namespaced",
            "names": {"kind": "Five", "plural": "fives", "singular": "five", "listKind": "FiveList"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &served_resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    );
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).expect("a CRD"),
    )
    .await
    .expect("the CRD is created");
    let fives = resource("Five");
    wait_for("fives served", Duration::from_secs(30), async || {
        Api::<DynamicObject>::all_with(client.clone(), &fives)
            .list(&Default::default())
            .await
            .is_ok()
    })
    .await;
    let config_maps = served_resource("", "v1", "ConfigMap", "configmaps");
    let event_resource = served_resource("", "v1", "Event", "events");
    let started = Instant::now();
    futures_util::stream::iter(&workload.instances[..instances])
        .for_each_concurrent(CLIENT_CONCURRENCY, |instance| {
            let client = client.clone();
            let fives = fives.clone();
            let config_maps = config_maps.clone();
            let event_resource = event_resource.clone();
            async move {
                use kro_graph::metadata as kro;
                let name = instance["metadata"]["name"].as_str().expect("a name");
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), "default", &fives);
                let created = api
                    .patch(
                        name,
                        &PatchParams::apply(BENCH_AGENT).force(),
                        &Patch::Apply(instance),
                    )
                    .await
                    .expect("the instance is applied");
                let uid = created.metadata.uid.expect("a UID");
                for (manager, body) in [
                    (kro::LABELLER_MANAGER, &writes.labeller),
                    (kro::PARENT_MANAGER, &writes.parent),
                ] {
                    api.patch(
                        name,
                        &PatchParams::apply(manager).force(),
                        &Patch::Apply(writes.body(body, name, &uid)),
                    )
                    .await
                    .expect("the instance's metadata is applied");
                }
                let maps: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), "default", &config_maps);
                let params = PatchParams::apply(kro::APPLY_MANAGER).force();
                for level in &writes.levels {
                    futures_util::future::join_all(level.iter().map(|body| {
                        let body = writes.body(body, name, &uid);
                        let maps = maps.clone();
                        let params = params.clone();
                        async move {
                            let object_name = text_of(&body, "/metadata/name").to_owned();
                            maps.patch(&object_name, &params, &Patch::Apply(body))
                                .await
                                .expect("applied")
                        }
                    }))
                    .await;
                }
                if let Some(event) = &writes.event {
                    let events: Api<DynamicObject> =
                        Api::namespaced_with(client.clone(), "default", &event_resource);
                    let event =
                        serde_json::from_value(writes.body(event, name, &uid)).expect("an Event");
                    events
                        .create(&PostParams::default(), &event)
                        .await
                        .expect("the Event is recorded");
                }
                let params = PatchParams {
                    field_manager: Some(kro::STATUS_MANAGER.to_owned()),
                    ..PatchParams::default()
                };
                api.patch_status(
                    name,
                    &params,
                    &Patch::Merge(writes.body(&writes.status, name, &uid)),
                )
                .await
                .expect("the status is written");
            }
        })
        .await;
    started.elapsed()
}

/// A workload's name, its runs (ours first) and, for a scale workload, ours against the plain
/// client.
type Row = (
    String,
    Vec<(&'static str, Figures)>,
    Option<FloorComparison>,
);

/// The markdown table of every run.
fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| workload | controller | first ACTIVE | all ACTIVE | requests to ACTIVE | writes to ACTIVE | requests in steady state | CPU s | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (workload, runs, floor) in rows {
        for (controller, figures) in runs {
            out.push_str(&format!(
                "| {workload} | {controller} | {} |\n",
                figures.cells().join(" | ")
            ));
        }
        if let (Some((_, ours)), Some((_, upstream))) = (runs.first(), runs.get(1)) {
            let ratio = |theirs: f64, ours: f64| {
                if ours == 0.0 {
                    if theirs == 0.0 {
                        "=".to_owned()
                    } else {
                        "∞".to_owned()
                    }
                } else {
                    format!("{:.1}×", theirs / ours)
                }
            };
            let time = |time: Option<Duration>| time.map_or(f64::NAN, |time| time.as_secs_f64());
            out.push_str(&format!(
                "| {workload} | upstream / ours | {} | {} | {} | {} | {} | {} | {} |\n",
                ratio(time(upstream.first_active), time(ours.first_active)),
                ratio(time(upstream.all_active), time(ours.all_active)),
                ratio(upstream.requests as f64, ours.requests as f64),
                ratio(upstream.writes as f64, ours.writes as f64),
                ratio(upstream.steady_requests as f64, ours.steady_requests as f64),
                ratio(upstream.cpu_seconds, ours.cpu_seconds),
                ratio(upstream.peak_rss_mib, ours.peak_rss_mib),
            ));
        }
        if let Some(FloorComparison {
            ours,
            floor,
            trials,
        }) = floor
        {
            out.push_str(&format!(
                "| {workload} | plain client (floor), median of {trials} | | {:.2} s | | | | | |\n| {workload} | ours, median of {trials} | | {:.2} s | | | | | |\n| {workload} | ours / floor | | {:.2}× | | | | | |\n",
                floor.as_secs_f64(),
                ours.as_secs_f64(),
                ours.as_secs_f64() / floor.as_secs_f64(),
            ));
        }
    }
    out
}
