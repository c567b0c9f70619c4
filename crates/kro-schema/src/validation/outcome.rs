//! What the OpenAPI keyword checks find, before it becomes [`FieldError`]s: kube-openapi's
//! `validate.Result` (problems de-duplicated by message, plus the count of checks that matched,
//! which picks the best failing branch of `anyOf` and `oneOf`).

use serde_json::Value;

use crate::field_error::{BadValue, FieldError, FieldPath, PathElement};

/// Which kube-openapi check failed; decides the Kubernetes error type it becomes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Code {
    /// Wrong type or format (`field.TypeInvalid`).
    InvalidType,
    /// A required property is missing (`field.Required`).
    Required,
    /// A string longer than `maxLength` (`field.TooLong`).
    TooLong { max: u64 },
    /// A value outside `enum` (`field.NotSupported`).
    Enum { allowed: Vec<Value> },
    /// A list or object with more items than allowed (`field.TooMany`).
    TooMany { actual: u64, max: u64 },
    /// Every other keyword (`field.Invalid`).
    Other,
}

/// One problem: a kube-openapi `*errors.Validation` (with the field it names) or a plain
/// error such as "must validate at least one schema (anyOf)" (no field: reported at `<nil>`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Issue {
    /// `None` for plain errors.
    pub code: Option<Code>,
    /// The field the error names (for plain errors: empty).
    pub path: Vec<PathElement>,
    /// The value the error carries (`err.Value`), if any.
    pub value: Option<Value>,
    /// kube-openapi's message, the detail of the field error.
    pub message: String,
}

impl Issue {
    /// A kube-openapi validation error.
    pub fn validation(
        code: Code,
        path: Vec<PathElement>,
        value: Option<Value>,
        message: String,
    ) -> Self {
        Issue {
            code: Some(code),
            path,
            value,
            message,
        }
    }

    /// A plain error, reported at the root with an empty value.
    pub fn plain(message: String) -> Self {
        Issue {
            code: None,
            path: Vec::new(),
            value: None,
            message,
        }
    }

    /// The Kubernetes field error, as `kubeOpenAPIResultToFieldErrors` maps it.
    pub fn into_field_error(self) -> FieldError {
        let path = FieldPath::from_elements(self.path);
        let value = || BadValue::Value(self.value.clone().unwrap_or(Value::String(String::new())));
        match &self.code {
            None => FieldError::invalid(FieldPath::root(), BadValue::text(""), &self.message),
            Some(Code::Required) => FieldError::required(path, ""),
            Some(Code::Enum { allowed }) => {
                let allowed: Vec<String> = allowed
                    .iter()
                    .map(|value| match value {
                        Value::String(text) => text.clone(),
                        other => crate::field_error::marshal_json(other),
                    })
                    .collect();
                let bad = BadValue::Value(self.value.clone().unwrap_or(Value::Null));
                FieldError::not_supported(path, bad, &allowed)
            }
            Some(Code::TooLong { max }) => FieldError::too_long(path, Some(*max)),
            Some(Code::TooMany { actual, max }) => {
                FieldError::too_many(path, Some(*actual), Some(*max))
            }
            Some(Code::InvalidType) => FieldError::type_invalid(path, value(), &self.message),
            Some(Code::Other) => FieldError::invalid(path, value(), &self.message),
        }
    }
}

/// The findings of one check or one schema node.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Outcome {
    pub issues: Vec<Issue>,
    /// How many checks applied and passed along the way (kube-openapi's `MatchCount`).
    pub match_count: usize,
}

impl Outcome {
    /// A single problem, with no matches counted.
    pub fn failure(issue: Issue) -> Self {
        Outcome {
            issues: vec![issue],
            match_count: 0,
        }
    }

    /// One passing check.
    pub fn pass() -> Self {
        Outcome {
            issues: Vec::new(),
            match_count: 1,
        }
    }

    /// Adds a problem unless one with the same message is already there.
    pub fn add(&mut self, issue: Issue) {
        if !self
            .issues
            .iter()
            .any(|existing| existing.message == issue.message)
        {
            self.issues.push(issue);
        }
    }

    /// Adds another outcome's problems and matches.
    pub fn merge(&mut self, other: Outcome) {
        for issue in other.issues {
            self.add(issue);
        }
        self.match_count += other.match_count;
    }

    /// Counts one more passing check.
    pub fn inc(&mut self) {
        self.match_count += 1;
    }

    /// Whether nothing failed.
    pub fn is_valid(&self) -> bool {
        self.issues.is_empty()
    }
}
