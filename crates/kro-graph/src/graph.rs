//! The compiled graph: an RGD turned into typed nodes, compiled expressions, dependency
//! levels and generated CRDs. Built once per RGD, immutable, shared by every instance.

use std::sync::Arc;

use kro_cel::{Program, Type};
use kro_schema::{Gvk, ScaleFields, Schema};
use serde_json::Value as Json;

use crate::NodeId;
use crate::crd::KindNames;
use crate::diagram::{DiagramEdge, DiagramGraph, DiagramNode, DiagramNodeRole};
use crate::template::{FieldPath, Template};
use crate::types::GraphTypes;

/// One compiled CEL expression.
#[derive(Debug, Clone)]
pub struct CompiledExpression {
    /// The CEL source (for an interpolated string, the concatenation it compiles to).
    pub source: String,
    /// The planned program.
    pub program: Program,
    /// The checked result type.
    pub output_type: Type,
    /// The ids of the nodes the expression reads (sorted).
    pub references: Vec<String>,
}

/// An expression inside a template, data value, externalRef or status, at a field path.
#[derive(Debug, Clone)]
pub struct CompiledField {
    /// Where the value goes, relative to the node's value (or to `status`).
    pub path: FieldPath,
    /// How the string was written (standalone `${...}` keeps the result's type; interpolated
    /// text is a string).
    pub template: Template,
    /// The compiled expression.
    pub expression: CompiledExpression,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NodeKind {
    /// An object kro creates and manages.
    Template {
        /// Its kind.
        gvk: Gvk,
        /// Whether the kind is namespaced, when the schema source knew.
        namespaced: Option<bool>,
        /// Whether a schema was found (else the template is checked schemaless).
        schema_known: bool,
    },
    /// An existing object (by name) or objects (by selector) kro reads.
    ExternalRef {
        /// Its kind.
        gvk: Gvk,
        /// True when selected by labels: the node is a list.
        by_selector: bool,
    },
    /// A computed value (seed 001).
    Data,
}

/// How a collection iterates.
#[derive(Debug, Clone)]
pub enum CompiledForEach {
    /// Upstream's named dimensions; the collection is their cartesian product.
    Dimensions(Vec<(String, CompiledExpression)>),
    /// The seed's single expression, with `each.*` in the template.
    Each(CompiledExpression),
}

/// One node of the graph.
#[derive(Debug, Clone)]
pub struct CompiledNode {
    /// The id.
    pub id: NodeId,
    /// Its position in the RGD's `resources`.
    pub index: usize,
    /// What it is.
    pub kind: NodeKind,
    /// The template, the data value, or the externalRef's `metadata` (name, namespace,
    /// selector) as written; expressions are at [`fields`](Self::fields).
    pub value: Json,
    /// The expressions inside [`value`](Self::value).
    pub fields: Vec<CompiledField>,
    /// Readiness conditions (all must hold).
    pub ready_when: Vec<CompiledExpression>,
    /// Inclusion conditions (all must hold).
    pub include_when: Vec<CompiledExpression>,
    /// Present for collections.
    pub for_each: Option<CompiledForEach>,
    /// The ids this node depends on, sorted.
    pub dependencies: Vec<NodeId>,
    /// The type other expressions see for this node's id (a list for collections).
    pub cel_type: Type,
    /// When its items may move to a new desired state (`propagateWhen` on a collection,
    /// KREP-006; gate `PropagationControl`).
    pub propagation: Option<crate::propagation::PropagationPolicy>,
    /// What becomes of its objects when kro would delete them (KREP-014); `None` deletes
    /// them and stamps nothing on them.
    pub lifecycle: Option<Lifecycle>,
}

/// A resource's compiled `lifecycle` (see [`crate::lifecycle`]).
#[derive(Debug, Clone)]
pub enum Lifecycle {
    /// The static map form, `{deletePolicy: retain}`.
    Fixed(crate::lifecycle::DeletePolicy),
    /// An expression of the `kro.policy` library, reading `schema` at most.
    Expression(CompiledExpression),
}

impl CompiledNode {
    /// Whether the node expands to a list (forEach, or an externalRef by selector).
    pub fn is_collection(&self) -> bool {
        self.for_each.is_some()
            || matches!(
                self.kind,
                NodeKind::ExternalRef {
                    by_selector: true,
                    ..
                }
            )
    }
}

/// A field of the instance status: an expression, or a declaration kro fills itself (the
/// `integer | scale` replica count).
#[derive(Debug, Clone)]
pub enum StatusField {
    /// `${...}` projected into the status.
    Expression(CompiledField),
    /// A typed field without an expression.
    Declared {
        /// Where, relative to `status`.
        path: FieldPath,
        /// Its schema.
        schema: Box<Schema>,
    },
}

/// A problem worth reporting that does not stop the build.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BuildWarning {
    /// A kind no schema source knows: its template is checked without a schema.
    UnknownKind {
        /// The node.
        resource: String,
        /// The kind.
        gvk: Gvk,
    },
}

