//! Field paths inside a JSON tree: map keys and list indices, written like
//! `spec.containers[0].image`.

use std::fmt;
use std::str::FromStr;

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSegment {
    /// A map key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// Where a value sits in a JSON tree, from the root: `spec.resources[2].template`.
///
/// `Display` follows upstream kro: keys are joined with `.`, indices written `[i]`, and a key
/// that is empty or would be ambiguous (it holds `.`, `[`, `]`, `"` or `\`) is written
/// `["key"]` with `"` and `\` escaped. [`FromStr`] reads that form back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath {
    segments: Vec<PathSegment>,
}

/// A string that is not a valid [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path {path:?} at byte {offset}")]
pub struct FieldPathError {
    /// The text that was parsed.
    pub path: String,
    /// Byte offset of the first character that could not be read.
    pub offset: usize,
}

impl FieldPath {
    /// The empty path: the root of a tree.
    pub fn root() -> Self {
        Self::default()
    }

    /// A path made of the given segments.
    pub fn from_segments(segments: Vec<PathSegment>) -> Self {
        Self { segments }
    }

    /// The segments, from the root.
    pub fn segments(&self) -> &[PathSegment] {
        &self.segments
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The number of segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether the path has no segment (same as [`FieldPath::is_root`]).
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Appends a map key.
    pub fn push_key(&mut self, key: impl Into<String>) {
        self.segments.push(PathSegment::Key(key.into()));
    }

    /// Appends a list index.
    pub fn push_index(&mut self, index: usize) {
        self.segments.push(PathSegment::Index(index));
    }

    /// Removes and returns the last segment.
    pub fn pop(&mut self) -> Option<PathSegment> {
        self.segments.pop()
    }

    /// This path followed by a map key.
    #[must_use]
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut path = self.clone();
        path.push_key(key);
        path
    }

    /// This path followed by a list index.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        let mut path = self.clone();
        path.push_index(index);
        path
    }

    /// This path followed by every segment of `relative`.
    #[must_use]
    pub fn join(&self, relative: &FieldPath) -> Self {
        let mut segments = self.segments.clone();
        segments.extend(relative.segments.iter().cloned());
        Self { segments }
    }

    /// The path without its last segment, or `None` at the root.
    pub fn parent(&self) -> Option<Self> {
        let (_, parent) = self.segments.split_last()?;
        Some(Self {
            segments: parent.to_vec(),
        })
    }

    /// Whether `prefix` is this path or one of its ancestors.
    pub fn starts_with(&self, prefix: &FieldPath) -> bool {
        self.segments.starts_with(&prefix.segments)
    }
}

impl From<Vec<PathSegment>> for FieldPath {
    fn from(segments: Vec<PathSegment>) -> Self {
        Self { segments }
    }
}

/// Whether a key must be written `["key"]` to be read back unambiguously.
fn needs_brackets(key: &str) -> bool {
    key.is_empty() || key.contains(['.', '[', ']', '"', '\\'])
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, segment) in self.segments.iter().enumerate() {
            match segment {
                PathSegment::Index(index) => write!(f, "[{index}]")?,
                PathSegment::Key(key) if needs_brackets(key) => {
                    f.write_str("[\"")?;
                    for character in key.chars() {
                        if matches!(character, '"' | '\\') {
                            f.write_str("\\")?;
                        }
                        write!(f, "{character}")?;
                    }
                    f.write_str("\"]")?;
                }
                PathSegment::Key(key) => {
                    if position > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
            }
        }
        Ok(())
    }
}

impl FromStr for FieldPath {
    type Err = FieldPathError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        PathReader {
            text,
            position: 0,
            segments: Vec::new(),
        }
        .read()
    }
}

struct PathReader<'t> {
    text: &'t str,
    position: usize,
    segments: Vec<PathSegment>,
}

