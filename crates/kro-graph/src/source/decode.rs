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
        if !self.is_resource_graph_definition() {
            let path = FieldPath::root().key("kind");
            return Err(DecodeError {
                location: self.source_map.nearest(&path),
                path,
                kind: DecodeErrorKind::NotResourceGraphDefinition {
                    api_version: self.api_version.clone(),
                    kind: self.kind.clone(),
                },
            });
        }
        serde_path_to_error::deserialize(&self.value).map_err(|error| {
            let path = field_path(error.path());
            DecodeError {
                location: self.source_map.nearest(&path),
                path,
                kind: DecodeErrorKind::InvalidField {
                    message: error.into_inner().to_string(),
                },
            }
        })
    }
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
