//! Pictures of a compiled graph for `kro graph`: the nodes drawn level by level, with arrows from
//! each dependency to its dependents.
//!
//! The input is a plain description, [`DiagramGraph`], that the graph builder fills (or that
//! [`DiagramGraph::from_dag`] makes from a [`Dag`]). [`DiagramGraph::render`] writes it as text
//! for a terminal, Graphviz `dot`, a Mermaid flowchart, or a self-contained SVG picture laid out
//! here, without external programs.

mod dot;
mod mermaid;
mod svg;
mod text;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Dag;

/// How a node takes part in the graph; it picks the node's shape in pictures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum DiagramNodeRole {
    /// One object that kro applies.
    #[default]
    Resource,
    /// Objects that kro applies for each item of a `forEach`.
    Collection,
    /// An object that kro reads and does not manage.
    ExternalRef,
    /// A data node: values computed from others, no object.
    Data,
}

impl DiagramNodeRole {
    /// The role as written in RGDs and diagrams: `resource`, `collection`, `externalRef`, `data`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            DiagramNodeRole::Resource => "resource",
            DiagramNodeRole::Collection => "collection",
            DiagramNodeRole::ExternalRef => "externalRef",
            DiagramNodeRole::Data => "data",
        }
    }
}

/// A node to draw: its id, a kind label, and its role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramNode {
    /// The resource id in the RGD.
    pub id: String,
    /// A short label under the id, usually the object's kind (`Deployment`), or `data`.
    pub kind: String,
    /// The node's role, [`DiagramNodeRole::Resource`] unless said otherwise.
    #[serde(default)]
    pub role: DiagramNodeRole,
}

impl DiagramNode {
    /// A [`DiagramNodeRole::Resource`] node.
    #[must_use]
    pub fn new(id: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: kind.into(),
            role: DiagramNodeRole::Resource,
        }
    }

    /// The same node with another role.
    #[must_use]
    pub fn with_role(mut self, role: DiagramNodeRole) -> Self {
        self.role = role;
        self
    }

    /// The kind label with the role added when the kind does not already say it, such as
    /// `Deployment (collection)`, `data` or `ConfigMap (externalRef)`.
    fn label(&self) -> Cow<'_, str> {
        let role = self.role.name();
        if self.kind.is_empty() {
            Cow::Borrowed(role)
        } else if self.role == DiagramNodeRole::Resource || self.kind == role {
            Cow::Borrowed(&self.kind)
        } else {
            Cow::Owned(format!("{} ({role})", self.kind))
        }
    }
}

/// An arrow from a node to a node that depends on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramEdge {
    /// The id of the node depended on; the arrow starts here.
    pub dependency: String,
    /// The id of the node that depends on it; the arrow ends here.
    pub dependent: String,
}

impl DiagramEdge {
    /// The arrow `dependency -> dependent`.
    #[must_use]
    pub fn new(dependency: impl Into<String>, dependent: impl Into<String>) -> Self {
        Self {
            dependency: dependency.into(),
            dependent: dependent.into(),
        }
    }
}

/// A graph to draw: its nodes, their levels (each node in exactly one), and the edges.
///
/// Levels are drawn top to bottom and the nodes of a level left to right, in the order given.
/// Every edge goes from a node of a lower level to a node of a higher level.
///
/// ```
/// use kro_graph::{DiagramEdge, DiagramFormat, DiagramGraph, DiagramNode};
///
/// let graph = DiagramGraph {
///     nodes: vec![DiagramNode::new("config", "ConfigMap"), DiagramNode::new("app", "Deployment")],
///     levels: vec![vec!["config".into()], vec!["app".into()]],
///     edges: vec![DiagramEdge::new("config", "app")],
/// };
/// let text = graph.render(DiagramFormat::Text)?;
/// assert_eq!(
///     text,
///     "2 nodes in 2 levels\n\nlevel 0\n  config  ConfigMap\n\nlevel 1\n  app     Deployment  <- config\n"
/// );
/// # Ok::<(), kro_graph::DiagramError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagramGraph {
    /// The nodes; their order here does not matter.
    pub nodes: Vec<DiagramNode>,
    /// Node ids level by level, level 0 first.
    pub levels: Vec<Vec<String>>,
    /// The dependency edges; repeated edges are drawn once.
    pub edges: Vec<DiagramEdge>,
}

