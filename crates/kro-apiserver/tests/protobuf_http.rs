//! Protobuf content negotiation through the router, in process: built-in kinds in protobuf
//! both ways, custom resources JSON-only (415 for a protobuf body, 406 for protobuf alone).

use axum::body::Body;
use http::{Request, StatusCode, header};
use kro_apiserver::protobuf::{MEDIA_TYPE, decode_object, encode_object};
use kro_apiserver::{ServerConfig, ServerState, router};
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
