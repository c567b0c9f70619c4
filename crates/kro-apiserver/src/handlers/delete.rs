//! The delete verbs: delete and deletecollection, with preconditions, propagation policies,
//! finalizers and graceful pod deletion.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, StatusCode};
use kro_schema::{FieldError, FieldPath};
use serde_json::{Value, json};

use crate::crd;
use crate::error::ApiError;
use crate::http_util::{content_type, decode_body, json_response};
use crate::objects::{self, meta_str};
use crate::storage::{Committed, Mutation};

use super::request::ResourceRequest;
use super::request::{Query, Selection, Target, options_error, require_verb};
use super::response::list_body;
use super::write::{after_commit, has_namespace_finalizers};

/// Namespaces that can never be deleted.
pub(super) const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// The grace period a pod's deletion waits for its kubelet, as the pod strategy decides it:
/// none for pods not bound to a node, pods that have finished, or a grace period of zero
/// (they go at once); otherwise the one asked for, else the pod's
/// `terminationGracePeriodSeconds` (30 by default).
pub(super) fn pod_grace_period(target: &Target, pod: &Value, asked: Option<i64>) -> Option<i64> {
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

/// `DeleteOptions`, from the body and the query.
pub(super) struct DeleteOptions {
    pub(super) propagation: Option<String>,
    /// `gracePeriodSeconds`, from the body or the query.
    pub(super) grace_period: Option<i64>,
    pub(super) precondition_uid: Option<String>,
    pub(super) precondition_version: Option<String>,
    pub(super) dry_run: bool,
}

pub(super) fn delete_options(
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

/// The 409 of a write whose UID precondition (`uid`) does not hold: the object at `name` has
/// UID `stored`, or does not exist (`stored` empty), as kube-apiserver words it.
pub(super) fn uid_precondition_failed(
    target: &Target,
    name: &str,
    uid: &str,
    stored: &str,
) -> ApiError {
    let kind = target.resource.gvk.kind();
    ApiError::conflict(
        target.group(),
        target.plural(),
        name,
        format!(
            "Operation cannot be fulfilled on {kind} \"{name}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"
        ),
    )
}

pub(super) fn decide_delete(
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
    if let Some(uid) = &options.precondition_uid {
        let stored = meta_str(current, "uid").unwrap_or("");
        if uid != stored {
            return Err(uid_precondition_failed(target, name, uid, stored));
        }
    }
    let kind = target.resource.gvk.kind();
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

pub(super) fn deleted_response(target: &Target, committed: Committed) -> Response {
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

pub(super) async fn delete(request: &ResourceRequest, name: &str) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        body,
    } = request;
    require_verb(target, "delete")?;
    let options = delete_options(query, headers, body)?;
    let committed = target
        .mutate(state, name, options.dry_run, |current| {
            decide_delete(target, name, current, &options)
        })
        .await?;
    if !options.dry_run {
        after_commit(state, target, &committed).await;
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

pub(super) async fn delete_collection(request: &ResourceRequest) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        body,
    } = request;
    require_verb(target, "deletecollection")?;
    let options = delete_options(query, headers, body)?;
    let selection = Selection::parse(target, query)?;
    let listed = target.list(state, false);
    let mut items = Vec::new();
    for object in listed
        .objects
        .iter()
        .filter(|object| selection.matches(object))
    {
        let name = meta_str(object, "name").unwrap_or("").to_owned();
        let namespace = meta_str(object, "namespace").unwrap_or("").to_owned();
        match target
            .mutate_in(state, &namespace, &name, options.dry_run, |current| {
                decide_delete(target, &name, current, &options)
            })
            .await
        {
            Ok(committed) => {
                if !options.dry_run {
                    after_commit(state, target, &committed).await;
                }
                match committed {
                    Committed::Stored { object, .. } | Committed::Deleted(object) => {
                        items.push(Value::clone(&object));
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
