//! CustomResourceDefinitions: checking them, accepting their names, serving their custom
//! resources at once (validated, defaulted and pruned against the version's schema), and
//! deleting their instances when a definition is deleted.
//!
//! kube-apiserver does the acceptance and the cleanup in controllers that run moments after a
//! write; here they run right after the write that needs them, as separate writes with their
//! own resourceVersions, so clients see the same sequence of objects and events sooner.

mod cost;
mod names;
mod rules;
mod scale;
mod selectable;
mod validation;

use std::sync::Arc;

use kro_schema::{Gvk, Schema, ValidationConfig, Validator};
use serde_json::{Value, json};

use crate::objects::{self, meta_str};
use crate::registry::{CustomResource, PrinterColumn, ResourceType, ScalePaths, Subresource};
use crate::state::AppState;
use crate::storage::{Mutation, ObjectKey};

use self::names::{Names, names_of, strings, text};
pub(crate) use self::scale::{label_selector_text, read_path, scale_of, write_path};
pub(crate) use self::validation::validate;

/// The finalizer that holds a deleted definition until its custom resources are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const GROUP: &str = "apiextensions.k8s.io";

const PLURAL: &str = "customresourcedefinitions";

/// Whether `resource` is the CustomResourceDefinition resource itself.
pub(crate) fn is_crd(resource: &ResourceType) -> bool {
    resource.group() == GROUP && resource.plural == PLURAL
}

/// Fills in the defaults of the spec as the API server does: `spec.names` (singular,
/// listKind) and `spec.conversion` (`strategy: None`).
pub(crate) fn default_spec(object: &mut Value) {
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        let conversion = spec.entry("conversion").or_insert_with(|| json!({}));
        if let Some(conversion) = conversion.as_object_mut() {
            conversion
                .entry("strategy")
                .or_insert_with(|| json!("None"));
        }
    }
    let names = names_of(&object["spec"]["names"]);
    if let Some(map) = object
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
    {
        if !names.singular.is_empty() {
            map.insert("singular".to_owned(), json!(names.singular));
        }
        if !names.list_kind.is_empty() {
            map.insert("listKind".to_owned(), json!(names.list_kind));
        }
    }
}

