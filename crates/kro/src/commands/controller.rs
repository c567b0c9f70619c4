//! `kro controller`: the kro controllers against any API server the kubeconfig names, with
//! Prometheus metrics, health endpoints, optional leader election and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kro_controller::client_rate::{ClientRate, ClientRateLayer};
use kro_controller::{LeaderElector, LeaseConfig, Manager, Metrics, Readiness, Settings};
use kro_graph::FeatureGates;
use kro_graph::metadata::LEADER_LEASE_NAME;

use crate::endpoints::{serve_health, serve_metrics};
use crate::kube_client::instrumented_client;
use crate::shutdown::shutdown_signal;

/// Arguments of `kro controller`. Upstream kro's flag names are accepted with their meanings
/// (`--metrics-bind-address`, `--dynamic-controller-concurrent-reconciles`, ...), so that an
/// upstream Deployment's arguments or Helm values work unchanged; see docs/controller.md for
/// how each maps, and for those accepted with a warning because the concept does not exist
/// here.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig to use (by default: `KUBECONFIG`, then `~/.kube/config`, then the
    /// in-cluster service account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (by default: its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Instances reconciled at once, per generated kind (upstream:
    /// `--dynamic-controller-concurrent-reconciles`, which all kinds share).
    #[arg(
        long,
        visible_alias = "dynamic-controller-concurrent-reconciles",
        value_name = "N",
        default_value_t = 4,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    workers: u16,
    /// RGDs reconciled at once (by default as many as `--workers`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    resource_graph_definition_concurrent_reconciles: Option<u16>,
    /// Objects of one level applied at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    apply_concurrency: u16,
    /// The CEL cost limit of each expression of an RGD while it runs (an expression past it
    /// fails its reconcile with the cost it reached). Upstream main's flag, where 0 (its
    /// default) turns the limit off; here every expression is always bounded, and 0 keeps
    /// the default.
    #[arg(long, value_name = "N", default_value_t = 0)]
    cel_cost_limit: u64,
    /// Where to serve Prometheus metrics (`/metrics`, and `/healthz`, `/readyz` too): `HOST:PORT`
    /// or `:PORT`; port 0 picks a free one; `0` alone serves no metrics. Upstream kro's default
    /// port.
    #[arg(
        long,
        visible_alias = "metrics-bind-address",
        value_name = "ADDR",
        default_value = "0.0.0.0:8078",
        env = "KRO_METRICS_ADDR",
        value_parser = parse_bind_address
    )]
    metrics_addr: BindAddress,
    /// Where to serve the health probes `/healthz` (the process is up) and `/readyz` (the
    /// controllers run, or this replica stands by for the leader): as `--metrics-addr`.
    #[arg(long, value_name = "ADDR", default_value = ":8079", value_parser = parse_bind_address)]
    health_probe_bind_address: BindAddress,
    /// Run the controllers only while holding the Lease `controller.kro.run`, so that of
    /// several replicas one is active (`--leader-elect=true` as upstream's charts write it).
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// The namespace of the leader election Lease (by default the kubeconfig's namespace, or
    /// the pod's own in a cluster).
    #[arg(long, value_name = "NAMESPACE", env = "KRO_LEADER_ELECTION_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// How long other replicas wait after the last renewal before taking the Lease.
    #[arg(long, visible_alias = "leader-election-lease-duration", value_name = "DURATION", default_value = "15s", value_parser = crate::duration::parse_duration)]
    lease_duration: Duration,
    /// How long the leader tries to renew the Lease before it stops leading.
    #[arg(long, visible_alias = "leader-election-renew-deadline", value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse_duration)]
    renew_deadline: Duration,
    /// How often replicas try to take the Lease, and the leader renews it.
    #[arg(long, visible_alias = "leader-election-retry-period", value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse_duration)]
    retry_period: Duration,
    /// How long one reconcile may take. One that takes longer (a request the API server holds,
    /// a level whose applies do not return) is abandoned and retried with backoff, so that a
    /// slow instance holds one worker for at most this long.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_reconcile_timeout)]
    reconcile_timeout: Duration,
    /// How long reconciles under way may take to finish when stopping.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::duration::parse_duration)]
    graceful_shutdown_timeout: Duration,
    /// API requests per second on average (0, the default here, limits nothing; upstream's
    /// default is 100).
    #[arg(long, value_name = "QPS", default_value_t = 0.0)]
    client_qps: f64,
    /// API requests sent at once before `--client-qps` applies (upstream's default is 150).
    #[arg(long, value_name = "N", default_value_t = 150)]
    client_burst: u32,
    /// The most objects one collection (`forEach`) may make.
    #[arg(long, value_name = "N", default_value_t = kro_runtime::DEFAULT_MAX_COLLECTION_SIZE)]
    rgd_max_collection_size: usize,
    /// The most dimensions one `forEach` may have.
    #[arg(long, value_name = "N", default_value_t = kro_graph::DEFAULT_MAX_COLLECTION_DIMENSIONS)]
    rgd_max_collection_dimension_size: usize,
    /// How many GraphRevisions of each RGD are kept; older ones are deleted once a newer one
    /// serves. 0 or less keeps every one.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        allow_negative_numbers = true
    )]
    rgd_max_graph_revisions: i64,
    /// How soon an RGD waiting for a GraphRevision being deleted is looked at again.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = crate::duration::parse_duration)]
    rgd_progress_requeue_delay: Duration,
    /// Delete the CRDs kro made for an RGD when the RGD is deleted (and with them every custom
    /// resource of the kind). Off by default.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    allow_crd_deletion: bool,
    /// Record a Normal `Active` Event on an instance when it becomes ACTIVE. Off by default:
    /// one more write per instance, and upstream kro records none.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    record_active_events: bool,
    /// Upstream kro's feature gates, as `Name=bool` pairs (`--feature-gates=CELOmitFunction=true`);
    /// all off by default, as upstream. Known: CELOmitFunction (RGDs may use `omit()`),
    /// InstanceConditionEvents (an Event per instance condition transition),
    /// InstanceConditionMetrics (the `instance_condition_current_status_seconds` gauge), and
    /// AllAlpha to set them all.
    #[arg(long, value_name = "GATES", default_value = "", value_parser = parse_feature_gates)]
    feature_gates: FeatureGates,
    /// The log level, as upstream's zap flag: `debug`, `info`, `error`, or a number (1 and
    /// above: debug). `KRO_LOG`, when set, wins.
    #[arg(long, value_name = "LEVEL")]
    zap_log_level: Option<String>,
    #[command(flatten)]
    upstream_only: UpstreamOnly,
}

