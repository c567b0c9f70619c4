//! The write verbs create and update (PUT), and what every update shares: preconditions,
//! admission, managed fields and the response.

use std::sync::Arc;

use axum::response::Response;
use http::StatusCode;
use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};

use crate::crd;
use crate::error::ApiError;
use crate::managed;
use crate::objects::{self, UpdateTarget, meta_str};
use crate::state::AppState;
use crate::storage::{Committed, Mutation};

use super::admission::{
    admit_namespace, admit_new_object, admit_object, check_name_matches, check_namespace,
    check_type, endpoint_of, refuse_while_terminating, shape_of,
};
use super::request::ResourceRequest;
use super::request::{FieldValidation, Target, decode_object, field_manager, require_verb};
use super::response::object_response;

pub(super) async fn create(request: &ResourceRequest) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        body,
    } = request;
    require_verb(target, "create")?;
    refuse_while_terminating(state, target)?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    let mut object = decode_object(headers, body)?;
    check_type(target, &mut object)?;
    check_namespace(target, &mut object)?;
    let given_name = meta_str(&object, "name")
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
    let generate = meta_str(&object, "generateName")
        .filter(|prefix| !prefix.is_empty())
        .map(str::to_owned);
    let name = match (&given_name, &generate) {
        (Some(name), _) => name.clone(),
        (None, Some(prefix)) => objects::generate_name(prefix),
        (None, None) => {
            let error = FieldError::required(
                FieldPath::new("metadata").child("name"),
                "name or generateName is required",
            );
            return Err(ApiError::invalid(&target.resource.gvk, "", &[error]));
        }
    };
    objects::metadata_mut(&mut object).insert("name".to_owned(), json!(name));
    if !(target.group().is_empty() && target.plural() == "namespaces") {
        admit_namespace(state, target, &name)?;
    }
    let manager = field_manager(query, headers)?;
    let warnings = admit_new_object(state, target, &mut object, validation, Some(&manager))?;
    // generateName retries with a fresh suffix on collision, up to 8 attempts.
    let attempts = if given_name.is_none() { 8 } else { 1 };
    let mut name = name;
    for attempt in 0..attempts {
        if attempt > 0
            && let Some(prefix) = &generate
        {
            name = objects::generate_name(prefix);
            objects::metadata_mut(&mut object).insert("name".to_owned(), json!(name));
        }
        let candidate = object.clone();
        let committed = target
            .mutate(state, &name, dry_run, |current| match current {
                Some(_) => Err(ApiError::already_exists(
                    target.group(),
                    target.plural(),
                    &name,
                )),
                None => Ok(Mutation::Put(candidate)),
            })
            .await;
        match committed {
            Ok(committed @ Committed::Stored { .. }) => {
                if !dry_run {
                    after_commit(state, target, &committed).await;
                }
                let Committed::Stored { object, .. } = committed else {
                    unreachable!("matched above");
                };
                return Ok(object_response(StatusCode::CREATED, &object, &warnings));
            }
            Ok(Committed::Deleted(_)) => {
                return Err(ApiError::internal("a create deleted an object".to_owned()));
            }
            Err(error) if error.reason == "AlreadyExists" && attempt + 1 < attempts => continue,
            Err(error)
                if error.reason == "AlreadyExists"
                    && generate.is_some()
                    && given_name.is_none() =>
            {
                return Err(ApiError::generate_name_exhausted(
                    target.group(),
                    target.plural(),
                    &name,
                ));
            }
            Err(error) => return Err(error),
        }
    }
    Err(ApiError::generate_name_exhausted(
        target.group(),
        target.plural(),
        &name,
    ))
}

/// What an update (PUT or PATCH) is about and how it is checked.
pub(super) struct UpdateRequest<'a> {
    pub(super) state: &'a AppState,
    pub(super) target: &'a Target,
    pub(super) name: &'a str,
    pub(super) endpoint: UpdateTarget,
    pub(super) validation: FieldValidation,
    /// Whether a body without resourceVersion is accepted.
    pub(super) unconditional_allowed: bool,
    /// The manager recorded for a non-apply write (`None` for an apply, which records its
    /// own).
    pub(super) updater: Option<String>,
}

/// What an update decided besides the mutation: the warnings to send, and the object's final
/// state when the update removed the last finalizer of an object being deleted (kube-apiserver
/// answers with that state, without the finalizer, while the DELETED event carries the stored
/// one).
#[derive(Default)]
pub(super) struct UpdateOutcome {
    pub(super) warnings: Vec<String>,
    pub(super) deleted_as: Option<Value>,
}

