//! `kro completions SHELL`: a completion script generated from the command definition, so it
//! can never fall out of date with the flags.

use std::io;
use std::process::ExitCode;

use clap_complete::Shell;

/// Flags of `kro completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Writes the completion script of `command` (the whole `kro` command line) for the chosen
/// shell to standard output.
pub fn run(args: Args, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let Args { shell } = args;
    clap_complete::generate(shell, &mut command, "kro", &mut io::stdout());
    Ok(ExitCode::SUCCESS)
}
