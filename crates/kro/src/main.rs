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
    quiet_on_closed_stdout();
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
    // kube-rs logs every failed request as an error of its own; the command reports the
    // failure once, with its cause (`KRO_LOG` still shows them).
    let filter = tracing_subscriber::EnvFilter::try_from_env("KRO_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{level},kube_client::client::builder=off"))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            ExitCode::FAILURE
        }
    }
}

/// The exit status of a process a closed pipe stopped (128 + SIGPIPE), as a shell reports
/// `yes | head -1`.
const CLOSED_PIPE_STATUS: i32 = 141;

/// `kro render ... | head` closes standard output while kro still writes: the standard
/// library's `print!` then panics ("failed printing to stdout: Broken pipe"). What every Unix
/// tool does instead is stop quietly, as SIGPIPE would stop it (Rust ignores SIGPIPE, and this
/// crate forbids the unsafe code that would restore it): that panic ends the process with
/// status 141 and no message; any other panic is reported as before.
fn quiet_on_closed_stdout() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE_STATUS);
        }
        report(info);
    }));
}

/// The error and its causes on one line, each cause once: a message that already says its
/// cause (`listing ...: client error (Connect)`) is not followed by that cause again.
fn error_chain(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug)]
    struct Layer {
        text: &'static str,
        source: Option<Box<Layer>>,
    }

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.text)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.source
                .as_deref()
                .map(|layer| layer as &(dyn std::error::Error + 'static))
        }
    }

    fn layers(texts: &[&'static str]) -> Option<Box<Layer>> {
        texts
            .iter()
            .rev()
            .fold(None, |source, text| Some(Box::new(Layer { text, source })))
    }

    #[test]
    fn each_cause_is_said_once() {
        // As a refused connection reached `kro delete`: each layer's message repeats the next.
        let error = anyhow::Error::new(
            *layers(&[
                "listing parent ConfigMaps in default: ServiceError: client error (Connect)",
                "ServiceError: client error (Connect)",
                "client error (Connect)",
                "tcp connect error",
                "Connection refused (os error 111)",
            ])
            .expect("layers"),
        );
        assert_eq!(
            error_chain(&error),
            "listing parent ConfigMaps in default: ServiceError: client error (Connect): \
             tcp connect error: Connection refused (os error 111)"
        );
        let plain = anyhow::anyhow!("no such file").context("reading rgd.yaml");
        assert_eq!(error_chain(&plain), "reading rgd.yaml: no such file");
    }
}
