//! Expression text and positions: byte offsets turned into lines, columns and caret snippets.

use std::fmt;
use std::sync::Arc;

/// A half-open byte range `[start, end)` in an expression's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u32,
    /// Offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    #[must_use]
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A position for people: 1-based line and 1-based column counted in characters. Ordered by
/// line, then column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Line number, starting at 1.
    pub line: u32,
    /// Column number in characters, starting at 1.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The text of one expression, with the offsets of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    text: Arc<str>,
    line_starts: Vec<u32>,
}

impl Source {
    /// Wraps expression text. The text must already be within the size limit the parser checks.
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        for (index, byte) in text.bytes().enumerate() {
            if byte == b'\n' {
                line_starts.push(u32::try_from(index + 1).unwrap_or(u32::MAX));
            }
        }
        Source {
            text: Arc::from(text),
            line_starts,
        }
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The line and column of a byte offset (clamped to the text).
    pub fn location(&self, offset: u32) -> Location {
        let offset = (offset as usize).min(self.text.len());
        let line_index = match self.line_starts.binary_search(&(offset as u32)) {
            Ok(index) => index,
            Err(index) => index - 1,
        };
        let line_start = self.line_starts[line_index] as usize;
        let prefix = self.text.get(line_start..offset).unwrap_or("");
        Location {
            line: line_index as u32 + 1,
            column: prefix.chars().count() as u32 + 1,
        }
    }

    /// The text of a 1-based line, without its line break.
    pub fn line(&self, line: u32) -> &str {
        let index = line.saturating_sub(1) as usize;
        let Some(&start) = self.line_starts.get(index) else {
            return "";
        };
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |&next| next as usize - 1);
        self.text
            .get(start as usize..end)
            .unwrap_or("")
            .trim_end_matches('\r')
    }

    /// The line holding `offset` and a caret under its column, in cel-go's layout:
    ///
    /// ```text
    ///  | 1 + "a"
    ///  | ..^
    /// ```
    pub fn snippet(&self, offset: u32) -> String {
        let location = self.location(offset);
        let line = self.line(location.line);
        let indent: String = line
            .chars()
            .take(location.column as usize - 1)
            .map(|c| if c == '\t' { '\t' } else { '.' })
            .collect();
        format!(" | {line}\n | {indent}^")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_lines_and_characters_from_one() {
        let source = Source::new("a +\n  bé + c");
        assert_eq!(source.location(0), Location { line: 1, column: 1 });
        assert_eq!(source.location(2), Location { line: 1, column: 3 });
        assert_eq!(source.location(6), Location { line: 2, column: 3 });
        // 'é' is two bytes but one column.
        assert_eq!(source.location(9), Location { line: 2, column: 5 });
    }

    #[test]
    fn snippet_puts_a_caret_under_the_column() {
        let source = Source::new("1 + \"a\"");
        assert_eq!(source.snippet(2), " | 1 + \"a\"\n | ..^");
    }

    #[test]
    fn offsets_past_the_end_are_clamped() {
        let source = Source::new("ab");
        assert_eq!(source.location(99), Location { line: 1, column: 3 });
        assert_eq!(source.line(7), "");
    }
}
