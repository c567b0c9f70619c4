//! Fuzzing of HTTP bodies of every content type through the public router, in process:
//! Kubernetes-shaped objects with random mutations, the same as YAML, JSON, merge and
//! strategic merge patches, server-side apply, random bytes, and wrong or absent content
//! types, sent to built-in and custom resources with every write verb.
//!
//! Properties: nothing panics; every answer is either a Kubernetes `Status` whose `code` is
//! the HTTP status, or an object; codes are ones the API gives for bad input (never 5xx);
//! answers stay bounded in size.
//!
//! The cases come from a fixed seed, so every run (CI's included) sends the same requests;
//! `PROPTEST_RNG_SEED=<number>` explores others. The corpus in `testdata/fuzz/` (one request
//! per file: a first line `METHOD PATH CONTENT-TYPE`, then the body) is replayed first; add
//! what a new seed finds there. The decoders are also fuzzed one by one, without the router,
//! by `fuzz_protobuf`, `fuzz_json_patch`, `fuzz_strategic` and `fuzz_selectors`, with their
//! corpora in subdirectories of `testdata/fuzz/`.

use std::sync::OnceLock;

use axum::body::Body;
use http::{Request, header};
use kro_apiserver::{ServerConfig, ServerState, router};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "size": {"type": "integer", "maximum": 10},
          "tags": {"type": "array", "items": {"type": "string"}},
          "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 20"}]}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}"#;

/// The largest answer a fuzzed request may get: a stored object (3 MiB) with room for its
/// metadata.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

struct Harness {
    runtime: tokio::runtime::Runtime,
    app: axum::Router,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let app = runtime.block_on(async {
            let state = ServerState::new(ServerConfig {
                token: None,
                tls: false,
                ..ServerConfig::default()
            })
            .await
            .expect("the state builds");
            let app = router(state);
            let crd = Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(WIDGET_CRD))
                .expect("a request");
            let created = app.clone().oneshot(crd).await.expect("answered");
            assert_eq!(created.status(), 201);
            for (path, body) in [
                (
                    "/api/v1/namespaces/default/configmaps",
                    json!({"metadata": {"name": "target"}, "data": {"a": "b"}}),
                ),
                (
                    "/apis/apps/v1/namespaces/default/deployments",
                    deployment("target"),
                ),
                (
                    "/api/v1/namespaces/default/secrets",
                    json!({"metadata": {"name": "target"}, "stringData": {"k": "v"}}),
                ),
                (
                    "/apis/example.com/v1/namespaces/default/widgets",
                    json!({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "target"}, "spec": {"size": 1}}),
                ),
            ] {
                let request = Request::post(path)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .expect("a request");
                let created = app.clone().oneshot(request).await.expect("answered");
                assert_eq!(created.status(), 201, "{path}");
            }
            app
        });
        Harness { runtime, app }
    })
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

/// Where requests go: (collection, item name) of each resource fuzzed.
const RESOURCES: [(&str, &str, &str); 4] = [
    ("/api/v1/namespaces/default/configmaps", "v1", "ConfigMap"),
    ("/api/v1/namespaces/default/secrets", "v1", "Secret"),
    (
        "/apis/apps/v1/namespaces/default/deployments",
        "apps/v1",
        "Deployment",
    ),
    (
        "/apis/example.com/v1/namespaces/default/widgets",
        "example.com/v1",
        "Widget",
    ),
];

const CONTENT_TYPES: [&str; 13] = [
    "application/json",
    "application/yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/json; charset=utf-8",
    "text/plain",
    "application/xml",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/vnd.kubernetes.protobuf",
    "",
];

/// A JSON value of bounded size and depth.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|number| json!(number)),
        "\\PC{0,16}".prop_map(Value::String),
        Just(json!("target")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("metadata".to_owned()),
        Just("spec".to_owned()),
        Just("status".to_owned()),
        Just("data".to_owned()),
        Just("stringData".to_owned()),
        Just("name".to_owned()),
        Just("labels".to_owned()),
        Just("finalizers".to_owned()),
        Just("resourceVersion".to_owned()),
        Just("replicas".to_owned()),
        Just("size".to_owned()),
        Just("$patch".to_owned()),
        Just("$retainKeys".to_owned()),
        "[a-z$]{1,8}",
    ]
}

