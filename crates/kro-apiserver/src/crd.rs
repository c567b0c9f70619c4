//! CustomResourceDefinitions: checking them, accepting their names, serving their custom
//! resources at once (validated, defaulted and pruned against the version's schema), and
//! deleting their instances when a definition is deleted.
//!
//! kube-apiserver does the acceptance and the cleanup in controllers that run moments after a
//! write; here they run right after the write that needs them, as separate writes with their
//! own resourceVersions, so clients see the same sequence of objects and events sooner.

use std::sync::Arc;

use kro_schema::{BadValue, FieldError, FieldPath, Gvk, Schema, ValidationConfig, Validator};
use serde_json::{Value, json};

use crate::objects::{self, meta_str};
use crate::registry::{CustomResource, PrinterColumn, ResourceType, ScalePaths, Subresource};
use crate::state::AppState;
use crate::storage::{Mutation, ObjectKey};

/// The finalizer that holds a deleted definition until its custom resources are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";

/// Whether `resource` is the CustomResourceDefinition resource itself.
pub(crate) fn is_crd(resource: &ResourceType) -> bool {
    resource.group() == GROUP && resource.plural == PLURAL
}

/// The names a definition asks for (`spec.names`), with the defaults Kubernetes fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names {
    plural: String,
    singular: String,
    kind: String,
    list_kind: String,
    short_names: Vec<String>,
    categories: Vec<String>,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn names_of(names: &Value) -> Names {
    let kind = text(names, "/kind");
    let singular = match text(names, "/singular") {
        empty if empty.is_empty() => kind.to_ascii_lowercase(),
        singular => singular,
    };
    let list_kind = match text(names, "/listKind") {
        empty if empty.is_empty() && !kind.is_empty() => format!("{kind}List"),
        list_kind => list_kind,
    };
    Names {
        plural: text(names, "/plural"),
        singular,
        kind,
        list_kind,
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
    }
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

fn is_dns1035_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
}

/// Go syntax (`%#v`) of a string list: `[]string{"v1"}`, `[]string(nil)` when empty, as a
/// server-set list that was never filled is.
fn go_strings(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_owned();
    }
    let quoted: Vec<String> = values
        .iter()
        .map(|value| kro_schema::go_quote(value))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `spec.versions` as kube-apiserver prints it in messages: Go syntax of its internal version
/// type. The schema, subresources, columns and selectable fields that every version shares
/// are held by the internal spec, so the versions show them as nil; where versions differ, Go
/// would print a memory address, written here as `0xc000000000`.
fn go_versions(versions: Option<&Value>) -> String {
    const TYPE: &str = "apiextensions.CustomResourceDefinitionVersion";
    let Some(Value::Array(versions)) = versions else {
        return format!("[]{TYPE}(nil)");
    };
    let shared = |field: &str| {
        versions
            .windows(2)
            .all(|pair| pair[0].get(field) == pair[1].get(field))
    };
    let pointer = |version: &Value, field: &str, type_name: &str| {
        if version.get(field).is_none_or(Value::is_null) || shared(field) {
            format!("(*{type_name})(nil)")
        } else {
            format!("(*{type_name})(0xc000000000)")
        }
    };
    let list = |version: &Value, field: &str, type_name: &str| match version
        .get(field)
        .and_then(Value::as_array)
    {
        Some(items) if !items.is_empty() && !shared(field) => {
            format!("[]{type_name}{{...}}")
        }
        _ => format!("[]{type_name}(nil)"),
    };
    let rendered: Vec<String> = versions
        .iter()
        .map(|version| {
            let flag = |field: &str| version[field].as_bool().unwrap_or(false);
            let warning = if version.get("deprecationWarning").is_some_and(Value::is_string) {
                "(*string)(0xc000000000)"
            } else {
                "(*string)(nil)"
            };
            format!(
                "{TYPE}{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{warning}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
                kro_schema::go_quote(version["name"].as_str().unwrap_or_default()),
                flag("served"),
                flag("storage"),
                flag("deprecated"),
                pointer(version, "schema", "apiextensions.CustomResourceValidation"),
                pointer(version, "subresources", "apiextensions.CustomResourceSubresources"),
                list(
                    version,
                    "additionalPrinterColumns",
                    "apiextensions.CustomResourceColumnDefinition"
                ),
                list(version, "selectableFields", "apiextensions.SelectableField"),
            )
        })
        .collect();
    format!("[]{TYPE}{{{}}}", rendered.join(", "))
}

