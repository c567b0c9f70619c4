//! What the API server does to an instance before kro ever sees it: prune unknown fields,
//! apply the CRD's defaults, validate. `kro render` runs it so that an instance file is
//! planned exactly as it would be once created.

use kro_graph::CompiledGraph;
use kro_schema::{
    Gvk, Schema, ValidationConfig, Validator, apply_defaults, invalid_object_message,
};
use serde_json::Value as Json;

/// Why an instance would be refused by the API server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// The object is not of the RGD's kind.
    #[error("the instance is {found}, but the RGD defines {expected}")]
    WrongKind {
        /// `apiVersion` and kind the RGD defines.
        expected: String,
        /// What the object says.
        found: String,
    },
    /// `metadata.name` is missing.
    #[error("the instance has no metadata.name")]
    NoName,
    /// The generated CRD has no schema (a bug of the CRD generator).
    #[error("the generated CRD has no usable schema: {0}")]
    NoSchema(String),
    /// Validation failed: the message the API server would return (422).
    #[error("{0}")]
    Invalid(String),
}

/// The instance as the API server would store it, and the unknown fields it dropped (each
/// worth a warning, as `kubectl` prints them).
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// The pruned, defaulted, valid instance.
    pub instance: Json,
    /// Unknown fields removed (`spec.colour`).
    pub pruned: Vec<String>,
}

/// Prunes, defaults and validates `instance` against the schema of `graph`'s instance CRD.
///
/// # Errors
/// [`AdmissionError`] when the kind does not match or validation fails.
pub fn admit(graph: &CompiledGraph, instance: &Json) -> Result<Admitted, AdmissionError> {
    let expected = format!("{} {}", graph.names.api_version(), graph.names.kind);
    let found = format!(
        "{} {}",
        instance["apiVersion"].as_str().unwrap_or("<no apiVersion>"),
        instance["kind"].as_str().unwrap_or("<no kind>")
    );
    if expected != found {
        return Err(AdmissionError::WrongKind { expected, found });
    }
    let Some(name) = instance
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .filter(|name| !name.is_empty())
    else {
        return Err(AdmissionError::NoName);
    };
    let schema_json = graph
        .crd
        .pointer("/spec/versions/0/schema/openAPIV3Schema")
        .cloned()
        .ok_or_else(|| AdmissionError::NoSchema("no openAPIV3Schema".to_owned()))?;
    let schema: Schema = serde_json::from_value(schema_json)
        .map_err(|error| AdmissionError::NoSchema(error.to_string()))?;
    let mut admitted = instance.clone();
    let pruned = kro_schema::prune(&schema, &mut admitted, true);
    apply_defaults(&schema, &mut admitted);
    let validator = Validator::with_config(
        &schema,
        ValidationConfig::default().with_resource_root(true),
    );
    let errors = validator.validate(&admitted, None);
    if !errors.is_empty() {
        let gvk = Gvk::new(&graph.names.group, &graph.names.version, &graph.names.kind);
        return Err(AdmissionError::Invalid(invalid_object_message(
            &gvk, name, &errors,
        )));
    }
    Ok(Admitted {
        instance: admitted,
        pruned,
    })
}
