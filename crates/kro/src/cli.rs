//! The command line: one `Cli` with a `Command` per subcommand.

use std::time::Duration;

use clap::{Parser, Subcommand};

/// kro turns ResourceGraphDefinitions into Kubernetes APIs and reconciles their instances.
#[derive(Debug, Parser)]
#[command(name = "kro", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The log filter the command's own flags ask for (`kro controller --zap-log-level`),
    /// used when `KRO_LOG` is not set.
    ///
    /// # Errors
    /// For a level that is not one.
    pub fn log_filter(&self) -> Result<Option<&'static str>, String> {
        match &self.command {
            Command::Controller(args) => args.log_filter(),
            _ => Ok(None),
        }
    }
}

/// The subcommands of `kro`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the embedded Kubernetes-compatible API server (no cluster needed).
    Apiserver(crate::commands::apiserver::Args),
    /// Deploy one instance of an RGD straight to a cluster, with no kro controller there.
    Apply(crate::commands::apply::Args),
    /// Delete what `kro apply` deployed for an instance.
    Delete(crate::commands::delete::Args),
    /// Run the kro controllers against a cluster: RGDs become APIs, instances become resources.
    Controller(Box<crate::commands::controller::Args>),
    /// Run a whole kro environment in one process: the embedded API server with a simulated
    /// cluster, and the controllers (no cluster needed).
    Dev(crate::commands::dev::Args),
    /// Print a shell completion script for kro to standard output.
    Completions(crate::commands::completions::Args),
    /// Evaluate a CEL expression in kro's CEL environment and print the result as JSON.
    Eval(crate::commands::eval::Args),
    /// Check ResourceGraphDefinitions offline: schema, expressions, types, dependencies.
    Validate(crate::commands::validate::Args),
    /// Generate the objects kro derives from ResourceGraphDefinitions.
    Generate(crate::commands::generate::Args),
    /// Draw the dependency graph of a ResourceGraphDefinition by levels.
    Graph(crate::commands::graph::Args),
    /// Show what kro would apply for an instance, level by level, and the status it would write.
    Render(crate::commands::render::Args),
}

/// A duration written `250ms`, `2s` or `1m`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: use a number with ms, s or m"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number.saturating_mul(60))),
        _ => Err(format!(
            "{text:?} is not a duration: use a number with ms, s or m"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("fast").is_err());
    }
}

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

#[cfg(test)]
mod identify_tests {
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
