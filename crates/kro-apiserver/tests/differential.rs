//! The differential suite: the same API scenarios against the embedded server and against a
//! real kube-apiserver (`scripts/controlplane.sh`, issue #8), comparing what a client sees —
//! status codes, content types, warnings, `Status` reasons and messages, and response bodies
//! with the values that differ by nature (uids, resourceVersions, timestamps) masked.
//!
//! Each scenario is one async function driving a [`Session`]; every request it makes is a
//! step of the transcript, and the two transcripts must be equal step by step. Where the real
//! control plane cannot run (no Go, no built binaries) the scenarios still run against the
//! embedded server alone and the comparison is skipped with a printed reason; under `CI=true`
//! that is a failure.

mod common;

use std::path::Path;
use std::time::Duration;

use http::{Method, Request};
use kro_apiserver::Simulators;
use kro_test_support::real_control_plane_or_skip;
use serde_json::{Value, json};

use common::serve;

/// One server under test and the transcript of what it answered.
struct Session {
    client: kube::Client,
    steps: Vec<Value>,
}

/// What a request got back: the status code and the body as JSON (`Null` when not JSON).
struct Reply {
    code: u16,
    body: Value,
}

impl Reply {
    fn resource_version(&self) -> String {
        self.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Values that differ between any two servers, masked wherever they appear.
const VOLATILE: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "continue",
];

fn normalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if VOLATILE.contains(&key.as_str())
                    && child.as_str().is_some_and(|text| !text.is_empty())
                {
                    *child = json!("<set>");
                } else {
                    normalize(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

impl Session {
    /// Sends a request and records the step: code, content type, warnings and masked body.
    async fn call(
        &mut self,
        step: &str,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
    ) -> Reply {
        self.call_with(step, method, path, content_type, body, JSON)
            .await
    }

    async fn call_with(
        &mut self,
        step: &str,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
        accept: &str,
    ) -> Reply {
        self.call_with_headers(step, method, path, content_type, body, accept, &[])
            .await
    }

    /// [`Session::call_with`], with more request headers.
    #[allow(clippy::too_many_arguments)]
    async fn call_with_headers(
        &mut self,
        step: &str,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
        accept: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("Accept", accept);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        if let Some(content_type) = content_type {
            builder = builder.header("Content-Type", content_type);
        }
        let bytes = body
            .map(|body| serde_json::to_vec(body).expect("a JSON body"))
            .unwrap_or_default();
        let request = builder
            .body(kube::client::Body::from(bytes))
            .expect("a request");
        let response = self
            .client
            .send(request)
            .await
            .unwrap_or_else(|error| panic!("{step}: {error}"));
        let code = response.status().as_u16();
        let header = |name: &str| -> Vec<String> {
            response
                .headers()
                .get_all(name)
                .iter()
                .map(|value| value.to_str().unwrap_or_default().to_owned())
                .collect()
        };
        let content = header("content-type");
        let warnings = header("warning");
        let raw = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_else(|error| panic!("{step}: reading the body: {error}"));
        let body = if path.contains("watch=") {
            // A watch stream: one event per line.
            Value::Array(
                raw.split(|byte| *byte == b'\n')
                    .filter(|line| !line.is_empty())
                    .map(|line| serde_json::from_slice(line).unwrap_or(Value::Null))
                    .collect(),
            )
        } else {
            serde_json::from_slice(&raw).unwrap_or(Value::Null)
        };
        let mut recorded = body.clone();
        normalize(&mut recorded);
        self.steps.push(json!({
            "step": step,
            "code": code,
            "contentType": content,
            "warnings": warnings,
            "body": recorded,
        }));
        Reply { code, body }
    }

    /// Sends raw bytes (a protobuf body) and records the step like [`Session::call`], with a
    /// protobuf answer decoded to JSON and a protobuf watch stream to its events.
    async fn call_bytes(
        &mut self,
        step: &str,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: &str,
    ) -> Reply {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("Accept", accept);
        if let Some(content_type) = content_type {
            builder = builder.header("Content-Type", content_type);
        }
        let request = builder
            .body(kube::client::Body::from(body))
            .expect("a request");
        let response = self
            .client
            .send(request)
            .await
            .unwrap_or_else(|error| panic!("{step}: {error}"));
        let code = response.status().as_u16();
        let content: Vec<String> = response
            .headers()
            .get_all("content-type")
            .iter()
            .map(|value| value.to_str().unwrap_or_default().to_owned())
            .collect();
        let raw = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_else(|error| panic!("{step}: reading the body: {error}"));
        let media = content.first().cloned().unwrap_or_default();
        // Whether our encoder writes the decoded answer back to the very bytes received
        // (for kube-apiserver's answers: byte equality with Go's marshalling).
        let mut same_bytes = Value::Null;
        let body = if media.contains("stream=watch") {
            protobuf_watch_events(&raw)
        } else if media.starts_with(PROTOBUF) {
            let decoded = kro_apiserver::protobuf::decode_object(&raw)
                .unwrap_or_else(|error| panic!("{step}: undecodable protobuf: {error}"));
            let again = kro_apiserver::protobuf::encode_object(&decoded).ok();
            same_bytes = json!(again.as_deref() == Some(&raw[..]));
            decoded
        } else {
            serde_json::from_slice(&raw).unwrap_or(Value::Null)
        };
        let mut recorded = body.clone();
        normalize(&mut recorded);
        self.steps.push(json!({
            "step": step,
            "code": code,
            "contentType": content,
            "body": recorded,
            "reencodedToTheSameBytes": same_bytes,
        }));
        Reply { code, body }
    }

    /// A GET with an explicit `Accept` (Tables), recorded like [`Session::call`].
    async fn call_accepting(&mut self, step: &str, path: &str, accept: &str) -> Reply {
        self.call_with(step, Method::GET, path, None, None, accept)
            .await
    }

    /// Masks a value of the last step that differs by nature (a generated name).
    fn mask(&mut self, pointer: &str) {
        if let Some(value) = self
            .steps
            .last_mut()
            .and_then(|step| step.pointer_mut(pointer))
        {
            *value = json!("<set>");
        }
    }

    /// Records a value the scenario derived (for facts such as "the resourceVersion did not
    /// move", which masking would hide).
    fn note(&mut self, step: &str, value: Value) {
        self.steps.push(json!({ "step": step, "value": value }));
    }

    /// Polls a GET until `ready` holds (at most 20 s), then records that last answer.
    async fn wait_for(&mut self, step: &str, path: &str, ready: impl Fn(&Value) -> bool) {
        for _ in 0..200 {
            let mut probe = Session {
                client: self.client.clone(),
                steps: Vec::new(),
            };
            let reply = probe.call(step, Method::GET, path, None, None).await;
            if ready(&reply.body) {
                self.steps.extend(probe.steps);
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{step}: {path} did not become ready within 20 s");
    }
}

fn config_map(namespace: &str, name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "diff"}},
        "data": data,
    })
}

async fn create_namespace(session: &mut Session, name: &str) {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    session
        .call(
            "create the namespace",
            Method::POST,
            "/api/v1/namespaces",
            Some(JSON),
            Some(&namespace),
        )
        .await;
}

/// Create, get, list, update, patch and delete of ConfigMaps, with their errors.
async fn config_map_lifecycle(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let one = config_map(ns, "one", json!({"a": "1"}));
    let created = session
        .call("create", Method::POST, &base, Some(JSON), Some(&one))
        .await;
    session
        .call("create again", Method::POST, &base, Some(JSON), Some(&one))
        .await;
    session
        .call("get", Method::GET, &format!("{base}/one"), None, None)
        .await;
    session
        .call_accepting(
            "get with an empty Accept header",
            &format!("{base}/one"),
            "",
        )
        .await;
    session
        .call(
            "get a missing one",
            Method::GET,
            &format!("{base}/nope"),
            None,
            None,
        )
        .await;
    session
        .call(
            "create into a missing namespace",
            Method::POST,
            "/api/v1/namespaces/missing-ns/configmaps",
            Some(JSON),
            Some(&config_map("missing-ns", "x", json!({}))),
        )
        .await;
    session
        .call(
            "create with an invalid name",
            Method::POST,
            &base,
            Some(JSON),
            Some(&config_map(ns, "Bad_Name", json!({}))),
        )
        .await;
    // A subdomain's parts have no length of their own: only the whole name's 253.
    let long = "a".repeat(64);
    session
        .call(
            "create with a 64-character name without a dot",
            Method::POST,
            &base,
            Some(JSON),
            Some(&config_map(ns, &long, json!({}))),
        )
        .await;
    session
        .call(
            "create with a 254-character name",
            Method::POST,
            &base,
            Some(JSON),
            Some(&config_map(ns, &"b".repeat(254), json!({}))),
        )
        .await;
    let mut labelled = config_map(ns, "labelled", json!({}));
    labelled["metadata"]["labels"] = json!({"long": "c".repeat(64)});
    session
        .call(
            "create with a 64-character label value",
            Method::POST,
            &base,
            Some(JSON),
            Some(&labelled),
        )
        .await;
    labelled["metadata"]["labels"] = json!({"bad key!": "x"});
    session
        .call(
            "create with a label key that is not a qualified name",
            Method::POST,
            &base,
            Some(JSON),
            Some(&labelled),
        )
        .await;
    session
        .call(
            "create with a name that differs from the URL's namespace",
            Method::POST,
            &base,
            Some(JSON),
            Some(&config_map("elsewhere", "two", json!({}))),
        )
        .await;
    let mut unknown = config_map(ns, "strict", json!({}));
    unknown["colour"] = json!("red");
    session
        .call(
            "create with an unknown field, Strict",
            Method::POST,
            &format!("{base}?fieldValidation=Strict"),
            Some(JSON),
            Some(&unknown),
        )
        .await;
    session
        .call(
            "create with an unknown field, Warn",
            Method::POST,
            &format!("{base}?fieldValidation=Warn"),
            Some(JSON),
            Some(&unknown),
        )
        .await;
    let mut generated = config_map(ns, "", json!({}));
    generated["metadata"] = json!({"generateName": "gen-", "namespace": ns});
    let generated = session
        .call(
            "create with generateName (dry run)",
            Method::POST,
            &format!("{base}?dryRun=All"),
            Some(JSON),
            Some(&generated),
        )
        .await;
    session.mask("/body/metadata/name");
    let generated_name = generated.body["metadata"]["name"]
        .as_str()
        .unwrap_or_default();
    session.note(
        "the generated name has the prefix and five more characters",
        json!(generated_name.starts_with("gen-") && generated_name.len() == 9),
    );
    // The dry run left nothing behind.
    session
        .call(
            "list after the dry run",
            Method::GET,
            &format!("{base}?labelSelector=app%3Ddiff"),
            None,
            None,
        )
        .await;

    let stale = created.body.clone();
    let mut updated = created.body.clone();
    updated["data"] = json!({"a": "2"});
    let after_update = session
        .call(
            "update",
            Method::PUT,
            &format!("{base}/one"),
            Some(JSON),
            Some(&updated),
        )
        .await;
    session
        .call(
            "update with a stale resourceVersion",
            Method::PUT,
            &format!("{base}/one"),
            Some(JSON),
            Some(&stale),
        )
        .await;
    let unchanged = session
        .call(
            "update that changes nothing",
            Method::PUT,
            &format!("{base}/one"),
            Some(JSON),
            Some(&after_update.body),
        )
        .await;
    session.note(
        "a write that changes nothing keeps the resourceVersion",
        json!(unchanged.resource_version() == after_update.resource_version()),
    );
    session
        .call(
            "merge patch",
            Method::PATCH,
            &format!("{base}/one"),
            Some(MERGE),
            Some(&json!({"data": {"b": "2"}, "metadata": {"labels": {"tier": "x"}}})),
        )
        .await;
    session
        .call(
            "strategic merge patch",
            Method::PATCH,
            &format!("{base}/one"),
            Some(STRATEGIC),
            Some(&json!({"data": {"c": "3"}})),
        )
        .await;
    session
        .call(
            "json patch with a passing test",
            Method::PATCH,
            &format!("{base}/one"),
            Some(JSON_PATCH),
            Some(&json!([
                {"op": "test", "path": "/data/a", "value": "2"},
                {"op": "remove", "path": "/data/c"},
            ])),
        )
        .await;
    session
        .call(
            "json patch with a failing test",
            Method::PATCH,
            &format!("{base}/one"),
            Some(JSON_PATCH),
            Some(&json!([{"op": "test", "path": "/data/a", "value": "9"}])),
        )
        .await;
    session
        .call(
            "patch of a missing object",
            Method::PATCH,
            &format!("{base}/nope"),
            Some(MERGE),
            Some(&json!({"data": {}})),
        )
        .await;
    for name in ["two", "three"] {
        session
            .call(
                &format!("create {name}"),
                Method::POST,
                &base,
                Some(JSON),
                Some(&config_map(ns, name, json!({"n": name}))),
            )
            .await;
    }
    session
        .call(
            "list by label",
            Method::GET,
            &format!("{base}?labelSelector=tier%3Dx"),
            None,
            None,
        )
        .await;
    session
        .call(
            "list by name",
            Method::GET,
            &format!("{base}?fieldSelector=metadata.name%3Dtwo"),
            None,
            None,
        )
        .await;
    let page = session
        .call(
            "list the first page",
            Method::GET,
            &format!("{base}?limit=2"),
            None,
            None,
        )
        .await;
    let token = page.body["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    session
        .call(
            "list the next page",
            Method::GET,
            &format!("{base}?limit=2&continue={token}"),
            None,
            None,
        )
        .await;
    session
        .call(
            "list with a malformed label selector",
            Method::GET,
            &format!("{base}?labelSelector=a%3D%3D%3Db"),
            None,
            None,
        )
        .await;
    session
        .call(
            "list with an unsupported field selector",
            Method::GET,
            &format!("{base}?fieldSelector=data.a%3D1"),
            None,
            None,
        )
        .await;
    session
        .call("delete", Method::DELETE, &format!("{base}/one"), None, None)
        .await;
    session
        .call(
            "delete a missing one",
            Method::DELETE,
            &format!("{base}/one"),
            None,
            None,
        )
        .await;
    session
        .call(
            "delete the rest by label",
            Method::DELETE,
            &format!("{base}?labelSelector=app%3Ddiff"),
            None,
            None,
        )
        .await;
    session
        .call("list what is left", Method::GET, &base, None, None)
        .await;
}

/// Finalizers hold a deletion; the watch from before shows every step.
async fn finalizers_and_watch(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let list = session
        .call(
            "list to start watching from",
            Method::GET,
            &base,
            None,
            None,
        )
        .await;
    let from = list.resource_version();
    let mut held = config_map(ns, "held", json!({"k": "v"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    session
        .call(
            "create with a finalizer",
            Method::POST,
            &base,
            Some(JSON),
            Some(&held),
        )
        .await;
    session
        .call(
            "delete: marked, not gone",
            Method::DELETE,
            &format!("{base}/held"),
            None,
            None,
        )
        .await;
    session
        .call(
            "a new finalizer while deleting",
            Method::PATCH,
            &format!("{base}/held"),
            Some(JSON_PATCH),
            Some(&json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/more"}])),
        )
        .await;
    session
        .call(
            "a data change while deleting",
            Method::PATCH,
            &format!("{base}/held"),
            Some(MERGE),
            Some(&json!({"data": {"k": "w"}})),
        )
        .await;
    session
        .call(
            "the last finalizer goes",
            Method::PATCH,
            &format!("{base}/held"),
            Some(MERGE),
            Some(&json!({"metadata": {"finalizers": null}})),
        )
        .await;
    session
        .call(
            "then it is gone",
            Method::GET,
            &format!("{base}/held"),
            None,
            None,
        )
        .await;
    session
        .call(
            "the watch from before replays every change",
            Method::GET,
            &format!("{base}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
            None,
            None,
        )
        .await;
    graceful_pod_deletion(session, ns).await;
}

/// A pod bound to a node is deleted gracefully (it waits for its kubelet) until a zero grace
/// period deletes it. Pods carry admission-added fields this sandbox does not model, so the
/// steps record the deletion fields only.
async fn graceful_pod_deletion(session: &mut Session, ns: &str) {
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bound"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}]},
    });
    let steps = [
        (
            "a pod bound to a node",
            Method::POST,
            pods.clone(),
            Some(pod),
        ),
        (
            "its deletion waits for the kubelet",
            Method::DELETE,
            format!("{pods}/bound"),
            None,
        ),
        (
            "a second deletion changes nothing",
            Method::DELETE,
            format!("{pods}/bound"),
            None,
        ),
        (
            "a zero grace period deletes it",
            Method::DELETE,
            format!("{pods}/bound?gracePeriodSeconds=0"),
            None,
        ),
        (
            "then it is gone",
            Method::GET,
            format!("{pods}/bound"),
            None,
        ),
    ];
    for (step, method, path, body) in steps {
        let content_type = body.as_ref().map(|_| JSON);
        let reply = session
            .call(step, method, &path, content_type, body.as_ref())
            .await;
        if let Some(last) = session.steps.last_mut() {
            last["body"] = json!({
                "kind": reply.body["kind"],
                "deletionTimestamp": reply.body.pointer("/metadata/deletionTimestamp").is_some(),
                "deletionGracePeriodSeconds": reply.body.pointer("/metadata/deletionGracePeriodSeconds"),
                "reason": reply.body.get("reason"),
            });
        }
    }
}

/// Server-side apply: ownership, no-op applies, conflicts, force and removal.
async fn server_side_apply(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let item = format!("{base}/applied");
    let intent = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied", "labels": {"team": "a"}},
        "data": {"k1": "v1", "k2": "v2"},
    });
    let first = session
        .call(
            "apply creates",
            Method::PATCH,
            &format!("{item}?fieldManager=alice"),
            Some(APPLY),
            Some(&intent),
        )
        .await;
    let again = session
        .call(
            "apply again",
            Method::PATCH,
            &format!("{item}?fieldManager=alice"),
            Some(APPLY),
            Some(&intent),
        )
        .await;
    session.note(
        "an unchanged apply keeps the resourceVersion",
        json!(first.resource_version() == again.resource_version()),
    );
    session
        .call(
            "another manager changes k1 with an update",
            Method::PATCH,
            &format!("{item}?fieldManager=bob"),
            Some(MERGE),
            Some(&json!({"data": {"k1": "bob", "k3": "v3"}})),
        )
        .await;
    session
        .call(
            "apply conflicts",
            Method::PATCH,
            &format!("{item}?fieldManager=alice"),
            Some(APPLY),
            Some(&intent),
        )
        .await;
    let smaller = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"k1": "v1"},
    });
    session
        .call(
            "apply with force, dropping k2 and the label",
            Method::PATCH,
            &format!("{item}?fieldManager=alice&force=true"),
            Some(APPLY),
            Some(&smaller),
        )
        .await;
    session
        .call(
            "a second applier shares k1",
            Method::PATCH,
            &format!("{item}?fieldManager=carol"),
            Some(APPLY),
            Some(&smaller),
        )
        .await;
    session
        .call(
            "apply without a field manager",
            Method::PATCH,
            &item,
            Some(APPLY),
            Some(&smaller),
        )
        .await;
    let mut with_managed = smaller.clone();
    with_managed["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    session
        .call(
            "apply carrying managedFields",
            Method::PATCH,
            &format!("{item}?fieldManager=alice"),
            Some(APPLY),
            Some(&with_managed),
        )
        .await;
    session
        .call(
            "force on a non-apply patch",
            Method::PATCH,
            &format!("{item}?fieldManager=alice&force=true"),
            Some(MERGE),
            Some(&json!({"data": {"k9": "v"}})),
        )
        .await;
    session
        .call(
            "apply of a kind that does not match the URL",
            Method::PATCH,
            &format!("{item}?fieldManager=alice"),
            Some(APPLY),
            Some(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "applied"}})),
        )
        .await;
}

