//! One module per subcommand; `run` dispatches to them.

pub mod apiserver;
pub mod apply;
pub mod completions;
pub mod controller;
pub mod delete;
pub mod dev;
pub mod eval;
pub mod generate;
pub mod graph;
pub mod render;
pub mod rollout;
pub mod validate;

use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Cli { command } = cli;
    match command {
        Command::Apiserver(args) => apiserver::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Delete(args) => delete::run(args),
        Command::Completions(args) => completions::run(args, Cli::command()),
        Command::Controller(args) => controller::run(*args),
        Command::Dev(args) => dev::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Render(args) => render::run(args),
        Command::Rollout(args) => rollout::run(args),
    }
}
