//! `kro apply -f RGD -i INSTANCE`: deploys one instance's graph straight to a cluster, with
//! no kro controller there — the controller's own evaluator and apply engine, run once
//! ([`kro_engine::direct`]). Progress on standard error, the instance with its status on
//! standard output; exit 0 only when every resource is ready.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use kro_engine::direct::{ApplyFailure, DirectConfig, DirectEngine, Progress, Rollback, Stop};
use serde_json::{Value, json};

use crate::output::{OutputFormat, to_text};
use crate::progress::Display;
use crate::target::{Deployable, Target, settle_namespace, stop_on_ctrl_c, within_deadline};

/// Flags of `kro apply`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// The instance to deploy: a YAML or JSON file holding one object of the RGD's kind, or
    /// `-` for standard input.
    #[arg(short = 'i', long = "instance", value_name = "FILE")]
    instance: PathBuf,
    /// How long to wait for every resource to be ready.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse_duration)]
    timeout: Duration,
    /// Apply what can be applied without waiting for readiness, and exit.
    #[arg(long)]
    no_wait: bool,
    /// `server`: send every write with dryRun=All — the cluster admits and validates each
    /// object and stores nothing; readiness is assumed and nothing is pruned (what would be
    /// is listed). For a preview with no cluster at all, use `kro render`.
    #[arg(long, value_enum, value_name = "STRATEGY", default_value_t = DryRun::None, num_args = 0..=1, default_missing_value = "server", require_equals = true)]
    dry_run: DryRun,
    /// On failure, delete what this run created (in reverse levels).
    #[arg(long)]
    rollback_on_failure: bool,
    /// How to print the instance with its status.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    output: OutputFormat,
    /// `direct`: apply the instance's resources here, with no controller. `kro`: apply the
    /// RGD and the instance for the kro controller running in the cluster and wait for them
    /// (Active, then ACTIVE at the instance's generation).
    #[arg(long, value_enum, default_value_t = Mode::Direct)]
    mode: Mode,
}

/// kubectl's dry-run strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DryRun {
    /// Write for real.
    None,
    /// The cluster checks every write and stores nothing.
    Server,
    /// Not offered: `kro render` is the offline preview.
    Client,
}

/// How `kro apply` deploys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Apply the resources from here, with kro's engine.
    Direct,
    /// Hand the RGD and the instance to the kro controller in the cluster.
    Kro,
}

/// Deploys the instance and prints it with its status.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.target.has_files() {
        bail!("kro apply needs the RGD: pass it with -f");
    }
    // One deadline for the whole command: reading schemas, then the run.
    let started = std::time::Instant::now();
    let Some(Deployable {
        graph,
        rgd,
        mut instance,
    }) = args
        .target
        .graph_and_instance(&args.instance, Some(args.timeout))?
    else {
        return Ok(ExitCode::FAILURE);
    };
    let timeout = args.timeout.saturating_sub(started.elapsed());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if args.dry_run == DryRun::Client {
        bail!(
            "--dry-run=client is not offered: `kro render -f RGD -i INSTANCE` previews offline; \
             --dry-run=server has the cluster check every write"
        );
    }
    let dry_run = args.dry_run == DryRun::Server;
    if dry_run && args.mode == Mode::Kro {
        bail!(
            "--dry-run=server applies the resources (--mode direct); with --mode kro the controller would"
        );
    }
    runtime.block_on(within_deadline(
        started + args.timeout,
        args.timeout,
        async move {
            let client = args.target.client("apply").await?;
            let default = args.target.namespace(&client);
            settle_namespace(
                &graph,
                &mut instance,
                args.target.namespace.as_deref(),
                &default,
            )?;
            let config = DirectConfig {
                wait: !args.no_wait,
                timeout: Some(timeout),
                rollback_on_failure: args.rollback_on_failure,
                dry_run,
                ..DirectConfig::default()
            };
            let engine = DirectEngine::new(client, config);
            let (handle, stop) = Stop::new();
            stop_on_ctrl_c(handle);
            let display = Display::new(if dry_run { " (server dry run)" } else { "" });
            let show = |progress: &Progress| display.show(progress);
            if args.mode == Mode::Kro {
                let applied = engine
                    .apply_through_kro(&rgd, &graph, &instance, &show, &stop)
                    .await;
                display.finish();
                return match applied {
                    Ok(instance) => {
                        print!("{}", to_text(&shown(&instance), args.output)?);
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(error) => {
                        eprintln!("error: {error}");
                        Ok(ExitCode::FAILURE)
                    }
                };
            }
            let applied = engine.apply(&graph, &instance, &show, &stop).await;
            display.finish();
            match applied {
                Ok(deployed) => {
                    print!("{}", to_text(&shown(&deployed.instance), args.output)?);
                    if deployed.ready || args.no_wait {
                        Ok(ExitCode::SUCCESS)
                    } else {
                        eprintln!("error: not every resource is ready");
                        Ok(ExitCode::FAILURE)
                    }
                }
                Err(failure) => {
                    report_failure(&failure);
                    if let Some(instance) = &failure.instance {
                        print!("{}", to_text(&shown(instance), args.output)?);
                    }
                    Ok(ExitCode::FAILURE)
                }
            }
        },
    ))
}

/// The instance as printed: its identity, spec and status.
fn shown(instance: &Value) -> Value {
    let metadata = &instance["metadata"];
    let mut shown = json!({
        "apiVersion": instance["apiVersion"],
        "kind": instance["kind"],
        "metadata": {"name": metadata["name"]},
    });
    if let Some(namespace) = metadata.get("namespace") {
        shown["metadata"]["namespace"] = namespace.clone();
    }
    for field in ["spec", "status"] {
        if let Some(value) = instance.get(field) {
            shown[field] = value.clone();
        }
    }
    shown
}

/// The error, what was left created, and what the rollback did, on standard error.
fn report_failure(failure: &ApplyFailure) {
    eprintln!("error: {}", failure.error);
    match &failure.rollback {
        Rollback::NotAsked if !failure.created.is_empty() => eprintln!(
            "created in this run and left in place ({}): {}",
            failure.created.len(),
            failure
                .created
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Rollback::NotAsked => {}
        Rollback::Done(deleted) => eprintln!(
            "rolled back: deleted the {} object(s) this run created",
            deleted.len()
        ),
        Rollback::Failed(error) => eprintln!("rolling back failed too: {error}"),
    }
}
