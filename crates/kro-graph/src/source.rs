//! Reading ResourceGraphDefinition YAML with source positions, so that `kro validate` can
//! report `file:line:column`.
//!
//! [`parse_yaml_documents`] reads a (possibly multi-document) YAML text into
//! [`YamlDocument`]s: the JSON value of each document and a [`SourceMap`] from field paths
//! (the [`FieldPath`]s of the template scanner) to 1-based line and column. Documents of any
//! kind are returned, so callers can skip or use the CRDs and instances that sit next to an
//! RGD. [`YamlDocument::to_resource_graph_definition`] then decodes an RGD, and its errors
//! point at the offending field.
//!
//! The YAML is read the way `kubectl` reads it (YAML 1.1 through `sigs.k8s.io/yaml`):
//!
//! - `yes`/`no`, `on`/`off` (and their capitalised forms) are booleans, like `true`/`false`:
//!   serde-saphyr accepts the YAML 1.1 spellings unless told to be strict, and kubectl does
//!   the same. Quote them (`"yes"`) to keep a string.
//! - A plain integer with a leading zero is octal: `defaultMode: 0644` is 420.
//! - A float with no fractional part (`1e3`, `2.0`) becomes the integer, as Go's JSON encoding
//!   writes it; `.nan` and `.inf` are rejected (JSON has no such numbers).
//! - Values `y` and `n` are booleans too, as in kubectl. Keys, however, are taken as written:
//!   `80: http` has the key `"80"`, and keys `y`, `on` or `0x10` keep that text, where a YAML
//!   1.1 reader such as kubectl's resolves them first (to `"true"`, `"true"` and `"16"`); a null
//!   key (`~:`) is `"null"`.
//! - A key repeated in one mapping keeps its last value, as kubectl reads YAML, and the document
//!   carries a warning naming the first repetition; anchors, aliases and `<<` merges are
//!   expanded (within the alias budget).
//!
//! Input size, nesting depth, node and document counts are bounded by [`YamlLimits`], so
//! hostile input cannot exhaust memory or the stack.

mod decode;
mod node;

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value as Json};
use serde_saphyr::{DuplicateKeyPolicy, Spanned};

use crate::template::FieldPath;
use node::{Key, Node};

pub use decode::{DecodeError, DecodeErrorKind};

/// A position in a YAML text: 1-based line and column (in characters), the same type as a
/// position in a CEL expression.
pub use kro_cel::Location;

/// The location of a serde-saphyr location, or `None` when it is unknown (line 0).
fn location_from_saphyr(location: serde_saphyr::Location) -> Option<Location> {
    let line = u32::try_from(location.line()).unwrap_or(u32::MAX);
    let column = u32::try_from(location.column()).unwrap_or(u32::MAX);
    (line > 0).then_some(Location { line, column })
}

/// Where one field of a document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLocation {
    /// The start of the value.
    pub value: Location,
    /// The start of the key, for map entries (not for list items and the document root).
    pub key: Option<Location>,
}

/// The locations of every value of one YAML document, by field path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    fields: BTreeMap<FieldPath, FieldLocation>,
}

impl SourceMap {
    /// The locations of the field at `path`, if the document has it.
    pub fn get(&self, path: &FieldPath) -> Option<&FieldLocation> {
        self.fields.get(path)
    }

    /// The start of the value at `path`.
    pub fn value_location(&self, path: &FieldPath) -> Option<Location> {
        self.fields.get(path).map(|field| field.value)
    }

    /// The start of the key of the map entry at `path`.
    pub fn key_location(&self, path: &FieldPath) -> Option<Location> {
        self.fields.get(path).and_then(|field| field.key)
    }

    /// The location to report for `path`: its key if it is a map entry, else its value; for a
    /// path the document does not have (a missing field), that of its nearest ancestor.
    pub fn nearest(&self, path: &FieldPath) -> Option<Location> {
        let mut current = path.clone();
        loop {
            if let Some(field) = self.fields.get(&current) {
                return Some(field.key.unwrap_or(field.value));
            }
            current.pop()?;
        }
    }