/// The version marked for storage.
fn storage_version(object: &Value) -> Option<String> {
    object["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|version| version["storage"] == json!(true))
        .and_then(|version| version["name"].as_str())
        .map(str::to_owned)
}

/// The status of a new definition before its names are accepted, as kube-apiserver returns
/// it from the create.
pub(crate) fn initial_status(object: &mut Value) {
    let stored: Vec<String> = storage_version(object).into_iter().collect();
    // `conditions` is a Go slice without omitempty: a new definition has it as null.
    object["status"] = json!({
        "acceptedNames": {"kind": "", "plural": ""},
        "conditions": null,
        "storedVersions": stored,
    });
}

/// On update: the storage version joins `status.storedVersions`.
pub(crate) fn carry_stored_versions(object: &mut Value) {
    let Some(storage) = storage_version(object) else {
        return;
    };
    let mut stored = strings(&object["status"]["storedVersions"]);
    if !stored.contains(&storage) {
        stored.push(storage);
    }
    if !object.get("status").is_some_and(Value::is_object) {
        object["status"] = json!({"acceptedNames": {"kind": "", "plural": ""}});
    }
    object["status"]["storedVersions"] = json!(stored);
}

fn condition(
    condition_type: &str,
    status: &str,
    reason: &str,
    message: &str,
    previous: &Value,
) -> Value {
    // The transition time moves only when the status does.
    let since = previous["conditions"]
        .as_array()
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c["type"] == condition_type && c["status"] == status)
        })
        .and_then(|c| c["lastTransitionTime"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(objects::now);
    json!({
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    })
}

/// The names of `names` that no other definition of the group has accepted, and the reason
/// of the last conflict, checked in kube-apiserver's order (plural, singular, short names,
/// kind, list kind; a later conflict's reason wins).
fn accept_names(names: &Names, others: &[Names]) -> (Value, Option<(&'static str, String)>) {
    let mut accepted = json!({"plural": "", "kind": ""});
    let mut conflict = None;
    let in_use = |value: &str| Some(format!("\"{value}\" is already in use"));
    if others.iter().any(|other| other.plural == names.plural) {
        conflict = in_use(&names.plural).map(|message| ("PluralConflict", message));
    } else {
        accepted["plural"] = json!(names.plural);
    }
    if others.iter().any(|other| other.singular == names.singular) {
        conflict = in_use(&names.singular).map(|message| ("SingularConflict", message));
    } else {
        accepted["singular"] = json!(names.singular);
    }
    let taken = names
        .short_names
        .iter()
        .find(|short| others.iter().any(|other| other.short_names.contains(short)));
    match taken {
        Some(short) => {
            conflict = in_use(short).map(|message| ("ShortNamesConflict", message));
        }
        None if !names.short_names.is_empty() => {
            accepted["shortNames"] = json!(names.short_names);
        }
        None => {}
    }
    if others.iter().any(|other| other.kind == names.kind) {
        conflict = in_use(&names.kind).map(|message| ("KindConflict", message));
    } else {
        accepted["kind"] = json!(names.kind);
    }
    if others
        .iter()
        .any(|other| other.list_kind == names.list_kind)
    {
        conflict = in_use(&names.list_kind).map(|message| ("ListKindConflict", message));
    } else {
        accepted["listKind"] = json!(names.list_kind);
    }
    if !names.categories.is_empty() {
        accepted["categories"] = json!(names.categories);
    }
    (accepted, conflict)
}

fn crd_key(name: &str) -> ObjectKey {
    ObjectKey::new(GROUP, PLURAL, "", name)
}

/// Brings the server in line with definition `name` after a write to it: accepts its names
/// (a status write), serves or stops serving its versions, and for a deleted definition
/// deletes its custom resources and then releases it.
pub(crate) async fn reconcile(state: &AppState, name: &str) {
    let Some(object) = state.store.get(&crd_key(name)) else {
        stop_serving(state, name);
        return;
    };
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        clean_up(state, name, &object).await;
        return;
    }
    let spec = &object["spec"];
    let group = text(spec, "/group");
    let wanted = names_of(&spec["names"]);
    let others: Vec<Names> = state
        .store
        .list(GROUP, PLURAL, None, false)
        .objects
        .iter()
        .filter(|other| meta_str(other, "name") != Some(name))
        .filter(|other| text(other, "/spec/group") == group)
        .map(|other| names_of(&other["status"]["acceptedNames"]))
        .collect();
    let status = &object["status"];
    let (accepted, conflict) = accept_names(&wanted, &others);
    let mut new_status = status.clone();
    let (names_condition, established) = match &conflict {
        None => (
            condition(
                "NamesAccepted",
                "True",
                "NoConflicts",
                "no conflicts found",
                status,
            ),
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                status,
            ),
        ),
        Some((reason, message)) => (
            condition("NamesAccepted", "False", reason, message, status),
            condition(
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
                status,
            ),
        ),
    };
    new_status["acceptedNames"] = accepted;
    new_status["conditions"] = json!([names_condition, established]);
    if new_status != *status {
        let _ = state
            .store
            .mutate(&crd_key(name), |current| {
                let Some(current) = current else {
                    return Err(crate::ApiError::not_found(GROUP, PLURAL, name));
                };
                let mut updated = Value::clone(current);
                updated["status"] = new_status.clone();
                record_status_write(current, &mut updated)?;
                Ok(Mutation::Put(updated))
            })
            .await;
    }
    if conflict.is_none() {
        serve(state, name);
    }
}

/// Records the server's own status write in the definition's managed fields, as
/// kube-apiserver's naming controller appears there (`kube-apiserver`, `Update`, `status`).
fn record_status_write(current: &Value, updated: &mut Value) -> Result<(), crate::ApiError> {
    let gvk = kro_schema::Gvk::new(GROUP, "v1", "CustomResourceDefinition");
    let writer = crate::managed::Writer {
        manager: "kube-apiserver",
        api_version: "apiextensions.k8s.io/v1",
        endpoint: crate::managed::Endpoint::Status,
    };
    crate::managed::record_update(
        Some(current),
        updated,
        crate::managed::Shape::of_kind(&gvk, None),
        &writer,
    )
}

