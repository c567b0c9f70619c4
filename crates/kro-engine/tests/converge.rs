//! The engine's loop driven through its public API against a scripted server (no controller,
//! no API server): what it applies, in which order, and what it leaves alone.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use kro_engine::converge::{Batch, Driver, OwnedElsewhere, Rounds, converge};
use kro_engine::{AppliedObject, Applier, ApplyConfig};
use kro_graph::{BuiltinCatalog, CompiledGraph, ResourceGraphDefinition, build_graph};
use kro_runtime::{Inventory, ObjectKey, Observed, Plan, PlanOptions};
use kube::client::Body;
use serde_json::{Value as Json, json};

/// A server that serves ConfigMaps: discovery of `v1`, and server-side apply answered with
/// the body, a UID and a resourceVersion. It records `METHOD path` of every request.
#[derive(Clone, Default)]
struct Scripted {
    requests: Arc<Mutex<Vec<String>>>,
    version: Arc<Mutex<u64>>,
}

impl Scripted {
    fn client(&self) -> kube::Client {
        let server = self.clone();
        let service = tower::service_fn(move |request: http::Request<Body>| {
            let server = server.clone();
            async move {
                let method = request.method().to_string();
                let path = request.uri().path().to_owned();
                let body = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .map(|bytes| bytes.to_vec())
                    .unwrap_or_default();
                Ok::<_, Infallible>(server.answer(&method, &path, &body))
            }
        });
        kube::Client::new(service, "default")
    }

    fn answer(&self, method: &str, path: &str, body: &[u8]) -> http::Response<Body> {
        self.requests
            .lock()
            .unwrap()
            .push(format!("{method} {path}"));
        let (status, answer) = match (method, path) {
            ("GET", "/api/v1") => (
                200,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
                    "resources": [{"name": "configmaps", "singularName": "configmap",
                        "namespaced": true, "kind": "ConfigMap",
                        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}]}),
            ),
            ("PATCH", _) => {
                let mut object: Json = serde_json::from_slice(body).unwrap();
                let mut version = self.version.lock().unwrap();
                *version += 1;
                let name = object["metadata"]["name"].as_str().unwrap().to_owned();
                object["metadata"]["uid"] = json!(format!("uid-{name}"));
                object["metadata"]["resourceVersion"] = json!(version.to_string());
                (200, object)
            }
            _ => (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                    "reason": "NotFound", "message": format!("{method} {path} is not scripted")}),
            ),
        };
        http::Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(answer.to_string().into_bytes()))
            .unwrap()
    }

    fn applies(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|request| request.starts_with("PATCH"))
            .cloned()
            .collect()
    }
}

/// Two levels: ConfigMap `first`, and ConfigMap `second` reading it.
fn graph() -> CompiledGraph {
    let rgd = json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "pairs"},
        "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Pair", "spec": {}},
            "resources": [
                {"id": "first", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-first"},
                    "data": {"value": "one"}}},
                {"id": "second", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}-second"},
                    "data": {"copied": "${first.data.value}"}}},
            ]}
    });
    let rgd = ResourceGraphDefinition::from_json(&rgd).unwrap();
    build_graph(&rgd, &BuiltinCatalog).unwrap()
}

/// A driver that plans with kro-runtime, observes nothing but the answers, and records what
/// the loop hands it.
struct Recording {
    graph: CompiledGraph,
    instance: Json,
    options: PlanOptions,
    inventory: Inventory,
    levels_applied: Vec<usize>,
    owned_elsewhere: Vec<OwnedElsewhere>,
}

impl Recording {
    fn new() -> Recording {
        Recording {
            graph: graph(),
            instance: json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pair",
                "metadata": {"name": "p", "namespace": "default", "uid": "instance-uid"},
                "spec": {}}),
            options: PlanOptions {
                applyset: Some("applyset-mine-v1".to_owned()),
                ..PlanOptions::default()
            },
            inventory: Inventory::default(),
            levels_applied: Vec::new(),
            owned_elsewhere: Vec::new(),
        }
    }
}

impl Driver for Recording {
    type Error = Infallible;

    fn applyset(&self) -> &str {
        "applyset-mine-v1"
    }

    fn scope(&self) -> &str {
        "instance-uid"
    }

    async fn plan(&mut self, observed: &Observed) -> Result<Plan, Infallible> {
        Ok(kro_runtime::plan(
            &self.graph,
            &self.instance,
            observed,
            &self.options,
        ))
    }

    async fn fill(
        &mut self,
        _current: &Plan,
        _observed: &mut Observed,
    ) -> Result<bool, Infallible> {
        Ok(false)
    }

    fn proceed(&mut self, _current: &Plan) -> Result<bool, Infallible> {
        Ok(true)
    }

    fn owned_elsewhere(&mut self, found: Vec<OwnedElsewhere>) -> Result<(), Infallible> {
        self.owned_elsewhere.extend(found);
        Ok(())
    }

    async fn widen_inventory(
        &mut self,
        _current: &Plan,
        batch: &Batch,
    ) -> Result<bool, Infallible> {
        for desired in &batch.objects {
            kro_engine::converge::add_member(&mut self.inventory, &desired.key, "default");
        }
        Ok(true)
    }

    fn applied(&mut self, batch: &Batch, applied: AppliedObject, observed: &mut Observed) {
        if self.levels_applied.last() != Some(&batch.level) {
            self.levels_applied.push(batch.level);
        }
        if let Some(object) = applied.outcome.expect("applied").into_applied() {
            observed.insert(object);
        }
    }

