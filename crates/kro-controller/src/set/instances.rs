//! The requests a `<Kind>Set` makes of its instances: create one from the template (named
//! `<set>-<5 random characters>`, owned by the Set), update one to the template, delete one
//! (with its UID as a precondition), and set an instance's owners.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kro_graph::metadata::{SET_MANAGER, SET_NAME_LABEL, SET_TEMPLATE_HASH_LABEL};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value as Json, json};

use super::{MAX_NAME_PREFIX, NAME_ATTEMPTS, SetController, Written, random_suffix, template_spec};
use crate::error::{ReconcileError, Request};
use crate::events::EventType;
use crate::object::Object;
use crate::object_json::merge_patch;
use crate::set_plan::SetSpec;
use crate::shared::Shared;

impl SetController {
    pub(super) fn owner_reference(&self, set: &Object) -> Json {
        json!({
            "apiVersion": self.kind.resource.api_version,
            "kind": self.kind.resource.kind,
            "name": set.name(),
            "uid": set.uid(),
            "controller": true,
            "blockOwnerDeletion": true,
        })
    }

    pub(super) async fn patch_owners(
        &self,
        instance: &ObjectMeta,
        instances: &Api<DynamicObject>,
        owners: Vec<Json>,
    ) -> Result<(), ReconcileError> {
        let patch = json!({"metadata": {
            "ownerReferences": owners,
            "resourceVersion": instance.resource_version,
        }});
        instances
            .patch(
                instance.name.as_deref().unwrap_or_default(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(ReconcileError::api(Request::WriteSetInstance))?;
        Ok(())
    }

    pub(super) async fn create_instance(
        &self,
        shared: &Shared,
        set: &Object,
        spec: &SetSpec,
        instances: &Api<DynamicObject>,
    ) -> Result<Written, ReconcileError> {
        let set_name = set.name();
        let prefix: String = set_name.chars().take(MAX_NAME_PREFIX).collect();
        let mut last = None;
        for _ in 0..NAME_ATTEMPTS {
            let name = format!("{prefix}-{}", random_suffix());
            let mut metadata = json!({
                "name": name,
                "labels": {SET_NAME_LABEL: set_name, SET_TEMPLATE_HASH_LABEL: spec.template_hash},
                "ownerReferences": [self.owner_reference(set)],
            });
            if let Some(namespace) = &set.meta().namespace {
                metadata["namespace"] = json!(namespace);
            }
            let instance = json!({
                "apiVersion": self.instance_kind.resource.api_version,
                "kind": self.instance_kind.resource.kind,
                "metadata": metadata,
                "spec": template_spec(set),
            });
            let instance: DynamicObject =
                serde_json::from_value(instance).map_err(ReconcileError::Json)?;
            let params = PostParams {
                field_manager: Some(SET_MANAGER.to_owned()),
                ..PostParams::default()
            };
            match instances.create(&params, &instance).await {
                Ok(created) => {
                    shared
                        .events
                        .record(
                            set,
                            EventType::Normal,
                            "SuccessfulCreate",
                            &format!("created instance {name}"),
                        )
                        .await;
                    shared
                        .events
                        .record(
                            &Object::new(&created)?,
                            EventType::Normal,
                            "CreatedBySet",
                            &format!("created by {} {set_name}", self.kind.resource.kind),
                        )
                        .await;
                    return Ok(Written::Yes(name));
                }
                Err(kube::Error::Api(status)) if status.code == 409 => last = Some(status),
                Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
                    return Ok(self.refused(shared, set, "FailedCreate", &status).await);
                }
                Err(error) => return Err(ReconcileError::api(Request::WriteSetInstance)(error)),
            }
        }
        Err(ReconcileError::api(Request::WriteSetInstance)(
            kube::Error::Api(last.unwrap_or_default()),
        ))
    }

    pub(super) async fn update_instance(
        &self,
        shared: &Shared,
        set: &Object,
        spec: &SetSpec,
        instances: &Api<DynamicObject>,
        name: &str,
    ) -> Result<Written, ReconcileError> {
        let Some(instance) = self.instances.get(&self.instance_ref(set, name)) else {
            return Ok(Written::Yes(name.to_owned()));
        };
        let instance = Object::new(&instance)?;
        let current = instance
            .json()
            .get("spec")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut patch = json!({"metadata": {
            "labels": {SET_TEMPLATE_HASH_LABEL: spec.template_hash},
            "resourceVersion": instance.resource_version(),
        }});
        if let Some(changes) = merge_patch(&current, &template_spec(set)) {
            patch["spec"] = changes;
        }
        let params = PatchParams {
            field_manager: Some(SET_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        match instances.patch(name, &params, &Patch::Merge(&patch)).await {
            Ok(updated) => {
                shared
                    .events
                    .record(
                        &Object::new(&updated)?,
                        EventType::Normal,
                        "UpdatedBySet",
                        &format!(
                            "updated to the template of {} {}",
                            self.kind.resource.kind,
                            set.name()
                        ),
                    )
                    .await;
                shared
                    .events
                    .record(
                        set,
                        EventType::Normal,
                        "SuccessfulUpdate",
                        &format!("updated instance {name} to the current template"),
                    )
                    .await;
                Ok(Written::Yes(name.to_owned()))
            }
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
                Ok(self.refused(shared, set, "FailedUpdate", &status).await)
            }
            Err(error) => Err(ReconcileError::api(Request::WriteSetInstance)(error)),
        }
    }

    pub(super) async fn delete_instance(
        &self,
        shared: &Shared,
        set: &Object,
        instances: &Api<DynamicObject>,
        name: &str,
    ) -> Result<(), ReconcileError> {
        let params = DeleteParams {
            preconditions: None::<Preconditions>,
            ..DeleteParams::background()
        };
        let instance = self.instances.get(&self.instance_ref(set, name));
        match instances.delete(name, &params).await {
            Ok(_) => {
                if let Some(instance) = instance {
                    let message = format!(
                        "deleted by {} {}: scaled down, newest first",
                        self.kind.resource.kind,
                        set.name()
                    );
                    shared
                        .events
                        .record(
                            &Object::new(&instance)?,
                            EventType::Normal,
                            "DeletedBySet",
                            &message,
                        )
                        .await;
                }
                shared
                    .events
                    .record(
                        set,
                        EventType::Normal,
                        "SuccessfulDelete",
                        &format!("deleted instance {name}"),
                    )
                    .await;
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(ReconcileError::api(Request::WriteSetInstance)(error)),
        }
    }
}
