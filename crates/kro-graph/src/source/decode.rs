//! Decoding a YAML document into a [`ResourceGraphDefinition`], with the location of the
//! field that does not fit.

use std::fmt;

use serde_path_to_error::Segment;

use super::{Location, YamlDocument};
use crate::ResourceGraphDefinition;
use crate::template::FieldPath;

/// A document that is not a valid ResourceGraphDefinition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError {
    /// The offending field (the enclosing map, for a missing field).
    pub path: FieldPath,
    /// Where the field (or, when it is missing, its nearest ancestor) is written.
    pub location: Option<Location>,
    /// What is wrong.
    pub kind: DecodeErrorKind,
}

/// `line:column: path: problem`, without the parts that are unknown.
impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = self.location {
            write!(f, "{location}: ")?;
        }
        if !self.path.is_root() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl DecodeError {
    /// A stable CamelCase name of the problem.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            DecodeErrorKind::NotResourceGraphDefinition { .. } => "NotResourceGraphDefinition",
            DecodeErrorKind::WrongApiVersion { .. } => "WrongApiVersion",
            DecodeErrorKind::ConditionsNotAList { .. } => "InvalidField",
            DecodeErrorKind::InvalidField { .. } => "InvalidField",
        }
    }
}

/// The ways a document can fail to be a ResourceGraphDefinition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// `apiVersion` and `kind` are not `kro.run/v1alpha1` and `ResourceGraphDefinition`.
    #[error("not a ResourceGraphDefinition (apiVersion {api_version:?}, kind {kind:?})")]
    NotResourceGraphDefinition {
        /// The document's `apiVersion`.
        api_version: Option<String>,
        /// The document's `kind`.
        kind: Option<String>,
    },
    /// `kind: ResourceGraphDefinition` with another `apiVersion`, or none.
    #[error(
        "a ResourceGraphDefinition needs apiVersion: kro.run/v1alpha1 (found {})",
        found.as_deref().map_or_else(|| "none".to_owned(), |found| format!("{found:?}"))
    )]
    WrongApiVersion {
        /// The document's `apiVersion`.
        found: Option<String>,
    },
    /// `readyWhen` or `includeWhen` written as one expression instead of a list of them.
    #[error(
        "{field} is a list of expressions, all of which must hold: write it as one `- ` item \
         per expression (`{field}: [\"{written}\"]`)"
    )]
    ConditionsNotAList {
        /// `readyWhen` or `includeWhen`.
        field: &'static str,
        /// The expression as written.
        written: String,
    },
    /// A field has the wrong type or value, or a required field is missing.
    #[error("{message}")]
    InvalidField {
        /// The decoder's description.
        message: String,
    },
}

impl YamlDocument {
    /// Decodes this document as a ResourceGraphDefinition.
    ///
    /// # Errors
    ///
    /// [`DecodeErrorKind::NotResourceGraphDefinition`] (at `kind`) for another kind of
    /// document, and [`DecodeErrorKind::InvalidField`] at the offending field otherwise.
    pub fn to_resource_graph_definition(&self) -> Result<ResourceGraphDefinition, DecodeError> {
        decode(
            &self.value,
            self.api_version.as_deref(),
            self.kind.as_deref(),
            |path| self.source_map.nearest(path),
        )
    }
}

impl ResourceGraphDefinition {
    /// Decodes a ResourceGraphDefinition from a JSON object, such as one an API server
    /// returned. Errors name the offending field; they carry no location, as JSON from an API
    /// server has no source text.
    ///
    /// # Errors
    /// [`DecodeErrorKind::NotResourceGraphDefinition`] (at `kind`) when `apiVersion` and `kind`
    /// are not a ResourceGraphDefinition's, and [`DecodeErrorKind::InvalidField`] at the
    /// offending field otherwise.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, DecodeError> {
        let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str);
        decode(value, text("apiVersion"), text("kind"), |_| None)
    }
}

/// Checks `apiVersion` and `kind`, then deserializes `value` keeping the path of the field
/// that does not fit; `locate` finds where a path is written, when there is source text.
fn decode(
    value: &serde_json::Value,
    api_version: Option<&str>,
    kind: Option<&str>,
    locate: impl Fn(&FieldPath) -> Option<Location>,
) -> Result<ResourceGraphDefinition, DecodeError> {
    if kind == Some(crate::metadata::RGD_KIND) && api_version != Some(crate::metadata::API_VERSION)
    {
        let path = FieldPath::root().key("apiVersion");
        return Err(DecodeError {
            location: locate(&path),
            path,
            kind: DecodeErrorKind::WrongApiVersion {
                found: api_version.map(str::to_owned),
            },
        });
    }
    if api_version != Some(crate::metadata::API_VERSION) || kind != Some(crate::metadata::RGD_KIND)
    {
        let path = FieldPath::root().key("kind");
        return Err(DecodeError {
            location: locate(&path),
            path,
            kind: DecodeErrorKind::NotResourceGraphDefinition {
                api_version: api_version.map(str::to_owned),
                kind: kind.map(str::to_owned),
            },
        });
    }
    if let Some((path, field, written)) = condition_written_alone(value) {
        return Err(DecodeError {
            location: locate(&path),
            path,
            kind: DecodeErrorKind::ConditionsNotAList { field, written },
        });
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = field_path(error.path());
        DecodeError {
            location: locate(&path),
            path,
            kind: DecodeErrorKind::InvalidField {
                message: error.into_inner().to_string(),
            },
        }
    })
}

/// The first `readyWhen` or `includeWhen` of a resource written as a single string, which the
/// API (a list) would reject with a bare "expected a sequence".
fn condition_written_alone(value: &serde_json::Value) -> Option<(FieldPath, &'static str, String)> {
    let resources = value.pointer("/spec/resources")?.as_array()?;
    resources.iter().enumerate().find_map(|(index, resource)| {
        ["readyWhen", "includeWhen"].into_iter().find_map(|field| {
            let written = resource.get(field)?.as_str()?;
            let path = FieldPath::root()
                .key("spec")
                .key("resources")
                .index(index)
                .key(field);
            Some((path, field, written.to_owned()))
        })
    })
}

/// The field path of a serde error path, up to its first unknown segment.
fn field_path(path: &serde_path_to_error::Path) -> FieldPath {
    let mut field = FieldPath::root();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => field.push_index(*index),
            Segment::Map { key } => field.push_key(key.as_str()),
            Segment::Enum { .. } => {}
            Segment::Unknown => break,
        }
    }
    field
}
