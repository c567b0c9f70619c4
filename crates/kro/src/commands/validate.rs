//! `kro validate -f FILE...`: build every ResourceGraphDefinition offline and report each
//! problem at its file, line and column.

use std::process::ExitCode;

use crate::rgd_files::{InputArgs, load_and_build};

/// Flags of `kro validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
}

/// Prints one summary line per valid RGD to standard output and every problem to standard
/// error; exits 1 when any RGD (or file) has an error.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = load_and_build(&args.input)?;
    for built in &workspace.rgds {
        let Some(graph) = &built.graph else { continue };
        let resources = graph.nodes.len();
        let levels = graph.levels.len();
        let set = match &graph.set_names {
            Some(names) => format!(" and {}", names.kind),
            None => String::new(),
        };
        println!(
            "{}: {}: valid: kind {} ({}){set}, {resources} {}, {levels} {}",
            built.loaded.file,
            built.loaded.name(),
            graph.names.kind,
            graph.names.api_version(),
            plural(resources, "resource", "resources"),
            plural(levels, "level", "levels"),
        );
    }
    workspace.print_diagnostics();
    if workspace.rgds.is_empty() && !workspace.has_errors() {
        eprintln!("error: no ResourceGraphDefinition (kro.run/v1alpha1) in the given files");
        return Ok(ExitCode::FAILURE);
    }
    if workspace.has_errors() {
        let invalid = workspace
            .rgds
            .iter()
            .filter(|built| built.graph.is_none())
            .count();
        if invalid > 0 {
            eprintln!(
                "{invalid} of {} ResourceGraphDefinitions {} invalid",
                workspace.rgds.len(),
                if invalid == 1 { "is" } else { "are" }
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn plural(count: usize, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}
