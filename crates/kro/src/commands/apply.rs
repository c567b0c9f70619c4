//! `kro apply -f RGD -i INSTANCE`: deploys one instance's graph straight to a cluster, with
//! no kro controller there — the controller's own evaluator and apply engine, run once
//! ([`kro_engine::direct`]). Progress on standard error, the instance with its status on
//! standard output; exit 0 only when every resource is ready.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use kro_engine::direct::{
    ApplyFailure, DirectConfig, DirectEngine, Progress, Rollback, Stop, StopHandle,
};
use kro_graph::CompiledGraph;
use serde_json::{Value, json};

use crate::commands::render::{check_instance_names, graph_of, read_instance};
use crate::output::{OutputFormat, to_text};
use crate::progress::Display;
use crate::rgd_files::{InputArgs, load_and_build};

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

/// What an RGD file and an instance file give.
pub(crate) struct Deployable {
    /// The instance's compiled graph.
    pub(crate) graph: CompiledGraph,
    /// The RGD document.
    pub(crate) rgd: Value,
    /// The instance.
    pub(crate) instance: Value,
}

/// The RGDs and the cluster: flags `kro apply` and `kro delete` share.
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The RGD (a file, a directory of .yaml/.yml/.json files, or `-`). Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// CustomResourceDefinitions whose kinds the RGDs use, when the cluster does not serve
    /// them yet. Repeatable.
    #[arg(long = "crds", value_name = "PATH")]
    crds: Vec<PathBuf>,
    /// The kubeconfig (by default `KUBECONFIG`, then `~/.kube/config`).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (by default its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// The instance's namespace, when its file names none (by default the context's, or
    /// `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub(crate) namespace: Option<String>,
}

impl Target {
    /// The kubeconfig file in use, when one exists.
    fn kubeconfig_path(&self) -> Option<PathBuf> {
        if let Some(path) = &self.kubeconfig {
            return Some(path.clone());
        }
        if let Some(paths) = std::env::var_os("KUBECONFIG") {
            return std::env::split_paths(&paths).find(|path| path.is_file());
        }
        let home = std::env::var_os("HOME")?;
        Some(Path::new(&home).join(".kube").join("config")).filter(|path| path.is_file())
    }

    /// Builds the RGDs (with the schemas of the kinds they use read from the cluster) and
    /// reads the instance. `None` when diagnostics were printed.
    pub(crate) fn graph_and_instance(
        &self,
        instance_path: &Path,
    ) -> anyhow::Result<Option<Deployable>> {
        let input = InputArgs {
            files: self.files.clone(),
            recursive: self.recursive,
            crds: self.crds.clone(),
            kubeconfig: self.kubeconfig_path(),
            context: self.context.clone(),
        };
        let workspace = load_and_build(&input)?;
        workspace.print_diagnostics();
        if workspace.has_errors() {
            return Ok(None);
        }
        let instance = read_instance(instance_path)?;
        if let Err(problem) = check_instance_names(&instance) {
            bail!("{}: {problem}", instance_path.display());
        }
        let built = graph_of(&workspace, instance_path, &instance)?;
        let rgd = serde_json::to_value(&built.loaded.rgd).context("the RGD as JSON")?;
        Ok(built.graph.clone().map(|graph| Deployable {
            graph,
            rgd,
            instance,
        }))
    }

    /// A client for the cluster, naming `command` in its `User-Agent`.
    pub(crate) async fn client(&self, command: &str) -> anyhow::Result<kube::Client> {
        let options = kube::config::KubeConfigOptions {
            context: self.context.clone(),
            ..kube::config::KubeConfigOptions::default()
        };
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let file = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("{}: cannot read the kubeconfig", path.display()))?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .with_context(|| format!("{}: cannot use the kubeconfig", path.display()))?
            }
            None if self.context.is_some() => kube::Config::from_kubeconfig(&options)
                .await
                .context("cannot use the kubeconfig")?,
            None => kube::Config::infer()
                .await
                .context("no kubeconfig and not in a cluster")?,
        };
        crate::kube_client::identify(&mut config, command);
        kube::Client::try_from(config).context("creating the API client")
    }

    /// The namespace given with `-n`, else the client's default.
    pub(crate) fn namespace(&self, client: &kube::Client) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned())
    }

    /// Whether RGD files were given.
    pub(crate) fn has_files(&self) -> bool {
        !self.files.is_empty()
    }
}

/// Sets the instance's namespace (for a namespaced kind) as kubectl would: the file's, which
/// must then agree with `-n`, else `-n` or the context's.
pub(crate) fn settle_namespace(
    graph: &CompiledGraph,
    instance: &mut Value,
    flag: Option<&str>,
    default: &str,
) -> anyhow::Result<()> {
    if graph.names.scope != kro_graph::Scope::Namespaced {
        return Ok(());
    }
    let from_file = instance
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match (from_file, flag) {
        (Some(file), Some(flag)) if file != flag => bail!(
            "the namespace from the instance ({file:?}) does not match the namespace {flag:?}: \
             pass --namespace={file} or leave the namespace out of the file"
        ),
        (Some(_), _) => {}
        (None, flag) => instance["metadata"]["namespace"] = json!(flag.unwrap_or(default)),
    }
    Ok(())
}

/// Stops `handle` on Ctrl-C, saying so.
pub(crate) fn stop_on_ctrl_c(handle: StopHandle) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "interrupted: finishing what is in flight, starting nothing new (Ctrl-C again to exit at once)"
            );
            handle.stop();
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted again: exiting now, leaving what is in flight");
                std::process::exit(130);
            }
        }
    });
}

/// Deploys the instance and prints it with its status.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.target.has_files() {
        bail!("kro apply needs the RGD: pass it with -f");
    }
    let Some(Deployable {
        graph,
        rgd,
        mut instance,
    }) = args.target.graph_and_instance(&args.instance)?
    else {
        return Ok(ExitCode::FAILURE);
    };
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
    runtime.block_on(async move {
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
            timeout: Some(args.timeout),
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
    })
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
