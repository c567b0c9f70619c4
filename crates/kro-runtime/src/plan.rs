//! The plan of one instance: for each node, in level order, what it should be (desired
//! objects, a data value), whether it is ready, and if not, why.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use kro_cel::{Type, Value};
use kro_graph::{
    CompiledExpression, CompiledGraph, CompiledNode, FieldPath, NodeKind, Scope as KindScope,
};

use crate::status::{ControllerFacts, InstanceStatus};
use serde_json::Value as Json;

use crate::evaluate::{FieldProblem, Problem, Scope, evaluate_condition, render};
use crate::foreach::{Iteration, expand};
use crate::metadata::{self, applyset_id};
use crate::observed::{ListKey, ObjectKey, Observed};
use crate::selector::LabelSelector;

/// How nodes wait for each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scheduling {
    /// The seed's level barrier: level `k + 1` is planned only once every node of levels
    /// `0..=k` is ready (or skipped).
    #[default]
    Levels,
    /// A node is planned as soon as its own dependencies are ready.
    Wavefront,
}

impl Scheduling {
    /// `levels` or `wavefront`.
    pub fn name(self) -> &'static str {
        match self {
            Scheduling::Levels => "levels",
            Scheduling::Wavefront => "wavefront",
        }
    }
}

/// The default limit on the items of one collection (upstream's `--rgd-max-collection-size`).
pub const DEFAULT_MAX_COLLECTION_SIZE: usize = 1000;

/// Settings of the planner.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Level barrier or wavefront.
    pub scheduling: Scheduling,
    /// The most items one collection may have.
    pub max_collection_size: usize,
    /// The kro version written into `kro.run/kro-version` labels.
    pub kro_version: String,
    /// The time of this plan (RFC 3339), stamped on conditions whose status changes; `None`
    /// leaves new conditions without `lastTransitionTime` (a preview, as `kro render`).
    pub now: Option<String>,
    /// How the controller's own steps went (finalizer and labels, graph availability).
    pub controller: ControllerFacts,
    /// Treat readyWhen conditions that do not hold (or wait for data) as holding, and record
    /// them in [`NodePlan::assumed`]: for previews (`kro render --assume-ready`), where no
    /// controller writes the status those conditions read. Never set by the controller.
    pub assume_ready: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            scheduling: Scheduling::Levels,
            max_collection_size: DEFAULT_MAX_COLLECTION_SIZE,
            kro_version: format!("v{}", env!("CARGO_PKG_VERSION")),
            now: None,
            controller: ControllerFacts::default(),
            assume_ready: false,
        }
    }
}

/// Where a node stands in this plan.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeState {
    /// Observed (or computed) and ready: dependents may use it.
    Ready,
    /// Not ready yet; the reason says what it waits for.
    Waiting(Wait),
    /// Not part of the instance this time: its objects are not applied (and are pruned).
    Skipped(Skip),
    /// An error the author must fix; the node and its dependents stop here.
    Failed(NodeError),
}

impl NodeState {
    /// Whether dependents may proceed: ready or skipped.
    pub fn is_settled(&self) -> bool {
        matches!(self, NodeState::Ready | NodeState::Skipped(_))
    }
}

/// What a node waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Wait {
    /// Level barrier: a node of an earlier level is not ready.
    Level {
        /// The first level that is not ready.
        level: usize,
        /// Its nodes that are not ready.
        nodes: Vec<String>,
    },
    /// Wavefront: these dependencies are not ready.
    Dependencies(Vec<String>),
    /// An expression reads data that is not there yet.
    Data {
        /// The field (in the RGD) of the expression.
        path: FieldPath,
        /// The expression.
        expression: String,
        /// What is missing.
        reason: String,
    },
    /// The desired objects are not observed yet (not applied, or not read back).
    Applied(Vec<ObjectKey>),
    /// A readyWhen condition does not hold (or reads data that is not there yet).
    ReadyWhen {
        /// The condition.
        expression: String,
        /// The collection item it failed for, when per item.
        item: Option<usize>,
        /// Why it could not be evaluated, if it could not.
        pending: Option<String>,
    },
    /// Objects of the node are being deleted (they carry a deletionTimestamp): the node waits
    /// until they are gone and can be created again.
    Terminating(Vec<ObjectKey>),
    /// The externalRef's object does not exist.
    NotFound(ObjectKey),
    /// The externalRef's object or list has not been read yet (see [`Plan::reads`]).
    Read(Read),
}

