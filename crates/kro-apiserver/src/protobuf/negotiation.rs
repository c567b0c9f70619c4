//! Content negotiation for protobuf, as a layer around the resource handlers, which speak
//! JSON only: a protobuf request body of a built-in kind becomes JSON before the handlers see
//! it, and when the client prefers protobuf the JSON answer (object, list, `Status`, or watch
//! stream) becomes protobuf on the way out.
//!
//! Custom resources stay JSON-only, as in kube-apiserver: an `Accept` that lists protobuf
//! before JSON gets JSON, and protobuf alone gets 406 from the handlers (which see the
//! `Accept` unchanged), written in protobuf as kube-apiserver writes it. A protobuf body is
//! refused with 415; kube-apiserver 1.33 instead panics in its custom resource decoder and
//! drops the connection, which no client can rely on.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use http::{HeaderValue, Method, header};
use serde_json::Value;

use std::sync::Arc;

use crate::api_path::ApiPath;
use crate::error::ApiError;
use crate::http_util::{accepted, content_type};
use crate::state::AppState;

use super::{MEDIA_TYPE, ProtobufError, decode_object_within, encode_object, type_of, watch_frame};

/// The content type of a protobuf watch stream.
const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// What the request path names, as far as negotiation cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    /// A resource of a built-in group version.
    BuiltIn,
    /// A resource of any other group version: a custom resource.
    Custom,
    /// Discovery, OpenAPI, health and the rest: left alone.
    Other,
}

fn served(path: &str) -> Served {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ((*version).to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return Served::Other,
    };
    if rest.is_empty() {
        Served::Other
    } else if super::is_built_in_group_version(&api_version) {
        Served::BuiltIn
    } else {
        Served::Custom
    }
}

fn is_watch(request: &Request) -> bool {
    let path_watch = request
        .uri()
        .path()
        .split('/')
        .any(|segment| segment == "watch");
    let query_watch = request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1" | "watch=True"))
    });
    path_watch || query_watch
}

/// Whether the first media range the server can serve is protobuf (without `as=`, which
/// asks for Tables or metadata-only objects, served as JSON).
fn prefers_protobuf(request: &Request) -> bool {
    for range in accepted(request.headers()) {
        match range.media_type.as_str() {
            MEDIA_TYPE => return range.parameter("as").is_none(),
            "application/json" | "application/yaml" | "application/*" | "*/*" => return false,
            _ => {}
        }
    }
    false
}

/// The layer: translates protobuf request bodies and answers for built-in kinds.
pub(crate) async fn negotiate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let limit = state.config.max_body_bytes;
    let served = served(request.uri().path());
    if served == Served::Other {
        return next.run(request).await;
    }
    let protobuf_body = content_type(request.headers()) == MEDIA_TYPE
        && matches!(
            *request.method(),
            Method::POST | Method::PUT | Method::DELETE
        );
    if protobuf_body {
        if served == Served::Custom {
            // Read the body first: answering before the client has sent it resets the
            // connection under it.
            let _ = axum::body::to_bytes(request.into_body(), limit).await;
            return ApiError::unsupported_media_type(&["application/json", "application/yaml"])
                .into_response();
        }
        let expected = expected_type(&state, request.method(), request.uri().path());
        request = match json_request(request, limit, expected).await {
            Ok(request) => request,
            Err(error) => return error.into_response(),
        };
    }
    if !prefers_protobuf(&request) {
        return next.run(request).await;
    }
    if served == Served::Custom {
        // The handlers answer 406 when JSON is not acceptable either; kube-apiserver
        // writes that Status in protobuf.
        let response = next.run(request).await;
        return if response.status() == http::StatusCode::NOT_ACCEPTABLE {
            protobuf_response(response).await
        } else {
            response
        };
    }
    let watch = is_watch(&request);
    request
        .headers_mut()
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes() == b"application/json");
    if !is_json {
        return response;
    }
    if watch && response.status().is_success() {
        watch_response(response)
    } else {
        protobuf_response(response).await
    }
}