const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Checks a definition beyond its OpenAPI schema, with kube-apiserver's messages where they
/// are known.
pub(crate) fn validate(object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &object["spec"];
    let spec_path = FieldPath::new("spec");
    let group = text(spec, "/group");
    let names = names_of(&spec["names"]);
    let name = meta_str(object, "name").unwrap_or_default();
    if name != format!("{}.{group}", names.plural) {
        errors.push(FieldError::invalid(
            FieldPath::new("metadata").child("name"),
            BadValue::text(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errors.push(FieldError::required(spec_path.child("group"), ""));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            spec_path.child("group"),
            BadValue::text(&group),
            "should be a domain with at least one dot",
        ));
    }
    let scope = text(spec, "/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        errors.push(FieldError::not_supported(
            spec_path.child("scope"),
            BadValue::text(&scope),
            &["Cluster".to_owned(), "Namespaced".to_owned()],
        ));
    }
    let names_path = spec_path.child("names");
    for (field, value) in [("plural", &names.plural), ("singular", &names.singular)] {
        if value.is_empty() {
            errors.push(FieldError::required(names_path.child(field), ""));
        } else if !is_dns1035_label(value) {
            errors.push(FieldError::invalid(
                names_path.child(field),
                BadValue::text(value),
                DNS1035_MESSAGE,
            ));
        }
    }
    if names.kind.is_empty() {
        errors.push(FieldError::required(names_path.child("kind"), ""));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let versions_path = spec_path.child("versions");
    if versions
        .iter()
        .filter(|version| version["storage"] == json!(true))
        .count()
        != 1
    {
        errors.push(FieldError::invalid(
            versions_path.clone(),
            BadValue::GoSyntax(go_versions(spec.get("versions"))),
            "must have exactly one version marked as storage version",
        ));
    }
    let schemas: Vec<&Value> = versions
        .iter()
        .map(|version| &version["schema"]["openAPIV3Schema"])
        .collect();
    let shared = schemas.windows(2).all(|pair| pair[0] == pair[1]);
    for (index, version) in versions.iter().enumerate() {
        let version_path = versions_path.index(index);
        let version_name = text(version, "/name");
        if !is_dns1035_label(&version_name) {
            errors.push(FieldError::invalid(
                version_path.child("name"),
                BadValue::text(&version_name),
                DNS1035_MESSAGE,
            ));
        }
        let schema = &version["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            errors.push(FieldError::required(
                version_path.child("schema").child("openAPIV3Schema"),
                "schemas are required",
            ));
        } else if index == 0 || !shared {
            // Kubernetes reports a schema shared by every version under spec.validation.
            let path = if shared {
                spec_path.child("validation").child("openAPIV3Schema")
            } else {
                version_path.child("schema").child("openAPIV3Schema")
            };
            structural_errors(schema, &path, true, 0, &mut errors);
            if let Err(error) = serde_json::from_value::<Schema>(schema.clone()) {
                errors.push(FieldError::invalid(
                    path,
                    BadValue::text("(schema)"),
                    &error.to_string(),
                ));
            }
        }
    }
    errors.extend(stored_version_errors(object, &versions));
    errors
}