/// Why a node is skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// An includeWhen condition is false.
    IncludeWhen(String),
    /// A dependency is skipped (skipping is contagious, as upstream).
    Dependency(String),
}

/// An error of one node, at a place in the RGD.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeError {
    /// The RGD field (`spec.resources[1].template.spec.replicas`).
    pub path: FieldPath,
    /// The expression, when an expression failed.
    pub expression: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        if let Some(expression) = &self.expression {
            write!(f, "expression {expression:?}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Level { level, nodes } => write!(
                f,
                "waiting for level {level} to be ready ({})",
                nodes.join(", ")
            ),
            Wait::Dependencies(ids) => write!(f, "waiting for {} to be ready", ids.join(", ")),
            Wait::Data {
                path,
                expression,
                reason,
            } => write!(
                f,
                "{path}: expression {expression:?} is waiting for data: {reason}"
            ),
            Wait::Applied(keys) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                write!(f, "waiting for {} to be applied", keys.join(", "))
            }
            Wait::ReadyWhen {
                expression,
                item,
                pending,
            } => {
                write!(f, "readyWhen {expression:?} ")?;
                if let Some(item) = item {
                    write!(f, "for item {item} ")?;
                }
                match pending {
                    Some(reason) => write!(f, "is waiting for data: {reason}"),
                    None => f.write_str("is false"),
                }
            }
            Wait::Terminating(keys) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                write!(f, "{} is being deleted", keys.join(", "))
            }
            Wait::NotFound(key) => write!(f, "{key} does not exist"),
            Wait::Read(Read::Object(key)) => write!(f, "{key} has not been read"),
            Wait::Read(Read::List(list)) => write!(f, "{} has not been listed", list_name(list)),
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::IncludeWhen(expression) => write!(f, "includeWhen {expression:?} is false"),
            Skip::Dependency(id) => write!(f, "{id} is skipped"),
        }
    }
}

fn list_name(list: &ListKey) -> String {
    let kind = if list.group.is_empty() {
        list.kind.clone()
    } else {
        format!("{}.{}", list.kind, list.group)
    };
    match &list.namespace {
        Some(namespace) => format!("{kind} in namespace {namespace}"),
        None => format!("{kind} in all namespaces"),
    }
}

/// A read the caller should make before planning again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Read {
    /// One object (an externalRef by name).
    Object(ObjectKey),
    /// A list (an externalRef by selector).
    List(ListKey),
}

/// An object kro should apply.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    /// Its identity.
    pub key: ObjectKey,
    /// The object, with kro's labels and annotations.
    pub object: Json,
    /// Its position in its collection, for collection items.
    pub collection_index: Option<usize>,
}

/// The plan of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodePlan {
    /// The node's id.
    pub id: String,
    /// Its level.
    pub level: usize,
    /// Where it stands.
    pub state: NodeState,
    /// The objects to apply (template nodes whose dependencies are ready), in collection
    /// order.
    pub desired: Vec<DesiredObject>,
    /// The value of a data node once computed.
    pub value: Option<Json>,
    /// Readiness conditions taken as met ([`PlanOptions::assume_ready`]).
    pub assumed: Vec<Wait>,
}

/// The plan of one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One entry per node, in the RGD's order.
    pub nodes: Vec<NodePlan>,
    /// Node indices (into [`nodes`](Self::nodes)) by level.
    pub levels: Vec<Vec<usize>>,
    /// Reads to make (externalRefs not read yet), sorted.
    pub reads: Vec<Read>,
    /// The instance status this plan leads to.
    pub status: InstanceStatus,
}

impl Plan {
    /// A node's plan by id.
    pub fn node(&self, id: &str) -> Option<&NodePlan> {
        self.nodes.iter().find(|node| node.id == id)
    }

    /// Whether every node is ready or skipped.
    pub fn is_ready(&self) -> bool {
        self.nodes.iter().all(|node| node.state.is_settled())
    }

    /// The objects to apply, level by level.
    pub fn desired_by_level(&self) -> Vec<Vec<&DesiredObject>> {
        self.levels
            .iter()
            .map(|level| {
                level
                    .iter()
                    .filter_map(|index| self.nodes.get(*index))
                    .flat_map(|node| &node.desired)
                    .collect()
            })
            .collect()
    }
}

