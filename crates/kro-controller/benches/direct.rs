//! Direct deploy (`kro apply`, no controller) under API latency.
//!
//! `cargo bench -p kro-controller --bench direct` starts the embedded API server in-process
//! with 50 ms of latency injected into every resource request and no controller, measures
//! in the same run the round trip `rtt` of one request (the median of 5 GETs of a ConfigMap),
//! then deploys the graph of the `levels` bench — 4 levels of 5 ConfigMaps, each depending on
//! one of the level before — with [`DirectEngine`], a fresh engine and instance name per
//! trial, as `kro apply` would. It prints each trial's time, the median, the requests one
//! deploy makes (by verb, as the server counted them) and the median against the bound of
//! 3 round trips per level (ConfigMaps are ready once they exist, so readiness adds nothing to
//! it); then the same with one object applied at a time (`concurrency: 1`) as a baseline, and
//! the timeline of one parallel deploy's requests grouped into round trips. It exits with a
//! failure, saying by how much, when the parallel median misses the bound.
//!
//! `KRO_TRIALS=<n>` sets the number of trials per configuration (5 by default).

#[path = "layers/mod.rs"]
mod layers;

use layers::{LEVELS, WIDTH, rgd};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kro_apiserver::{RunningServer, ServerConfig, Simulators};
use kro_engine::direct::{DirectConfig, DirectEngine, Stop};
use kro_graph::{BuiltinCatalog, CompiledGraph, SchemaSources, build_graph, parse_yaml_documents};
use kube::api::{Api, PostParams};
use tower::util::MapRequestLayer;

const LATENCY: Duration = Duration::from_millis(50);
const DEFAULT_TRIALS: usize = 5;
/// Requests that start within this long of the first of a round are counted in that round.
const ROUND_WINDOW: Duration = Duration::from_millis(15);

/// The RGD compiled against the built-in catalog (ConfigMaps only).
fn graph() -> Result<CompiledGraph, String> {
    let documents = parse_yaml_documents(&rgd()).map_err(|error| error.to_string())?;
    let document = documents.first().ok_or("no YAML document")?;
    let rgd = document
        .to_resource_graph_definition()
        .map_err(|error| error.to_string())?;
    build_graph(&rgd, &SchemaSources::new().with(BuiltinCatalog)).map_err(|error| error.to_string())
}

/// The requests a client sent: when each started, its method and path.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<(Instant, String)>>>);

impl Sent {
    fn record(&self, request: &http::Request<kube::client::Body>) {
        let path = request.uri().path();
        let watch = request
            .uri()
            .query()
            .is_some_and(|query| query.contains("watch=true"));
        let line = format!(
            "{}{} {path}",
            request.method(),
            if watch { " (watch)" } else { "" }
        );
        self.lock().push((Instant::now(), line));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Instant, String)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) -> Vec<(Instant, String)> {
        std::mem::take(&mut *self.lock())
    }
}

/// One deploy: how long it took, and the requests the server served, by verb.
struct Trial {
    took: Duration,
    by_verb: BTreeMap<String, u64>,
    sent: Vec<(Instant, String)>,
    started: Instant,
}

/// Deploys a fresh instance `name` with a fresh engine.
async fn deploy(
    server: &RunningServer,
    client: &kube::Client,
    sent: &Sent,
    graph: &CompiledGraph,
    config: &DirectConfig,
    name: &str,
) -> Result<Trial, String> {
    let instance = serde_json::json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "Layers",
        "metadata": {"name": name, "namespace": "default"}, "spec": {},
    });
    let engine = DirectEngine::new(client.clone(), config.clone());
    server.reset_request_counts();
    sent.take();
    let started = Instant::now();
    let deployed = engine
        .apply(graph, &instance, &|_progress| {}, &Stop::never())
        .await
        .map_err(|failure| format!("{name}: {failure}"))?;
    let took = started.elapsed();
    if !deployed.ready {
        return Err(format!("{name}: deployed but not ready"));
    }
    if deployed.created.len() != LEVELS * WIDTH {
        return Err(format!(
            "{name}: created {} objects, not {}",
            deployed.created.len(),
            LEVELS * WIDTH
        ));
    }
    let mut by_verb = BTreeMap::new();
    for ((verb, _), count) in server.request_counts() {
        *by_verb.entry(verb).or_insert(0u64) += count;
    }
    Ok(Trial {
        took,
        by_verb,
        sent: sent.take(),
        started,
    })
}

