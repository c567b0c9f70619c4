//! An embedded Kubernetes-compatible API server, so kro runs anywhere without a cluster.
//!
//! **Owns:** storage (memory and SQLite) with one increasing resourceVersion and a change log
//! for watches; discovery; OpenAPI documents; create, read, update, delete, list and watch;
//! JSON, merge and strategic-merge patches; server-side apply with managed fields;
//! CustomResourceDefinitions with their status and scale subresources; finalizers; and the
//! simulated cluster behaviour (garbage collection, namespace lifecycle, workloads becoming
//! ready). Real `kubectl` and kube-rs use it unchanged.
//!
//! **Must not:** be called by the controller except over HTTP, as any other API server would be.
//!
//! # Modules
//!
//! - `server`: starting on a socket ([`start`], [`start_in_background`]), authentication,
//!   discovery, OpenAPI and health endpoints, and the [`router`] itself, which tests can drive
//!   without a socket; `config` holds [`ServerConfig`], and `state` the state the handlers
//!   share (store, registry, caches, open watches).
//! - `api_path`: what a request path names, parsed once for the handlers, the test knobs and
//!   the OpenAPI endpoint.
//! - `handlers`: the resource API, one module per verb family (`read`, `write`, `patch`,
//!   `scale`, `delete`, `watch`) over a `ResourceRequest` parsed once, with `admission`
//!   and `response`.
//! - [`storage`]: objects, revisions and the change log, over a [`storage::Persistence`]
//!   ([`storage::Memory`], or [`storage::Sqlite`] on a writer thread of its own).
//! - [`registry`]: the served resource types, [`registry::CustomResource`] among them;
//!   [`crd`]: definitions (names, validation, scale, cleanup).
//! - `managed`: managed fields and server-side apply (`fields`, `shape`, `merge`, `entries`);
//!   [`patch`] and [`strategic`]: the other patch types; `objects`, `defaults`, `typed`: object
//!   metadata, defaulting and round trips through the typed form.
//! - [`protobuf`]: Kubernetes protobuf bodies and watch frames for the built-in kinds,
//!   translated to and from the stored JSON at the edge.
//! - `tables`, [`openapi`], [`openapi_v2`], [`selectors`]: Table output, OpenAPI documents,
//!   label and field selectors; `events`: core/v1 and `events.k8s.io/v1` Events read as one
//!   resource.
//! - [`simulators`]: the simulated controllers (pod sets, deployments, garbage collection,
//!   namespaces, volumes, ...); [`knobs`]: test knobs (latency, injected failures, counters).

mod api_path;
pub mod bounds;
mod config;
pub mod crd;
mod defaults;
pub mod error;
mod events;
mod handlers;
mod http_util;
pub mod identity;
pub mod knobs;
mod label_parser;
mod managed;
mod objects;
pub mod openapi;
pub mod openapi_v2;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod selectors;
mod serve;
mod server;
pub mod simulators;
mod state;
pub mod storage;
pub mod strategic;
mod tables;
mod tls;
mod typed;

pub use config::{ServerConfig, random_token};
pub use error::ApiError;
pub use knobs::{FailureRate, InjectedFailure, KnobError, RequestCount, RequestKind};
pub use server::{
    RunningServer, ServerState, StartError, kubeconfig, router, start, start_in_background,
    write_private,
};
pub use simulators::{PodSelector, SimulationKnobs, Simulator, Simulators};
