//! `kro generate crd -f FILE [-o yaml|json]`: the CustomResourceDefinitions kro would install
//! for ResourceGraphDefinitions, built offline; `kro generate rgd-crd`: the
//! ResourceGraphDefinition CRD itself, as the controller installs it (the Helm chart's copy is
//! this output); `kro generate graph-revision-crd`: the GraphRevision CRD, likewise;
//! `kro generate instance -f FILE [--name N] [-n NS]`: an instance of each RGD's
//! kind with every required field and every default shown, checked against its CRD.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::output::{OutputFormat, to_text};
use crate::rgd_files::{InputArgs, load_and_visit};

/// Flags of `kro generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to generate.
    #[command(subcommand)]
    what: What,
}

/// The things `kro generate` can produce.
#[derive(Debug, clap::Subcommand)]
enum What {
    /// The instance CRD of each RGD, and its `<Kind>Set` CRD when spec.scaling is set.
    Crd(CrdArgs),
    /// The ResourceGraphDefinition CRD, as the controller installs it.
    RgdCrd(RgdCrdArgs),
    /// The GraphRevision CRD (internal.kro.run), as the controller installs it.
    GraphRevisionCrd(RgdCrdArgs),
    /// An instance of each RGD's kind: every required field with a value its schema accepts,
    /// every default shown.
    Instance(InstanceArgs),
}

/// Flags of `kro generate instance`.
#[derive(Debug, clap::Args)]
struct InstanceArgs {
    #[command(flatten)]
    input: InputArgs,
    /// The instance's name (default: its kind in lower case).
    #[arg(long)]
    name: Option<String>,
    /// The instance's namespace (default: none, so `kubectl apply` uses the current one).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Output format, as kubectl prints it.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    output: OutputFormat,
}

/// Flags of `kro generate rgd-crd` and `kro generate graph-revision-crd`.
#[derive(Debug, clap::Args)]
struct RgdCrdArgs {
    /// Output format, as kubectl prints it.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    output: OutputFormat,
}

/// Flags of `kro generate crd`.
#[derive(Debug, clap::Args)]
struct CrdArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output format: YAML documents separated by `---`, or JSON (a `v1 List` when there is
    /// more than one CRD), as kubectl prints them.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Yaml)]
    output: OutputFormat,
}

/// Builds the RGDs and prints their CRDs; prints the problems and exits 1 instead when any
/// RGD is invalid.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let args = match args.what {
        What::Crd(args) => args,
        What::RgdCrd(args) => {
            let crd = kro_graph::resource_graph_definition_crd();
            print!("{}", render(&[&crd], args.output)?);
            return Ok(ExitCode::SUCCESS);
        }
        What::GraphRevisionCrd(args) => {
            let crd = kro_graph::graph_revision_crd();
            print!("{}", render(&[&crd], args.output)?);
            return Ok(ExitCode::SUCCESS);
        }
        What::Instance(args) => return instances(&args),
    };
    // Only the CRDs are kept of each graph, as soon as it is built.
    let mut count = 0_usize;
    let mut crds: Vec<Value> = Vec::new();
    let workspace = load_and_visit(&args.input, &mut |built| {
        count += 1;
        if let Some(graph) = built.graph {
            crds.push(graph.crd);
            crds.extend(graph.set_crd);
        }
    })?;
    workspace.print_diagnostics();
    if workspace.has_errors() {
        return Ok(ExitCode::FAILURE);
    }
    if count == 0 {
        eprintln!("error: no ResourceGraphDefinition (kro.run/v1alpha1) in the given files");
        return Ok(ExitCode::FAILURE);
    }
    let crds: Vec<&Value> = crds.iter().collect();
    print!("{}", render(&crds, args.output)?);
    Ok(ExitCode::SUCCESS)
}

/// Builds the RGDs and prints an instance of each one's kind; a field the example cannot
/// fill to its schema's liking (a pattern, a CEL rule) is named on stderr.
fn instances(args: &InstanceArgs) -> anyhow::Result<ExitCode> {
    let mut crds: Vec<Value> = Vec::new();
    let mut count = 0_usize;
    let workspace = load_and_visit(&args.input, &mut |built| {
        count += 1;
        if let Some(graph) = built.graph {
            crds.push(graph.crd);
        }
    })?;
    workspace.print_diagnostics();
    if workspace.has_errors() {
        return Ok(ExitCode::FAILURE);
    }
    if count == 0 {
        eprintln!("error: no ResourceGraphDefinition (kro.run/v1alpha1) in the given files");
        return Ok(ExitCode::FAILURE);
    }
    let mut instances = Vec::new();
    for crd in &crds {
        let (instance, problems) =
            example_instance(crd, args.name.as_deref(), args.namespace.as_deref())?;
        let kind = instance["kind"].as_str().unwrap_or_default();
        for problem in problems {
            eprintln!("warning: {kind}: {problem}: set a value its schema accepts");
        }
        instances.push(instance);
    }
    let instances: Vec<&Value> = instances.iter().collect();
    print!("{}", render(&instances, args.output)?);
    Ok(ExitCode::SUCCESS)
}

/// An instance of the kind `crd` defines: `spec` from [`kro_schema::example_value`], and
/// what the CRD's schema still refuses in it.
fn example_instance(
    crd: &Value,
    name: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<(Value, Vec<String>)> {
    let version = &crd["spec"]["versions"][0];
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let api_version = format!("{group}/{}", version["name"].as_str().unwrap_or_default());
    let schema: kro_schema::Schema =
        serde_json::from_value(version["schema"]["openAPIV3Schema"].clone())?;
    let spec = schema
        .properties
        .get("spec")
        .map_or_else(|| json!({}), kro_schema::example_value);
    let mut metadata = json!({"name": name.map_or_else(|| kind.to_lowercase(), str::to_owned)});
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    let instance = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    });
    let problems = kro_schema::validate(&schema, &instance, None)
        .iter()
        .map(ToString::to_string)
        .collect();
    Ok((instance, problems))
}

/// The objects as kubectl's `-o yaml` / `-o json` would print them: YAML documents separated
/// by `---`, or one JSON object (a `v1 List` for several).
pub fn render(objects: &[&Value], format: OutputFormat) -> anyhow::Result<String> {
    match format {
        OutputFormat::Yaml => {
            let mut out = String::new();
            for (index, object) in objects.iter().enumerate() {
                if index > 0 {
                    out.push_str("---\n");
                }
                out.push_str(&to_text(object, format)?);
            }
            Ok(out)
        }
        OutputFormat::Json => {
            let value = match objects {
                [one] => (*one).clone(),
                many => json!({
                    "apiVersion": "v1",
                    "kind": "List",
                    "metadata": {"resourceVersion": ""},
                    "items": many,
                }),
            };
            to_text(&value, format)
        }
    }
}
