//! Errors of kro's `runtime.newCondition` and `runtime.condition`: the argument rules the
//! parse-time macro enforces, and the value rules checked while evaluating. The messages are
//! upstream kro's.

/// Why the argument of `runtime.newCondition(...)` was rejected while parsing. The macro
/// needs a map literal whose keys are the bare identifiers `type`, `status`, `reason` and
/// `message`, each at most once, with `type` and `status` present; a literal `type` must not
/// be empty and a literal `status` must be `True`, `False` or `Unknown`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConditionSyntaxError {
    /// The argument is not a map literal.
    #[error("runtime.newCondition: argument must be a map literal")]
    NotAMapLiteral,
    /// A key is quoted or computed rather than a bare identifier.
    #[error(
        "runtime.newCondition: keys must be bare identifiers (type, status, reason, message); \
         quoted or computed keys are not allowed"
    )]
    KeyNotAnIdentifier,
    /// A key other than `type`, `status`, `reason` and `message`.
    #[error("runtime.newCondition: unknown key {0:?} (allowed: type, status, reason, message)")]
    UnknownKey(String),
    /// A key given twice.
    #[error("runtime.newCondition: duplicate key {0:?}")]
    DuplicateKey(String),
    /// `type` or `status` is missing.
    #[error("runtime.newCondition: '{0}' is required")]
    MissingKey(&'static str),
    /// `type` is the empty string literal.
    #[error("runtime.newCondition: type must not be empty")]
    EmptyType,
    /// `status` is a string literal other than `True`, `False` and `Unknown`.
    #[error("runtime.newCondition: status must be one of True, False, Unknown (got {0:?})")]
    InvalidStatus(String),
}

/// Why `runtime.newCondition` or `runtime.condition` failed while evaluating.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConditionError {
    /// `runtime.newCondition` was given something other than a map.
    #[error("runtime.newCondition: argument must be a map, got {type_name}")]
    NotAMap {
        /// The argument's type.
        type_name: String,
    },
    /// A field of the new condition is not a string.
    #[error("runtime.newCondition: {field} must be a string, got {type_name}")]
    FieldNotAString {
        /// The field (`type`, `status`, `reason` or `message`).
        field: String,
        /// The value's type.
        type_name: String,
    },
    /// The new condition's `type` is the empty string.
    #[error("runtime.newCondition: type must not be empty")]
    EmptyType,
    /// The new condition's `status` is not `True`, `False` or `Unknown`.
    #[error("runtime.newCondition: status must be one of True, False, Unknown (got {0:?})")]
    InvalidStatus(String),
    /// `runtime.condition` was given something other than an object.
    #[error("runtime.condition: obj must be an object, got {type_name}")]
    ObjectNotAMap {
        /// The argument's type.
        type_name: String,
    },
    /// The object's `status` is not an object.
    #[error("runtime.condition: obj.status must be an object")]
    StatusNotAMap,
    /// The object's `status.conditions` is not a list.
    #[error("runtime.condition: obj.status.conditions must be a list")]
    ConditionsNotAList,
    /// An element of `status.conditions` is not an object.
    #[error("runtime.condition: unexpected condition element type {type_name}")]
    UnexpectedElement {
        /// The element's type.
        type_name: String,
    },
}
