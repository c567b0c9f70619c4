//! The plan of one instance: for each node, in level order, what it should be (desired
//! objects, a data value), whether it is ready, and if not, why.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kro_cel::{Type, Value};
use kro_graph::{
    CompiledExpression, CompiledGraph, CompiledNode, FieldPath, NodeId, NodeKind,
    Scope as KindScope,
};

use crate::status::{ControllerFacts, InstanceStatus};
use serde_json::Value as Json;

use crate::apply_order::apply_orders;
use crate::evaluate::{Problem, Scope, evaluate_condition};
use crate::foreach::expand;
use crate::metadata::applyset_id;
use crate::observed::{ObjectKey, Observed, Read};

mod node_state;
mod nodes;

pub use node_state::{NodeError, NodeState, Skip, Wait};
use node_state::{field_problem_state, problem_state};

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
    /// The instant `time.now()` reads (gate `CELTimeFunctions`), the same for every
    /// expression of the plan: the controller's reconcile time, `kro render --now`. A graph
    /// that reads the time planned without one fails the nodes that read it.
    pub clock: Option<kro_cel::Timestamp>,
    /// How the controller's own steps went (finalizer and labels, graph availability).
    pub controller: ControllerFacts,
    /// Treat readyWhen conditions that do not hold (or wait for data) as holding, and record
    /// them in [`NodePlan::assumed`]: for previews (`kro render --assume-ready`), where no
    /// controller writes the status those conditions read. Never set by the controller.
    pub assume_ready: bool,
    /// Hold a template resource without readyWhen until each of its objects is ready by the
    /// rules of its kind ([`kind_readiness`](crate::kind_readiness)): a Deployment until its
    /// replicas are available, a Job until it completes, and so on. An object that waits
    /// gives [`Wait::Kind`] (through [`assume_ready`](Self::assume_ready) like any readiness
    /// wait); one that failed (a Job out of retries) fails the node. For the direct deploy
    /// engine, which applies once and must know when objects really are ready; never set by
    /// the controller, which keeps upstream kro's rule that an observed object is ready.
    pub kind_readiness: bool,
    /// The ApplySet the objects belong to (their `applyset.kubernetes.io/part-of`), when
    /// their parent is not the instance itself: a deploy with no instance object in the
    /// cluster (`kro apply`) stands a ConfigMap in for it. `None`: the instance's own id.
    pub applyset: Option<String>,
    /// Whether kinds are namespaced, as the API server serves them (discovery), for the kinds
    /// whose scope the graph's schemas did not say (custom kinds, a CRD the graph itself
    /// creates): a cluster-scoped object is then known by its name alone. Without an entry
    /// a kind the built-in catalog does not know is taken as namespaced.
    pub served_scopes: std::collections::BTreeMap<kro_schema::GroupKind, bool>,
    /// Receives what the plan reports as it is made (for metrics); `None` reports nothing.
    pub observer: Option<std::sync::Arc<dyn crate::PlanObserver>>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            scheduling: Scheduling::Levels,
            max_collection_size: DEFAULT_MAX_COLLECTION_SIZE,
            kro_version: format!("v{}", env!("CARGO_PKG_VERSION")),
            now: None,
            clock: None,
            controller: ControllerFacts::default(),
            assume_ready: false,
            kind_readiness: false,
            applyset: None,
            served_scopes: std::collections::BTreeMap::new(),
            observer: None,
        }
    }
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
    pub id: NodeId,
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
    /// When its items may move to their desired state (`propagateWhen` on a collection):
    /// what decides which of [`desired`](Self::desired) are applied now.
    pub propagation: Option<kro_graph::propagation::PropagationPolicy>,
    /// Under [`propagation`](Self::propagation): whether each item of
    /// [`desired`](Self::desired) is ready as observed (its `readyWhen` on `each`, or its
    /// kind's readiness); empty otherwise.
    pub items_ready: Vec<bool>,
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
    /// The first instant after [`PlanOptions::clock`] at which an expression that reads the
    /// time (`time.now()`, gate `CELTimeFunctions`) changes its answer: the instance must be
    /// planned again then, and there is nothing to re-plan for before.
    pub requeue_at: Option<kro_cel::Timestamp>,
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
    plan_with_schema(
        graph,
        instance,
        schema_value(graph, instance),
        observed,
        options,
    )
}

