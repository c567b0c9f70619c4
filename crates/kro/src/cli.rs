//! The command line: one `Cli` with a `Command` per subcommand.

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
    /// Follow, list and undo the rollout of an RGD's revisions over its instances.
    Rollout(crate::commands::rollout::Args),
}
