//! [`Lifecycle`]: what becomes of a resource's object when kro would delete it.

use crate::reference::Ref;

/// What becomes of a resource's object when kro would delete it, at instance deletion or
/// when it is pruned (KREP-014's `lifecycle`): deleted (the default), or released (kept, no
/// longer managed by kro).
///
/// ```
/// # use kro_compose::*;
/// # #[derive(KroSchema)]
/// # struct AppSpec { name: String, replicas: i64, queues: Vec<String>, enabled: bool }
/// assert_eq!(Lifecycle::retain().expression(), "policy().withRetain()");
/// assert_eq!(
///     Lifecycle::retain_when(&spec::<AppSpec>().name().eq("production")).expression(),
///     r#"schema.spec.name == "production" ? policy().withRetain() : policy()"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    expression: String,
}

impl Lifecycle {
    /// Released instead of deleted.
    pub fn retain() -> Lifecycle {
        Lifecycle {
            expression: "policy().withRetain()".to_owned(),
        }
    }

    /// Deleted (what a resource without a lifecycle gets).
    pub fn delete() -> Lifecycle {
        Lifecycle {
            expression: "policy().withDelete()".to_owned(),
        }
    }

    /// Released while `condition` holds, deleted otherwise. The condition may read the
    /// instance's spec only (kro refuses one that reads a resource, naming it).
    pub fn retain_when(condition: &Ref<bool>) -> Lifecycle {
        Lifecycle {
            expression: format!(
                "{} ? policy().withRetain() : policy()",
                condition.expression()
            ),
        }
    }

    /// The CEL it is written as.
    pub fn expression(&self) -> &str {
        &self.expression
    }
}
