//! Extension libraries beyond the CEL standard library, each enabled by name.
//!
//! kro's CEL environment enables cel-go's extensions, the Kubernetes libraries and kro's own
//! functions; see [`KRO_LIBRARIES`]. Each library is a module here and an entry in
//! [`library`]. Upstream kro's own functions are the `kro.*` libraries: `kro.random`,
//! `kro.maps`, `kro.json`, `kro.hash`, `kro.lists`, `kro.omit` and `kro.runtime`.

mod encoders;
mod kro_hash;
mod kro_json;
mod kro_lists;
mod kro_maps;
mod kro_omit;
mod kro_random;
mod kro_runtime;
mod lists;
mod math;
mod sets;
mod strings;
#[cfg(test)]
mod testing;

use crate::functions::Library;

pub(crate) use kro_omit::not_comparable as omit_not_comparable;
pub use kro_omit::{OMIT_TYPE_NAME, is_omit, omit_value};
pub use kro_runtime::{
    CONDITION_TYPE_NAME, RUNTIME_TYPE_NAME, RUNTIME_VARIABLE, condition_type,
    is_valid_condition_status, runtime_type, runtime_value,
};

/// Every library this crate provides, by name.
pub const ALL_LIBRARIES: &[&str] = &[
    "encoders",
    "lists",
    "math",
    "sets",
    "strings",
    "kro.random",
    "kro.maps",
    "kro.json",
    "kro.hash",
    "kro.lists",
    "kro.omit",
    "kro.runtime",
];

/// The libraries kro's CEL environment enables (upstream kro's set, plus the ones our users
/// asked for).
pub const KRO_LIBRARIES: &[&str] = &[
    "encoders",
    "lists",
    "math",
    "sets",
    "strings",
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
        "kro.random" => Some(kro_random::library()),
        "kro.maps" => Some(kro_maps::library()),
        "kro.json" => Some(kro_json::library()),
        "kro.hash" => Some(kro_hash::library()),
        "kro.lists" => Some(kro_lists::library()),
        "kro.omit" => Some(kro_omit::library()),
        "kro.runtime" => Some(kro_runtime::library()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{ALL_LIBRARIES, KRO_LIBRARIES, library};
    use crate::{Env, NoVariables, Value};

    #[test]
    fn every_listed_library_exists_under_its_own_name() {
        for name in ALL_LIBRARIES {
            let found = library(name).map(|library| library.name);
            assert_eq!(found, Some(*name));
        }
        assert!(
            KRO_LIBRARIES
                .iter()
                .all(|name| ALL_LIBRARIES.contains(name))
        );
        assert!(library("no-such-library").is_none());
    }

    #[test]
    fn kro_environment_combines_the_extensions() {
        let program = Env::kro()
            .compile(
                "sets.equivalent([3, 1, 2].sort(), lists.range(math.greatest(2, 4)).slice(1, 4))",
            )
            .expect("compiles");
        assert_eq!(program.evaluate(&NoVariables), Ok(Value::Bool(true)));
    }

    #[test]
    fn kro_environment_has_upstream_kros_own_functions() {
        let program = Env::kro()
            .compile(
                "json.marshal({'port': random.seededInt(0, 10, 'x'), 'items': \
                 lists.insertAtIndex([1], 0, 0), 'labels': {'a': '1'}.merge({'b': '2'}), \
                 'hash': base64.encode(hash.fnv64a(''))})",
            )
            .expect("compiles");
        assert_eq!(
            program.evaluate(&NoVariables),
            Ok(Value::string(
                r#"{"hash":"y/Kc5IQiIyU=","items":[0,1],"labels":{"a":"1","b":"2"},"port":6}"#
            ))
        );
        assert!(Env::kro().function("omit").is_some());
        assert!(Env::kro().function("newCondition").is_some());
    }
}
