//! CEL types, as the checker sees them.

use std::fmt;
use std::sync::Arc;

/// A CEL type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Type {
    /// Any type; checked at run time.
    Dyn,
    /// The type of `null`.
    Null,
    /// `bool`
    Bool,
    /// `int` (signed 64-bit)
    Int,
    /// `uint` (unsigned 64-bit)
    Uint,
    /// `double`
    Double,
    /// `string`
    String,
    /// `bytes`
    Bytes,
    /// `google.protobuf.Timestamp`
    Timestamp,
    /// `google.protobuf.Duration`
    Duration,
    /// `list(T)`
    List(Arc<Type>),
    /// `map(K, V)`
    Map(Arc<Type>, Arc<Type>),
    /// `optional_type(T)`
    Optional(Arc<Type>),
    /// `type(T)`: the type of a type value.
    Type(Arc<Type>),
    /// An object type named by the embedder's [`TypeProvider`](crate::TypeProvider).
    Object(Arc<str>),
    /// An opaque type defined by a library (`net.IP`, `kubernetes.Quantity` ...), with
    /// parameters when generic.
    Opaque(Arc<str>, Arc<[Type]>),
    /// A type parameter of a function overload (`A` in `size(list(A))`).
    Param(Arc<str>),
    /// The type of an expression that failed to check.
    Error,
}

impl Type {
    /// `list(element)`
    pub fn list(element: Type) -> Type {
        Type::List(Arc::new(element))
    }

    /// `map(key, value)`
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Arc::new(key), Arc::new(value))
    }

    /// `optional_type(inner)`
    pub fn optional(inner: Type) -> Type {
        Type::Optional(Arc::new(inner))
    }

    /// `type(inner)`
    pub fn type_of(inner: Type) -> Type {
        Type::Type(Arc::new(inner))
    }

    /// A type parameter.
    pub fn param(name: &str) -> Type {
        Type::Param(Arc::from(name))
    }

    /// An object type by name.
    pub fn object(name: &str) -> Type {
        Type::Object(Arc::from(name))
    }

    /// An opaque type without parameters.
    pub fn opaque(name: &str) -> Type {
        Type::Opaque(Arc::from(name), Arc::from(Vec::new()))
    }

    /// True for `dyn` (and for the error type, which checks like `dyn` to avoid cascades).
    pub fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// The name of the runtime type of values of this type, as `type(x)` reports it.
    pub fn runtime_name(&self) -> String {
        match self {
            Type::List(_) => "list".to_string(),
            Type::Map(_, _) => "map".to_string(),
            Type::Optional(_) => "optional_type".to_string(),
            Type::Type(_) => "type".to_string(),
            Type::Opaque(name, _) => name.to_string(),
            other => other.to_string(),
        }
    }

    /// True when the type mentions a type parameter.
    pub fn has_params(&self) -> bool {
        match self {
            Type::Param(_) => true,
            Type::List(element) | Type::Optional(element) | Type::Type(element) => {
                element.has_params()
            }
            Type::Map(key, value) => key.has_params() || value.has_params(),
            Type::Opaque(_, params) => params.iter().any(Type::has_params),
            _ => false,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::List(element) => write!(f, "list({element})"),
            Type::Map(key, value) => write!(f, "map({key}, {value})"),
            Type::Optional(inner) => write!(f, "optional_type({inner})"),
            Type::Type(inner) => write!(f, "type({inner})"),
            Type::Object(name) => f.write_str(name),
            Type::Opaque(name, params) if params.is_empty() => f.write_str(name),
            Type::Opaque(name, params) => {
                let params: Vec<String> = params.iter().map(Type::to_string).collect();
                write!(f, "{name}({})", params.join(", "))
            }
            Type::Param(name) => f.write_str(name),
            Type::Error => f.write_str("!error!"),
        }
    }
}

/// What a [`TypeProvider`] says about a field of an object type.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldLookup {
    /// The field exists and has this type.
    Found(Type),
    /// The type has no such field.
    NoSuchField,
}

/// Object types supplied by the embedder (for kro: Kubernetes resource schemas).
///
/// The checker asks it whether a name is an object type and what type a field has. At run
/// time objects are plain maps, so the provider is only consulted while checking.
pub trait TypeProvider: Send + Sync + fmt::Debug {
    /// Whether `name` (fully qualified) is an object type this provider knows.
    fn has_type(&self, name: &str) -> bool;

    /// The type of `field` on the object type `type_name`.
    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup;

    /// The names of the fields of `type_name`, when the provider can list them (used to build
    /// objects from literals and to check their completeness); `None` when open-ended.
    fn field_names(&self, type_name: &str) -> Option<Vec<String>> {
        let _ = type_name;
        None
    }
}

/// The built-in type names usable as values (`type(x) == int`).
pub(crate) fn builtin_type(name: &str) -> Option<Type> {
    Some(match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "type" => Type::type_of(Type::Dyn),
        "optional_type" => Type::optional(Type::Dyn),
        "google.protobuf.Timestamp" => Type::Timestamp,
        "google.protobuf.Duration" => Type::Duration,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_cel_go_prints_them() {
        let cases = [
            (
                Type::map(Type::String, Type::list(Type::Int)),
                "map(string, list(int))",
            ),
            (Type::optional(Type::Dyn), "optional_type(dyn)"),
            (Type::type_of(Type::Uint), "type(uint)"),
            (Type::Null, "null_type"),
            (Type::Timestamp, "google.protobuf.Timestamp"),
            (Type::param("A"), "A"),
        ];
        for (ty, text) in cases {
            assert_eq!(ty.to_string(), text);
        }
    }
}
