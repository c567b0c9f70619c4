//! The instance status kro writes: the author's status fields that resolved, `state`, and the
//! conditions (kro's four built-in ones, or the author's own), with upstream kro's types,
//! reasons and messages.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use kro_cel::{Key, Value};
use kro_graph::{CompiledGraph, FieldPath, NodeId, PathSegment, StatusField};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::evaluate::{Problem, Scope, evaluate, set, to_json};
use crate::plan::{NodeError, NodeState, Wait};

/// `status.state` of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InstanceState {
    /// Ready, at the current generation.
    Active,
    /// Still converging.
    InProgress,
    /// A resource, status field or author condition failed.
    Error,
    /// Being deleted.
    Deleting,
}

impl InstanceState {
    /// The wire value (`ACTIVE`, `IN_PROGRESS`, `ERROR`, `DELETING`).
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceState::Active => "ACTIVE",
            InstanceState::InProgress => "IN_PROGRESS",
            InstanceState::Error => "ERROR",
            InstanceState::Deleting => "DELETING",
        }
    }
}

impl fmt::Display for InstanceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The root condition.
pub const READY: &str = "Ready";
/// Finalizer and labels are in place.
pub const INSTANCE_MANAGED: &str = "InstanceManaged";
/// The graph was built and resolved.
pub const GRAPH_RESOLVED: &str = "GraphResolved";
/// Every resource is applied and ready.
pub const RESOURCES_READY: &str = "ResourcesReady";

/// A status condition as Kubernetes writes them (`metav1.Condition` plus kro's optional
/// reason and message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// A CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The instance generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    fn builtin(type_: &str, status: &str, reason: &str, message: String) -> Condition {
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            last_transition_time: None,
            reason: Some(reason.to_owned()),
            message: Some(message),
            observed_generation: None,
        }
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Why one of the controller's own steps failed. The cause stays typed for whoever reads the
/// facts; the instance's conditions show its text.
#[derive(Debug, Clone)]
pub struct StepFailure(Arc<dyn std::error::Error + Send + Sync>);

impl StepFailure {
    /// A failure caused by `cause`.
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        StepFailure(Arc::new(cause))
    }

    /// What caused it.
    pub fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.0.as_ref()
    }
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Two failures are the same when they say the same: that is all a plan takes from them.
impl PartialEq for StepFailure {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}

impl Eq for StepFailure {}

/// How the controller's own steps went, which the plan cannot know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerFacts {
    /// Failed when the finalizer or labels could not be written.
    pub managed: Result<(), StepFailure>,
    /// Failed when the graph is not available.
    pub graph: Result<(), StepFailure>,
    /// Failed when objects could not be applied or pruned.
    pub resources: Result<(), StepFailure>,
    /// Reconciliation is suspended (`kro.run/reconcile: suspended`): nothing is applied.
    pub suspended: bool,
    /// The instance is being deleted.
    pub deleting: bool,
}

impl Default for ControllerFacts {
    /// Both steps succeeded.
    fn default() -> Self {
        ControllerFacts {
            managed: Ok(()),
            graph: Ok(()),
            resources: Ok(()),
            suspended: false,
            deleting: false,
        }
    }
}

/// A status field whose expression waits for data: it is left out of the status.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingField {
    /// The field, relative to `status`.
    pub path: FieldPath,
    /// The expression.
    pub expression: String,
    /// What is missing.
    pub reason: String,
}

/// The status of an instance, computed from a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceStatus {
    /// `status.state`.
    pub state: InstanceState,
    /// What goes into `status.conditions`: kro's built-in conditions, or, when the RGD defines
    /// its own, the author's.
    pub conditions: Vec<Condition>,
    /// kro's four built-in conditions, always computed.
    pub builtin: Vec<Condition>,
    /// The author's status fields that resolved.
    pub fields: Map<String, Json>,
    /// Status fields waiting for data (not written).
    pub pending: Vec<PendingField>,
    /// Status fields and author conditions that failed. A failed status field means upstream
    /// kro writes no status at all for this round ([`writable`](Self::writable) is false).
    pub errors: Vec<NodeError>,
    /// Whether the status should be written.
    pub writable: bool,
}

impl InstanceStatus {
    /// No status yet (while planning).
    pub(crate) fn empty() -> Self {
        InstanceStatus {
            state: InstanceState::InProgress,
            conditions: Vec::new(),
            builtin: Vec::new(),
            fields: Map::new(),
            pending: Vec::new(),
            errors: Vec::new(),
            writable: false,
        }
    }