/// The instance as kro sees it while planning.
#[derive(Debug, Clone)]
pub(crate) struct InstanceInfo {
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
    pub(crate) uid: Option<String>,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) applyset: String,
}

impl InstanceInfo {
    pub(crate) fn of(graph: &CompiledGraph, instance: &Json) -> InstanceInfo {
        let metadata = &instance["metadata"];
        let text = |field: &str| {
            metadata[field]
                .as_str()
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let name = text("name").unwrap_or_default();
        let namespace = match graph.names.scope {
            KindScope::Namespaced => {
                Some(text("namespace").unwrap_or_else(|| "default".to_owned()))
            }
            KindScope::Cluster => None,
        };
        InstanceInfo {
            applyset: applyset_id(
                &name,
                namespace.as_deref().unwrap_or(""),
                &graph.names.kind,
                &graph.names.group,
            ),
            name,
            namespace,
            uid: text("uid"),
            group: graph.names.group.clone(),
            version: graph.names.version.clone(),
            kind: graph.names.kind.clone(),
        }
    }
}

/// Plans one instance of `graph`: `instance` as the API server stores it (defaulted),
/// `observed` what the caller has seen of the cluster.
pub fn plan(
    graph: &CompiledGraph,
    instance: &Json,
    observed: &Observed,
    options: &PlanOptions,
) -> Plan {
    let (mut plan, planner) = Planner::new(graph, instance, observed, options).run();
    plan.status = crate::status::compute(
        &planner,
        &plan,
        instance,
        &options.controller,
        options.now.as_deref(),
    );
    plan
}

/// The planner's state while walking the levels.
pub(crate) struct Planner<'a> {
    pub(crate) graph: &'a CompiledGraph,
    observed: &'a Observed,
    options: &'a PlanOptions,
    pub(crate) info: InstanceInfo,
    /// `schema` and the value of every node that has one (observed or computed).
    pub(crate) values: HashMap<String, Value>,
    states: HashMap<String, NodeState>,
    /// Which node renders each object, to catch two nodes rendering one object.
    targets: HashMap<ObjectKey, String>,
    reads: BTreeSet<Read>,
    /// 1-based deletion wave of each node.
    apply_order: HashMap<String, usize>,
    /// Readiness assumed per node ([`PlanOptions::assume_ready`]).
    assumed: HashMap<String, Vec<Wait>>,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(
        graph: &'a CompiledGraph,
        instance: &'a Json,
        observed: &'a Observed,
        options: &'a PlanOptions,
    ) -> Self {
        let info = InstanceInfo::of(graph, instance);
        let mut values = HashMap::new();
        values.insert("schema".to_owned(), schema_value(graph, instance));
        let apply_order = apply_orders(graph);
        Planner {
            graph,
            observed,
            options,
            info,
            values,
            states: HashMap::new(),
            targets: HashMap::new(),
            reads: BTreeSet::new(),
            apply_order,
            assumed: HashMap::new(),
        }
    }

    /// Walks the levels; returns the plan and the planner (for status computation).
    pub(crate) fn run(mut self) -> (Plan, Self) {
        let graph = self.graph;
        let mut plans: Vec<Option<NodePlan>> = graph.nodes.iter().map(|_| None).collect();
        // Levels mode: the first level that is not ready, with its unready nodes.
        let mut barrier: Option<(usize, Vec<String>)> = None;
        for (level, indices) in graph.levels.iter().enumerate() {
            for &index in indices {
                let Some(node) = graph.nodes.get(index) else {
                    continue;
                };
                let plan = self.schedule(node, level, barrier.as_ref());
                self.states.insert(node.id.clone(), plan.state.clone());
                plans[index] = Some(plan);
            }
            if barrier.is_none() {
                let unready: Vec<String> = indices
                    .iter()
                    .filter_map(|index| graph.nodes.get(*index))
                    .filter(|node| !self.states.get(&node.id).is_some_and(NodeState::is_settled))
                    .map(|node| node.id.clone())
                    .collect();
                if !unready.is_empty() {
                    barrier = Some((level, unready));
                }
            }
        }
        let plan = Plan {
            nodes: plans.into_iter().flatten().collect(),
            levels: graph.levels.clone(),
            reads: std::mem::take(&mut self.reads).into_iter().collect(),
            status: InstanceStatus::empty(),
        };
        (plan, self)
    }

