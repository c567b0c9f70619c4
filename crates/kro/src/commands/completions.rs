//! `kro completions SHELL`: a completion script generated from the command definition, so it
//! can never fall out of date with the flags.

use std::io;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// Flags of `kro completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Writes the completion script for the chosen shell to standard output.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { shell } = args;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "kro", &mut io::stdout());
    Ok(ExitCode::SUCCESS)
}
