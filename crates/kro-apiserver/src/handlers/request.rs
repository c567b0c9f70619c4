//! What a request names and asks, parsed once: the resource type, namespace, name and
//! subresource its path names, its query parameters, and the [`ResourceRequest`] every verb's
//! handler takes.

use std::sync::Arc;

use axum::body::Bytes;
use http::HeaderMap;
use kro_schema::FieldError;
use serde_json::Value;

use crate::api_path::ResourcePath;
use crate::error::ApiError;
use crate::http_util::{content_type, decode_body};
use crate::managed;
use crate::registry::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::AppState;

/// What a resource path names.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) resource: Arc<ResourceType>,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
}

impl Target {
    pub(super) fn group(&self) -> &str {
        self.resource.group()
    }

    pub(super) fn plural(&self) -> &str {
        &self.resource.plural
    }
}

/// The query parameters of a request.
pub(super) struct Query(Vec<(String, String)>);

impl Query {
    pub(super) fn parse(uri: &http::Uri) -> Result<Query, ApiError> {
        let pairs = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri)
            .map_err(|error| ApiError::bad_request(format!("malformed query: {error}")))?;
        Ok(Query(pairs.0))
    }

    /// The first value of a parameter given more than once, as kube-apiserver converts query
    /// parameters into its options.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub(super) fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }

    pub(super) fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dryRun value: {other:?}: valid values are \"All\""
            ))),
        }
    }

    pub(super) fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.get("fieldValidation") {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid fieldValidation value: {other:?}: valid values are \"Ignore\", \"Warn\" and \"Strict\""
            ))),
        }
    }
}

/// How unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// One request of the resource API, parsed once: the target its path names, its query, and
/// its headers and body. Every verb's handler takes it.
pub(super) struct ResourceRequest {
    pub(super) state: Arc<AppState>,
    pub(super) target: Target,
    pub(super) query: Query,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

/// The resource type (and namespace, name and subresource) a path names, as served now.
pub(super) fn resolve_target(
    state: &AppState,
    path: &ResourcePath<'_>,
) -> Result<Target, ApiError> {
    let resource = state
        .registry()
        .find(path.group, path.version, path.plural)
        .ok_or_else(ApiError::no_such_path)?;
    let scoped = match path.namespace {
        Some(_) => resource.namespaced,
        // A namespaced object is named only in its namespace.
        None => path.name.is_none() || !resource.namespaced,
    };
    if !scoped || path.overlong {
        return Err(ApiError::no_such_path());
    }
    if let Some(subresource) = path.subresource
        && resource.subresource(subresource).is_none()
    {
        return Err(ApiError::no_such_path());
    }
    Ok(Target {
        resource,
        namespace: path.namespace.map(str::to_owned),
        name: path.name.map(str::to_owned),
        subresource: path.subresource.map(str::to_owned),
    })
}

pub(super) fn require_verb(target: &Target, verb: &str) -> Result<(), ApiError> {
    if target.resource.supports(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_supported(
            target.group(),
            target.plural(),
            verb,
        ))
    }
}

pub(super) struct Selection {
    pub(super) labels: LabelSelector,
    pub(super) fields: FieldSelector,
}

impl Selection {
    pub(super) fn parse(target: &Target, query: &Query) -> Result<Selection, ApiError> {
        Ok(Selection {
            labels: LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(
                query.get("fieldSelector").unwrap_or(""),
                target.group(),
                target.plural(),
                target.resource.namespaced,
                target
                    .resource
                    .custom
                    .as_ref()
                    .map(|custom| custom.selectable_fields.as_slice()),
            )?,
        })
    }

    pub(super) fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

/// A 422 about request options (`PatchOptions.meta.k8s.io "" is invalid: ...`).
pub(super) fn options_error(kind: &str, error: FieldError) -> ApiError {
    ApiError::invalid(
        &kro_schema::Gvk::new("meta.k8s.io", "v1", kind),
        "",
        &[error],
    )
}

pub(super) fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    decode_object_as(body, &content_type(headers))
}

/// Decodes a body that must be an object, as JSON or YAML (`media_type`).
pub(super) fn decode_object_as(body: &[u8], media_type: &str) -> Result<Value, ApiError> {
    let value = decode_body(body, media_type)?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ))
    }
}

/// The field manager of a non-apply write: `fieldManager`, or derived from the User-Agent.
pub(super) fn field_manager(query: &Query, headers: &HeaderMap) -> Result<String, ApiError> {
    match query.get("fieldManager") {
        Some(manager) => check_field_manager(manager),
        None => Ok(managed::manager_from_user_agent(
            headers
                .get(http::header::USER_AGENT)
                .and_then(|value| value.to_str().ok()),
        )),
    }
}

pub(super) fn check_field_manager(manager: &str) -> Result<String, ApiError> {
    if manager.len() > 128 {
        return Err(ApiError::invalid_request(format!(
            "fieldManager: Too long: may not be more than 128 bytes, got {}",
            manager.len()
        )));
    }
    Ok(manager.to_owned())
}

/// Where the scale subresource of a resource reads and writes: a definition's paths, or the
/// workloads' `spec.replicas`, `status.replicas` and `spec.selector`.
pub(super) fn scale_paths(target: &Target) -> Option<crate::registry::ScalePaths> {
    target.resource.subresource("scale")?;
    match &target.resource.custom {
        Some(custom) => custom.scale.clone(),
        None => Some(crate::registry::ScalePaths {
            spec_replicas: ".spec.replicas".to_owned(),
            status_replicas: ".status.replicas".to_owned(),
            label_selector: Some(".spec.selector".to_owned()),
        }),
    }
}
