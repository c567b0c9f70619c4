//! What the server does to an object's metadata on create, update and delete: names,
//! uid, creationTimestamp, generation, the status subresource split, finalizers and
//! deletionTimestamp (`k8s.io/apiserver/pkg/registry/rest` and the per-type strategies).

use kro_schema::{BadValue, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use crate::registry::ResourceType;

/// The characters generated names end with (`k8s.io/apimachinery/pkg/util/rand`).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// How `metadata.name` is checked for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRule {
    /// RFC 1123 subdomain (most resources).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// RFC 1035 label (services).
    Rfc1035Label,
    /// Path segment only (RBAC objects allow `:` and upper case).
    PathSegment,
}

fn name_rule(resource: &ResourceType) -> NameRule {
    match (resource.group(), resource.plural.as_str()) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Rfc1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

fn is_label(name: &str, first_alpha: bool) -> bool {
    name.len() <= 63 && has_label_form(name, first_alpha)
}

/// Whether `name` is made as a DNS label is (lower case alphanumerics and '-', starting and
/// ending with an alphanumeric), whatever its length.
fn has_label_form(name: &str, first_alpha: bool) -> bool {
    let bytes = name.as_bytes();
    !name.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(|b| {
            if first_alpha {
                b.is_ascii_lowercase()
            } else {
                b.is_ascii_alphanumeric()
            }
        })
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// Whether `name` matches the DNS-1123 subdomain pattern. Kubernetes checks only the whole
/// name's length (253): a part between dots may be longer than a label's 63.
fn has_subdomain_form(name: &str) -> bool {
    name.split('.').all(|part| has_label_form(part, false))
}

/// The name errors of `name` under the resource's rule, worded as Kubernetes words them.
pub fn validate_name(resource: &ResourceType, name: &str, path: &FieldPath) -> Vec<FieldError> {
    let value = BadValue::Value(Value::String(name.to_owned()));
    match name_rule(resource) {
        NameRule::Subdomain => {
            let mut errors = Vec::new();
            if name.len() > 253 {
                errors.push(FieldError::invalid(
                    path.clone(),
                    value.clone(),
                    "must be no more than 253 characters",
                ));
            }
            if !has_subdomain_form(name) {
                errors.push(FieldError::invalid(
                    path.clone(),
                    value,
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                     characters, '-' or '.', and must start and end with an alphanumeric \
                     character (e.g. 'example.com', regex used for validation is \
                     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ));
            }
            errors
        }
        NameRule::Label if !is_label(name, false) => vec![FieldError::invalid(
            path.clone(),
            value,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        )],
        NameRule::Rfc1035Label if !is_label(name, true) => vec![FieldError::invalid(
            path.clone(),
            value,
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is \
             '[a-z]([-a-z0-9]*[a-z0-9])?')",
        )],
        NameRule::PathSegment
            if name.is_empty() || name == "." || name == ".." || name.contains(['/', '%']) =>
        {
            vec![FieldError::invalid(
                path.clone(),
                value,
                "may not contain '/' or '%' and may not be '.' or '..'",
            )]
        }
        _ => Vec::new(),
    }
}

/// A name from `generateName`: the prefix cut to 58 characters plus five random characters.
pub fn generate_name(prefix: &str) -> String {
    let mut name: String = prefix.chars().take(58).collect();
    let random = uuid::Uuid::new_v4();
    for byte in random.as_bytes().iter().take(5) {
        name.push(char::from(
            NAME_ALPHABET[usize::from(*byte) % NAME_ALPHABET.len()],
        ));
    }
    name
}

/// Whether the resource's objects carry `metadata.generation`, bumped on changes of their
/// desired state (custom resources and the built-in types whose strategies set it; not
/// ControllerRevisions, whose strategy leaves it alone).
pub fn tracks_generation(resource: &ResourceType) -> bool {
    resource.custom.is_some()
        || matches!(
            (resource.group(), resource.plural.as_str()),
            (
                "apps",
                "deployments" | "statefulsets" | "daemonsets" | "replicasets"
            ) | ("batch", _)
                | ("policy", "poddisruptionbudgets")
                | ("networking.k8s.io", "ingresses" | "networkpolicies")
                | ("apiextensions.k8s.io", _)
                | ("admissionregistration.k8s.io", _)
                | ("", "replicationcontrollers")
        )
}

/// Whether a change of annotations also bumps the generation (Deployments, as upstream).
fn annotations_bump_generation(resource: &ResourceType) -> bool {
    resource.group() == "apps" && resource.plural == "deployments"
}

/// The current time as Kubernetes writes it (`2006-01-02T15:04:05Z`).
pub fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The object's `metadata`, created when absent.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    match object.get_mut("metadata") {
        Some(Value::Object(metadata)) => metadata,
        // Just made an object above.
        _ => unreachable!("metadata is an object"),
    }
}

