//! The `dot` format for Graphviz: one `rank=same` subgraph per level, so Graphviz keeps the
//! levels as rows, and arrows from each dependency to its dependents.

use std::fmt::Write as _;

use super::{DiagramNode, DiagramNodeRole, Layout};

pub(super) fn render(layout: &Layout<'_>) -> String {
    let mut out = String::from(
        "digraph \"kro\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded\", fontname=\"Helvetica\"];\n  edge [color=\"#555555\"];\n",
    );
    for (level, row) in layout.levels.iter().enumerate() {
        let _ = write!(out, "\n  subgraph \"level_{level}\" {{\n    rank=same;\n");
        for node in row {
            let _ = writeln!(out, "    {} [{}];", quote(&node.id), attributes(node));
        }
        out.push_str("  }\n");
    }
    if !layout.edges.is_empty() {
        out.push('\n');
    }
    for (dependency, dependent) in &layout.edges {
        let _ = writeln!(out, "  {} -> {};", quote(dependency), quote(dependent));
    }
    out.push_str("}\n");
    out
}

fn attributes(node: &DiagramNode) -> String {
    let label = format!("{}\\n{}", escape(&node.id), escape(&node.label()));
    let style = match node.role {
        DiagramNodeRole::Resource => "",
        DiagramNodeRole::Collection => ", shape=box3d",
        DiagramNodeRole::ExternalRef => ", style=\"rounded,dashed\"",
        DiagramNodeRole::Data => ", shape=note",
    };
    format!("label=\"{label}\"{style}")
}

/// A DOT double-quoted string.
fn quote(text: &str) -> String {
    format!("\"{}\"", escape(text))
}

/// The inside of a DOT double-quoted string: backslashes and quotes escaped, line breaks as `\n`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            other => out.push(other),
        }
    }
    out
}
