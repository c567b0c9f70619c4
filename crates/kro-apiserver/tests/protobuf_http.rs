//! Protobuf content negotiation through the router, in process: built-in kinds in protobuf
//! both ways, custom resources JSON-only (415 for a protobuf body, 406 for protobuf alone).

use axum::body::Body;
use http::{Request, StatusCode, header};
use kro_apiserver::protobuf::{MEDIA_TYPE, decode_object, encode_object};
use kro_apiserver::{ServerConfig, ServerState, router};
use kro_test_support::protobuf_bodies::{enveloped, length_delimited};
use serde_json::{Value, json};
use tower::ServiceExt as _;

async fn app() -> axum::Router {
    let state = ServerState::new(ServerConfig {
        token: None,
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .expect("the state builds");
    router(state)
}

async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> (StatusCode, String, Vec<u8>) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, accept)
        .body(Body::from(body))
        .expect("a request");
    let response = app.clone().oneshot(request).await.expect("answered");
    let status = response.status();
    let media = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the body is read");
    (status, media, bytes.to_vec())
}

fn config_map() -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default", "creationTimestamp": null},
        "data": {"mode": "fast"},
    })
}

#[tokio::test]
async fn a_protobuf_create_is_answered_in_protobuf_and_reads_back_in_json() {
    let app = app().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let bytes = encode_object(&config_map()).expect("encodes");
    let (status, media, body) = send(&app, "POST", path, MEDIA_TYPE, MEDIA_TYPE, bytes).await;
    assert_eq!((status, media.as_str()), (StatusCode::CREATED, MEDIA_TYPE));
    let created = decode_object(&body).expect("a protobuf ConfigMap");
    assert_eq!(created["data"], json!({"mode": "fast"}));

    let (status, media, body) = send(
        &app,
        "GET",
        &format!("{path}/settings"),
        "",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(
        (status, media.as_str()),
        (StatusCode::OK, "application/json")
    );
    let read: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(read, created);

    let (status, media, body) = send(
        &app,
        "GET",
        &format!("{path}/absent"),
        "",
        MEDIA_TYPE,
        Vec::new(),
    )
    .await;
    assert_eq!(
        (status, media.as_str()),
        (StatusCode::NOT_FOUND, MEDIA_TYPE)
    );
    assert_eq!(
        decode_object(&body).expect("a Status")["reason"],
        "NotFound"
    );
}

#[tokio::test]
async fn custom_resources_refuse_protobuf_bodies_and_answer_json_when_listed() {
    let app = app().await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let bytes = encode_object(&config_map()).expect("encodes");
    let (status, _, body) = send(&app, "POST", path, MEDIA_TYPE, "application/json", bytes).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let status_body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(status_body["reason"], "UnsupportedMediaType");
}

/// A CRD whose schema nests `not` `depth` deep (field numbers of Kubernetes'
/// `generated.proto`: CRD.spec 2, spec.versions 7, version.schema 4,
/// validation.openAPIV3Schema 1, JSONSchemaProps.not 28).
fn crd_with_nested_not(depth: usize) -> Vec<u8> {
    let mut schema = Vec::new();
    for _ in 0..depth {
        let mut outer = Vec::new();
        length_delimited(&mut outer, 28, &schema);
        schema = outer;
    }
    let mut raw = schema;
    for tag in [1, 4, 7, 2] {
        let mut outer = Vec::new();
        length_delimited(&mut outer, tag, &raw);
        raw = outer;
    }
    enveloped("apiextensions.k8s.io/v1", "CustomResourceDefinition", &raw)
}

#[tokio::test]
async fn a_deeply_nested_protobuf_body_is_refused_with_a_400_that_says_so() {
    // The field numbers are right: one level decodes to the schema's `not`.
    let shallow = decode_object(&crd_with_nested_not(2)).expect("decodes");
    assert_eq!(
        shallow["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["not"]["not"],
        json!({})
    );
    let app = app().await;
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // 2,000 deep (25 KB) used to overflow the stack and abort the whole process.
    let (status, _, body) = send(
        &app,
        "POST",
        path,
        MEDIA_TYPE,
        "application/json",
        crd_with_nested_not(2_000),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_slice(&body).expect("a JSON Status");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("messages nest more than 64 deep"),
        "{message}"
    );
    assert!(!message.contains("JSON"), "not a JSON error: {message}");
}

#[tokio::test]
async fn a_protobuf_body_of_another_kind_is_refused_before_it_is_decoded() {
    // A NodeList of 1.5 million empty items, 3 MB, sent to create a Node: refused for its
    // kind from the envelope alone (decoding it first peaked at 6.6 GB and took 40 s).
    let raw: Vec<u8> = [0x12u8, 0x00].repeat(1_500_000);
    let app = app().await;
    let started = std::time::Instant::now();
    let (status, _, body) = send(
        &app,
        "POST",
        "/api/v1/nodes",
        MEDIA_TYPE,
        "application/json",
        enveloped("v1", "NodeList", &raw),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        answer["message"],
        "the kind in the data (NodeList) does not match the expected kind (Node)"
    );
    // The same words for a version that is not the URL's, and for the status subresource.
    let (status, _, body) = send(
        &app,
        "PUT",
        "/apis/apps/v1/namespaces/default/deployments/web/status",
        MEDIA_TYPE,
        "application/json",
        enveloped("apps/v1beta1", "Deployment", &[]),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let answer: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        answer["message"],
        "the API version in the data (apps/v1beta1) does not match the expected API version (apps/v1)"
    );
    eprintln!("refused in {:?}", started.elapsed());
}

#[tokio::test]
async fn a_small_protobuf_body_standing_for_a_huge_object_is_refused_with_a_413() {
    // A Node with 1.5 million empty conditions: 3 MB, within the body limit, each condition
    // written out with the fields Go does not omit (`{"type":"","status":"", ...}`): more
    // JSON than the largest object stored (3 MiB). Field numbers of `generated.proto`:
    // Node.status 3, NodeStatus.conditions 4, NodeStatus.images 8.
    let conditions: Vec<u8> = [0x22u8, 0x00].repeat(1_500_000);
    let mut raw = Vec::new();
    length_delimited(&mut raw, 3, &conditions);
    let app = app().await;
    let (status, _, body) = send(
        &app,
        "POST",
        "/api/v1/nodes",
        MEDIA_TYPE,
        "application/json",
        enveloped("v1", "Node", &raw),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let answer: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        answer["message"],
        "the protobuf request body cannot be decoded: the body decodes to more than 3 MiB (3145728 bytes) of JSON"
    );
    // A Node with a million empty images (`{"names":null}` each): little JSON, but each a
    // map in memory; refused at 100,000 of them.
    let images: Vec<u8> = [0x42u8, 0x00].repeat(1_000_000);
    let mut raw = Vec::new();
    length_delimited(&mut raw, 3, &images);
    let (status, _, body) = send(
        &app,
        "POST",
        "/api/v1/nodes",
        MEDIA_TYPE,
        "application/json",
        enveloped("v1", "Node", &raw),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let answer: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(
        answer["message"],
        "the protobuf request body cannot be decoded: the body decodes to more than 100000 objects"
    );
}