/// Flags of upstream kro's controller whose concept does not exist here: accepted (so that an
/// upstream Deployment's arguments work) with one warning each. docs/controller.md says why.
#[derive(Debug, clap::Args)]
struct UpstreamOnly {
    /// Accepted for upstream compatibility; no effect (controllers start watching at once).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", hide_short_help = true)]
    enable_controller_warmup: Option<String>,
    /// Accepted for upstream compatibility; no effect (GraphRevisions are issued and verified
    /// by the RGD reconcile itself, not by a controller of their own).
    #[arg(long, value_name = "N", hide_short_help = true)]
    graph_revision_concurrent_reconciles: Option<String>,
    /// Accepted for upstream compatibility; no effect (retries back off from 10 ms to 60 s).
    #[arg(long, value_name = "DURATION", hide_short_help = true)]
    dynamic_controller_rate_limiter_min_delay: Option<String>,
    /// Accepted for upstream compatibility; no effect (retries back off from 10 ms to 60 s).
    #[arg(long, value_name = "DURATION", hide_short_help = true)]
    dynamic_controller_rate_limiter_max_delay: Option<String>,
    /// Accepted for upstream compatibility; no effect (no queue-wide rate limit).
    #[arg(long, value_name = "N", hide_short_help = true)]
    dynamic_controller_rate_limiter_rate_limit: Option<String>,
    /// Accepted for upstream compatibility; no effect (no queue-wide rate limit).
    #[arg(long, value_name = "N", hide_short_help = true)]
    dynamic_controller_rate_limiter_burst_limit: Option<String>,
    /// Accepted for upstream compatibility; no effect (watches keep every instance current;
    /// there is no periodic resync).
    #[arg(long, value_name = "SECONDS", hide_short_help = true)]
    dynamic_controller_default_resync_period: Option<String>,
    /// Accepted for upstream compatibility; no effect (an instance is retried with backoff
    /// for as long as it fails).
    #[arg(long, value_name = "N", hide_short_help = true)]
    dynamic_controller_default_queue_max_retries: Option<String>,
    /// Accepted for upstream compatibility; no effect (instances are requeued by watches and
    /// readiness, not on an interval).
    #[arg(long, value_name = "DURATION", hide_short_help = true)]
    instance_requeue_interval: Option<String>,
    /// Accepted for upstream compatibility; no effect (logs are text on stderr).
    #[arg(long, value_name = "ENCODER", hide_short_help = true)]
    zap_encoder: Option<String>,
    /// Accepted for upstream compatibility; no effect.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", hide_short_help = true)]
    zap_devel: Option<String>,
    /// Accepted for upstream compatibility; no effect (no pprof endpoint).
    #[arg(long, value_name = "ADDR", hide_short_help = true)]
    pprof_bind_address: Option<String>,
}

