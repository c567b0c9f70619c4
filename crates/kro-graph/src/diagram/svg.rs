//! The `svg` format: a self-contained picture laid out here, with no external program.
//!
//! Levels are rows, level 0 at the top, each row centred and labelled on the left. A node is a
//! box with its id and kind label, wide enough for both: text is measured with the advance width
//! of a monospace font (which the picture asks for), and labels past [`MAX_LABEL_CHARS`] are cut
//! with an ellipsis, the full text staying in the box's tooltip. Arrows are cubic curves from the
//! bottom of a dependency to the top of its dependent; a box with several arrows spreads their
//! ends along its edge in the order of the boxes at the other end, so arrows cross less.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use super::{DiagramNode, DiagramNodeRole, Layout, counted};

const FONT_FAMILY: &str = "ui-monospace, Menlo, Consolas, monospace";
const ID_FONT_SIZE: f64 = 13.0;
const LABEL_FONT_SIZE: f64 = 11.0;
/// The advance width of a character of a monospace font, as a fraction of the font size; a bit
/// over the usual 0.6 so that fonts running wide still fit.
const CHAR_WIDTH: f64 = 0.62;
/// Longer ids and labels are cut to this many characters.
const MAX_LABEL_CHARS: usize = 40;
const PADDING_X: f64 = 12.0;
const MIN_BOX_WIDTH: f64 = 96.0;
const BOX_HEIGHT: f64 = 46.0;
const GAP_X: f64 = 28.0;
const GAP_Y: f64 = 64.0;
const MARGIN: f64 = 20.0;
/// How far a level's background band reaches above and below its boxes.
const BAND_OVERHANG: f64 = 12.0;
/// How far the second box of a collection is offset from the first.
const STACK_OFFSET: f64 = 4.0;

/// One node's box and the text written in it.
struct NodeBox<'a> {
    node: &'a DiagramNode,
    id: Cow<'a, str>,
    label: String,
    x: f64,
    y: f64,
    width: f64,
}

impl NodeBox<'_> {
    fn center_x(&self) -> f64 {
        self.x + self.width / 2.0
    }
}

pub(super) fn render(layout: &Layout<'_>) -> String {
    let level_labels: Vec<String> = (0..layout.levels.len())
        .map(|level| format!("level {level}"))
        .collect();
    let gutter = level_labels
        .iter()
        .map(|label| text_width(label, LABEL_FONT_SIZE))
        .fold(0.0, f64::max)
        .ceil()
        + PADDING_X;
    let rows = place_boxes(layout, MARGIN + gutter);
    let content_width = rows.iter().map(|row| row_width(row)).fold(0.0, f64::max);
    let width = MARGIN + gutter + content_width + MARGIN;
    let height = if rows.is_empty() {
        2.0 * MARGIN
    } else {
        2.0 * MARGIN + rows.len() as f64 * BOX_HEIGHT + (rows.len() - 1) as f64 * GAP_Y
    };

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" font-family=\"{FONT_FAMILY}\">",
        w = number(width),
        h = number(height),
    );
    let _ = writeln!(
        out,
        "<title>{} in {}</title>",
        counted(layout.node_count(), "node"),
        counted(layout.levels.len(), "level")
    );
    out.push_str(concat!(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" ",
        "markerHeight=\"7\" orient=\"auto\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#64748b\"/></marker></defs>\n"
    ));
    let _ = writeln!(
        out,
        "<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        number(width),
        number(height)
    );
    for (level, label) in level_labels.iter().enumerate() {
        write_level(&mut out, level, label, width);
    }
    write_edges(&mut out, layout, &rows);
    for node_box in rows.iter().flatten() {
        write_node(&mut out, node_box);
    }
    out.push_str("</svg>\n");
    out
}

/// Sizes every box and places the rows, each centred in the widest.
fn place_boxes<'a>(layout: &Layout<'a>, left: f64) -> Vec<Vec<NodeBox<'a>>> {
    let mut rows: Vec<Vec<NodeBox<'a>>> = layout
        .levels
        .iter()
        .enumerate()
        .map(|(level, nodes)| {
            let y = MARGIN + level as f64 * (BOX_HEIGHT + GAP_Y);
            nodes
                .iter()
                .map(|&node| {
                    let id = shorten(&node.id);
                    let label = shorten(&node.label()).into_owned();
                    let text =
                        text_width(&id, ID_FONT_SIZE).max(text_width(&label, LABEL_FONT_SIZE));
                    let width = (text + 2.0 * PADDING_X).max(MIN_BOX_WIDTH).ceil();
                    NodeBox {
                        node,
                        id,
                        label,
                        x: 0.0,
                        y,
                        width,
                    }
                })
                .collect()
        })
        .collect();
    let content_width = rows.iter().map(|row| row_width(row)).fold(0.0, f64::max);
    for row in &mut rows {
        let mut x = left + ((content_width - row_width(row)) / 2.0).floor();
        for node_box in row {
            node_box.x = x;
            x += node_box.width + GAP_X;
        }
    }
    rows
}

