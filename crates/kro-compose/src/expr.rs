//! Expressions built from references, typed: comparisons, boolean logic, conditionals,
//! defaults, sizes and the list macros. Each gives a [`Ref`] of the result's type, written as
//! kro's CEL. An operand that is itself an operation is always parenthesized, so that no
//! precedence is left to the reader.
//!
//! ```
//! use kro_compose::{KroSchema, spec};
//! use kro_compose::expr::cond;
//!
//! #[derive(KroSchema)]
//! struct AppSpec {
//!     replicas: i64,
//!     production: bool,
//! }
//!
//! let app = spec::<AppSpec>();
//! let busy = app.replicas().gt(3).and(app.production());
//! assert_eq!(busy.expression(), "(schema.spec.replicas > 3) && schema.spec.production");
//! let size = cond(&busy, "large", "small");
//! assert_eq!(
//!     size.expression(),
//!     "((schema.spec.replicas > 3) && schema.spec.production) ? \"large\" : \"small\""
//! );
//! ```
//!
//! `cel!` is raw CEL, parsed by kro-cel while the program compiles; a syntax error is a
//! compile error at the string (`CEL syntax error: ... mismatched input end of input`):
//!
//! ```compile_fail
//! let broken: kro_compose::Ref<i64> = kro_compose::cel!("schema.spec.replicas +");
//! ```
//!
//! `fmt_cel!` counts its placeholders against its values while compiling:
//!
//! ```compile_fail
//! let url: kro_compose::Ref<String> = kro_compose::fmt_cel!("{}:{}", "host");
//! ```
//!
//! and a reference of one type does not go where another is expected:
//!
//! ```compile_fail
//! use kro_compose::{KroSchema, spec};
//! #[derive(KroSchema)]
//! struct AppSpec {
//!     name: String,
//!     replicas: i64,
//! }
//! let wrong = spec::<AppSpec>().replicas().gt(spec::<AppSpec>().name());
//! ```

use std::cell::Cell;

use crate::reference::{FromPath, Ref, Typed};
use crate::schema::KroSchema;
use crate::template::CelAs;

/// A value usable where a `T` is expected: a reference to one, or a Rust literal of it.
pub trait Operand<T> {
    /// The value as a CEL operand (parenthesized where needed).
    fn cel(&self) -> String;
}

impl<T> Operand<T> for Ref<T> {
    fn cel(&self) -> String {
        self.operand()
    }
}

impl<T> Operand<T> for &Ref<T> {
    fn cel(&self) -> String {
        self.operand()
    }
}

macro_rules! integer_operands {
    ($($ty:ty),*) => {
        $(
            impl Operand<$ty> for $ty {
                fn cel(&self) -> String {
                    self.to_string()
                }
            }
        )*
    };
}

integer_operands!(i8, i16, i32, i64, u8, u16, u32);

impl Operand<f64> for f64 {
    fn cel(&self) -> String {
        float_literal(*self)
    }
}

impl Operand<f32> for f32 {
    fn cel(&self) -> String {
        float_literal(f64::from(*self))
    }
}

impl Operand<bool> for bool {
    fn cel(&self) -> String {
        self.to_string()
    }
}

impl Operand<String> for &str {
    fn cel(&self) -> String {
        string_literal(self)
    }
}

impl Operand<String> for String {
    fn cel(&self) -> String {
        string_literal(self)
    }
}

/// A CEL double literal (always with a decimal point or exponent, so it is not an int).
fn float_literal(value: f64) -> String {
    let text = format!("{value:?}");
    if text.contains(['.', 'e', 'E']) || !value.is_finite() {
        text
    } else {
        format!("{text}.0")
    }
}

/// A CEL string literal: JSON's escapes are CEL's.
fn string_literal(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// `a op b` of type `R`.
fn binary<R>(left: String, operator: &str, right: String) -> Ref<R> {
    Ref::compound(format!("{left} {operator} {right}"))
}

impl<T> Ref<T> {
    /// `self == other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().eq(3).expression(), "schema.spec.replicas == 3");
    /// ```
    pub fn eq(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), "==", other.cel())
    }

    /// `self != other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.name().ne("x").expression(), "schema.spec.name != \"x\"");
    /// ```
    pub fn ne(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), "!=", other.cel())
    }

    /// `has(self)`: whether the field is set (a path only; an optional field before use).
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.tag().has().expression(), "has(schema.spec.tag)");
    /// ```
    pub fn has(&self) -> Ref<bool> {
        Ref::atom(format!("has({})", self.expression()))
    }

    /// `self` when set, else `fallback`: `has(self) ? self : fallback`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.tag().or_default("latest").expression(), "has(schema.spec.tag) ? schema.spec.tag : \"latest\"");
    /// ```
    pub fn or_default(&self, fallback: impl Operand<T>) -> Ref<T> {
        Ref::compound(format!(
            "has({}) ? {} : {}",
            self.expression(),
            self.operand(),
            fallback.cel()
        ))
    }
}

