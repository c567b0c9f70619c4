//! Kubernetes `Status` errors: the codes, reasons and messages of the real API server
//! (`k8s.io/apimachinery/pkg/api/errors`), so clients that match on them behave the same.

use kro_schema::{FieldError, Gvk, invalid_object_message};
use serde_json::{Value, json};

/// One cause of a `Status` error (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason, such as `FieldValueInvalid` or `FieldManagerConflict`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// The field the cause is about, such as `metadata.name` (may be empty).
    pub field: String,
}

/// An error response of the API, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details` (boxed: errors travel in `Result`s everywhere).
    pub details: Box<Details>,
}

/// The `details` of a `Status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// `details.name`, when the error is about one object.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind`: the resource (plural) for most errors, the Kind for `Invalid`.
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`, also sent as the `Retry-After` header: when a client
    /// may try again.
    pub retry_after_seconds: Option<u32>,
    /// Whether `details` is sent even when empty (`details: {}`, as for a failed JSON-patch
    /// `test`).
    pub sent_when_empty: bool,
}

/// How a resource is named in error messages: `configmaps` for the core group,
/// `deployments.apps` otherwise (`schema.GroupResource.String()`).
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: u16, reason: &'static str, message: String) -> Self {
        ApiError {
            code,
            reason,
            message,
            details: Box::default(),
        }
    }

    fn about(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details.group = Some(group.to_owned());
        self.details.kind = Some(kind.to_owned());
        self.details.name = Some(name.to_owned());
        self
    }

    /// Sets `details.group` and `details.kind`.
    pub fn with_group_kind(mut self, group: &str, kind: &str) -> Self {
        self.details.group = Some(group.to_owned());
        self.details.kind = Some(kind.to_owned());
        self
    }

    /// Adds a cause.
    pub fn with_cause(mut self, reason: &str, message: &str, field: &str) -> Self {
        self.details.causes.push(Cause {
            reason: reason.to_owned(),
            message: message.to_owned(),
            field: field.to_owned(),
        });
        self
    }

    /// 404: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        ApiError::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
            .about(group, resource, name)
    }

    /// 404 for a path the server does not serve.
    pub fn no_such_path() -> Self {
        let mut error = ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource".to_owned(),
        );
        error.details.sent_when_empty = true;
        error
    }

    /// 409: `configmaps "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
        )
        .about(group, resource, name)
    }

    /// 409 after every generated name was taken.
    pub fn generate_name_exhausted(group: &str, resource: &str, name: &str) -> Self {
        let mut error = ApiError::already_exists(group, resource, name);
        error
            .message
            .push_str(", the server was not able to generate a unique name for the object");
        error
    }

    /// 409: optimistic concurrency failure on an update with a stale resourceVersion.
    pub fn conflict_modified(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        )
        .about(group, resource, name)
    }

    /// 409 with a message of the caller's (delete preconditions, apply conflicts).
    pub fn conflict(group: &str, resource: &str, name: &str, message: String) -> Self {
        ApiError::new(409, "Conflict", message).about(group, resource, name)
    }

    /// 422: `<Kind>.<group> "x" is invalid: <errors>`, one cause per field error.
    pub fn invalid(gvk: &Gvk, name: &str, errors: &[FieldError]) -> Self {
        let message = invalid_object_message(gvk, name, errors);
        let mut error = ApiError::new(422, "Invalid", message).about(gvk.group(), gvk.kind(), name);
        error.details.causes = errors
            .iter()
            .map(|field_error| Cause {
                reason: field_error.error_type.reason().to_owned(),
                message: field_error.error_body(),
                field: field_error.path.to_string(),
            })
            .collect();
        error
    }

    /// 422 with a prepared message and empty details (a failed JSON-patch `test`).
    pub fn invalid_request(message: String) -> Self {
        let mut error = ApiError::new(422, "Invalid", message);
        error.details.sent_when_empty = true;
        error
    }

    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message.into())
    }

    /// 403 with a message and the resource it is about.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: String) -> Self {
        ApiError::new(403, "Forbidden", message).about(group, resource, name)
    }

    /// 405: the resource does not support the verb.
    pub fn method_not_supported(group: &str, resource: &str, verb: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        let mut error = ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{qualified}\""),
        );
        error.details.group = Some(group.to_owned());
        error.details.kind = Some(resource.to_owned());
        error
    }

    /// 415 for a PATCH whose Content-Type is none of the patch types: kube-apiserver's
    /// router refuses it before any handler, with its own wording.
    pub fn not_a_patch_type() -> Self {
        let mut error = ApiError::new(
            415,
            "UnsupportedMediaType",
            "415: Unsupported Media Type".to_owned(),
        );
        error.details.sent_when_empty = true;
        error
    }

    /// 415: the patch type is not accepted for this resource.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406: nothing the client accepts can be produced.
    pub fn not_acceptable() -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
                .to_owned(),
        )
    }

    /// 410: a resourceVersion or continue token older than the change log.
    pub fn expired(message: String) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// 413: the request body is larger than the server accepts.
    pub fn too_large(message: String) -> Self {
        ApiError::new(413, "RequestEntityTooLarge", message)
    }

    /// 401: no or a wrong bearer token.
    pub fn unauthorized() -> Self {
        ApiError::new(401, "Unauthorized", "Unauthorized".to_owned())
    }

    /// 504: a resourceVersion ahead of the server.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_cause("ResourceVersionTooLarge", "Too large resource version", "")
    }

    /// 500 for a failure of the server itself (storage).
    pub fn internal(message: String) -> Self {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
    }

    /// 503 for an injected or transient failure.
    pub fn service_unavailable(message: String) -> Self {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    /// Sets `details.retryAfterSeconds` and the `Retry-After` header.
    pub fn with_retry_after(mut self, seconds: u32) -> Self {
        self.details.retry_after_seconds = Some(seconds);
        self
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        if let Some(name) = self.details.name.as_ref().filter(|name| !name.is_empty()) {
            details.insert("name".to_owned(), json!(name));
        }
        if let Some(group) = self
            .details
            .group
            .as_ref()
            .filter(|group| !group.is_empty())
        {
            details.insert("group".to_owned(), json!(group));
        }
        if let Some(kind) = &self.details.kind {
            details.insert("kind".to_owned(), json!(kind));
        }
        if !self.details.causes.is_empty() {
            let causes: Vec<Value> = self
                .details
                .causes
                .iter()
                .map(|cause| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("reason".to_owned(), json!(cause.reason));
                    entry.insert("message".to_owned(), json!(cause.message));
                    if !cause.field.is_empty() {
                        entry.insert("field".to_owned(), json!(cause.field));
                    }
                    Value::Object(entry)
                })
                .collect();
            details.insert("causes".to_owned(), Value::Array(causes));
        }
        if let Some(seconds) = self.details.retry_after_seconds {
            details.insert("retryAfterSeconds".to_owned(), json!(seconds));
        }
        if !details.is_empty() || self.details.sent_when_empty {
            status["details"] = Value::Object(details);
        }
        // An empty reason is omitted, as the real server does for generic 500s.
        if self.reason.is_empty()
            && let Value::Object(map) = &mut status
        {
            map.remove("reason");
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_the_qualified_resource() {
        let error = ApiError::not_found("apps", "deployments", "web");
        assert_eq!(error.message, "deployments.apps \"web\" not found");
        let status = error.to_status();
        assert_eq!(status["details"]["kind"], "deployments");
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["code"], 404);
        let core = ApiError::not_found("", "configmaps", "x").to_status();
        assert_eq!(core["message"], "configmaps \"x\" not found");
        assert!(core["details"].get("group").is_none());
    }

    #[test]
    fn invalid_lists_several_causes_in_brackets() {
        use kro_schema::FieldPath;
        let gvk = Gvk::new("apps", "v1", "Deployment");
        let errors = [
            FieldError::required(FieldPath::new("spec").child("selector"), ""),
            FieldError::required(FieldPath::new("spec").child("template"), ""),
        ];
        let error = ApiError::invalid(&gvk, "web", &errors);
        assert_eq!(
            error.message,
            "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template: Required value]"
        );
        let status = error.to_status();
        assert_eq!(status["details"]["kind"], "Deployment");
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "FieldValueRequired"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.selector");
        assert_eq!(status["details"]["causes"][0]["message"], "Required value");
    }
}
