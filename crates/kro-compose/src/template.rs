//! Typed templates: what a resource of a composition is made of. A field of a template is a
//! [`Value`]: unset, a Rust literal, or a reference ([`Ref`]) whose type fits the field (a
//! `Ref<String>` cannot go into an integer field: that is a compile error). The built-in
//! kinds' templates are generated from the Kubernetes catalog ([`crate::k8s`]); any JSON is a
//! template too ([`crate::object`]), and [`Template::with`] sets any field by path.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::reference::{FromPath, Ref, Typed};

/// A field of a template: unset (left out of the object), a literal, or a CEL expression.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Value<T> {
    /// Not written: the API server's default applies.
    #[default]
    Unset,
    /// A literal value.
    Set(T),
    /// A CEL expression, written `${...}` (a reference or an expression built from them).
    Expr(String),
}

impl<T> Value<T> {
    /// A value computed by raw CEL (the escape hatch: nothing checks the expression's type
    /// until the RGD is compiled).
    ///
    /// ```
    /// use kro_compose::Value;
    /// let replicas: Value<i64> = Value::raw("schema.spec.replicas * 2");
    /// assert_eq!(replicas, Value::Expr("schema.spec.replicas * 2".to_owned()));
    /// ```
    pub fn raw(expression: impl Into<String>) -> Self {
        Value::Expr(expression.into())
    }

    /// Whether the field is left out.
    ///
    /// ```
    /// # use kro_compose::Value;
    /// assert!(Value::<i64>::default().is_unset());
    /// assert!(!Value::<i64>::from(3).is_unset());
    /// ```
    pub fn is_unset(&self) -> bool {
        matches!(self, Value::Unset)
    }
}

/// How a template value is written in the RGD.
pub trait ToJson {
    /// The value as JSON (references as `${...}` strings).
    fn to_json(&self) -> Json;

    /// The value as a field of an object: `None` leaves the field out (an unset [`Value`],
    /// `None`).
    fn field_json(&self) -> Option<Json> {
        Some(self.to_json())
    }

    /// Writes the value into `object` under `name`, unless it is left out.
    #[doc(hidden)]
    fn write_field(&self, object: &mut Map<String, Json>, name: &str) {
        if let Some(value) = self.field_json() {
            object.insert(name.to_owned(), value);
        }
    }
}

impl<T: ToJson> ToJson for Value<T> {
    /// An unset value inside a list is `null`.
    fn to_json(&self) -> Json {
        self.field_json().unwrap_or(Json::Null)
    }

    fn field_json(&self) -> Option<Json> {
        match self {
            Value::Unset => None,
            Value::Set(value) => Some(value.to_json()),
            Value::Expr(expression) => Some(Json::String(format!("${{{expression}}}"))),
        }
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn to_json(&self) -> Json {
        self.as_ref().map_or(Json::Null, ToJson::to_json)
    }

    fn field_json(&self) -> Option<Json> {
        self.as_ref().map(ToJson::to_json)
    }
}

impl<T> ToJson for Ref<T> {
    /// `${...}`, guarded when it may be absent.
    fn to_json(&self) -> Json {
        Json::String(format!("${{{}}}", self.template_expression()))
    }
}

macro_rules! to_json {
    ($($ty:ty),*) => {
        $(impl ToJson for $ty {
            fn to_json(&self) -> Json {
                Json::from(self.clone())
            }
        })*
    };
}
to_json!(i8, i16, i32, i64, u8, u16, u32, f32, f64, bool, String);

impl ToJson for Json {
    fn to_json(&self) -> Json {
        self.clone()
    }
}

/// No status: an empty object.
impl ToJson for () {
    fn to_json(&self) -> Json {
        Json::Object(Map::new())
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self) -> Json {
        Json::Array(self.iter().map(ToJson::to_json).collect())
    }
}

impl<T: ToJson> ToJson for BTreeMap<String, T> {
    /// Entries left out as fields (unset values) are left out.
    fn to_json(&self) -> Json {
        Json::Object(
            self.iter()
                .filter_map(|(key, value)| Some((key.clone(), value.field_json()?)))
                .collect(),
        )
    }
}

/// A Kubernetes int-or-string (a port by number or by name, a percentage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntOrString {
    /// A number.
    Int(i64),
    /// A string.
    String(String),
}

