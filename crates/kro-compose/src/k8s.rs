//! The built-in Kubernetes kinds as typed templates and typed references, generated at build
//! time from the Kubernetes 1.33 catalog that kro-schema ships (`build.rs`): for every object
//! definition, a struct whose fields are [`Value`](crate::Value)s (a literal, a reference of
//! the field's type, or unset) and a `<Name>Ref` with a method per field. The modules follow
//! the definitions' names as k8s-openapi does: `io.k8s.api.apps.v1.Deployment` is
//! [`api::apps::v1::Deployment`].
//!
//! ```
//! use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};
//! use kro_compose::{Template, Typed, spec, KroSchema, FromPath};
//!
//! #[derive(KroSchema)]
//! struct AppSpec {
//!     replicas: i64,
//! }
//!
//! let deployment = Deployment {
//!     spec: DeploymentSpec { replicas: spec::<AppSpec>().replicas().into(), ..Default::default() }.into(),
//!     ..Default::default()
//! };
//! let object = deployment.to_template()?;
//! assert_eq!(object["apiVersion"], "apps/v1");
//! assert_eq!(object["spec"]["replicas"], "${schema.spec.replicas}");
//!
//! let refs = <Deployment as Typed>::Ref::from_path("deployment".to_owned());
//! assert_eq!(refs.status().available_replicas().expression(), "deployment.status.availableReplicas");
//! # Ok::<(), kro_compose::TemplateError>(())
//! ```

pub use crate::template::{IntOrString, Quantity};

/// Any JSON value (an arbitrary object such as a `RawExtension`).
pub type Json = serde_json::Value;

include!(concat!(env!("OUT_DIR"), "/k8s.rs"));