    /// Every field with its locations, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&FieldPath, &FieldLocation)> {
        self.fields.iter()
    }

    /// The number of fields (the root included).
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the map has no field.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// One document of a YAML text.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlDocument {
    /// The position of the document among the non-empty documents of the text, from 0.
    pub index: usize,
    /// Its `apiVersion`, when it is a map with a string there.
    pub api_version: Option<String>,
    /// Its `kind`, when it is a map with a string there.
    pub kind: Option<String>,
    /// The document as JSON.
    pub value: Json,
    /// Where each field is written.
    pub source_map: SourceMap,
    /// Problems that did not stop reading (a repeated key).
    pub warnings: Vec<YamlError>,
}

impl YamlDocument {
    /// Whether `apiVersion` and `kind` say ResourceGraphDefinition (`kro.run/v1alpha1`).
    pub fn is_resource_graph_definition(&self) -> bool {
        self.api_version.as_deref() == Some(crate::metadata::API_VERSION)
            && self.kind.as_deref() == Some(crate::metadata::RGD_KIND)
    }

    /// The location of the document's root value.
    pub fn location(&self) -> Option<Location> {
        self.source_map.value_location(&FieldPath::root())
    }
}

/// Bounds on the YAML text read by [`parse_yaml_documents_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlLimits {
    max_input_bytes: usize,
    max_depth: usize,
    max_documents: usize,
    max_nodes: usize,
}

impl Default for YamlLimits {
    /// 10 MiB of text, nesting depth 64, 1,024 documents and 250,000 nodes.
    fn default() -> Self {
        Self {
            max_input_bytes: 10 * 1024 * 1024,
            max_depth: 64,
            max_documents: 1024,
            max_nodes: 250_000,
        }
    }
}

impl YamlLimits {
    /// The largest text accepted, in bytes (what [`max_input_bytes`](Self::max_input_bytes)
    /// set), so readers can stop reading a file past it.
    pub fn input_byte_limit(&self) -> usize {
        self.max_input_bytes
    }

    /// The largest text accepted, in bytes.
    #[must_use]
    pub fn max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = bytes;
        self
    }

    /// The deepest nesting of maps and lists accepted. Values above 256 are lowered to 256.
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.min(256);
        self
    }

    /// The largest number of documents accepted.
    #[must_use]
    pub fn max_documents(mut self, documents: usize) -> Self {
        self.max_documents = documents;
        self
    }

    /// The largest number of nodes (maps, lists and scalars, aliases expanded) accepted.
    #[must_use]
    pub fn max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = nodes;
        self
    }
}

/// A YAML text that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{kind}", location.map(|at| format!("{at}: ")).unwrap_or_default())]
pub struct YamlError {
    /// Where the problem is, when known.
    pub location: Option<Location>,
    /// What is wrong.
    pub kind: YamlErrorKind,
}

impl YamlError {
    /// A stable CamelCase name of the problem.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            YamlErrorKind::TooLarge { .. } => "TooLarge",
            YamlErrorKind::LimitExceeded { .. } => "LimitExceeded",
            YamlErrorKind::DuplicateKey { .. } => "DuplicateKey",
            YamlErrorKind::Syntax { .. } => "InvalidYaml",
            YamlErrorKind::NonFiniteNumber => "NonFiniteNumber",
            YamlErrorKind::UnquotedBracket { .. } => "InvalidYaml",
        }
    }
}

/// The ways a YAML text can fail to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum YamlErrorKind {
    /// The text is longer than [`YamlLimits::max_input_bytes`].
    #[error("the YAML text has {size_bytes} bytes, more than the limit of {limit_bytes}")]
    TooLarge {
        /// The length of the text.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A bound of [`YamlLimits`] or of alias expansion was crossed.
    #[error("YAML limit exceeded: {message}")]
    LimitExceeded {
        /// The reader's description.
        message: String,
    },
    /// A key appears twice in one mapping (read as a warning: the last value is used, as the
    /// API server's default field validation does).
    #[error("{} is repeated in this mapping; the last value is used", key.as_deref().map_or_else(|| "a key".to_owned(), |key| format!("key {key:?}")))]
    DuplicateKey {
        /// The key, when it is a scalar.
        key: Option<String>,
    },
    /// The text is not well-formed YAML, or holds something JSON cannot (a map as a key).
    #[error("invalid YAML: {message}")]
    Syntax {
        /// The reader's description.
        message: String,
    },
    /// `.nan` or `.inf`, which JSON cannot hold.
    #[error("a number that is not finite")]
    NonFiniteNumber,
    /// A plain value that begins with `[` but goes on after its `]` (`workers: []string`):
    /// YAML reads the `[` as the start of a list, so the line does not parse.
    #[error(
        "invalid YAML: {written} begins with `[`, which YAML reads as the start of a list; \
         quote it: '{written}'"
    )]
    UnquotedBracket {
        /// The value as written.
        written: String,
    },
}