/// The outcome of running an update decision against the stored object.
pub(super) fn decide_update(
    request: &UpdateRequest<'_>,
    current: Option<&Arc<Value>>,
    mut new: Value,
    outcome: &mut UpdateOutcome,
) -> Result<Mutation, ApiError> {
    let UpdateRequest {
        state,
        target,
        name,
        endpoint: update_target,
        validation,
        unconditional_allowed,
        ref updater,
    } = *request;
    let Some(current) = current else {
        return Err(ApiError::not_found(target.group(), target.plural(), name));
    };
    crate::bounds::check_object(&new)?;
    let current_version = meta_str(current, "resourceVersion").unwrap_or("");
    match meta_str(&new, "resourceVersion").filter(|version| !version.is_empty()) {
        Some(version) if version != current_version => {
            return Err(ApiError::conflict_modified(
                target.group(),
                target.plural(),
                name,
            ));
        }
        Some(_) => {}
        None if !unconditional_allowed => {
            let error = FieldError::invalid(
                FieldPath::new("metadata").child("resourceVersion"),
                kro_schema::BadValue::text("0x0"),
                "must be specified for an update",
            );
            return Err(ApiError::invalid(&target.resource.gvk, name, &[error]));
        }
        None => {}
    }
    check_type(target, &mut new)?;
    let mut new = objects::prepare_update(&target.resource, current, new, update_target);
    if crd::is_crd(&target.resource) && update_target == UpdateTarget::Main {
        crd::default_spec(&mut new);
        crd::carry_stored_versions(&mut new);
    }
    crate::defaults::apply(state, &target.resource, &mut new, Some(current))?;
    outcome.warnings.extend(admit_object(
        state,
        target,
        &mut new,
        Some(current),
        validation,
    )?);
    crate::typed::round_trip(&target.resource.gvk, &mut new);
    if let Some(manager) = updater {
        let api_version = target.resource.api_version();
        let writer = managed::Writer {
            manager,
            api_version: &api_version,
            endpoint: endpoint_of(target, update_target),
        };
        managed::record_update(Some(current), &mut new, shape_of(target), &writer)?;
    }
    let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && objects::finalizers(&new).is_empty() && !has_namespace_finalizers(target, &new) {
        outcome.deleted_as = Some(new);
        return Ok(Mutation::Delete);
    }
    Ok(Mutation::Put(new))
}

pub(super) fn has_namespace_finalizers(target: &Target, object: &Value) -> bool {
    target.group().is_empty()
        && target.plural() == "namespaces"
        && object
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|list| !list.is_empty())
}

pub(super) fn committed_response(committed: Committed, outcome: UpdateOutcome) -> Response {
    let warnings = &outcome.warnings;
    match committed {
        Committed::Stored {
            object, created, ..
        } => {
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            object_response(code, &object, warnings)
        }
        Committed::Deleted(object) => match outcome.deleted_as {
            Some(mut last) => {
                if let Some(version) = object.pointer("/metadata/resourceVersion") {
                    last["metadata"]["resourceVersion"] = version.clone();
                }
                object_response(StatusCode::OK, &last, warnings)
            }
            None => object_response(StatusCode::OK, &object, warnings),
        },
    }
}

pub(super) async fn update(
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
    require_verb(target, "update")?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    let mut object = decode_object(headers, body)?;
    check_name_matches(&object, name)?;
    check_namespace(target, &mut object)?;
    let request = UpdateRequest {
        state,
        target,
        name,
        endpoint: update_target,
        validation,
        unconditional_allowed: allows_unconditional_update(target),
        updater: Some(field_manager(query, headers)?),
    };
    let mut outcome = UpdateOutcome::default();
    let committed = target
        .mutate(state, name, dry_run, |current| {
            decide_update(&request, current, object, &mut outcome)
        })
        .await?;
    if !dry_run {
        after_commit(state, target, &committed).await;
    }
    Ok(committed_response(committed, outcome))
}

/// Whether a PUT without resourceVersion is accepted (built-ins yes, custom resources no).
pub(super) fn allows_unconditional_update(target: &Target) -> bool {
    target.resource.custom.is_none()
}

/// What follows a committed write: a definition's names and endpoints, and the release of a
/// deleted definition once its last instance is gone.
pub(super) async fn after_commit(state: &AppState, target: &Target, committed: &Committed) {
    let object = match committed {
        Committed::Stored { object, .. } | Committed::Deleted(object) => object,
    };
    if crd::is_crd(&target.resource) {
        if let Some(name) = meta_str(object, "name") {
            crd::reconcile(state, name).await;
        }
    } else if matches!(committed, Committed::Deleted(_)) {
        crd::instance_deleted(state, &target.resource).await;
    }
}