    fn batch_done(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

fn applier(server: &Scripted) -> Applier {
    Applier::new(server.client(), ApplyConfig::default())
}

fn key(name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        kind: "ConfigMap".to_owned(),
        namespace: Some("default".to_owned()),
        name: name.to_owned(),
    }
}

#[tokio::test]
async fn each_level_is_applied_once_in_order_and_nothing_again_when_unchanged() {
    let server = Scripted::default();
    let applier = applier(&server);
    let mut driver = Recording::new();
    let mut observed = Observed::new();
    let mut rounds = Rounds::for_graph(&driver.graph);
    let Ok(converged) = converge(&mut driver, &applier, &mut observed, &mut rounds).await;
    assert!(converged.unsettled.is_empty());
    assert!(converged.plan.is_ready(), "{:?}", converged.plan.status);
    assert_eq!(driver.levels_applied, [0, 1], "level 0, then level 1");
    assert_eq!(
        server.applies(),
        [
            "PATCH /api/v1/namespaces/default/configmaps/p-first",
            "PATCH /api/v1/namespaces/default/configmaps/p-second",
        ]
    );
    assert_eq!(
        observed.get(&key("p-second")).unwrap()["data"]["copied"],
        "one",
        "the second level read the first level's answer"
    );
    assert_eq!(rounds.taken, 2);
    assert_eq!(
        driver.inventory.group_kinds.len(),
        1,
        "the inventory was widened to ConfigMaps"
    );

    // Converging again with the answers observed applies nothing.
    let before = server.requests.lock().unwrap().len();
    let Ok(again) = converge(&mut driver, &applier, &mut observed, &mut rounds).await;
    assert!(again.plan.is_ready());
    assert_eq!(server.requests.lock().unwrap().len(), before, "no request");
}

#[tokio::test]
async fn an_object_of_another_applyset_is_named_and_not_applied() {
    let server = Scripted::default();
    let applier = applier(&server);
    let mut driver = Recording::new();
    let mut observed = Observed::new();
    observed.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "p-first", "namespace": "default", "uid": "theirs",
            "labels": {"applyset.kubernetes.io/part-of": "applyset-theirs-v1"}},
        "data": {"value": "one"}}));
    let mut rounds = Rounds::for_graph(&driver.graph);
    let Ok(converged) = converge(&mut driver, &applier, &mut observed, &mut rounds).await;
    assert_eq!(
        driver.owned_elsewhere,
        [OwnedElsewhere {
            key: key("p-first"),
            level: 0,
            applyset: "applyset-theirs-v1".to_owned(),
        }]
    );
    assert!(
        server.applies().is_empty(),
        "nothing applied past the conflict: {:?}",
        server.applies()
    );
    assert!(converged.unsettled.is_empty());
}

#[tokio::test]
async fn objects_applied_round_after_round_are_reported_unsettled() {
    let server = Scripted::default();
    let applier = applier(&server);
    let mut driver = Recording::new();
    let mut observed = Observed::new();
    let mut rounds = Rounds { taken: 0, limit: 1 };
    let Ok(converged) = converge(&mut driver, &applier, &mut observed, &mut rounds).await;
    assert_eq!(converged.unsettled, [key("p-second")]);
    assert_eq!(
        server.applies().len(),
        1,
        "only the first level was applied"
    );
}

/// A member of the instance's ApplySet as the server lists it.
fn member(name: &str, node: &str, going: bool) -> Json {
    let mut member = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "labels": {"applyset.kubernetes.io/part-of": "applyset-mine-v1",
                "kro.run/instance-id": "instance-uid", "kro.run/node-id": node}}});
    if going {
        member["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    member
}

#[test]
fn pruning_takes_what_left_the_plan_and_keeps_the_rest_in_the_inventory() {
    let recording = Recording::new();
    let current = kro_runtime::plan(
        &recording.graph,
        &recording.instance,
        &Observed::new(),
        &recording.options,
    );
    let members = vec![
        member("p-first", "first", false),
        member("p-gone", "removed-node", false),
        member("someone-elses", "removed-node", false),
    ];
    let mut members = members;
    members[2]["metadata"]["labels"]["kro.run/instance-id"] = json!("another-instance");
    let pruning = kro_engine::cleanup::pruning(
        &recording.graph,
        &current,
        members,
        "instance-uid",
        "default",
    );
    let pruned: Vec<_> = pruning.prune.iter().filter_map(ObjectKey::of).collect();
    assert_eq!(
        pruned,
        [key("p-gone")],
        "only this instance's, and not what it wants"
    );
    assert_eq!(
        pruning
            .inventory
            .group_kinds
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["ConfigMap"]
    );
    assert!(pruning.inventory.namespaces.is_empty(), "the parent's own");
}

#[tokio::test]
async fn a_wave_is_deleted_at_once_and_each_member_reaches_the_driver_once() {
    let members = [
        member("a", "first", false),
        member("b", "first", true),
        member("c", "second", false),
    ];
    let wave = [key("a"), key("b"), key("missing")];
    let handed = Mutex::new(Vec::new());
    let outcomes = kro_engine::cleanup::delete_wave(&members, &wave, 2, |key, member| {
        handed.lock().unwrap().push(key.name.clone());
        let going = kro_engine::cleanup::is_going(member);
        async move { if going { Err("being deleted") } else { Ok(()) } }
    })
    .await;
    let mut names: Vec<_> = outcomes
        .iter()
        .map(|(key, outcome)| (key.name.as_str(), *outcome))
        .collect();
    names.sort();
    assert_eq!(names, [("a", Ok(())), ("b", Err("being deleted"))]);
    let mut handed = handed.into_inner().unwrap();
    handed.sort();
    assert_eq!(
        handed,
        ["a", "b"],
        "c is not in the wave, and missing is not listed"
    );
}