/// The `apiVersion` and `kind` a protobuf body written to `path` must carry, when the path
/// says: the resource's own, for its objects and their status. Other subresources and
/// deletions take other kinds (`Scale`, `Eviction`, `DeleteOptions`), left to the handlers.
fn expected_type(state: &AppState, method: &Method, path: &str) -> Option<(String, String)> {
    if !matches!(*method, Method::POST | Method::PUT) {
        return None;
    }
    let ApiPath::Resource(resource) = ApiPath::parse(path) else {
        return None;
    };
    if !matches!(resource.subresource, None | Some("status")) {
        return None;
    }
    let found = state
        .registry()
        .find(resource.group, resource.version, resource.plural)?;
    Some((found.api_version(), found.gvk.kind().to_owned()))
}

/// Refuses a body whose envelope names another type than the URL's, in the words the
/// handlers use for a JSON body, before anything is spent on decoding the object.
fn check_type(bytes: &[u8], expected: Option<&(String, String)>) -> Result<(), ApiError> {
    let Some((expected_version, expected_kind)) = expected else {
        return Ok(());
    };
    // An envelope that cannot be read is the decoder's to describe.
    let Ok((version, kind)) = type_of(bytes) else {
        return Ok(());
    };
    if !version.is_empty() && version != *expected_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version ({expected_version})"
        )));
    }
    if !kind.is_empty() && kind != *expected_kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({expected_kind})"
        )));
    }
    Ok(())
}

/// The request with its protobuf body replaced by the JSON it decodes to.
async fn json_request(
    request: Request,
    limit: usize,
    expected: Option<(String, String)>,
) -> Result<Request, ApiError> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        ApiError::too_large(format!(
            "the request body is larger than {}",
            super::size(limit)
        ))
    })?;
    check_type(&bytes, expected.as_ref())?;
    // No body may decode to more JSON than the largest object the server stores: it could
    // never be stored (protobuf's shorter numbers and binary bytes are within this, as a
    // body's unset fields, which Go writes out as zero values, may not be).
    let object =
        decode_object_within(&bytes, crate::bounds::MAX_OBJECT_BYTES).map_err(|error| {
            let message = format!("the protobuf request body cannot be decoded: {error}");
            match error {
                ProtobufError::TooLarge { .. } | ProtobufError::TooManyObjects { .. } => {
                    ApiError::too_large(message)
                }
                _ => ApiError::bad_request(message),
            }
        })?;
    let json = serde_json::to_vec(&object)
        .map_err(|error| ApiError::internal(format!("re-encoding a decoded body: {error}")))?;
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(json.len()));
    Ok(Request::from_parts(parts, Body::from(json)))
}

/// A whole JSON answer re-encoded as protobuf; one without a protobuf form stays JSON.
async fn protobuf_response(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::internal("reading an answer to re-encode".to_owned()).into_response();
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .map(|object| encode_object(&object));
    match encoded {
        Some(Ok(protobuf)) => {
            parts
                .headers
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(protobuf))
        }
        Some(Err(error)) => {
            if !matches!(error, ProtobufError::UnknownKind { .. }) {
                tracing::error!(%error, "an answer has no protobuf form");
            }
            Response::from_parts(parts, Body::from(bytes))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// A JSON watch stream (one event per line) re-framed as protobuf watch frames.
fn watch_response(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut pending: Vec<u8> = Vec::new();
    let frames = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        pending.extend_from_slice(&chunk);
        let mut out = Vec::new();
        while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            match frame_of_line(&line) {
                Ok(frame) => out.extend_from_slice(&frame),
                Err(error) => tracing::error!(%error, "a watch event has no protobuf form"),
            }
        }
        Ok::<Bytes, axum::Error>(Bytes::from(out))
    });
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(WATCH_MEDIA_TYPE),
    );
    Response::from_parts(parts, Body::from_stream(frames))
}

fn frame_of_line(line: &[u8]) -> Result<Vec<u8>, ProtobufError> {
    let event: Value =
        serde_json::from_slice(line).map_err(|source| ProtobufError::EmbeddedJson {
            message: "WatchEvent".to_owned(),
            source,
        })?;
    let event_type = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    watch_frame(event_type, event.get("object").unwrap_or(&Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths_of_built_in_group_versions_are_built_in() {
        assert_eq!(served("/api/v1/namespaces/a/configmaps"), Served::BuiltIn);
        assert_eq!(served("/apis/apps/v1/deployments"), Served::BuiltIn);
        assert_eq!(served("/apis/example.com/v1/widgets"), Served::Custom);
        assert_eq!(served("/api/v1"), Served::Other);
        assert_eq!(served("/version"), Served::Other);
    }
}