fn row_width(row: &[NodeBox<'_>]) -> f64 {
    let boxes: f64 = row.iter().map(|node_box| node_box.width).sum();
    boxes + row.len().saturating_sub(1) as f64 * GAP_X
}

/// The level's label, over a light band on every other level.
fn write_level(out: &mut String, level: usize, label: &str, width: f64) {
    let top = MARGIN + level as f64 * (BOX_HEIGHT + GAP_Y);
    if level.is_multiple_of(2) {
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"#f1f5f9\"/>",
            number(MARGIN / 2.0),
            number(top - BAND_OVERHANG),
            number(width - MARGIN),
            number(BOX_HEIGHT + 2.0 * BAND_OVERHANG),
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#64748b\">{}</text>",
        number(MARGIN),
        number(top + BOX_HEIGHT / 2.0 + LABEL_FONT_SIZE / 3.0),
        number(LABEL_FONT_SIZE),
        escape(label),
    );
}

/// The arrows, drawn before the boxes so that boxes hide arrows that pass behind them.
fn write_edges(out: &mut String, layout: &Layout<'_>, rows: &[Vec<NodeBox<'_>>]) {
    let boxes: HashMap<&str, &NodeBox<'_>> = rows
        .iter()
        .flatten()
        .map(|node_box| (node_box.node.id.as_str(), node_box))
        .collect();
    // For each node, its arrows leaving from the bottom and arriving at the top, ordered by the
    // position of the box at the other end.
    let mut leaving: HashMap<&str, Vec<(f64, &str)>> = HashMap::new();
    let mut arriving: HashMap<&str, Vec<(f64, &str)>> = HashMap::new();
    let mut edges = Vec::with_capacity(layout.edges.len());
    for &(dependency, dependent) in &layout.edges {
        let (Some(from), Some(to)) = (boxes.get(dependency), boxes.get(dependent)) else {
            continue;
        };
        leaving
            .entry(dependency)
            .or_default()
            .push((to.center_x(), dependent));
        arriving
            .entry(dependent)
            .or_default()
            .push((from.center_x(), dependency));
        edges.push((*from, *to));
    }
    for ends in leaving.values_mut().chain(arriving.values_mut()) {
        ends.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    }
    if edges.is_empty() {
        return;
    }
    out.push_str("<g fill=\"none\" stroke=\"#64748b\" stroke-width=\"1.4\">\n");
    for (from, to) in edges {
        let start = (
            anchor(from, leaving.get(from.node.id.as_str()), &to.node.id),
            from.y + BOX_HEIGHT,
        );
        let end = (
            anchor(to, arriving.get(to.node.id.as_str()), &from.node.id),
            to.y,
        );
        let _ = writeln!(
            out,
            "<path d=\"{}\" marker-end=\"url(#arrow)\"/>",
            route(start, end, rows)
        );
    }
    out.push_str("</g>\n");
}

/// The path of an arrow from `start` (the bottom of a box) to `end` (the top of a box lower
/// down). In each row it crosses, it passes through the free space nearest the straight line
/// rather than behind a box; between rows it is a curve that leaves and arrives vertically.
fn route(start: (f64, f64), end: (f64, f64), rows: &[Vec<NodeBox<'_>>]) -> String {
    let mut points = vec![start];
    for row in rows {
        let Some(first) = row.first() else { continue };
        let (top, bottom) = (first.y, first.y + BOX_HEIGHT);
        if top <= start.1 || bottom >= end.1 {
            continue;
        }
        let share = (top + BOX_HEIGHT / 2.0 - start.1) / (end.1 - start.1);
        let x = free_x(row, start.0 + (end.0 - start.0) * share);
        points.push((x, top));
        points.push((x, bottom));
    }
    points.push(end);
    let mut path = format!("M {} {}", number(start.0), number(start.1));
    for pair in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        if x0 == x1 {
            let _ = write!(path, " L {} {}", number(x1), number(y1));
        } else {
            let bend = (y1 - y0) / 2.0;
            let _ = write!(
                path,
                " C {} {} {} {} {} {}",
                number(x0),
                number(y0 + bend),
                number(x1),
                number(y1 - bend),
                number(x1),
                number(y1)
            );
        }
    }
    path
}

