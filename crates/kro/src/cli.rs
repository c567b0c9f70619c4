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