const WIDGET_GROUP: &str = "differential.kro.run";

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{WIDGET_GROUP}")},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "default": 1, "minimum": 0},
                            "size": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'huge'", "message": "too big"}]},
                            "ports": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {
                                    "name": {"type": "string"},
                                    "port": {"type": "integer"},
                                }},
                            },
                        }},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "notes": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        }},
                    },
                }},
            }],
        },
    })
}

/// A CustomResourceDefinition and its custom resources: validation, defaulting, pruning,
/// status and scale subresources, apply by list-map keys, and deletion with the definition.
async fn custom_resources(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let mut invalid = widget_crd();
    invalid["metadata"]["name"] = json!("wrong.differential.kro.run");
    invalid["spec"]["versions"][0]["storage"] = json!(false);
    session
        .call(
            "an invalid definition",
            Method::POST,
            crds,
            Some(JSON),
            Some(&invalid),
        )
        .await;
    session
        .call(
            "create the definition",
            Method::POST,
            crds,
            Some(JSON),
            Some(&widget_crd()),
        )
        .await;
    let crd = format!("{crds}/widgets.{WIDGET_GROUP}");
    session
        .wait_for("the definition is established", &crd, |body| {
            body["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|condition| {
                    condition["type"] == "Established" && condition["status"] == "True"
                })
        })
        .await;
    let base = format!("/apis/{WIDGET_GROUP}/v1/namespaces/{ns}/widgets");
    // The endpoint may answer a moment after Established on kube-apiserver.
    session
        .wait_for("the endpoint serves", &base, |body| {
            body["kind"] == "WidgetList"
        })
        .await;
    let widget = json!({
        "apiVersion": format!("{WIDGET_GROUP}/v1"),
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": "small", "unknown": "pruned", "ports": [{"name": "http", "port": 80}]},
    });
    session
        .call(
            "create: defaulted and pruned",
            Method::POST,
            &base,
            Some(JSON),
            Some(&widget),
        )
        .await;
    let mut huge = widget.clone();
    huge["metadata"]["name"] = json!("w2");
    huge["spec"] = json!({"size": "huge", "replicas": -1});
    session
        .call(
            "create failing the schema and a rule",
            Method::POST,
            &base,
            Some(JSON),
            Some(&huge),
        )
        .await;
    session
        .call(
            "strategic merge patch is not for custom resources",
            Method::PATCH,
            &format!("{base}/w1"),
            Some(STRATEGIC),
            Some(&json!({"spec": {"size": "big"}})),
        )
        .await;
    session
        .call(
            "a status change through the main resource is ignored",
            Method::PATCH,
            &format!("{base}/w1"),
            Some(MERGE),
            Some(&json!({"status": {"replicas": 5}})),
        )
        .await;
    session
        .call(
            "status through the subresource",
            Method::PATCH,
            &format!("{base}/w1/status"),
            Some(MERGE),
            Some(&json!({"status": {"replicas": 2}, "spec": {"size": "ignored"}})),
        )
        .await;
    // The comparison takes a missing key for a null one: the notes record the keys kept.
    let kept = |reply: &Reply| {
        json!(serde_json::to_string(&reply.body["status"]["notes"]).unwrap_or_default())
    };
    let nulls = session
        .call(
            "a merge patch's nulls inside new values go, in lists too",
            Method::PATCH,
            &format!("{base}/w1/status"),
            Some(MERGE),
            Some(&json!({"status": {"notes": {
                "gone": null, "kept": {"x": null}, "list": [{"a": null, "b": 1}],
            }}})),
        )
        .await;
    session.note("the notes a merge patch with nulls left", kept(&nulls));
    let nulls = session
        .call(
            "a merge patch's list over a list loses its nulls too",
            Method::PATCH,
            &format!("{base}/w1/status"),
            Some(MERGE),
            Some(&json!({"status": {"notes": {"list": [{"c": null, "d": 2}]}}})),
        )
        .await;
    session.note("the notes a list with nulls left", kept(&nulls));
    session
        .call(
            "the scale",
            Method::GET,
            &format!("{base}/w1/scale"),
            None,
            None,
        )
        .await;
    session
        .call(
            "scale to 3",
            Method::PATCH,
            &format!("{base}/w1/scale"),
            Some(MERGE),
            Some(&json!({"spec": {"replicas": 3}})),
        )
        .await;
    session
        .call(
            "apply merges list-map items by key",
            Method::PATCH,
            &format!("{base}/w1?fieldManager=ports"),
            Some(APPLY),
            Some(&json!({
                "apiVersion": format!("{WIDGET_GROUP}/v1"),
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"ports": [{"name": "https", "port": 443}]},
            })),
        )
        .await;
    session
        .call("delete the definition", Method::DELETE, &crd, None, None)
        .await;
    session
        .wait_for("the definition is gone", &crd, |body| body["code"] == 404)
        .await;
    session
        .call(
            "its resources are no longer served",
            Method::GET,
            &base,
            None,
            None,
        )
        .await;
}

