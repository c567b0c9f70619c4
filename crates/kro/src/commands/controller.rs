//! `kro controller`: the kro controllers against any API server the kubeconfig names.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use kro_controller::{Manager, Settings};

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
}

impl Args {
    /// The controller settings these flags ask for.
    pub fn settings(&self) -> Settings {
        Settings {
            workers: usize::from(self.workers),
            apply_concurrency: usize::from(self.apply_concurrency),
            ..Settings::default()
        }
    }
}

/// A client for the kubeconfig (or the default configuration).
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
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
    kube::Client::try_from(config).context("creating the API client")
}

/// Runs the controllers until interrupted (Ctrl-C or SIGTERM), then stops them gracefully.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let client = client(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let manager = Manager::start(client, args.settings())
            .await
            .context("cannot start the controllers")?;
        eprintln!("kro controller: running");
        shutdown_signal().await?;
        eprintln!("kro controller: stopping");
        manager.shutdown().await;
        Ok(ExitCode::SUCCESS)
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
