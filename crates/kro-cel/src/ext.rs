//! Extension libraries beyond the CEL standard library, each enabled by name.
//!
//! kro's CEL environment enables cel-go's extensions, the Kubernetes libraries and kro's own
//! functions; see [`KRO_LIBRARIES`]. Each library is a module here and an entry in
//! [`library`].

mod encoders;
mod lists;
mod math;
mod sets;
mod strings;
#[cfg(test)]
mod testing;

use crate::functions::Library;

/// Every library this crate provides, by name.
pub const ALL_LIBRARIES: &[&str] = &["encoders", "lists", "math", "sets", "strings"];

/// The libraries kro's CEL environment enables (upstream kro's set, plus the ones our users
/// asked for).
pub const KRO_LIBRARIES: &[&str] = &["encoders", "lists", "math", "sets", "strings"];

/// A library by name.
pub fn library(name: &str) -> Option<Library> {
    match name {
        "encoders" => Some(encoders::library()),
        "lists" => Some(lists::library()),
        "math" => Some(math::library()),
        "sets" => Some(sets::library()),
        "strings" => Some(strings::library()),
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
}
