//! Typed references into an instance: `spec::<WebAppSpec>().replicas()` is a [`Ref<i64>`]
//! whose CEL is `schema.spec.replicas`. Owns [`Ref`], [`FromPath`] and [`Typed`], the lowest
//! layer of the crate: it imports none of the crate's other modules.

use std::fmt;
use std::marker::PhantomData;

/// Something a reference can be made of, given the CEL path it reads.
pub trait FromPath {
    /// The reference reading `path` (`schema.spec.ingress`).
    fn from_path(path: String) -> Self;

    /// The reference reading `path`, a field that may be absent (an `Option` field): where a
    /// template's field is set from it, the field is left out while it is absent.
    fn from_optional_path(path: String) -> Self
    where
        Self: Sized,
    {
        Self::from_path(path)
    }
}

/// A type references to which are typed: a reference to a value of it is a `Self::Ref`.
pub trait Typed {
    /// How a reference to a value of this type is typed: [`Ref<Self>`] for scalars and
    /// collections, a generated `<Struct>Ref` with a method per field for structs (the spec
    /// and status structs, and the built-in kinds' definitions in [`k8s`](crate::k8s)).
    type Ref: FromPath;

    /// The reference reading `path` (an `Option` reads it as a field that may be absent).
    fn reference(path: String) -> Self::Ref {
        Self::Ref::from_path(path)
    }
}

impl Typed for serde_json::Value {
    type Ref = Ref<serde_json::Value>;
}

/// No status: a composition whose instances have only the status kro gives every instance.
impl Typed for () {
    type Ref = ();
}

impl FromPath for () {
    fn from_path(_: String) -> Self {}
}

/// A reference to a value of type `T`: CEL reading it (a path into the instance or a
/// resource, or an expression built from others with the combinators of [`expr`](crate::expr)).
/// Displays as `${...}`, as a template field holding it is written.
pub struct Ref<T> {
    expression: String,
    /// Whether the expression needs no parentheses as an operand (a path, a literal, a call).
    atomic: bool,
    /// Whether it reads a field that may be absent (an `Option` field).
    optional: bool,
    value: PhantomData<fn() -> T>,
}

impl<T> Ref<T> {
    /// The CEL expression (`schema.spec.replicas`).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().expression(), "schema.spec.replicas");
    /// assert_eq!(app.replicas().to_string(), "${schema.spec.replicas}");
    /// ```
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// A reference of type `T` to raw CEL (the escape hatch: nothing checks that the
    /// expression is of type `T` until the RGD is compiled).
    ///
    /// ```
    /// # use kro_compose::Ref;
    /// let doubled: Ref<i64> = Ref::raw("schema.spec.replicas * 2");
    /// assert_eq!(doubled.to_string(), "${schema.spec.replicas * 2}");
    /// ```
    pub fn raw(expression: impl Into<String>) -> Self {
        Ref::compound(expression.into())
    }

    /// A reference reading the path `path` (`deployment.status.availableReplicas`).
    pub(crate) fn raw_path(path: String) -> Self {
        Ref::atom(path)
    }

    /// An expression that needs parentheses as an operand.
    pub(crate) fn compound(expression: String) -> Self {
        Ref {
            expression,
            atomic: false,
            optional: false,
            value: PhantomData,
        }
    }

    /// An expression that needs no parentheses as an operand.
    pub(crate) fn atom(expression: String) -> Self {
        Ref {
            expression,
            atomic: true,
            optional: false,
            value: PhantomData,
        }
    }

    /// The expression where a template field is set from it: for a field that may be absent,
    /// guarded so that the template's field is left out then (`has(p) ? p : omit()`).
    pub(crate) fn template_expression(&self) -> String {
        if self.optional {
            format!("has({0}) ? {0} : omit()", self.expression)
        } else {
            self.expression.clone()
        }
    }

    /// The expression as an operand: parenthesized unless atomic.
    pub(crate) fn operand(&self) -> String {
        if self.atomic {
            self.expression.clone()
        } else {
            format!("({})", self.expression)
        }
    }
}

impl<T> Clone for Ref<T> {
    fn clone(&self) -> Self {
        Ref {
            expression: self.expression.clone(),
            atomic: self.atomic,
            optional: self.optional,
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
        Ref::atom(path)
    }

    fn from_optional_path(path: String) -> Self {
        Ref {
            optional: true,
            ..Ref::atom(path)
        }
    }
}

impl<T> serde::Serialize for Ref<T> {
    /// As a template field holding it is written: `${...}`, guarded when it may be absent.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("${{{}}}", self.template_expression()))
    }
}

/// The item a collection's dimension is bound to (see `Composition::for_each`), typed.
///
/// ```
/// # use kro_compose::*;
/// assert_eq!(dimension::<String>("region").expression(), "region");
/// ```
pub fn dimension<T: Typed>(name: &str) -> T::Ref {
    T::Ref::from_path(name.to_owned())
}

/// The item of a collection in the seed's form (`each.item`; see
/// `Composition::for_each_item`), typed.
///
/// ```
/// # use kro_compose::*;
/// #[derive(KroSchema)]
/// struct Queue { name: String }
/// assert_eq!(each_item::<Queue>().name().expression(), "each.item.name");
/// ```
pub fn each_item<T: Typed>() -> T::Ref {
    T::Ref::from_path("each.item".to_owned())
}

/// The position of the item of a collection in the seed's form (`each.index`).
///
/// ```
/// # use kro_compose::*;
/// assert_eq!(each_index().expression(), "each.index");
/// ```
pub fn each_index() -> Ref<i64> {
    Ref::atom("each.index".to_owned())
}

/// The instance's name (`schema.metadata.name`).
///
/// ```
/// # use kro_compose::*;
/// assert_eq!(instance_name().expression(), "schema.metadata.name");
/// ```
pub fn instance_name() -> Ref<String> {
    Ref::atom("schema.metadata.name".to_owned())
}

/// The instance's namespace (`schema.metadata.namespace`).
///
/// ```
/// # use kro_compose::*;
/// assert_eq!(instance_namespace().expression(), "schema.metadata.namespace");
/// ```
pub fn instance_namespace() -> Ref<String> {
    Ref::atom("schema.metadata.namespace".to_owned())
}

/// References into the instance's spec (`schema.spec`) of type `T`.
///
/// ```
/// # use kro_compose::*;
/// # #[derive(KroSchema)]
/// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
/// let app = spec::<AppSpec>();
/// assert_eq!(app.replicas().expression(), "schema.spec.replicas");
/// ```
pub fn spec<T: Typed>() -> T::Ref {
    T::Ref::from_path("schema.spec".to_owned())
}

/// References into the instance's status (`schema.status`) of type `T`.
///
/// ```
/// # use kro_compose::*;
/// #[derive(KroSchema)]
/// struct AppStatus { url: String }
/// assert_eq!(status::<AppStatus>().url().expression(), "schema.status.url");
/// ```
pub fn status<T: Typed>() -> T::Ref {
    T::Ref::from_path("schema.status".to_owned())
}
