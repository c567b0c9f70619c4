//! The `mermaid` format: a `flowchart TD` with one subgraph per level. Nodes get generated ids
//! (`n0`, `n1`, ...) so that any resource id is safe, and show the id and kind as a label.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{DiagramNode, DiagramNodeRole, Layout};

pub(super) fn render(layout: &Layout<'_>) -> String {
    let mut out = String::from("flowchart TD\n");
    let mut names: HashMap<&str, String> = HashMap::with_capacity(layout.node_count());
    for (level, row) in layout.levels.iter().enumerate() {
        let _ = writeln!(out, "  subgraph level{level}[\"level {level}\"]");
        for node in row {
            let name = format!("n{}", names.len());
            let _ = writeln!(out, "    {}", shape(&name, node));
            names.insert(node.id.as_str(), name);
        }
        out.push_str("  end\n");
    }
    for (dependency, dependent) in &layout.edges {
        if let (Some(from), Some(to)) = (names.get(dependency), names.get(dependent)) {
            let _ = writeln!(out, "  {from} --> {to}");
        }
    }
    out
}

/// The node statement: its name and quoted label inside the brackets of its role's shape.
fn shape(name: &str, node: &DiagramNode) -> String {
    let label = format!("{}<br/>{}", escape(&node.id), escape(&node.label()));
    let (open, close) = match node.role {
        DiagramNodeRole::Resource => ("[", "]"),
        DiagramNodeRole::Collection => ("[[", "]]"),
        DiagramNodeRole::ExternalRef => ("([", "])"),
        DiagramNodeRole::Data => ("[/", "/]"),
    };
    format!("{name}{open}\"{label}\"{close}")
}

/// Text safe inside a quoted Mermaid label: characters with a meaning there become entity codes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '&' => out.push_str("#amp;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' => out.push(' '),
            other => out.push(other),
        }
    }
    out
}