/// A string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// Sets what the server owns on a new object: uid, creationTimestamp, generation; clears
/// what a client may not set (resourceVersion, deletion fields, managed timestamps) and the
/// status of resources with a status subresource.
pub fn prepare_create(resource: &ResourceType, object: &mut Value) {
    let generation = tracks_generation(resource);
    let metadata = metadata_mut(object);
    metadata.insert("uid".to_owned(), json!(uuid::Uuid::new_v4().to_string()));
    metadata.insert("creationTimestamp".to_owned(), json!(now()));
    metadata.remove("resourceVersion");
    metadata.remove("deletionTimestamp");
    metadata.remove("deletionGracePeriodSeconds");
    metadata.remove("selfLink");
    if generation {
        metadata.insert("generation".to_owned(), json!(1));
    } else {
        metadata.remove("generation");
    }
    if resource.subresource("status").is_some()
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    if resource.group().is_empty() && resource.plural == "namespaces" {
        let name = meta_str(object, "name").unwrap_or_default().to_owned();
        let labels = metadata_mut(object)
            .entry("labels")
            .or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".to_owned(), json!(name));
        }
        object["status"] = json!({"phase": "Active"});
    }
}

/// What the kind's create strategy sets after managed fields are recorded (so no manager
/// owns it): a namespace's `kubernetes` finalizer; a Job's generated selector and pod
/// labels; the Pending phase and protection finalizer of new volumes and claims.
pub fn finish_create(resource: &ResourceType, object: &mut Value) {
    if resource.group() == "batch" && resource.plural == "jobs" {
        label_job(object);
    }
    let protection = match (resource.group(), resource.plural.as_str()) {
        ("", "persistentvolumeclaims") => {
            object["status"] = json!({"phase": "Pending"});
            Some("kubernetes.io/pvc-protection")
        }
        ("", "persistentvolumes") => {
            object["status"] = json!({"phase": "Pending", "lastPhaseTransitionTime": now()});
            Some("kubernetes.io/pv-protection")
        }
        ("autoscaling", "horizontalpodautoscalers") => {
            object["status"] = json!({"desiredReplicas": 0});
            None
        }
        _ => None,
    };
    // The storage-object-in-use admission plugin: volumes and claims are protected until
    // the volume controllers release them.
    if let Some(protection) = protection {
        let mut finalizers = finalizers(object);
        if !finalizers.iter().any(|finalizer| finalizer == protection) {
            finalizers.push(protection.to_owned());
            metadata_mut(object).insert("finalizers".to_owned(), json!(finalizers));
        }
    }
    if resource.group().is_empty() && resource.plural == "namespaces" {
        let spec = object
            .as_object_mut()
            .map(|map| map.entry("spec").or_insert_with(|| json!({})));
        if let Some(Value::Object(spec)) = spec {
            let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == "kubernetes")
            {
                list.push(json!("kubernetes"));
            }
        }
    }
}

/// The job strategy's selector generation: unless `spec.manualSelector`, the pod template
/// gets the controller-uid and job-name labels (current and legacy keys) and the selector
/// is the controller-uid label.
fn label_job(object: &mut Value) {
    if object.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = meta_str(object, "uid").unwrap_or_default().to_owned();
    let name = meta_str(object, "name").unwrap_or_default().to_owned();
    let Some(spec) = object.get_mut("spec").filter(|spec| spec.is_object()) else {
        return;
    };
    if !spec.get("template").is_some_and(Value::is_object) {
        spec["template"] = json!({});
    }
    let template = &mut spec["template"];
    if !template.get("metadata").is_some_and(Value::is_object) {
        template["metadata"] = json!({});
    }
    if !template["metadata"]
        .get("labels")
        .is_some_and(Value::is_object)
    {
        template["metadata"]["labels"] = json!({});
    }
    let labels = &mut template["metadata"]["labels"];
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        labels[key] = json!(value);
    }
    if spec.get("selector").is_none_or(Value::is_null) {
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    }
    // A Job without labels of its own takes its pods'.
    let template_labels = spec["template"]["metadata"]["labels"].clone();
    let metadata = metadata_mut(object);
    if metadata
        .get("labels")
        .and_then(Value::as_object)
        .is_none_or(serde_json::Map::is_empty)
    {
        metadata.insert("labels".to_owned(), template_labels);
    }
}

/// Which endpoint an update came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The main resource endpoint.
    Main,
    /// The `/status` subresource.
    Status,
    /// A namespace's `/finalize` subresource: only `spec.finalizers` changes.
    Finalize,
}

fn without_metadata_and_status(object: &Value, drop_status: bool) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        if drop_status {
            map.remove("status");
        }
        map.remove("apiVersion");
        map.remove("kind");
    }
    copy
}

