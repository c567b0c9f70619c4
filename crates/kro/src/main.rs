//! `kro`: the one binary users run. It parses flags and hands each subcommand to the library
//! crates that implement it; no product logic lives here.

mod cli;
mod commands;
mod live_schemas;
mod output;
mod rgd_files;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