/// Generation, the status subresource of a built-in kind, selector transitions in a watch,
/// and server-side Tables.
async fn workloads_and_tables(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let item = format!("{base}/api");
    let list = session
        .call(
            "list to start watching from",
            Method::GET,
            &base,
            None,
            None,
        )
        .await;
    let from = list.resource_version();
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "labels": {"tier": "back"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "busybox", "ports": [{"containerPort": 8080}]}]},
            },
        },
    });
    session
        .call("create", Method::POST, &base, Some(JSON), Some(&deployment))
        .await;
    session
        .call(
            "a label change keeps the generation",
            Method::PATCH,
            &item,
            Some(MERGE),
            Some(&json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await;
    session
        .call(
            "a spec change moves the generation",
            Method::PATCH,
            &item,
            Some(MERGE),
            Some(&json!({"spec": {"replicas": 3}})),
        )
        .await;
    session
        .call(
            "status through the main resource is ignored",
            Method::PATCH,
            &item,
            Some(MERGE),
            Some(&json!({"status": {"replicas": 7}})),
        )
        .await;
    session
        .call(
            "status through the subresource",
            Method::PATCH,
            &format!("{item}/status"),
            Some(MERGE),
            Some(&json!({"status": {"replicas": 3, "observedGeneration": 2}})),
        )
        .await;
    session
        .call(
            "metadata through the status subresource: annotations kept, labels not",
            Method::PATCH,
            &format!("{item}/status"),
            Some(MERGE),
            Some(
                &json!({"metadata": {"annotations": {"note": "kept"}, "labels": {"tier": "lost"}}}),
            ),
        )
        .await;
    // managedFields sort by the second of their last write: a second later, the next main
    // write is newer than this one on both servers, whenever the steps run.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    session
        .call_accepting(
            "deployments as metadata only",
            &base,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
    session
        .call_accepting(
            "a deployment as metadata only",
            &item,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await;
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }}},
    });
    let created = session
        .call(
            "a Job gets a generated selector and pod labels",
            Method::POST,
            &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
            Some(JSON),
            Some(&job),
        )
        .await;
    let uid = created.body["metadata"]["uid"].clone();
    let generated = json!([
        created.body["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]
            == uid,
        created.body["spec"]["template"]["metadata"]["labels"]["controller-uid"] == uid,
        created.body["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"]
            == uid,
    ]);
    for pointer in [
        "/body/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid",
        "/body/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid",
        "/body/spec/template/metadata/labels/controller-uid",
        "/body/metadata/labels/batch.kubernetes.io~1controller-uid",
        "/body/metadata/labels/controller-uid",
    ] {
        session.mask(pointer);
    }
    session.note("the generated labels carry the Job's uid", generated);
    // A port applied without its protocol is keyed with the default protocol: applying it
    // again keeps one port (and the applier owns it by its full key).
    let ported = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ported"},
        "spec": {
            "selector": {"matchLabels": {"app": "ported"}},
            "template": {
                "metadata": {"labels": {"app": "ported"}},
                "spec": {"containers": [{"name": "web", "image": "busybox", "ports": [{"containerPort": 80}]}]},
            },
        },
    });
    for step in [
        "apply a port without its protocol",
        "apply it again: still one port",
    ] {
        session
            .call(
                step,
                Method::PATCH,
                &format!("{base}/ported?fieldManager=kro.run%2Fapplyset&force=true"),
                Some(APPLY),
                Some(&ported),
            )
            .await;
    }
    let claims = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims");
    let claim = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    });
    session
        .call(
            "a claim starts Pending",
            Method::POST,
            &claims,
            Some(JSON),
            Some(&claim),
        )
        .await;
    let table = session
        .call_accepting(
            "claims as a Table",
            &claims,
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    mask_age(session, &table);
    let autoscalers = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers");
    let autoscaler = json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "maxReplicas": 4,
        },
    });
    session
        .call(
            "an autoscaler gets the default minimum and CPU target",
            Method::POST,
            &autoscalers,
            Some(JSON),
            Some(&autoscaler),
        )
        .await;
    let table = session
        .call_accepting(
            "autoscalers as a Table",
            &autoscalers,
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    mask_age(session, &table);
    session
        .call("the table of deployments", Method::GET, &base, None, None)
        .await;
    // Tables: the column definitions and the cells, the Age column masked (it moves).
    let table = session
        .call_accepting(
            "deployments as a Table",
            &base,
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    mask_age(session, &table);
    session
        .call_accepting(
            "deployments as a Table with includeObject=Bogus",
            &format!("{base}?includeObject=Bogus"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    session
        .call_accepting(
            "deployments as a list with includeObject=Bogus",
            &format!("{base}?includeObject=Bogus&limit=1"),
            "application/json",
        )
        .await;
    session
        .call(
            "the label leaves the selector",
            Method::PATCH,
            &item,
            Some(MERGE),
            Some(&json!({"metadata": {"labels": {"tier": "back"}}})),
        )
        .await;
    session
        .call(
            "a watch by label sees the object arrive and leave",
            Method::GET,
            &format!(
                "{base}?watch=1&labelSelector=tier%3Dfront&resourceVersion={from}&timeoutSeconds=1"
            ),
            None,
            None,
        )
        .await;
    session
        .call(
            "scale of a deployment",
            Method::GET,
            &format!("{item}/scale"),
            None,
            None,
        )
        .await;
}

/// Masks the Age cells of a recorded Table (they depend on when the request ran).
fn mask_age(session: &mut Session, table: &Reply) {
    let Some(age) = table.body["columnDefinitions"]
        .as_array()
        .and_then(|columns| columns.iter().position(|column| column["name"] == "Age"))
    else {
        return;
    };
    let rows = table.body["rows"].as_array().map_or(0, Vec::len);
    for row in 0..rows {
        session.mask(&format!("/body/rows/{row}/cells/{age}"));
    }
}

/// Strategic merge patches of a Deployment: merge keys, directives and their errors.
async fn strategic_merge_patches(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx", "env": [{"name": "A", "value": "1"}]},
                    {"name": "side", "image": "busybox"},
                ]},
            },
        },
    });
    session
        .call("create", Method::POST, &base, Some(JSON), Some(&deployment))
        .await;
    let item = format!("{base}/web");
    let patches = [
        (
            "containers merge by name, new ones first",
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "new", "image": "x"},
                {"name": "web", "image": "nginx:2"},
            ]}}}}),
        ),
        (
            "$setElementOrder orders the list",
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "side"}, {"name": "web"}, {"name": "new"}],
                "containers": [{"name": "side", "image": "busybox:2"}],
            }}}}),
        ),
        (
            "$patch: delete removes an item",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "new", "$patch": "delete"}]}}}}),
        ),
        (
            "a missing merge key",
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
        ),
        (
            "an unknown directive",
            json!({"spec": {"$patch": "explode"}}),
        ),
        (
            "$retainKeys keeps only the listed keys",
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        ),
    ];
    for (step, patch) in patches {
        let reply = session
            .call(step, Method::PATCH, &item, Some(STRATEGIC), Some(&patch))
            .await;
        // The spec is what the patch decides; managed fields are compared in the apply
        // scenario (built-in creates differ in nested struct markers, see docs/apiserver.md).
        if let Some(last) = session.steps.last_mut() {
            last["body"] = if reply.code == 200 {
                let mut spec = reply.body["spec"]["template"]["spec"].clone();
                normalize(&mut spec);
                json!({"containers": spec["containers"], "strategy": reply.body["spec"]["strategy"]})
            } else {
                let mut status = reply.body.clone();
                normalize(&mut status);
                status
            };
        }
    }
}

