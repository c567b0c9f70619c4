//! Extension libraries beyond the CEL standard library, each enabled by name.
//!
//! kro's CEL environment enables cel-go's extensions, the Kubernetes libraries and kro's own
//! functions; see [`KRO_LIBRARIES`]. Each library is a module here and an entry in
//! [`library`].

mod encoders;
mod strings;

use crate::functions::Library;

/// Every library this crate provides, by name.
pub const ALL_LIBRARIES: &[&str] = &["encoders", "strings"];

/// The libraries kro's CEL environment enables (upstream kro's set, plus the ones our users
/// asked for).
pub const KRO_LIBRARIES: &[&str] = &["encoders", "strings"];

/// A library by name.
pub fn library(name: &str) -> Option<Library> {
    match name {
        "encoders" => Some(encoders::library()),
        "strings" => Some(strings::library()),
        _ => None,
    }
}