    /// The `status` object: the fields, then `state` and `conditions`.
    pub fn to_json(&self) -> Json {
        let mut status = self.fields.clone();
        status.insert(
            "state".to_owned(),
            Json::String(self.state.as_str().to_owned()),
        );
        status.insert(
            "conditions".to_owned(),
            serde_json::to_value(&self.conditions).unwrap_or(Json::Array(Vec::new())),
        );
        Json::Object(status)
    }

    /// A built-in condition by type.
    pub fn builtin(&self, type_: &str) -> Option<&Condition> {
        self.builtin
            .iter()
            .find(|condition| condition.type_ == type_)
    }
}

/// What the status computation needs from the instance object.
struct InstanceFacts {
    generation: Option<i64>,
    creation: Option<String>,
    previous: Vec<Condition>,
}

impl InstanceFacts {
    fn of(instance: &Json) -> InstanceFacts {
        let previous = instance
            .pointer("/status/conditions")
            .and_then(|conditions| serde_json::from_value(conditions.clone()).ok())
            .unwrap_or_default();
        InstanceFacts {
            generation: instance
                .pointer("/metadata/generation")
                .and_then(Json::as_i64),
            creation: instance
                .pointer("/metadata/creationTimestamp")
                .and_then(Json::as_str)
                .map(str::to_owned),
            previous,
        }
    }

    fn previous(&self, type_: &str) -> Option<&Condition> {
        self.previous
            .iter()
            .find(|condition| condition.type_ == type_)
    }
}

/// Sets `value` at `path` in a status being built, creating the objects and lists on the way;
/// list items not set (yet) are null.
fn set_creating(root: &mut Json, path: &[PathSegment], value: Json) {
    let Some((first, rest)) = path.split_first() else {
        *root = value;
        return;
    };
    let container = match rest.first() {
        Some(PathSegment::Index(_)) => Json::Array(Vec::new()),
        _ => Json::Object(Map::new()),
    };
    let slot = match (first, root) {
        (PathSegment::Key(key), Json::Object(map)) => map.entry(key.clone()).or_insert(Json::Null),
        (PathSegment::Index(index), Json::Array(items)) => {
            if items.len() <= *index {
                items.resize(*index + 1, Json::Null);
            }
            &mut items[*index]
        }
        _ => return,
    };
    if rest.is_empty() {
        *slot = value;
        return;
    }
    if slot.is_null() {
        *slot = container;
    }
    set_creating(slot, rest, value);
}

/// The list a status field is an item of (its path up to the first index), if any.
fn enclosing_list(path: &FieldPath) -> Option<&[PathSegment]> {
    let segments = path.segments();
    segments
        .iter()
        .position(|segment| matches!(segment, PathSegment::Index(_)))
        .map(|index| &segments[..index])
}