/// A definition of `Gadget`s in `group` with `selectable` as its `selectableFields`.
fn gadget_crd(group: &str, selectable: &[&str]) -> Value {
    let fields: Vec<Value> = selectable
        .iter()
        .map(|path| json!({"jsonPath": path}))
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "selectableFields": fields,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "metadata": {"type": "object"},
                        "spec": {"type": "object", "properties": {
                            "color": {"type": "string"},
                            "size": {"type": "integer"},
                            "big": {"type": "boolean"},
                            "ratio": {"type": "number"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "f1": {"type": "string"}, "f2": {"type": "string"},
                            "f3": {"type": "string"}, "f4": {"type": "string"},
                            "f5": {"type": "string"}, "f6": {"type": "string"},
                        }},
                    },
                }},
            }],
        },
    })
}

/// Creates `crd` and waits until its custom resources are served at `base`.
async fn establish(session: &mut Session, crd: &Value, base: &str, list_kind: &str) {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    session
        .call(
            "create the definition",
            Method::POST,
            crds,
            Some(JSON),
            Some(crd),
        )
        .await;
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    session
        .wait_for(
            "the definition is established",
            &format!("{crds}/{name}"),
            |body| {
                body["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|condition| {
                        condition["type"] == "Established" && condition["status"] == "True"
                    })
            },
        )
        .await;
    session
        .wait_for("the endpoint serves", base, |body| {
            body["kind"] == list_kind
        })
        .await;
}

/// `selectableFields` of a definition: what kube-apiserver refuses in them, and lists and
/// watches of custom resources by field selectors on them.
async fn selectable_fields(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let group = format!("{ns}.kro.run");
    dry_run_verdict(
        session,
        "selectable fields kube-apiserver refuses",
        &gadget_crd(
            &group,
            &[
                ".spec.nope",
                ".spec.ratio",
                ".metadata",
                ".spec.tags[0]",
                "spec.color",
                ".spec.tags",
                ".spec.color",
                ".spec.color",
                "",
            ],
        ),
    )
    .await;
    dry_run_verdict(
        session,
        "nine selectable fields",
        &gadget_crd(
            &group,
            &[
                ".spec.color",
                ".spec.size",
                ".spec.big",
                ".spec.f1",
                ".spec.f2",
                ".spec.f3",
                ".spec.f4",
                ".spec.f5",
                ".spec.f6",
            ],
        ),
    )
    .await;
    let base = format!("/apis/{group}/v1/namespaces/{ns}/gadgets");
    establish(
        session,
        &gadget_crd(&group, &[".spec.color", ".spec.size", ".spec.big"]),
        &base,
        "GadgetList",
    )
    .await;
    let mut last = String::new();
    for (name, spec) in [
        ("g1", json!({"color": "red", "size": 3, "big": true})),
        ("g2", json!({"color": "blue", "size": 3})),
        ("g3", json!({"size": 5})),
    ] {
        let gadget = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
            "metadata": {"name": name}, "spec": spec});
        last = session
            .call(
                &format!("create {name}"),
                Method::POST,
                &base,
                Some(JSON),
                Some(&gadget),
            )
            .await
            .resource_version();
    }
    let namespace_selector = format!("metadata.namespace%3D{ns}");
    for selector in [
        "spec.color%3Dred",
        "spec.size%3D3,spec.color!%3Dred",
        "spec.color%3D",
        "spec.big%3Dtrue",
        "spec.big!%3Dtrue",
        "metadata.name%3Dg2",
        &namespace_selector,
        "spec.nope%3D1",
        "spec.ratio%3D1",
    ] {
        session
            .call(
                &format!("list by {selector}"),
                Method::GET,
                &format!("{base}?fieldSelector={selector}"),
                None,
                None,
            )
            .await;
    }
    session
        .call(
            "g2 turns red",
            Method::PATCH,
            &format!("{base}/g2"),
            Some(MERGE),
            Some(&json!({"spec": {"color": "red"}})),
        )
        .await;
    session
        .call(
            "g1 turns green",
            Method::PATCH,
            &format!("{base}/g1"),
            Some(MERGE),
            Some(&json!({"spec": {"color": "green"}})),
        )
        .await;
    session
        .call(
            "a watch of the red ones sees g2 come and g1 go",
            Method::GET,
            &format!(
                "{base}?watch=1&fieldSelector=spec.color%3Dred&resourceVersion={last}&timeoutSeconds=1"
            ),
            None,
            None,
        )
        .await;
    metadata_only_reads(session, ns, &base).await;
    session
        .call(
            "delete the definition",
            Method::DELETE,
            &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}"),
            None,
            None,
        )
        .await;
}

