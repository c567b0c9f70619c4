//! Extension libraries beyond the CEL standard library, each enabled by name.
//!
//! kro's CEL environment enables cel-go's extensions, the Kubernetes libraries and kro's own
//! functions; see [`KRO_LIBRARIES`]. Each library is a module here and an entry in
//! [`library`]. Upstream kro's own functions are the `kro.*` libraries: `kro.random`,
//! `kro.maps`, `kro.json`, `kro.hash`, `kro.lists`, `kro.omit` and `kro.runtime`; `kro.time`
//! (KREP-025, not released upstream) is enabled only behind kro's `CELTimeFunctions` gate.
//!
//! The Kubernetes libraries (`kubernetes.*`) follow `k8s.io/apiserver/pkg/cel/library` as
//! vendored by upstream kro (Kubernetes 1.35): the same functions, overload ids, type names
//! (`net.IP`, `net.CIDR`, `kubernetes.URL`, `kubernetes.Quantity`, `kubernetes.Semver`,
//! `kubernetes.NamedFormat`) and parsing rules.

mod args;
mod encoders;
mod k8s_format;
mod k8s_ip;
mod k8s_lists;
mod k8s_quantity;
mod k8s_regex;
mod k8s_semver;
mod k8s_url;
mod kro_hash;
mod kro_json;
mod kro_lists;
mod kro_maps;
mod kro_omit;
mod kro_random;
mod kro_runtime;
mod kro_time;
mod lists;
mod math;
mod sets;
mod strings;
#[cfg(test)]
mod testing;

use crate::functions::Library;

pub(crate) use args::{int_arg, opaque_arg, string_arg};
pub use k8s_format::is_go_date;
pub use kro_json::push_go_json_string;
pub(crate) use kro_omit::omit_not_comparable;
pub use kro_omit::{OMIT_TYPE_NAME, is_omit, omit_value};
pub use kro_runtime::{
    CONDITION_TYPE_NAME, RUNTIME_TYPE_NAME, RUNTIME_VARIABLE, condition_type,
    is_valid_condition_status, runtime_type, runtime_value,
};
pub use kro_time::{
    Clock, MOVING_DURATION_TYPE_NAME, MOVING_TIMESTAMP_TYPE_NAME, TIME_TYPE_NAME, TIME_VARIABLE,
    is_moving, moving_duration_type, moving_timestamp_type, time_type, time_value,
};

/// Every library this crate provides, by name.
pub const ALL_LIBRARIES: &[&str] = &[
    "encoders",
    "lists",
    "math",
    "sets",
    "strings",
    "kubernetes.lists",
    "kubernetes.regex",
    "kubernetes.urls",
    "kubernetes.quantity",
    "kubernetes.ip",
    "kubernetes.cidr",
    "kubernetes.semver",
    "kubernetes.format",
    "kro.random",
    "kro.maps",
    "kro.json",
    "kro.hash",
    "kro.lists",
    "kro.omit",
    "kro.runtime",
    "kro.time",
];

/// The libraries kro's CEL environment enables (upstream kro's set, plus the ones our users
/// asked for). Upstream kro does not enable `kubernetes.format`.
pub const KRO_LIBRARIES: &[&str] = &[
    "encoders",
    "lists",
    "math",
    "sets",
    "strings",
    "kubernetes.lists",
    "kubernetes.regex",
    "kubernetes.urls",
    "kubernetes.quantity",
    "kubernetes.ip",
    "kubernetes.cidr",
    "kubernetes.semver",
    "kro.random",
    "kro.maps",
    "kro.json",
    "kro.hash",
    "kro.lists",
    "kro.omit",
    "kro.runtime",
];

/// A library by name.
pub fn library(name: &str) -> Option<Library> {
    match name {
        "encoders" => Some(encoders::library()),
        "lists" => Some(lists::library()),
        "math" => Some(math::library()),
        "sets" => Some(sets::library()),
        "strings" => Some(strings::library()),
        "kubernetes.lists" => Some(k8s_lists::library()),
        "kubernetes.regex" => Some(k8s_regex::library()),
        "kubernetes.urls" => Some(k8s_url::library()),
        "kubernetes.quantity" => Some(k8s_quantity::library()),
        "kubernetes.ip" => Some(k8s_ip::ip_library()),
        "kubernetes.cidr" => Some(k8s_ip::cidr_library()),
        "kubernetes.semver" => Some(k8s_semver::library()),
        "kubernetes.format" => Some(k8s_format::library()),
        "kro.random" => Some(kro_random::library()),
        "kro.maps" => Some(kro_maps::library()),
        "kro.json" => Some(kro_json::library()),
        "kro.hash" => Some(kro_hash::library()),
        "kro.lists" => Some(kro_lists::library()),
        "kro.omit" => Some(kro_omit::library()),
        "kro.runtime" => Some(kro_runtime::library()),
        "kro.time" => Some(kro_time::library()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Env, NoVariables, Value};

    #[test]
    fn every_listed_library_exists_under_its_name() {
        for name in ALL_LIBRARIES {
            assert_eq!(library(name).map(|library| library.name), Some(*name));
        }
        assert!(
            KRO_LIBRARIES
                .iter()
                .all(|name| ALL_LIBRARIES.contains(name))
        );
        assert!(library("kubernetes.nope").is_none());
    }

    #[test]
    fn kro_environment_has_the_kubernetes_libraries_but_not_format() {
        assert!(!KRO_LIBRARIES.contains(&"kubernetes.format"));
        let env = Env::kro();
        let program = env
            .compile("quantity('1.5Gi').add(quantity('512Mi')).isGreaterThan(quantity('2G'))")
            .expect("compiles in the kro environment");
        assert_eq!(program.evaluate(&NoVariables), Ok(Value::Bool(true)));
        assert!(env.compile("format.dns1123Label()").is_err());
    }
}
