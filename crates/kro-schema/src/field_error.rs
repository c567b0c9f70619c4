//! Field errors as Kubernetes reports them: a field path, an error type, the bad value and a
//! detail, rendered exactly as `k8s.io/apimachinery/pkg/util/validation/field` renders them, plus
//! the message of a 422 `Invalid` status.
//!
//! ```
//! use kro_schema::{BadValue, FieldError, FieldPath};
//!
//! let path = FieldPath::new("spec").child("replicas");
//! let error = FieldError::invalid(path, BadValue::from(0), "must be positive");
//! assert_eq!(error.to_string(), "spec.replicas: Invalid value: 0: must be positive");
//! ```

mod go_text;

use std::fmt;

use serde_json::Value;

use crate::gvk::Gvk;

pub use go_text::json_float as go_json_float;
pub(crate) use go_text::{format_float, format_number, marshal_json, quote};

/// `text` as Go's `%q` writes it, for messages that embed Go-syntax values.
pub fn go_quote(text: &str) -> String {
    quote(text)
}

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathElement {
    /// A field name, rendered `.name`.
    Field(String),
    /// A list index, rendered `[3]`.
    Index(usize),
    /// A map key, rendered `[key]` (without quotes).
    Key(String),
}

/// Where in an object a problem is: `spec.ports[0].name`, `metadata.labels[app]`. The empty
/// path (the object itself) renders as `<nil>`, as Kubernetes renders a nil path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldPath {
    elements: Vec<PathElement>,
}

impl FieldPath {
    /// The object itself.
    pub fn root() -> Self {
        FieldPath::default()
    }

    /// A path of one field.
    pub fn new(name: &str) -> Self {
        FieldPath::root().child(name)
    }

    /// A path from its elements.
    pub fn from_elements(elements: Vec<PathElement>) -> Self {
        FieldPath { elements }
    }

    /// This path followed by a field.
    #[must_use]
    pub fn child(&self, name: &str) -> Self {
        self.with(PathElement::Field(name.to_string()))
    }

    /// This path followed by a list index.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        self.with(PathElement::Index(index))
    }

    /// This path followed by a map key.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        self.with(PathElement::Key(key.to_string()))
    }

    fn with(&self, element: PathElement) -> Self {
        let mut elements = self.elements.clone();
        elements.push(element);
        FieldPath { elements }
    }

    /// The steps of the path, outermost first.
    pub fn elements(&self) -> &[PathElement] {
        &self.elements
    }

    /// Whether this is the object itself.
    pub fn is_root(&self) -> bool {
        self.elements.is_empty()
    }

    /// The rendering without the `<nil>` of the root: the empty string there.
    pub(crate) fn name(&self) -> String {
        render_elements(&self.elements)
    }
}

/// Renders path elements as Kubernetes' `field.Path` does.
pub(crate) fn render_elements(elements: &[PathElement]) -> String {
    let mut out = String::new();
    for (position, element) in elements.iter().enumerate() {
        match element {
            PathElement::Field(name) if !name.is_empty() => {
                if position > 0 {
                    out.push('.');
                }
                out.push_str(name);
            }
            PathElement::Field(_) => out.push_str("[]"),
            PathElement::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
            PathElement::Key(key) => {
                out.push('[');
                out.push_str(key);
                out.push(']');
            }
        }
    }
    out
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.elements.is_empty() {
            f.write_str("<nil>")
        } else {
            f.write_str(&self.name())
        }
    }
}

/// Why a field is invalid: Kubernetes' `field.ErrorType`, whose [`reason`](Self::reason) is
/// the `details.causes[].reason` of a 422 status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldErrorType {
    /// A value that was looked up was not found.
    NotFound,
    /// A required value is missing.
    Required,
    /// A value that must be unique is repeated.
    Duplicate,
    /// A malformed or out-of-range value.
    Invalid,
    /// A value outside an enumeration.
    NotSupported,
    /// A value not allowed under the current conditions.
    Forbidden,
    /// A string longer than allowed.
    TooLong,
    /// A list or map with too many items.
    TooMany,
    /// A list with too few items.
    TooFew,
    /// A string shorter than allowed.
    TooShort,
    /// A problem unrelated to the input.
    Internal,
    /// A value of the wrong type for the schema.
    TypeInvalid,
}

impl FieldErrorType {
    /// The machine-readable cause type: `FieldValueInvalid`, `FieldValueRequired` and so on.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::TooFew => "FieldValueTooFew",
            FieldErrorType::TooShort => "FieldValueTooShort",
            FieldErrorType::Internal => "InternalError",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// Whether the rendering shows the bad value (`Invalid value: "x"`) or only the type.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            FieldErrorType::Required
                | FieldErrorType::Forbidden
                | FieldErrorType::TooLong
                | FieldErrorType::TooShort
                | FieldErrorType::Internal
        )
    }
}

impl fmt::Display for FieldErrorType {
    /// The canonical text: `Invalid value`, `Required value`, `Unsupported value` ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::TooFew => "Too few",
            FieldErrorType::TooShort => "Too short",
            FieldErrorType::Internal => "Internal error",
        })
    }
}

/// The offending value of a [`FieldError`].
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not shown (Kubernetes' `OmitValueType`, used for objects and lists).
    Omitted,
    /// A value as decoded JSON: strings render quoted, numbers and booleans bare, `null` as
    /// the string `"null"`, objects and lists as JSON.
    Value(Value),
    /// A value already written in Go syntax (`%#v`), as Kubernetes prints values of its
    /// internal types, which it does not marshal to JSON (`[]string(nil)`).
    GoSyntax(String),
}

impl BadValue {
    /// A string value.
    pub fn text(text: &str) -> Self {
        BadValue::Value(Value::String(text.to_string()))
    }
}

