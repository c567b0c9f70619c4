//! Whether an expression's result type fits the field it lands in: CEL assignability, then
//! upstream kro's structural compatibility (duck typing across object type names, maps and
//! objects with compatible fields), with JSON's looser numbers.

use kro_cel::{FieldLookup, Type, TypeProvider};

/// How deep compatibility follows nested types before accepting (recursive schemas).
const MAX_DEPTH: usize = 32;

/// Whether a value of type `output` may be written where the schema expects `expected`.
///
/// Beyond upstream's rules: an `int` fits a `number` field (JSON does not tell them apart),
/// strings fit timestamp, duration and bytes fields (their JSON form is a string), and `null`
/// fits anything (the field is then left unset).
pub fn is_compatible(expected: &Type, output: &Type, provider: &dyn TypeProvider) -> bool {
    compatible(expected, output, provider, 0)
}

fn compatible(expected: &Type, output: &Type, provider: &dyn TypeProvider, depth: usize) -> bool {
    if depth > MAX_DEPTH || expected == output {
        return true;
    }
    let next = depth + 1;
    match (expected, output) {
        (Type::Dyn | Type::Error | Type::Param(_), _)
        | (_, Type::Dyn | Type::Error | Type::Param(_)) => true,
        (_, Type::Null) => true,
        (_, Type::Optional(inner)) => compatible(expected, inner, provider, next),
        (Type::Optional(inner), _) => compatible(inner, output, provider, next),
        (Type::Double, Type::Int | Type::Uint)
        | (Type::Int, Type::Uint)
        | (Type::Uint, Type::Int) => true,
        (Type::Timestamp | Type::Duration | Type::Bytes, Type::String) => true,
        (Type::String, Type::Timestamp | Type::Duration | Type::Bytes | Type::Opaque(_, _)) => true,
        (Type::List(e), Type::List(o)) => compatible(e, o, provider, next),
        (Type::Map(ek, ev), Type::Map(ok, ov)) => {
            compatible(ek, ok, provider, next) && compatible(ev, ov, provider, next)
        }
        (Type::Object(e), Type::Object(o)) => objects_compatible(e, o, provider, next),
        (Type::Object(e), Type::Map(key, value)) => {
            compatible(&Type::String, key, provider, next)
                && fields(e, provider)
                    .iter()
                    .all(|(_, field_type)| compatible(field_type, value, provider, next))
        }
        (Type::Map(key, value), Type::Object(o)) => {
            compatible(key, &Type::String, provider, next)
                && fields(o, provider)
                    .iter()
                    .all(|(_, field_type)| compatible(value, field_type, provider, next))
        }
        _ => false,
    }
}

fn fields(type_name: &str, provider: &dyn TypeProvider) -> Vec<(String, Type)> {
    provider
        .field_names(type_name)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|field| match provider.field_type(type_name, &field) {
            FieldLookup::Found(ty) => Some((field, ty)),
            FieldLookup::NoSuchField => None,
        })
        .collect()
}

/// Every field the output object shares with the expected one must be compatible.
fn objects_compatible(
    expected: &str,
    output: &str,
    provider: &dyn TypeProvider,
    depth: usize,
) -> bool {
    let expected_fields = fields(expected, provider);
    expected_fields.iter().all(
        |(field, expected_type)| match provider.field_type(output, field) {
            FieldLookup::Found(output_type) => {
                compatible(expected_type, &output_type, provider, depth)
            }
            FieldLookup::NoSuchField => true,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Objects;

    impl TypeProvider for Objects {
        fn has_type(&self, name: &str) -> bool {
            matches!(name, "A" | "B" | "C")
        }

        fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
            match (type_name, field) {
                ("A" | "B", "name") => FieldLookup::Found(Type::String),
                ("A", "port") | ("B", "port") => FieldLookup::Found(Type::Int),
                ("C", "name") => FieldLookup::Found(Type::Int),
                _ => FieldLookup::NoSuchField,
            }
        }

        fn field_names(&self, type_name: &str) -> Option<Vec<String>> {
            match type_name {
                "A" | "B" => Some(vec!["name".into(), "port".into()]),
                "C" => Some(vec!["name".into()]),
                _ => None,
            }
        }
    }

    #[test]
    fn compatible_pairs() {
        let cases = [
            (Type::Int, Type::Int),
            (Type::Double, Type::Int),
            (Type::String, Type::Dyn),
            (Type::list(Type::String), Type::list(Type::String)),
            (Type::Int, Type::optional(Type::Int)),
            (Type::Timestamp, Type::String),
            (Type::object("A"), Type::object("B")),
            (Type::object("A"), Type::map(Type::String, Type::Dyn)),
            (Type::map(Type::String, Type::Dyn), Type::object("A")),
            (
                Type::list(Type::object("A")),
                Type::list(Type::map(Type::String, Type::Dyn)),
            ),
        ];
        for (expected, output) in cases {
            assert!(
                is_compatible(&expected, &output, &Objects),
                "{expected} <- {output}"
            );
        }
    }

    #[test]
    fn incompatible_pairs() {
        let cases = [
            (Type::Int, Type::String),
            (Type::Int, Type::Double),
            (Type::Bool, Type::String),
            (Type::list(Type::Int), Type::list(Type::String)),
            (Type::object("A"), Type::object("C")),
            (Type::object("A"), Type::map(Type::String, Type::Bool)),
            (Type::list(Type::String), Type::String),
        ];
        for (expected, output) in cases {
            assert!(
                !is_compatible(&expected, &output, &Objects),
                "{expected} <- {output}"
            );
        }
    }
}