/// A JSON pointer into a Kubernetes object.
fn pointer() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            field_name(),
            Just("0".to_owned()),
            Just("-".to_owned()),
            Just("~1".to_owned()),
            "[0-9]{1,3}",
        ],
        0..5,
    )
    .prop_map(|tokens| tokens.iter().map(|token| format!("/{token}")).collect())
}

fn json_patch() -> impl Strategy<Value = Value> {
    let operation = (
        prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("bogus")
        ],
        pointer(),
        pointer(),
        any_json(),
    )
        .prop_map(
            |(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}),
        );
    prop::collection::vec(operation, 0..24).prop_map(Value::Array)
}

/// A Kubernetes-shaped object of the resource, then mutated: fields set to random values,
/// removed, or the whole object replaced.
fn kube_object(resource: usize) -> impl Strategy<Value = Value> {
    let (_, api_version, kind) = RESOURCES[resource];
    let base = match kind {
        "Deployment" => deployment("target"),
        "Widget" => json!({"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": "target"}, "spec": {"size": 3, "tags": ["a"]}}),
        "Secret" => json!({"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": "target"}, "stringData": {"k": "v"}}),
        _ => json!({"apiVersion": api_version, "kind": kind,
                    "metadata": {"name": "target"}, "data": {"a": "b"}}),
    };
    prop::collection::vec((pointer(), prop::option::of(any_json())), 0..4).prop_map(
        move |mutations| {
            let mut object = base.clone();
            for (path, value) in mutations {
                mutate(&mut object, &path, value);
            }
            object
        },
    )
}

/// Sets (or with `None` removes) what `path` names in `object`, where its parent exists.
fn mutate(object: &mut Value, path: &str, value: Option<Value>) {
    let Some((parent, last)) = path.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/");
    match (object.pointer_mut(parent), value) {
        (Some(Value::Object(map)), Some(value)) => {
            map.insert(last, value);
        }
        (Some(Value::Object(map)), None) => {
            map.remove(&last);
        }
        (None, Some(value)) if parent.is_empty() => *object = value,
        _ => {}
    }
}

#[derive(Debug, Clone)]
struct Fuzzed {
    method: &'static str,
    path: String,
    content_type: &'static str,
    body: Vec<u8>,
}

fn body_for(resource: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => kube_object(resource).prop_map(|object| object.to_string().into_bytes()),
        2 => kube_object(resource).prop_map(|object| yaml(&object).into_bytes()),
        2 => json_patch().prop_map(|patch| patch.to_string().into_bytes()),
        1 => any_json().prop_map(|value| value.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => kube_object(resource).prop_map(|object| {
            // Cut short somewhere.
            let text = object.to_string();
            text.as_bytes()[..text.len() / 2].to_vec()
        }),
    ]
}