    fn schedule(
        &mut self,
        node: &CompiledNode,
        level: usize,
        barrier: Option<&(usize, Vec<String>)>,
    ) -> NodePlan {
        let mut plan = NodePlan {
            id: node.id.clone(),
            level,
            state: NodeState::Ready,
            desired: Vec::new(),
            value: None,
            assumed: Vec::new(),
        };
        if let Some(skipped) = node
            .dependencies
            .iter()
            .find(|id| matches!(self.states.get(*id), Some(NodeState::Skipped(_))))
        {
            plan.state = NodeState::Skipped(Skip::Dependency(skipped.clone()));
            return plan;
        }
        // includeWhen is decided as soon as what it reads is ready, even while the node
        // waits for other dependencies, so that a skipped node (and, contagiously, what
        // depends on it) is known at once, as upstream does.
        match self.include_when(node) {
            Ok(_) => {}
            Err(state) => {
                plan.state = state;
                return plan;
            }
        }
        let unready: Vec<String> = node
            .dependencies
            .iter()
            .filter(|id| !self.states.get(*id).is_some_and(NodeState::is_settled))
            .cloned()
            .collect();
        match (self.options.scheduling, barrier) {
            (Scheduling::Levels, Some((level, nodes))) => {
                plan.state = NodeState::Waiting(Wait::Level {
                    level: *level,
                    nodes: nodes.clone(),
                });
                return plan;
            }
            _ if !unready.is_empty() => {
                plan.state = NodeState::Waiting(Wait::Dependencies(unready));
                return plan;
            }
            _ => {}
        }
        plan.state = self.evaluate_node(node, &mut plan);
        plan.assumed = self.assumed.remove(&node.id).unwrap_or_default();
        plan
    }

