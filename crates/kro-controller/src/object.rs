//! An object as the controllers hold it while reconciling: its metadata typed, as
//! `ObjectMeta`, and the whole object as JSON for what reads its body (the planner, the
//! status comparison). Both come from the same answer of the server and are replaced together.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde_json::Value as Json;

use crate::error::ReconcileError;

/// An object read from a cache or answered by a write.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    meta: ObjectMeta,
    json: Json,
}

impl Object {
    /// The object `answer` (from a watch cache or a write).
    pub(crate) fn new(answer: &DynamicObject) -> Result<Object, ReconcileError> {
        Ok(Object {
            meta: answer.metadata.clone(),
            json: serde_json::to_value(answer).map_err(ReconcileError::Json)?,
        })
    }

    /// Its metadata.
    pub(crate) fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    /// The whole object as JSON (read bodies here, metadata through [`Object::meta`]).
    pub(crate) fn json(&self) -> &Json {
        &self.json
    }

    /// `metadata.uid` (empty when the server has not given one).
    pub(crate) fn uid(&self) -> &str {
        self.meta.uid.as_deref().unwrap_or_default()
    }

    /// `metadata.name`.
    pub(crate) fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace` (empty for a cluster-scoped object).
    pub(crate) fn namespace(&self) -> &str {
        self.meta.namespace.as_deref().unwrap_or_default()
    }

    /// `metadata.resourceVersion` (empty when the server has not given one).
    pub(crate) fn resource_version(&self) -> &str {
        self.meta.resource_version.as_deref().unwrap_or_default()
    }

    /// `metadata.generation` (0 when the server keeps none).
    pub(crate) fn generation(&self) -> i64 {
        self.meta.generation.unwrap_or(0)
    }

    /// `metadata.finalizers` other than `finalizer`, in order.
    pub(crate) fn finalizers_without(&self, finalizer: &str) -> Vec<&str> {
        self.meta
            .finalizers
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|held| *held != finalizer)
            .collect()
    }

    /// Whether the object is being deleted (`metadata.deletionTimestamp` is set).
    pub(crate) fn is_deleting(&self) -> bool {
        self.meta.deletion_timestamp.is_some()
    }

    /// Whether `metadata.finalizers` holds `finalizer`.
    pub(crate) fn has_finalizer(&self, finalizer: &str) -> bool {
        self.meta
            .finalizers
            .iter()
            .flatten()
            .any(|held| held == finalizer)
    }

    /// The label `key`.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.meta.labels.as_ref()?.get(key).map(String::as_str)
    }

    /// The annotation `key`.
    pub(crate) fn annotation(&self, key: &str) -> Option<&str> {
        self.meta.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ApiResource;

    #[test]
    fn metadata_is_read_typed_and_the_body_as_json() {
        let resource = ApiResource {
            group: "kro.run".to_owned(),
            version: "v1alpha1".to_owned(),
            api_version: "kro.run/v1alpha1".to_owned(),
            kind: "App".to_owned(),
            plural: "apps".to_owned(),
        };
        let mut answer = DynamicObject::new("web", &resource).within("default");
        answer.metadata.uid = Some("u-1".to_owned());
        answer.metadata.finalizers = Some(vec!["kro.run/finalizer".to_owned()]);
        answer.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        answer.data = serde_json::json!({"spec": {"replicas": 2}});
        let object = Object::new(&answer).unwrap();
        assert_eq!(
            (object.name(), object.namespace(), object.uid()),
            ("web", "default", "u-1")
        );
        assert!(object.has_finalizer("kro.run/finalizer"));
        assert!(!object.has_finalizer("other"));
        assert_eq!(object.label("team"), Some("a"));
        assert_eq!(object.annotation("team"), None);
        assert!(!object.is_deleting());
        assert_eq!(object.resource_version(), "");
        assert_eq!(object.json()["spec"]["replicas"], 2);
    }
}
