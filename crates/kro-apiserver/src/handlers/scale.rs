//! The scale subresource: get, update and patch of `/scale`.

use axum::response::Response;
use http::StatusCode;
use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};

use crate::crd;
use crate::error::ApiError;
use crate::http_util::{content_type, decode_body, json_response};
use crate::managed;
use crate::objects::{UpdateTarget, meta_str};
use crate::patch;
use crate::storage::{Committed, Mutation};

use super::admission::endpoint_of;
use super::patch::{JSON_PATCH, accepted_patch_types};
use super::request::ResourceRequest;
use super::request::{decode_object, field_manager, require_verb, scale_paths};
use super::response::object_response;
use super::write::{UpdateOutcome, UpdateRequest, decide_update};

pub(super) fn get_scale(request: &ResourceRequest, name: &str) -> Result<Response, ApiError> {
    let ResourceRequest { state, target, .. } = request;
    require_verb(target, "get")?;
    let paths = scale_paths(target).ok_or_else(ApiError::no_such_path)?;
    match target.get(state, name) {
        Some(object) => Ok(json_response(
            StatusCode::OK,
            &crd::scale_of(&object, &paths),
        )),
        None => Err(ApiError::not_found(target.group(), target.plural(), name)),
    }
}

/// How a write of `/scale` gives the new Scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScaleWrite {
    /// PUT: the whole new Scale.
    Replace,
    /// PATCH: a JSON or merge patch of the current Scale.
    Patch,
}

impl ScaleWrite {
    /// The verb the resource must support.
    fn verb(self) -> &'static str {
        match self {
            ScaleWrite::Replace => "update",
            ScaleWrite::Patch => "patch",
        }
    }
}

/// PUT or PATCH of `/scale`: the new Scale's `spec.replicas` is written into the object.
pub(super) async fn update_scale(
    request: &ResourceRequest,
    name: &str,
    write: ScaleWrite,
) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        body,
    } = request;
    require_verb(target, write.verb())?;
    let paths = scale_paths(target).ok_or_else(ApiError::no_such_path)?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    let media_type = content_type(headers);
    let document = match write {
        ScaleWrite::Patch => {
            if !super::patch::is_patch_type(&media_type) {
                return Err(ApiError::not_a_patch_type());
            }
            let accepted = accepted_patch_types(target);
            if !accepted.contains(&media_type.as_str()) {
                return Err(ApiError::unsupported_media_type(accepted));
            }
            decode_body(body, "application/json")?
        }
        ScaleWrite::Replace => decode_object(headers, body)?,
    };
    let scale_kind = kro_schema::Gvk::new("autoscaling", "v1", "Scale");
    let request = UpdateRequest {
        state,
        target,
        name,
        endpoint: UpdateTarget::Main,
        validation,
        unconditional_allowed: true,
        // Recorded below, as the scale handler records it.
        updater: None,
    };
    let manager = field_manager(query, headers)?;
    let api_version = target.resource.api_version();
    let writer = managed::Writer {
        manager: &manager,
        api_version: &api_version,
        endpoint: endpoint_of(target, UpdateTarget::Main),
    };
    let mut outcome = UpdateOutcome::default();
    let committed = target
        .mutate(state, name, dry_run, |current| {
            let Some(stored) = current else {
                return Err(ApiError::not_found(target.group(), target.plural(), name));
            };
            let scale = crd::scale_of(stored, &paths);
            let new_scale = match (write, media_type.as_str()) {
                (ScaleWrite::Replace, _) => document.clone(),
                (ScaleWrite::Patch, JSON_PATCH) => patch::json_patch(&scale, &document)?,
                (ScaleWrite::Patch, _) => {
                    let mut patched = scale;
                    patch::merge_patch(&mut patched, &document);
                    patched
                }
            };
            let stored_version = meta_str(stored, "resourceVersion").unwrap_or_default();
            if let Some(version) = meta_str(&new_scale, "resourceVersion")
                && !version.is_empty()
                && version != stored_version
            {
                return Err(ApiError::conflict_modified(
                    target.group(),
                    target.plural(),
                    name,
                ));
            }
            let replicas = new_scale
                .pointer("/spec/replicas")
                .cloned()
                .unwrap_or(json!(0));
            if replicas.as_i64().is_none_or(|count| count < 0) {
                let error = FieldError::invalid(
                    FieldPath::new("spec").child("replicas"),
                    kro_schema::BadValue::Value(replicas),
                    "must be greater than or equal to 0",
                );
                return Err(ApiError::invalid(&scale_kind, name, &[error]));
            }
            let mut object = Value::clone(stored);
            crd::write_path(&mut object, &paths.spec_replicas, replicas);
            match decide_update(&request, Some(stored), object, &mut outcome)? {
                Mutation::Put(mut new) => {
                    managed::record_scale(stored, &mut new, &writer, &paths.spec_replicas)?;
                    Ok(Mutation::Put(new))
                }
                other => Ok(other),
            }
        })
        .await?;
    let object = match committed {
        Committed::Stored { object, .. } | Committed::Deleted(object) => object,
    };
    Ok(object_response(
        StatusCode::OK,
        &crd::scale_of(&object, &paths),
        &outcome.warnings,
    ))
}
