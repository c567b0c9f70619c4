//! Resource lifecycles (KREP-014): what becomes of a managed object when kro would delete it,
//! at instance deletion or when it is pruned (removed from the RGD, or excluded by
//! `includeWhen`).
//!
//! A resource says it with `lifecycle`, either an expression built with the `kro.policy`
//! library, `"${policy().withRetain()}"` (it may read `schema` and nothing else), or the
//! static map `{deletePolicy: retain}`. The decision is evaluated at every apply and stored on
//! the object as [`LIFECYCLE_POLICY_ANNOTATION`], so that pruning and deletion need no CEL:
//! an object marked `retain` is *released* (kro's labels, ApplySet membership and field
//! managers removed) instead of deleted. An instance annotated
//! [`DETACH_ON_DELETION_ANNOTATION`]` = "true"` releases every object when it is deleted.
//!
//! ```
//! use kro_graph::lifecycle::{DeletePolicy, lifecycle_env};
//! let env = lifecycle_env(kro_cel::Env::kro());
//! let program = env.compile("policy().withRetain()").expect("compiles");
//! let value = program.evaluate(&kro_cel::NoVariables).expect("evaluates");
//! assert_eq!(DeletePolicy::of_value(&value), Ok(DeletePolicy::Retain));
//! ```

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use kro_cel::{Budget, Env, EvalError, Function, OpaqueValue, Overload, Type, Value};
use serde_json::Value as Json;

/// The annotation on a managed object holding the delete policy decided at its last apply
/// (`retain` or `delete`), as upstream's implementation (#1264) names it.
pub const LIFECYCLE_POLICY_ANNOTATION: &str = "internal.kro.run/lifecycle-policy";

/// The instance annotation that releases every object instead of deleting it when the
/// instance is deleted (upstream #183).
pub const DETACH_ON_DELETION_ANNOTATION: &str = "kro.run/detach-on-deletion";

/// The CEL type of a policy value.
pub const POLICY_TYPE: &str = "kro.Policy";

/// What happens to an object when kro would delete it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeletePolicy {
    /// It is deleted (the default).
    #[default]
    Delete,
    /// It is released: left in place without kro's labels and field managers.
    Retain,
}

impl DeletePolicy {
    /// The policy as written in `deletePolicy` and in the annotation.
    pub fn as_str(self) -> &'static str {
        match self {
            DeletePolicy::Delete => "delete",
            DeletePolicy::Retain => "retain",
        }
    }

    /// The policy `text` names (`retain`, `delete`; `Retain` and `Delete` as well).
    pub fn parse(text: &str) -> Option<DeletePolicy> {
        match text {
            "delete" | "Delete" => Some(DeletePolicy::Delete),
            "retain" | "Retain" => Some(DeletePolicy::Retain),
            _ => None,
        }
    }

    /// The policy a `lifecycle` expression evaluated to.
    ///
    /// # Errors
    /// When the value is not a `kro.Policy`.
    pub fn of_value(value: &Value) -> Result<DeletePolicy, String> {
        match value {
            Value::Opaque(opaque) => opaque
                .as_any()
                .downcast_ref::<Policy>()
                .map(|policy| policy.delete.unwrap_or_default())
                .ok_or_else(|| {
                    format!(
                        "lifecycle must be a {POLICY_TYPE}, found {}",
                        opaque.type_name()
                    )
                }),
            other => Err(format!(
                "lifecycle must be a {POLICY_TYPE} (policy().withRetain()), found {}",
                other.type_name()
            )),
        }
    }

    /// The policy stored on a managed object (its [`LIFECYCLE_POLICY_ANNOTATION`]); delete
    /// when it has none or one this version does not know.
    pub fn of_object(object: &Json) -> DeletePolicy {
        object
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(LIFECYCLE_POLICY_ANNOTATION))
            .and_then(Json::as_str)
            .and_then(DeletePolicy::parse)
            .unwrap_or_default()
    }
}

impl fmt::Display for DeletePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the instance asks that its objects be released rather than deleted when it is
/// deleted (`kro.run/detach-on-deletion: "true"`).
pub fn detaches_on_deletion(instance: &Json) -> bool {
    instance
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(DETACH_ON_DELETION_ANNOTATION))
        .and_then(Json::as_str)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

