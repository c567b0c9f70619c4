//! The `text` format: levels listed for a terminal, one node a line with its kind label and what
//! it depends on, in aligned columns.

use std::fmt::Write as _;

use super::{Layout, counted};

pub(super) fn render(layout: &Layout<'_>) -> String {
    let dependencies = layout.dependencies();
    let nodes = || layout.levels.iter().flatten();
    let id_width = nodes()
        .map(|node| node.id.chars().count())
        .max()
        .unwrap_or(0);
    let label_width = nodes()
        .map(|node| node.label().chars().count())
        .max()
        .unwrap_or(0);

    let mut out = format!(
        "{} in {}\n",
        counted(layout.node_count(), "node"),
        counted(layout.levels.len(), "level")
    );
    for (level, row) in layout.levels.iter().enumerate() {
        let _ = write!(out, "\nlevel {level}\n");
        for node in row {
            let mut line = format!("  {:<id_width$}  {:<label_width$}", node.id, node.label());
            if let Some(list) = dependencies.get(node.id.as_str()) {
                let _ = write!(line, "  <- {}", list.join(", "));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}
