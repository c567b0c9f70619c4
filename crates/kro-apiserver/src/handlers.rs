//! The resource API: `/api/v1/...` and `/apis/<group>/<version>/...` paths, routed by hand
//! as kube-apiserver routes them, and the verbs get, list, watch, create, update, patch,
//! delete and deletecollection on objects and their `status` subresource.

mod admission;
mod delete;
mod patch;
mod read;
mod request;
mod response;
mod scale;
mod watch;
mod write;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode};

use crate::error::ApiError;
use crate::http_util::{json_response, require_json};
use crate::objects::UpdateTarget;
use crate::state::AppState;
use crate::tables;

use self::delete::{delete, delete_collection};
use self::patch::patch;
use self::read::{get, list};
use self::request::{Query, resolve_target};
use self::response::metadata_only;
use self::scale::{get_scale, update_scale};
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
    match handle(&state, &parts.method, &parts.uri, &parts.headers, bytes).await {
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

async fn handle(
    state: &Arc<AppState>,
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let path = uri.path().trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    // Paths outside /api and the served API groups fall through kube-apiserver's handler
    // chain to a plain-text 404.
    let served = match segments.as_slice() {
        ["api", ..] => true,
        ["apis", group, ..] => state.registry().group(group).is_some(),
        _ => false,
    };
    if !served {
        return Ok(page_not_found());
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group] => {
            require_json(headers)?;
            let document = state.registry().legacy_group_document(group);
            return match (method, document) {
                (&Method::GET, Some(document)) => Ok(json_response(StatusCode::OK, &document)),
                _ => Err(ApiError::no_such_path()),
            };
        }
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiError::no_such_path()),
    };
    if rest.is_empty() {
        require_json(headers)?;
        let document = state.registry().legacy_resource_list(group, version);
        return match (method, document) {
            (&Method::GET, Some(document)) => Ok(json_response(StatusCode::OK, &document)),
            _ => Err(ApiError::no_such_path()),
        };
    }
    let target = resolve_target(state, group, version, rest)?;
    let query = Query::parse(uri)?;
    // Reads may ask for Tables alone (`as=Table` without a JSON fallback).
    if !(method == Method::GET && (tables::wanted(headers).is_some() || metadata_only(headers))) {
        require_json(headers)?;
    }
    match (method, &target.name, target.subresource.as_deref()) {
        (&Method::GET, None, None) if query.flag("watch") => watch(state, &target, &query, headers),
        (&Method::GET, None, None) => list(state, &target, &query, headers),
        (&Method::POST, None, None) => create(state, &target, &query, headers, &body).await,
        (&Method::DELETE, None, None) => {
            delete_collection(state, &target, &query, headers, &body).await
        }
        (&Method::GET, Some(name), None | Some("status")) => {
            get(state, &target, name, &query, headers)
        }
        (&Method::PUT, Some(name), None) => {
            update(
                state,
                &target,
                name,
                UpdateTarget::Main,
                &query,
                headers,
                &body,
            )
            .await
        }
        (&Method::PUT, Some(name), Some("status")) => {
            update(
                state,
                &target,
                name,
                UpdateTarget::Status,
                &query,
                headers,
                &body,
            )
            .await
        }
        (&Method::PUT, Some(name), Some("finalize")) => {
            update(
                state,
                &target,
                name,
                UpdateTarget::Finalize,
                &query,
                headers,
                &body,
            )
            .await
        }
        (&Method::PATCH, Some(name), None) => {
            patch(
                state,
                &target,
                name,
                UpdateTarget::Main,
                &query,
                headers,
                &body,
            )
            .await
        }
        (&Method::PATCH, Some(name), Some("status")) => {
            patch(
                state,
                &target,
                name,
                UpdateTarget::Status,
                &query,
                headers,
                &body,
            )
            .await
        }
        (&Method::DELETE, Some(name), None) => {
            delete(state, &target, name, &query, headers, &body).await
        }
        (&Method::GET, Some(name), Some("scale")) => get_scale(state, &target, name),
        (&Method::PUT, Some(name), Some("scale")) => {
            update_scale(state, &target, name, &query, headers, &body, false).await
        }
        (&Method::PATCH, Some(name), Some("scale")) => {
            update_scale(state, &target, name, &query, headers, &body, true).await
        }
        _ => Err(ApiError::method_not_supported(
            target.group(),
            target.plural(),
            &method.as_str().to_ascii_lowercase(),
        )),
    }
}