/// What is wrong with a `lifecycle` as written (the expression form is checked as CEL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// Neither a string nor a map.
    #[error("lifecycle must be a ${{...}} expression or a map with deletePolicy, found {0}")]
    Shape(&'static str),
    /// A map with a field other than `deletePolicy`.
    #[error("lifecycle has unknown field {0:?} (only deletePolicy is supported)")]
    UnknownField(String),
    /// A `deletePolicy` that is not `retain` or `delete`.
    #[error("lifecycle.deletePolicy must be \"retain\" or \"delete\", found {0}")]
    DeletePolicy(String),
    /// An expression that does not evaluate to a policy.
    #[error(
        "lifecycle expression {expression:?} must be a {POLICY_TYPE} (policy()...), found {found}"
    )]
    NotAPolicy {
        /// The expression.
        expression: String,
        /// Its type.
        found: Type,
    },
    /// An expression that reads another resource.
    #[error(
        "lifecycle expression {expression:?} reads {resources}: a lifecycle may read schema only, \
         since it must be known before the resource exists and after it is gone"
    )]
    ReadsResource {
        /// The expression.
        expression: String,
        /// The resources it reads, comma separated.
        resources: String,
    },
    /// On an externalRef or data node, which kro never deletes.
    #[error("lifecycle is only allowed on template resources: kro never deletes an {0}")]
    NotATemplate(&'static str),
}

/// The policy of a `lifecycle` written as a map, `{deletePolicy: retain}` (the string form is
/// an expression, compiled by the builder).
///
/// # Errors
/// A value of the wrong shape, an unknown field or an unknown policy.
pub fn fixed_policy(value: &Json) -> Result<DeletePolicy, LifecycleError> {
    match value {
        Json::Object(fields) => {
            if let Some(unknown) = fields.keys().find(|key| *key != "deletePolicy") {
                return Err(LifecycleError::UnknownField(unknown.clone()));
            }
            match fields.get("deletePolicy") {
                None => Ok(DeletePolicy::Delete),
                Some(Json::String(text)) => DeletePolicy::parse(text)
                    .ok_or_else(|| LifecycleError::DeletePolicy(format!("{text:?}"))),
                Some(other) => Err(LifecycleError::DeletePolicy(other.to_string())),
            }
        }
        Json::String(_) => Err(LifecycleError::Shape("a string")),
        Json::Null => Err(LifecycleError::Shape("null")),
        Json::Bool(_) => Err(LifecycleError::Shape("a bool")),
        Json::Number(_) => Err(LifecycleError::Shape("a number")),
        Json::Array(_) => Err(LifecycleError::Shape("a list")),
    }
}

/// A policy under construction: `policy()` has no decision, `withRetain()`/`withDelete()`
/// make one, and making a second is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    delete: Option<DeletePolicy>,
}