/// Computes the status after a plan of `graph`: `values` holds `schema` and the value of every
/// node that has one, `nodes` each node's id and state in the RGD's order.
pub(crate) fn compute(
    graph: &CompiledGraph,
    values: &HashMap<String, Value>,
    nodes: &[(&NodeId, &NodeState)],
    instance: &Json,
    facts: &ControllerFacts,
    now: Option<&str>,
) -> InstanceStatus {
    let instance_facts = InstanceFacts::of(instance);
    let mut fields = Map::new();
    let mut pending = Vec::new();
    let mut errors = Vec::new();
    let mut unresolved: Vec<&FieldPath> = Vec::new();
    let status_root = FieldPath::root().key("status");
    let scope = Scope::new(values);
    for field in &graph.status {
        match field {
            StatusField::Expression(field) => {
                let result = evaluate(&field.expression, &scope)
                    .and_then(|value| to_json(&field.expression, &value));
                let mut target = Json::Object(std::mem::take(&mut fields));
                match result {
                    Ok(json) => set_creating(&mut target, field.path.segments(), json),
                    Err(Problem::Pending { expression, reason }) => pending.push(PendingField {
                        path: field.path.clone(),
                        expression,
                        reason,
                    }),
                    Err(Problem::Failed {
                        expression,
                        message,
                    }) => {
                        unresolved.push(&field.path);
                        errors.push(NodeError {
                            path: schema_status_path().join(&field.path),
                            expression: Some(expression),
                            message,
                        });
                    }
                }
                if let Json::Object(map) = target {
                    fields = map;
                }
            }
            StatusField::Declared { path, .. } => {
                // A declared `integer | scale` field receives the spec's scale value once the
                // instance is ready (docs/scaling.md); other declarations are left unset.
                let is_scale = graph.scale.status_replicas.as_deref() == Some(&path.to_string());
                if is_scale && nodes.iter().all(|(_, state)| state.is_settled()) {
                    let spec_value = graph
                        .scale
                        .spec_replicas
                        .as_deref()
                        .and_then(|spec| {
                            instance.pointer(&format!("/spec/{}", spec.replace('.', "/")))
                        })
                        .cloned();
                    if let Some(value) = spec_value {
                        let mut target = Json::Object(std::mem::take(&mut fields));
                        set(&mut target, path.segments(), value);
                        if let Json::Object(map) = target {
                            fields = map;
                        }
                    }
                }
            }
        }
    }
    let _ = status_root;
    // A list some of whose items did not resolve is left out whole, as a field that did not
    // resolve is.
    let incomplete: Vec<&[PathSegment]> = pending
        .iter()
        .map(|field: &PendingField| &field.path)
        .chain(unresolved.iter().copied())
        .filter_map(enclosing_list)
        .collect();
    if !incomplete.is_empty() {
        let mut target = Json::Object(std::mem::take(&mut fields));
        for list in incomplete {
            crate::evaluate::remove(&mut target, list);
        }
        if let Json::Object(map) = target {
            fields = map;
        }
    }
    // kro owns these two keys.
    fields.remove("state");
    fields.remove("conditions");

    let resources_ready = resources_ready(nodes, facts);
    let node_failed = facts.resources.is_err()
        || nodes
            .iter()
            .any(|(_, state)| matches!(state, NodeState::Failed(_)));
    let mut builtin = vec![
        match &facts.managed {
            Ok(()) => Condition::builtin(
                INSTANCE_MANAGED,
                "True",
                "Managed",
                "instance is properly managed with finalizers and labels".to_owned(),
            ),
            Err(message) => Condition::builtin(
                INSTANCE_MANAGED,
                "False",
                "ManagementFailed",
                format!("finalizer/labeling failed: {message}"),
            ),
        },
        match &facts.graph {
            Ok(()) => Condition::builtin(
                GRAPH_RESOLVED,
                "True",
                "Resolved",
                "runtime graph created and all resources resolved".to_owned(),
            ),
            Err(message) => Condition::builtin(
                GRAPH_RESOLVED,
                "False",
                "ResolutionFailed",
                message.to_string(),
            ),
        },
        resources_ready,
    ];
    for condition in &mut builtin {
        stamp(condition, &instance_facts, now, true);
    }
    let ready = root_condition(&builtin, &instance_facts, now);
    builtin.push(ready);
    sort_conditions(&mut builtin);

    let mut state = if facts.deleting {
        InstanceState::Deleting
    } else if node_failed {
        InstanceState::Error
    } else if builtin
        .iter()
        .any(|condition| condition.type_ == READY && condition.is_true())
    {
        InstanceState::Active
    } else {
        InstanceState::InProgress
    };

    let mut conditions = builtin.clone();
    if !graph.status_conditions.is_empty() {
        let (authored, failures, incomplete) =
            author_conditions(graph, values, instance, &builtin, &instance_facts, now);
        conditions = authored;
        if incomplete {
            let produced: BTreeSet<String> = conditions
                .iter()
                .map(|condition| condition.type_.clone())
                .collect();
            conditions.extend(
                instance_facts
                    .previous
                    .iter()
                    .filter(|condition| !produced.contains(&condition.type_))
                    .cloned(),
            );
        }
        if !failures.is_empty() {
            state = InstanceState::Error;
            errors.extend(failures);
        }
    }
    let writable = !errors.iter().any(|error| {
        error.path.starts_with(&schema_status_path()) && !is_conditions_path(&error.path)
    });
    if !writable && !facts.deleting {
        state = InstanceState::Error;
    }
    InstanceStatus {
        state,
        conditions,
        builtin,
        fields,
        pending,
        errors,
        writable,
    }
}

fn schema_status_path() -> FieldPath {
    FieldPath::root().key("spec").key("schema").key("status")
}

fn is_conditions_path(path: &FieldPath) -> bool {
    path.starts_with(&schema_status_path().key("conditions"))
}