impl std::fmt::Display for BuildWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildWarning::UnknownKind { resource, gvk } => write!(
                f,
                "resource {resource}: no schema for {gvk}; its template is checked without one \
                 (pass its CRD with --crds, the RGD that defines it with -f, or read the cluster's schemas with --kubeconfig)"
            ),
        }
    }
}

/// An RGD compiled: everything the controller, `kro render` and the SDK need.
#[derive(Debug, Clone)]
pub struct CompiledGraph {
    /// The RGD's name.
    pub name: String,
    /// The generated kind's names.
    pub names: KindNames,
    /// The instance spec schema.
    pub spec_schema: Schema,
    /// The instance status schema (inferred fields, `state`, `conditions`).
    pub status_schema: Schema,
    /// The generated instance CRD.
    pub crd: Json,
    /// The generated `<Kind>Set` CRD, when `spec.scaling` is set.
    pub set_crd: Option<Json>,
    /// The `<Kind>Set` kind's names, when `spec.scaling` is set.
    pub set_names: Option<KindNames>,
    /// The scale subresource's fields.
    pub scale: ScaleFields,
    /// How instances move to a new revision, when the RGD says (gate `PropagationControl`);
    /// `None`: every instance at once.
    pub propagation: Option<crate::propagation::PropagationPolicy>,
    /// The nodes, in the RGD's order.
    pub nodes: Vec<CompiledNode>,
    /// Node indices by dependency level; inside a level by original index, then id.
    pub levels: Vec<Vec<usize>>,
    /// The instance status fields.
    pub status: Vec<StatusField>,
    /// Author-defined status conditions (`status.conditions` expressions).
    pub status_conditions: Vec<CompiledExpression>,
    /// The object types the expressions were checked against (for converting observed
    /// objects to CEL values with the right types).
    pub types: Arc<GraphTypes>,
    /// The CEL type of `schema` (the instance without its status).
    pub instance_type: Type,
    /// Problems that did not stop the build.
    pub warnings: Vec<BuildWarning>,
    /// The position in `nodes` of each id, so that [`CompiledGraph::node`] does not scan (a
    /// plan looks every node up: a scan made a chain of N resources cost N²).
    pub(crate) node_positions: std::collections::HashMap<String, usize>,
    /// What building it took.
    pub stats: BuildStats,
    /// Whether an expression reads `time` (gate `CELTimeFunctions`): a plan then needs the
    /// instant `time.now()` reads.
    pub reads_time: bool,
}

/// What building a graph took, to hold its cost to the size of the RGD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildStats {
    /// Node ids declared as variables in the environments the expressions were checked in,
    /// summed over the environments: linear in the RGD when each node declares only the ids
    /// it reads.
    pub variables_declared: usize,
}

impl CompiledGraph {
    /// A node by id.
    pub fn node(&self, id: &str) -> Option<&CompiledNode> {
        let position = self.node_positions.get(id);
        match position.and_then(|&at| self.nodes.get(at)) {
            Some(node) if node.id == id => Some(node),
            None if position.is_none() && self.node_positions.len() == self.nodes.len() => None,
            // `nodes` is public: after a caller changed it, the index may be stale.
            _ => self.nodes.iter().find(|node| node.id == id),
        }
    }

    /// The picture of the graph: nodes by level, labelled with their kind and role, and an
    /// edge from each dependency to its dependent.
    pub fn diagram(&self) -> DiagramGraph {
        let mut diagram = DiagramGraph::default();
        for level in &self.levels {
            let mut ids = Vec::with_capacity(level.len());
            for node in level.iter().filter_map(|index| self.nodes.get(*index)) {
                let (kind, role) = match &node.kind {
                    NodeKind::Template { gvk, .. } if node.is_collection() => {
                        (gvk.kind().to_owned(), DiagramNodeRole::Collection)
                    }
                    NodeKind::Template { gvk, .. } => {
                        (gvk.kind().to_owned(), DiagramNodeRole::Resource)
                    }
                    NodeKind::ExternalRef { gvk, .. } => {
                        (gvk.kind().to_owned(), DiagramNodeRole::ExternalRef)
                    }
                    NodeKind::Data => (String::new(), DiagramNodeRole::Data),
                };
                diagram
                    .nodes
                    .push(DiagramNode::new(node.id.clone(), kind).with_role(role));
                for dependency in &node.dependencies {
                    diagram
                        .edges
                        .push(DiagramEdge::new(dependency.clone(), node.id.clone()));
                }
                ids.push(node.id.to_string());
            }
            diagram.levels.push(ids);
        }
        diagram
    }

    /// The ids in topological order (levels concatenated).
    pub fn topological_order(&self) -> Vec<&str> {
        self.levels
            .iter()
            .flatten()
            .filter_map(|index| self.nodes.get(*index).map(|node| node.id.as_str()))
            .collect()
    }
}
