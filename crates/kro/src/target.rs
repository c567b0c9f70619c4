//! The RGDs and the cluster that `kro apply` and `kro delete` work on: their shared flags,
//! the instance they read, its namespace, the client, and stopping on Ctrl-C.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use kro_engine::direct::StopHandle;
use kro_graph::CompiledGraph;
use serde_json::{Value, json};

use crate::instance_file::{check_instance_names, graph_of, read_instance};
use crate::rgd_files::{InputArgs, load_and_build};

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
    /// The feature gates the RGDs are checked with, as the controller's `--feature-gates`
    /// (`CELOmitFunction=true` lets them use `omit()`); upstream's defaults, all off, unless
    /// given.
    #[arg(long, value_name = "GATES", default_value = "", value_parser = crate::commands::controller::parse_feature_gates)]
    feature_gates: kro_graph::FeatureGates,
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
    /// The schemas are read within `answer_within` when given.
    pub(crate) fn graph_and_instance(
        &self,
        instance_path: &Path,
        answer_within: Option<std::time::Duration>,
    ) -> anyhow::Result<Option<Deployable>> {
        let input = InputArgs {
            files: self.files.clone(),
            recursive: self.recursive,
            crds: self.crds.clone(),
            kubeconfig: self.kubeconfig_path(),
            context: self.context.clone(),
            answer_within,
            feature_gates: self.feature_gates,
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
        let config = crate::kube_client::config(
            self.kubeconfig.as_deref(),
            self.context.as_deref(),
            command,
        )
        .await?;
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

/// Runs a command's requests until `deadline` and [`REQUEST_GRACE`](kro_engine::direct::REQUEST_GRACE)
/// past it: whatever the API server does (accepts connections and never answers, say), the
/// command ends by then, with an error naming the `--timeout` it was given (`asked`).
pub(crate) async fn within_deadline(
    deadline: std::time::Instant,
    asked: std::time::Duration,
    work: impl Future<Output = anyhow::Result<std::process::ExitCode>>,
) -> anyhow::Result<std::process::ExitCode> {
    let grace = kro_engine::direct::REQUEST_GRACE;
    let until = tokio::time::Instant::from_std(deadline) + grace;
    match tokio::time::timeout_at(until, work).await {
        Ok(done) => done,
        Err(_) => {
            eprintln!(
                "error: timed out: no answer from the API server within --timeout {} (and {} for a request under way)",
                crate::duration::format(asked),
                crate::duration::format(grace)
            );
            Ok(std::process::ExitCode::FAILURE)
        }
    }
}