/// Carries over what an update may not change (identity, creation and deletion fields, and
/// the status or everything but the status depending on the endpoint), and bumps the
/// generation when the desired state changed. Returns the object to validate and store.
pub fn prepare_update(
    resource: &ResourceType,
    old: &Value,
    mut new: Value,
    target: UpdateTarget,
) -> Value {
    let has_status = resource.subresource("status").is_some();
    if target == UpdateTarget::Finalize {
        let finalizers = new.pointer("/spec/finalizers").cloned();
        let mut merged = old.clone();
        if let Some(Value::Object(spec)) = merged.get_mut("spec") {
            match finalizers {
                Some(finalizers) => spec.insert("finalizers".to_owned(), finalizers),
                None => spec.remove("finalizers"),
            };
        }
        new = merged;
    } else if target == UpdateTarget::Status {
        let status = new.get("status").cloned();
        // Built-in kinds' status strategies keep the old spec but take metadata changes such
        // as annotations (the deployment controller records revisions that way) and labels
        // (except Deployments'); custom resources take nothing but the status.
        let annotations = new.pointer("/metadata/annotations").cloned();
        let labels = (resource.group() != "apps" || resource.plural != "deployments")
            .then(|| new.pointer("/metadata/labels").cloned());
        let mut merged = old.clone();
        if let Some(map) = merged.as_object_mut() {
            match status {
                Some(status) => map.insert("status".to_owned(), status),
                None => map.remove("status"),
            };
        }
        if resource.custom.is_none() {
            let metadata = metadata_mut(&mut merged);
            match annotations {
                Some(annotations) => metadata.insert("annotations".to_owned(), annotations),
                None => metadata.remove("annotations"),
            };
            match labels {
                Some(Some(labels)) => metadata.insert("labels".to_owned(), labels),
                Some(None) => metadata.remove("labels"),
                None => None,
            };
        }
        new = merged;
    } else if has_status && let Some(map) = new.as_object_mut() {
        match old.get("status") {
            Some(status) => map.insert("status".to_owned(), status.clone()),
            None => map.remove("status"),
        };
    }
    let old_metadata = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    {
        let metadata = metadata_mut(&mut new);
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_metadata.get(field) {
                Some(value) => metadata.insert(field.to_owned(), value.clone()),
                None => metadata.remove(field),
            };
        }
        metadata.remove("selfLink");
    }
    if tracks_generation(resource) && target == UpdateTarget::Main {
        let spec_changed = without_metadata_and_status(old, has_status)
            != without_metadata_and_status(&new, has_status);
        let annotations_changed = annotations_bump_generation(resource)
            && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations");
        if spec_changed || annotations_changed {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            metadata_mut(&mut new).insert("generation".to_owned(), json!(generation + 1));
        }
    }
    new
}

