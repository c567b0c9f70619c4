//! `kro dev`: the embedded API server with its simulated cluster and the kro controllers in
//! one process — a whole kro environment with no cluster. With `--demo DIR` it applies the
//! example's RGD and instance, shows the instance's progress until it is ACTIVE, and prints
//! what was created.

use kro_graph::metadata::{
    APPLYSET_GROUP_KINDS_ANNOTATION, APPLYSET_ID_LABEL, APPLYSET_PART_OF_LABEL,
};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kro_apiserver::{ServerConfig, Simulators};
use kro_controller::kinds::Kinds;
use kro_controller::{Manager, Metrics, Readiness, Settings};
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::Value;

use crate::output::{OutputFormat, to_text};

/// The field manager of what the demo applies (as `kubectl apply --server-side` would).
const DEMO_MANAGER: &str = "kro-dev";

/// Arguments of `kro dev`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep objects in SQLite in this directory, so `kro dev` can be restarted where it
    /// stopped. Without it, everything lives in memory.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Port of the API server on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Where to write the kubeconfig (by default `kubeconfig` in the data directory, or
    /// `kro-dev.kubeconfig` in the current directory).
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// An example directory holding `rgd.yaml` and `instance.yaml`: apply both and follow the
    /// instance until it is ACTIVE.
    #[arg(long, value_name = "DIR")]
    demo: Option<PathBuf>,
    /// Exit once the demo's instance is ACTIVE (or fails) instead of serving on.
    #[arg(long, requires = "demo")]
    once: bool,
    /// Serve only the API server and its simulated cluster, without kro's controllers: for
    /// running another kro controller (upstream's, or `kro controller` under a debugger)
    /// against it.
    #[arg(long, conflicts_with_all = ["demo", "metrics_addr"])]
    no_controllers: bool,
    /// The controllers' feature gates, as `kro controller --feature-gates`. `kro dev` turns on
    /// `CELOmitFunction`, which kro-compose needs for optional spec fields and upstream's own
    /// examples use (`CELOmitFunction=false` for upstream's defaults); it says which are on
    /// as it starts.
    #[arg(long, value_name = "GATES", default_value = "CELOmitFunction=true", value_parser = crate::commands::controller::parse_feature_gates)]
    feature_gates: kro_graph::FeatureGates,
    /// Serve the controllers' Prometheus metrics (`/metrics`) and health checks here.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Pods whose labels match this selector fail instead of becoming ready (`app=broken`),
    /// as `kro apiserver --fail-pods`: to break a rollout on purpose.
    #[arg(long, value_name = "SELECTOR")]
    fail_pods: Option<kro_apiserver::PodSelector>,
    /// How long the demo waits for the instance to be ACTIVE.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    timeout: u64,
    // Fault injection into the API server's answers to the controllers (and any client).
    #[command(flatten)]
    faults: crate::faults::FaultArgs,
}

