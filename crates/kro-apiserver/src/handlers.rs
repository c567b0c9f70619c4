//! The resource API: `/api/v1/...` and `/apis/<group>/<version>/...` paths, routed by hand
//! as kube-apiserver routes them, and the verbs get, list, watch, create, update, patch,
//! delete and deletecollection on objects and their `status` subresource.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::crd;
use crate::error::ApiError;
use crate::http_util::{content_type, decode_body, json_response, require_json};
use crate::managed;
use crate::objects::{self, UpdateTarget, meta_str};
use crate::patch;
use crate::registry::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::{AppState, WatchSlot};
use crate::storage::{Change, ChangeType, Committed, Mutation, ObjectKey};
use crate::strategic;
use crate::tables;

/// Namespaces that can never be deleted.
const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// What a resource path names.
#[derive(Debug)]
struct Target {
    resource: Arc<ResourceType>,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

impl Target {
    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::new(
            self.resource.group(),
            &self.resource.plural,
            self.namespace.as_deref().unwrap_or(""),
            name,
        )
    }

    fn group(&self) -> &str {
        self.resource.group()
    }

    fn plural(&self) -> &str {
        &self.resource.plural
    }
}

/// The query parameters of a request.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(uri: &http::Uri) -> Result<Query, ApiError> {
        let pairs = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri)
            .map_err(|error| ApiError::bad_request(format!("malformed query: {error}")))?;
        Ok(Query(pairs.0))
    }

    /// The first value of a parameter given more than once, as kube-apiserver converts query
    /// parameters into its options.
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1"))
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dryRun value: {other:?}: valid values are \"All\""
            ))),
        }
    }

    fn field_validation(&self) -> Result<FieldValidation, ApiError> {
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
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

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
        (&Method::POST, None, None) => create(state, &target, &query, headers, &body),
        (&Method::DELETE, None, None) => delete_collection(state, &target, &query, headers, &body),
        (&Method::GET, Some(name), None | Some("status")) => {
            get(state, &target, name, &query, headers)
        }
        (&Method::PUT, Some(name), None) => update(
            state,
            &target,
            name,
            UpdateTarget::Main,
            &query,
            headers,
            &body,
        ),
        (&Method::PUT, Some(name), Some("status")) => update(
            state,
            &target,
            name,
            UpdateTarget::Status,
            &query,
            headers,
            &body,
        ),
        (&Method::PUT, Some(name), Some("finalize")) => update(
            state,
            &target,
            name,
            UpdateTarget::Finalize,
            &query,
            headers,
            &body,
        ),
        (&Method::PATCH, Some(name), None) => patch(
            state,
            &target,
            name,
            UpdateTarget::Main,
            &query,
            headers,
            &body,
        ),
        (&Method::PATCH, Some(name), Some("status")) => patch(
            state,
            &target,
            name,
            UpdateTarget::Status,
            &query,
            headers,
            &body,
        ),
        (&Method::DELETE, Some(name), None) => delete(state, &target, name, &query, headers, &body),
        (&Method::GET, Some(name), Some("scale")) => get_scale(state, &target, name),
        (&Method::PUT, Some(name), Some("scale")) => {
            update_scale(state, &target, name, &query, headers, &body, false)
        }
        (&Method::PATCH, Some(name), Some("scale")) => {
            update_scale(state, &target, name, &query, headers, &body, true)
        }
        _ => Err(ApiError::method_not_supported(
            target.group(),
            target.plural(),
            &method.as_str().to_ascii_lowercase(),
        )),
    }
}

