//! `kro validate -f FILE...`: build every ResourceGraphDefinition offline and report each
//! problem at its file, line and column.

use std::process::ExitCode;

use crate::rgd_files::{BuiltRgd, InputArgs, load_and_visit};

/// Flags of `kro validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
}

/// Prints one summary line per valid RGD to standard output as soon as it is built (its graph
/// is dropped then) and every problem to standard error; exits 1 when any RGD (or file) has an
/// error.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut count = 0_usize;
    let mut invalid = 0_usize;
    let workspace = load_and_visit(&args.input, &mut |built| {
        count += 1;
        match summary(&built) {
            Some(line) => println!("{line}"),
            None => invalid += 1,
        }
    })?;
    workspace.print_diagnostics();
    if count == 0 && !workspace.has_errors() {
        eprintln!("error: no ResourceGraphDefinition (kro.run/v1alpha1) in the given files");
        return Ok(ExitCode::FAILURE);
    }
    if workspace.has_errors() {
        if invalid > 0 {
            eprintln!(
                "{invalid} of {count} ResourceGraphDefinitions {} invalid",
                if invalid == 1 { "is" } else { "are" }
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `file: name: valid: kind ...`, or `None` for an RGD with errors.
fn summary(built: &BuiltRgd) -> Option<String> {
    let graph = built.graph.as_ref()?;
    let resources = graph.nodes.len();
    let levels = graph.levels.len();
    let set = match &graph.set_names {
        Some(names) => format!(" and {}", names.kind),
        None => String::new(),
    };
    Some(format!(
        "{}: {}: valid: kind {} ({}){set}, {resources} {}, {levels} {}",
        built.loaded.file,
        built.loaded.name(),
        graph.names.kind,
        graph.names.api_version(),
        plural(resources, "resource", "resources"),
        plural(levels, "level", "levels"),
    ))
}

fn plural(count: usize, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}