    /// includeWhen: `Ok(true)` when every condition holds, `Ok(false)` when it cannot be
    /// evaluated yet (it reads a node that is not ready), or the state it puts the node in.
    fn include_when(&self, node: &CompiledNode) -> Result<bool, NodeState> {
        let evaluable = node.include_when.iter().all(|condition| {
            condition
                .references
                .iter()
                .all(|id| self.states.get(id) == Some(&NodeState::Ready))
        });
        if !evaluable {
            return Ok(false);
        }
        let base = resource_path(node.index);
        for (position, condition) in node.include_when.iter().enumerate() {
            let scope = Scope::new(&self.values);
            match evaluate_condition(condition, &scope) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(NodeState::Skipped(Skip::IncludeWhen(
                        condition.source.clone(),
                    )));
                }
                // A condition on the instance alone cannot wait for data: the instance is
                // all there is (upstream makes this an error too).
                Err(Problem::Pending { expression, reason }) if condition.references.is_empty() => {
                    return Err(NodeState::Failed(NodeError {
                        path: base.key("includeWhen").index(position),
                        expression: Some(expression),
                        message: reason,
                    }));
                }
                Err(problem) => {
                    return Err(problem_state(
                        base.key("includeWhen").index(position),
                        problem,
                    ));
                }
            }
        }
        Ok(true)
    }

    fn evaluate_node(&mut self, node: &CompiledNode, plan: &mut NodePlan) -> NodeState {
        let base = resource_path(node.index);
        let iterations = match &node.for_each {
            None => None,
            Some(for_each) => {
                let scope = Scope::new(&self.values);
                match expand(for_each, &scope, self.options.max_collection_size) {
                    Ok(iterations) => Some(iterations),
                    Err(problem) => return problem_state(base.key("forEach"), problem),
                }
            }
        };
        match &node.kind {
            NodeKind::Data => self.evaluate_data(node, iterations, plan),
            NodeKind::Template {
                gvk, namespaced, ..
            } => {
                let namespaced = *namespaced;
                let _ = gvk;
                self.evaluate_template(node, iterations, namespaced, plan)
            }
            NodeKind::ExternalRef { gvk, by_selector } => {
                let group = gvk.group().to_owned();
                let kind = gvk.kind().to_owned();
                self.evaluate_external(node, &group, &kind, *by_selector)
            }
            _ => NodeState::Failed(NodeError {
                path: base,
                expression: None,
                message: "this kind of node is not supported by this version of kro".to_owned(),
            }),
        }
    }

    /// Renders the node's value once, or once per iteration.
    fn render_all(
        &self,
        node: &CompiledNode,
        iterations: &Option<Vec<Iteration>>,
    ) -> Result<Vec<(Json, Option<String>)>, NodeState> {
        let base = resource_path(node.index).join(&value_path(node));
        let one = |bindings: &[(String, Value)]| {
            let scope = Scope::new(&self.values).extend(bindings.iter().cloned());
            render(&node.value, &node.fields, &scope)
                .map_err(|problems| field_problem_state(&base, problems))
        };
        match iterations {
            None => Ok(vec![(one(&[])?, None)]),
            Some(iterations) => iterations
                .iter()
                .map(|iteration| Ok((one(&iteration.bindings)?, Some(iteration.key.clone()))))
                .collect(),
        }
    }

    fn evaluate_data(
        &mut self,
        node: &CompiledNode,
        iterations: Option<Vec<Iteration>>,
        plan: &mut NodePlan,
    ) -> NodeState {
        let rendered = match self.render_all(node, &iterations) {
            Ok(rendered) => rendered,
            Err(state) => return state,
        };
        let value = if iterations.is_some() {
            Json::Array(rendered.into_iter().map(|(value, _)| value).collect())
        } else {
            rendered
                .into_iter()
                .next()
                .map(|(value, _)| value)
                .unwrap_or(Json::Null)
        };
        match self.convert(&value, &node.cel_type) {
            Ok(converted) => {
                self.values.insert(node.id.clone(), converted);
                plan.value = Some(value);
                NodeState::Ready
            }
            Err(message) => NodeState::Failed(NodeError {
                path: resource_path(node.index).key("data"),
                expression: None,
                message,
            }),
        }
    }

    fn evaluate_template(
        &mut self,
        node: &CompiledNode,
        iterations: Option<Vec<Iteration>>,
        namespaced: Option<bool>,
        plan: &mut NodePlan,
    ) -> NodeState {
        let template_path = resource_path(node.index).key("template");
        let rendered = match self.render_all(node, &iterations) {
            Ok(rendered) => rendered,
            Err(state) => return state,
        };
        let size = rendered.len();
        let is_collection = iterations.is_some();
        let mut desired = Vec::with_capacity(size);
        for (position, (mut object, key)) in rendered.into_iter().enumerate() {
            if let Err(message) = self.normalize_namespace(&mut object, namespaced) {
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("namespace"),
                    expression: None,
                    message,
                });
            }
            let Some(object_key) = ObjectKey::of(&object) else {
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("name"),
                    expression: None,
                    message: "the rendered object has no metadata.name".to_owned(),
                });
            };
            if let Some(owner) = self.targets.get(&object_key) {
                let message = if *owner == node.id {
                    format!(
                        "two items of the collection render the same object {object_key}: metadata.name must differ between items"
                    )
                } else {
                    format!("{object_key} is also rendered by resource {owner}")
                };
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("name"),
                    expression: None,
                    message,
                });
            }
            self.targets.insert(object_key.clone(), node.id.clone());
            self.add_metadata(
                &mut object,
                node,
                is_collection.then_some((position, size, key.as_deref())),
            );
            desired.push(DesiredObject {
                key: object_key,
                object,
                collection_index: is_collection.then_some(position),
            });
        }
        // What has been observed of the desired objects, in desired order.
        let observed: Vec<&Json> = desired
            .iter()
            .filter_map(|object| self.observed.get(&object.key))
            .collect();
        let missing: Vec<ObjectKey> = desired
            .iter()
            .filter(|object| self.observed.get(&object.key).is_none())
            .map(|object| object.key.clone())
            .collect();
        plan.desired = desired;
        let value = if is_collection {
            self.convert_list(&observed, &node.cel_type)
        } else {
            match observed.first() {
                Some(object) => self.convert(object, &node.cel_type),
                None => return NodeState::Waiting(Wait::Applied(missing)),
            }
        };
        if let Some(failed) = self.bind(node, value, template_path) {
            return failed;
        }
        if !missing.is_empty() {
            return NodeState::Waiting(Wait::Applied(missing));
        }
        let terminating: Vec<ObjectKey> = plan
            .desired
            .iter()
            .filter(|object| {
                self.observed
                    .get(&object.key)
                    .and_then(|observed| observed.pointer("/metadata/deletionTimestamp"))
                    .is_some_and(|stamp| !stamp.is_null())
            })
            .map(|object| object.key.clone())
            .collect();
        if !terminating.is_empty() {
            return NodeState::Waiting(Wait::Terminating(terminating));
        }
        self.readiness(node, &observed, is_collection)
    }

    fn evaluate_external(
        &mut self,
        node: &CompiledNode,
        group: &str,
        kind: &str,
        by_selector: bool,
    ) -> NodeState {
        let path = resource_path(node.index).key("externalRef").key("metadata");
        let rendered = match self.render_all(node, &None) {
            Ok(mut rendered) => rendered.pop().map(|(value, _)| value).unwrap_or(Json::Null),
            Err(state) => return state,
        };
        let namespace = rendered["namespace"]
            .as_str()
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned);
        let namespaced =
            kro_schema::Catalog::kubernetes_namespaced(&kro_schema::Gvk::new(group, "", kind));
        if by_selector {
            let selector = match LabelSelector::parse(&rendered["selector"]) {
                Ok(selector) => selector,
                Err(error) => {
                    return NodeState::Failed(NodeError {
                        path: path.key("selector"),
                        expression: None,
                        message: error.to_string(),
                    });
                }
            };
            let list = ListKey {
                group: group.to_owned(),
                kind: kind.to_owned(),
                namespace: if namespaced == Some(false) {
                    None
                } else {
                    namespace
                },
            };
            if !self.observed.is_listed(&list) {
                self.reads.insert(Read::List(list.clone()));
                return NodeState::Waiting(Wait::Read(Read::List(list)));
            }
            let items: Vec<&Json> = self
                .observed
                .list(&list)
                .filter(|object| selector.matches(object))
                .collect();
            let value = self.convert_list(&items, &node.cel_type);
            if let Some(failed) = self.bind(node, value, path) {
                return failed;
            }
            return self.readiness(node, &items, true);
        }
        let Some(name) = rendered["name"].as_str().filter(|name| !name.is_empty()) else {
            return NodeState::Failed(NodeError {
                path: path.key("name"),
                expression: None,
                message: "the externalRef has no name".to_owned(),
            });
        };
        let key = ObjectKey {
            group: group.to_owned(),
            kind: kind.to_owned(),
            namespace: match namespaced {
                Some(false) => None,
                _ => namespace.or_else(|| self.info.namespace.clone()),
            },
            name: name.to_owned(),
        };
        let Some(object) = self.observed.get(&key) else {
            if self.observed.is_known(&key) {
                return NodeState::Waiting(Wait::NotFound(key));
            }
            self.reads.insert(Read::Object(key.clone()));
            return NodeState::Waiting(Wait::Read(Read::Object(key)));
        };
        let value = self.convert(object, &node.cel_type);
        if let Some(failed) = self.bind(node, value, path) {
            return failed;
        }
        self.readiness(node, &[object], false)
    }

    /// Binds the node's value for the expressions that read it; a value that cannot be
    /// converted fails the node (the returned state).
    fn bind(
        &mut self,
        node: &CompiledNode,
        value: Result<Value, String>,
        path: FieldPath,
    ) -> Option<NodeState> {
        match value {
            Ok(value) => {
                self.values.insert(node.id.clone(), value);
                None
            }
            Err(message) => Some(NodeState::Failed(NodeError {
                path,
                expression: None,
                message,
            })),
        }
    }

    /// readyWhen (all must hold), or ready when observed.
    fn readiness(
        &mut self,
        node: &CompiledNode,
        observed: &[&Json],
        is_collection: bool,
    ) -> NodeState {
        let element = match &node.cel_type {
            Type::List(element) if is_collection => element.as_ref().clone(),
            other => other.clone(),
        };
        for (position, condition) in node.ready_when.iter().enumerate() {
            let path = resource_path(node.index).key("readyWhen").index(position);
            let per_item = is_collection && uses_each(condition);
            if per_item {
                for (item, object) in observed.iter().enumerate() {
                    let value = match self.convert(object, &element) {
                        Ok(value) => value,
                        Err(message) => {
                            return NodeState::Failed(NodeError {
                                path,
                                expression: Some(condition.source.clone()),
                                message,
                            });
                        }
                    };
                    let scope = Scope::new(&self.values).with("each", value);
                    if let Some(state) = ready_state(condition, &scope, Some(item), &path) {
                        match self.assume(node, state) {
                            Some(state) => return state,
                            None => break,
                        }
                    }
                }
            } else {
                let scope = Scope::new(&self.values);
                if let Some(state) = ready_state(condition, &scope, None, &path)
                    && let Some(state) = self.assume(node, state)
                {
                    return state;
                }
            }
        }
        NodeState::Ready
    }

    /// With [`PlanOptions::assume_ready`], records a readiness wait as assumed met (`None`);
    /// otherwise, and for errors, returns the state.
    fn assume(&mut self, node: &CompiledNode, state: NodeState) -> Option<NodeState> {
        match state {
            NodeState::Waiting(wait) if self.options.assume_ready => {
                self.assumed.entry(node.id.clone()).or_default().push(wait);
                None
            }
            other => Some(other),
        }
    }

    /// A namespaced child without a namespace gets the instance's; under a cluster-scoped
    /// instance it must name one.
    fn normalize_namespace(
        &self,
        object: &mut Json,
        namespaced: Option<bool>,
    ) -> Result<(), String> {
        if namespaced == Some(false) {
            return Ok(());
        }
        let has_namespace = object
            .pointer("/metadata/namespace")
            .and_then(Json::as_str)
            .is_some_and(|namespace| !namespace.is_empty());
        if has_namespace {
            return Ok(());
        }
        match &self.info.namespace {
            Some(namespace) => {
                if let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut) {
                    metadata.insert("namespace".to_owned(), Json::String(namespace.clone()));
                }
                Ok(())
            }
            None => Err(
                "a namespaced object under a cluster-scoped instance must set metadata.namespace"
                    .to_owned(),
            ),
        }
    }

    fn add_metadata(
        &self,
        object: &mut Json,
        node: &CompiledNode,
        collection: Option<(usize, usize, Option<&str>)>,
    ) {
        let info = &self.info;
        let mut labels = vec![
            (metadata::OWNED_LABEL, "true".to_owned()),
            (
                metadata::KRO_VERSION_LABEL,
                self.options.kro_version.clone(),
            ),
            (metadata::MANAGED_BY_LABEL, "kro".to_owned()),
            (metadata::INSTANCE_NAME_LABEL, info.name.clone()),
            (metadata::INSTANCE_GROUP_LABEL, info.group.clone()),
            (metadata::INSTANCE_VERSION_LABEL, info.version.clone()),
            (metadata::INSTANCE_KIND_LABEL, info.kind.clone()),
            (metadata::NODE_ID_LABEL, node.id.clone()),
            (metadata::APPLYSET_PART_OF_LABEL, info.applyset.clone()),
        ];
        if let Some(uid) = &info.uid {
            labels.push((metadata::INSTANCE_ID_LABEL, uid.clone()));
        }
        if let Some(namespace) = &info.namespace {
            labels.push((metadata::INSTANCE_NAMESPACE_LABEL, namespace.clone()));
        }
        if let Some((index, size, key)) = collection {
            labels.push((metadata::COLLECTION_INDEX_LABEL, index.to_string()));
            labels.push((metadata::COLLECTION_SIZE_LABEL, size.to_string()));
            let key = key
                .filter(|key| metadata::is_label_value(key))
                .map_or_else(|| index.to_string(), str::to_owned);
            labels.push((metadata::COLLECTION_KEY_LABEL, key));
        }
        metadata::add_labels(object, labels);
        if let Some(order) = self.apply_order.get(&node.id) {
            metadata::add_annotations(
                object,
                [(metadata::APPLY_ORDER_ANNOTATION, order.to_string())],
            );
        }
    }

    pub(crate) fn convert(&self, json: &Json, hint: &Type) -> Result<Value, String> {
        let hint = (!matches!(hint, Type::Dyn)).then_some(hint);
        kro_cel::from_json(json, hint, Some(self.graph.types.as_ref()))
            .map_err(|error| format!("cannot read the object: {error}"))
    }

    fn convert_list(&self, items: &[&Json], hint: &Type) -> Result<Value, String> {
        let element = match hint {
            Type::List(element) => element.as_ref().clone(),
            _ => Type::Dyn,
        };
        let values = items
            .iter()
            .map(|item| self.convert(item, &element))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Value::List(Arc::new(values)))
    }
}

