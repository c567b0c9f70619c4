//! PATCH: JSON, merge and strategic merge patches, and server-side apply.

use axum::response::Response;
use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http_util::{content_type, decode_body};
use crate::managed;
use crate::objects::{self, UpdateTarget, meta_str};
use crate::patch;
use crate::storage::Mutation;
use crate::strategic;

use super::admission::{
    admit_namespace, admit_new_object, check_name_matches, check_namespace, endpoint_of,
    refuse_while_terminating, shape_of,
};
use super::request::ResourceRequest;
use super::request::{
    Target, check_field_manager, decode_object_as, field_manager, options_error, require_verb,
};
use super::write::{UpdateOutcome, UpdateRequest, after_commit, committed_response, decide_update};

pub(super) const JSON_PATCH: &str = "application/json-patch+json";

pub(super) const MERGE_PATCH: &str = "application/merge-patch+json";

pub(super) const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

pub(super) const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The schema strategic merge patches of a resource follow: the built-in catalog's, or none
/// for kinds the catalog does not have (custom resources), which cannot be patched that way.
pub(super) fn strategic_schema(target: &Target) -> Option<kro_schema::FieldSchema<'static>> {
    kro_schema::Catalog::kubernetes()
        .resolve(&target.resource.gvk)
        .found()
        .map(|kind| kind.root())
}

/// Whether `media_type` is one of the four patch types kube-apiserver routes PATCH by.
pub(super) fn is_patch_type(media_type: &str) -> bool {
    [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH].contains(&media_type)
}

/// The patch types accepted for a resource.
pub(super) fn accepted_patch_types(target: &Target) -> &'static [&'static str] {
    if strategic_schema(target).is_some() {
        &[JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]
    } else {
        &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    }
}

pub(super) async fn patch(
    request: &ResourceRequest,
    name: &str,
    update_target: UpdateTarget,
) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        body,
    } = request;
    require_verb(target, "patch")?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    if content_type(headers) == APPLY_PATCH {
        return apply_patch(request, name, update_target).await;
    }
    if query.get("force").is_some() {
        return Err(options_error(
            "PatchOptions",
            FieldError::forbidden(
                FieldPath::new("force"),
                "may not be specified for non-apply patch",
            ),
        ));
    }
    let media_type = content_type(headers);
    if !is_patch_type(&media_type) {
        return Err(ApiError::not_a_patch_type());
    }
    let accepted = accepted_patch_types(target);
    if !accepted.contains(&media_type.as_str()) {
        return Err(ApiError::unsupported_media_type(accepted));
    }
    let document = decode_body(body, "application/json")?;
    if media_type != JSON_PATCH && !document.is_object() {
        return Err(ApiError::bad_request("invalid JSON document"));
    }
    let request = UpdateRequest {
        state,
        target,
        name,
        endpoint: update_target,
        validation,
        unconditional_allowed: true,
        updater: Some(field_manager(query, headers)?),
    };
    let mut outcome = UpdateOutcome::default();
    let committed = target
        .mutate(state, name, dry_run, |current| {
            let Some(stored) = current else {
                return Err(ApiError::not_found(target.group(), target.plural(), name));
            };
            let patched = match media_type.as_str() {
                JSON_PATCH => patch::json_patch(stored, &document)?,
                STRATEGIC_MERGE_PATCH => {
                    strategic::apply(stored, &document, strategic_schema(target))?
                }
                _ => {
                    let mut patched = Value::clone(stored);
                    patch::merge_patch(&mut patched, &document);
                    patched
                }
            };
            check_name_matches(&patched, name)?;
            decide_update(&request, Some(stored), patched, &mut outcome)
        })
        .await?;
    if !dry_run {
        after_commit(state, target, &committed).await;
    }
    Ok(committed_response(committed, outcome))
}

/// A server-side apply (`application/apply-patch+yaml`): creates the object when it does not
/// exist, otherwise merges the manager's configuration into it with ownership and conflicts.
pub(super) async fn apply_patch(
    request: &ResourceRequest,
    name: &str,
    update_target: UpdateTarget,
) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers: _,
        body,
    } = request;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    let Some(manager) = query.get("fieldManager") else {
        return Err(ApiError::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".to_owned(),
        )
        .with_group_kind("meta.k8s.io", "PatchOptions")
        .with_cause(
            "FieldValueRequired",
            "Required value: is required for apply patch",
            "fieldManager",
        ));
    };
    let manager = check_field_manager(manager)?;
    let force = match query.get("force") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid boolean value for force: {other:?}"
            )));
        }
    };
    // The apply patch type is YAML (JSON being YAML too).
    let mut config = decode_object_as(body, "application/yaml")?;
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != target.resource.api_version() || kind != target.resource.gvk.kind() {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    if config.pointer("/metadata/managedFields").is_some() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    check_name_matches(&config, name)?;
    if meta_str(&config, "name").is_none() {
        objects::metadata_mut(&mut config).insert("name".to_owned(), json!(name));
    }
    check_namespace(target, &mut config)?;
    if target.get(state, name).is_none() {
        if update_target == UpdateTarget::Status {
            return Err(ApiError::not_found(target.group(), target.plural(), name));
        }
        refuse_while_terminating(state, target)?;
        if !(target.group().is_empty() && target.plural() == "namespaces") {
            admit_namespace(state, target, name)?;
        }
    }
    let version = target.resource.api_version();
    let writer = managed::Writer {
        manager: &manager,
        api_version: &version,
        endpoint: endpoint_of(target, update_target),
    };
    let request = UpdateRequest {
        state,
        target,
        name,
        endpoint: update_target,
        validation,
        unconditional_allowed: true,
        updater: None,
    };
    let mut outcome = UpdateOutcome::default();
    // A UID in the configuration is a precondition, as kube-apiserver holds it: the object must
    // exist with that UID (an apply never creates one then). A client applying to an object it
    // saw keeps a deleted one from coming back.
    let uid = meta_str(&config, "uid")
        .filter(|uid| !uid.is_empty())
        .map(str::to_owned);
    let committed = target
        .mutate(state, name, dry_run, |current| {
            if let Some(uid) = &uid {
                let stored = current
                    .and_then(|stored| meta_str(stored, "uid"))
                    .unwrap_or("");
                if stored != uid {
                    return Err(super::delete::uid_precondition_failed(
                        target, name, uid, stored,
                    ));
                }
            }
            match current {
                None => {
                    let mut object =
                        managed::apply(None, &config, shape_of(target), &writer, force)?;
                    outcome.warnings =
                        admit_new_object(state, target, &mut object, validation, None)?;
                    Ok(Mutation::Put(object))
                }
                Some(stored) => {
                    // A resourceVersion in the configuration is a precondition; without one the
                    // merged object carries the stored one.
                    let merged =
                        managed::apply(Some(stored), &config, shape_of(target), &writer, force)?;
                    decide_update(&request, Some(stored), merged, &mut outcome)
                }
            }
        })
        .await?;
    if !dry_run {
        after_commit(state, target, &committed).await;
    }
    Ok(committed_response(committed, outcome))
}
