//! The apply engine: server-side apply of one level's desired objects, concurrently (bounded),
//! with force as `kro.run/applyset`; and the memory of what was last applied, so that an object
//! whose intent is unchanged and which nobody else has touched is not applied again.

use std::hash::{DefaultHasher, Hash, Hasher};

use futures_util::{StreamExt, stream};
use kro_runtime::{DesiredObject, ObjectKey};
use kube::api::{Patch, PatchParams};
use serde_json::Value as Json;

use crate::instance::GraphVersion;
use crate::kinds::{KindError, ServedKind};
use crate::manager::Shared;
use crate::object_json::text;

/// The field manager of the objects kro applies.
pub const APPLY_MANAGER: &str = "kro.run/applyset";

/// Why an object could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The server does not serve the object's kind.
    #[error(transparent)]
    Kind(KindError),
    /// The server refused the apply (or could not be reached).
    #[error(transparent)]
    Api(kube::Error),
    /// The server's answer cannot be represented as JSON (a bug).
    #[error("the applied object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

impl ApplyError {
    /// A stable CamelCase reason (for logs, events and metric labels).
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::Kind(_) => "KindNotServed",
            ApplyError::Api(_) => "ApplyFailed",
            ApplyError::Json(_) => "InternalError",
        }
    }
}

/// What kro last applied of one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Applied {
    pub(crate) intent: u64,
    pub(crate) uid: String,
    pub(crate) fields: Option<Json>,
}

/// Applies `batch` concurrently (bounded); each object's answer or error.
pub(crate) async fn apply(
    shared: &Shared,
    graph: &GraphVersion,
    batch: &[DesiredObject],
) -> Vec<(DesiredObject, Result<Json, ApplyError>)> {
    let params = PatchParams::apply(APPLY_MANAGER).force();
    let applies = batch.iter().cloned().map(|desired| {
        let params = params.clone();
        async move {
            let outcome = async {
                let kind = served(shared, graph, &desired.key, &desired.object)
                    .await
                    .map_err(ApplyError::Kind)?;
                let object = kind
                    .api(&shared.client, desired.key.namespace.as_deref())
                    .patch(&desired.key.name, &params, &Patch::Apply(&desired.object))
                    .await
                    .map_err(ApplyError::Api)?;
                serde_json::to_value(&object).map_err(ApplyError::Json)
            }
            .await;
            (desired, outcome)
        }
    });
    stream::iter(applies)
        .buffer_unordered(shared.settings.apply_concurrency.max(1))
        .collect()
        .await
}

/// The served kind of an object the graph creates.
async fn served(
    shared: &Shared,
    graph: &GraphVersion,
    key: &ObjectKey,
    object: &Json,
) -> Result<ServedKind, KindError> {
    if let Some((kind, _)) = graph.children.get(&(key.group.clone(), key.kind.clone())) {
        return Ok(kind.clone());
    }
    let api_version = text(object, "/apiVersion");
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    shared.kinds.resolve(&key.group, version, &key.kind).await
}

/// Whether an object must be applied: kro has no record of applying this intent to this
/// object, or someone else changed the fields kro owns since.
pub(crate) fn needs_apply(record: Option<&Applied>, intent: u64, current: Option<&Json>) -> bool {
    let (Some(record), Some(current)) = (record, current) else {
        return true;
    };
    record.intent != intent
        || text(current, "/metadata/uid") != record.uid
        || owned_fields(current) != record.fields.as_ref()
}

/// The fields kro's apply manager owns on an object.
pub(crate) fn owned_fields(object: &Json) -> Option<&Json> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Json::as_array)?
        .iter()
        .find(|entry| entry["manager"] == APPLY_MANAGER && entry["operation"] == "Apply")
        .and_then(|entry| entry.get("fieldsV1"))
}

/// A fingerprint of a desired object.
pub(crate) fn intent(object: &Json) -> u64 {
    let mut hasher = DefaultHasher::new();
    object.to_string().hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_is_applied_again_only_when_its_intent_or_owned_fields_changed() {
        let object = json!({
            "metadata": {"uid": "u1", "managedFields": [
                {"manager": APPLY_MANAGER, "operation": "Apply", "fieldsV1": {"f:data": {}}},
                {"manager": "someone", "operation": "Update", "fieldsV1": {"f:x": {}}},
            ]}
        });
        let record = Applied {
            intent: 7,
            uid: "u1".to_owned(),
            fields: Some(json!({"f:data": {}})),
        };
        assert!(!needs_apply(Some(&record), 7, Some(&object)));
        assert!(needs_apply(Some(&record), 8, Some(&object)), "new intent");
        assert!(needs_apply(None, 7, Some(&object)), "never applied");
        assert!(needs_apply(Some(&record), 7, None), "gone");
        let mut taken = object.clone();
        taken["metadata"]["managedFields"][0]["fieldsV1"] = json!({});
        assert!(needs_apply(Some(&record), 7, Some(&taken)), "drifted");
        let mut recreated = object;
        recreated["metadata"]["uid"] = json!("u2");
        assert!(needs_apply(Some(&record), 7, Some(&recreated)), "recreated");
    }
}
