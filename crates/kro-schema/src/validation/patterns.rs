//! The `pattern` keywords of a schema, compiled once. Patterns are Go (RE2) regular
//! expressions; the regex crate reads the same syntax, except that Go's `\d`, `\w`, `\s` and
//! `\b` are ASCII-only while the regex crate's are Unicode, so those are rewritten to their
//! ASCII classes first.

use std::collections::HashMap;

use regex::Regex;

use crate::openapi::{AdditionalProperties, Schema};

/// How deep the walk that collects patterns goes (schemas are finite trees, but untrusted).
const MAX_DEPTH: usize = 256;

/// Compiled patterns by their text; a pattern that does not compile keeps its error message.
#[derive(Debug, Clone, Default)]
pub(super) struct Patterns {
    compiled: HashMap<String, Result<Regex, String>>,
}

impl Patterns {
    /// Compiles every `pattern` in `schema`.
    pub fn collect(schema: &Schema) -> Self {
        let mut patterns = Patterns::default();
        patterns.walk(schema, 0);
        patterns
    }

    fn walk(&mut self, schema: &Schema, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(pattern) = &schema.pattern {
            self.compiled
                .entry(pattern.clone())
                .or_insert_with(|| compile(pattern));
        }
        let children = schema
            .properties
            .values()
            .chain(schema.items.as_deref())
            .chain(schema.all_of.iter())
            .chain(schema.any_of.iter())
            .chain(schema.one_of.iter())
            .chain(schema.not.as_deref());
        for child in children {
            self.walk(child, depth + 1);
        }
        if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
            self.walk(values, depth + 1);
        }
    }

    /// The compiled pattern (compiling it now if the schema walk did not reach it).
    pub fn matches(&self, pattern: &str, text: &str) -> Result<bool, String> {
        match self.compiled.get(pattern) {
            Some(Ok(regex)) => Ok(regex.is_match(text)),
            Some(Err(message)) => Err(message.clone()),
            None => compile(pattern).map(|regex| regex.is_match(text)),
        }
    }
}

/// Compiles a Go regular expression; the error reads like Go's `error parsing regexp: ...`.
pub(super) fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(&ascii_classes(pattern))
        .or_else(|_| Regex::new(pattern))
        .map_err(|error| {
            let text = error.to_string();
            let reason = text
                .lines()
                .rev()
                .find_map(|line| line.trim().strip_prefix("error: "))
                .unwrap_or(text.trim());
            format!("error parsing regexp: {reason}")
        })
}

/// Rewrites Perl classes and word boundaries to Go's ASCII meanings.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                out.push_str(&rewrite_escape(next, in_class));
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // A POSIX class such as [:alpha:], copied through its closing ":]".
                out.push('[');
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == ']' {
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

fn rewrite_escape(escaped: char, in_class: bool) -> String {
    let (inside, outside) = match escaped {
        'd' => ("0-9", "[0-9]"),
        'D' => ("[:^digit:]", "[^0-9]"),
        'w' => ("0-9A-Za-z_", "[0-9A-Za-z_]"),
        'W' => ("[:^word:]", "[^0-9A-Za-z_]"),
        's' => ("\\t\\n\\x0C\\r ", "[\\t\\n\\x0C\\r ]"),
        'S' => ("[:^space:]", "[^\\t\\n\\x0C\\r ]"),
        'b' if !in_class => ("", "(?-u:\\b)"),
        'B' if !in_class => ("", "(?-u:\\B)"),
        other => return format!("\\{other}"),
    };
    if in_class { inside } else { outside }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        let digits = compile(r"^\d+$").expect("compiles");
        assert!(digits.is_match("123"));
        assert!(!digits.is_match("١٢٣"));
        let word = compile(r"^[\w.-]+$").expect("compiles");
        assert!(word.is_match("a_b.c-d"));
        assert!(!word.is_match("é"));
        assert!(compile(r"\bfoo\b").expect("compiles").is_match("a foo b"));
        assert!(compile(r"^[]a]$").expect("compiles").is_match("]"));
        assert!(
            compile(r"^[[:alpha:]]+$")
                .expect("compiles")
                .is_match("abc")
        );
    }

    #[test]
    fn invalid_patterns_report_a_go_style_message() {
        let error = compile("+").expect_err("nothing to repeat");
        assert!(error.starts_with("error parsing regexp: "), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
