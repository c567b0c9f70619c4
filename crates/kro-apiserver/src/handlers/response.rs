//! How answers are encoded: objects with warnings, Tables, `PartialObjectMetadata`, and lists.

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http_util::json_response;
use crate::tables;

use super::request::{Query, Target};

pub(super) fn object_response(code: StatusCode, object: &Value, warnings: &[String]) -> Response {
    let mut response = json_response(code, object);
    for warning in warnings {
        let text = format!(
            "299 - {}",
            serde_json::to_string(warning).unwrap_or_default()
        );
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

/// Whether the client asked for objects as `PartialObjectMetadata` (metadata only, as
/// kube-rs's and client-go's metadata informers do) before plain JSON.
pub(super) fn metadata_only(headers: &HeaderMap) -> bool {
    for range in crate::http_util::accepted(headers) {
        match range.parameter("as") {
            Some("PartialObjectMetadata" | "PartialObjectMetadataList") => {
                if range.parameter("g") == Some("meta.k8s.io")
                    && matches!(range.parameter("v"), Some("v1" | "v1beta1"))
                {
                    return true;
                }
            }
            Some(_) => {}
            None => return false,
        }
    }
    false
}

/// The 406 kube-apiserver answers when the metadata form asked for does not fit the answer
/// (`list`: a list is answered): `as=PartialObjectMetadata` for a list, or
/// `as=PartialObjectMetadataList` for one object. Its message names the Go type of the
/// answer, an internal type for built-ins (`*core.ConfigMapList`).
pub(super) fn metadata_form_mismatch(
    headers: &HeaderMap,
    target: &Target,
    list: bool,
) -> Option<ApiError> {
    let requested = crate::http_util::accepted(headers)
        .into_iter()
        .find_map(|range| range.parameter("as").map(str::to_owned))?;
    let suffix = if list { "List" } else { "" };
    let go_type = if target.resource.custom.is_some() {
        format!("*unstructured.Unstructured{suffix}")
    } else {
        let package = match target.group() {
            "" | "events.k8s.io" => "core",
            group => group.split('.').next().unwrap_or(group),
        };
        format!("*{package}.{}{suffix}", target.resource.gvk.kind())
    };
    let message = match (requested.as_str(), list) {
        ("PartialObjectMetadata", true) => format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({go_type})"
        ),
        // A custom resource passes for a list in kube-apiserver's check, then fails as one.
        ("PartialObjectMetadataList", false) if target.resource.custom.is_some() => {
            return Some(ApiError::new(500, "", "content is not a list".to_owned()));
        }
        ("PartialObjectMetadataList", false) => format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
        ),
        _ => return None,
    };
    Some(ApiError::new(406, "NotAcceptable", message))
}

/// An object as `PartialObjectMetadata`: its metadata alone.
pub(super) fn partial_object(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The Table form a request asked for: its version and what rows carry.
pub(super) fn table_request(
    query: &Query,
    headers: &HeaderMap,
) -> Result<Option<(&'static str, tables::IncludeObject)>, ApiError> {
    let Some(version) = tables::wanted(headers) else {
        return Ok(None);
    };
    let include = tables::IncludeObject::parse(query.get("includeObject")).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {:?}: must be 'Metadata', 'Object', 'None', or empty",
            query.get("includeObject").unwrap_or_default()
        ))
    })?;
    Ok(Some((version, include)))
}

/// A list as kube-apiserver encodes it: items of built-in kinds without `apiVersion` and
/// `kind` (typed lists drop them), items of custom resources with them and an empty
/// `continue` on the last page (unstructured lists keep it).
pub(super) fn list_body(target: &Target, mut metadata: Value, mut items: Vec<Value>) -> Value {
    if target.resource.custom.is_some() {
        if metadata.get("continue").is_none() {
            metadata["continue"] = json!("");
        }
    } else {
        for item in &mut items {
            if let Value::Object(map) = item {
                map.remove("apiVersion");
                map.remove("kind");
            }
        }
    }
    json!({
        "kind": target.resource.list_kind(),
        "apiVersion": target.resource.api_version(),
        "metadata": metadata,
        "items": items,
    })
}