/// Why a [`DiagramGraph`] could not be drawn, or a format name was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiagramError {
    /// Two nodes have the same id.
    #[error("node `{id}` is described twice")]
    DuplicateNode {
        /// The repeated id.
        id: String,
    },
    /// A level names an id that is not among the nodes.
    #[error("level {level} names `{id}`, which is not a node")]
    UnknownNodeInLevel {
        /// The level, counted from 0.
        level: usize,
        /// The unknown id.
        id: String,
    },
    /// A node is listed in more than one place in the levels.
    #[error("node `{id}` is placed twice, in levels {first} and {second}")]
    NodePlacedTwice {
        /// The node's id.
        id: String,
        /// The level of its first place.
        first: usize,
        /// The level of its second place.
        second: usize,
    },
    /// A node is in no level.
    #[error("node `{id}` is in no level")]
    UnplacedNode {
        /// The node's id.
        id: String,
    },
    /// An edge names an id that is not among the nodes.
    #[error("the edge `{dependency}` -> `{dependent}` names `{missing}`, which is not a node")]
    UnknownEdgeEnd {
        /// The edge's dependency.
        dependency: String,
        /// The edge's dependent.
        dependent: String,
        /// The end that is not a node.
        missing: String,
    },
    /// An edge does not go from a lower level to a higher one.
    #[error(
        "`{dependent}` (level {dependent_level}) cannot depend on `{dependency}` (level {dependency_level})"
    )]
    EdgeAgainstLevels {
        /// The edge's dependency.
        dependency: String,
        /// Its level.
        dependency_level: usize,
        /// The edge's dependent.
        dependent: String,
        /// Its level, which is not above the dependency's.
        dependent_level: usize,
    },
    /// A format name other than `text`, `dot`, `mermaid` or `svg`.
    #[error("unknown diagram format `{name}`; expected one of text, dot, mermaid, svg")]
    UnknownFormat {
        /// The name given.
        name: String,
    },
}

impl DiagramError {
    /// A stable CamelCase name of the variant, for condition reasons, events and metric labels.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            DiagramError::DuplicateNode { .. } => "DuplicateNode",
            DiagramError::UnknownNodeInLevel { .. } => "UnknownNodeInLevel",
            DiagramError::NodePlacedTwice { .. } => "NodePlacedTwice",
            DiagramError::UnplacedNode { .. } => "UnplacedNode",
            DiagramError::UnknownEdgeEnd { .. } => "UnknownEdgeEnd",
            DiagramError::EdgeAgainstLevels { .. } => "EdgeAgainstLevels",
            DiagramError::UnknownFormat { .. } => "UnknownFormat",
        }
    }
}

/// An output format of [`DiagramGraph::render`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagramFormat {
    /// Levels listed with each node's kind and dependencies, for a terminal.
    #[default]
    Text,
    /// Graphviz `dot`, one `rank=same` subgraph per level.
    Dot,
    /// A Mermaid `flowchart TD`, one subgraph per level.
    Mermaid,
    /// A self-contained SVG picture.
    Svg,
}

impl DiagramFormat {
    /// Every format, in the order of their names in help texts.
    pub const ALL: [DiagramFormat; 4] = [
        DiagramFormat::Text,
        DiagramFormat::Dot,
        DiagramFormat::Mermaid,
        DiagramFormat::Svg,
    ];

    /// The format's name: `text`, `dot`, `mermaid` or `svg`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            DiagramFormat::Text => "text",
            DiagramFormat::Dot => "dot",
            DiagramFormat::Mermaid => "mermaid",
            DiagramFormat::Svg => "svg",
        }
    }

    /// The usual file extension: `txt`, `dot`, `mmd` or `svg`.
    #[must_use]
    pub fn file_extension(self) -> &'static str {
        match self {
            DiagramFormat::Text => "txt",
            DiagramFormat::Dot => "dot",
            DiagramFormat::Mermaid => "mmd",
            DiagramFormat::Svg => "svg",
        }
    }
}

impl fmt::Display for DiagramFormat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for DiagramFormat {
    type Err = DiagramError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        DiagramFormat::ALL
            .into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| DiagramError::UnknownFormat {
                name: name.to_owned(),
            })
    }
}

impl DiagramGraph {
    /// The picture of a [`Dag`]: its levels, its edges, and each node's kind label and role as
    /// `describe` gives them for its id.
    #[must_use]
    pub fn from_dag(
        dag: &Dag,
        mut describe: impl FnMut(&str) -> (String, DiagramNodeRole),
    ) -> Self {
        let levels = dag.levels();
        let mut graph = DiagramGraph::default();
        for id in levels.iter().flatten() {
            let (kind, role) = describe(id);
            graph.nodes.push(DiagramNode {
                id: (*id).to_owned(),
                kind,
                role,
            });
            for dependency in dag.dependencies(id).unwrap_or_default() {
                graph.edges.push(DiagramEdge::new(dependency, *id));
            }
        }
        graph.levels = levels
            .into_iter()
            .map(|level| level.into_iter().map(str::to_owned).collect())
            .collect();
        graph
    }