/// `ResourcesReady` from the nodes' states and the controller's facts.
fn resources_ready(nodes: &[(&NodeId, &NodeState)], facts: &ControllerFacts) -> Condition {
    if facts.deleting {
        return Condition::builtin(
            RESOURCES_READY,
            "Unknown",
            "UnderDeletion",
            "instance is being deleted".to_owned(),
        );
    }
    if facts.suspended {
        return Condition::builtin(
            RESOURCES_READY,
            "False",
            "ReconciliationSuspended",
            "reconciliation is suspended by the annotation kro.run/reconcile".to_owned(),
        );
    }
    if let Err(message) = &facts.resources {
        return Condition::builtin(
            RESOURCES_READY,
            "False",
            "NotReady",
            format!("resource error: {message}"),
        );
    }
    let failed: Vec<String> = nodes
        .iter()
        .filter_map(|(id, state)| match state {
            NodeState::Failed(error) => Some(format!("resource {id}: {error}")),
            _ => None,
        })
        .collect();
    if !failed.is_empty() {
        return Condition::builtin(
            RESOURCES_READY,
            "False",
            "NotReady",
            format!("resource error: {}", failed.join("; ")),
        );
    }
    let waiting: Vec<String> = nodes
        .iter()
        .filter_map(|(id, state)| match state {
            NodeState::Waiting(wait) => Some(format!("{id}: {wait}")),
            _ => None,
        })
        .collect();
    let terminating = nodes
        .iter()
        .any(|(_, state)| matches!(state, NodeState::Waiting(Wait::Terminating(_))));
    if terminating {
        return Condition::builtin(
            RESOURCES_READY,
            "False",
            "ResourceDeleting",
            format!("awaiting resource deletion: {}", waiting.join("; ")),
        );
    }
    if waiting.is_empty() {
        Condition::builtin(
            RESOURCES_READY,
            "True",
            "AllResourcesReady",
            "all resources are created and ready".to_owned(),
        )
    } else {
        Condition::builtin(
            RESOURCES_READY,
            "False",
            "NotReady",
            format!("awaiting resource readiness: {}", waiting.join("; ")),
        )
    }
}

/// Sets `observedGeneration` and `lastTransitionTime`: kept from the previous condition of the
/// type when its status is unchanged, else now (or, for a built-in condition seen for the first
/// time, the instance's creation time, as upstream's condition set does).
fn stamp(condition: &mut Condition, facts: &InstanceFacts, now: Option<&str>, builtin: bool) {
    condition.observed_generation = facts.generation;
    let previous = facts.previous(&condition.type_);
    condition.last_transition_time = match previous {
        Some(previous)
            if previous.status == condition.status && previous.last_transition_time.is_some() =>
        {
            previous.last_transition_time.clone()
        }
        Some(_) => now.map(str::to_owned),
        None if builtin => facts.creation.clone().or_else(|| now.map(str::to_owned)),
        None => now.map(str::to_owned),
    };
}

/// `Ready`: true when every other built-in condition is true at the current generation;
/// otherwise it mirrors the most recently changed unhealthy one (False before Unknown).
fn root_condition(dependents: &[Condition], facts: &InstanceFacts, now: Option<&str>) -> Condition {
    let mut unhealthy: Vec<&Condition> = dependents
        .iter()
        .filter(|condition| {
            !condition.is_true() || condition.observed_generation != facts.generation
        })
        .collect();
    let mut ready = if unhealthy.is_empty() {
        Condition::builtin(READY, "True", READY, String::new())
    } else {
        unhealthy.sort_by(|a, b| b.last_transition_time.cmp(&a.last_transition_time));
        let chosen = unhealthy
            .iter()
            .find(|condition| condition.status == "False")
            .or_else(|| {
                unhealthy
                    .iter()
                    .find(|condition| condition.status == "Unknown")
            })
            .copied();
        match chosen {
            Some(chosen) => Condition {
                type_: READY.to_owned(),
                ..chosen.clone()
            },
            None => Condition::builtin(READY, "True", READY, String::new()),
        }
    };
    stamp(&mut ready, facts, now, true);
    ready
}

/// Upstream's order: by `lastTransitionTime` (absent first), `Ready` last.
fn sort_conditions(conditions: &mut [Condition]) {
    conditions.sort_by(|a, b| {
        (a.type_ == READY, &a.last_transition_time)
            .cmp(&(b.type_ == READY, &b.last_transition_time))
    });
}

