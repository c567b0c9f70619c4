//! Typed references into an instance: `spec::<WebAppSpec>().replicas()` is a [`Ref<i64>`]
//! whose CEL is `schema.spec.replicas`.

use std::fmt;
use std::marker::PhantomData;

use crate::KroSchema;

/// Something a reference can be made of, given the CEL path it reads.
pub trait FromPath {
    /// The reference reading `path` (`schema.spec.ingress`).
    fn from_path(path: String) -> Self;
}

/// A reference to a value of type `T`: CEL reading it. Displays as `${...}`, as a template
/// field holding it is written.
pub struct Ref<T> {
    expression: String,
    value: PhantomData<fn() -> T>,
}

impl<T> Ref<T> {
    /// The CEL expression (`schema.spec.replicas`).
    pub fn expression(&self) -> &str {
        &self.expression
    }
}

impl<T> Clone for Ref<T> {
    fn clone(&self) -> Self {
        Ref {
            expression: self.expression.clone(),
            value: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Ref<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Ref").field(&self.expression).finish()
    }
}

impl<T> PartialEq for Ref<T> {
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression
    }
}

impl<T> fmt::Display for Ref<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${{{}}}", self.expression)
    }
}

impl<T> FromPath for Ref<T> {
    fn from_path(path: String) -> Self {
        Ref {
            expression: path,
            value: PhantomData,
        }
    }
}

/// References into the instance's spec (`schema.spec`) of type `T`.
pub fn spec<T: KroSchema>() -> T::Ref {
    T::Ref::from_path("schema.spec".to_owned())
}

/// References into the instance's status (`schema.status`) of type `T`.
pub fn status<T: KroSchema>() -> T::Ref {
    T::Ref::from_path("schema.status".to_owned())
}