impl UpstreamOnly {
    /// The flags given, as `--name=value`.
    fn given(&self) -> Vec<String> {
        let flags: [(&str, &Option<String>); 12] = [
            ("enable-controller-warmup", &self.enable_controller_warmup),
            (
                "graph-revision-concurrent-reconciles",
                &self.graph_revision_concurrent_reconciles,
            ),
            (
                "dynamic-controller-rate-limiter-min-delay",
                &self.dynamic_controller_rate_limiter_min_delay,
            ),
            (
                "dynamic-controller-rate-limiter-max-delay",
                &self.dynamic_controller_rate_limiter_max_delay,
            ),
            (
                "dynamic-controller-rate-limiter-rate-limit",
                &self.dynamic_controller_rate_limiter_rate_limit,
            ),
            (
                "dynamic-controller-rate-limiter-burst-limit",
                &self.dynamic_controller_rate_limiter_burst_limit,
            ),
            (
                "dynamic-controller-default-resync-period",
                &self.dynamic_controller_default_resync_period,
            ),
            (
                "dynamic-controller-default-queue-max-retries",
                &self.dynamic_controller_default_queue_max_retries,
            ),
            ("instance-requeue-interval", &self.instance_requeue_interval),
            ("zap-encoder", &self.zap_encoder),
            ("zap-devel", &self.zap_devel),
            ("pprof-bind-address", &self.pprof_bind_address),
        ];
        flags
            .iter()
            .filter_map(|(name, value)| value.as_ref().map(|value| format!("--{name}={value}")))
            .collect()
    }
}

/// A `--feature-gates` value (upstream's syntax: `Name=bool,...`).
pub fn parse_feature_gates(text: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(text).map_err(|error| error.to_string())
}

/// Where to serve HTTP, or nowhere (`0`, as controller-runtime reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindAddress {
    /// Serve nothing.
    Off,
    /// Serve on this address.
    At(SocketAddr),
}

/// `HOST:PORT`, `:PORT` (every interface) or `0` (off); `localhost` is the loopback address.
pub fn parse_bind_address(text: &str) -> Result<BindAddress, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(BindAddress::Off);
    }
    let invalid = || format!("{text:?} is not an address: use HOST:PORT, :PORT, or 0 for none");
    let (host, port) = text.rsplit_once(':').ok_or_else(invalid)?;
    let port: u16 = port.parse().map_err(|_| invalid())?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = match host {
        "" => std::net::IpAddr::from([0, 0, 0, 0]),
        "localhost" => std::net::IpAddr::from([127, 0, 0, 1]),
        other => other.parse().map_err(|_| invalid())?,
    };
    Ok(BindAddress::At(SocketAddr::new(ip, port)))
}

/// The `tracing` filter directive for a zap log level (`--zap-log-level`).
pub fn zap_level_filter(level: &str) -> Result<&'static str, String> {
    match level.trim().to_ascii_lowercase().as_str() {
        "debug" => Ok("debug"),
        "info" => Ok("info"),
        "warn" | "warning" => Ok("warn"),
        "error" | "dpanic" | "panic" | "fatal" => Ok("error"),
        number => match number.parse::<i32>() {
            Ok(verbosity) if verbosity > 0 => Ok("debug"),
            Ok(_) => Ok("info"),
            Err(_) => Err(format!(
                "--zap-log-level {level:?}: use debug, info, error or a number"
            )),
        },
    }
}

impl Args {
    /// The log filter `--zap-log-level` asks for, if it was given.
    ///
    /// # Errors
    /// For a level zap does not know.
    pub fn log_filter(&self) -> Result<Option<&'static str>, String> {
        self.zap_log_level
            .as_deref()
            .map(zap_level_filter)
            .transpose()
    }
}

