//! Walking a JSON tree (a resource template, a data node, the instance status) and scanning
//! every string value, like upstream's schemaless parser (`schemaless.go`).

use std::fmt;

use serde_json::Value as Json;

use super::{FieldPath, Template, TemplateError, parse_template};

/// At most this many errors are kept by [`scan_json`]; the rest are counted.
pub const MAX_SCAN_ERRORS: usize = 100;

/// A string value holding at least one expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateField {
    /// Where the string is, relative to the scanned value.
    pub path: FieldPath,
    /// Its expressions: [`Template::Standalone`] or [`Template::Interpolated`], never
    /// [`Template::Literal`].
    pub template: Template,
}

/// What [`scan_json`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScannedJson {
    /// Every string value with expressions, in document order.
    pub fields: Vec<TemplateField>,
    /// Every constant leaf, in document order: strings without expressions, numbers,
    /// booleans and nulls (upstream's "plain field paths", used to infer data-node types).
    /// Empty maps and lists are neither fields nor leaves.
    pub plain: Vec<FieldPath>,
}

/// A string of a JSON tree that breaks the `${...}` rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {error}")]
pub struct FieldTemplateError {
    /// Where the string is.
    pub path: FieldPath,
    /// What is wrong with it.
    #[source]
    pub error: TemplateError,
}

/// Every string of a JSON tree that breaks the `${...}` rules (up to [`MAX_SCAN_ERRORS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanErrors {
    /// The errors, in document order.
    pub errors: Vec<FieldTemplateError>,
    /// How many more errors were found and not kept.
    pub omitted: usize,
}

impl fmt::Display for ScanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, error) in self.errors.iter().enumerate() {
            if position > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        if self.omitted > 0 {
            write!(f, " (and {} more)", self.omitted)?;
        }
        Ok(())
    }
}

impl std::error::Error for ScanErrors {}

/// Scans every string value of `value` (never a map key) for `${...}`, with field paths
/// relative to `value`.
///
/// The walk uses its own stack, so any depth is safe.
///
/// # Errors
///
/// [`ScanErrors`] with every string that breaks the rules, when there is at least one.
pub fn scan_json(value: &Json) -> Result<ScannedJson, ScanErrors> {
    let mut scanned = ScannedJson::default();
    let mut errors = ScanErrors {
        errors: Vec::new(),
        omitted: 0,
    };
    let mut pending: Vec<(FieldPath, &Json)> = vec![(FieldPath::root(), value)];
    while let Some((path, value)) = pending.pop() {
        match value {
            Json::Object(map) => {
                for (key, child) in map.iter().rev() {
                    pending.push((path.key(key.as_str()), child));
                }
            }
            Json::Array(items) => {
                for (index, child) in items.iter().enumerate().rev() {
                    pending.push((path.index(index), child));
                }
            }
            Json::String(text) => match parse_template(text) {
                Ok(Template::Literal) => scanned.plain.push(path),
                Ok(template) => scanned.fields.push(TemplateField { path, template }),
                Err(error) if errors.errors.len() < MAX_SCAN_ERRORS => {
                    errors.errors.push(FieldTemplateError { path, error });
                }
                Err(_) => errors.omitted += 1,
            },
            Json::Null | Json::Bool(_) | Json::Number(_) => scanned.plain.push(path),
        }
    }
    if errors.errors.is_empty() {
        Ok(scanned)
    } else {
        Err(errors)
    }
}