impl OpaqueValue for Policy {
    fn type_name(&self) -> &str {
        POLICY_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Policy>()
            .is_some_and(|other| other == self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<Json> {
        Some(serde_json::json!({
            "deletePolicy": self.delete.unwrap_or_default().as_str()
        }))
    }
}

/// `env` with the `kro.policy` library: `policy()`, `withRetain()` and `withDelete()`.
pub fn lifecycle_env(env: Env) -> Env {
    let policy_type = Type::opaque(POLICY_TYPE);
    let with = |name: &'static str, decision: DeletePolicy| {
        move |args: &[Value], _: &mut Budget| {
            let current = match args.first() {
                Some(Value::Opaque(opaque)) => opaque.as_any().downcast_ref::<Policy>().cloned(),
                _ => None,
            };
            let Some(current) = current else {
                return Err(EvalError::invalid_argument(
                    name,
                    "the receiver is not a policy",
                ));
            };
            if current.delete.is_some() {
                return Err(EvalError::invalid_argument(
                    name,
                    "deletePolicy cannot be set multiple times",
                ));
            }
            Ok(Value::Opaque(Arc::new(Policy {
                delete: Some(decision),
            })))
        }
    };
    env.with_function(Function::new("policy").overload(
        Overload::global("kro_policy", &[], policy_type.clone()).with_impl(
            |_: &[Value], _: &mut Budget| Ok(Value::Opaque(Arc::new(Policy { delete: None }))),
        ),
    ))
    .with_function(
        Function::new("withRetain").overload(
            Overload::member(
                "kro_policy_with_retain",
                std::slice::from_ref(&policy_type),
                policy_type.clone(),
            )
            .with_impl(with("withRetain", DeletePolicy::Retain)),
        ),
    )
    .with_function(
        Function::new("withDelete").overload(
            Overload::member(
                "kro_policy_with_delete",
                std::slice::from_ref(&policy_type),
                policy_type.clone(),
            )
            .with_impl(with("withDelete", DeletePolicy::Delete)),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decide(source: &str) -> Result<DeletePolicy, String> {
        let env = lifecycle_env(Env::kro()).with_variable("env", Type::String);
        let program = env.compile(source).map_err(|error| error.to_string())?;
        struct Production;
        impl kro_cel::Activation for Production {
            fn resolve(&self, name: &str) -> Option<Value> {
                (name == "env").then(|| Value::String("production".into()))
            }
        }
        let value = program
            .evaluate(&Production)
            .map_err(|error| error.to_string())?;
        DeletePolicy::of_value(&value)
    }

    #[test]
    fn policies_decide_what_deletion_does() {
        assert_eq!(decide("policy()"), Ok(DeletePolicy::Delete));
        assert_eq!(decide("policy().withRetain()"), Ok(DeletePolicy::Retain));
        assert_eq!(decide("policy().withDelete()"), Ok(DeletePolicy::Delete));
        assert_eq!(
            decide(r#"env == "production" ? policy().withRetain() : policy()"#),
            Ok(DeletePolicy::Retain)
        );
    }

    #[test]
    fn a_second_decision_is_an_error() {
        let error = decide("policy().withRetain().withDelete()").expect_err("refused");
        assert!(
            error.contains("deletePolicy cannot be set multiple times"),
            "{error}"
        );
        let error = decide("policy().withRetain().withRetain()").expect_err("refused");
        assert!(error.contains("multiple times"), "{error}");
    }

    #[test]
    fn a_value_that_is_not_a_policy_is_refused() {
        let error = DeletePolicy::of_value(&Value::String("retain".into())).expect_err("refused");
        assert!(error.contains("kro.Policy"), "{error}");
    }

    #[test]
    fn the_map_form_is_read_with_clear_errors() {
        assert_eq!(
            fixed_policy(&json!({"deletePolicy": "retain"})),
            Ok(DeletePolicy::Retain)
        );
        assert_eq!(fixed_policy(&json!({})), Ok(DeletePolicy::Delete));
        assert_eq!(
            fixed_policy(&json!({"deletePolicy": "orphan"})),
            Err(LifecycleError::DeletePolicy("\"orphan\"".into()))
        );
        assert_eq!(
            fixed_policy(&json!({"create": "once"})),
            Err(LifecycleError::UnknownField("create".into()))
        );
        assert_eq!(
            fixed_policy(&json!(true)),
            Err(LifecycleError::Shape("a bool"))
        );
    }

    #[test]
    fn the_stored_decision_and_the_detach_annotation_are_read_from_objects() {
        let retained =
            json!({"metadata": {"annotations": {LIFECYCLE_POLICY_ANNOTATION: "retain"}}});
        assert_eq!(DeletePolicy::of_object(&retained), DeletePolicy::Retain);
        assert_eq!(
            DeletePolicy::of_object(&json!({"metadata": {}})),
            DeletePolicy::Delete
        );
        let unknown = json!({"metadata": {"annotations": {LIFECYCLE_POLICY_ANNOTATION: "x"}}});
        assert_eq!(DeletePolicy::of_object(&unknown), DeletePolicy::Delete);
        let detach = json!({"metadata": {"annotations": {DETACH_ON_DELETION_ANNOTATION: "true"}}});
        assert!(detaches_on_deletion(&detach));
        let kept = json!({"metadata": {"annotations": {DETACH_ON_DELETION_ANNOTATION: "no"}}});
        assert!(!detaches_on_deletion(&kept));
    }
}