/// `status.storedVersions` against the versions: at least one, the storage version among
/// them, and none that left `spec.versions`.
fn stored_version_errors(object: &Value, versions: &[Value]) -> Vec<FieldError> {
    let stored = strings(&object["status"]["storedVersions"]);
    let path = FieldPath::new("status").child("storedVersions");
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            BadValue::GoSyntax(go_strings(&stored)),
            "must have at least one stored version",
        )];
    }
    let mut errors = Vec::new();
    let mut unlisted = stored.clone();
    for version in versions {
        let name = text(version, "/name");
        let known = stored.contains(&name);
        if version["storage"] == json!(true) && !known {
            errors.push(FieldError::invalid(
                path.clone(),
                BadValue::GoSyntax(go_strings(&stored)),
                &format!("must have the storage version {name}"),
            ));
        }
        unlisted.retain(|listed| *listed != name);
    }
    for name in unlisted {
        let index = stored
            .iter()
            .position(|listed| *listed == name)
            .unwrap_or(0);
        errors.push(FieldError::invalid(
            path.index(index),
            BadValue::text(&name),
            &format!(
                "missing from spec.versions; {name} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {name} and removes {name} from status.storedVersions"
            ),
        ));
    }
    errors
}

/// The checks of a structural schema that matter for serving: every object node has a type,
/// arrays have items, the root is an object.
fn structural_errors(
    schema: &Value,
    path: &FieldPath,
    root: bool,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if depth > 64 {
        errors.push(FieldError::forbidden(
            path.clone(),
            "the schema is too deep",
        ));
        return;
    }
    let Some(map) = schema.as_object() else {
        return;
    };
    let schema_type = map.get("type").and_then(Value::as_str).unwrap_or_default();
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
        || map.get("x-kubernetes-int-or-string") == Some(&json!(true));
    if root && schema_type != "object" {
        errors.push(FieldError::invalid(
            path.child("type"),
            BadValue::text(schema_type),
            "must be object at the root",
        ));
    } else if schema_type.is_empty() && !preserves && !root {
        errors.push(FieldError::required(
            path.child("type"),
            "must not be empty for specified object fields",
        ));
    }
    if schema_type == "array" && !map.contains_key("items") {
        errors.push(FieldError::required(
            path.child("items"),
            "must be specified",
        ));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            let child = path.child("properties").key(name);
            structural_errors(property, &child, false, depth + 1, errors);
        }
    }
    if let Some(items) = map.get("items") {
        structural_errors(items, &path.child("items"), false, depth + 1, errors);
    }
    if let Some(values @ Value::Object(_)) = map.get("additionalProperties") {
        structural_errors(
            values,
            &path.child("additionalProperties"),
            false,
            depth + 1,
            errors,
        );
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
pub(crate) fn reconcile(state: &AppState, name: &str) {
    let Some(object) = state.store.get(&crd_key(name)) else {
        stop_serving(state, name);
        return;
    };
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        clean_up(state, name, &object);
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
        let _ = state.store.mutate(&crd_key(name), |current| {
            let Some(current) = current else {
                return Err(crate::ApiError::not_found(GROUP, PLURAL, name));
            };
            let mut updated = Value::clone(current);
            updated["status"] = new_status.clone();
            record_status_write(current, &mut updated)?;
            Ok(Mutation::Put(updated))
        });
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
fn clean_up(state: &AppState, name: &str, object: &Value) {
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
        let _ = state.store.mutate(&key, |current| {
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
        });
    }
    let remaining = state.store.list(&group, &plural, None, false).objects.len();
    let _ = state.store.mutate(&crd_key(name), |current| {
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
            objects::metadata_mut(&mut updated).insert("finalizers".to_owned(), json!(finalizers));
        } else {
            conditions.push(terminating.clone());
        }
        updated["status"]["conditions"] = json!(conditions);
        Ok(Mutation::Put(updated))
    });
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
            reconcile(state, &other);
        }
    }
}

