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
mod object;
mod reference;
mod schema;
mod template;

pub use composition::{
    ComposeError, Composition, InstanceRef, Lifecycle, Mistake, Nested, Resource,
};
#[cfg(feature = "deploy")]
pub use deploy::{DeployError, Deployment, Mode};
pub use kro_compose_derive::{KroSchema, cel, fmt_cel};
/// How a deploy runs (timeout, concurrency, waiting) and what it reports as it goes: kro's
/// direct engine's own types.
#[cfg(feature = "deploy")]
pub use kro_engine::direct::{DirectConfig, Progress};
pub use kro_graph::{Feature, FeatureGates};
pub use object::ObjectRef;
pub use reference::{
    FromPath, Ref, Typed, dimension, each_index, each_item, instance_name, instance_namespace,
    spec, status,
};
pub use schema::{Field, KroSchema, Markers, SchemaType, SimpleSchema, Types, simple_schema};
pub use template::{
    CelAs, IntOrString, Kind, Quantity, Template, TemplateError, ToJson, Value, With,
};

/// What the derive macro's generated code uses; not for users.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;
}