/// Evaluates `schema.status.conditions`: the conditions, the failures, and whether some entry
/// was pending or failed (then earlier conditions of the types not produced are kept).
fn author_conditions(
    graph: &CompiledGraph,
    values: &HashMap<String, Value>,
    instance: &Json,
    builtin: &[Condition],
    facts: &InstanceFacts,
    now: Option<&str>,
) -> (Vec<Condition>, Vec<NodeError>, bool) {
    // `schema` with the built-in conditions of this round, so that
    // `runtime.condition(schema, 'ResourcesReady')` reads them.
    let mut with_conditions = instance.clone();
    if let Json::Object(object) = &mut with_conditions {
        let conditions: Vec<Json> = builtin
            .iter()
            .map(|condition| {
                serde_json::json!({
                    "type": condition.type_,
                    "status": condition.status,
                    "reason": condition.reason.clone().unwrap_or_default(),
                    "message": condition.message.clone().unwrap_or_default(),
                })
            })
            .collect();
        object.insert(
            "status".to_owned(),
            serde_json::json!({ "conditions": conditions }),
        );
    }
    let schema = kro_cel::from_json(&with_conditions, None, None).unwrap_or(Value::Null);
    let scope = Scope::new(values)
        .with("schema", schema)
        .with(kro_cel::RUNTIME_VARIABLE, kro_cel::runtime_value());
    let mut produced: Vec<Condition> = Vec::new();
    let mut failures = Vec::new();
    let mut incomplete = false;
    let base = schema_status_path().key("conditions");
    for (position, expression) in graph.status_conditions.iter().enumerate() {
        let path = base.index(position);
        match evaluate(expression, &scope) {
            Ok(value) => match flatten(&value) {
                Ok(conditions) => produced.extend(conditions),
                Err(message) => {
                    incomplete = true;
                    failures.push(NodeError {
                        path,
                        expression: Some(expression.source.clone()),
                        message,
                    });
                }
            },
            Err(Problem::Pending { .. }) => incomplete = true,
            Err(Problem::Failed {
                expression,
                message,
            }) => {
                incomplete = true;
                failures.push(NodeError {
                    path,
                    expression: Some(expression),
                    message,
                });
            }
        }
    }
    // Every occurrence of a duplicated type is dropped, as upstream.
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for condition in &produced {
        *counts.entry(condition.type_.clone()).or_default() += 1;
    }
    let duplicated: Vec<&String> = counts
        .iter()
        .filter(|(_, count)| **count > 1)
        .map(|(type_, _)| type_)
        .collect();
    if !duplicated.is_empty() {
        incomplete = true;
        let names: Vec<&str> = duplicated.iter().map(|name| name.as_str()).collect();
        failures.push(NodeError {
            path: base.clone(),
            expression: None,
            message: format!("duplicate condition type(s) [{}] dropped", names.join(" ")),
        });
        produced.retain(|condition| counts.get(&condition.type_).copied() == Some(1));
    }
    for condition in &mut produced {
        stamp(condition, facts, now, false);
    }
    (produced, failures, incomplete)
}

/// A condition value, or a list of them, as conditions (empty reason and message left out).
fn flatten(value: &Value) -> Result<Vec<Condition>, String> {
    let one = |value: &Value| -> Result<Condition, String> {
        let Value::Map(map) = value else {
            return Err(format!(
                "list element is not a Condition (got {})",
                value.type_name()
            ));
        };
        let text = |field: &str| -> Option<String> {
            match map.get(&Key::String(field.into())) {
                Some(Value::String(text)) => Some(text.to_string()),
                _ => None,
            }
        };
        let (Some(type_), Some(status)) = (text("type"), text("status")) else {
            return Err("the value is not a Condition".to_owned());
        };
        Ok(Condition {
            type_,
            status,
            last_transition_time: None,
            reason: text("reason").filter(|reason| !reason.is_empty()),
            message: text("message").filter(|message| !message.is_empty()),
            observed_generation: None,
        })
    };
    match value {
        Value::List(items) => items.iter().map(one).collect(),
        Value::Null => Err("the condition expression returned null".to_owned()),
        Value::Map(_) => one(value).map(|condition| vec![condition]),
        other => Err(format!(
            "a condition expression must return a Condition or list(Condition), got {}",
            other.type_name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the finalizer could not be written")]
    struct FinalizerRefused;

    #[test]
    fn a_step_failure_keeps_its_typed_cause_and_says_what_it_says() {
        let failure = StepFailure::new(FinalizerRefused);
        assert!(failure.cause().downcast_ref::<FinalizerRefused>().is_some());
        assert_eq!(failure.to_string(), "the finalizer could not be written");
        assert_eq!(failure, StepFailure::new(FinalizerRefused));
        let facts = ControllerFacts {
            managed: Err(failure),
            ..ControllerFacts::default()
        };
        assert_ne!(facts, ControllerFacts::default());
    }
}