/// After an instance of a terminating definition went away: the definition may be released.
pub(crate) fn instance_deleted(state: &AppState, resource: &ResourceType) {
    if let Some(custom) = &resource.custom
        && is_terminating(state, &custom.crd_name)
    {
        reconcile(state, &custom.crd_name);
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

/// The `autoscaling/v1` Scale of a custom resource or built-in workload.
pub(crate) fn scale_of(object: &Value, paths: &ScalePaths) -> Value {
    let replicas = read_path(object, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = read_path(object, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|path| read_path(object, path))
    {
        status["selector"] = match selector {
            Value::String(text) => json!(text),
            other => json!(label_selector_text(other)),
        };
    }
    let metadata = &object["metadata"];
    let mut scale_metadata = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = metadata.get(field) {
            scale_metadata.insert(field.to_owned(), value.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_metadata,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// The value at a simple JSON path (`.spec.replicas`).
pub(crate) fn read_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .try_fold(object, |value, field| value.get(field))
}

/// Sets the value at a simple JSON path, creating objects on the way.
pub(crate) fn write_path(object: &mut Value, path: &str, value: Value) {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let Some((last, parents)) = fields.split_last() else {
        return;
    };
    let mut current = object;
    for field in parents {
        if !current.get(*field).is_some_and(Value::is_object) {
            current[*field] = json!({});
        }
        current = &mut current[*field];
    }
    current[*last] = value;
}

/// A `metav1.LabelSelector` as the string form selectors are written in.
pub(crate) fn label_selector_text(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = text(expression, "/key");
        let values = strings(&expression["values"]).join(",");
        match text(expression, "/operator").as_str() {
            "In" => parts.push(format!("{key} in ({values})")),
            "NotIn" => parts.push(format!("{key} notin ({values})")),
            "Exists" => parts.push(key),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]
            },
            "status": {"storedVersions": ["v1"]},
        })
    }

    #[test]
    fn a_valid_definition_passes_and_gets_its_defaults() {
        let mut crd = widget_crd();
        assert_eq!(validate(&crd), Vec::new());
        default_spec(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    }

    #[test]
    fn invalid_definitions_name_every_problem() {
        let crd = json!({
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "other.com", "scope": "Regional",
                "names": {"plural": "Gadgets", "kind": "gadget"},
                "versions": [{"name": "v1", "served": true, "storage": false}]}
        });
        let messages: Vec<String> = validate(&crd).iter().map(|e| e.to_string()).collect();
        let all = messages.join("\n");
        for expected in [
            "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group",
            "spec.scope: Unsupported value: \"Regional\": supported values: \"Cluster\", \"Namespaced\"",
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
            // Go syntax of the internal versions, as kube-apiserver prints them.
            "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:false, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}: must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
            "spec.names.plural: Invalid value: \"Gadgets\": a DNS-1035 label",
        ] {
            assert!(all.contains(expected), "{expected}\nnot in:\n{all}");
        }
        let mut structural = widget_crd();
        structural["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
            "type": "object",
            "properties": {"spec": {"properties": {"a": {"type": "string"}}}, "list": {"type": "array"}}
        });
        let messages: Vec<String> = validate(&structural)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "spec.validation.openAPIV3Schema.properties[list].items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ]
        );
    }

    #[test]
    fn conflicting_names_are_found() {
        let mine = names_of(&json!({"plural": "widgetz", "kind": "Widget"}));
        let theirs = names_of(&json!({"plural": "widgets", "kind": "Widget"}));
        let (accepted, conflict) = accept_names(&mine, &[theirs]);
        assert_eq!(
            conflict,
            Some((
                "ListKindConflict",
                "\"WidgetList\" is already in use".to_owned()
            ))
        );
        assert_eq!(accepted, json!({"plural": "widgetz", "kind": ""}));
    }

    #[test]
    fn scale_reads_the_paths_and_renders_selectors() {
        let object = json!({"metadata": {"name": "w", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "w"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
            "status": {"replicas": 2}});
        let paths = ScalePaths {
            spec_replicas: ".spec.replicas".to_owned(),
            status_replicas: ".status.replicas".to_owned(),
            label_selector: Some(".spec.selector".to_owned()),
        };
        let scale = scale_of(&object, &paths);
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(scale["status"]["replicas"], 2);
        assert_eq!(scale["status"]["selector"], "app=w,tier in (a,b)");
        assert_eq!(scale["metadata"]["resourceVersion"], "7");
        let mut object = object;
        write_path(&mut object, ".spec.replicas", json!(5));
        assert_eq!(object["spec"]["replicas"], 5);
    }
}