    /// Checks that the description can be drawn.
    ///
    /// # Errors
    ///
    /// The first inconsistency found: a node described twice, a level naming an unknown id, a
    /// node placed twice or nowhere, an edge naming an unknown id, or an edge that does not go
    /// from a lower level to a higher one.
    pub fn validate(&self) -> Result<(), DiagramError> {
        Layout::new(self).map(|_| ())
    }

    /// Draws the graph in `format`.
    ///
    /// # Errors
    ///
    /// As [`DiagramGraph::validate`].
    pub fn render(&self, format: DiagramFormat) -> Result<String, DiagramError> {
        let layout = Layout::new(self)?;
        Ok(match format {
            DiagramFormat::Text => text::render(&layout),
            DiagramFormat::Dot => dot::render(&layout),
            DiagramFormat::Mermaid => mermaid::render(&layout),
            DiagramFormat::Svg => svg::render(&layout),
        })
    }
}

/// Where a node is drawn: its level and its position inside the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    level: usize,
    position: usize,
}

/// A checked [`DiagramGraph`], shared by the renderers.
#[derive(Debug)]
struct Layout<'a> {
    /// The nodes, level by level.
    levels: Vec<Vec<&'a DiagramNode>>,
    places: HashMap<&'a str, Place>,
    /// Distinct edges as (dependency, dependent), sorted by where the dependent is drawn, then
    /// where the dependency is drawn.
    edges: Vec<(&'a str, &'a str)>,
}

impl<'a> Layout<'a> {
    fn new(graph: &'a DiagramGraph) -> Result<Self, DiagramError> {
        let mut nodes: HashMap<&str, &DiagramNode> = HashMap::with_capacity(graph.nodes.len());
        for node in &graph.nodes {
            if nodes.insert(node.id.as_str(), node).is_some() {
                return Err(DiagramError::DuplicateNode {
                    id: node.id.clone(),
                });
            }
        }
        let mut places: HashMap<&str, Place> = HashMap::with_capacity(graph.nodes.len());
        let mut levels = Vec::with_capacity(graph.levels.len());
        for (level, ids) in graph.levels.iter().enumerate() {
            let mut row = Vec::with_capacity(ids.len());
            for (position, id) in ids.iter().enumerate() {
                let node =
                    *nodes
                        .get(id.as_str())
                        .ok_or_else(|| DiagramError::UnknownNodeInLevel {
                            level,
                            id: id.clone(),
                        })?;
                if let Some(first) = places.insert(node.id.as_str(), Place { level, position }) {
                    return Err(DiagramError::NodePlacedTwice {
                        id: id.clone(),
                        first: first.level,
                        second: level,
                    });
                }
                row.push(node);
            }
            levels.push(row);
        }
        if let Some(node) = graph
            .nodes
            .iter()
            .find(|node| !places.contains_key(node.id.as_str()))
        {
            return Err(DiagramError::UnplacedNode {
                id: node.id.clone(),
            });
        }
        let mut edges = Vec::with_capacity(graph.edges.len());
        for edge in &graph.edges {
            let place = |id: &str| {
                places
                    .get(id)
                    .copied()
                    .ok_or_else(|| DiagramError::UnknownEdgeEnd {
                        dependency: edge.dependency.clone(),
                        dependent: edge.dependent.clone(),
                        missing: id.to_owned(),
                    })
            };
            let (from, to) = (place(&edge.dependency)?, place(&edge.dependent)?);
            if from.level >= to.level {
                return Err(DiagramError::EdgeAgainstLevels {
                    dependency: edge.dependency.clone(),
                    dependency_level: from.level,
                    dependent: edge.dependent.clone(),
                    dependent_level: to.level,
                });
            }
            edges.push((to, from, edge.dependency.as_str(), edge.dependent.as_str()));
        }
        edges.sort_unstable();
        edges.dedup();
        let edges = edges
            .into_iter()
            .map(|(_, _, dependency, dependent)| (dependency, dependent))
            .collect();
        Ok(Layout {
            levels,
            places,
            edges,
        })
    }

    fn node_count(&self) -> usize {
        self.places.len()
    }

    /// Each node's dependencies, in the order they are drawn.
    fn dependencies(&self) -> HashMap<&'a str, Vec<&'a str>> {
        let mut dependencies: HashMap<&str, Vec<&str>> = HashMap::new();
        for &(dependency, dependent) in &self.edges {
            dependencies.entry(dependent).or_default().push(dependency);
        }
        dependencies
    }
}

/// "1 node", "3 levels": a count with its noun.
fn counted(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests;