/// Kinds whose values CEL orders (`<`, `>`).
pub trait Ordered {}
impl Ordered for i8 {}
impl Ordered for i16 {}
impl Ordered for i32 {}
impl Ordered for i64 {}
impl Ordered for u8 {}
impl Ordered for u16 {}
impl Ordered for u32 {}
impl Ordered for f32 {}
impl Ordered for f64 {}
impl Ordered for String {}

impl<T: Ordered> Ref<T> {
    /// `self > other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().gt(1).expression(), "schema.spec.replicas > 1");
    /// ```
    pub fn gt(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), ">", other.cel())
    }

    /// `self >= other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().ge(1).expression(), "schema.spec.replicas >= 1");
    /// ```
    pub fn ge(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), ">=", other.cel())
    }

    /// `self < other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().lt(10).expression(), "schema.spec.replicas < 10");
    /// ```
    pub fn lt(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), "<", other.cel())
    }

    /// `self <= other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.replicas().le(10).expression(), "schema.spec.replicas <= 10");
    /// ```
    pub fn le(&self, other: impl Operand<T>) -> Ref<bool> {
        binary(self.operand(), "<=", other.cel())
    }
}

impl Ref<bool> {
    /// `self && other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.enabled().and(app.replicas().gt(0)).expression(), "schema.spec.enabled && (schema.spec.replicas > 0)");
    /// ```
    pub fn and(&self, other: impl Operand<bool>) -> Ref<bool> {
        binary(self.operand(), "&&", other.cel())
    }

    /// `self || other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.enabled().or(true).expression(), "schema.spec.enabled || true");
    /// ```
    pub fn or(&self, other: impl Operand<bool>) -> Ref<bool> {
        binary(self.operand(), "||", other.cel())
    }

    /// `!self`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.enabled().not().expression(), "!schema.spec.enabled");
    /// ```
    pub fn not(&self) -> Ref<bool> {
        Ref::atom(format!("!{}", self.operand()))
    }
}

impl Ref<String> {
    /// `size(self)`: the length in code points.
    pub fn size(&self) -> Ref<i64> {
        Ref::atom(format!("size({})", self.expression()))
    }

    /// `self + other`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.name().concat("-db").expression(), "schema.spec.name + \"-db\"");
    /// ```
    pub fn concat(&self, other: impl Operand<String>) -> Ref<String> {
        binary(self.operand(), "+", other.cel())
    }
}

/// `condition ? then : otherwise`.
///
/// ```
/// # use kro_compose::*;
/// # #[derive(KroSchema)]
/// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
/// use kro_compose::expr::cond;
/// let app = spec::<AppSpec>();
/// assert_eq!(cond(&app.enabled(), 3, 1).expression(), "schema.spec.enabled ? 3 : 1");
/// ```
pub fn cond<T>(condition: &Ref<bool>, then: impl Operand<T>, otherwise: impl Operand<T>) -> Ref<T> {
    Ref::compound(format!(
        "{} ? {} : {}",
        condition.operand(),
        then.cel(),
        otherwise.cel()
    ))
}