/// The resource types a definition serves.
fn resource_types(object: &Value) -> Vec<ResourceType> {
    let name = meta_str(object, "name").unwrap_or_default().to_owned();
    let revision = meta_str(object, "resourceVersion")
        .unwrap_or_default()
        .to_owned();
    let spec = &object["spec"];
    let group = text(spec, "/group");
    let names = names_of(&spec["names"]);
    let namespaced = text(spec, "/scope") != "Cluster";
    let mut types = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"] != json!(true) {
            continue;
        }
        let version_name = text(version, "/name");
        let gvk = Gvk::new(&group, &version_name, &names.kind);
        let schema: Schema = serde_json::from_value(version["schema"]["openAPIV3Schema"].clone())
            .unwrap_or_else(|_| Schema {
                x_kubernetes_preserve_unknown_fields: Some(true),
                ..Schema::of_type("object")
            });
        let validator = Validator::with_config(
            &schema,
            ValidationConfig::default().with_resource_root(true),
        );
        let mut subresources = Vec::new();
        let verbs: Vec<String> = ["get", "patch", "update"]
            .iter()
            .map(|verb| (*verb).to_owned())
            .collect();
        if version.pointer("/subresources/status").is_some() {
            subresources.push(Subresource {
                name: "status".to_owned(),
                response_kind: gvk.clone(),
                verbs: verbs.clone(),
            });
        }
        let scale = version
            .pointer("/subresources/scale")
            .map(|scale| ScalePaths {
                spec_replicas: text(scale, "/specReplicasPath"),
                status_replicas: text(scale, "/statusReplicasPath"),
                label_selector: scale["labelSelectorPath"].as_str().map(str::to_owned),
            });
        if scale.is_some() {
            subresources.push(Subresource {
                name: "scale".to_owned(),
                response_kind: Gvk::new("autoscaling", "v1", "Scale"),
                verbs,
            });
        }
        let columns = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|column| PrinterColumn {
                name: text(column, "/name"),
                column_type: text(column, "/type"),
                format: text(column, "/format"),
                description: text(column, "/description"),
                priority: column["priority"].as_i64().unwrap_or(0),
                json_path: text(column, "/jsonPath"),
            })
            .collect();
        types.push(ResourceType {
            gvk,
            plural: names.plural.clone(),
            singular: names.singular.clone(),
            namespaced,
            verbs: [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
            .iter()
            .map(|verb| (*verb).to_owned())
            .collect(),
            short_names: names.short_names.clone(),
            categories: names.categories.clone(),
            subresources,
            custom: Some(Arc::new(CustomResource {
                crd_name: name.clone(),
                schema,
                validator,
                scale,
                columns,
                selectable_fields: selectable::selectable_field_names(version),
                revision: revision.clone(),
            })),
        });
    }
    types
}

/// Serves the definition's versions (replacing what it served before).
fn serve(state: &AppState, name: &str) {
    let Some(object) = state.store.get(&crd_key(name)) else {
        return;
    };
    let types = resource_types(&object);
    stop_serving(state, name);
    let mut registry = state.registry_mut();
    for resource in types {
        state.forget_openapi(resource.group(), resource.gvk.version());
        registry.insert(resource);
    }
}

/// Stops serving every version of definition `name`.
fn stop_serving(state: &AppState, name: &str) {
    let mut registry = state.registry_mut();
    let served: Vec<(String, String, String)> = registry
        .resources()
        .filter(|resource| {
            resource
                .custom
                .as_ref()
                .is_some_and(|custom| custom.crd_name == name)
        })
        .map(|resource| {
            (
                resource.group().to_owned(),
                resource.gvk.version().to_owned(),
                resource.plural.clone(),
            )
        })
        .collect();
    for (group, version, plural) in served {
        registry.remove(&group, &version, &plural);
        state.forget_openapi(&group, &version);
    }
}

/// Whether definition `crd_name` is being deleted (its resources take no new objects).
pub(crate) fn is_terminating(state: &AppState, crd_name: &str) -> bool {
    state
        .store
        .get(&crd_key(crd_name))
        .is_some_and(|object| object.pointer("/metadata/deletionTimestamp").is_some())
}

