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

mod api_path;
mod config;
pub mod crd;
mod defaults;
pub mod error;
mod handlers;
mod http_util;
pub mod knobs;
mod label_parser;
mod managed;
mod objects;
pub mod openapi;
pub mod openapi_v2;
mod patch;
pub mod registry;
pub mod selectors;
mod server;
pub mod simulators;
mod state;
pub mod storage;
mod strategic;
mod tables;
mod tls;
mod typed;

pub use config::{ServerConfig, random_token};
pub use error::ApiError;
pub use knobs::{InjectedFailure, RequestKind};
pub use server::{
    RunningServer, ServerState, StartError, kubeconfig, router, start, start_in_background,
    write_private,
};
pub use simulators::{PodSelector, SimulationKnobs, Simulator, Simulators};
