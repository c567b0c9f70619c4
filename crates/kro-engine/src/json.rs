//! JSON views of Kubernetes objects shared by the engine's drivers: string fields by pointer
//! and the time as Kubernetes writes it.

use serde_json::Value as Json;

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
