//! `kro render -f RGD -i INSTANCE`: what kro would do for one instance, without a cluster —
//! the desired objects level by level, what waits and why, and the status it would write.
//! The same evaluator as the controller (`kro-runtime`), so the preview cannot drift.

use std::path::PathBuf;
use std::process::ExitCode;

use kro_graph::{CompiledGraph, FieldPath, NodeKind};
use kro_runtime::{
    NodePlan, NodeState, Observed, Plan, PlanOptions, Scheduling, admit, converge, plan,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::instance_file::{check_instance_names, graph_of, read_instance};
use crate::output::{OutputFormat, to_text};
use crate::rgd_files::{BuiltRgd, InputArgs, LoadedRgd, load_and_build, read_yaml_documents};

/// The most plans `--assume-applied` computes before it stops.
const MAX_ROUNDS: usize = 100;

/// Flags of `kro render`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// The instance to render: a YAML or JSON file holding one object of the RGD's kind, or
    /// `-` for standard input.
    #[arg(short = 'i', long = "instance", value_name = "FILE")]
    instance: PathBuf,
    /// Objects as they exist in the cluster (files or directories; `List` objects are
    /// unpacked). Anything not given does not exist. Repeatable.
    #[arg(long, value_name = "FILE_OR_DIR")]
    observed: Vec<PathBuf>,
    /// How nodes wait for each other: the level barrier, or each node for its own
    /// dependencies only.
    #[arg(long, value_enum, default_value_t = Mode::Levels)]
    mode: Mode,
    /// Treat every planned object as applied and plan again, to a fixed point: the whole
    /// graph, as far as it does not depend on status only a real controller would write.
    #[arg(long)]
    assume_applied: bool,
    /// Also treat readyWhen conditions that do not hold yet as met (implies
    /// --assume-applied); each assumption is listed.
    #[arg(long)]
    assume_ready: bool,
    /// The instant `time.now()` reads (RFC 3339; gate CELTimeFunctions), by default this
    /// machine's clock. The report says when the outcome changes next (`requeueAt`).
    #[arg(long, value_name = "TIME", value_parser = parse_now)]
    now: Option<kro_cel::Timestamp>,
    /// The report's format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    output: OutputFormat,
}

/// `--now`: an RFC 3339 instant.
fn parse_now(text: &str) -> Result<kro_cel::Timestamp, String> {
    kro_cel::Timestamp::parse(text).map_err(|error| {
        format!("{text:?} is not an RFC 3339 time (2026-03-29T07:00:00Z): {error}")
    })
}

/// The scheduling modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Levels,
    Wavefront,
}

