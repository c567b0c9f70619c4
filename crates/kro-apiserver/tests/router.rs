//! The router serves the API in process: requests go through `tower::ServiceExt::oneshot`,
//! with no socket, no port and no sleep.

use axum::body::Body;
use http::{Request, StatusCode, header};
use kro_apiserver::{ServerConfig, ServerState, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

async fn state(token: Option<&str>) -> ServerState {
    ServerState::new(ServerConfig {
        token: token.map(str::to_owned),
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .expect("the state builds")
}

async fn body_json(response: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the body is read");
    serde_json::from_slice(&bytes).expect("the body is JSON")
}

#[tokio::test]
async fn a_created_object_is_read_back_through_the_router() {
    let app = router(state(None).await);
    let object = json!({"metadata": {"name": "settings"}, "data": {"mode": "fast"}});
    let create = Request::post("/api/v1/namespaces/default/configmaps")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(object.to_string()))
        .expect("a request");
    let created = app.clone().oneshot(create).await.expect("answered");
    assert_eq!(created.status(), StatusCode::CREATED);
    let created = body_json(created).await;
    assert_eq!(created["metadata"]["namespace"], "default");

    let read = Request::get("/api/v1/namespaces/default/configmaps/settings")
        .body(Body::empty())
        .expect("a request");
    let read = app.clone().oneshot(read).await.expect("answered");
    assert_eq!(read.status(), StatusCode::OK);
    let read = body_json(read).await;
    assert_eq!(read["data"]["mode"], "fast");
    assert_eq!(
        read["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    let missing = Request::get("/api/v1/namespaces/default/configmaps/absent")
        .body(Body::empty())
        .expect("a request");
    let missing = app.oneshot(missing).await.expect("answered");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(body_json(missing).await["reason"], "NotFound");
}

#[tokio::test]
async fn the_router_asks_for_the_token_except_on_health_endpoints() {
    let app = router(state(Some("secret")).await);
    let anonymous = Request::get("/api/v1/namespaces")
        .body(Body::empty())
        .expect("a request");
    let anonymous = app.clone().oneshot(anonymous).await.expect("answered");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let with_token = Request::get("/api/v1/namespaces")
        .header(header::AUTHORIZATION, "Bearer secret")
        .body(Body::empty())
        .expect("a request");
    let with_token = app.clone().oneshot(with_token).await.expect("answered");
    assert_eq!(with_token.status(), StatusCode::OK);

    let health = Request::get("/readyz")
        .body(Body::empty())
        .expect("a request");
    let health = app.oneshot(health).await.expect("answered");
    assert_eq!(health.status(), StatusCode::OK);
}