/// Runs the environment until interrupted (or, with `--once`, until the demo is done).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: Args) -> anyhow::Result<ExitCode> {
    let (latency, failure_rate) = args.faults.knobs()?;
    let server = kro_apiserver::start(ServerConfig {
        latency,
        failure_rate,
        address: SocketAddr::from((Ipv4Addr::LOCALHOST, args.port)),
        data_dir: args.data_dir.clone(),
        simulators: Simulators::all(),
        simulation: kro_apiserver::SimulationKnobs {
            failing_pods: args.fail_pods.clone(),
            ..kro_apiserver::SimulationKnobs::default()
        },
        ..ServerConfig::default()
    })
    .await
    .context("cannot start the API server")?;
    crate::faults::report_faults(&server);
    let kubeconfig = server.kubeconfig();
    let kubeconfig_path = args
        .kubeconfig_out
        .clone()
        .unwrap_or_else(|| match &args.data_dir {
            Some(dir) => dir.join("kubeconfig"),
            None => PathBuf::from("kro-dev.kubeconfig"),
        });
    kro_apiserver::write_private(&kubeconfig_path, &kubeconfig).with_context(|| {
        format!(
            "cannot write the kubeconfig to {}",
            kubeconfig_path.display()
        )
    })?;
    let file =
        kube::config::Kubeconfig::from_yaml(&kubeconfig).context("reading the kubeconfig")?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .context("using the kubeconfig")?;
    crate::kube_client::identify(&mut config, "dev");
    if args.no_controllers {
        println!(
            "kro dev: API server at {} (controllers off)\n  export KUBECONFIG={}",
            server.url(),
            absolute(&kubeconfig_path).display()
        );
        crate::shutdown::shutdown_signal().await?;
        println!("kro dev: stopping");
        server.shutdown().await;
        return Ok(ExitCode::SUCCESS);
    }
    let metrics = Metrics::new();
    let client = crate::kube_client::instrumented_client(config, &metrics)?;
    let readiness = Readiness::new();
    if let Some(address) = args.metrics_addr {
        let bound =
            crate::endpoints::serve_metrics(address, metrics.clone(), readiness.clone()).await?;
        eprintln!("kro dev: metrics at http://{bound}/metrics");
    }
    let settings = Settings {
        features: args.feature_gates,
        ..Settings::default()
    };
    let gates: Vec<&str> = settings
        .features
        .enabled_features()
        .into_iter()
        .map(kro_graph::Feature::name)
        .collect();
    eprintln!(
        "kro dev: feature gates on: {}",
        if gates.is_empty() {
            "none".to_owned()
        } else {
            gates.join(", ")
        }
    );
    let mut manager = Manager::start(client.clone(), settings, metrics)
        .await
        .context("cannot start the controllers")?;
    manager.report_readiness(&readiness);
    println!(
        "kro dev: API server at {}, controllers running",
        server.url()
    );
    println!(
        "  export KUBECONFIG={}\n  kubectl get resourcegraphdefinitions",
        absolute(&kubeconfig_path).display()
    );
    let mut code = ExitCode::SUCCESS;
    if let Some(dir) = &args.demo {
        let outcome = demo(&client, dir, Duration::from_secs(args.timeout)).await;
        if let Err(error) = outcome {
            eprintln!("error: {error:#}");
            code = ExitCode::FAILURE;
        }
    }
    if !args.once {
        println!("kro dev: serving; Ctrl-C stops");
        crate::shutdown::shutdown_signal().await?;
    }
    println!("kro dev: stopping");
    manager.shutdown().await;
    server.shutdown().await;
    Ok(code)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The documents of a YAML file, as JSON.
