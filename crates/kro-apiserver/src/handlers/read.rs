//! The read verbs: get and list (with selectors, pages and Tables).

use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http_util::json_response;
use crate::objects::meta_str;
use crate::tables;

use super::request::ResourceRequest;
use super::request::{Selection, require_verb};
use super::response::{
    list_body, metadata_form_mismatch, metadata_only, partial_object, table_request,
};

pub(super) fn get(request: &ResourceRequest, name: &str) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        ..
    } = request;
    require_verb(target, "get")?;
    let Some(object) = target.get(state, name) else {
        return Err(ApiError::not_found(target.group(), target.plural(), name));
    };
    match table_request(query, headers)? {
        Some((version, include)) => {
            let printer = tables::Printer::of(&target.resource);
            let metadata = json!({"resourceVersion": meta_str(&object, "resourceVersion").unwrap_or_default()});
            let table = printer.table(version, std::iter::once(&*object), metadata, include, true);
            Ok(json_response(StatusCode::OK, &table))
        }
        None if metadata_only(headers) => match metadata_form_mismatch(headers, target, false) {
            Some(error) => Err(error),
            None => Ok(json_response(StatusCode::OK, &partial_object(&object))),
        },
        None => Ok(json_response(StatusCode::OK, &object)),
    }
}

/// A list position handed out as `continue`: the revision of the first page and the last key.
pub(super) fn encode_continue(revision: u64, namespace: &str, name: &str) -> String {
    let text = json!([revision, namespace, name]).to_string();
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

pub(super) fn decode_continue(token: &str) -> Option<(u64, String, String)> {
    if !token.len().is_multiple_of(2) || token.len() > 4096 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(token.get(index..index + 2)?, 16).ok())
        .collect();
    let value: Value = serde_json::from_slice(&bytes?).ok()?;
    Some((
        value.get(0)?.as_u64()?,
        value.get(1)?.as_str()?.to_owned(),
        value.get(2)?.as_str()?.to_owned(),
    ))
}

pub(super) fn list(request: &ResourceRequest) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        ..
    } = request;
    let table = table_request(query, headers)?;
    require_verb(target, "list")?;
    let selection = Selection::parse(target, query)?;
    if query
        .get("resourceVersionMatch")
        .is_some_and(|m| !m.is_empty())
        && query.get("resourceVersion").is_none_or(str::is_empty)
    {
        return Err(ApiError::invalid_request(
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".to_owned(),
        ));
    }
    if query.flag("sendInitialEvents") {
        return Err(ApiError::invalid_request(
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list".to_owned(),
        ));
    }
    let limit = match query.get("limit") {
        None | Some("") => None,
        Some(text) => match text.parse::<i64>() {
            Ok(limit) if limit > 0 => usize::try_from(limit).ok(),
            Ok(_) => None,
            Err(_) => return Err(ApiError::bad_request(format!("invalid limit {text:?}"))),
        },
    };
    let listed = target.list(state, false);
    let mut revision = listed.revision;
    let objects = listed.objects;
    let after = match query.get("continue").filter(|token| !token.is_empty()) {
        Some(token) => {
            let (first_revision, namespace, name) = decode_continue(token).ok_or_else(|| {
                ApiError::bad_request("continue key is not valid: malformed token")
            })?;
            revision = first_revision;
            Some((namespace, name))
        }
        None => None,
    };
    let mut items = Vec::new();
    let mut next = None;
    let mut remaining = 0u64;
    for object in &objects {
        let position = (
            meta_str(object, "namespace").unwrap_or("").to_owned(),
            meta_str(object, "name").unwrap_or("").to_owned(),
        );
        if let Some(after) = &after
            && position <= *after
        {
            continue;
        }
        if !selection.matches(object) {
            continue;
        }
        if limit.is_some_and(|limit| items.len() >= limit) {
            remaining += 1;
            continue;
        }
        if limit.is_some_and(|limit| items.len() + 1 == limit) {
            next = Some(position);
        }
        items.push(Value::clone(object));
    }
    let mut metadata = json!({ "resourceVersion": revision.to_string() });
    if remaining > 0
        && let Some((namespace, name)) = next
    {
        metadata["continue"] = json!(encode_continue(revision, &namespace, &name));
        metadata["remainingItemCount"] = json!(remaining);
    }
    if let Some((version, include)) = table {
        let printer = tables::Printer::of(&target.resource);
        let table = printer.table(
            version,
            items.iter(),
            tables::list_metadata(&metadata),
            include,
            true,
        );
        return Ok(json_response(StatusCode::OK, &table));
    }
    if metadata_only(headers) {
        if let Some(error) = metadata_form_mismatch(headers, target, true) {
            return Err(error);
        }
        let items: Vec<Value> = items.iter().map(partial_object).collect();
        return Ok(json_response(
            StatusCode::OK,
            &json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata,
                "items": items,
            }),
        ));
    }
    Ok(json_response(
        StatusCode::OK,
        &list_body(target, metadata, items),
    ))
}