/// The finalizers of an object.
pub fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The error for finalizers added to an object that is being deleted.
pub fn new_finalizers_error(old: &Value, new: &Value) -> Option<FieldError> {
    old.pointer("/metadata/deletionTimestamp")?;
    let before = finalizers(old);
    let added: Vec<String> = finalizers(new)
        .into_iter()
        .filter(|finalizer| !before.contains(finalizer))
        .collect();
    if added.is_empty() {
        return None;
    }
    let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    Some(FieldError::forbidden(
        FieldPath::new("metadata").child("finalizers"),
        &format!(
            "no new finalizers can be added if the object is being deleted, found new \
             finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    ))
}

/// Marks an object as being deleted: deletionTimestamp (once), a zero grace period, and one
/// generation bump for objects that track generation.
pub fn mark_deleting(object: &mut Value) {
    let metadata = metadata_mut(object);
    if metadata.contains_key("deletionTimestamp") {
        return;
    }
    metadata.insert("deletionTimestamp".to_owned(), json!(now()));
    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
    if let Some(generation) = metadata.get("generation").and_then(Value::as_i64)
        && generation > 0
    {
        metadata.insert("generation".to_owned(), json!(generation + 1));
    }
}

/// Marks a pod for a graceful deletion: it goes when its kubelet deletes it with no grace
/// period, or `seconds` from now at the latest. A shorter grace period than the one running
/// brings the deadline forward; a longer one changes nothing.
pub fn mark_deleting_gracefully(object: &mut Value, seconds: i64) {
    let metadata = metadata_mut(object);
    let running = metadata
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if running.is_some_and(|running| running <= seconds) {
        return;
    }
    let deadline = chrono::Utc::now() + chrono::Duration::seconds(seconds);
    metadata.insert(
        "deletionTimestamp".to_owned(),
        json!(deadline.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
    );
    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(seconds));
}

/// Whether a DELETE of this resource answers with the deleted object rather than a
/// `Status` (the stores that set `ReturnDeletedObject`).
pub fn returns_deleted_object(resource: &ResourceType) -> bool {
    matches!(
        (resource.group(), resource.plural.as_str()),
        (
            "",
            "pods" | "serviceaccounts" | "persistentvolumeclaims" | "persistentvolumes" | "nodes"
        ) | ("apiextensions.k8s.io", "customresourcedefinitions")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn resource(group: &str, plural: &str) -> std::sync::Arc<ResourceType> {
        let registry = Registry::built_in().expect("registry");
        let version = if group == "autoscaling" { "v2" } else { "v1" };
        registry.find(group, version, plural).expect("resource")
    }

    #[test]
    fn names_follow_each_resources_rule() {
        let path = FieldPath::new("metadata").child("name");
        let configmaps = resource("", "configmaps");
        assert!(validate_name(&configmaps, "a.b-c", &path).is_empty());
        let errors = validate_name(&configmaps, "Bad_Name", &path);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().starts_with(
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
        assert!(!validate_name(&resource("", "namespaces"), "a.b", &path).is_empty());
        // A subdomain's parts have no length of their own: kube-apiserver takes a 64 to 253
        // character name without a dot (these were refused, and a Set named so retried its
        // refused creates in a loop).
        for length in [63, 64, 200, 253] {
            let name = "a".repeat(length);
            assert!(
                validate_name(&configmaps, &name, &path).is_empty(),
                "{length}"
            );
        }
        let too_long = validate_name(&configmaps, &"a".repeat(254), &path);
        assert_eq!(too_long.len(), 1);
        assert!(
            too_long[0]
                .to_string()
                .ends_with("must be no more than 253 characters"),
            "{}",
            too_long[0]
        );
        assert!(!validate_name(&resource("", "services"), "1abc", &path).is_empty());
        assert!(
            validate_name(
                &resource("rbac.authorization.k8s.io", "clusterroles"),
                "system:x",
                &path
            )
            .is_empty()
        );
        let generated = generate_name("web-");
        assert_eq!(generated.len(), 9);
        assert!(generated.starts_with("web-"));
    }

    #[test]
    fn generation_moves_with_the_desired_state_only() {
        let deployments = resource("apps", "deployments");
        let mut created =
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}, "status": {"x": 1}});
        prepare_create(&deployments, &mut created);
        assert_eq!(created["metadata"]["generation"], 1);
        assert!(
            created.get("status").is_none(),
            "status is dropped on create"
        );
        let mut changed = created.clone();
        changed["spec"]["replicas"] = json!(2);
        changed["status"] = json!({"ignored": true});
        let updated = prepare_update(&deployments, &created, changed, UpdateTarget::Main);
        assert_eq!(updated["metadata"]["generation"], 2);
        assert!(
            updated.get("status").is_none(),
            "status comes from the stored object"
        );
        let mut status = updated.clone();
        status["status"] = json!({"replicas": 2});
        status["spec"]["replicas"] = json!(9);
        let through_status = prepare_update(&deployments, &updated, status, UpdateTarget::Status);
        assert_eq!(through_status["metadata"]["generation"], 2);
        assert_eq!(through_status["spec"]["replicas"], 2);
        assert_eq!(through_status["status"]["replicas"], 2);
        let mut annotated = through_status.clone();
        annotated["metadata"]["annotations"] = json!({"a": "b"});
        let bumped = prepare_update(&deployments, &through_status, annotated, UpdateTarget::Main);
        assert_eq!(bumped["metadata"]["generation"], 3);

        let configmaps = resource("", "configmaps");
        let mut map = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        prepare_create(&configmaps, &mut map);
        assert!(map["metadata"].get("generation").is_none());
    }

    #[test]
    fn namespaces_are_created_active_with_the_kubernetes_finalizer() {
        let mut namespace = json!({"metadata": {"name": "team"}});
        prepare_create(&resource("", "namespaces"), &mut namespace);
        finish_create(&resource("", "namespaces"), &mut namespace);
        assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(namespace["status"]["phase"], "Active");
        assert_eq!(
            namespace["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "team"
        );
    }

    #[test]
    fn deleting_objects_refuse_new_finalizers() {
        let mut old = json!({"metadata": {"name": "x", "finalizers": ["a"], "generation": 1}});
        mark_deleting(&mut old);
        assert_eq!(old["metadata"]["generation"], 2);
        let stamp = old["metadata"]["deletionTimestamp"].clone();
        mark_deleting(&mut old);
        assert_eq!(old["metadata"]["deletionTimestamp"], stamp);
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["a", "b"]);
        let error = new_finalizers_error(&old, &new).expect("refused");
        assert_eq!(
            error.to_string(),
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is \
             being deleted, found new finalizers []string{\"b\"}"
        );
    }
}
