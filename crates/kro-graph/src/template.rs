//! The `${...}` template scanner, with upstream kro's rules
//! (`pkg/graph/parser/cel.go`, `parser.go`, `schemaless.go`).
//!
//! - `${` opens an expression. Braces are counted outside double-quoted strings (a `\` inside
//!   quotes escapes the next byte; only `"` delimits strings, single quotes are not tracked)
//!   and the expression ends where the count returns to zero.
//! - A `${` inside an expression and outside a string literal is an error
//!   ([`TemplateErrorKind::NestedExpression`]) unless the byte before it is `"`.
//! - A `${` that is never closed is literal text; scanning resumes after it.
//! - `${"${VAR}"}` is how a literal `${VAR}` is written: it is an expression returning that
//!   string.
//! - A string that is exactly one expression is [`Template::Standalone`] (the result keeps its
//!   type); a string mixing text and expressions is [`Template::Interpolated`] and compiles to
//!   one CEL string concatenation, `"prefix-" + (expr1) + "-" + (expr2)`.
//! - Only values are scanned, never map keys ([`scan_json`]).

mod path;
mod scale;
mod walk;

pub use path::{FieldPath, FieldPathError, PathSegment};
pub use scale::{ScaleMarked, ScaleMarker, split_scale_marker};
pub use walk::{
    FieldTemplateError, MAX_SCAN_ERRORS, ScanErrors, ScannedJson, TemplateField, scan_json,
};

use std::fmt::Write as _;

/// Opens an expression.
const OPEN: &str = "${";

/// Bytes of failed (never closed) scans allowed per byte of input before the scanner gives
/// up: unclosed `${` make the scan quadratic, so hostile strings are cut short.
const UNCLOSED_WORK_PER_BYTE: usize = 64;

/// Unclosed-scan work always allowed, whatever the length of the input.
const UNCLOSED_WORK_FLOOR: usize = 1 << 20;

/// One `${...}` found in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    /// The CEL source between `${` and the matching `}`, verbatim.
    pub cel: String,
    /// Byte offset of `${` in the scanned string.
    pub start: usize,
    /// Byte offset just past the closing `}`.
    pub end: usize,
}

impl Expression {
    /// Byte offset of the CEL source in the scanned string (just after `${`), to shift the
    /// positions of CEL diagnostics into the string.
    pub fn cel_offset(&self) -> usize {
        self.start + OPEN.len()
    }
}

/// A piece of an interpolated string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    /// Literal text.
    Text(String),
    /// An expression whose result (a string) is inserted.
    Expression(Expression),
}

/// A string mixing literal text and expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpolation {
    /// The string as written, for error messages.
    pub template: String,
    /// Text and expressions, in order; empty texts are left out.
    pub parts: Vec<TemplatePart>,
    /// The whole string as one CEL expression: quoted texts and parenthesised expressions
    /// joined with `+`.
    pub cel: String,
}

impl Interpolation {
    /// The expressions, in order.
    pub fn expressions(&self) -> impl Iterator<Item = &Expression> {
        self.parts.iter().filter_map(|part| match part {
            TemplatePart::Expression(expression) => Some(expression),
            TemplatePart::Text(_) => None,
        })
    }
}

/// What a string value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Template {
    /// No expression: the string is used as written.
    Literal,
    /// The whole string is one `${...}`: the result replaces the value with its own type.
    Standalone(Expression),
    /// Text and expressions: the result is a string.
    Interpolated(Interpolation),
}

impl Template {
    /// Whether the string holds at least one expression.
    pub fn has_expressions(&self) -> bool {
        !matches!(self, Template::Literal)
    }

    /// The expressions, in order (none for a literal).
    pub fn expressions(&self) -> Vec<&Expression> {
        match self {
            Template::Literal => Vec::new(),
            Template::Standalone(expression) => vec![expression],
            Template::Interpolated(interpolation) => interpolation.expressions().collect(),
        }
    }

    /// The CEL source to compile: the expression of a standalone string, the concatenation of
    /// an interpolated one, and nothing for a literal.
    pub fn cel(&self) -> Option<&str> {
        match self {
            Template::Literal => None,
            Template::Standalone(expression) => Some(&expression.cel),
            Template::Interpolated(interpolation) => Some(&interpolation.cel),
        }
    }
}

/// A string that breaks the `${...}` rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset} of {template:?}")]
pub struct TemplateError {
    /// The string as written.
    pub template: String,
    /// Byte offset in the string where the problem is.
    pub offset: usize,
    /// What is wrong.
    pub kind: TemplateErrorKind,
}

impl TemplateError {
    /// A stable CamelCase name of the problem, for condition reasons and metric labels.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }
}

/// The ways a string can break the `${...}` rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateErrorKind {
    /// A `${` inside an expression, outside a string literal and not right after `"`;
    /// the error offset is the inner `${`.
    #[error(
        "nested expression (only allowed inside a string literal) in the expression at byte {outer_start}"
    )]
    NestedExpression {
        /// Byte offset of the `${` of the enclosing expression.
        outer_start: usize,
    },
    /// `${}` or `${` and `}` around only whitespace; the error offset is the `${`.
    #[error("empty expression")]
    EmptyExpression,
    /// The string has so many unclosed `${` that scanning it would take too long; the error
    /// offset is the `${` where the scanner stopped.
    #[error("too many unclosed `${{` to scan")]
    TooManyUnclosed,
}

impl TemplateErrorKind {
    /// A stable CamelCase name of the problem.
    pub fn reason(&self) -> &'static str {
        match self {
            TemplateErrorKind::NestedExpression { .. } => "NestedExpression",
            TemplateErrorKind::EmptyExpression => "EmptyExpression",
            TemplateErrorKind::TooManyUnclosed => "TooManyUnclosed",
        }
    }
}