/// Field selectors with escaped values (`\,`, `\=`, `\\`) and malformed ones, malformed label
/// selectors, and request paths with percent-escapes (issue #39, item 10).
async fn selectors_and_escaped_paths(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let one = config_map(ns, "one", json!({"a": "1"}));
    session
        .call("create one", Method::POST, &base, Some(JSON), Some(&one))
        .await;
    // Query values as a client sends them: `%3D` is `=`, `%5C` a backslash, `%2C` a comma.
    for (step, selector) in [
        ("a name", "metadata.name%3Done"),
        ("a name with ==", "metadata.name%3D%3Done"),
        ("an escaped comma", "metadata.name%3Done%5C%2Cb"),
        (
            "two terms, one with an escape",
            "metadata.name!%3Dx%5C%3Dy,metadata.name%3Done",
        ),
        ("an empty value", "metadata.name%3D"),
        ("empty terms", "%2C%2C"),
        ("a==", "a%3D%3D"),
        ("=b", "%3Db"),
        ("no operator", "a"),
        ("a blank term", "%20"),
        ("a trailing backslash", "metadata.name%3Db%5C"),
        ("an invalid escape", "metadata.name%3D%5Cx"),
        ("an unescaped =", "metadata.name%3Da%3Db"),
        ("an unknown operator", "metadata.name%3Ca"),
        ("a >= operator", "metadata.name%3E%3Da"),
        ("terms in sorted order", "z,metadata.name%3Da"),
        ("two unsupported fields", "zz%3D1,aa%3D2"),
        ("a parse error after an unsupported field", "a%3D1,c"),
        ("a leading space", "%20metadata.name%3Done"),
        ("a space in the value", "metadata.name%3D%20one"),
    ] {
        session
            .call(
                &format!("field selector: {step}"),
                Method::GET,
                &format!("{base}?fieldSelector={selector}"),
                None,
                None,
            )
            .await;
    }
    for (step, selector) in [
        ("an unclosed list", "a%20in%20(b"),
        ("a bare !", "!"),
        ("an empty requirement", "a,,b"),
        ("spaces", "%20app%20%3D%20diff%20"),
        ("a set", "app%20in%20(diff,other)"),
    ] {
        session
            .call(
                &format!("label selector: {step}"),
                Method::GET,
                &format!("{base}?labelSelector={selector}"),
                None,
                None,
            )
            .await;
    }
    // Custom resources whose selectable field holds the characters that need escapes.
    let group = format!("{ns}.kro.run");
    let gadgets = format!("/apis/{group}/v1/namespaces/{ns}/gadgets");
    establish(
        session,
        &gadget_crd(&group, &[".spec.color"]),
        &gadgets,
        "GadgetList",
    )
    .await;
    for (name, color) in [
        ("comma", "a,b"),
        ("equals", "x=y"),
        ("backslash", r"back\slash"),
        ("plain", "a"),
    ] {
        let gadget = json!({"apiVersion": format!("{group}/v1"), "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"color": color}});
        session
            .call(
                &format!("create the {name} gadget"),
                Method::POST,
                &gadgets,
                Some(JSON),
                Some(&gadget),
            )
            .await;
    }
    for selector in [
        "spec.color%3Da%5C%2Cb",
        "spec.color%3D%3Dx%5C%3Dy",
        "spec.color%3Dback%5C%5Cslash",
        "spec.color!%3Da%5C%2Cb",
        "spec.color%3Da,spec.color!%3Da%5C%2Cb",
    ] {
        session
            .call(
                &format!("gadgets by {selector}"),
                Method::GET,
                &format!("{gadgets}?fieldSelector={selector}"),
                None,
                None,
            )
            .await;
    }
    session
        .call(
            "delete the gadget definition",
            Method::DELETE,
            &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}"),
            None,
            None,
        )
        .await;
    // Names with a `:` (as the system roles have), sent escaped as clients do.
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": format!("system:{ns}")},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
    session
        .call(
            "create a system: role",
            Method::POST,
            roles,
            Some(JSON),
            Some(&role),
        )
        .await;
    for (step, path) in [
        (
            "get it by its escaped name",
            format!("{roles}/system%3A{ns}"),
        ),
        ("get it by its plain name", format!("{roles}/system:{ns}")),
        (
            "an escaped letter in the resource",
            format!("/api/v1/namespaces/{ns}/config%6Daps/one"),
        ),
        ("an escaped slash in a name", format!("{base}/one%2Fstatus")),
        (
            "an escaped slash that adds a segment",
            format!("{base}/a%2Fb%2Fc"),
        ),
        ("a bad escape", format!("{base}/one%zz")),
        ("a cut escape", format!("{base}/one%4")),
    ] {
        session.call(step, Method::GET, &path, None, None).await;
    }
    session
        .call(
            "delete it by its escaped name",
            Method::DELETE,
            &format!("{roles}/system%3A{ns}"),
            None,
            None,
        )
        .await;
}

const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// Lists and watches as `PartialObjectMetadata` (what client-go's metadata informers ask
/// for), of a built-in kind and of custom resources (`gadgets`, the list path of some).
async fn metadata_only_reads(session: &mut Session, ns: &str, gadgets: &str) {
    let config_maps = format!("/api/v1/namespaces/{ns}/configmaps");
    session
        .call(
            "a config map",
            Method::POST,
            &config_maps,
            Some(JSON),
            Some(&config_map(ns, "meta", json!({"k": "v"}))),
        )
        .await;
    session
        .call_accepting(
            "one config map as a metadata list",
            &format!("{config_maps}/meta"),
            METADATA_LIST,
        )
        .await;
    session
        .call_accepting(
            "one gadget as a metadata list",
            &format!("{gadgets}/g3"),
            METADATA_LIST,
        )
        .await;
    session
        .call_accepting("one gadget as metadata", &format!("{gadgets}/g3"), METADATA)
        .await;
    for (what, base) in [("config maps", config_maps.as_str()), ("gadgets", gadgets)] {
        session
            .call_accepting(&format!("{what} as metadata"), base, METADATA_LIST)
            .await;
        session
            .call_accepting(
                &format!("{what} as metadata, asked for one at a time"),
                base,
                METADATA,
            )
            .await;
        session
            .call_accepting(
                &format!("a watch of {what} as metadata, with bookmarks"),
                &format!("{base}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1"),
                METADATA,
            )
            .await;
    }
}

/// Events are one resource in two versions: each written through one version is read
/// through the other, its fields renamed as kube-apiserver converts them.
async fn events_in_both_versions(session: &mut Session, ns: &str) {
    create_namespace(session, ns).await;
    let core = format!("/api/v1/namespaces/{ns}/events");
    let events = format!("/apis/events.k8s.io/v1/namespaces/{ns}/events");
    let recorded = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "kro.run/controller",
        "reportingInstance": "kro-1",
        "action": "Reconcile",
        "reason": "Ready",
        "regarding": {"kind": "ConfigMap", "name": "web", "namespace": ns, "apiVersion": "v1"},
        "note": "all resources are ready",
        "type": "Normal",
    });
    session
        .call(
            "an event through events.k8s.io",
            Method::POST,
            &events,
            Some(JSON),
            Some(&recorded),
        )
        .await;
    let old = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.2"},
        "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": ns},
        "reason": "Changed", "message": "data changed", "type": "Warning",
        "source": {"component": "tests", "host": "node-1"}, "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:02Z",
    });
    session
        .call(
            "an event through core/v1",
            Method::POST,
            &core,
            Some(JSON),
            Some(&old),
        )
        .await;
    session
        .call(
            "the first through core/v1",
            Method::GET,
            &format!("{core}/web.1"),
            None,
            None,
        )
        .await;
    session
        .call(
            "the second through events.k8s.io",
            Method::GET,
            &format!("{events}/web.2"),
            None,
            None,
        )
        .await;
    session
        .call(
            "core/v1 lists both, by involvedObject as kubectl describe asks",
            Method::GET,
            &format!(
                "{core}?fieldSelector=involvedObject.name%3Dweb,involvedObject.kind%3DConfigMap"
            ),
            None,
            None,
        )
        .await;
    let from = session
        .call("events.k8s.io lists both", Method::GET, &events, None, None)
        .await
        .resource_version();
    // One store: a name is taken in both versions, and each version writes the other's.
    let taken = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.1"},
        "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": ns},
        "reason": "Again", "message": "the same name", "type": "Normal",
    });
    session
        .call(
            "a name taken through the other version",
            Method::POST,
            &core,
            Some(JSON),
            Some(&taken),
        )
        .await;
    session
        .call(
            "the first patched through core/v1",
            Method::PATCH,
            &format!("{core}/web.1"),
            Some(MERGE),
            Some(&json!({"message": "still ready", "count": 2})),
        )
        .await;
    session
        .call(
            "the second patched through events.k8s.io",
            Method::PATCH,
            &format!("{events}/web.2"),
            Some(STRATEGIC),
            Some(&json!({"note": "data changed again", "deprecatedCount": 4})),
        )
        .await;
    session
        .call(
            "both read through the other version",
            Method::GET,
            &format!("{events}/web.1"),
            None,
            None,
        )
        .await;
    session
        .call(
            "the second through core/v1",
            Method::GET,
            &format!("{core}/web.2"),
            None,
            None,
        )
        .await;
    session
        .call(
            "a watch through events.k8s.io sees the writes through core/v1",
            Method::GET,
            &format!("{events}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
            None,
            None,
        )
        .await;
    session
        .call(
            "the first deleted through core/v1",
            Method::DELETE,
            &format!("{core}/web.1"),
            None,
            None,
        )
        .await;
    session
        .call(
            "the rest deleted through events.k8s.io",
            Method::DELETE,
            &events,
            None,
            None,
        )
        .await;
    session
        .call("none left", Method::GET, &core, None, None)
        .await;
}