impl Typed for IntOrString {
    type Ref = Ref<IntOrString>;
}

impl ToJson for IntOrString {
    fn to_json(&self) -> Json {
        match self {
            IntOrString::Int(number) => Json::from(*number),
            IntOrString::String(text) => Json::from(text.clone()),
        }
    }
}

/// A Kubernetes quantity (`500m`, `1Gi`), as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity(pub String);

impl Typed for Quantity {
    type Ref = Ref<Quantity>;
}

impl ToJson for Quantity {
    fn to_json(&self) -> Json {
        Json::from(self.0.clone())
    }
}

/// Which references fit a field: a `Ref<U>` may be set where a `T` is expected when `U: CelAs<T>`
/// (the same CEL type: any Rust integer for an integer field, a string enum for a string).
#[diagnostic::on_unimplemented(
    message = "a reference to `{Self}` cannot be set where a `{T}` is expected",
    label = "this reference is a `{Self}`, the field holds a `{T}`",
    note = "convert it in CEL (`string(...)`, `int(...)`) with `Ref::raw`, or reference a field of the right type"
)]
pub trait CelAs<T> {}

macro_rules! cel_as {
    ($target:ty: $($source:ty),*) => {
        $(impl CelAs<$target> for $source {})*
    };
}
cel_as!(i64: i8, i16, i32, i64, u8, u16, u32);
cel_as!(f64: f32, f64);
cel_as!(bool: bool);
cel_as!(String: String);
cel_as!(IntOrString: i8, i16, i32, i64, u8, u16, u32, String, IntOrString);
cel_as!(Quantity: i8, i16, i32, i64, u8, u16, u32, String, Quantity);
impl<U> CelAs<Json> for U {}
impl<U: CelAs<T>, T> CelAs<Value<T>> for U {}
impl<U: CelAs<E>, E> CelAs<Vec<E>> for Vec<U> {}
impl<U: CelAs<E>, E> CelAs<BTreeMap<String, E>> for BTreeMap<String, U> {}

impl<U: CelAs<T>, T> From<Ref<U>> for Value<T> {
    /// A reference to an `Option` field leaves the field out while it is absent.
    fn from(reference: Ref<U>) -> Self {
        Value::Expr(reference.template_expression())
    }
}

impl<U: CelAs<T>, T> From<&Ref<U>> for Value<T> {
    fn from(reference: &Ref<U>) -> Self {
        Value::Expr(reference.template_expression())
    }
}

macro_rules! literal {
    ($target:ty: $($source:ty),*) => {
        $(impl From<$source> for Value<$target> {
            fn from(value: $source) -> Self {
                Value::Set(<$target>::from(value))
            }
        })*
    };
}
literal!(i64: i8, i16, i32, i64, u8, u16, u32);
literal!(f64: f32, f64);
literal!(bool: bool);
literal!(String: &str, String, &String);

impl From<Json> for Value<Json> {
    fn from(value: Json) -> Self {
        Value::Set(value)
    }
}

macro_rules! int_or_string {
    ($($source:ty),*) => {
        $(impl From<$source> for Value<IntOrString> {
            fn from(value: $source) -> Self {
                Value::Set(IntOrString::Int(i64::from(value)))
            }
        })*
    };
}
int_or_string!(i8, i16, i32, i64, u8, u16, u32);

impl From<&str> for Value<IntOrString> {
    fn from(value: &str) -> Self {
        Value::Set(IntOrString::String(value.to_owned()))
    }
}

impl From<String> for Value<IntOrString> {
    fn from(value: String) -> Self {
        Value::Set(IntOrString::String(value))
    }
}

impl From<&str> for Value<Quantity> {
    fn from(value: &str) -> Self {
        Value::Set(Quantity(value.to_owned()))
    }
}