thread_local! {
    /// How deep in list macros the expression being built is: each level names its variable
    /// after it, so nested macros never shadow each other and the text is deterministic.
    static MACRO_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Calls `body` with a fresh macro variable (typed as `E`, a reference to an element); the
/// variable's name and the body.
fn with_variable<E: FromPath, R>(body: impl FnOnce(E) -> Ref<R>) -> (String, Ref<R>) {
    let depth = MACRO_DEPTH.with(|depth| {
        let next = depth.get() + 1;
        depth.set(next);
        next
    });
    let name = format!("x{depth}");
    let result = body(E::from_path(name.clone()));
    MACRO_DEPTH.with(|depth| depth.set(depth.get() - 1));
    (name, result)
}

impl<T: Typed> Ref<Vec<T>> {
    /// `size(self)`.
    pub fn size(&self) -> Ref<i64> {
        Ref::atom(format!("size({})", self.expression()))
    }

    /// `self.exists(x, predicate(x))`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.queues().exists(|queue| queue.eq("jobs")).expression(), "schema.spec.queues.exists(x1, x1 == \"jobs\")");
    /// ```
    pub fn exists(&self, predicate: impl FnOnce(T::Ref) -> Ref<bool>) -> Ref<bool> {
        let (name, body) = with_variable(predicate);
        Ref::atom(format!(
            "{}.exists({name}, {})",
            self.operand(),
            body.expression()
        ))
    }

    /// `self.all(x, predicate(x))`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.queues().all(|queue| queue.size().gt(0)).expression(), "schema.spec.queues.all(x1, size(x1) > 0)");
    /// ```
    pub fn all(&self, predicate: impl FnOnce(T::Ref) -> Ref<bool>) -> Ref<bool> {
        let (name, body) = with_variable(predicate);
        Ref::atom(format!(
            "{}.all({name}, {})",
            self.operand(),
            body.expression()
        ))
    }

    /// `self.map(x, transform(x))`.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.queues().map(|queue| queue.concat("-q")).expression(), "schema.spec.queues.map(x1, x1 + \"-q\")");
    /// ```
    pub fn map<R>(&self, transform: impl FnOnce(T::Ref) -> Ref<R>) -> Ref<Vec<R>> {
        let (name, body) = with_variable(transform);
        Ref::atom(format!(
            "{}.map({name}, {})",
            self.operand(),
            body.expression()
        ))
    }
}

impl Ref<Vec<String>> {
    /// `self.join(separator)`: the strings joined into one.
    ///
    /// ```
    /// # use kro_compose::*;
    /// # #[derive(KroSchema)]
    /// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool, tag: Option<String> }
    /// let app = spec::<AppSpec>();
    /// assert_eq!(app.queues().join(",").expression(), "schema.spec.queues.join(\",\")");
    /// ```
    pub fn join(&self, separator: &str) -> Ref<String> {
        Ref::atom(format!(
            "{}.join({})",
            self.operand(),
            serde_json::Value::String(separator.to_owned())
        ))
    }
}

/// A value a string template (`fmt_cel!`) can hold: strings as they are, other kinds through
/// `string(...)`.
pub trait CelText {
    /// The value as a CEL string operand.
    fn cel_text(&self) -> String;
}

impl CelText for Ref<String> {
    fn cel_text(&self) -> String {
        self.operand()
    }
}

impl CelText for &str {
    fn cel_text(&self) -> String {
        string_literal(self)
    }
}

impl CelText for String {
    fn cel_text(&self) -> String {
        string_literal(self)
    }
}

macro_rules! text_through_string {
    ($($ty:ty),*) => {
        $(
            impl CelText for Ref<$ty> {
                fn cel_text(&self) -> String {
                    format!("string({})", self.expression())
                }
            }
        )*
    };
}

text_through_string!(i8, i16, i32, i64, u8, u16, u32, f32, f64, bool);

/// A unit enum with `#[derive(KroSchema)]`: a string in CEL. Its variants are operands
/// (`tier.environment().eq(Environment::Prod)`) and its references read as text.
pub trait StringEnum: KroSchema {}

/// A string enum's reference may be set where a string is expected.
impl<T: StringEnum> CelAs<String> for T {}

impl<T: StringEnum> CelText for Ref<T> {
    fn cel_text(&self) -> String {
        self.operand()
    }
}

impl<T: CelText> CelText for &T {
    fn cel_text(&self) -> String {
        (*self).cel_text()
    }
}

/// Used by `fmt_cel!`: the template's literal pieces and its values, joined with `+`.
#[doc(hidden)]
pub fn __template(pieces: &[&str], values: &[String]) -> Ref<String> {
    let mut parts = Vec::new();
    for (index, piece) in pieces.iter().enumerate() {
        if !piece.is_empty() {
            parts.push(string_literal(piece));
        }
        if let Some(value) = values.get(index) {
            parts.push(value.clone());
        }
    }
    match parts.as_slice() {
        [] => Ref::atom(string_literal("")),
        [one] => Ref::compound(one.clone()),
        _ => Ref::compound(parts.join(" + ")),
    }
}
