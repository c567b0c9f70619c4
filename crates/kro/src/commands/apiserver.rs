//! `kro apiserver`: the embedded Kubernetes-compatible API server, for kubectl, kube-rs and
//! kro itself when there is no cluster.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kro_apiserver::ServerConfig;

use crate::faults::{FaultArgs, report_faults};

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
        crate::shutdown::shutdown_signal().await?;
        eprintln!("kro apiserver: stopping");
        server.shutdown().await;
        eprintln!("kro apiserver: stopped");
        Ok(ExitCode::SUCCESS)
    })
}