impl PathReader<'_> {
    fn fail(&self) -> FieldPathError {
        FieldPathError {
            path: self.text.to_string(),
            offset: self.position,
        }
    }

    fn rest(&self) -> &str {
        self.text.get(self.position..).unwrap_or("")
    }

    fn read(mut self) -> Result<FieldPath, FieldPathError> {
        while !self.rest().is_empty() {
            let rest = self.rest();
            if rest.starts_with("[\"") {
                self.quoted_key()?;
            } else if rest.starts_with('[') {
                self.index()?;
            } else {
                let at_start = self.position == 0;
                if !at_start {
                    if !rest.starts_with('.') {
                        return Err(self.fail());
                    }
                    self.position += 1;
                }
                self.plain_key()?;
            }
        }
        Ok(FieldPath::from_segments(self.segments))
    }

    fn plain_key(&mut self) -> Result<(), FieldPathError> {
        let rest = self.rest();
        let length = rest.find(['.', '[', ']', '"', '\\']).unwrap_or(rest.len());
        if length == 0 {
            return Err(self.fail());
        }
        self.segments
            .push(PathSegment::Key(rest[..length].to_string()));
        self.position += length;
        Ok(())
    }

    fn index(&mut self) -> Result<(), FieldPathError> {
        let rest = self.rest();
        let digits = rest[1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - 1);
        if digits == 0 || rest.as_bytes().get(1 + digits) != Some(&b']') {
            return Err(self.fail());
        }
        let index = rest[1..1 + digits].parse().map_err(|_| self.fail())?;
        self.segments.push(PathSegment::Index(index));
        self.position += digits + 2;
        Ok(())
    }

    fn quoted_key(&mut self) -> Result<(), FieldPathError> {
        let mut key = String::new();
        let mut characters = self.rest().char_indices().skip(2);
        while let Some((offset, character)) = characters.next() {
            match character {
                '\\' => match characters.next() {
                    Some((_, escaped)) => key.push(escaped),
                    None => break,
                },
                '"' => {
                    if self.rest().as_bytes().get(offset + 1) != Some(&b']') {
                        self.position += offset;
                        return Err(self.fail());
                    }
                    self.segments.push(PathSegment::Key(key));
                    self.position += offset + 2;
                    return Ok(());
                }
                other => key.push(other),
            }
        }
        self.position = self.text.len();
        Err(self.fail())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segments: &[PathSegment]) -> FieldPath {
        FieldPath::from_segments(segments.to_vec())
    }

    fn key(name: &str) -> PathSegment {
        PathSegment::Key(name.to_string())
    }

    #[test]
    fn paths_display_like_upstream_and_read_back() {
        let cases = [
            (path(&[]), ""),
            (path(&[key("spec")]), "spec"),
            (
                path(&[
                    key("spec"),
                    key("containers"),
                    PathSegment::Index(0),
                    key("image"),
                ]),
                "spec.containers[0].image",
            ),
            (path(&[PathSegment::Index(3)]), "[3]"),
            (
                path(&[key("metadata"), key("annotations"), key("kro.run/owned")]),
                "metadata.annotations[\"kro.run/owned\"]",
            ),
            (path(&[key("a"), key("")]), "a[\"\"]"),
            (
                path(&[key("a.b"), PathSegment::Index(0), key("c")]),
                "[\"a.b\"][0].c",
            ),
            (path(&[key("q\"uote\\")]), "[\"q\\\"uote\\\\\"]"),
        ];
        for (value, text) in cases {
            assert_eq!(value.to_string(), text, "display of {value:?}");
            assert_eq!(text.parse::<FieldPath>(), Ok(value), "parse of {text}");
        }
    }

    #[test]
    fn malformed_paths_are_rejected_with_their_offset() {
        let cases = [
            ("a..b", 2),
            ("a[x]", 1),
            ("a[1", 1),
            ("a[\"b", 4),
            ("a[\"b\"x", 4),
            (".a", 0),
            ("a]", 1),
        ];
        for (text, offset) in cases {
            let error = text.parse::<FieldPath>().expect_err(text);
            assert_eq!(error.offset, offset, "offset for {text}");
        }
    }

    #[test]
    fn parents_and_joins_compose() {
        let base: FieldPath = "spec.resources[2]".parse().expect("valid");
        let relative: FieldPath = "template.spec".parse().expect("valid");
        let joined = base.join(&relative);
        assert_eq!(joined.to_string(), "spec.resources[2].template.spec");
        assert!(joined.starts_with(&base));
        assert_eq!(
            joined.parent().map(|p| p.to_string()).as_deref(),
            Some("spec.resources[2].template")
        );
        assert_eq!(FieldPath::root().parent(), None);
        assert_eq!(base.key("id").to_string(), "spec.resources[2].id");
        assert_eq!(base.index(1).to_string(), "spec.resources[2][1]");
    }
}