fn resolve_target(
    state: &AppState,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Target, ApiError> {
    let registry = state.registry();
    let find = |plural: &str| {
        registry
            .find(group, version, plural)
            .ok_or_else(ApiError::no_such_path)
    };
    let namespaces_subresource = |segment: &str| matches!(segment, "status" | "finalize");
    let (resource, namespace, name, subresource) = match rest {
        ["namespaces", namespace, plural, tail @ ..] if !namespaces_subresource(plural) => {
            let resource = find(plural)?;
            if !resource.namespaced {
                return Err(ApiError::no_such_path());
            }
            match tail {
                [] => (resource, Some(*namespace), None, None),
                [name] => (resource, Some(*namespace), Some(*name), None),
                [name, subresource] => {
                    (resource, Some(*namespace), Some(*name), Some(*subresource))
                }
                _ => return Err(ApiError::no_such_path()),
            }
        }
        [plural, tail @ ..] => {
            let resource = find(plural)?;
            match tail {
                [] => (resource, None, None, None),
                [_, ..] if resource.namespaced => return Err(ApiError::no_such_path()),
                [name] => (resource, None, Some(*name), None),
                [name, subresource] => (resource, None, Some(*name), Some(*subresource)),
                _ => return Err(ApiError::no_such_path()),
            }
        }
        [] => return Err(ApiError::no_such_path()),
    };
    if let Some(subresource) = subresource
        && resource.subresource(subresource).is_none()
    {
        return Err(ApiError::no_such_path());
    }
    Ok(Target {
        resource,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
    })
}

fn require_verb(target: &Target, verb: &str) -> Result<(), ApiError> {
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

fn object_response(code: StatusCode, object: &Value, warnings: &[String]) -> Response {
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
fn metadata_only(headers: &HeaderMap) -> bool {
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

/// An object as `PartialObjectMetadata`: its metadata alone.
fn partial_object(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The Table form a request asked for: its version and what rows carry.
fn table_request(
    query: &Query,
    headers: &HeaderMap,
) -> Result<Option<(&'static str, tables::IncludeObject)>, ApiError> {
    let Some(version) = tables::wanted(headers) else {
        return Ok(None);
    };
    let include = tables::IncludeObject::parse(query.get("includeObject")).ok_or_else(|| {
        ApiError::bad_request(format!(
            "invalid includeObject {:?}: use None, Metadata or Object",
            query.get("includeObject").unwrap_or_default()
        ))
    })?;
    Ok(Some((version, include)))
}

fn get(
    state: &AppState,
    target: &Target,
    name: &str,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    require_verb(target, "get")?;
    let Some(object) = state.store.get(&target.key(name)) else {
        return Err(ApiError::not_found(target.group(), target.plural(), name));
    };
    match table_request(query, headers)? {
        Some((version, include)) => {
            let printer = tables::Printer::of(&target.resource);
            let metadata = json!({"resourceVersion": meta_str(&object, "resourceVersion").unwrap_or_default()});
            let table = printer.table(version, std::iter::once(&*object), metadata, include, true);
            Ok(json_response(StatusCode::OK, &table))
        }
        None if metadata_only(headers) => {
            Ok(json_response(StatusCode::OK, &partial_object(&object)))
        }
        None => Ok(json_response(StatusCode::OK, &object)),
    }
}

/// A list position handed out as `continue`: the revision of the first page and the last key.
fn encode_continue(revision: u64, namespace: &str, name: &str) -> String {
    let text = json!([revision, namespace, name]).to_string();
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(u64, String, String)> {
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

struct Selection {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Selection {
    fn parse(target: &Target, query: &Query) -> Result<Selection, ApiError> {
        Ok(Selection {
            labels: LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(
                query.get("fieldSelector").unwrap_or(""),
                target.group(),
                target.plural(),
                target.resource.namespaced,
                target.resource.custom.is_some(),
            )?,
        })
    }

    fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

fn list(
    state: &AppState,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
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
    let listed = state.store.list(
        target.group(),
        target.plural(),
        target.namespace.as_deref(),
        false,
    );
    let mut revision = listed.revision;
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
    for object in &listed.objects {
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

/// A list as kube-apiserver encodes it: items of built-in kinds without `apiVersion` and
/// `kind` (typed lists drop them), items of custom resources with them and an empty
/// `continue` on the last page (unstructured lists keep it).
fn list_body(target: &Target, mut metadata: Value, mut items: Vec<Value>) -> Value {
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

/// Fills `apiVersion` and `kind` and checks them against the resource.
fn check_type(target: &Target, object: &mut Value) -> Result<(), ApiError> {
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
fn check_namespace(target: &Target, object: &mut Value) -> Result<(), ApiError> {
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
fn admit_namespace(state: &AppState, target: &Target, name: &str) -> Result<(), ApiError> {
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
fn admit_object(
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
    let mut warnings = Vec::new();
    if crd::is_crd(&target.resource) {
        errors.extend(crd::validate(object));
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
        Err(ApiError::invalid(&target.resource.gvk, &name, &errors))
    }
}

/// The check kube-apiserver makes on a custom resource with a scale subresource: the spec
/// replicas, when an integer, fit a non-negative int32 (the field is the path as written).
fn scale_replicas_error(object: &Value, spec_replicas_path: &str) -> Option<FieldError> {
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

/// A 422 about request options (`PatchOptions.meta.k8s.io "" is invalid: ...`).
fn options_error(kind: &str, error: FieldError) -> ApiError {
    ApiError::invalid(
        &kro_schema::Gvk::new("meta.k8s.io", "v1", kind),
        "",
        &[error],
    )
}

fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let value = decode_body(body, &content_type(headers))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ))
    }
}

fn create(
    state: &AppState,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
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
        let key = target.key(&name);
        let candidate = object.clone();
        let committed = state
            .store
            .mutate_with(&key, dry_run, |current| match current {
                Some(_) => Err(ApiError::already_exists(
                    target.group(),
                    target.plural(),
                    &name,
                )),
                None => Ok(Mutation::Put(candidate)),
            });
        match committed {
            Ok(committed @ Committed::Stored { .. }) => {
                if !dry_run {
                    after_commit(state, target, &committed);
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

/// A body naming another object than the URL is refused.
fn check_name_matches(object: &Value, name: &str) -> Result<(), ApiError> {
    match meta_str(object, "name").filter(|found| *found != name) {
        Some(found) => Err(ApiError::bad_request(format!(
            "the name of the object ({found}) does not match the name on the URL ({name})"
        ))),
        None => Ok(()),
    }
}

/// The resources of a definition being deleted take no new objects.
fn refuse_while_terminating(state: &AppState, target: &Target) -> Result<(), ApiError> {
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
fn admit_new_object(
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
fn shape_of(target: &Target) -> managed::Shape<'_> {
    managed::Shape::of_kind(
        &target.resource.gvk,
        target.resource.custom.as_ref().map(|custom| &custom.schema),
    )
}

fn endpoint_of(target: &Target, update_target: UpdateTarget) -> managed::Endpoint {
    match update_target {
        UpdateTarget::Status => managed::Endpoint::Status,
        UpdateTarget::Main | UpdateTarget::Finalize => managed::Endpoint::Main {
            has_status: target.resource.subresource("status").is_some(),
        },
    }
}

/// The field manager of a non-apply write: `fieldManager`, or derived from the User-Agent.
fn field_manager(query: &Query, headers: &HeaderMap) -> Result<String, ApiError> {
    match query.get("fieldManager") {
        Some(manager) => check_field_manager(manager),
        None => Ok(managed::manager_from_user_agent(
            headers
                .get(http::header::USER_AGENT)
                .and_then(|value| value.to_str().ok()),
        )),
    }
}

fn check_field_manager(manager: &str) -> Result<String, ApiError> {
    if manager.len() > 128 {
        return Err(ApiError::invalid_request(format!(
            "fieldManager: Too long: may not be more than 128 bytes, got {}",
            manager.len()
        )));
    }
    Ok(manager.to_owned())
}

/// What an update (PUT or PATCH) is about and how it is checked.
struct UpdateRequest<'a> {
    state: &'a AppState,
    target: &'a Target,
    name: &'a str,
    endpoint: UpdateTarget,
    validation: FieldValidation,
    /// Whether a body without resourceVersion is accepted.
    unconditional_allowed: bool,
    /// The manager recorded for a non-apply write (`None` for an apply, which records its
    /// own).
    updater: Option<String>,
}

/// What an update decided besides the mutation: the warnings to send, and the object's final
/// state when the update removed the last finalizer of an object being deleted (kube-apiserver
/// answers with that state, without the finalizer, while the DELETED event carries the stored
/// one).
#[derive(Default)]
struct UpdateOutcome {
    warnings: Vec<String>,
    deleted_as: Option<Value>,
}

/// The outcome of running an update decision against the stored object.
fn decide_update(
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

/// The grace period a pod's deletion waits for its kubelet, as the pod strategy decides it:
/// none for pods not bound to a node, pods that have finished, or a grace period of zero
/// (they go at once); otherwise the one asked for, else the pod's
/// `terminationGracePeriodSeconds` (30 by default).
fn pod_grace_period(target: &Target, pod: &Value, asked: Option<i64>) -> Option<i64> {
    if !target.group().is_empty() || target.plural() != "pods" {
        return None;
    }
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|node| !node.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let seconds = asked.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(30)
    });
    (bound && !finished && seconds > 0).then_some(seconds)
}

fn has_namespace_finalizers(target: &Target, object: &Value) -> bool {
    target.group().is_empty()
        && target.plural() == "namespaces"
        && object
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|list| !list.is_empty())
}

fn committed_response(committed: Committed, outcome: UpdateOutcome) -> Response {
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

fn update(
    state: &AppState,
    target: &Target,
    name: &str,
    update_target: UpdateTarget,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
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
    let committed = state
        .store
        .mutate_with(&target.key(name), dry_run, |current| {
            decide_update(&request, current, object, &mut outcome)
        })?;
    if !dry_run {
        after_commit(state, target, &committed);
    }
    Ok(committed_response(committed, outcome))
}

/// Whether a PUT without resourceVersion is accepted (built-ins yes, custom resources no).
fn allows_unconditional_update(target: &Target) -> bool {
    target.resource.custom.is_none()
}

/// What follows a committed write: a definition's names and endpoints, and the release of a
/// deleted definition once its last instance is gone.
fn after_commit(state: &AppState, target: &Target, committed: &Committed) {
    let object = match committed {
        Committed::Stored { object, .. } | Committed::Deleted(object) => object,
    };
    if crd::is_crd(&target.resource) {
        if let Some(name) = meta_str(object, "name") {
            crd::reconcile(state, name);
        }
    } else if matches!(committed, Committed::Deleted(_)) {
        crd::instance_deleted(state, &target.resource);
    }
}

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The schema strategic merge patches of a resource follow: the built-in catalog's, or none
/// for kinds the catalog does not have (custom resources), which cannot be patched that way.
fn strategic_schema(target: &Target) -> Option<kro_schema::FieldSchema<'static>> {
    kro_schema::Catalog::kubernetes()
        .resolve(&target.resource.gvk)
        .found()
        .map(|kind| kind.root())
}

/// The patch types accepted for a resource.
fn accepted_patch_types(target: &Target) -> &'static [&'static str] {
    if strategic_schema(target).is_some() {
        &[JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]
    } else {
        &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    }
}

fn patch(
    state: &AppState,
    target: &Target,
    name: &str,
    update_target: UpdateTarget,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    require_verb(target, "patch")?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    if content_type(headers) == APPLY_PATCH {
        return apply_patch(state, target, name, update_target, query, headers, body);
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
    let committed = state
        .store
        .mutate_with(&target.key(name), dry_run, |current| {
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
        })?;
    if !dry_run {
        after_commit(state, target, &committed);
    }
    Ok(committed_response(committed, outcome))
}

/// A server-side apply (`application/apply-patch+yaml`): creates the object when it does not
/// exist, otherwise merges the manager's configuration into it with ownership and conflicts.
fn apply_patch(
    state: &AppState,
    target: &Target,
    name: &str,
    update_target: UpdateTarget,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
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
    let mut config = decode_object(headers, body)?;
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
    let key = target.key(name);
    if state.store.get(&key).is_none() {
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
    let committed = state.store.mutate_with(&key, dry_run, |current| {
        match current {
            None => {
                let mut object = managed::apply(None, &config, shape_of(target), &writer, force)?;
                outcome.warnings = admit_new_object(state, target, &mut object, validation, None)?;
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
    })?;
    if !dry_run {
        after_commit(state, target, &committed);
    }
    Ok(committed_response(committed, outcome))
}

/// Where the scale subresource of a resource reads and writes: a definition's paths, or the
/// workloads' `spec.replicas`, `status.replicas` and `spec.selector`.
fn scale_paths(target: &Target) -> Option<crate::registry::ScalePaths> {
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

fn get_scale(state: &AppState, target: &Target, name: &str) -> Result<Response, ApiError> {
    require_verb(target, "get")?;
    let paths = scale_paths(target).ok_or_else(ApiError::no_such_path)?;
    match state.store.get(&target.key(name)) {
        Some(object) => Ok(json_response(
            StatusCode::OK,
            &crd::scale_of(&object, &paths),
        )),
        None => Err(ApiError::not_found(target.group(), target.plural(), name)),
    }
}

/// PUT or PATCH of `/scale`: the new Scale's `spec.replicas` is written into the object.
fn update_scale(
    state: &AppState,
    target: &Target,
    name: &str,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
    patching: bool,
) -> Result<Response, ApiError> {
    require_verb(target, if patching { "patch" } else { "update" })?;
    let paths = scale_paths(target).ok_or_else(ApiError::no_such_path)?;
    let dry_run = query.dry_run()?;
    let validation = query.field_validation()?;
    let media_type = content_type(headers);
    let document = if patching {
        let accepted = accepted_patch_types(target);
        if !accepted.contains(&media_type.as_str()) {
            return Err(ApiError::unsupported_media_type(accepted));
        }
        decode_body(body, "application/json")?
    } else {
        decode_object(headers, body)?
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
    let committed = state
        .store
        .mutate_with(&target.key(name), dry_run, |current| {
            let Some(stored) = current else {
                return Err(ApiError::not_found(target.group(), target.plural(), name));
            };
            let scale = crd::scale_of(stored, &paths);
            let new_scale = match (patching, media_type.as_str()) {
                (false, _) => document.clone(),
                (true, JSON_PATCH) => patch::json_patch(&scale, &document)?,
                (true, _) => {
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
        })?;
    let object = match committed {
        Committed::Stored { object, .. } | Committed::Deleted(object) => object,
    };
    Ok(object_response(
        StatusCode::OK,
        &crd::scale_of(&object, &paths),
        &outcome.warnings,
    ))
}

/// `DeleteOptions`, from the body and the query.
struct DeleteOptions {
    propagation: Option<String>,
    /// `gracePeriodSeconds`, from the body or the query.
    grace_period: Option<i64>,
    precondition_uid: Option<String>,
    precondition_version: Option<String>,
    dry_run: bool,
}

fn delete_options(
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<DeleteOptions, ApiError> {
    let options = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        decode_body(body, &content_type(headers))?
    };
    let text = |pointer: &str| {
        options
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let propagation =
        text("/propagationPolicy").or_else(|| query.get("propagationPolicy").map(str::to_owned));
    let propagation = match options.get("orphanDependents").and_then(Value::as_bool) {
        Some(true) if propagation.is_none() => Some("Orphan".to_owned()),
        _ => propagation,
    };
    if let Some(policy) = &propagation
        && !matches!(policy.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(options_error(
            "DeleteOptions",
            FieldError::not_supported(
                FieldPath::new("propagationPolicy"),
                kro_schema::BadValue::text(policy),
                &["Foreground", "Background", "Orphan", "nil"].map(str::to_owned),
            ),
        ));
    }
    let body_dry_run = options
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|value| value == "All"));
    let grace_period = match options.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(seconds) => Some(seconds),
        None => match query.get("gracePeriodSeconds") {
            Some(text) => Some(text.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds {text:?}"))
            })?),
            None => None,
        },
    };
    Ok(DeleteOptions {
        propagation,
        grace_period,
        precondition_uid: text("/preconditions/uid"),
        precondition_version: text("/preconditions/resourceVersion"),
        dry_run: body_dry_run || query.dry_run()?,
    })
}

fn decide_delete(
    target: &Target,
    name: &str,
    current: Option<&Arc<Value>>,
    options: &DeleteOptions,
) -> Result<Mutation, ApiError> {
    let Some(current) = current else {
        return Err(ApiError::not_found(target.group(), target.plural(), name));
    };
    if target.group().is_empty()
        && target.plural() == "namespaces"
        && IMMORTAL_NAMESPACES.contains(&name)
    {
        return Err(ApiError::forbidden(
            "",
            "namespaces",
            name,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
        ));
    }
    let kind = target.resource.gvk.kind();
    if let Some(uid) = &options.precondition_uid {
        let stored = meta_str(current, "uid").unwrap_or("");
        if uid != stored {
            return Err(ApiError::conflict(
                target.group(),
                target.plural(),
                name,
                format!(
                    "Operation cannot be fulfilled on {kind} \"{name}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"
                ),
            ));
        }
    }
    if let Some(version) = &options.precondition_version {
        let stored = meta_str(current, "resourceVersion").unwrap_or("");
        if version != stored {
            return Err(ApiError::conflict(
                target.group(),
                target.plural(),
                name,
                format!(
                    "Operation cannot be fulfilled on {kind} \"{name}\": the ResourceVersion in the precondition ({version}) does not match the ResourceVersion in record ({stored}). The object might have been modified"
                ),
            ));
        }
    }
    let mut object = Value::clone(current);
    if crd::is_crd(&target.resource) && object.pointer("/metadata/deletionTimestamp").is_none() {
        crd::hold_for_cleanup(&mut object);
    }
    let mut finalizers = objects::finalizers(&object);
    let added = match options.propagation.as_deref() {
        Some("Foreground") => Some("foregroundDeletion"),
        Some("Orphan") => Some("orphan"),
        _ => None,
    };
    if let Some(added) = added
        && !finalizers.iter().any(|finalizer| finalizer == added)
    {
        finalizers.push(added.to_owned());
        objects::metadata_mut(&mut object).insert("finalizers".to_owned(), json!(finalizers));
    }
    let namespace = target.group().is_empty() && target.plural() == "namespaces";
    let grace = pod_grace_period(target, &object, options.grace_period);
    if finalizers.is_empty() && !has_namespace_finalizers(target, &object) && grace.is_none() {
        return Ok(Mutation::Delete);
    }
    match grace {
        Some(seconds) => objects::mark_deleting_gracefully(&mut object, seconds),
        // A pod held by finalizers whose kubelet is done: its grace period ends now.
        None if target.plural() == "pods" && options.grace_period == Some(0) => {
            objects::mark_deleting_gracefully(&mut object, 0);
        }
        None => objects::mark_deleting(&mut object),
    }
    if namespace {
        object["status"] = json!({"phase": "Terminating"});
    }
    Ok(Mutation::Put(object))
}

fn deleted_response(target: &Target, committed: Committed) -> Response {
    match committed {
        Committed::Stored { object, .. } => json_response(StatusCode::OK, &object),
        Committed::Deleted(object) if objects::returns_deleted_object(&target.resource) => {
            json_response(StatusCode::OK, &object)
        }
        Committed::Deleted(object) => {
            let mut details = json!({
                "name": meta_str(&object, "name").unwrap_or(""),
                "kind": target.plural(),
                "uid": meta_str(&object, "uid").unwrap_or(""),
            });
            if !target.group().is_empty() {
                details["group"] = json!(target.group());
            }
            json_response(
                StatusCode::OK,
                &json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }),
            )
        }
    }
}

fn delete(
    state: &AppState,
    target: &Target,
    name: &str,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    require_verb(target, "delete")?;
    let options = delete_options(query, headers, body)?;
    let committed = state
        .store
        .mutate_with(&target.key(name), options.dry_run, |current| {
            decide_delete(target, name, current, &options)
        })?;
    if !options.dry_run {
        after_commit(state, target, &committed);
    }
    // A pod whose graceful deletion a zero grace period ends is answered in its final state.
    if let Committed::Deleted(object) = &committed
        && options.grace_period == Some(0)
        && target.plural() == "pods"
        && object
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|seconds| seconds > 0)
    {
        let mut last = Value::clone(object);
        objects::mark_deleting_gracefully(&mut last, 0);
        return Ok(json_response(StatusCode::OK, &last));
    }
    Ok(deleted_response(target, committed))
}

fn delete_collection(
    state: &AppState,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    require_verb(target, "deletecollection")?;
    let options = delete_options(query, headers, body)?;
    let selection = Selection::parse(target, query)?;
    let listed = state.store.list(
        target.group(),
        target.plural(),
        target.namespace.as_deref(),
        false,
    );
    let mut items = Vec::new();
    for object in listed
        .objects
        .iter()
        .filter(|object| selection.matches(object))
    {
        let name = meta_str(object, "name").unwrap_or("").to_owned();
        let namespace = meta_str(object, "namespace").unwrap_or("").to_owned();
        let key = ObjectKey::new(target.group(), target.plural(), &namespace, &name);
        match state.store.mutate_with(&key, options.dry_run, |current| {
            decide_delete(target, &name, current, &options)
        }) {
            Ok(committed) => {
                if !options.dry_run {
                    after_commit(state, target, &committed);
                }
                match committed {
                    Committed::Stored { object, .. } | Committed::Deleted(object) => {
                        items.push(Value::clone(&object))
                    }
                }
            }
            // Deleted meanwhile, or immortal: skipped as kube-apiserver skips them.
            Err(error) if matches!(error.code, 404 | 403) => {}
            Err(error) => return Err(error),
        }
    }
    let metadata = json!({ "resourceVersion": state.store.revision().to_string() });
    Ok(json_response(
        StatusCode::OK,
        &list_body(target, metadata, items),
    ))
}

/// How watch events carry objects: as they are, or as one-row Tables (the first with the
/// column definitions) when the client asked for Tables.
struct EventFormat {
    table: Option<(&'static str, tables::IncludeObject, tables::Printer)>,
    headers_sent: bool,
    /// Objects as `PartialObjectMetadata`.
    metadata_only: bool,
}

impl EventFormat {
    fn line(&mut self, event_type: &str, object: &Value) -> Bytes {
        let Some((version, include, printer)) = &self.table else {
            if self.metadata_only && event_type != "BOOKMARK" {
                return event_line(event_type, &partial_object(object));
            }
            return event_line(event_type, object);
        };
        let metadata =
            json!({"resourceVersion": meta_str(object, "resourceVersion").unwrap_or_default()});
        let table = printer.table(
            version,
            std::iter::once(object),
            metadata,
            *include,
            !self.headers_sent,
        );
        self.headers_sent = true;
        event_line(event_type, &table)
    }
}

/// One line of a watch stream.
fn event_line(event_type: &str, object: &Value) -> Bytes {
    let mut line =
        serde_json::to_vec(&json!({ "type": event_type, "object": object })).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// What a change means to a watcher with a selection: the event to send, if any.
/// The event a watcher of `target` with `selection` gets for `change`, if any. An object that
/// leaves the selection is DELETED with its previous content at the change's
/// resourceVersion, as kube-apiserver's watch cache sends it.
fn filter_change<'a>(
    target: &Target,
    selection: &Selection,
    change: &'a Change,
) -> Option<(&'static str, Cow<'a, Value>)> {
    if !change.key.group.eq(target.group()) || change.key.resource != target.resource.plural {
        return None;
    }
    if let Some(namespace) = &target.namespace
        && change.key.namespace != *namespace
    {
        return None;
    }
    let now = selection.matches(&change.object);
    let before = change
        .previous
        .as_deref()
        .is_some_and(|previous| selection.matches(previous));
    let current = || Cow::Borrowed(&*change.object);
    match change.change_type {
        ChangeType::Added => now.then(|| ("ADDED", current())),
        ChangeType::Deleted => before.then(|| ("DELETED", current())),
        ChangeType::Modified => match (before, now) {
            (true, true) => Some(("MODIFIED", current())),
            (false, true) => Some(("ADDED", current())),
            (true, false) => {
                let mut last = change
                    .previous
                    .as_deref()
                    .cloned()
                    .unwrap_or_else(|| Value::clone(&change.object));
                if let Some(version) = change.object.pointer("/metadata/resourceVersion") {
                    last["metadata"]["resourceVersion"] = version.clone();
                }
                Some(("DELETED", Cow::Owned(last)))
            }
            (false, false) => None,
        },
    }
}

fn watch(
    state: &Arc<AppState>,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    require_verb(target, "watch")?;
    let mut format = EventFormat {
        table: table_request(query, headers)?
            .map(|(version, include)| (version, include, tables::Printer::of(&target.resource))),
        headers_sent: false,
        metadata_only: metadata_only(headers),
    };
    if query.flag("sendInitialEvents") {
        return Err(ApiError::invalid_request(
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".to_owned(),
        ));
    }
    let selection = Selection::parse(target, query)?;
    let bookmarks = query.flag("allowWatchBookmarks");
    let timeout = match query.get("timeoutSeconds") {
        Some(text) => Duration::from_secs(
            text.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {text:?}")))?,
        ),
        None => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    let Some(slot) = WatchSlot::acquire(state) else {
        return Err(ApiError::new(
            429,
            "TooManyRequests",
            "too many watches are open".to_owned(),
        ));
    };
    let (sender, receiver) = mpsc::channel::<Bytes>(256);
    let mut initial = Vec::new();
    let (live, start_revision) = match query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
    {
        None => {
            let listed = state.store.list(
                target.group(),
                target.plural(),
                target.namespace.as_deref(),
                true,
            );
            for object in listed
                .objects
                .iter()
                .filter(|object| selection.matches(object))
            {
                initial.push(format.line("ADDED", object));
            }
            (listed.live, listed.revision)
        }
        Some(text) => {
            let revision: u64 = text
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version {text:?}")))?;
            match state.store.watch_from(revision) {
                Ok(start) => {
                    for change in &start.backlog {
                        if let Some((event_type, object)) =
                            filter_change(target, &selection, change)
                        {
                            initial.push(format.line(event_type, &object));
                        }
                    }
                    (Some(start.live), start.revision)
                }
                Err(error) if error.code == 410 => {
                    initial.push(event_line("ERROR", &error.to_status()));
                    (None, revision)
                }
                Err(error) => return Err(error),
            }
        }
    };
    let target = Target {
        resource: Arc::clone(&target.resource),
        namespace: target.namespace.clone(),
        name: None,
        subresource: None,
    };
    let interval = state.config.bookmark_interval;
    let mut expiry = state.watch_expiry.subscribe();
    tokio::spawn(async move {
        let _slot = slot;
        for line in initial {
            if sender.send(line).await.is_err() {
                return;
            }
        }
        let Some(mut live) = live else {
            return;
        };
        let mut last_revision = start_revision;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                () = &mut deadline => return,
                () = sender.closed() => return,
                _ = expiry.changed() => {
                    let error = ApiError::expired(format!(
                        "too old resource version: {last_revision} (the watch was expired)"
                    ));
                    let _ = sender.send(event_line("ERROR", &error.to_status())).await;
                    return;
                }
                _ = ticker.tick(), if bookmarks => {
                    let bookmark = json!({
                        "kind": target.resource.gvk.kind(),
                        "apiVersion": target.resource.api_version(),
                        "metadata": { "resourceVersion": last_revision.to_string() },
                    });
                    if sender.send(event_line("BOOKMARK", &bookmark)).await.is_err() {
                        return;
                    }
                }
                received = live.recv() => match received {
                    Ok(change) => {
                        if change.revision <= last_revision {
                            continue;
                        }
                        last_revision = change.revision;
                        if let Some((event_type, object)) = filter_change(&target, &selection, &change)
                            && sender.send(format.line(event_type, &object)).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let error = ApiError::expired(format!(
                            "too old resource version: {last_revision} (the watch fell behind)"
                        ));
                        let _ = sender.send(event_line("ERROR", &error.to_status())).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|line| (Ok::<Bytes, Infallible>(line), receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}
