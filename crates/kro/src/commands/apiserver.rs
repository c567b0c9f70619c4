//! `kro apiserver`: the embedded Kubernetes-compatible API server, for kubectl, kube-rs and
//! kro itself when there is no cluster.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kro_apiserver::ServerConfig;

/// Arguments of `kro apiserver`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Address to listen on. Anything but loopback exposes the API to the network.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    address: IpAddr,
    /// Write a kubeconfig for the server (with its bearer token) to this path.
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Keep objects in SQLite in this directory (created if missing), with the TLS
    /// credentials and token, so the server can be restarted where it stopped. Without it,
    /// objects live in memory only.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Serve plain HTTP without authentication (by default: HTTPS with a certificate made at
    /// start, and a bearer token, both written into the kubeconfig).
    #[arg(long)]
    insecure: bool,
    /// The simulated cluster controllers to run: `all`, `none` (envtest-like: no status is
    /// written, deleted namespaces stay Terminating, nothing is garbage-collected), or a
    /// comma-separated list of namespaces, garbage-collector, deployments, replicasets,
    /// statefulsets, jobs, pods, services, volumes, autoscalers.
    #[arg(long, value_name = "LIST", default_value = "all")]
    simulators: kro_apiserver::Simulators,
    /// How long a new pod waits before it is bound to the simulated node (`100ms`, `2s`).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::duration::parse_duration)]
    pod_schedule_delay: Duration,
    /// How long a bound pod takes to be Running and Ready.
    #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = crate::duration::parse_duration)]
    pod_ready_delay: Duration,
    /// How long a Job's pod runs before it succeeds.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = crate::duration::parse_duration)]
    job_pod_duration: Duration,
    /// How long a LoadBalancer Service waits for its ingress address.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = crate::duration::parse_duration)]
    load_balancer_delay: Duration,
    /// How long a PersistentVolumeClaim waits to be Bound.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = crate::duration::parse_duration)]
    volume_bind_delay: Duration,
    /// Pods whose labels match this selector fail instead of becoming ready (`app=broken`):
    /// `restartPolicy: Never` pods end Failed, others crash-loop.
    #[arg(long, value_name = "SELECTOR")]
    fail_pods: Option<kro_apiserver::PodSelector>,
    #[command(flatten)]
    faults: FaultArgs,
}

/// Fault injection for trials (`kro apiserver` and `kro dev`): latency and a seeded random
/// fraction of failed requests. They apply to the resource API only (not discovery, OpenAPI
/// or health), and never to the simulated controllers; the requests received are counted by
/// client at `GET /debug/kro/requests`.
#[derive(Debug, Clone, clap::Args)]
pub struct FaultArgs {
    /// Latency added before every resource request is handled (`50ms`, `1s`).
    #[arg(long, value_name = "DURATION", default_value = "0ms", value_parser = crate::duration::parse_duration)]
    latency: Duration,
    /// Fraction of resource requests (0 to 1) answered with an injected error.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    failure_rate: Option<f64>,
    /// Seed of the random sequence choosing the failed requests, to replay a trial (by
    /// default a random seed, logged at start and shown at /debug/kro/requests).
    #[arg(long, value_name = "SEED", requires = "failure_rate")]
    failure_seed: Option<u64>,
    /// Status codes the failures are answered with, chosen at random: any of 409, 429, 500,
    /// 503, 504 (429, 503 and 504 carry Retry-After).
    #[arg(long, value_name = "CODES", value_delimiter = ',', default_value = "500,503,429",
          value_parser = parse_failure_code, requires = "failure_rate")]
    failure_codes: Vec<u16>,
    /// Verbs whose requests may fail (comma-separated: get, list, watch, create, update,
    /// patch, delete, deletecollection); by default all. A watch fails only when it is
    /// requested, never once it streams.
    #[arg(long, value_name = "VERBS", value_delimiter = ',', value_parser = parse_failure_verb,
          requires = "failure_rate")]
    failure_verbs: Vec<String>,
}

