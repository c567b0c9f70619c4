//! `kro delete -f RGD -i INSTANCE` or `kro delete NAME`: deletes what `kro apply` deployed
//! for an instance — its objects in reverse apply order, each wave at once and confirmed gone
//! before the next, then the ConfigMap that stood in for the instance. Objects whose lifecycle
//! retains them (or all, with `--detach` or an instance annotated
//! `kro.run/detach-on-deletion`) are released instead.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use kro_engine::direct::{DirectConfig, DirectEngine, ParentRef, Progress, Stop};

use crate::progress::Display;
use crate::target::{Deployable, Target, settle_namespace, stop_on_ctrl_c};

/// Flags of `kro delete`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The instance's name (its objects are found by their labels); or give the RGD and the
    /// instance file with -f and -i.
    #[arg(
        value_name = "NAME",
        required_unless_present = "instance",
        conflicts_with = "instance"
    )]
    name: Option<String>,
    #[command(flatten)]
    target: Target,
    /// The instance file (with -f).
    #[arg(
        short = 'i',
        long = "instance",
        value_name = "FILE",
        requires = "files"
    )]
    instance: Option<PathBuf>,
    /// Release every object instead of deleting it: it stays, without kro's labels and
    /// field managers (as for an instance annotated kro.run/detach-on-deletion: "true").
    /// Objects whose lifecycle retains them are released either way.
    #[arg(long)]
    detach: bool,
    /// How long to wait for everything to be gone.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse_duration)]
    timeout: Duration,
}

/// Deletes the instance's objects and its parent ConfigMap.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // One deadline for the whole command: reading schemas, then the run.
    let started = std::time::Instant::now();
    let from_files = match &args.instance {
        Some(path) => match args.target.graph_and_instance(path, Some(args.timeout))? {
            Some(found) => Some(found),
            None => return Ok(ExitCode::FAILURE),
        },
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let timeout = args.timeout.saturating_sub(started.elapsed());
    runtime.block_on(crate::target::within_deadline(started + args.timeout, args.timeout, async move {
        let client = args.target.client("delete").await?;
        let default = args.target.namespace(&client);
        let config = DirectConfig {
            timeout: Some(timeout),
            detach: args.detach,
            ..DirectConfig::default()
        };
        let engine = DirectEngine::new(client, config);
        let (graph, parent) = match from_files {
            Some(Deployable {
                graph,
                mut instance,
                ..
            }) => {
                settle_namespace(&graph, &mut instance, args.target.namespace.as_deref(), &default)?;
                let parent = ParentRef::of_instance(&graph, &instance, &engine.config().parent_namespace)?;
                (Some(graph), parent)
            }
            None => {
                let name = args.name.as_deref().unwrap_or_default();
                let mut found = engine.find(&default, name).await?;
                match found.len() {
                    0 => bail!(
                        "no instance named {name:?} was deployed with kro apply in namespace {default:?}"
                    ),
                    1 => (None, found.remove(0)),
                    _ => bail!(
                        "{} instances named {name:?} in namespace {default:?} (their parents: {}): \
                         say which with -f RGD -i INSTANCE",
                        found.len(),
                        found
                            .iter()
                            .map(|parent| parent.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
        };
        let (handle, stop) = Stop::new();
        stop_on_ctrl_c(handle);
        let display = Display::new("");
        let released = std::sync::atomic::AtomicUsize::new(0);
        let show = |progress: &Progress| {
            if matches!(progress, Progress::Released { .. }) {
                released.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            display.show(progress);
        };
        let deleted = engine.delete(&parent, graph.as_ref(), &show, &stop).await;
        display.finish();
        match deleted {
            Ok(deleted) => {
                let released = released.load(std::sync::atomic::Ordering::Relaxed);
                if released > 0 {
                    println!(
                        "deleted {} object(s) and {parent}; released {released} object(s), which stay",
                        deleted.len()
                    );
                } else {
                    println!("deleted {} object(s) and {parent}", deleted.len());
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(error) => {
                eprintln!("error: {error}");
                Ok(ExitCode::FAILURE)
            }
        }
    }))
}