/// Runs every scenario on one server, in namespaces named after them.
/// A definition of kind `C{index}` whose `spec` has the schema `spec`.
fn cost_crd(group: &str, index: usize, spec: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("c{index}s.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": format!("c{index}s"), "singular": format!("c{index}"),
                "kind": format!("C{index}"), "listKind": format!("C{index}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}],
        },
    })
}

/// An object with one property `field` of schema `schema`.
fn with_field(field: Value) -> Value {
    json!({"type": "object", "properties": {"field": field}})
}

fn rules(rules: &[&str]) -> Value {
    Value::Array(rules.iter().map(|rule| json!({"rule": rule})).collect())
}

/// An unbounded string list with a cheap rule and the message expression `message`.
fn with_message(mut list: Value, message: &str) -> Value {
    list["type"] = json!("array");
    list["x-kubernetes-validations"] =
        json!([{"rule": "self.size() < 5", "messageExpression": message}]);
    with_field(list)
}

/// String lists nested three deep (unbounded), whose strings carry `rules`.
fn nested_strings(rules: Value) -> Value {
    with_field(
        json!({"type": "array", "items": {"type": "array", "items": {"type": "array",
        "items": {"type": "string", "maxLength": 10, "x-kubernetes-validations": rules}}}}),
    )
}

/// Rules whose estimated cost is near, under and over kube-apiserver's limits (per rule, 10
/// million; per schema, 100 million), each in its own definition.
fn cost_corpus() -> Vec<(&'static str, Value)> {
    let strings = |list: Value, rule: &str| {
        let mut list = list;
        list["type"] = json!("array");
        list["x-kubernetes-validations"] = rules(&[rule]);
        with_field(list)
    };
    let unbounded_strings = json!({"items": {"type": "string"}});
    let named = json!({"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "maxLength": 20}}});
    let nine = "self.size() < 10 && self.size() > 1 && self.size() != 5";
    let eleven = "self.size() < 10 && self.size() > 1 && self.size() != 5 && self != 'a'";
    let fourteen = "self.size() < 10 && self.size() > 1 && self.size() != 5 && self != 'a' \
                    && self.size() != 6";
    vec![
        (
            "a regex over an unbounded list",
            strings(
                unbounded_strings.clone(),
                "self.all(x, x.matches('^[a-z]+$'))",
            ),
        ),
        (
            "the same regex over a bounded list",
            strings(
                json!({"maxItems": 10, "items": {"type": "string", "maxLength": 20}}),
                "self.all(x, x.matches('^[a-z]+$'))",
            ),
        ),
        (
            "a cheap rule deep under unbounded lists",
            nested_strings(rules(&["self.size() < 10"])),
        ),
        (
            "a regex deep under unbounded lists",
            nested_strings(rules(&["self.matches('^[a-z]{1,10}$')"])),
        ),
        (
            "eleven rules under the rule limit, over the total",
            nested_strings(rules(&[nine; 11])),
        ),
        ("just over the rule limit", nested_strings(rules(&[eleven]))),
        ("just under the rule limit", nested_strings(rules(&[nine]))),
        (
            "a factor just under 1.5",
            nested_strings(rules(&[fourteen])),
        ),
        (
            "values of an unbounded map",
            with_field(json!({"type": "object",
            "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": rules(&["self.all(k, self[k].size() < 100)"])})),
        ),
        (
            "keys of an unbounded map",
            with_field(json!({"type": "object",
            "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": rules(&["self.all(k, k.matches('^[a-z]+$'))"])})),
        ),
        (
            "a regex on the values of a bounded map",
            with_field(json!({"type": "object",
            "maxProperties": 1000,
            "additionalProperties": {"type": "string",
                "x-kubernetes-validations": rules(&["self.matches('^[a-z]+$')"])}})),
        ),
        (
            "exists_one over objects with a required field",
            strings(
                json!({"items": named.clone()}),
                "self.exists_one(x, x.name == 'a')",
            ),
        ),
        (
            "a quadratic rule",
            strings(
                json!({"items": named}),
                "self.all(x, self.exists(y, y.name == x.name))",
            ),
        ),
        (
            "lists bounded at two levels",
            with_field(json!({"type": "array", "maxItems": 5000,
            "items": {"type": "array", "maxItems": 5000, "items": {"type": "integer"},
                "x-kubernetes-validations": rules(&["self.all(x, x > 0)"])}})),
        ),
        (
            "string functions on an unbounded string",
            with_field(json!({"type": "string",
            "x-kubernetes-validations": rules(&["self.lowerAscii().contains('x')"])})),
        ),
        (
            "string functions under an unbounded list",
            strings(
                json!({"items": {"type": "string",
                "x-kubernetes-validations": rules(&["self.lowerAscii().contains('x')"])}}),
                "self.size() > 0",
            ),
        ),
        (
            "isSorted on a bounded list",
            strings(
                json!({"maxItems": 100, "items": {"type": "string", "maxLength": 10}}),
                "self.isSorted()",
            ),
        ),
        (
            "a set function",
            strings(unbounded_strings.clone(), "sets.contains(self, ['a'])"),
        ),
        (
            "map then all",
            strings(
                unbounded_strings.clone(),
                "self.map(x, x + 'a').all(y, y.size() < 5)",
            ),
        ),
        (
            "a filter then size",
            strings(
                unbounded_strings.clone(),
                "self.filter(x, x.startsWith('a')).size() < 3",
            ),
        ),
        (
            "a quantity",
            with_field(json!({"type": "string", "maxLength": 20,
            "x-kubernetes-validations": rules(&["quantity(self).isGreaterThan(quantity('1'))"])})),
        ),
        (
            "an enum and a format",
            with_field(json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["fast", "careful"]},
            "at": {"type": "string", "format": "date-time"}},
            "x-kubernetes-validations": rules(&[
                "self.mode.matches('^[a-z]+$') && self.at > timestamp('2020-01-01T00:00:00Z')"])})),
        ),
        (
            "an expensive message expression",
            with_message(unbounded_strings.clone(), "self.map(x, x + x).join(', ')"),
        ),
        (
            "a message expression that is not a string",
            with_message(unbounded_strings.clone(), "self.size()"),
        ),
        (
            "a message expression that does not compile",
            with_message(unbounded_strings, "string(self.size()) + 1"),
        ),
        (
            "two-variable all over a map",
            with_field(json!({"type": "object",
            "additionalProperties": {"type": "integer"},
            "x-kubernetes-validations": rules(&["self.all(k, v, v > 0 && k.size() < 10)"])})),
        ),
    ]
}

