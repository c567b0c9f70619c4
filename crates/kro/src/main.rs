//! `kro`: the one binary users run. It parses flags and hands each subcommand to the library
//! crates that implement it; no product logic lives here.

mod bounded_read;
mod cli;
mod commands;
mod duration;
mod endpoints;
mod faults;
mod instance_file;
mod kube_client;
mod live_schemas;
mod output;
mod progress;
mod rgd_files;
mod shutdown;
mod target;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc, with its background thread returning freed pages to the system after about ten
/// seconds. glibc's malloc kept what a burst of watches had freed in its per-thread arenas:
/// after 1,100 watches of a 10 MB list `kro apiserver` held 408 MiB with none open (60 MiB
/// before them); with jemalloc it is back to 59 MiB (mimalloc kept 611 MiB). Only this binary
/// chooses the allocator; the library crates leave it to their users.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Logs go to stderr, filtered by `KRO_LOG` (tracing's directive syntax, e.g.
    // `kro_apiserver=debug`); else by the command's own level flag; else warnings and errors
    // only.
    let level = match cli.log_filter() {
        Ok(level) => level.unwrap_or("warn"),
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("KRO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
