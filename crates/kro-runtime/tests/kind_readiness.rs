//! `PlanOptions::kind_readiness` through `plan`: a template resource without readyWhen is
//! ready when its objects are ready by their kind's rules, and only then do later levels go.

use kro_graph::{BuiltinCatalog, CompiledGraph, FieldPath, ResourceGraphDefinition, build_graph};
use kro_runtime::{NodeError, NodeState, ObjectKey, Observed, Plan, PlanOptions, Wait, plan};
use serde_json::{Value as Json, json};

/// An RGD of kind `App` with these resources.
fn graph(resources: Json) -> CompiledGraph {
    let rgd = json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "apps"},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "App", "spec": {}},
                 "resources": resources}
    });
    let rgd = ResourceGraphDefinition::from_json(&rgd).expect("the RGD decodes");
    build_graph(&rgd, &BuiltinCatalog).expect("the graph builds")
}

fn instance() -> Json {
    json!({"apiVersion": "kro.run/v1alpha1", "kind": "App",
           "metadata": {"name": "demo", "namespace": "default", "generation": 1}, "spec": {}})
}

/// `web` (a Deployment of 2 replicas, with these readyWhen conditions) and `config` (a
/// ConfigMap that reads it, so on the next level).
fn web_and_config(ready_when: Json) -> CompiledGraph {
    graph(json!([
        {"id": "web", "readyWhen": ready_when, "template": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}},
        {"id": "config", "template": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"},
            "data": {"web": "${web.metadata.name}"}}}
    ]))
}

/// The Deployment `web` as the API server returns it, with this status.
fn web(status: Json) -> Json {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default", "generation": 1},
           "spec": {"replicas": 2}, "status": status})
}

fn config() -> Json {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "config", "namespace": "default"}, "data": {"web": "web"}})
}

fn observed(objects: impl IntoIterator<Item = Json>) -> Observed {
    let mut observed = Observed::complete();
    for object in objects {
        observed.insert(object);
    }
    observed
}

fn kind_readiness() -> PlanOptions {
    PlanOptions {
        kind_readiness: true,
        ..PlanOptions::default()
    }
}

fn state<'a>(plan: &'a Plan, id: &str) -> &'a NodeState {
    &plan.node(id).expect("the node is planned").state
}

fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: group.to_owned(),
        kind: kind.to_owned(),
        namespace: Some("default".to_owned()),
        name: name.to_owned(),
    }
}

#[test]
fn without_the_option_an_observed_deployment_is_ready_whatever_its_status() {
    let planned = plan(
        &web_and_config(json!([])),
        &instance(),
        &observed([web(json!({})), config()]),
        &PlanOptions::default(),
    );
    assert_eq!(state(&planned, "web"), &NodeState::Ready);
    assert_eq!(state(&planned, "config"), &NodeState::Ready);
}

#[test]
fn with_the_option_a_deployment_waits_for_its_replicas_and_holds_back_the_next_level() {
    let graph = web_and_config(json!([]));
    let rolling = web(json!({"observedGeneration": 1, "updatedReplicas": 2,
                             "readyReplicas": 1, "availableReplicas": 1}));
    let planned = plan(&graph, &instance(), &observed([rolling]), &kind_readiness());
    let wait = Wait::Kind {
        key: key("apps", "Deployment", "web"),
        reason: "1 of 2 replicas available".to_owned(),
    };
    assert_eq!(
        wait.to_string(),
        "Deployment.apps/default/web: 1 of 2 replicas available"
    );
    assert_eq!(state(&planned, "web"), &NodeState::Waiting(wait));
    assert_eq!(
        state(&planned, "config"),
        &NodeState::Waiting(Wait::Level {
            level: 0,
            nodes: vec!["web".into()]
        })
    );
    assert_eq!(
        planned.node("config").map(|node| node.desired.len()),
        Some(0)
    );

    let available = web(json!({"observedGeneration": 1, "updatedReplicas": 2,
                               "readyReplicas": 2, "availableReplicas": 2}));
    let planned = plan(
        &graph,
        &instance(),
        &observed([available, config()]),
        &kind_readiness(),
    );
    assert_eq!(state(&planned, "web"), &NodeState::Ready);
    assert_eq!(state(&planned, "config"), &NodeState::Ready);
    assert!(planned.is_ready());
}