/// A client for the kubeconfig (or the default configuration) whose requests `metrics`
/// counts.
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    metrics: &Metrics,
    rate: Option<ClientRateLayer>,
) -> anyhow::Result<kube::Client> {
    let config = crate::kube_client::config(kubeconfig, context, "controller").await?;
    match rate {
        Some(rate) => Ok(kube::client::ClientBuilder::try_from(config)
            .context("creating the API client")?
            .with_layer(&metrics.api_layer())
            .with_layer(&rate)
            .build()),
        None => instrumented_client(config, metrics),
    }
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
        resource_graph_definition_concurrent_reconciles,
        apply_concurrency,
        cel_cost_limit,
        metrics_addr,
        health_probe_bind_address,
        leader_elect,
        leader_election_namespace,
        lease_duration,
        renew_deadline,
        retry_period,
        graceful_shutdown_timeout,
        reconcile_timeout,
        client_qps,
        client_burst,
        rgd_max_collection_size,
        rgd_max_collection_dimension_size,
        rgd_max_graph_revisions,
        rgd_progress_requeue_delay,
        allow_crd_deletion,
        record_active_events,
        feature_gates,
        zap_log_level: _,
        upstream_only,
    } = args;
    for flag in upstream_only.given() {
        eprintln!(
            "warning: {flag} is accepted for upstream kro's compatibility and has no effect here (see docs/controller.md)"
        );
    }
    let settings = Settings {
        workers: usize::from(workers),
        rgd_workers: usize::from(
            resource_graph_definition_concurrent_reconciles.unwrap_or(workers),
        ),
        apply_concurrency: usize::from(apply_concurrency),
        cel_cost_limit: if cel_cost_limit == 0 {
            kro_cel::DEFAULT_COST_LIMIT
        } else {
            cel_cost_limit
        },
        max_collection_size: rgd_max_collection_size,
        max_collection_dimensions: rgd_max_collection_dimension_size,
        max_graph_revisions: rgd_max_graph_revisions,
        progress_requeue_delay: rgd_progress_requeue_delay,
        allow_crd_deletion,
        reconcile_timeout,
        active_events: record_active_events,
        features: feature_gates,
        ..Settings::default()
    };
    eprintln!("kro controller: feature gates {}", settings.features);
    let rate = ClientRateLayer::new(ClientRate {
        qps: client_qps,
        burst: client_burst,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let metrics = Metrics::new();
        let rate = rate.map(|rate| rate.observed_in(&metrics));
        let client = client(kubeconfig.as_deref(), context.as_deref(), &metrics, rate).await?;
        let readiness = Readiness::new();
        if let BindAddress::At(address) = metrics_addr {
            let bound = serve_metrics(address, metrics.clone(), readiness.clone()).await?;
            eprintln!("kro controller: metrics at http://{bound}/metrics");
        }
        if let BindAddress::At(address) = health_probe_bind_address {
            let bound = serve_health(address, readiness.clone()).await?;
            eprintln!("kro controller: health probes at http://{bound}/healthz and /readyz");
        }
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

/// `--reconcile-timeout`: a duration above zero (a reconcile allowed no time would never
/// finish one).
fn parse_reconcile_timeout(text: &str) -> Result<Duration, String> {
    let timeout = crate::duration::parse_duration(text)?;
    if timeout.is_zero() {
        return Err("a reconcile needs some time: give a duration above zero".to_owned());
    }
    Ok(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reconcile_timeout_is_a_duration_above_zero() {
        assert_eq!(parse_reconcile_timeout("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_reconcile_timeout("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_reconcile_timeout("0s").is_err());
        assert!(parse_reconcile_timeout("soon").is_err());
    }

    #[test]
    fn bind_addresses_read_as_controller_runtime_reads_them() {
        let at = |text: &str| parse_bind_address(text).map_err(|_| text.to_owned());
        assert_eq!(at("0"), Ok(BindAddress::Off));
        assert_eq!(
            at(":8079"),
            Ok(BindAddress::At("0.0.0.0:8079".parse().expect("an address")))
        );
        assert_eq!(
            at("127.0.0.1:0"),
            Ok(BindAddress::At("127.0.0.1:0".parse().expect("an address")))
        );
        assert_eq!(
            at("localhost:8078"),
            Ok(BindAddress::At(
                "127.0.0.1:8078".parse().expect("an address")
            ))
        );
        assert_eq!(
            at("[::1]:8078"),
            Ok(BindAddress::At("[::1]:8078".parse().expect("an address")))
        );
        for bad in ["", "8078", ":http", "example.com:80", ":99999"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn zap_levels_map_onto_tracing_levels() {
        for (zap, tracing) in [
            ("debug", "debug"),
            ("info", "info"),
            ("error", "error"),
            ("panic", "error"),
            ("2", "debug"),
            ("0", "info"),
        ] {
            assert_eq!(zap_level_filter(zap), Ok(tracing), "{zap}");
        }
        assert!(zap_level_filter("chatty").is_err());
    }
}
