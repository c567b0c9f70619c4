//! The status of a ResourceGraphDefinition, as upstream kro v0.9.4 writes it: the conditions
//! `GraphRevisionsResolved`, `GraphAccepted`, `KindReady` and `ControllerReady` with the root
//! `Ready` (true when all are, otherwise the most unhealthy one's status, reason and message),
//! `state` (`Active` when the last three hold), `topologicalOrder`, `resources` (each node
//! that has dependencies, with them) and `lastIssuedRevision`; and the status of a
//! GraphRevision (`GraphVerified` with its `Ready`, the same order and resources).
//!
//! Conditions keep their `lastTransitionTime` while their status holds, so writing the same
//! status twice changes nothing (and the controller can skip the write).

use kro_graph::CompiledGraph;
use serde_json::{Value as Json, json};

/// The conditions the root `Ready` summarizes, in the order they are judged.
pub const DEPENDENT_CONDITIONS: [&str; 4] = [
    "GraphRevisionsResolved",
    "GraphAccepted",
    "KindReady",
    "ControllerReady",
];

/// A condition's truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown` (not decided yet).
    Unknown,
}

impl Truth {
    fn as_str(self) -> &'static str {
        match self {
            Truth::True => "True",
            Truth::False => "False",
            Truth::Unknown => "Unknown",
        }
    }
}

/// One condition's content, before timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionValue {
    /// Its truth.
    pub status: Truth,
    /// The machine-readable reason (`Valid`, `InvalidResourceGraph`, …).
    pub reason: String,
    /// The human-readable message.
    pub message: String,
}