#[test]
fn a_deployment_whose_status_is_not_there_yet_waits_for_its_generation() {
    let planned = plan(
        &web_and_config(json!([])),
        &instance(),
        &observed([web(json!({}))]),
        &kind_readiness(),
    );
    assert_eq!(
        state(&planned, "web"),
        &NodeState::Waiting(Wait::Kind {
            key: key("apps", "Deployment", "web"),
            reason: "generation 1 not observed yet".to_owned(),
        })
    );
}

#[test]
fn a_failed_job_fails_its_node_and_its_dependents_do_not_start() {
    let graph = graph(json!([
        {"id": "migrate", "template": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "migrate", "image": "migrate"}]}}}}},
        {"id": "config", "template": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"},
            "data": {"after": "${migrate.metadata.name}"}}}
    ]));
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default"},
        "spec": {"backoffLimit": 6},
        "status": {"failed": 7, "conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit"}]}});
    let planned = plan(&graph, &instance(), &observed([job]), &kind_readiness());
    assert_eq!(
        state(&planned, "migrate"),
        &NodeState::Failed(NodeError {
            path: FieldPath::root().key("spec").key("resources").index(0),
            expression: None,
            message: "Job.batch/default/migrate: BackoffLimitExceeded: Job has reached the \
                      specified backoff limit"
                .to_owned(),
        })
    );
    assert!(matches!(
        state(&planned, "config"),
        NodeState::Waiting(Wait::Level { level: 0, .. })
    ));
}

#[test]
fn a_resource_with_ready_when_ignores_its_kind() {
    let holds = plan(
        &web_and_config(json!(["${web.metadata.name == 'web'}"])),
        &instance(),
        &observed([web(json!({})), config()]),
        &kind_readiness(),
    );
    assert_eq!(state(&holds, "web"), &NodeState::Ready);
    assert_eq!(state(&holds, "config"), &NodeState::Ready);

    let fails = plan(
        &web_and_config(json!(["${web.metadata.name == 'other'}"])),
        &instance(),
        &observed([web(json!({}))]),
        &kind_readiness(),
    );
    assert_eq!(
        state(&fails, "web"),
        &NodeState::Waiting(Wait::ReadyWhen {
            expression: "web.metadata.name == 'other'".to_owned(),
            item: None,
            pending: None,
        })
    );
}

#[test]
fn assume_ready_takes_a_kind_wait_as_met_and_records_it() {
    let options = PlanOptions {
        assume_ready: true,
        ..kind_readiness()
    };
    let planned = plan(
        &web_and_config(json!([])),
        &instance(),
        &observed([web(json!({})), config()]),
        &options,
    );
    let web_plan = planned.node("web").expect("web is planned");
    assert_eq!(web_plan.state, NodeState::Ready);
    assert_eq!(
        web_plan.assumed,
        vec![Wait::Kind {
            key: key("apps", "Deployment", "web"),
            reason: "generation 1 not observed yet".to_owned(),
        }]
    );
    assert_eq!(state(&planned, "config"), &NodeState::Ready);
}

#[test]
fn a_collection_waits_for_its_first_item_that_is_not_ready() {
    let graph = graph(json!([
        {"id": "workers", "forEach": [{"n": "${[1, 2, 3]}"}], "template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "${'worker-' + string(n)}"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    ]));
    let pod = |name: &str, status: Json| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default"}, "status": status})
    };
    let running = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    let planned = plan(
        &graph,
        &instance(),
        &observed([
            pod("worker-1", running.clone()),
            pod("worker-2", json!({"phase": "Pending"})),
            pod("worker-3", json!({})),
        ]),
        &kind_readiness(),
    );
    assert_eq!(
        state(&planned, "workers"),
        &NodeState::Waiting(Wait::Kind {
            key: key("", "Pod", "worker-2"),
            reason: "phase Pending".to_owned(),
        })
    );
    let planned = plan(
        &graph,
        &instance(),
        &observed([
            pod("worker-1", running.clone()),
            pod("worker-2", running.clone()),
            pod("worker-3", running),
        ]),
        &kind_readiness(),
    );
    assert_eq!(state(&planned, "workers"), &NodeState::Ready);
}

#[test]
fn an_external_ref_is_not_judged_by_its_kind() {
    let graph = graph(json!([
        {"id": "shared", "externalRef": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}}
    ]));
    let planned = plan(
        &graph,
        &instance(),
        &observed([web(json!({}))]),
        &kind_readiness(),
    );
    assert_eq!(state(&planned, "shared"), &NodeState::Ready);
}