/// YAML by hand (flow style), enough to exercise the YAML decoder with the same shapes.
fn yaml(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(key, value)| format!("{}: {}", json!(key), yaml(value)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(yaml).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn fuzzed() -> impl Strategy<Value = Fuzzed> {
    (0..RESOURCES.len()).prop_flat_map(|resource| {
        let (collection, _, _) = RESOURCES[resource];
        // Each verb mostly where it applies (writes to the object `target`, creates to the
        // collection, deletes of other names so `target` stays), sometimes anywhere.
        let anywhere = prop_oneof![
            Just(String::new()),
            Just("/target".to_owned()),
            Just("/target/status".to_owned()),
            Just("/other".to_owned()),
        ];
        let request_line = prop_oneof![
            3 => Just(("POST", String::new())),
            3 => prop_oneof![
                Just("/target".to_owned()),
                Just("/target/status".to_owned()),
                Just("/target/scale".to_owned()),
            ].prop_flat_map(|item| prop_oneof![Just("PUT"), Just("PATCH"), Just("PATCH")]
                .prop_map(move |method| (method, item.clone()))),
            1 => Just(("DELETE", "/other".to_owned())),
            1 => (prop_oneof![Just("POST"), Just("PUT"), Just("PATCH")], anywhere),
        ];
        (
            request_line,
            prop_oneof![
                Just(""),
                Just("?fieldManager=fuzz"),
                Just("?fieldManager=fuzz&force=true"),
                Just("?dryRun=All&fieldManager=fuzz"),
                Just("?fieldValidation=Strict"),
            ],
            // Mostly the types the server decodes, so bodies reach the handlers.
            prop_oneof![
                3 => prop::sample::select(&CONTENT_TYPES[..7]),
                1 => prop::sample::select(&CONTENT_TYPES[..]),
            ],
            body_for(resource),
        )
            .prop_map(move |((method, item), query, content_type, body)| Fuzzed {
                method,
                path: format!("{collection}{item}{query}"),
                content_type,
                body,
            })
    })
}

/// Sends the request and checks the answer's properties; `Err` says what is wrong.
fn check(request: &Fuzzed) -> Result<(), String> {
    let harness = harness();
    let mut builder = Request::builder()
        .method(request.method)
        .uri(&request.path)
        .header(header::USER_AGENT, "fuzz");
    if !request.content_type.is_empty() {
        builder = builder.header(header::CONTENT_TYPE, request.content_type);
    }
    let http_request = builder
        .body(Body::from(request.body.clone()))
        .map_err(|error| format!("cannot build the request: {error}"))?;
    let (code, bytes) = harness.runtime.block_on(async {
        let response = harness
            .app
            .clone()
            .oneshot(http_request)
            .await
            .map_err(|error| format!("no answer: {error}"))?;
        let code = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|error| format!("answer over {MAX_ANSWER_BYTES} bytes: {error}"))?;
        Ok::<_, String>((code, bytes))
    })?;
    let answer: Value = serde_json::from_slice(&bytes)
        .map_err(|error| format!("{code} answer is not JSON ({error})"))?;
    // kube-apiserver answers the strategic-merge-patch errors it does not classify (an
    // unknown `$patch` directive) with a 500 without a reason; so does this server.
    let unclassified_strategic_error = code == 500
        && request.content_type == "application/strategic-merge-patch+json"
        && answer.get("reason").is_none();
    if code >= 500 && !unclassified_strategic_error {
        return Err(format!("{code}: {answer}"));
    }
    let is_status = answer["kind"] == "Status";
    if code >= 400 {
        if !is_status || answer["code"] != code || answer["status"] != "Failure" {
            return Err(format!("{code} answer is not a failure Status: {answer}"));
        }
        if answer["message"].as_str().is_none_or(str::is_empty) {
            return Err(format!("{code} Status without a message: {answer}"));
        }
    } else if !is_status && answer["kind"].as_str().is_none_or(str::is_empty) {
        return Err(format!("{code} answer without a kind: {answer}"));
    }
    Ok(())
}

/// 2,000 cases from a fixed seed (seconds in a debug build; `PROPTEST_CASES` sets more).
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 2_000;
    }
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(0x006b_726f_6170_6931);
    }
    config.failure_persistence = None;
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_body_gets_a_well_formed_answer(request in fuzzed()) {
        let outcome = check(&request);
        prop_assert!(outcome.is_ok(), "{} {} ({}): {}", request.method, request.path,
            request.content_type, outcome.err().unwrap_or_default());
    }
}

/// One corpus file: `METHOD PATH CONTENT-TYPE` (`-` for none) on the first line, the body
/// after it.
fn parse_corpus_entry(text: &[u8]) -> Option<Fuzzed> {
    let split = text.iter().position(|byte| *byte == b'\n')?;
    let head = std::str::from_utf8(&text[..split]).ok()?;
    let mut parts = head.split_whitespace();
    let method = match parts.next()? {
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "GET" => "GET",
        _ => return None,
    };
    let path = parts.next()?.to_owned();
    let content_type = match parts.next()? {
        "-" => "",
        other => CONTENT_TYPES
            .iter()
            .find(|known| **known == other)
            .copied()
            .unwrap_or("application/octet-stream"),
    };
    Some(Fuzzed {
        method,
        path,
        content_type,
        body: text[split + 1..].to_vec(),
    })
}

#[test]
fn the_corpus_of_interesting_bodies_gets_well_formed_answers() {
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    // Subdirectories hold the corpora of the single-decoder targets (`fuzz_<decoder>.rs`).
    let mut entries: Vec<_> = std::fs::read_dir(&directory)
        .expect("the corpus directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_file())
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 10,
        "the corpus has {} entries",
        entries.len()
    );
    for path in entries {
        let text = std::fs::read(&path).expect("readable");
        let request = parse_corpus_entry(&text)
            .unwrap_or_else(|| panic!("{}: not a corpus entry", path.display()));
        if let Err(problem) = check(&request) {
            panic!("{}: {problem}", path.display());
        }
    }
}