impl ConditionValue {
    /// A condition that holds.
    pub fn holds(reason: &str, message: impl Into<String>) -> Self {
        ConditionValue {
            status: Truth::True,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// A condition that fails.
    pub fn fails(reason: &str, message: impl Into<String>) -> Self {
        ConditionValue {
            status: Truth::False,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// A condition not decided yet.
    pub fn unknown(reason: &str, message: impl Into<String>) -> Self {
        ConditionValue {
            status: Truth::Unknown,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// What the controller found, for the status.
#[derive(Debug, Clone)]
pub struct RgdObservation<'a> {
    /// The RGD's `metadata.generation`.
    pub generation: i64,
    /// The compiled graph, when the RGD compiles.
    pub graph: Option<&'a CompiledGraph>,
    /// `GraphRevisionsResolved`.
    pub graph_revisions: ConditionValue,
    /// The highest GraphRevision number issued (`status.lastIssuedRevision`); 0 keeps what
    /// the status says.
    pub last_issued_revision: i64,
    /// `GraphAccepted`.
    pub graph_accepted: ConditionValue,
    /// `KindReady`.
    pub kind_ready: ConditionValue,
    /// `ControllerReady`.
    pub controller_ready: ConditionValue,
    /// `Propagated`, outside `Ready`: how far the newest revision has reached, when a
    /// propagation policy is in force (else the RGD has no such condition).
    pub propagated: Propagated,
}

/// What becomes of the RGD's `Propagated` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagated {
    /// No propagation policy is in force: the RGD has no such condition.
    Absent,
    /// Not known yet (the rollout has not looked at the instances since the controller
    /// started): the condition stays as it is.
    Keep,
    /// This.
    Is(ConditionValue),
}

/// `GraphAccepted` for a graph that compiled.
pub fn graph_accepted() -> ConditionValue {
    ConditionValue::holds("Valid", "resource graph and schema are valid")
}

/// `GraphAccepted` for a graph that did not compile (the errors as the message).
pub fn graph_rejected(errors: &str) -> ConditionValue {
    ConditionValue::fails("InvalidResourceGraph", errors)
}

/// `GraphRevisionsResolved` once revision `revision` is compiled and serves.
pub fn graph_revisions_resolved(revision: i64) -> ConditionValue {
    ConditionValue::holds(
        "Resolved",
        format!("revision {revision} compiled and active"),
    )
}

/// `KindReady` once the CRD is Established.
pub fn kind_ready(kind: &str) -> ConditionValue {
    ConditionValue::holds("Ready", format!("kind {kind} has been accepted and ready"))
}

/// The status to write, from the previous one (for transition times) and what was found;
/// `now` is the time written on changed conditions.
pub fn rgd_status(previous: &Json, observation: &RgdObservation<'_>, now: &str) -> Json {
    let old_conditions: Vec<Json> = previous
        .get("conditions")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let dependents = [
        &observation.graph_revisions,
        &observation.graph_accepted,
        &observation.kind_ready,
        &observation.controller_ready,
    ];
    let mut conditions = with_ready(
        &DEPENDENT_CONDITIONS,
        &dependents,
        &old_conditions,
        observation.generation,
        now,
    );
    match &observation.propagated {
        Propagated::Absent => {}
        Propagated::Keep => conditions.extend(
            old_conditions
                .iter()
                .filter(|old| old["type"] == kro_graph::propagation::PROPAGATED)
                .cloned(),
        ),
        Propagated::Is(propagated) => conditions.push(condition(
            kro_graph::propagation::PROPAGATED,
            propagated,
            &old_conditions,
            observation.generation,
            now,
        )),
    }
    // Upstream's state leaves GraphRevisionsResolved out.
    let active = dependents[1..]
        .iter()
        .all(|value| value.status == Truth::True);
    let mut status = json!({
        "state": if active { "Active" } else { "Inactive" },
        "conditions": conditions,
    });
    let last_issued = observation
        .last_issued_revision
        .max(previous["lastIssuedRevision"].as_i64().unwrap_or(0));
    if last_issued > 0 {
        status["lastIssuedRevision"] = json!(last_issued);
    }
    if let Some(graph) = observation.graph {
        write_topology(&mut status, graph);
    } else {
        // A graph that does not compile leaves what the last good one said.
        for field in ["topologicalOrder", "resources"] {
            if let Some(value) = previous.get(field) {
                status[field] = value.clone();
            }
        }
    }
    status
}

/// The status of a GraphRevision whose snapshot compiled to `graph` (`GraphVerified` and its
/// `Ready`, the order and resources), from its previous status (for transition times).
pub fn graph_revision_status(previous: &Json, graph: &CompiledGraph, now: &str) -> Json {
    let old_conditions: Vec<Json> = previous
        .get("conditions")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let verified = ConditionValue::holds("Verified", "graph revision compiled and verified");
    // A GraphRevision's spec never changes: its generation stays 1.
    let conditions = with_ready(&["GraphVerified"], &[&verified], &old_conditions, 1, now);
    let mut status = json!({"conditions": conditions});
    write_topology(&mut status, graph);
    status
}

/// The conditions `kinds` with their values, then the root `Ready`: true when all are; else
/// the first false one's, else the first unknown one's.
fn with_ready(
    kinds: &[&str],
    values: &[&ConditionValue],
    old: &[Json],
    generation: i64,
    now: &str,
) -> Vec<Json> {
    let ready = if values.iter().all(|value| value.status == Truth::True) {
        ConditionValue::holds("Ready", "")
    } else {
        [Truth::False, Truth::Unknown]
            .iter()
            .find_map(|truth| values.iter().find(|value| value.status == *truth))
            .map(|value| (*value).clone())
            .unwrap_or_else(|| ConditionValue::unknown("Unknown", ""))
    };
    kinds
        .iter()
        .copied()
        .zip(values.iter().copied())
        .chain(std::iter::once(("Ready", &ready)))
        .map(|(kind, value)| condition(kind, value, old, generation, now))
        .collect()
}

/// `topologicalOrder` and `resources` (each node that has dependencies, with them).
fn write_topology(status: &mut Json, graph: &CompiledGraph) {
    let order: Vec<&str> = graph
        .levels
        .iter()
        .flatten()
        .filter_map(|index| graph.nodes.get(*index))
        .map(|node| node.id.as_str())
        .collect();
    status["topologicalOrder"] = json!(order);
    let resources: Vec<Json> = graph
        .nodes
        .iter()
        .filter(|node| !node.dependencies.is_empty())
        .map(|node| {
            let dependencies: Vec<Json> = node
                .dependencies
                .iter()
                .map(|id| json!({"id": id}))
                .collect();
            json!({"id": node.id, "dependencies": dependencies})
        })
        .collect();
    if !resources.is_empty() {
        status["resources"] = json!(resources);
    }
}

fn condition(kind: &str, value: &ConditionValue, old: &[Json], generation: i64, now: &str) -> Json {
    let previous = old.iter().find(|condition| condition["type"] == kind);
    let same_status = previous.is_some_and(|previous| previous["status"] == value.status.as_str());
    let transition = match previous {
        Some(previous) if same_status => previous
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(now)),
        _ => json!(now),
    };
    let mut condition = json!({
        "type": kind,
        "status": value.status.as_str(),
        "observedGeneration": generation,
        "lastTransitionTime": transition,
        "reason": value.reason,
    });
    if !value.message.is_empty() {
        condition["message"] = json!(value.message);
    }
    condition
}

#[cfg(test)]
mod tests {
    use super::*;
    use kro_graph::{BuiltinCatalog, SchemaSources, build_graph, parse_yaml_documents};

    const RGD: &str = "
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapp
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      name: string
  resources:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.spec.name}
      spec:
        selector:
          matchLabels: {app: web}
        template:
          metadata:
            labels: {app: web}
          spec:
            containers:
            - name: web
              image: nginx
  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata:
        name: ${deployment.metadata.name}
      spec:
        ports:
        - port: 80
";

    fn graph() -> CompiledGraph {
        let documents = parse_yaml_documents(RGD).expect("YAML");
        let rgd = documents[0].to_resource_graph_definition().expect("an RGD");
        build_graph(&rgd, &SchemaSources::new().with(BuiltinCatalog)).expect("compiles")
    }

    fn condition_of<'a>(status: &'a Json, kind: &str) -> &'a Json {
        status["conditions"]
            .as_array()
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == kind))
            .expect("the condition")
    }

    #[test]
    fn propagated_sits_outside_ready() {
        let graph = graph();
        let observation = RgdObservation {
            generation: 3,
            graph: Some(&graph),
            graph_revisions: graph_revisions_resolved(2),
            last_issued_revision: 2,
            graph_accepted: graph_accepted(),
            kind_ready: kind_ready("WebApp"),
            controller_ready: ConditionValue::holds("Running", "controller is running"),
            propagated: Propagated::Is(ConditionValue::fails(
                "PropagationInProgress",
                "1/2 instances on revision 2",
            )),
        };
        let status = rgd_status(&json!({}), &observation, "2026-01-01T00:00:00Z");
        assert_eq!(status["state"], "Active");
        assert_eq!(condition_of(&status, "Ready")["status"], "True");
        assert_eq!(condition_of(&status, "Propagated")["status"], "False");
        assert_eq!(
            condition_of(&status, "Propagated")["message"],
            "1/2 instances on revision 2"
        );
        // Not known yet: kept as it was; no policy: gone.
        let kept = RgdObservation {
            propagated: Propagated::Keep,
            ..observation.clone()
        };
        let again = rgd_status(&status, &kept, "2026-01-01T00:01:00Z");
        assert_eq!(
            condition_of(&again, "Propagated"),
            condition_of(&status, "Propagated")
        );
        let absent = RgdObservation {
            propagated: Propagated::Absent,
            ..observation
        };
        let gone = rgd_status(&status, &absent, "2026-01-01T00:01:00Z");
        let types: Vec<&Json> = gone["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|condition| &condition["type"])
            .collect();
        assert!(!types.contains(&&json!("Propagated")), "{types:?}");
    }

    #[test]
    fn all_conditions_true_make_the_rgd_active_with_its_order() {
        let graph = graph();
        let observation = RgdObservation {
            generation: 3,
            graph: Some(&graph),
            graph_revisions: graph_revisions_resolved(2),
            last_issued_revision: 2,
            graph_accepted: graph_accepted(),
            kind_ready: kind_ready("WebApp"),
            controller_ready: ConditionValue::holds("Running", "controller is running"),
            propagated: Propagated::Absent,
        };
        let status = rgd_status(&json!({}), &observation, "2026-01-01T00:00:00Z");
        assert_eq!(status["state"], "Active");
        assert_eq!(status["lastIssuedRevision"], 2);
        assert_eq!(
            condition_of(&status, "GraphRevisionsResolved")["message"],
            "revision 2 compiled and active"
        );
        assert_eq!(status["topologicalOrder"], json!(["deployment", "service"]));
        assert_eq!(
            status["resources"],
            json!([{"id": "service", "dependencies": [{"id": "deployment"}]}])
        );
        let ready = condition_of(&status, "Ready");
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["observedGeneration"], 3);
        assert_eq!(
            condition_of(&status, "KindReady")["message"],
            "kind WebApp has been accepted and ready"
        );
        // The same status again keeps the transition times: nothing to write.
        let again = rgd_status(&status, &observation, "2026-01-01T00:05:00Z");
        assert_eq!(again, status);
    }

    #[test]
    fn ready_takes_the_most_unhealthy_condition() {
        let observation = RgdObservation {
            generation: 1,
            graph: None,
            graph_revisions: graph_revisions_resolved(1),
            last_issued_revision: 0,
            graph_accepted: graph_rejected("resource service: unknown field spec.portz"),
            kind_ready: ConditionValue::unknown("Pending", "waiting for the graph"),
            controller_ready: ConditionValue::unknown("Pending", "waiting for the kind"),
            propagated: Propagated::Absent,
        };
        let status = rgd_status(&json!({}), &observation, "2026-01-01T00:00:00Z");
        assert_eq!(status["state"], "Inactive");
        let ready = condition_of(&status, "Ready");
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "InvalidResourceGraph");
        assert_eq!(
            ready["message"],
            "resource service: unknown field spec.portz"
        );
        assert!(status.get("topologicalOrder").is_none());

        let waiting = RgdObservation {
            graph_accepted: graph_accepted(),
            ..observation
        };
        let status = rgd_status(&status, &waiting, "2026-01-01T00:01:00Z");
        let ready = condition_of(&status, "Ready");
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("Unknown"), Some("Pending"))
        );
        assert_eq!(
            condition_of(&status, "GraphAccepted")["lastTransitionTime"],
            "2026-01-01T00:01:00Z",
            "GraphAccepted changed status"
        );
        assert_eq!(
            condition_of(&status, "KindReady")["lastTransitionTime"],
            "2026-01-01T00:00:00Z",
            "KindReady kept its status"
        );
    }

    #[test]
    fn unresolved_revisions_hold_ready_back_but_not_the_state() {
        let graph = graph();
        let observation = RgdObservation {
            generation: 2,
            graph: Some(&graph),
            graph_revisions: ConditionValue::unknown(
                "WaitingForGraphRevisionSettlement",
                "waiting for terminating graph revisions to settle",
            ),
            last_issued_revision: 0,
            graph_accepted: graph_accepted(),
            kind_ready: kind_ready("WebApp"),
            controller_ready: ConditionValue::holds("Running", "controller is running"),
            propagated: Propagated::Absent,
        };
        let previous = json!({"lastIssuedRevision": 4});
        let status = rgd_status(&previous, &observation, "2026-01-01T00:00:00Z");
        assert_eq!(status["state"], "Active");
        assert_eq!(condition_of(&status, "Ready")["status"], "Unknown");
        assert_eq!(
            status["lastIssuedRevision"], 4,
            "the high-water mark is kept"
        );
    }

    #[test]
    fn a_graph_revision_reports_it_verified() {
        let graph = graph();
        let status = graph_revision_status(&json!({}), &graph, "2026-01-01T00:00:00Z");
        assert_eq!(condition_of(&status, "GraphVerified")["reason"], "Verified");
        assert_eq!(condition_of(&status, "Ready")["status"], "True");
        assert_eq!(status["topologicalOrder"], json!(["deployment", "service"]));
    }
}