/// The x nearest `wanted` where a vertical line crosses `row` without touching a box: between
/// two boxes, or beside the row.
fn free_x(row: &[NodeBox<'_>], wanted: f64) -> f64 {
    const CLEARANCE: f64 = 6.0;
    let mut best = f64::NAN;
    let mut consider = |low: f64, high: f64| {
        let x = if low > high {
            (low + high) / 2.0
        } else {
            wanted.clamp(low, high)
        };
        if best.is_nan() || (x - wanted).abs() < (best - wanted).abs() {
            best = x;
        }
    };
    let mut left = f64::NEG_INFINITY;
    for node_box in row {
        consider(left, node_box.x - CLEARANCE);
        left = node_box.x + node_box.width + CLEARANCE;
    }
    consider(left, f64::INFINITY);
    // Beside the row, stay within half a gap of it so the arrow stays on the canvas.
    let (first, last) = (row.first(), row.last());
    let min = first.map_or(wanted, |node_box| node_box.x - GAP_X / 2.0);
    let max = last.map_or(wanted, |node_box| node_box.x + node_box.width + GAP_X / 2.0);
    best.clamp(min.min(max), max.max(min))
}

/// Where on the box's edge the arrow to or from `other` attaches: the ends are spread evenly.
fn anchor(node_box: &NodeBox<'_>, ends: Option<&Vec<(f64, &str)>>, other: &str) -> f64 {
    let Some(ends) = ends else {
        return node_box.center_x();
    };
    let index = ends.iter().position(|(_, id)| *id == other).unwrap_or(0);
    node_box.x + node_box.width * (index + 1) as f64 / (ends.len() + 1) as f64
}

fn write_node(out: &mut String, node_box: &NodeBox<'_>) {
    let (fill, stroke, dash) = match node_box.node.role {
        DiagramNodeRole::Resource => ("#e0f2fe", "#0369a1", ""),
        DiagramNodeRole::Collection => ("#ede9fe", "#6d28d9", ""),
        DiagramNodeRole::ExternalRef => ("#f8fafc", "#475569", " stroke-dasharray=\"5 3\""),
        DiagramNodeRole::Data => ("#fef9c3", "#a16207", ""),
    };
    let rect = |x: f64, y: f64| {
        format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.2\"{dash}/>",
            number(x),
            number(y),
            number(node_box.width),
            number(BOX_HEIGHT),
        )
    };
    let _ = write!(
        out,
        "<g><title>{}: {}</title>",
        escape(&node_box.node.id),
        escape(&node_box.node.label())
    );
    if node_box.node.role == DiagramNodeRole::Collection {
        out.push_str(&rect(node_box.x + STACK_OFFSET, node_box.y + STACK_OFFSET));
    }
    out.push_str(&rect(node_box.x, node_box.y));
    let center = number(node_box.center_x());
    let _ = writeln!(
        out,
        "<text x=\"{center}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"#0f172a\">{}</text><text x=\"{center}\" y=\"{}\" font-size=\"{}\" text-anchor=\"middle\" fill=\"#475569\">{}</text></g>",
        number(node_box.y + 19.0),
        number(ID_FONT_SIZE),
        escape(&node_box.id),
        number(node_box.y + 35.0),
        number(LABEL_FONT_SIZE),
        escape(&node_box.label),
    );
}

/// The approximate width of `text` at `font_size`.
fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().count() as f64 * font_size * CHAR_WIDTH
}

/// `text` cut to [`MAX_LABEL_CHARS`] characters, the last one an ellipsis when cut.
fn shorten(text: &str) -> Cow<'_, str> {
    if text.chars().count() <= MAX_LABEL_CHARS {
        return Cow::Borrowed(text);
    }
    let mut short: String = text.chars().take(MAX_LABEL_CHARS - 1).collect();
    short.push('…');
    Cow::Owned(short)
}

/// A coordinate with at most one decimal.
fn number(value: f64) -> String {
    let text = format!("{value:.1}");
    match text.strip_suffix(".0") {
        Some(whole) => whole.to_owned(),
        None => text,
    }
}

/// Text safe in XML content and attribute values; characters XML cannot hold become U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(character),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            other => out.push(other),
        }
    }
    out
}