/// Reads every non-empty document of a YAML text, with the default [`YamlLimits`].
///
/// ```
/// use kro_graph::{FieldPath, parse_yaml_documents};
///
/// let text = "kind: ConfigMap\n---\napiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\n\
///             spec:\n  schema: {apiVersion: v1alpha1, kind: App}\n  resources: []\n";
/// let documents = parse_yaml_documents(text).expect("valid YAML");
/// let rgd = &documents[1];
/// assert!(rgd.is_resource_graph_definition());
/// let schema: FieldPath = "spec.schema.kind".parse().expect("a path");
/// let at = rgd.source_map.value_location(&schema).expect("located");
/// assert_eq!(at.to_string(), "6:40");
/// assert_eq!(rgd.to_resource_graph_definition().expect("an RGD").spec.schema.kind, "App");
/// ```
///
/// # Errors
///
/// A [`YamlError`] with the location of the first problem.
pub fn parse_yaml_documents(text: &str) -> Result<Vec<YamlDocument>, YamlError> {
    parse_yaml_documents_with(text, &YamlLimits::default())
}

/// Reads every non-empty document of a YAML text within `limits`.
///
/// # Errors
///
/// A [`YamlError`] with the location of the first problem.
pub fn parse_yaml_documents_with(
    text: &str,
    limits: &YamlLimits,
) -> Result<Vec<YamlDocument>, YamlError> {
    if text.len() > limits.max_input_bytes {
        return Err(YamlError {
            location: None,
            kind: YamlErrorKind::TooLarge {
                size_bytes: text.len(),
                limit_bytes: limits.max_input_bytes,
            },
        });
    }
    // Read strictly first, to find a repeated key; then, like kubectl, let the last one win.
    let strict: Result<Vec<Spanned<Node>>, _> = serde_saphyr::from_str_multiple_with_options(
        text,
        saphyr_options(limits, DuplicateKeyPolicy::Error),
    );
    let (roots, repeated) = match strict {
        Ok(roots) => (roots, None),
        Err(error) => {
            let mut strict = yaml_error(&error);
            if let (YamlErrorKind::Syntax { .. }, Some(location)) = (&strict.kind, strict.location)
                && let Some(written) = unquoted_bracket(text, location)
            {
                strict.kind = YamlErrorKind::UnquotedBracket { written };
            }
            if !matches!(strict.kind, YamlErrorKind::DuplicateKey { .. }) {
                return Err(strict);
            }
            let roots = serde_saphyr::from_str_multiple_with_options(
                text,
                saphyr_options(limits, DuplicateKeyPolicy::LastWins),
            )
            .map_err(|error| yaml_error(&error))?;
            (roots, Some(strict))
        }
    };
    let mut documents: Vec<YamlDocument> = roots
        .into_iter()
        .enumerate()
        .map(|(index, root)| {
            let mut source_map = SourceMap::default();
            let value = to_json(root, None, FieldPath::root(), &mut source_map)?;
            let text_at = |key: &str| value.get(key).and_then(Json::as_str).map(str::to_string);
            Ok(YamlDocument {
                index,
                api_version: text_at("apiVersion"),
                kind: text_at("kind"),
                value,
                source_map,
                warnings: Vec::new(),
            })
        })
        .collect::<Result<_, YamlError>>()?;
    if let Some(warning) = repeated {
        let line = warning.location.map_or(0, |location| location.line);
        let owner = documents
            .iter()
            .rposition(|document| document.location().is_some_and(|start| start.line <= line))
            .unwrap_or(0);
        if let Some(document) = documents.get_mut(owner) {
            document.warnings.push(warning);
        }
    }
    Ok(documents)
}

