//! `kro controller`: the kro controllers against any API server the kubeconfig names, with
//! Prometheus metrics, health endpoints, optional leader election and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kro_controller::{LeaderElector, LeaseConfig, Manager, Metrics, Readiness, Settings};
use kro_graph::metadata::LEADER_LEASE_NAME;

/// Arguments of `kro controller`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig to use (by default: `KUBECONFIG`, then `~/.kube/config`, then the
    /// in-cluster service account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (by default: its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Instances reconciled at once, per generated kind (and RGDs at once).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    workers: u16,
    /// Objects of one level applied at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    apply_concurrency: u16,
    /// Where to serve Prometheus metrics (`/metrics`) and health checks (`/healthz`,
    /// `/readyz`); port 0 picks a free one. Upstream kro's default port.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "0.0.0.0:8078",
        env = "KRO_METRICS_ADDR"
    )]
    metrics_addr: SocketAddr,
    /// Run the controllers only while holding the Lease `controller.kro.run`, so that of
    /// several replicas one is active.
    #[arg(long)]
    leader_elect: bool,
    /// The namespace of the leader election Lease (by default the kubeconfig's namespace, or
    /// the pod's own in a cluster).
    #[arg(long, value_name = "NAMESPACE", env = "KRO_LEADER_ELECTION_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// How long other replicas wait after the last renewal before taking the Lease.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::cli::parse_duration)]
    lease_duration: Duration,
    /// How long the leader tries to renew the Lease before it stops leading.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::cli::parse_duration)]
    renew_deadline: Duration,
    /// How often replicas try to take the Lease, and the leader renews it.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::cli::parse_duration)]
    retry_period: Duration,
    /// How long reconciles under way may take to finish when stopping.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::cli::parse_duration)]
    graceful_shutdown_timeout: Duration,
}

/// A client for the kubeconfig (or the default configuration) whose requests `metrics`
/// counts.
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    metrics: &Metrics,
) -> anyhow::Result<kube::Client> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..kube::config::KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("{}: cannot read the kubeconfig", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("{}: cannot use the kubeconfig", path.display()))?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("cannot use the kubeconfig")?,
        None => kube::Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    instrumented_client(config, metrics)
}

/// A client for `config` whose requests `metrics` counts.
pub fn instrumented_client(
    config: kube::Config,
    metrics: &Metrics,
) -> anyhow::Result<kube::Client> {
    Ok(kube::client::ClientBuilder::try_from(config)
        .context("creating the API client")?
        .with_layer(&metrics.api_layer())
        .build())
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `address` until the process ends; returns
/// the address bound (its port chosen when 0 was asked). `/healthz` answers while the process
/// serves; `/readyz` answers what `readiness` says (503 with the reason when not ready).
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve_metrics(
    address: SocketAddr,
    metrics: Metrics,
    readiness: Readiness,
) -> anyhow::Result<SocketAddr> {
    use axum::http::StatusCode;
    use axum::http::header::CONTENT_TYPE;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot serve metrics on {address}"))?;
    let bound = listener.local_addr().context("the metrics address")?;
    let router = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(CONTENT_TYPE, kro_controller::metrics::CONTENT_TYPE)],
                        metrics.encode(),
                    )
                }
            }),
        )
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route(
            "/readyz",
            axum::routing::get(move || {
                let answer = readiness.check();
                async move {
                    match answer {
                        Ok(()) => (StatusCode::OK, "ok".to_owned()),
                        Err(not_ready) => (StatusCode::SERVICE_UNAVAILABLE, not_ready.to_string()),
                    }
                }
            }),
        );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "the metrics server stopped");
        }
    });
    Ok(bound)
}

/// This process's name among leader election candidates: the host (the pod name in a
/// cluster) and a random suffix, as client-go's tools do.
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "kro".to_owned());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Runs the controllers until interrupted (Ctrl-C or SIGTERM), then stops them gracefully.
/// With `--leader-elect` they run only while this process holds the Lease; losing it ends the
/// process at once with a failure, as controller-runtime does.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args {
        kubeconfig,
        context,
        workers,
        apply_concurrency,
        metrics_addr,
        leader_elect,
        leader_election_namespace,
        lease_duration,
        renew_deadline,
        retry_period,
        graceful_shutdown_timeout,
    } = args;
    let settings = Settings {
        workers: usize::from(workers),
        apply_concurrency: usize::from(apply_concurrency),
        ..Settings::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let metrics = Metrics::new();
        let client = client(kubeconfig.as_deref(), context.as_deref(), &metrics).await?;
        let readiness = Readiness::new();
        let bound = serve_metrics(metrics_addr, metrics.clone(), readiness.clone()).await?;
        eprintln!("kro controller: metrics at http://{bound}/metrics");
        let mut leadership = None;
        if leader_elect {
            let config = LeaseConfig {
                name: LEADER_LEASE_NAME.to_owned(),
                namespace: leader_election_namespace
                    .unwrap_or_else(|| client.default_namespace().to_owned()),
                identity: identity(),
                lease_duration,
                renew_deadline,
                retry_period,
            };
            let elector = LeaderElector::new(client.clone(), config.clone())
                .context("invalid leader election settings")?;
            metrics.set_leader(&config.name, false);
            readiness.standing_by();
            eprintln!(
                "kro controller: {} waiting to lead (lease {}/{})",
                config.identity, config.namespace, config.name
            );
            tokio::select! {
                held = elector.acquire() => leadership = Some(held),
                stop = shutdown_signal() => {
                    stop?;
                    eprintln!("kro controller: stopped before leading");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            metrics.set_leader(&config.name, true);
            eprintln!("kro controller: {} is the leader", config.identity);
        }
        // Start-up retries what is transient for as long as it takes (a controller in a pod
        // must outlive an API server that is restarting); a signal still stops it.
        let mut manager = tokio::select! {
            started = Manager::start(client, settings, metrics.clone()) => {
                started.context("cannot start the controllers")?
            }
            stop = shutdown_signal() => {
                stop?;
                eprintln!("kro controller: stopped before the controllers started");
                return Ok(ExitCode::SUCCESS);
            }
        };
        manager.report_readiness(&readiness);
        eprintln!("kro controller: running");
        let lost = async {
            match leadership.as_mut() {
                Some(held) => held.lost().await,
                None => std::future::pending().await,
            }
        };
        let stop = tokio::select! {
            stop = shutdown_signal() => stop,
            () = lost => {
                // Another replica may lead already: stop writing at once rather than let
                // reconciles finish (ending the runtime cancels them).
                metrics.set_leader(LEADER_LEASE_NAME, false);
                readiness.stopping();
                anyhow::bail!("leader election lost");
            }
        };
        eprintln!("kro controller: stopping");
        if tokio::time::timeout(graceful_shutdown_timeout, manager.shutdown())
            .await
            .is_err()
        {
            eprintln!(
                "kro controller: reconciles still running after {graceful_shutdown_timeout:?}; stopping anyway"
            );
        }
        if let Some(held) = leadership {
            metrics.set_leader(LEADER_LEASE_NAME, false);
            if !held.is_lost() {
                held.release().await;
            }
        }
        stop.map(|()| ExitCode::SUCCESS)
    })
}

/// Waits for Ctrl-C or, on Unix, SIGTERM (what Kubernetes sends a pod).
pub async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .context("cannot wait for SIGTERM")?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted.context("cannot wait for Ctrl-C"),
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")
    }
}
