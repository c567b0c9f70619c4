//! `kro generate crd -f FILE [-o yaml|json]`: the CustomResourceDefinitions kro would install
//! for ResourceGraphDefinitions, built offline; `kro generate rgd-crd`: the
//! ResourceGraphDefinition CRD itself, as the controller installs it (the Helm chart's copy is
//! this output).

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
}

/// Flags of `kro generate rgd-crd`.
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