fn documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let documents = kro_graph::parse_yaml_documents(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
    Ok(documents
        .into_iter()
        .map(|document| document.value)
        .collect())
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Applies `object` (server-side) and returns what the server stored.
async fn apply(kinds: &Kinds, client: &kube::Client, object: &Value) -> anyhow::Result<Value> {
    let api_version = text(object, "/apiVersion");
    let kind = text(object, "/kind");
    let name = text(object, "/metadata/name");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let served = kinds
        .resolve(group, version, kind)
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let stored = served
        .api(client, Some(namespace))
        .patch(
            name,
            &PatchParams::apply(DEMO_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    Ok(serde_json::to_value(stored)?)
}

async fn demo(client: &kube::Client, dir: &Path, timeout: Duration) -> anyhow::Result<()> {
    let rgds = documents(&dir.join("rgd.yaml"))?;
    let instances = documents(&dir.join("instance.yaml"))?;
    let Some(instance) = instances.first() else {
        bail!("{}: no instance", dir.join("instance.yaml").display());
    };
    let kinds = Kinds::new(client.clone());
    let started = Instant::now();
    for rgd in &rgds {
        apply(&kinds, client, rgd).await?;
        println!(
            "resourcegraphdefinition/{} applied",
            text(rgd, "/metadata/name")
        );
    }
    for rgd in &rgds {
        let name = text(rgd, "/metadata/name");
        let stored = wait(timeout, started, || async {
            let stored = apply_get(&kinds, client, rgd).await?;
            let state = text(&stored, "/status/state");
            let accepted = condition(&stored, "GraphAccepted");
            if text(&accepted, "/status") == "False" {
                bail!(
                    "resourcegraphdefinition/{name} is not accepted: {}",
                    text(&accepted, "/message")
                );
            }
            Ok((state == "Active").then_some(stored))
        })
        .await?;
        println!(
            "resourcegraphdefinition/{name} Active: kind {} served ({:.1}s)",
            text(&stored, "/spec/schema/kind"),
            started.elapsed().as_secs_f64()
        );
    }
    // The kind was just created: resolve it afresh.
    let kinds = Kinds::new(client.clone());
    apply(&kinds, client, instance).await?;
    let kind = text(instance, "/kind");
    let name = text(instance, "/metadata/name");
    println!("{}/{name} applied", kind.to_lowercase());
    let mut last_line = String::new();
    let stored = loop {
        let stored = apply_get(&kinds, client, instance).await?;
        let state = text(&stored, "/status/state").to_owned();
        let ready = condition(&stored, "ResourcesReady");
        let line = format!("  {state:<12} {}", text(&ready, "/message"));
        if line != last_line && !state.is_empty() {
            println!("{line}  ({:.1}s)", started.elapsed().as_secs_f64());
            last_line = line;
        }
        if state == "ACTIVE" {
            break stored;
        }
        if started.elapsed() > timeout {
            bail!(
                "{}/{name} is not ACTIVE after {}s",
                kind.to_lowercase(),
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "{}/{name} is ACTIVE after {:.1}s. Its resources:",
        kind.to_lowercase(),
        started.elapsed().as_secs_f64()
    );
    for line in members(client, &stored).await? {
        println!("  {line}");
    }
    println!("status:");
    let status = to_text(&stored["status"], OutputFormat::Yaml)?;
    for line in status.lines() {
        println!("  {line}");
    }
    Ok(())
}

/// Reads back the object `desired` names.
async fn apply_get(kinds: &Kinds, client: &kube::Client, desired: &Value) -> anyhow::Result<Value> {
    let api_version = text(desired, "/apiVersion");
    let kind = text(desired, "/kind");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let served = kinds.resolve(group, version, kind).await?;
    let namespace = desired
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let stored = served
        .api(client, Some(namespace))
        .get(text(desired, "/metadata/name"))
        .await?;
    Ok(serde_json::to_value(stored)?)
}

fn condition(object: &Value, kind: &str) -> Value {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|condition| condition["type"] == kind)
        })
        .cloned()
        .unwrap_or(Value::Null)
}

/// Polls `check` until it gives a value, up to `timeout` from `started`.
async fn wait<T, F, Fut>(timeout: Duration, started: Instant, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if started.elapsed() > timeout {
            bail!("not done after {}s", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The instance's resources, one `kind/name` per line, found through its ApplySet inventory.
async fn members(client: &kube::Client, instance: &Value) -> anyhow::Result<Vec<String>> {
    let metadata_text = |field: &str, key: &str| {
        instance["metadata"][field][key]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let id = metadata_text("labels", APPLYSET_ID_LABEL);
    let group_kinds = metadata_text("annotations", APPLYSET_GROUP_KINDS_ANNOTATION);
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .context("discovery")?;
    let mut lines = Vec::new();
    for group_kind in group_kinds.split(',').filter(|entry| !entry.is_empty()) {
        let (kind, group) = group_kind.split_once('.').unwrap_or((group_kind, ""));
        let found = discovery
            .groups()
            .filter(|api_group| api_group.name() == group)
            .flat_map(|api_group| api_group.recommended_resources())
            .find(|(resource, _)| resource.kind == kind);
        let Some((resource, _)) = found else {
            continue;
        };
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(client.clone(), &resource);
        let list = api
            .list(&ListParams::default().labels(&format!("{APPLYSET_PART_OF_LABEL}={id}")))
            .await?;
        for object in list.items {
            let name = object.metadata.name.unwrap_or_default();
            let plural = &resource.plural;
            let qualified = if group.is_empty() {
                plural.clone()
            } else {
                format!("{plural}.{group}")
            };
            lines.push(match object.metadata.namespace {
                Some(namespace) => format!("{qualified}/{name} (namespace {namespace})"),
                None => format!("{qualified}/{name}"),
            });
        }
    }
    lines.sort();
    Ok(lines)
}