fn saphyr_options(
    limits: &YamlLimits,
    duplicate_keys: DuplicateKeyPolicy,
) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(limits.max_input_bytes);
    budget.max_depth = limits.max_depth;
    budget.max_documents = limits.max_documents;
    budget.max_nodes = limits.max_nodes;
    budget.max_total_scalar_bytes = limits.max_input_bytes.saturating_mul(4);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = duplicate_keys;
    options.legacy_octal_numbers = true;
    options.with_snippet = false;
    options
}

/// The plain value on the line of a syntax error that begins with `[` and goes on after its
/// closing `]` (`[]string`, `[]map[string]integer`): SimpleSchema types YAML cannot read
/// unquoted.
fn unquoted_bracket(text: &str, location: Location) -> Option<String> {
    let line = text
        .lines()
        .nth(usize::try_from(location.line).ok()?.checked_sub(1)?)?;
    let value = line
        .split_once(": [")
        .or_else(|| line.trim_start().strip_prefix("- [").map(|rest| ("", rest)))?
        .1;
    let value = value.split(" #").next().unwrap_or(value).trim_end();
    let close = value.find(']')?;
    let after = value[close + 1..].chars().next()?;
    after.is_ascii_alphanumeric().then(|| format!("[{value}"))
}

fn yaml_error(error: &serde_saphyr::Error) -> YamlError {
    use serde_saphyr::MessageFormatter as _;
    let location = error.location().and_then(location_from_saphyr);
    let message = serde_saphyr::DefaultMessageFormatter
        .format_message(error)
        .into_owned();
    // Errors met while replaying an alias, or decorated with a snippet, wrap the original.
    let mut original = error;
    while let serde_saphyr::Error::AliasError { error, .. }
    | serde_saphyr::Error::WithSnippet { error, .. } = original
    {
        original = error;
    }
    let kind = match original {
        serde_saphyr::Error::Budget { .. }
        | serde_saphyr::Error::AliasReplayLimitExceeded { .. }
        | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
        | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. } => {
            YamlErrorKind::LimitExceeded { message }
        }
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => {
            YamlErrorKind::DuplicateKey { key: key.clone() }
        }
        serde_saphyr::Error::NonFiniteFloat { .. } => YamlErrorKind::NonFiniteNumber,
        _ => YamlErrorKind::Syntax { message },
    };
    YamlError { location, kind }
}

/// Turns a node into JSON, recording the location of it and of its descendants.
fn to_json(
    node: Spanned<Node>,
    key: Option<Location>,
    path: FieldPath,
    source_map: &mut SourceMap,
) -> Result<Json, YamlError> {
    let location = location_from_saphyr(node.referenced);
    let value = match node.value {
        Node::Null => Json::Null,
        Node::Bool(value) => Json::Bool(value),
        Node::Int(value) => Json::from(value),
        Node::UInt(value) => Json::from(value),
        Node::Float(value) => float_to_json(value).ok_or(YamlError {
            location,
            kind: YamlErrorKind::NonFiniteNumber,
        })?,
        Node::String(value) => Json::String(value),
        Node::Seq(items) => {
            let mut list = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                let child = node::with_stack(|| to_json(item, None, path.index(index), source_map));
                list.push(child?);
            }
            Json::Array(list)
        }
        Node::Map(entries) => {
            let mut map = Map::new();
            for (entry_key, entry_value) in entries {
                let Key(name) = entry_key.value;
                let key_location = location_from_saphyr(entry_key.referenced);
                let child_path = path.key(name.as_str());
                let child =
                    node::with_stack(|| to_json(entry_value, key_location, child_path, source_map));
                map.insert(name, child?);
            }
            Json::Object(map)
        }
    };
    if let Some(value_location) = location.or(key) {
        source_map.fields.insert(
            path,
            FieldLocation {
                value: value_location,
                key,
            },
        );
    }
    Ok(value)
}

/// A finite float as JSON, integral ones (within 2^53) as integers like Go's encoder writes them.
fn float_to_json(value: f64) -> Option<Json> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if value.is_finite() && value.fract() == 0.0 && value.abs() <= EXACT {
        // The value is integral and within ±2^53, so the conversion is exact.
        return Some(Json::from(value as i64));
    }
    Number::from_f64(value).map(Json::Number)
}

#[cfg(test)]
mod tests;
