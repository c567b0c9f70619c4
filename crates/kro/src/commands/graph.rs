//! `kro graph -f FILE [--format text|dot|mermaid|svg]`: the dependency graph of a
//! ResourceGraphDefinition drawn by levels, without external programs.

use std::process::ExitCode;

use kro_graph::DiagramFormat;

use crate::rgd_files::{InputArgs, load_and_visit};

/// Flags of `kro graph`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// The drawing: text for the terminal, Graphviz dot, Mermaid, or a standalone SVG picture.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The RGD to draw when the files hold several.
    #[arg(long, value_name = "RGD")]
    name: Option<String>,
}

/// The drawings `kro graph` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Dot,
    Mermaid,
    Svg,
}

impl From<Format> for DiagramFormat {
    fn from(format: Format) -> Self {
        match format {
            Format::Text => DiagramFormat::Text,
            Format::Dot => DiagramFormat::Dot,
            Format::Mermaid => DiagramFormat::Mermaid,
            Format::Svg => DiagramFormat::Svg,
        }
    }
}

/// Builds the RGDs and draws the chosen one.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // With --name only the RGDs of that name are kept; without, every one is (more than one
    // is an error that lists them).
    let mut chosen = Vec::new();
    let workspace = load_and_visit(&args.input, &mut |built| {
        if args
            .name
            .as_ref()
            .is_none_or(|name| &built.loaded.name() == name)
        {
            chosen.push(built);
        }
    })?;
    let built = match chosen.as_slice() {
        [one] => one,
        [] => {
            workspace.print_diagnostics();
            match &args.name {
                Some(name) => eprintln!("error: no ResourceGraphDefinition named {name:?}"),
                None => eprintln!(
                    "error: no ResourceGraphDefinition (kro.run/v1alpha1) in the given files"
                ),
            }
            return Ok(ExitCode::FAILURE);
        }
        many => {
            let names: Vec<String> = many.iter().map(|built| built.loaded.name()).collect();
            eprintln!(
                "error: the files hold {} ResourceGraphDefinitions ({}); choose one with --name",
                many.len(),
                names.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    // Problems of the chosen RGD's file, and any file-level error, matter; those of other
    // RGDs do not stop the drawing.
    let relevant: Vec<_> = workspace
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.file == built.loaded.file)
        .collect();
    for diagnostic in &relevant {
        eprintln!("{diagnostic}");
    }
    let Some(graph) = &built.graph else {
        return Ok(ExitCode::FAILURE);
    };
    let drawing = graph.diagram().render(args.format.into())?;
    print!("{drawing}");
    if !drawing.ends_with('\n') {
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
