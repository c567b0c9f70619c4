//! The fixed endpoints: version, health, discovery (legacy and aggregated) and the OpenAPI
//! v2 and v3 documents.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use serde_json::json;

use crate::api_path::ApiPath;
use crate::error::ApiError;
use crate::http_util::{accepted, json_response, json_response_typed};
use crate::openapi;
use crate::registry::{AGGREGATED_DISCOVERY_V2, AGGREGATED_DISCOVERY_V2BETA1};
use crate::state::AppState;

pub(super) async fn version() -> Response {
    json_response(
        StatusCode::OK,
        &json!({
            "major": "1",
            "minor": "33",
            "emulationMajor": "1",
            "emulationMinor": "33",
            "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "32",
            "gitVersion": "v1.33.0-kro",
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        }),
    )
}

pub(super) async fn health() -> Response {
    let mut response = Response::new(Body::from("ok"));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Which aggregated discovery version the client asks for, if any.
pub(super) fn aggregated_version(headers: &HeaderMap) -> Option<&'static str> {
    for range in accepted(headers) {
        if range.parameter("g") == Some("apidiscovery.k8s.io")
            && range.parameter("as") == Some("APIGroupDiscoveryList")
        {
            match range.parameter("v") {
                Some("v2") => return Some("v2"),
                Some("v2beta1") => return Some("v2beta1"),
                _ => {}
            }
        }
    }
    None
}

pub(super) fn discovery(state: &AppState, headers: &HeaderMap, legacy_core: bool) -> Response {
    let registry = state.registry();
    match aggregated_version(headers) {
        Some(version) => {
            let content_type = if version == "v2" {
                AGGREGATED_DISCOVERY_V2
            } else {
                AGGREGATED_DISCOVERY_V2BETA1
            };
            json_response_typed(
                StatusCode::OK,
                &registry.aggregated_discovery(legacy_core, version),
                content_type,
            )
        }
        None if legacy_core => json_response(StatusCode::OK, &registry.legacy_api_versions()),
        None => json_response(StatusCode::OK, &registry.legacy_group_list()),
    }
}

pub(super) async fn api_root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    discovery(&state, &headers, true)
}

pub(super) async fn apis_root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    discovery(&state, &headers, false)
}

/// The media types the v2 document is served as: JSON, and gnostic's protobuf under both of
/// the names client-go has used.
pub(super) const OPENAPI_V2_PROTOBUF: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

pub(super) async fn openapi_v2_document(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Response {
    let mut protobuf = None;
    for range in accepted(&headers) {
        let media = range.media_type.as_str();
        if OPENAPI_V2_PROTOBUF.contains(&media) {
            protobuf = Some(true);
            break;
        }
        if matches!(media, "application/json" | "application/*" | "*/*") {
            protobuf = Some(false);
            break;
        }
    }
    let Some(protobuf) = protobuf else {
        // kube-openapi answers an unservable Accept with an empty 406.
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_ACCEPTABLE;
        return response;
    };
    let document = state.openapi_v2_document();
    let (body, content_type) = if protobuf {
        (document.protobuf.clone(), OPENAPI_V2_PROTOBUF[1])
    } else {
        (document.json.clone(), "application/json")
    };
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tag| tag == document.etag);
    let mut response = if not_modified {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Body::from(body));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(content_type),
        );
        response
    };
    if let Ok(etag) = http::HeaderValue::from_str(&document.etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
        .headers_mut()
        .insert(header::VARY, http::HeaderValue::from_static("Accept"));
    response
}

pub(super) async fn openapi_index(State(state): State<Arc<AppState>>) -> Response {
    let mut paths = serde_json::Map::new();
    for (group, version) in state.served_group_versions() {
        if let Some(document) = state.openapi_document(&group, &version) {
            let key = openapi::index_key(&group, &version);
            paths.insert(
                key.clone(),
                json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={}", document.hash) }),
            );
        }
    }
    json_response(StatusCode::OK, &json!({ "paths": paths }))
}

pub(super) async fn openapi_document(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    let full = format!("/{path}");
    let (group, version) = match ApiPath::parse(&full) {
        // A trailing slash names no document here.
        ApiPath::GroupVersion { group, version } if !path.ends_with('/') => (group, version),
        _ => return ApiError::no_such_path().into_response(),
    };
    match state.openapi_document(group, version) {
        Some(document) => json_response(StatusCode::OK, &document.document),
        None => ApiError::no_such_path().into_response(),
    }
}

/// `GET /debug/kro/requests`: the test knobs' request counters by client, verb and resource,
/// with the latency and failure rate in force (behind authentication, like the API).
pub(super) async fn request_counts(State(state): State<Arc<AppState>>) -> Response {
    let knobs = &state.knobs;
    let failure_rate = knobs.failure_rate().map(|(rate, seed)| {
        json!({
            "rate": rate.rate(),
            "codes": rate.codes(),
            "verbs": rate.verbs(),
            "seed": seed,
        })
    });
    let latency_millis = u64::try_from(knobs.latency().as_millis()).unwrap_or(u64::MAX);
    json_response(
        StatusCode::OK,
        &json!({
            "kind": "RequestCounts",
            "latencyMillis": latency_millis,
            "openWatches": state.watches.load(std::sync::atomic::Ordering::SeqCst),
            "failureRate": failure_rate,
            "requests": knobs.counts_by_client(),
        }),
    )
}

/// `DELETE /debug/kro/requests`: starts counting from zero.
pub(super) async fn reset_request_counts(State(state): State<Arc<AppState>>) -> Response {
    state.knobs.reset_counts();
    StatusCode::NO_CONTENT.into_response()
}