/// The median of `values` (the upper one of an even count); zero when empty.
fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// `get 10, patch 21, ...`.
fn verbs(by_verb: &BTreeMap<String, u64>) -> String {
    let total: u64 = by_verb.values().sum();
    let each = by_verb
        .iter()
        .map(|(verb, count)| format!("{verb} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("{total} ({each})")
}

/// Runs `trials` deploys with `config`; prints each and returns the median and the last trial.
#[allow(clippy::too_many_arguments)]
async fn series(
    label: &str,
    server: &RunningServer,
    client: &kube::Client,
    sent: &Sent,
    graph: &CompiledGraph,
    config: &DirectConfig,
    trials: usize,
    rtt: Duration,
) -> Result<(Duration, Trial), String> {
    let mut times = Vec::with_capacity(trials);
    let mut last = None;
    for trial in 0..trials {
        let name = format!("{label}-{trial}");
        let outcome = deploy(server, client, sent, graph, config, &name).await?;
        println!(
            "    trial {trial}: {:>5} ms = {:>4.1} rtt; requests {}",
            outcome.took.as_millis(),
            outcome.took.as_secs_f64() / rtt.as_secs_f64(),
            verbs(&outcome.by_verb)
        );
        times.push(outcome.took);
        last = Some(outcome);
    }
    let last = last.ok_or("no trial ran")?;
    Ok((median(&times), last))
}

/// `METHOD path` with the object's name replaced by `*`, so that a level's requests group
/// together; lists, watches and discovery paths are kept whole.
fn without_name(line: &str) -> String {
    let Some((method, path)) = line.rsplit_once(' ') else {
        return line.to_owned();
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    // `api/v1/...` or `apis/<group>/<version>/...`, then maybe `namespaces/<namespace>`.
    let mut resource = if segments.first() == Some(&"apis") {
        3
    } else {
        2
    };
    if segments.get(resource) == Some(&"namespaces") && segments.len() > resource + 2 {
        resource += 2;
    }
    if segments.len() > resource + 1 {
        let head = segments.get(..=resource).unwrap_or_default().join("/");
        format!("{method} /{head}/*")
    } else {
        line.to_owned()
    }
}

/// Prints the requests of `trial` grouped into round trips (requests started together).
fn timeline(trial: &Trial, rtt: Duration) {
    let mut rounds: Vec<(Duration, Vec<&str>)> = Vec::new();
    let mut round_start = None;
    for (at, line) in &trial.sent {
        let offset = at.saturating_duration_since(trial.started);
        match (round_start, rounds.last_mut()) {
            (Some(start), Some((_, lines))) if offset.saturating_sub(start) < ROUND_WINDOW => {
                lines.push(line);
            }
            _ => {
                round_start = Some(offset);
                rounds.push((offset, vec![line]));
            }
        }
    }
    for (index, (offset, lines)) in rounds.iter().enumerate() {
        let mut counted: BTreeMap<String, usize> = BTreeMap::new();
        for line in lines {
            *counted.entry(without_name(line)).or_default() += 1;
        }
        let what = counted
            .iter()
            .map(|(line, count)| format!("{count} x {line}"))
            .collect::<Vec<_>>()
            .join("; ");
        println!(
            "    round {:>2} at {:>5} ms ({:>4.1} rtt): {what}",
            index + 1,
            offset.as_millis(),
            offset.as_secs_f64() / rtt.as_secs_f64()
        );
    }
    println!(
        "    done at {:>5} ms ({:.1} rtt): {} round trips",
        trial.took.as_millis(),
        trial.took.as_secs_f64() / rtt.as_secs_f64(),
        rounds.len()
    );
}

/// The number of trials: `KRO_TRIALS`, else [`DEFAULT_TRIALS`].
fn trials() -> Result<usize, String> {
    match std::env::var("KRO_TRIALS") {
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(count) if count > 0 => Ok(count),
            _ => Err(format!("KRO_TRIALS={text:?} is not a positive number")),
        },
        Err(_) => Ok(DEFAULT_TRIALS),
    }
}

/// The round trip of one request: the median of 5 GETs of a ConfigMap.
async fn round_trip(client: &kube::Client) -> Result<Duration, String> {
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        config_maps
            .get("rtt-probe")
            .await
            .map_err(|error| format!("GET of the probe ConfigMap: {error}"))?;
        times.push(started.elapsed());
    }
    Ok(median(&times))
}

async fn run() -> Result<bool, String> {
    let trials = trials()?;
    let graph = graph()?;
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::all(),
        ..ServerConfig::default()
    })
    .await
    .map_err(|error| format!("the server does not start: {error}"))?;
    let url = server
        .url()
        .parse()
        .map_err(|error| format!("the server's URL: {error}"))?;
    let sent = Sent::default();
    let recorder = sent.clone();
    let client = kube::client::ClientBuilder::try_from(kube::Config::new(url))
        .map_err(|error| format!("a client: {error}"))?
        .with_layer(&MapRequestLayer::new(
            move |request: http::Request<kube::client::Body>| {
                recorder.record(&request);
                request
            },
        ))
        .build();
    let probe: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "rtt-probe", "namespace": "default"}}),
    )
    .map_err(|error| format!("the probe ConfigMap: {error}"))?;
    Api::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &probe)
        .await
        .map_err(|error| format!("creating the probe ConfigMap: {error}"))?;
    server.set_latency(LATENCY);
    let rtt = round_trip(&client).await?;
    let bound = rtt * u32::try_from(LEVELS * 3).unwrap_or(u32::MAX);

    println!(
        "direct deploy of {LEVELS} levels x {WIDTH} ConfigMaps, {} ms injected latency per request, {trials} trials each",
        LATENCY.as_millis()
    );
    println!(
        "  rtt (median of 5 GETs, same run): {:.1} ms",
        rtt.as_secs_f64() * 1000.0
    );
    println!("  parallel (concurrency 16):");
    let parallel_config = DirectConfig::default();
    let (parallel, sample) = series(
        "par",
        &server,
        &client,
        &sent,
        &graph,
        &parallel_config,
        trials,
        rtt,
    )
    .await?;
    println!("  serial (concurrency 1):");
    let serial_config = DirectConfig {
        concurrency: 1,
        ..DirectConfig::default()
    };
    let (serial, _) = series(
        "ser",
        &server,
        &client,
        &sent,
        &graph,
        &serial_config,
        trials,
        rtt,
    )
    .await?;
    let rtts = |took: Duration| took.as_secs_f64() / rtt.as_secs_f64();
    println!(
        "  parallel median {:>5} ms = {:.1} rtt; bound {} ms = {LEVELS} levels x 3 rtt + readiness 0 (ConfigMaps are ready once applied, so readiness adds nothing); median / bound {:.2}",
        parallel.as_millis(),
        rtts(parallel),
        bound.as_millis(),
        parallel.as_secs_f64() / bound.as_secs_f64()
    );
    println!(
        "  serial median   {:>5} ms = {:.1} rtt; parallel / serial {:.2}",
        serial.as_millis(),
        rtts(serial),
        parallel.as_secs_f64() / serial.as_secs_f64()
    );
    println!(
        "  requests of the last parallel deploy, by round trip (discovery, GET /api and /apis..., gets no injected latency):"
    );
    timeline(&sample, rtt);
    server.shutdown().await;
    if parallel > bound {
        let over = parallel.saturating_sub(bound);
        eprintln!(
            "the parallel median missed its bound by {} ms ({:.1} rtt, {:.0}%)",
            over.as_millis(),
            rtts(over),
            100.0 * over.as_secs_f64() / bound.as_secs_f64()
        );
        return Ok(false);
    }
    Ok(true)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("direct bench: {error}");
            ExitCode::from(2)
        }
    }
}
