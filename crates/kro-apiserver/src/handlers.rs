//! The resource API: `/api/v1/...` and `/apis/<group>/<version>/...` paths, routed by hand
//! as kube-apiserver routes them, and the verbs get, list, watch, create, update, patch,
//! delete and deletecollection on objects and their `status`, `scale` and `finalize`
//! subresources.
//!
//! A request is parsed once ([`ApiPath`], then a [`ResourceRequest`]: target, query, headers
//! and body), and each verb family's handler takes it: `read` (get, list), `write` (create,
//! update), `patch` (patches and server-side apply), `scale`, `delete` and `watch`, over
//! `admission` and `response`.

mod admission;
mod delete;
mod patch;
mod read;
mod request;
mod response;
mod scale;
mod stored;
mod watch;
mod write;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode};

use crate::api_path::{ApiPath, decode_path};
use crate::error::ApiError;
use crate::http_util::{json_response, require_json};
use crate::objects::UpdateTarget;
use crate::state::AppState;
use crate::tables;

use self::delete::{delete, delete_collection};
use self::patch::patch;
use self::read::{get, list};
use self::request::{Query, ResourceRequest, resolve_target};
use self::response::metadata_only;
use self::scale::{ScaleWrite, get_scale, update_scale};
use self::watch::watch;
use self::write::{create, update};

/// The entry point of every path the fixed routes do not serve.
pub(crate) async fn resource_request(
    State(state): State<Arc<AppState>>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let limit = state.config.max_body_bytes;
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::too_large(format!(
                "Request entity too large: the request body is larger than {limit} bytes"
            ))
            .into_response();
        }
    };
    match handle(state, parts, bytes).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// kube-apiserver's answer for a path no API serves.
fn page_not_found() -> Response {
    let mut response = Response::new(axum::body::Body::from("404 page not found\n"));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Go's HTTP server's answer for a request line it cannot parse (a bad `%` escape in the
/// path), given before kube-apiserver sees the request.
fn malformed_request_line() -> Response {
    let mut response = Response::new(axum::body::Body::from("400 Bad Request"));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn handle(
    state: Arc<AppState>,
    parts: http::request::Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let method = &parts.method;
    let headers = &parts.headers;
    // kube-apiserver splits the decoded path (Go's `URL.Path`): `%3A` in a name is a `:`.
    let Ok(decoded) = decode_path(parts.uri.path()) else {
        return Ok(malformed_request_line());
    };
    let path = ApiPath::parse(&decoded);
    // Paths outside /api and the served API groups fall through kube-apiserver's handler
    // chain to a plain-text 404.
    let served = match &path {
        ApiPath::Outside => false,
        ApiPath::Unnamed => true,
        ApiPath::Group(group) | ApiPath::GroupVersion { group, .. } => {
            state.registry().group(group).is_some()
        }
        ApiPath::Resource(resource) => state.registry().group(resource.group).is_some(),
    };
    if !served {
        return Ok(page_not_found());
    }
    let resource_path = match path {
        ApiPath::Outside | ApiPath::Unnamed => return Err(ApiError::no_such_path()),
        ApiPath::Group(group) => {
            require_json(headers)?;
            let document = state.registry().legacy_group_document(group);
            return match (method, document) {
                (&Method::GET, Some(document)) => Ok(json_response(StatusCode::OK, &document)),
                _ => Err(ApiError::no_such_path()),
            };
        }
        ApiPath::GroupVersion { group, version } => {
            require_json(headers)?;
            let document = state.registry().legacy_resource_list(group, version);
            return match (method, document) {
                (&Method::GET, Some(document)) => Ok(json_response(StatusCode::OK, &document)),
                _ => Err(ApiError::no_such_path()),
            };
        }
        ApiPath::Resource(resource_path) => resource_path,
    };
    let target = resolve_target(&state, &resource_path)?;
    let query = Query::parse(&parts.uri)?;
    // Reads may ask for Tables alone (`as=Table` without a JSON fallback).
    if !(method == Method::GET && (tables::wanted(headers).is_some() || metadata_only(headers))) {
        require_json(headers)?;
    }
    let request = ResourceRequest {
        state,
        target,
        query,
        headers: parts.headers,
        body,
    };
    let target = &request.target;
    match (
        &parts.method,
        target.name.as_deref(),
        target.subresource.as_deref(),
    ) {
        (&Method::GET, None, None) if request.query.flag("watch") => watch(&request),
        (&Method::GET, None, None) => list(&request),
        (&Method::POST, None, None) => create(&request).await,
        (&Method::DELETE, None, None) => delete_collection(&request).await,
        (&Method::GET, Some(name), None | Some("status")) => get(&request, name),
        (&Method::PUT, Some(name), None) => update(&request, name, UpdateTarget::Main).await,
        (&Method::PUT, Some(name), Some("status")) => {
            update(&request, name, UpdateTarget::Status).await
        }
        (&Method::PUT, Some(name), Some("finalize")) => {
            update(&request, name, UpdateTarget::Finalize).await
        }
        (&Method::PATCH, Some(name), None) => patch(&request, name, UpdateTarget::Main).await,
        (&Method::PATCH, Some(name), Some("status")) => {
            patch(&request, name, UpdateTarget::Status).await
        }
        (&Method::DELETE, Some(name), None) => delete(&request, name).await,
        (&Method::GET, Some(name), Some("scale")) => get_scale(&request, name),
        (&Method::PUT, Some(name), Some("scale")) => {
            update_scale(&request, name, ScaleWrite::Replace).await
        }
        (&Method::PATCH, Some(name), Some("scale")) => {
            update_scale(&request, name, ScaleWrite::Patch).await
        }
        _ => Err(ApiError::method_not_supported(
            target.group(),
            target.plural(),
            &method.as_str().to_ascii_lowercase(),
        )),
    }
}
