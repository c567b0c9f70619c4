//! Where a walk is in an object, as borrowed steps: nothing is allocated on the way down, and
//! a [`FieldPath`](crate::FieldPath) or kube-openapi's path string is built only for an error.

use crate::field_error::PathElement;

/// One step from a value to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step<'v> {
    /// A property the schema names.
    Property(&'v str),
    /// A key validated by `additionalProperties`, which kube-openapi joins with a dot.
    Additional(&'v str),
    /// A map key, rendered `[key]`.
    Key(&'v str),
    /// A list index.
    Index(usize),
}

/// The path elements of `steps`.
pub(super) fn elements(steps: &[Step<'_>]) -> Vec<PathElement> {
    steps
        .iter()
        .map(|step| match step {
            Step::Property(name) | Step::Additional(name) => {
                PathElement::Field((*name).to_string())
            }
            Step::Key(key) => PathElement::Key((*key).to_string()),
            Step::Index(index) => PathElement::Index(*index),
        })
        .collect()
}

/// kube-openapi's path string: `spec.ports[0].name`; a key under `additionalProperties` is
/// always preceded by a dot (`.key` at the root).
pub(super) fn openapi_name(steps: &[Step<'_>]) -> String {
    let mut name = String::new();
    for step in steps {
        match step {
            Step::Property(property) => {
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(property);
            }
            Step::Additional(key) | Step::Key(key) => {
                name.push('.');
                name.push_str(key);
            }
            Step::Index(index) => {
                name.push('[');
                name.push_str(&index.to_string());
                name.push(']');
            }
        }
    }
    name
}