/// [`plan`], with `schema` already converted by [`schema_value`] from this very `instance`:
/// a caller planning one instance several times (after each level it applies) converts it
/// once.
pub fn plan_with_schema(
    graph: &CompiledGraph,
    instance: &Json,
    schema: Value,
    observed: &Observed,
    options: &PlanOptions,
) -> Plan {
    let _observing = crate::observe::Observing::start(options.observer.as_ref());
    let planner = crate::observe::timed(
        || Planner::new(graph, instance, schema, observed, options),
        |observer, elapsed, _| observer.planner_created(elapsed),
    );
    let (mut plan, planner) = planner.run();
    let nodes: Vec<(&NodeId, &NodeState)> = plan
        .nodes
        .iter()
        .map(|node| (&node.id, &node.state))
        .collect();
    let status = crate::status::compute(
        graph,
        &planner.values,
        &nodes,
        instance,
        &options.controller,
        options.now.as_deref(),
    );
    plan.status = status;
    plan.requeue_at = planner.clock.as_ref().and_then(|clock| clock.next_change());
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
    states: HashMap<NodeId, NodeState>,
    /// Which node renders each object, to catch two nodes rendering one object.
    targets: HashMap<ObjectKey, NodeId>,
    reads: BTreeSet<Read>,
    /// 1-based deletion wave of each node.
    apply_order: HashMap<NodeId, usize>,
    /// Readiness assumed per node ([`PlanOptions::assume_ready`]).
    assumed: HashMap<NodeId, Vec<Wait>>,
    /// The clock `time` reads, when the graph reads it.
    clock: Option<std::sync::Arc<kro_cel::Clock>>,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(
        graph: &'a CompiledGraph,
        instance: &'a Json,
        schema: Value,
        observed: &'a Observed,
        options: &'a PlanOptions,
    ) -> Self {
        let mut info = InstanceInfo::of(graph, instance);
        if let Some(applyset) = &options.applyset {
            info.applyset.clone_from(applyset);
        }
        let mut values = HashMap::new();
        values.insert("schema".to_owned(), schema);
        let clock = graph
            .reads_time
            .then_some(options.clock)
            .flatten()
            .map(kro_cel::Clock::new);
        if let Some(clock) = &clock {
            values.insert(
                kro_cel::TIME_VARIABLE.to_owned(),
                kro_cel::time_value(clock),
            );
        }
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
            clock,
        }
    }

    /// Walks the levels; returns the plan and the planner (for status computation).
    pub(crate) fn run(mut self) -> (Plan, Self) {
        let graph = self.graph;
        let mut plans: Vec<Option<NodePlan>> = graph.nodes.iter().map(|_| None).collect();
        // Levels mode: the first level that is not ready, with its unready nodes.
        let mut barrier: Option<(usize, Vec<NodeId>)> = None;
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
                let unready: Vec<NodeId> = indices
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
            requeue_at: None,
        };
        (plan, self)
    }

    fn schedule(
        &mut self,
        node: &CompiledNode,
        level: usize,
        barrier: Option<&(usize, Vec<NodeId>)>,
    ) -> NodePlan {
        let mut plan = NodePlan {
            id: node.id.clone(),
            level,
            state: NodeState::Ready,
            desired: Vec::new(),
            value: None,
            assumed: Vec::new(),
            propagation: node.propagation.clone(),
            items_ready: Vec::new(),
        };
        if let Some(skipped) = node
            .dependencies
            .iter()
            .find(|id| matches!(self.states.get(*id), Some(NodeState::Skipped(_))))
        {
            plan.state = NodeState::Skipped(Skip::Dependency(skipped.clone()));
            crate::observe::report(|observer| observer.node_skipped());
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
        let unready: Vec<NodeId> = node
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
        plan.state = crate::observe::timed(
            || self.evaluate_node(node, &mut plan),
            |observer, elapsed, state| {
                observer.node_evaluated(elapsed, matches!(state, NodeState::Failed(_)));
            },
        );
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
                .all(|id| self.states.get(id.as_str()) == Some(&NodeState::Ready))
        });
        if !evaluable {
            return Ok(false);
        }
        if !node.include_when.is_empty() {
            crate::observe::report(|observer| observer.include_checked());
        }
        let base = resource_path(node.index);
        for (position, condition) in node.include_when.iter().enumerate() {
            let scope = Scope::new(&self.values);
            match evaluate_condition(condition, &scope) {
                Ok(true) => {}
                Ok(false) => {
                    crate::observe::report(|observer| observer.node_skipped());
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
                    Ok(iterations) => {
                        crate::observe::report(|observer| {
                            observer.collection_expanded(iterations.len());
                        });
                        Some(iterations)
                    }
                    Err(problem) => return problem_state(base.key("forEach"), problem),
                }
            }
        };
        match &node.kind {
            NodeKind::Data => self.evaluate_data(node, iterations, plan),
            NodeKind::Template {
                gvk, namespaced, ..
            } => {
                let namespaced = namespaced
                    .or_else(|| self.options.served_scopes.get(&gvk.group_kind()).copied());
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

/// `schema`, the variable templates read: the instance without its status, typed as the
/// instance spec.
pub fn schema_value(graph: &CompiledGraph, instance: &Json) -> Value {
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
