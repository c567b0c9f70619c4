//! The signal that ends a long-running command (`kro controller`, `kro dev`, `kro apiserver`).

use anyhow::Context;

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
