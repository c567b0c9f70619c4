mod xml;

use std::fs;
use std::path::PathBuf;

use super::{DiagramEdge, DiagramError, DiagramFormat, DiagramGraph, DiagramNode, DiagramNodeRole};
use crate::Dag;

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/diagram")
}

fn load(name: &str) -> DiagramGraph {
    let path = testdata().join(format!("{name}.json"));
    let json =
        fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&json).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The first line of a golden file, a comment in the format's own syntax where it has one.
fn header(name: &str, format: DiagramFormat) -> String {
    let note = format!(
        "{name}.json as `{format}`; regenerate with KRO_BLESS=1 cargo test -p kro-graph diagram"
    );
    match format {
        DiagramFormat::Text => format!("# {note}\n"),
        DiagramFormat::Dot => format!("// {note}\n"),
        DiagramFormat::Mermaid => format!("%% {note}\n"),
        DiagramFormat::Svg => format!("<!-- {note} -->\n"),
    }
}

/// Compares every format of `testdata/diagram/<name>.json` with its golden file, or rewrites the
/// golden files when `KRO_BLESS` is set.
fn check_golden_files(name: &str) {
    let graph = load(name);
    let bless = std::env::var_os("KRO_BLESS").is_some();
    let mut stale = Vec::new();
    for format in DiagramFormat::ALL {
        let rendered = graph.render(format).unwrap();
        let expected = header(name, format) + &rendered;
        let path = testdata().join(format!("{name}.{}", format.file_extension()));
        if bless {
            fs::write(&path, &expected)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        } else if fs::read_to_string(&path).ok().as_deref() != Some(expected.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale golden files {stale:?}; rerun with KRO_BLESS=1 to update them"
    );
}

fn svg_root(graph: &DiagramGraph) -> xml::Element {
    let svg = graph.render(DiagramFormat::Svg).unwrap();
    let root = xml::parse(&svg)
        .unwrap_or_else(|error| panic!("the SVG is not well-formed: {error}\n{svg}"));
    assert_eq!(root.name, "svg");
    root
}

fn dimension(root: &xml::Element, name: &str) -> f64 {
    let value: f64 = root.attribute(name).unwrap().parse().unwrap();
    assert!(value.is_finite() && value > 0.0, "{name} = {value}");
    value
}

#[test]
fn small_graph_matches_its_golden_files() {
    check_golden_files("small");
}

#[test]
fn wide_graph_matches_its_golden_files() {
    check_golden_files("wide");
}

#[test]
fn svg_output_is_well_formed_xml_with_an_svg_root() {
    for name in ["small", "wide"] {
        let root = svg_root(&load(name));
        dimension(&root, "width");
        dimension(&root, "height");
    }
    svg_root(&DiagramGraph::default());
}

#[test]
fn special_characters_are_escaped_in_every_format() {
    let odd_id = "a&b<c>\"d\"'e'#f\\g";
    let odd_kind = "Widget<v2> & \"co\"";
    let graph = DiagramGraph {
        nodes: vec![
            DiagramNode::new(odd_id, odd_kind),
            DiagramNode::new("plain", "Thing\u{1}"),
        ],
        levels: vec![vec![odd_id.to_owned()], vec!["plain".to_owned()]],
        edges: vec![DiagramEdge::new(odd_id, "plain")],
    };

    let root = svg_root(&graph);
    let texts: Vec<String> = root
        .descendants()
        .iter()
        .filter(|element| element.name == "text")
        .map(|text| text.text())
        .collect();
    assert!(texts.contains(&odd_id.to_owned()), "{texts:?}");
    assert!(texts.contains(&odd_kind.to_owned()), "{texts:?}");
    assert!(texts.contains(&"Thing\u{fffd}".to_owned()), "{texts:?}");

    let dot = graph.render(DiagramFormat::Dot).unwrap();
    let quoted_id = r#""a&b<c>\"d\"'e'#f\\g""#;
    assert!(dot.contains(&format!("    {quoted_id} [label=")), "{dot}");
    assert!(
        dot.contains(&format!("  {quoted_id} -> \"plain\";")),
        "{dot}"
    );

    let mermaid = graph.render(DiagramFormat::Mermaid).unwrap();
    assert!(
        mermaid.contains("n0[\"a#amp;b#lt;c#gt;#quot;d#quot;'e'#35;f\\g<br/>Widget#lt;v2#gt; #amp; #quot;co#quot;\"]"),
        "{mermaid}"
    );
}

#[test]
fn long_ids_widen_their_box_up_to_a_limit() {
    let long_id = "x".repeat(300);
    let graph = DiagramGraph {
        nodes: vec![
            DiagramNode::new(&long_id, "Deployment"),
            DiagramNode::new("short", "Service"),
        ],
        levels: vec![vec![long_id.clone(), "short".to_owned()]],
        edges: vec![],
    };
    let root = svg_root(&graph);
    let boxes: Vec<f64> = root
        .descendants()
        .iter()
        .filter(|element| element.name == "rect" && element.attribute("rx") == Some("6"))
        .map(|rect| rect.attribute("width").unwrap().parse().unwrap())
        .collect();
    assert_eq!(boxes.len(), 2);
    // 40 characters of 13px monospace, plus padding: the text fits and does not run on.
    assert!(
        boxes[0] > boxes[1] && (320.0..=360.0).contains(&boxes[0]),
        "{boxes:?}"
    );
    assert!(dimension(&root, "width") < 600.0);
    let texts: Vec<String> = root
        .descendants()
        .iter()
        .map(|element| element.text())
        .collect();
    assert!(texts.contains(&format!("{}…", "x".repeat(39))));
    // The tooltip keeps the whole id.
    assert!(texts.contains(&format!("{long_id}: Deployment")));
}

#[test]
fn a_graph_of_200_nodes_in_20_levels_stays_well_formed() {
    let mut graph = DiagramGraph::default();
    for level in 0..20 {
        let mut row = Vec::new();
        for position in 0..10 {
            let id = format!("resource{level}x{position}WithSomeLength");
            let role = match position % 4 {
                0 => DiagramNodeRole::Resource,
                1 => DiagramNodeRole::Collection,
                2 => DiagramNodeRole::ExternalRef,
                _ => DiagramNodeRole::Data,
            };
            graph
                .nodes
                .push(DiagramNode::new(&id, "Deployment").with_role(role));
            if level > 0 {
                for offset in [0, 3, 7] {
                    let dependency = format!(
                        "resource{}x{}WithSomeLength",
                        level - 1,
                        (position + offset) % 10
                    );
                    graph.edges.push(DiagramEdge::new(dependency, &id));
                }
            }
            if level > 5 && position == 0 {
                graph
                    .edges
                    .push(DiagramEdge::new("resource0x0WithSomeLength", &id));
            }
            row.push(id);
        }
        graph.levels.push(row);
    }
    let root = svg_root(&graph);
    let (width, height) = (dimension(&root, "width"), dimension(&root, "height"));
    assert!(width < 5_000.0 && height < 5_000.0, "{width} x {height}");
    for element in root.descendants() {
        for (name, value) in &element.attributes {
            if ["x", "y", "width", "height"].contains(&name.as_str()) {
                let number: f64 = value.parse().unwrap();
                assert!(number.is_finite() && number >= 0.0, "{name}={value}");
            }
        }
    }
    for format in DiagramFormat::ALL {
        assert!(graph.render(format).is_ok());
    }
}

#[test]
fn text_lists_levels_kinds_roles_and_dependencies() {
    let graph = DiagramGraph {
        nodes: vec![
            DiagramNode::new("settings", "data").with_role(DiagramNodeRole::Data),
            DiagramNode::new("team", "ConfigMap").with_role(DiagramNodeRole::ExternalRef),
            DiagramNode::new("workers", "Deployment").with_role(DiagramNodeRole::Collection),
            DiagramNode::new("empty", "").with_role(DiagramNodeRole::Data),
        ],
        levels: vec![
            vec!["team".into(), "settings".into(), "empty".into()],
            vec!["workers".into()],
        ],
        // Dependencies are listed in the order they are drawn, repeated edges once.
        edges: vec![
            DiagramEdge::new("settings", "workers"),
            DiagramEdge::new("team", "workers"),
            DiagramEdge::new("settings", "workers"),
        ],
    };
    assert_eq!(
        graph.render(DiagramFormat::Text).unwrap(),
        "4 nodes in 2 levels\n\
         \n\
         level 0\n  \
         team      ConfigMap (externalRef)\n  \
         settings  data\n  \
         empty     data\n\
         \n\
         level 1\n  \
         workers   Deployment (collection)  <- team, settings\n"
    );
}

#[test]
fn from_dag_draws_the_levels_and_edges_of_a_dag() {
    let mut dag = Dag::new();
    for (index, id) in ["app", "config", "settings"].into_iter().enumerate() {
        dag.add_node(id, index).unwrap();
    }
    dag.add_dependencies("app", ["config", "settings"]).unwrap();
    let graph = DiagramGraph::from_dag(&dag, |id| match id {
        "settings" => ("data".to_owned(), DiagramNodeRole::Data),
        "config" => ("ConfigMap".to_owned(), DiagramNodeRole::Resource),
        _ => ("Deployment".to_owned(), DiagramNodeRole::Resource),
    });
    assert_eq!(
        graph,
        DiagramGraph {
            nodes: vec![
                DiagramNode::new("config", "ConfigMap"),
                DiagramNode::new("settings", "data").with_role(DiagramNodeRole::Data),
                DiagramNode::new("app", "Deployment"),
            ],
            levels: vec![vec!["config".into(), "settings".into()], vec!["app".into()]],
            edges: vec![
                DiagramEdge::new("config", "app"),
                DiagramEdge::new("settings", "app")
            ],
        }
    );
    assert_eq!(graph.validate(), Ok(()));
}

#[test]
fn inconsistent_descriptions_are_refused_with_typed_errors() {
    let node = |id: &str| DiagramNode::new(id, "Kind");
    let levels = |levels: &[&[&str]]| -> Vec<Vec<String>> {
        levels
            .iter()
            .map(|level| level.iter().map(|id| (*id).to_owned()).collect())
            .collect()
    };
    let cases = [
        (
            DiagramGraph {
                nodes: vec![node("a"), node("a")],
                levels: levels(&[&["a"]]),
                edges: vec![],
            },
            DiagramError::DuplicateNode { id: "a".into() },
        ),
        (
            DiagramGraph {
                nodes: vec![node("a")],
                levels: levels(&[&["a"], &["b"]]),
                edges: vec![],
            },
            DiagramError::UnknownNodeInLevel {
                level: 1,
                id: "b".into(),
            },
        ),
        (
            DiagramGraph {
                nodes: vec![node("a")],
                levels: levels(&[&["a"], &["a"]]),
                edges: vec![],
            },
            DiagramError::NodePlacedTwice {
                id: "a".into(),
                first: 0,
                second: 1,
            },
        ),
        (
            DiagramGraph {
                nodes: vec![node("a"), node("b")],
                levels: levels(&[&["a"]]),
                edges: vec![],
            },
            DiagramError::UnplacedNode { id: "b".into() },
        ),
        (
            DiagramGraph {
                nodes: vec![node("a")],
                levels: levels(&[&["a"]]),
                edges: vec![DiagramEdge::new("a", "z")],
            },
            DiagramError::UnknownEdgeEnd {
                dependency: "a".into(),
                dependent: "z".into(),
                missing: "z".into(),
            },
        ),
        (
            DiagramGraph {
                nodes: vec![node("a"), node("b")],
                levels: levels(&[&["a", "b"]]),
                edges: vec![DiagramEdge::new("a", "b")],
            },
            DiagramError::EdgeAgainstLevels {
                dependency: "a".into(),
                dependency_level: 0,
                dependent: "b".into(),
                dependent_level: 0,
            },
        ),
    ];
    for (graph, expected) in cases {
        assert_eq!(graph.validate(), Err(expected.clone()));
        for format in DiagramFormat::ALL {
            assert_eq!(graph.render(format), Err(expected.clone()));
        }
    }
}

#[test]
fn format_names_round_trip() {
    for format in DiagramFormat::ALL {
        assert_eq!(format.name().parse::<DiagramFormat>(), Ok(format));
        assert_eq!(format.to_string(), format.name());
    }
    let error = "png".parse::<DiagramFormat>().unwrap_err();
    assert_eq!(error, DiagramError::UnknownFormat { name: "png".into() });
    assert_eq!(error.reason(), "UnknownFormat");
}

#[test]
fn an_empty_graph_renders_in_every_format() {
    let graph = DiagramGraph::default();
    assert_eq!(
        graph.render(DiagramFormat::Text).unwrap(),
        "0 nodes in 0 levels\n"
    );
    assert_eq!(
        graph.render(DiagramFormat::Mermaid).unwrap(),
        "flowchart TD\n"
    );
    assert!(graph.render(DiagramFormat::Dot).unwrap().ends_with("}\n"));
}