impl FaultArgs {
    /// The latency and failure rate these flags ask for.
    ///
    /// # Errors
    /// A rate, code or verb the knobs refuse (clap has checked each already).
    pub fn knobs(&self) -> anyhow::Result<(Duration, Option<kro_apiserver::FailureRate>)> {
        let FaultArgs {
            latency,
            failure_rate,
            failure_seed,
            failure_codes,
            failure_verbs,
        } = self;
        let Some(rate) = failure_rate else {
            return Ok((*latency, None));
        };
        let mut rate = kro_apiserver::FailureRate::new(*rate)
            .and_then(|rate| rate.with_codes(failure_codes))
            .and_then(|rate| rate.with_verbs(failure_verbs))
            .context("--failure-rate")?;
        if let Some(seed) = failure_seed {
            rate = rate.with_seed(*seed);
        }
        Ok((*latency, Some(rate)))
    }
}

/// Says which faults are injected, with the seed that replays them.
pub fn report_faults(server: &kro_apiserver::RunningServer) {
    if !server.latency().is_zero() {
        eprintln!(
            "kro apiserver: adding {:?} to every resource request",
            server.latency()
        );
    }
    if let Some((rate, seed)) = server.failure_rate() {
        eprintln!(
            "kro apiserver: failing {} of resource requests with {:?} (--failure-seed {seed})",
            rate.rate(),
            rate.codes()
        );
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number between 0 and 1"))?;
    kro_apiserver::FailureRate::new(rate)
        .map(|_| rate)
        .map_err(|error| error.to_string())
}

fn parse_failure_code(text: &str) -> Result<u16, String> {
    let code: u16 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not an HTTP status code"))?;
    if kro_apiserver::knobs::SUPPORTED_CODES.contains(&code) {
        Ok(code)
    } else {
        Err(kro_apiserver::KnobError::UnsupportedCode { code }.to_string())
    }
}

fn parse_failure_verb(text: &str) -> Result<String, String> {
    let verb = text.trim();
    if kro_apiserver::knobs::FAILURE_VERBS.contains(&verb) {
        Ok(verb.to_owned())
    } else {
        Err(kro_apiserver::KnobError::UnknownVerb {
            verb: verb.to_owned(),
        }
        .to_string())
    }
}

/// Runs the server until interrupted.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (latency, failure_rate) = args.faults.knobs()?;
    let config = ServerConfig {
        latency,
        failure_rate,
        address: SocketAddr::new(args.address, args.port),
        token: (!args.insecure).then(kro_apiserver::random_token),
        tls: !args.insecure,
        data_dir: args.data_dir.clone(),
        simulators: args.simulators.clone(),
        simulation: kro_apiserver::SimulationKnobs {
            pod_schedule_delay: args.pod_schedule_delay,
            pod_ready_delay: args.pod_ready_delay,
            job_pod_duration: args.job_pod_duration,
            load_balancer_delay: args.load_balancer_delay,
            volume_bind_delay: args.volume_bind_delay,
            failing_pods: args.fail_pods.clone(),
        },
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let server = kro_apiserver::start(config).await?;
        let kubeconfig = server.kubeconfig();
        match &args.kubeconfig_out {
            Some(path) => {
                kro_apiserver::write_private(path, &kubeconfig).with_context(|| {
                    format!("cannot write the kubeconfig to {}", path.display())
                })?;
                eprintln!(
                    "kro apiserver: serving {} (kubeconfig: {})",
                    server.url(),
                    path.display()
                );
            }
            None => eprintln!("kro apiserver: serving {}", server.url()),
        }
        report_faults(&server);
        crate::commands::controller::shutdown_signal().await?;
        eprintln!("kro apiserver: stopping");
        server.shutdown().await;
        eprintln!("kro apiserver: stopped");
        Ok(ExitCode::SUCCESS)
    })
}
