//! `kro apiserver`: the embedded Kubernetes-compatible API server, for kubectl, kube-rs and
//! kro itself when there is no cluster.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// The simulated cluster controllers to run: `all`, `none` (envtest-like: deleted
    /// namespaces stay Terminating), or a comma-separated list (`namespaces`).
    #[arg(long, value_name = "LIST", default_value = "all")]
    simulators: kro_apiserver::Simulators,
}

/// Runs the server until interrupted.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = ServerConfig {
        address: SocketAddr::new(args.address, args.port),
        token: (!args.insecure).then(kro_apiserver::random_token),
        tls: !args.insecure,
        data_dir: args.data_dir.clone(),
        simulators: args.simulators.clone(),
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
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")?;
        eprintln!("kro apiserver: stopping");
        server.stop();
        Ok(ExitCode::SUCCESS)
    })
}