impl From<String> for Value<Quantity> {
    fn from(value: String) -> Self {
        Value::Set(Quantity(value))
    }
}

impl<V: Into<Value<E>>, E> From<Vec<V>> for Value<Vec<Value<E>>> {
    fn from(items: Vec<V>) -> Self {
        Value::Set(items.into_iter().map(Into::into).collect())
    }
}

impl<V: Into<Value<E>>, E, const N: usize> From<[V; N]> for Value<Vec<Value<E>>> {
    fn from(items: [V; N]) -> Self {
        Value::Set(items.into_iter().map(Into::into).collect())
    }
}

impl<K: Into<String>, V: Into<Value<E>>, E, const N: usize> From<[(K, V); N]>
    for Value<BTreeMap<String, Value<E>>>
{
    fn from(entries: [(K, V); N]) -> Self {
        Value::Set(
            entries
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        )
    }
}

impl<V: Into<Value<E>>, E> From<BTreeMap<String, V>> for Value<BTreeMap<String, Value<E>>> {
    fn from(entries: BTreeMap<String, V>) -> Self {
        Value::Set(
            entries
                .into_iter()
                .map(|(key, value)| (key, value.into()))
                .collect(),
        )
    }
}

/// A kind of the Kubernetes API: its `apiVersion` and `kind`.
pub trait Kind {
    /// `apps/v1`.
    const API_VERSION: &'static str;
    /// `Deployment`.
    const KIND: &'static str;
}

/// A template fills `apiVersion` and `kind` where it leaves them unset.
#[doc(hidden)]
pub fn kind_template<K: Kind>(mut object: Json) -> Json {
    if let Json::Object(fields) = &mut object {
        fields
            .entry("apiVersion")
            .or_insert_with(|| Json::from(K::API_VERSION));
        fields.entry("kind").or_insert_with(|| Json::from(K::KIND));
    }
    object
}

/// Why a template could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// `with(path, …)` could not set the field at `path`.
    #[error("cannot set {path}: {reason}")]
    Path {
        /// The path given to `with`.
        path: String,
        /// Why.
        reason: String,
    },
    /// A value given to `with` does not serialize.
    #[error("the value for {path} does not serialize: {reason}")]
    Serialize {
        /// The path given to `with`.
        path: String,
        /// The serializer's message.
        reason: String,
    },
}

/// What a composition's resource is made of: an object template, and the type of references
/// into the object it becomes.
pub trait Template {
    /// References into the object (`DeploymentRef` for a Deployment).
    type Ref: FromPath;

    /// The template as the RGD writes it.
    ///
    /// # Errors
    /// When a field set with [`with`](Template::with) cannot be set.
    fn to_template(&self) -> Result<Json, TemplateError>;

    /// Sets the field at `path` (`spec.template.spec.containers[0].tty`) to `value`, whatever
    /// the template's type says: the escape hatch for fields it does not have. `value` may be a
    /// [`Ref`] (written `${...}`).
    ///
    /// ```
    /// use kro_compose::{Template, k8s::api::core::v1::ConfigMap};
    /// use serde_json::json;
    ///
    /// let map = ConfigMap::default().with("metadata.labels.tier", "web");
    /// let object = map.to_template()?;
    /// assert_eq!(object["metadata"], json!({"labels": {"tier": "web"}}));
    /// # Ok::<(), kro_compose::TemplateError>(())
    /// ```
    fn with(self, path: &str, value: impl serde::Serialize) -> With<Self>
    where
        Self: Sized,
    {
        let value = serde_json::to_value(value).map_err(|error| TemplateError::Serialize {
            path: path.to_owned(),
            reason: error.to_string(),
        });
        With {
            template: self,
            fields: vec![(path.to_owned(), value)],
        }
    }
}

/// A template with fields set by path (see [`Template::with`]).
#[derive(Debug, Clone)]
pub struct With<T> {
    template: T,
    fields: Vec<(String, Result<Json, TemplateError>)>,
}

