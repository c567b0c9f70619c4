//! The instance file of `kro render`, `kro apply` and `kro delete`: its one object, the names
//! it must carry, and the RGD of the workspace that defines its kind.

use std::path::Path;

use anyhow::bail;
use kro_graph::NameRule;
use serde_json::Value;

use crate::rgd_files::{BuiltRgd, Workspace, read_yaml_documents};

/// The one object in the instance file (or standard input).
pub(crate) fn read_instance(path: &Path) -> anyhow::Result<Value> {
    let documents = read_yaml_documents(path, false)?;
    match documents.as_slice() {
        [(_, document)] if document.value.is_object() => Ok(document.value.clone()),
        [(_, document)] => {
            let found = match &document.value {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                Value::Null => "empty",
                Value::Object(_) => "an object",
            };
            let at = document
                .location()
                .map(|location| format!(":{location}"))
                .unwrap_or_default();
            bail!(
                "{}{at}: the instance is {found}; it must be one object (apiVersion, kind, \
                 metadata, spec)",
                path.display()
            )
        }
        [] => bail!("{}: no object in the file", path.display()),
        many => bail!(
            "{}: {} objects in the file; one instance is expected",
            path.display(),
            many.len()
        ),
    }
}

/// The RGD of the workspace that defines the instance's kind.
pub(crate) fn graph_of<'w>(
    workspace: &'w Workspace,
    path: &Path,
    instance: &Value,
) -> anyhow::Result<&'w BuiltRgd> {
    let api_version = instance["apiVersion"].as_str().unwrap_or_default();
    let kind = instance["kind"].as_str().unwrap_or_default();
    workspace
        .rgds
        .iter()
        .find(|built| {
            built.graph.as_ref().is_some_and(|graph| {
                graph.names.api_version() == api_version && graph.names.kind == kind
            })
        })
        .ok_or_else(|| {
            let defined: Vec<String> = workspace
                .rgds
                .iter()
                .filter_map(|built| built.graph.as_ref())
                .map(|graph| format!("{} {}", graph.names.api_version(), graph.names.kind))
                .collect();
            anyhow::anyhow!(
                "{}: the instance is {api_version} {kind}, but the RGDs define {}",
                path.display(),
                if defined.is_empty() {
                    "nothing".to_owned()
                } else {
                    defined.join(", ")
                }
            )
        })
}

/// The instance's name and namespace as kube-apiserver checks them (a DNS-1123 subdomain and
/// label): they end up in the names, labels and owner references of every object rendered, so
/// a name such as `../../etc/passwd` is refused here rather than printed into them.
pub(crate) fn check_instance_names(instance: &Value) -> Result<(), String> {
    let metadata = &instance["metadata"];
    match &metadata["name"] {
        Value::String(name) => NameRule::Subdomain
            .check(name)
            .map_err(|error| format!("metadata.name: Invalid value: {error}"))?,
        Value::Null => return Err("metadata.name: Required value: name is required".to_owned()),
        other => {
            return Err(format!(
                "metadata.name: Invalid value: {other}: must be a string"
            ));
        }
    }
    match &metadata["namespace"] {
        Value::String(namespace) => NameRule::Label
            .check(namespace)
            .map_err(|error| format!("metadata.namespace: Invalid value: {error}")),
        Value::Null => Ok(()),
        other => Err(format!(
            "metadata.namespace: Invalid value: {other}: must be a string"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_file_that_is_not_an_object_says_what_it_is() {
        let directory = tempfile::tempdir().expect("a directory");
        let path = directory.path().join("instance.yaml");
        std::fs::write(&path, "- apiVersion: v1\n  kind: X\n").expect("written");
        let error = read_instance(&path).expect_err("a list");
        assert!(
            error.to_string().ends_with(
                "instance.yaml:1:1: the instance is a list; it must be one object (apiVersion, kind, metadata, spec)"
            ),
            "{error}"
        );
    }
    use serde_json::json;

    #[test]
    fn instance_names_that_are_not_kubernetes_names_are_refused() {
        let named = |name: Value, namespace: Value| json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": name, "namespace": namespace}});
        assert_eq!(
            check_instance_names(&named(json!("web-1"), Value::Null)),
            Ok(())
        );
        assert_eq!(
            check_instance_names(&named(json!("a.b"), json!("team-1"))),
            Ok(())
        );
        for (name, namespace, field) in [
            (json!("../../etc/passwd"), Value::Null, "metadata.name"),
            (json!("UPPER"), Value::Null, "metadata.name"),
            (Value::Null, Value::Null, "metadata.name"),
            (json!(7), Value::Null, "metadata.name"),
            (json!("ok"), json!("../x"), "metadata.namespace"),
            (json!("ok"), json!("a.b"), "metadata.namespace"),
        ] {
            let problem = check_instance_names(&named(name.clone(), namespace))
                .expect_err("an invalid name is refused");
            assert!(problem.starts_with(field), "{name}: {problem}");
        }
    }
}
