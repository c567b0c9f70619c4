//! Typed compositions in Rust that emit kro ResourceGraphDefinitions.
//!
//! **Owns:** compositions written in Rust (see `docs/compose.md`): `#[derive(KroSchema)]` on
//! spec and status structs gives their SimpleSchema ([`simple_schema`]), typed references into
//! them ([`spec`]: `spec::<WebAppSpec>().replicas()` is a [`Ref<i64>`] at
//! `schema.spec.replicas`) and a `<Struct>Values` with a [`Value`] per field; [`k8s`] holds the
//! built-in kinds as typed templates and references, generated at build time from kro-schema's
//! Kubernetes catalog; [`expr`] combines references into typed CEL; a [`Composition`] holds
//! resources ([`Template`]s: typed or JSON), data nodes, externalRefs (typed by kind or by
//! another composition), conditions, collections, dependencies, nested compositions and the
//! typed status, and emits the RGD ([`Composition::to_rgd`]) once kro-graph's compiler accepts
//! it; with the default feature `deploy`, `Composition::deploy` runs it through a kro
//! controller (`Mode::Kro`) or kro's direct engine (`Mode::Direct`) and reads the status back
//! into the status struct.
//!
//! **Must not:** evaluate or type-check CEL itself (it only finds the variable paths of an
//! expression, with kro-cel, to rename nested compositions' references), or do I/O outside
//! the `deploy` feature: what it emits is checked by kro-graph's compiler, the same as
//! `kro validate`.
//!
//! ```
//! use kro_compose::{KroSchema, simple_schema, spec};
//!
//! #[derive(KroSchema)]
//! struct WebAppSpec {
//!     #[kro(default = "nginx:1.27")]
//!     image: String,
//!     #[kro(default = 2, minimum = 1, maximum = 20)]
//!     replicas: i64,
//! }
//!
//! let schema = simple_schema::<WebAppSpec>();
//! assert_eq!(schema.spec["replicas"], "integer | default=2 minimum=1 maximum=20");
//! assert_eq!(spec::<WebAppSpec>().replicas().to_string(), "${schema.spec.replicas}");
//! ```

mod composition;
#[cfg(feature = "deploy")]
mod deploy;
pub mod expr;
pub mod k8s;
mod reference;
mod schema;
mod template;

pub use composition::{ComposeError, Composition, InstanceRef, Mistake, Nested, Resource};
#[cfg(feature = "deploy")]
pub use deploy::{DeployError, Deployment, Mode};
pub use kro_compose_derive::{KroSchema, cel, fmt_cel};
/// How a deploy runs (timeout, concurrency, waiting) and what it reports as it goes: kro's
/// direct engine's own types.
#[cfg(feature = "deploy")]
pub use kro_engine::direct::{DirectConfig, Progress};
pub use reference::{
    FromPath, Ref, dimension, each_index, each_item, instance_name, instance_namespace, spec,
    status,
};
pub use schema::{Field, Markers, SchemaType, SimpleSchema, Types, simple_schema};
pub use template::{
    CelAs, IntOrString, Kind, ObjectRef, Quantity, Template, TemplateError, ToJson, Value, With,
};

/// A type references to which are typed: a reference to a value of it is a `Self::Ref`.
pub trait Typed {
    /// How a reference to a value of this type is typed: [`Ref<Self>`] for scalars and
    /// collections, a generated `<Struct>Ref` with a method per field for structs (the spec
    /// and status structs, and the built-in kinds' definitions in [`k8s`]).
    type Ref: FromPath;

    /// The reference reading `path` (an `Option` reads it as a field that may be absent).
    fn reference(path: String) -> Self::Ref {
        Self::Ref::from_path(path)
    }
}

impl Typed for serde_json::Value {
    type Ref = Ref<serde_json::Value>;
}

impl Typed for IntOrString {
    type Ref = Ref<IntOrString>;
}

impl Typed for Quantity {
    type Ref = Ref<Quantity>;
}

/// A type that has a SimpleSchema type and typed references: the scalars, strings, lists and
/// maps of them, and structs and unit enums with `#[derive(KroSchema)]`.
pub trait KroSchema: Typed + ToJson {
    /// What a value for a field of this type is given as: a [`Value`] (a literal or a
    /// reference), or for a struct its generated `<Struct>Values` with a value per field.
    type Values: ToJson;

    /// Its SimpleSchema type; structs used in lists or maps are added to `types` under their
    /// name.
    fn schema_type(types: &mut Types) -> SchemaType;

    /// The name of a struct, under which it is a custom type when a list or map holds it;
    /// `None` for every other type.
    fn type_name() -> Option<&'static str> {
        None
    }
}

/// What the derive macro's generated code uses; not for users.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;
}

/// No status: a composition whose instances have only the status kro gives every instance.
impl Typed for () {
    type Ref = ();
}

impl FromPath for () {
    fn from_path(_: String) -> Self {}
}

impl ToJson for () {
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(serde_json::Map::new())
    }
}

impl KroSchema for () {
    type Values = ();
    fn schema_type(_: &mut Types) -> SchemaType {
        SchemaType::Object(Vec::new())
    }
}