/// Upstream's `internal.kro.run/apply-order`: peel the graph from the nodes nothing depends
/// on (layer 0) towards the roots; with `L` layers a node of layer `i` gets `L - i`. Deletion
/// removes the highest order first, so dependents go before what they depend on.
pub fn apply_orders(graph: &CompiledGraph) -> HashMap<String, usize> {
    let ids: Vec<&str> = graph.nodes.iter().map(|node| node.id.as_str()).collect();
    let mut dependents: HashMap<&str, usize> = ids.iter().map(|id| (*id, 0)).collect();
    for node in &graph.nodes {
        for dependency in &node.dependencies {
            if let Some(count) = dependents.get_mut(dependency.as_str()) {
                *count += 1;
            }
        }
    }
    let mut layers: Vec<Vec<&str>> = Vec::new();
    let mut remaining: BTreeSet<&str> = ids.iter().copied().collect();
    while !remaining.is_empty() {
        let layer: Vec<&str> = remaining
            .iter()
            .copied()
            .filter(|id| dependents.get(id).copied() == Some(0))
            .collect();
        if layer.is_empty() {
            break; // a cycle, which the builder rules out
        }
        for id in &layer {
            remaining.remove(id);
            if let Some(node) = graph.node(id) {
                for dependency in &node.dependencies {
                    if let Some(count) = dependents.get_mut(dependency.as_str()) {
                        *count = count.saturating_sub(1);
                    }
                }
            }
        }
        layers.push(layer);
    }
    let total = layers.len();
    layers
        .into_iter()
        .enumerate()
        .flat_map(|(index, layer)| {
            layer
                .into_iter()
                .map(move |id| (id.to_owned(), total - index))
        })
        .collect()
}

