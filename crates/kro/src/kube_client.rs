//! The kube clients this binary makes: the `User-Agent` naming kro and the command, and a
//! client whose requests the controllers' metrics count.

use anyhow::Context;
use kro_controller::Metrics;

/// Names this program in every request `config` makes, as kube-apiserver's audit log and
/// request metrics show clients: `kro/v<version> (<os>/<arch>) <command>`, in client-go's
/// form (`kubectl/v1.33.0 (linux/amd64) kubernetes/…`). Without it a kube-rs client sends no
/// `User-Agent` at all.
pub(crate) fn identify(config: &mut kube::Config, command: &str) {
    let agent = format!(
        "kro/v{} ({}/{}) {command}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    if let Ok(value) = axum::http::HeaderValue::from_str(&agent) {
        config
            .headers
            .retain(|(name, _)| name != axum::http::header::USER_AGENT);
        config.headers.push((axum::http::header::USER_AGENT, value));
    }
}

/// The client configuration of `kubeconfig` (else the default kubeconfig, or the pod's service
/// account in a cluster) at `context` (else the current one), naming `command` in its
/// `User-Agent`.
pub(crate) async fn config(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    command: &str,
) -> anyhow::Result<kube::Config> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..kube::config::KubeConfigOptions::default()
    };
    let mut config = match kubeconfig {
        Some(path) => {
            let text = crate::bounded_read::read_file(path, "the kubeconfig")?;
            let file = kube::config::Kubeconfig::from_yaml(&text)
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
    identify(&mut config, command);
    Ok(config)
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_user_agent_names_the_version_and_command() {
        let mut config = kube::Config::new("http://127.0.0.1:1".parse().expect("a URL"));
        super::identify(&mut config, "apply");
        super::identify(&mut config, "controller");
        let agents: Vec<_> = config
            .headers
            .iter()
            .filter(|(name, _)| name == axum::http::header::USER_AGENT)
            .map(|(_, value)| value.to_str().expect("ASCII").to_owned())
            .collect();
        assert_eq!(agents.len(), 1, "one User-Agent: {agents:?}");
        assert!(
            agents[0].starts_with(&format!("kro/v{} (", env!("CARGO_PKG_VERSION")))
                && agents[0].ends_with(") controller"),
            "{}",
            agents[0]
        );
    }
}