/// Posts `crd` as a dry run and records whether it was accepted, and why not: the status
/// reason, message and causes.
async fn dry_run_verdict(session: &mut Session, step: &str, crd: &Value) {
    let mut probe = Session {
        client: session.client.clone(),
        steps: Vec::new(),
    };
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All";
    let reply = probe
        .call(step, Method::POST, path, Some(JSON), Some(crd))
        .await;
    let verdict = if reply.code == 201 {
        json!({"code": 201})
    } else {
        json!({"code": reply.code, "reason": reply.body["reason"],
            "message": reply.body["message"], "causes": reply.body["details"]["causes"]})
    };
    session.note(step, verdict);
}

/// Posts a definition written in YAML as a dry run, and records the verdict as
/// [`dry_run_verdict`] does.
async fn dry_run_yaml_verdict(session: &mut Session, step: &str, yaml: &str) {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All")
        .header("Accept", JSON)
        .header("Content-Type", "application/yaml")
        .body(kube::client::Body::from(yaml.as_bytes().to_vec()))
        .expect("a request");
    let response = session
        .client
        .send(request)
        .await
        .unwrap_or_else(|error| panic!("{step}: {error}"));
    let code = response.status().as_u16();
    let raw = response
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|error| panic!("{step}: reading the body: {error}"));
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let verdict = if code == 201 {
        json!({"code": 201})
    } else {
        json!({"code": code, "reason": body["reason"], "message": body["message"],
            "causes": body["details"]["causes"]})
    };
    session.note(step, verdict);
}

/// Posts (as a dry run) each definition of the corpus, then makes a created definition too
/// expensive with a patch.
async fn rule_costs(session: &mut Session, run: &str) {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let group = format!("{run}.kro.run");
    let mut corpus = cost_corpus();
    // The top of the schema, and an embedded resource, have `metadata.name` (an unbounded
    // string): a 160-character pattern against it costs 1.26 times the limit.
    let long_match = format!("self.metadata.name.matches('{}')", "a".repeat(160));
    corpus.push((
        "an embedded resource's metadata",
        with_field(
            json!({"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": rules(&[&long_match])}),
        ),
    ));
    // Library functions on unbounded strings, run up to 40 times: the factors show each
    // estimate to seven digits.
    for rule in [
        "self.split(',').size() < 3",
        "self.replace('a', 'bc') != 'c'",
        "self.find('[0-9]+') != ''",
        "self.findAll('[0-9]+').size() < 2",
        "self.indexOf('a') > 0",
        "self.lastIndexOf('a') > 0",
        "self.substring(1) == 'a'",
        "self.trim().upperAscii().startsWith('A')",
        "self.endsWith('a') || self.contains('bb')",
        "url(self).getHost() == 'x'",
        "isIP(self) && ip(self).family() == 4",
        "isCIDR(self) && cidr(self).containsIP('10.0.0.1')",
        "format.dns1123Label().validate(self).hasValue()",
        "self.charAt(3) == 'a' && self.format([]) != ''",
        "bytes(self).size() > 2 && string(bytes(self)) == self",
        "self.split(',').join('-') != ''",
        "[self, self].exists(x, x.size() > 3) && {self: 1}.size() == 1",
        "self + self != 'a'",
    ] {
        corpus.push((
            rule,
            with_field(
                json!({"type": "array", "maxItems": 40, "items": {"type": "string",
                "x-kubernetes-validations": rules(&[rule])}}),
            ),
        ));
    }
    for (step, field) in [
        (
            "a transition rule",
            json!({"type": "array", "maxItems": 40, "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf || self.matches('^[a-z]*$')"}]}}),
        ),
        (
            "an optional old self",
            json!({"type": "array", "maxItems": 40, "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() && oldSelf.value() == self",
                "optionalOldSelf": true}]}}),
        ),
        (
            "an optional field",
            json!({"type": "array", "maxItems": 40, "items": {"type": "object",
            "properties": {"name": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.?name.orValue('') != 'a'"}]}}),
        ),
        (
            "int or string",
            json!({"type": "array", "maxItems": 40, "items": {
            "x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": "self == 1 || self == 'abc'"}]}}),
        ),
        (
            "optionalOldSelf without oldSelf",
            json!({"type": "string", "maxLength": 5, "x-kubernetes-validations": [
                {"rule": "self != 'a'", "optionalOldSelf": false}]}),
        ),
        (
            "a transition rule in a map list",
            json!({"type": "array", "maxItems": 40, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string", "maxLength": 10},
                        "value": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self.value == oldSelf.value"}]}}),
        ),
    ] {
        corpus.push((step, with_field(field)));
    }
    let last = corpus.len();
    for (index, (step, spec)) in corpus.into_iter().enumerate() {
        let crd = cost_crd(&group, index, spec);
        dry_run_verdict(session, step, &crd).await;
    }
    let mut crd = cost_crd(&group, last, json!({"type": "object"}));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
        rules(&[&long_match]);
    dry_run_verdict(session, "the object's own metadata", &crd).await;
    // Definitions from upstream kro, accepted by kube-apiserver, rules and all.
    for file in [
        "internal.kro.run_graphrevisions.yaml",
        "kro.run_resourcegraphdefinitions.yaml",
    ] {
        let path = kro_test_support::repository_root()
            .join("testdata/kro-upstream/crds")
            .join(file);
        let yaml = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        dry_run_yaml_verdict(session, file, &yaml).await;
    }
    // An update is checked as a create is: a cheap definition made expensive.
    let cheap = cost_crd(&group, 99, nested_strings(rules(&["self.size() < 10"])));
    let mut probe = Session {
        client: session.client.clone(),
        steps: Vec::new(),
    };
    let created = probe
        .call(
            "create a cheap definition",
            Method::POST,
            crds,
            Some(JSON),
            Some(&cheap),
        )
        .await;
    session.note("create a cheap definition", json!(created.code));
    let mut versions = cheap["spec"]["versions"].clone();
    versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
        nested_strings(rules(&["self.matches('^[a-z]{1,10}$')"]));
    let name = format!("{crds}/c99s.{group}");
    session
        .call(
            "make it expensive",
            Method::PATCH,
            &name,
            Some(MERGE),
            Some(&json!({"spec": {"versions": versions}})),
        )
        .await;
    let deleted = probe
        .call("delete it", Method::DELETE, &name, None, None)
        .await;
    session.note("delete it", json!(deleted.code));
}

/// The events of a protobuf watch stream: 4-byte big-endian lengths, each followed by a
/// bare `WatchEvent` whose object is an enveloped object.
fn protobuf_watch_events(mut raw: &[u8]) -> Value {
    use prost::Message as _;
    let mut events = Vec::new();
    while raw.len() >= 4 {
        let length = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
        let Some(frame) = raw.get(4..4 + length) else {
            break;
        };
        raw = &raw[4 + length..];
        let event = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(frame)
            .expect("a WatchEvent frame");
        let object = event
            .object
            .and_then(|object| object.raw)
            .map(|raw| kro_apiserver::protobuf::decode_object(&raw).expect("an enveloped object"))
            .unwrap_or(Value::Null);
        events.push(json!({"type": event.r#type, "object": object}));
    }
    Value::Array(events)
}

/// A definition of `Gadget`s in `group` that keeps any field (for the protobuf scenario).
fn open_gadget_crd(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }}],
        },
    })
}