impl From<Value> for BadValue {
    fn from(value: Value) -> Self {
        BadValue::Value(value)
    }
}

impl From<i64> for BadValue {
    fn from(value: i64) -> Self {
        BadValue::Value(Value::from(value))
    }
}

impl From<&str> for BadValue {
    fn from(value: &str) -> Self {
        BadValue::text(value)
    }
}

impl fmt::Display for BadValue {
    /// The value as Kubernetes prints it after the error type (`"x"`, `3`, `0.5`, `{"a":1}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Omitted => Ok(()),
            BadValue::Value(Value::String(text)) => f.write_str(&quote(text)),
            BadValue::Value(Value::Number(number)) => f.write_str(&format_number(number)),
            BadValue::Value(Value::Bool(b)) => write!(f, "{b}"),
            // apimachinery's `ErrorBody` replaces a nil value by the string "null", quoted.
            BadValue::Value(Value::Null) => f.write_str("\"null\""),
            BadValue::Value(other) => f.write_str(&marshal_json(other)),
            BadValue::GoSyntax(text) => f.write_str(text),
        }
    }
}

/// One validation problem at one field, rendered as Kubernetes renders `*field.Error`:
/// `spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Where.
    pub path: FieldPath,
    /// What kind of problem.
    pub error_type: FieldErrorType,
    /// The offending value.
    pub bad_value: BadValue,
    /// Why, for people (may be empty).
    pub detail: String,
}

impl FieldError {
    fn new(path: FieldPath, error_type: FieldErrorType, bad_value: BadValue, detail: &str) -> Self {
        FieldError {
            path,
            error_type,
            bad_value,
            detail: detail.to_string(),
        }
    }

    /// A malformed or out-of-range value (`field.Invalid`).
    pub fn invalid(path: FieldPath, value: BadValue, detail: &str) -> Self {
        FieldError::new(path, FieldErrorType::Invalid, value, detail)
    }

    /// A value of the wrong type (`field.TypeInvalid`).
    pub fn type_invalid(path: FieldPath, value: BadValue, detail: &str) -> Self {
        FieldError::new(path, FieldErrorType::TypeInvalid, value, detail)
    }

    /// A missing value (`field.Required`).
    pub fn required(path: FieldPath, detail: &str) -> Self {
        FieldError::new(path, FieldErrorType::Required, BadValue::Omitted, detail)
    }

    /// A forbidden value (`field.Forbidden`).
    pub fn forbidden(path: FieldPath, detail: &str) -> Self {
        FieldError::new(path, FieldErrorType::Forbidden, BadValue::Omitted, detail)
    }

    /// A repeated value (`field.Duplicate`).
    pub fn duplicate(path: FieldPath, value: BadValue) -> Self {
        FieldError::new(path, FieldErrorType::Duplicate, value, "")
    }

    /// A value outside `supported` (`field.NotSupported`): the detail lists them quoted.
    pub fn not_supported(path: FieldPath, value: BadValue, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|value| quote(value)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::new(path, FieldErrorType::NotSupported, value, &detail)
    }

    /// A string longer than `max_bytes` (`field.TooLong`; `None` when the limit is unknown).
    /// Kubernetes says "bytes" here even where the schema counts characters, and 1.33 says
    /// "1 bytes" (1.35 says "1 byte").
    pub fn too_long(path: FieldPath, max_bytes: Option<u64>) -> Self {
        let detail = match max_bytes {
            Some(max) => format!("may not be more than {max} bytes"),
            None => "value is too long".to_string(),
        };
        FieldError::new(path, FieldErrorType::TooLong, BadValue::Omitted, &detail)
    }

    /// A list or map with `actual` items where at most `max` are allowed (`field.TooMany`).
    /// Kubernetes 1.33 says "1 items" (1.35 says "1 item").
    pub fn too_many(path: FieldPath, actual: Option<u64>, max: Option<u64>) -> Self {
        let detail = match max {
            Some(max) => format!("must have at most {max} items"),
            None => "has too many items".to_string(),
        };
        let value = actual.map_or(BadValue::Omitted, |actual| {
            BadValue::Value(Value::from(actual))
        });
        FieldError::new(path, FieldErrorType::TooMany, value, &detail)
    }

    /// A problem that is not the input's fault (`field.InternalError`).
    pub fn internal(path: FieldPath, detail: &str) -> Self {
        FieldError::new(path, FieldErrorType::Internal, BadValue::Omitted, detail)
    }

    /// The message without the field path (`ErrorBody`), as in `details.causes[].message`.
    pub fn error_body(&self) -> String {
        let mut body = self.error_type.to_string();
        if self.error_type.shows_value() && self.bad_value != BadValue::Omitted {
            body.push_str(": ");
            body.push_str(&self.bad_value.to_string());
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.error_body())
    }
}

impl std::error::Error for FieldError {}

/// The message of a 422 `Invalid` status: `Widget.example.com "demo" is invalid: <errors>`,
/// with one error bare and several in `[e1, e2]` (Kubernetes' aggregate; repeated messages
/// appear once). With no errors: `Widget.example.com "demo" is invalid`.
pub fn invalid_object_message(gvk: &Gvk, name: &str, errors: &[FieldError]) -> String {
    let group_kind = if gvk.group().is_empty() {
        gvk.kind().to_string()
    } else {
        format!("{}.{}", gvk.kind(), gvk.group())
    };
    let mut messages: Vec<String> = Vec::with_capacity(errors.len());
    for error in errors {
        let message = error.to_string();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    let head = format!("{group_kind} {} is invalid", quote(name));
    match messages.as_slice() {
        [] => head,
        [single] => format!("{head}: {single}"),
        several => format!("{head}: [{}]", several.join(", ")),
    }
}

#[cfg(test)]
mod tests;