/// Deletes the custom resources of a deleted definition; when none is left, removes the
/// cleanup finalizer, which deletes the definition.
async fn clean_up(state: &AppState, name: &str, object: &Value) {
    let group = text(&object["spec"], "/group");
    let plural = text(&object["spec"], "/names/plural");
    let terminating = condition(
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        &object["status"],
    );
    let listed = state.store.list(&group, &plural, None, false);
    for instance in listed.objects.iter() {
        let key = ObjectKey::new(
            &group,
            &plural,
            meta_str(instance, "namespace").unwrap_or_default(),
            meta_str(instance, "name").unwrap_or_default(),
        );
        let _ = state
            .store
            .mutate(&key, |current| {
                let Some(current) = current else {
                    return Err(crate::ApiError::not_found(&group, &plural, ""));
                };
                if objects::finalizers(current).is_empty() {
                    return Ok(Mutation::Delete);
                }
                let mut marked = Value::clone(current);
                if marked.pointer("/metadata/deletionTimestamp").is_none() {
                    objects::mark_deleting(&mut marked);
                }
                Ok(Mutation::Put(marked))
            })
            .await;
    }
    let remaining = state.store.list(&group, &plural, None, false).objects.len();
    let _ = state
        .store
        .mutate(&crd_key(name), |current| {
            let Some(current) = current else {
                return Err(crate::ApiError::not_found(GROUP, PLURAL, name));
            };
            let mut updated = Value::clone(current);
            let mut conditions: Vec<Value> = updated["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "Terminating");
            if remaining == 0 {
                conditions.push(condition(
                    "Terminating",
                    "False",
                    "InstanceDeletionCompleted",
                    "removed all instances",
                    &json!({}),
                ));
                let finalizers: Vec<String> = objects::finalizers(&updated)
                    .into_iter()
                    .filter(|finalizer| finalizer != CLEANUP_FINALIZER)
                    .collect();
                if finalizers.is_empty() {
                    return Ok(Mutation::Delete);
                }
                objects::metadata_mut(&mut updated)
                    .insert("finalizers".to_owned(), json!(finalizers));
            } else {
                conditions.push(terminating.clone());
            }
            updated["status"]["conditions"] = json!(conditions);
            Ok(Mutation::Put(updated))
        })
        .await;
    if state.store.get(&crd_key(name)).is_none() {
        stop_serving(state, name);
        // Names it held may now be free for another definition of the group.
        let waiting: Vec<String> = state
            .store
            .list(GROUP, PLURAL, None, false)
            .objects
            .iter()
            .filter(|other| text(other, "/spec/group") == group)
            .filter(|other| other.pointer("/metadata/deletionTimestamp").is_none())
            .filter_map(|other| meta_str(other, "name").map(str::to_owned))
            .collect();
        for other in waiting {
            Box::pin(reconcile(state, &other)).await;
        }
    }
}

/// After an instance of a terminating definition went away: the definition may be released.
pub(crate) async fn instance_deleted(state: &AppState, resource: &ResourceType) {
    if let Some(custom) = &resource.custom
        && is_terminating(state, &custom.crd_name)
    {
        reconcile(state, &custom.crd_name).await;
    }
}

/// Marks a definition deleted as kube-apiserver's definition registry does: the cleanup
/// finalizer holds it until its instances are gone, the deletionTimestamp is set (without a
/// grace period or a generation bump) and the Terminating condition says deletion is pending.
pub(crate) fn hold_for_cleanup(object: &mut Value) {
    let mut finalizers = objects::finalizers(object);
    if !finalizers
        .iter()
        .any(|finalizer| finalizer == CLEANUP_FINALIZER)
    {
        finalizers.push(CLEANUP_FINALIZER.to_owned());
        objects::metadata_mut(object).insert("finalizers".to_owned(), json!(finalizers));
    }
    objects::metadata_mut(object)
        .entry("deletionTimestamp")
        .or_insert_with(|| json!(objects::now()));
    let pending = condition(
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        &object["status"],
    );
    let mut conditions: Vec<Value> = object["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|existing| existing["type"] != "Terminating");
    conditions.push(pending);
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        status.insert("conditions".to_owned(), json!(conditions));
    }
}

#[cfg(test)]
mod tests;