/// Builds the RGD, admits the instance as the API server would, plans it and prints the report.
/// Exits 1 when the RGD, the instance or any node has an error.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = load_and_build(&args.input)?;
    workspace.print_diagnostics();
    if workspace.has_errors() {
        return Ok(ExitCode::FAILURE);
    }
    let instance = read_instance(&args.instance)?;
    if let Err(problem) = check_instance_names(&instance) {
        eprintln!("{}: {problem}", args.instance.display());
        return Ok(ExitCode::FAILURE);
    }
    let built = graph_of(&workspace, &args.instance, &instance)?;
    let Some(graph) = &built.graph else {
        return Ok(ExitCode::FAILURE);
    };
    let admitted = match admit(graph, &instance) {
        Ok(admitted) => admitted,
        Err(error) => {
            eprintln!("{}: {error}", args.instance.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    for field in &admitted.pruned {
        eprintln!("Warning: unknown field \"{field}\"");
    }
    let mut instance = admitted.instance;
    stamp_server_fields(graph, &mut instance);

    let mut observed = Observed::complete();
    for path in &args.observed {
        for (_, document) in read_yaml_documents(path, true)? {
            for object in unpack(document.value) {
                if !observed.insert(object) {
                    eprintln!(
                        "Warning: {}: an observed object without apiVersion, kind and metadata.name is ignored",
                        path.display()
                    );
                }
            }
        }
    }
    let options = PlanOptions {
        scheduling: match args.mode {
            Mode::Levels => Scheduling::Levels,
            Mode::Wavefront => Scheduling::Wavefront,
        },
        assume_ready: args.assume_ready,
        clock: Some(match args.now {
            Some(now) => now,
            None => system_now()?,
        }),
        ..PlanOptions::default()
    };
    let (planned, rounds) = if args.assume_applied || args.assume_ready {
        let convergence = converge(graph, &instance, observed, &options, MAX_ROUNDS);
        (convergence.plan, convergence.rounds)
    } else {
        (plan(graph, &instance, &observed, &options), 1)
    };
    let report = report(graph, &instance, &planned, args.mode, rounds);
    print!("{}", to_text(&report, args.output)?);
    let failed = print_errors(built_loaded(built), &planned);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// This machine's clock as a CEL timestamp.
fn system_now() -> anyhow::Result<kro_cel::Timestamp> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|error| anyhow::anyhow!("the system clock is before 1970: {error}"))?;
    let seconds = i64::try_from(since_epoch.as_secs())
        .map_err(|error| anyhow::anyhow!("the system clock is out of range: {error}"))?;
    kro_cel::Timestamp::new(seconds, since_epoch.subsec_nanos())
        .map_err(|error| anyhow::anyhow!("the system clock is out of range: {error}"))
}

fn built_loaded(built: &BuiltRgd) -> &LoadedRgd {
    &built.loaded
}

/// Node errors on standard error, at their place in the RGD file. `true` when there was one.
fn print_errors(loaded: &LoadedRgd, planned: &Plan) -> bool {
    let location = |path: &FieldPath| {
        loaded
            .source_map
            .nearest(path)
            .map(|at| format!("{at}:"))
            .unwrap_or_default()
    };
    let mut failed = false;
    for node in &planned.nodes {
        if let NodeState::Failed(error) = &node.state {
            failed = true;
            let at = location(&error.path);
            eprintln!("{}:{at} error: resource {}: {error}", loaded.file, node.id);
        }
    }
    for error in &planned.status.errors {
        failed = true;
        eprintln!("{}:{} error: {error}", loaded.file, location(&error.path));
    }
    failed
}

/// Fields the API server sets on create, so that labels and conditions look as they will:
/// the namespace kubectl would default to, a generation.
fn stamp_server_fields(graph: &CompiledGraph, instance: &mut Value) {
    let Some(metadata) = instance.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if graph.names.scope == kro_graph::Scope::Namespaced && !metadata.contains_key("namespace") {
        metadata.insert("namespace".to_owned(), json!("default"));
    }
    metadata.entry("generation").or_insert(json!(1));
}

/// A `List` (`v1 List`, `ConfigMapList`, ...) unpacked into its items.
fn unpack(value: Value) -> Vec<Value> {
    let is_list = value["kind"]
        .as_str()
        .is_some_and(|kind| kind.ends_with("List"))
        && value["items"].is_array();
    if is_list {
        match value {
            Value::Object(mut object) => match object.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    } else {
        vec![value]
    }
}

/// What `kro render` prints, in this field order.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    instance: InstanceRef,
    mode: &'static str,
    /// Plans computed (more than one with --assume-applied).
    rounds: usize,
    levels: Vec<LevelReport>,
    status: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pending_status: Vec<PendingReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reads: Vec<String>,
    /// When what reads the time changes its answer (gate CELTimeFunctions).
    #[serde(skip_serializing_if = "Option::is_none")]
    requeue_at: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InstanceRef {
    api_version: Value,
    kind: Value,
    name: Value,
    #[serde(skip_serializing_if = "Value::is_null")]
    namespace: Value,
}

#[derive(Debug, Serialize)]
struct LevelReport {
    level: usize,
    nodes: Vec<NodeReport>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeReport {
    id: String,
    kind: String,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    assumed_ready: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    objects: Vec<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingReport {
    field: String,
    expression: String,
    waiting_for: String,
}

/// The report: instance, mode, levels with each node's state and objects, status.
fn report(
    graph: &CompiledGraph,
    instance: &Value,
    planned: &Plan,
    mode: Mode,
    rounds: usize,
) -> Report {
    let levels = planned
        .levels
        .iter()
        .enumerate()
        .map(|(level, indices)| LevelReport {
            level,
            nodes: indices
                .iter()
                .filter_map(|index| planned.nodes.get(*index))
                .map(|node| node_report(graph, node))
                .collect(),
        })
        .collect();
    Report {
        instance: InstanceRef {
            api_version: instance["apiVersion"].clone(),
            kind: instance["kind"].clone(),
            name: instance["metadata"]["name"].clone(),
            namespace: instance["metadata"]["namespace"].clone(),
        },
        mode: match mode {
            Mode::Levels => "levels",
            Mode::Wavefront => "wavefront",
        },
        rounds,
        levels,
        status: planned.status.to_json(),
        pending_status: planned
            .status
            .pending
            .iter()
            .map(|field| PendingReport {
                field: FieldPath::root()
                    .key("status")
                    .join(&field.path)
                    .to_string(),
                expression: field.expression.clone(),
                waiting_for: field.reason.clone(),
            })
            .collect(),
        reads: planned
            .reads
            .iter()
            .map(|read| format!("{read:?}"))
            .collect(),
        requeue_at: planned.requeue_at.map(|at| at.to_string()),
    }
}

fn node_report(graph: &CompiledGraph, node: &NodePlan) -> NodeReport {
    let kind = graph
        .node(&node.id)
        .map(|compiled| match &compiled.kind {
            NodeKind::Template { gvk, .. } if compiled.is_collection() => {
                format!("{} (collection)", gvk.kind())
            }
            NodeKind::Template { gvk, .. } => gvk.kind().to_owned(),
            NodeKind::ExternalRef { gvk, .. } => format!("{} (externalRef)", gvk.kind()),
            NodeKind::Data => "data".to_owned(),
            _ => "unknown".to_owned(),
        })
        .unwrap_or_default();
    let (state, reason) = match &node.state {
        NodeState::Ready => ("Ready", None),
        NodeState::Waiting(wait) => ("Waiting", Some(wait.to_string())),
        NodeState::Skipped(skip) => ("Skipped", Some(skip.to_string())),
        NodeState::Failed(error) => ("Failed", Some(error.to_string())),
    };
    NodeReport {
        id: node.id.to_string(),
        kind,
        state,
        reason,
        assumed_ready: node.assumed.iter().map(ToString::to_string).collect(),
        value: node.value.clone(),
        objects: node
            .desired
            .iter()
            .map(|desired| desired.object.clone())
            .collect(),
    }
}