/// Protobuf bodies and answers (issue #25): create, get, list and watch of built-in kinds in
/// protobuf, each decoding to the JSON answer; `Status` errors in protobuf; and custom
/// resources, which stay JSON-only (406 for protobuf alone, JSON when JSON is listed too).
async fn protobuf_bodies(session: &mut Session, ns: &str) {
    use kro_apiserver::protobuf::encode_object;
    create_namespace(session, ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let both = "application/vnd.kubernetes.protobuf,application/json";
    let from = session
        .call("list to watch from", Method::GET, &base, None, None)
        .await
        .resource_version();
    let mut settings = config_map(ns, "settings", json!({"mode": "fast", "empty": ""}));
    settings["metadata"]["creationTimestamp"] = Value::Null;
    let bytes = encode_object(&settings).expect("a ConfigMap encodes");
    session
        .call_bytes(
            "create in protobuf",
            Method::POST,
            &base,
            Some(PROTOBUF),
            bytes.clone(),
            both,
        )
        .await;
    session
        .call_bytes(
            "create again: a protobuf Status",
            Method::POST,
            &base,
            Some(PROTOBUF),
            bytes,
            both,
        )
        .await;
    let in_protobuf = session
        .call_bytes(
            "get in protobuf",
            Method::GET,
            &format!("{base}/settings"),
            None,
            Vec::new(),
            PROTOBUF,
        )
        .await;
    let in_json = session
        .call(
            "get in JSON",
            Method::GET,
            &format!("{base}/settings"),
            None,
            None,
        )
        .await;
    session.note(
        "the protobuf answer decodes to the JSON answer",
        json!(in_protobuf.body == in_json.body),
    );
    let list = session
        .call_bytes(
            "list in protobuf",
            Method::GET,
            &base,
            None,
            Vec::new(),
            both,
        )
        .await;
    let json_list = session
        .call("list in JSON", Method::GET, &base, None, None)
        .await;
    session.note(
        "the protobuf list decodes to the JSON list's items",
        json!(list.body["items"] == json_list.body["items"]),
    );
    session
        .call_bytes(
            "watch in protobuf",
            Method::GET,
            &format!("{base}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
            None,
            Vec::new(),
            "application/vnd.kubernetes.protobuf;stream=watch",
        )
        .await;
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns, "creationTimestamp": null, "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
            },
        },
        "status": {},
    });
    session
        .call_bytes(
            "a deployment as kubectl create sends it, answered in JSON",
            Method::POST,
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            Some(PROTOBUF),
            encode_object(&deployment).expect("a Deployment encodes"),
            JSON,
        )
        .await;
    session
        .call_bytes(
            "the defaulted deployment in protobuf",
            Method::GET,
            &format!("/apis/apps/v1/namespaces/{ns}/deployments/web"),
            None,
            Vec::new(),
            PROTOBUF,
        )
        .await;
    let group = format!("{ns}.protobuf.kro.run");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    session
        .call(
            "create a definition",
            Method::POST,
            crds,
            Some(JSON),
            Some(&open_gadget_crd(&group)),
        )
        .await;
    session.mask("/body/metadata/name");
    session.mask("/body/spec/group");
    let crd = format!("{crds}/gadgets.{group}");
    session
        .wait_for("the definition is established", &crd, |body| {
            body["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|condition| {
                    condition["type"] == "Established" && condition["status"] == "True"
                })
        })
        .await;
    session.steps.pop();
    let gadgets = format!("/apis/{group}/v1/namespaces/{ns}/gadgets");
    // A protobuf body for a custom resource is not compared: kube-apiserver 1.33 panics
    // decoding it and drops the connection (the embedded server answers 415).
    session
        .call_bytes(
            "a custom resource list in protobuf alone",
            Method::GET,
            &gadgets,
            None,
            Vec::new(),
            PROTOBUF,
        )
        .await;
    session
        .call_bytes(
            "a custom resource list in protobuf or JSON",
            Method::GET,
            &gadgets,
            None,
            Vec::new(),
            both,
        )
        .await;
    session.mask("/body/apiVersion");
    session
        .call("delete the definition", Method::DELETE, &crd, None, None)
        .await;
    session.steps.pop();
}

async fn transcripts(client: kube::Client, run: &str) -> Vec<(&'static str, Vec<Value>)> {
    let mut all = Vec::new();
    macro_rules! scenario {
        ($name:literal, $function:ident) => {{
            let mut session = Session {
                client: client.clone(),
                steps: Vec::new(),
            };
            $function(&mut session, &format!("{}-{run}", $name)).await;
            all.push(($name, session.steps));
        }};
    }
    scenario!("config-maps", config_map_lifecycle);
    scenario!("finalizers", finalizers_and_watch);
    scenario!("apply", server_side_apply);
    scenario!("crds", custom_resources);
    scenario!("strategic", strategic_merge_patches);
    scenario!("workloads", workloads_and_tables);
    scenario!("rule-costs", rule_costs);
    scenario!("protobuf", protobuf_bodies);
    scenario!("selectable", selectable_fields);
    scenario!("events", events_in_both_versions);
    scenario!("selectors", selectors_and_escaped_paths);
    scenario!("impersonation", impersonation);
    all
}

/// Who a request acts as when it impersonates (`SelfSubjectReview`, `kubectl auth whoami`):
/// a ServiceAccount's groups, named groups, a UID, extras with escaped keys, and groups
/// without a user refused. (Impersonating an unauthenticated user is left out: kube-apiserver's
/// RBAC forbids it the review, and this server has no authorizer.)
async fn impersonation(session: &mut Session, _run: &str) {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    for (step, headers) in [
        (
            "a service account",
            &[("Impersonate-User", "system:serviceaccount:apps:deployer")][..],
        ),
        (
            "a service account with named groups",
            &[
                ("Impersonate-User", "system:serviceaccount:apps:deployer"),
                ("Impersonate-Group", "team-a"),
            ][..],
        ),
        (
            "a user with a uid and extras",
            &[
                ("Impersonate-User", "jane"),
                ("Impersonate-Group", "team-a"),
                ("Impersonate-Group", "team-b"),
                ("Impersonate-Uid", "u-1"),
                ("Impersonate-Extra-Scopes", "openid"),
                ("Impersonate-Extra-Scopes", "profile"),
                ("Impersonate-Extra-acme.com%2Fproject", "maps"),
            ][..],
        ),
        (
            "groups without a user",
            &[("Impersonate-Group", "team-a")][..],
        ),
    ] {
        session
            .call_with_headers(
                step,
                Method::POST,
                path,
                Some(JSON),
                Some(&review),
                JSON,
                headers,
            )
            .await;
    }
}

/// Where two JSON values differ, as `path: ours ≠ real` lines.
fn differences(ours: &Value, real: &Value, path: &str, out: &mut Vec<String>) {
    match (ours, real) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let null = Value::Null;
                differences(
                    a.get(key).unwrap_or(&null),
                    b.get(key).unwrap_or(&null),
                    &format!("{path}.{key}"),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, &format!("{path}[{index}]"), out);
            }
        }
        _ if ours != real => out.push(format!("{path}: ours {ours} ≠ real {real}")),
        _ => {}
    }
}

/// `step` with every `managedFields` list in manager order. Both servers order entries by
/// operation, then by the second of their time, then by manager: two entries written within
/// the same second on one server and across seconds on the other differ in order by timing
/// alone (a definition's create and its Established status write, say).
fn managers_in_name_order(step: &Value) -> Value {
    match step {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let mut value = managers_in_name_order(value);
                    if key == "managedFields"
                        && let Value::Array(entries) = &mut value
                    {
                        entries.sort_by_key(|entry| {
                            ["operation", "manager", "subresource", "apiVersion"]
                                .map(|field| entry[field].as_str().unwrap_or_default().to_owned())
                        });
                    }
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(managers_in_name_order).collect()),
        other => other.clone(),
    }
}

fn compare(ours: &[(&str, Vec<Value>)], real: &[(&str, Vec<Value>)]) -> Vec<String> {
    let mut report = Vec::new();
    for ((scenario, our_steps), (_, real_steps)) in ours.iter().zip(real) {
        if our_steps.len() != real_steps.len() {
            report.push(format!(
                "{scenario}: {} steps here, {} on kube-apiserver",
                our_steps.len(),
                real_steps.len()
            ));
        }
        for (our_step, real_step) in our_steps.iter().zip(real_steps) {
            let mut found = Vec::new();
            differences(
                &managers_in_name_order(our_step),
                &managers_in_name_order(real_step),
                "",
                &mut found,
            );
            if !found.is_empty() {
                report.push(format!(
                    "{scenario} / {}:\n    {}",
                    our_step["step"].as_str().unwrap_or_default(),
                    found.join("\n    ")
                ));
            }
        }
    }
    report
}

async fn real_client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}

/// Fields of the transcript no scenario should see: 5xx answers other than the ones
/// kube-apiserver gives for a missing merge key and for one custom resource asked for as a
/// metadata list.
fn server_errors(transcripts: &[(&str, Vec<Value>)]) -> Vec<String> {
    transcripts
        .iter()
        .flat_map(|(scenario, steps)| {
            steps
                .iter()
                .filter(|step| step["code"].as_u64().is_some_and(|code| code >= 500))
                .filter(|step| {
                    ![
                        "a missing merge key",
                        "an unknown directive",
                        "one gadget as a metadata list",
                        "groups without a user",
                    ]
                    .contains(&step["step"].as_str().unwrap_or_default())
                })
                .map(move |step| format!("{scenario} / {}: {}", step["step"], step["body"]))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_server_answers_as_kube_apiserver_does() {
    // A reused control plane (KRO_TEST_KUBECONFIG) may hold earlier runs' namespaces: this
    // run's are named apart, the same on both servers.
    let run = format!(
        "run{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_millis() % 1_000_000)
            .unwrap_or_default()
    );
    // kube-apiserver alone runs no controllers: neither do the simulators here.
    let (_server, client) = serve(Simulators::none()).await;
    let ours = transcripts(client, &run).await;
    let unexpected = server_errors(&ours);
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));

    let Some(control_plane) = real_control_plane_or_skip("differential") else {
        return;
    };
    let real = transcripts(real_client(control_plane.kubeconfig()).await, &run).await;
    if let Some(directory) = std::env::var_os("KRO_DIFFERENTIAL_DUMP") {
        // For investigating a difference: both transcripts as JSON files.
        let directory = Path::new(&directory);
        for (name, transcript) in [("embedded.json", &ours), ("kube-apiserver.json", &real)] {
            let text = serde_json::to_string_pretty(&json!(transcript)).expect("JSON");
            std::fs::write(directory.join(name), text).expect("write the transcript");
        }
    }
    let report = compare(&ours, &real);
    assert!(
        report.is_empty(),
        "the embedded server differs from kube-apiserver in {} steps:\n{}",
        report.len(),
        report.join("\n")
    );
}