impl<T: Template> With<T> {
    /// Sets one more field (see [`Template::with`]).
    #[must_use]
    ///
    /// ```
    /// # use kro_compose::{Template, k8s::api::core::v1::ConfigMap};
    /// let map = ConfigMap::default().with("metadata.name", "a").with("data.b", "c");
    /// assert_eq!(map.to_template()?["data"]["b"], "c");
    /// # Ok::<(), kro_compose::TemplateError>(())
    /// ```
    pub fn with(mut self, path: &str, value: impl serde::Serialize) -> With<T> {
        let value = serde_json::to_value(value).map_err(|error| TemplateError::Serialize {
            path: path.to_owned(),
            reason: error.to_string(),
        });
        self.fields.push((path.to_owned(), value));
        self
    }
}

impl<T: Template> Template for With<T> {
    type Ref = T::Ref;

    fn to_template(&self) -> Result<Json, TemplateError> {
        let mut object = self.template.to_template()?;
        for (path, value) in &self.fields {
            set_path(&mut object, path, value.clone()?)?;
        }
        Ok(object)
    }
}

/// One step of a `with` path: a field or a list index.
enum Step<'a> {
    Field(&'a str),
    Index(usize),
}

fn steps(path: &str) -> Result<Vec<Step<'_>>, String> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (field, mut rest) = match part.find('[') {
            Some(open) => (&part[..open], &part[open..]),
            None => (part, ""),
        };
        if field.is_empty() && (rest.is_empty() || steps.is_empty()) {
            return Err("a path has a name between dots".to_owned());
        }
        if !field.is_empty() {
            steps.push(Step::Field(field));
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner
                .find(']')
                .ok_or_else(|| format!("`[` without `]` in {part}"))?;
            let index = inner[..close]
                .parse()
                .map_err(|_| format!("`{}` is not a list index", &inner[..close]))?;
            steps.push(Step::Index(index));
            rest = &inner[close + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("unexpected `{rest}` in {part}"));
        }
    }
    Ok(steps)
}

/// Sets `path` in `object`, making the objects on the way; a list index must exist.
fn set_path(object: &mut Json, path: &str, value: Json) -> Result<(), TemplateError> {
    let error = |reason: String| TemplateError::Path {
        path: path.to_owned(),
        reason,
    };
    let steps = steps(path).map_err(error)?;
    let mut here = object;
    for step in steps {
        here = match step {
            Step::Field(name) => {
                if here.is_null() {
                    *here = Json::Object(Map::new());
                }
                let Json::Object(fields) = here else {
                    return Err(error(format!("the value before `{name}` is not an object")));
                };
                fields.entry(name).or_insert(Json::Null)
            }
            Step::Index(index) => {
                let Json::Array(items) = here else {
                    return Err(error(format!("the value before `[{index}]` is not a list")));
                };
                let length = items.len();
                items.get_mut(index).ok_or_else(|| {
                    error(format!(
                        "index {index} is past the end of a list of {length}"
                    ))
                })?
            }
        };
    }
    *here = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn with_sets_fields_by_path_and_says_why_it_cannot() {
        let template = json!({"spec": {"containers": [{"name": "web"}]}});
        let set = template
            .clone()
            .with("spec.containers[0].tty", true)
            .with("metadata.labels.app", "web");
        assert_eq!(
            set.to_template(),
            Ok(json!({
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "tty": true}]},
            }))
        );
        let past_end = template.clone().with("spec.containers[1].tty", true);
        assert_eq!(
            past_end.to_template().map_err(|error| error.to_string()),
            Err(
                "cannot set spec.containers[1].tty: index 1 is past the end of a list of 1"
                    .to_owned()
            )
        );
        let not_object = template.clone().with("spec.containers.name", "x");
        assert!(not_object.to_template().is_err());
        for bad in ["", "a..b", "a[x]", "a[0", "a[0]b"] {
            assert!(
                template.clone().with(bad, 1).to_template().is_err(),
                "{bad}"
            );
        }
    }
}