/// How the scan of one `${` ended.
enum Scan {
    /// Closed by the `}` at this byte offset.
    Closed(usize),
    /// A nested `${` outside a string literal, at this byte offset.
    Nested(usize),
    /// The string ended first.
    Unclosed,
}

/// Scans the expression opened by the `${` at `start`.
fn scan_one(text: &str, start: usize) -> Scan {
    let bytes = text.as_bytes();
    let mut depth = 1usize;
    let mut in_string = false;
    let mut position = start + OPEN.len();
    while let Some(&byte) = bytes.get(position) {
        if in_string && byte == b'\\' {
            // The escaped byte is skipped whatever it is (a quote, a brace, a backslash).
            position += 2;
            continue;
        }
        if byte == b'"' {
            in_string = !in_string;
        } else if !in_string {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Scan::Closed(position);
                    }
                }
                b'$' if bytes.get(position + 1) == Some(&b'{')
                    && bytes.get(position - 1) != Some(&b'"') =>
                {
                    return Scan::Nested(position);
                }
                _ => {}
            }
        }
        position += 1;
    }
    Scan::Unclosed
}

/// Finds every `${...}` in `text`, in order, with its byte offsets.
///
/// # Errors
///
/// A [`TemplateError`] for a nested expression outside a string literal, an empty expression,
/// or a string with too many unclosed `${` to scan.
pub fn find_expressions(text: &str) -> Result<Vec<Expression>, TemplateError> {
    let fail = |offset, kind| TemplateError {
        template: text.to_string(),
        offset,
        kind,
    };
    let work_limit = text
        .len()
        .saturating_mul(UNCLOSED_WORK_PER_BYTE)
        .max(UNCLOSED_WORK_FLOOR);
    let mut unclosed_work = 0usize;
    let mut expressions = Vec::new();
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(OPEN)) {
        let start = from + found;
        match scan_one(text, start) {
            Scan::Nested(offset) => {
                return Err(fail(
                    offset,
                    TemplateErrorKind::NestedExpression { outer_start: start },
                ));
            }
            Scan::Closed(close) => {
                let cel = &text[start + OPEN.len()..close];
                if cel.trim().is_empty() {
                    return Err(fail(start, TemplateErrorKind::EmptyExpression));
                }
                expressions.push(Expression {
                    cel: cel.to_string(),
                    start,
                    end: close + 1,
                });
                from = close + 1;
            }
            Scan::Unclosed => {
                // Upstream moves on one byte and searches again; the next `${` it can find
                // starts after this one, so resuming there is the same.
                unclosed_work += text.len() - start;
                if unclosed_work > work_limit {
                    return Err(fail(start, TemplateErrorKind::TooManyUnclosed));
                }
                from = start + 1;
            }
        }
    }
    Ok(expressions)
}

/// Classifies a string value: literal, standalone expression, or interpolated text.
///
/// ```
/// use kro_graph::{Template, parse_template};
///
/// let Template::Interpolated(name) = parse_template("web-${schema.spec.name}").expect("valid")
/// else {
///     panic!("text and an expression");
/// };
/// assert_eq!(name.cel, r#""web-" + (schema.spec.name)"#);
/// assert!(matches!(parse_template("${schema.spec.replicas}"), Ok(Template::Standalone(_))));
/// assert_eq!(parse_template("${incomplete"), Ok(Template::Literal));
/// ```
///
/// # Errors
///
/// The [`TemplateError`]s of [`find_expressions`].
pub fn parse_template(text: &str) -> Result<Template, TemplateError> {
    let expressions = find_expressions(text)?;
    match expressions.as_slice() {
        [] => Ok(Template::Literal),
        [only] if only.start == 0 && only.end == text.len() => {
            Ok(Template::Standalone(only.clone()))
        }
        _ => Ok(Template::Interpolated(interpolate(text, expressions))),
    }
}

/// Splits `text` into parts around its expressions and builds the CEL concatenation.
fn interpolate(text: &str, expressions: Vec<Expression>) -> Interpolation {
    let mut parts = Vec::with_capacity(expressions.len() * 2 + 1);
    let mut position = 0;
    for expression in expressions {
        if expression.start > position {
            parts.push(TemplatePart::Text(
                text[position..expression.start].to_string(),
            ));
        }
        position = expression.end;
        parts.push(TemplatePart::Expression(expression));
    }
    if position < text.len() {
        parts.push(TemplatePart::Text(text[position..].to_string()));
    }
    let cel = parts
        .iter()
        .map(|part| match part {
            TemplatePart::Text(text) => quote_cel_string(text),
            TemplatePart::Expression(expression) => format!("({})", expression.cel),
        })
        .collect::<Vec<_>>()
        .join(" + ");
    Interpolation {
        template: text.to_string(),
        parts,
        cel,
    }
}

/// Quotes `text` as a double-quoted CEL string literal, escaping like Go's `strconv.Quote`
/// for the characters that need it.
fn quote_cel_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{07}' => quoted.push_str("\\a"),
            '\u{08}' => quoted.push_str("\\b"),
            '\u{0c}' => quoted.push_str("\\f"),
            '\u{0b}' => quoted.push_str("\\v"),
            control if control.is_ascii_control() => {
                let _ = write!(quoted, "\\x{:02x}", u32::from(control));
            }
            control if control.is_control() => {
                let _ = write!(quoted, "\\u{:04x}", u32::from(control));
            }
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests;
