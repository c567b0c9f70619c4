//! Admission of written objects: type, namespace and name checks, defaults, validation and
//! pruning, and the managed fields of non-apply writes.

use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};

use crate::crd;
use crate::error::ApiError;
use crate::managed;
use crate::objects::{self, UpdateTarget, meta_str};
use crate::state::AppState;
use crate::storage::ObjectKey;

use super::request::{FieldValidation, Target, scale_paths};

/// Fills `apiVersion` and `kind` and checks them against the resource.
pub(super) fn check_type(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    let expected_version = target.resource.api_version();
    let expected_kind = target.resource.gvk.kind().to_owned();
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".to_owned(), json!(expected_version));
        }
        Some(found) if found != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({found}) does not match the expected API version ({expected_version})"
            )));
        }
        Some(_) => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".to_owned(), json!(expected_kind));
        }
        Some(found) if found != expected_kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({found}) does not match the expected kind ({expected_kind})"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Sets or checks the namespace of the body against the URL's.
pub(super) fn check_namespace(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    let metadata = objects::metadata_mut(object);
    match &target.namespace {
        Some(namespace) => match metadata.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                metadata.insert("namespace".to_owned(), json!(namespace));
            }
            Some(found) if found != namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            Some(_) => {}
        },
        None => {
            metadata.remove("namespace");
        }
    }
    Ok(())
}

/// Refuses writes into missing or terminating namespaces.
pub(super) fn admit_namespace(
    state: &AppState,
    target: &Target,
    name: &str,
) -> Result<(), ApiError> {
    let Some(namespace) = &target.namespace else {
        return Ok(());
    };
    match state
        .store
        .get(&ObjectKey::new("", "namespaces", "", namespace))
    {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(found) if found.pointer("/metadata/deletionTimestamp").is_some() => {
            Err(ApiError::forbidden(
                target.group(),
                target.plural(),
                name,
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    crate::error::qualified_resource(target.group(), target.plural())
                ),
            )
            .with_cause(
                "NamespaceTerminating",
                &format!("namespace {namespace} is being terminated"),
                "metadata.namespace",
            ))
        }
        Some(_) => Ok(()),
    }
}

/// Prunes unknown fields (failing or warning per `fieldValidation`) and validates against the
/// kind's schema. Returns the warnings to send.
pub(super) fn admit_object(
    state: &AppState,
    target: &Target,
    object: &mut Value,
    old: Option<&Value>,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let name = meta_str(object, "name").unwrap_or("").to_owned();
    let mut errors: Vec<FieldError> = Vec::new();
    if old.is_none() {
        errors.extend(objects::validate_name(
            &target.resource,
            &name,
            &FieldPath::new("metadata").child("name"),
        ));
    }
    if let Some(labels) = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        errors.extend(crate::label_parser::label_errors(
            labels,
            &FieldPath::new("metadata").child("labels"),
        ));
    }
    let mut warnings = Vec::new();
    if crd::is_crd(&target.resource) {
        errors.extend(crd::validate(object, old));
    }
    let built_in = state.validator(&target.resource.gvk);
    let validator = match &target.resource.custom {
        Some(custom) => Some(&custom.validator),
        None => built_in.as_ref().as_ref(),
    };
    if let Some(validator) = validator {
        let pruned = kro_schema::prune(validator.schema(), object, true);
        if !pruned.is_empty() {
            let unknown: Vec<String> = pruned
                .iter()
                .map(|path| format!("unknown field \"{path}\""))
                .collect();
            match validation {
                FieldValidation::Strict => {
                    let kind = target.resource.gvk.kind();
                    let version = target.resource.gvk.version();
                    return Err(ApiError::bad_request(format!(
                        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                        unknown.join(", ")
                    )));
                }
                FieldValidation::Warn => warnings.extend(unknown),
                FieldValidation::Ignore => {}
            }
        }
        let scale_errors = match &target.resource.custom {
            Some(_) => scale_paths(target)
                .and_then(|paths| scale_replicas_error(object, &paths.spec_replicas))
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        errors.extend(validator.validate_with(object, old, scale_errors));
    }
    let mut error_kind = target.resource.gvk.clone();
    if target.plural() == "events" && matches!(target.group(), "" | crate::events::EVENTS_GROUP) {
        let core = |event: &Value| crate::events::convert(event, "");
        errors.extend(crate::events::validate(
            &core(object),
            old.map(core).as_ref(),
            target.group(),
        ));
        error_kind = crate::events::error_kind();
    }
    if let Some(old) = old
        && let Some(error) = objects::new_finalizers_error(old, object)
    {
        // kube-apiserver checks metadata updates twice (the generic update path and the
        // kind's strategy): the causes list the error twice, the message once.
        errors.push(error.clone());
        errors.push(error);
    }
    if errors.is_empty() {
        Ok(warnings)
    } else {
        Err(ApiError::invalid(&error_kind, &name, &errors))
    }
}

