//! JSON views of Kubernetes objects shared by the engine's drivers: string fields by pointer
//! and the time as Kubernetes writes it.

use kro_runtime::ObjectKey;
use serde_json::{Value as Json, json};

/// A string field of `object` by JSON pointer, empty when absent or not a string.
///
/// ```
/// let object = serde_json::json!({"metadata": {"name": "web"}});
/// assert_eq!(kro_engine::json::text(&object, "/metadata/name"), "web");
/// assert_eq!(kro_engine::json::text(&object, "/metadata/uid"), "");
/// ```
pub fn text<'a>(object: &'a Json, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Json::as_str)
        .unwrap_or_default()
}

/// Now, as Kubernetes writes times (RFC 3339, seconds, `Z`).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Now, as the instant `time.now()` reads.
pub fn now_timestamp() -> kro_cel::Timestamp {
    let now = chrono::Utc::now();
    kro_cel::Timestamp::new(now.timestamp(), now.timestamp_subsec_nanos())
        .unwrap_or(kro_cel::Timestamp::UNIX_EPOCH)
}

/// `object` as the plan asked for it by `key`: a cluster-scoped object the plan took for
/// namespaced (its kind's scope unknown) comes back without the namespace, and is filed under
/// the key asked for, so that it is not read or applied again and again.
pub(crate) fn filed_as(key: &ObjectKey, mut object: Json) -> Json {
    if let Some(namespace) = &key.namespace
        && text(&object, "/metadata/namespace").is_empty()
        && let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut)
    {
        metadata.insert("namespace".to_owned(), json!(namespace));
    }
    object
}