/// `schema`: the instance without its status, typed as the instance spec.
fn schema_value(graph: &CompiledGraph, instance: &Json) -> Value {
    let mut without_status = instance.clone();
    if let Json::Object(object) = &mut without_status {
        object.remove("status");
    }
    kro_cel::from_json(
        &without_status,
        Some(&graph.instance_type),
        Some(graph.types.as_ref()),
    )
    .or_else(|_| kro_cel::from_json(&without_status, None, None))
    .unwrap_or(Value::Null)
}

/// Whether a readyWhen expression reads `each` (and so runs once per collection item).
fn uses_each(expression: &CompiledExpression) -> bool {
    expression
        .program
        .variables()
        .iter()
        .any(|variable| &**variable == "each")
}

/// `None` when the condition holds, else the state it leaves the node in.
fn ready_state(
    condition: &CompiledExpression,
    scope: &Scope<'_>,
    item: Option<usize>,
    path: &FieldPath,
) -> Option<NodeState> {
    match evaluate_condition(condition, scope) {
        Ok(true) => None,
        Ok(false) => Some(NodeState::Waiting(Wait::ReadyWhen {
            expression: condition.source.clone(),
            item,
            pending: None,
        })),
        Err(Problem::Pending { reason, .. }) => Some(NodeState::Waiting(Wait::ReadyWhen {
            expression: condition.source.clone(),
            item,
            pending: Some(reason),
        })),
        Err(Problem::Failed {
            expression,
            message,
        }) => Some(NodeState::Failed(NodeError {
            path: path.clone(),
            expression: Some(expression),
            message,
        })),
    }
}

/// `spec.resources[index]`.
pub(crate) fn resource_path(index: usize) -> FieldPath {
    FieldPath::root().key("spec").key("resources").index(index)
}

/// Where a node's value is written in its resource entry.
fn value_path(node: &CompiledNode) -> FieldPath {
    match node.kind {
        NodeKind::Data => FieldPath::root().key("data"),
        NodeKind::ExternalRef { .. } => FieldPath::root().key("externalRef").key("metadata"),
        _ => FieldPath::root().key("template"),
    }
}

fn problem_state(path: FieldPath, problem: Problem) -> NodeState {
    match problem {
        Problem::Pending { expression, reason } => NodeState::Waiting(Wait::Data {
            path,
            expression,
            reason,
        }),
        Problem::Failed {
            expression,
            message,
        } => NodeState::Failed(NodeError {
            path,
            expression: Some(expression),
            message,
        }),
    }
}

fn field_problem_state(base: &FieldPath, mut problems: Vec<FieldProblem>) -> NodeState {
    // Errors come first: a real error outranks data still to come.
    let first = problems.remove(0);
    problem_state(base.join(&first.path), first.problem)
}