/// The check kube-apiserver makes on a custom resource with a scale subresource: the spec
/// replicas, when an integer, fit a non-negative int32 (the field is the path as written).
pub(super) fn scale_replicas_error(object: &Value, spec_replicas_path: &str) -> Option<FieldError> {
    let replicas = crd::read_path(object, spec_replicas_path)?.as_i64()?;
    let detail = if replicas < 0 {
        "should be a non-negative integer".to_owned()
    } else if replicas > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return None;
    };
    Some(FieldError::invalid(
        FieldPath::new(spec_replicas_path),
        kro_schema::BadValue::Value(json!(replicas)),
        &detail,
    ))
}

/// A body naming another object than the URL is refused.
pub(super) fn check_name_matches(object: &Value, name: &str) -> Result<(), ApiError> {
    match meta_str(object, "name").filter(|found| *found != name) {
        Some(found) => Err(ApiError::bad_request(format!(
            "the name of the object ({found}) does not match the name on the URL ({name})"
        ))),
        None => Ok(()),
    }
}

/// The resources of a definition being deleted take no new objects.
pub(super) fn refuse_while_terminating(state: &AppState, target: &Target) -> Result<(), ApiError> {
    match &target.resource.custom {
        Some(custom) if crd::is_terminating(state, &custom.crd_name) => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating".to_owned(),
        )),
        _ => Ok(()),
    }
}

/// Prepares a new object for storage: server-set metadata, defaults, validation and, for
/// non-apply writes, the writer's managed fields. Returns the warnings to send.
pub(super) fn admit_new_object(
    state: &AppState,
    target: &Target,
    object: &mut Value,
    validation: FieldValidation,
    updater: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    objects::prepare_create(&target.resource, object);
    if crd::is_crd(&target.resource) {
        crd::default_spec(object);
        crd::initial_status(object);
    }
    crate::defaults::apply(state, &target.resource, object, None)?;
    let warnings = admit_object(state, target, object, None, validation)?;
    crate::typed::round_trip(&target.resource.gvk, object);
    if let Some(manager) = updater {
        let api_version = target.resource.api_version();
        let writer = managed::Writer {
            manager,
            api_version: &api_version,
            endpoint: endpoint_of(target, UpdateTarget::Main),
        };
        // A create is compared with the Go zero value of the kind, as kube-apiserver does.
        let zero = crate::typed::zero_object(&target.resource.gvk);
        managed::record_update(zero.as_ref(), object, shape_of(target), &writer)?;
    }
    objects::finish_create(&target.resource, object);
    Ok(warnings)
}

/// The schema managed fields and apply follow.
pub(super) fn shape_of(target: &Target) -> managed::Shape<'_> {
    managed::Shape::of_kind(
        &target.resource.gvk,
        target.resource.custom.as_ref().map(|custom| &custom.schema),
    )
}

pub(super) fn endpoint_of(target: &Target, update_target: UpdateTarget) -> managed::Endpoint {
    match update_target {
        UpdateTarget::Status => managed::Endpoint::Status,
        UpdateTarget::Main | UpdateTarget::Finalize => managed::Endpoint::Main {
            has_status: target.resource.subresource("status").is_some(),
        },
    }
}
