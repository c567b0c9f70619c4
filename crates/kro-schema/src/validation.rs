//! Validation of an object against a structural schema, as the Kubernetes API server
//! validates a custom resource: the OpenAPI keywords (kube-openapi), embedded resources,
//! `set`/`map` list uniqueness, then the `x-kubernetes-validations` CEL rules, in that order
//! and with Kubernetes' error texts.
//!
//! A [`Validator`] compiles a schema once (CEL programs and regular expressions) and validates
//! any number of objects; [`validate`] is the one-shot form.
//!
//! ```
//! use kro_schema::{Schema, validate};
//! use serde_json::json;
//!
//! let schema: Schema = serde_json::from_value(json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "properties": {
//!         "replicas": {"type": "integer", "minimum": 1}
//!     }}}
//! }))
//! .expect("a valid schema");
//! let errors = validate(&schema, &json!({"spec": {"replicas": 0}}), None);
//! assert_eq!(
//!     errors[0].to_string(),
//!     "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
//! );
//! ```

mod correlation;
mod embedded;
mod field_path;
mod formats;
mod keywords;
mod list_types;
mod location;
mod numbers;
mod outcome;
mod patterns;
mod rules;
mod types;

use std::sync::Arc;

use serde_json::Value;

use crate::field_error::{BadValue, FieldError, FieldErrorType, FieldPath};
use crate::openapi::Schema;
use patterns::Patterns;
use rules::RuleTree;

/// Each `x-kubernetes-validations` rule of `schema` itself (not of its children) that does not
/// compile with `self` typed from `schema`, with the compile error: what kube-apiserver refuses
/// in a CRD.
pub(crate) fn rule_compile_errors(schema: &Schema) -> Vec<(String, String)> {
    RuleTree::compile(schema, false, PER_CALL_COST_LIMIT)
        .map(|tree| tree.root_compile_errors())
        .unwrap_or_default()
}

/// Kubernetes' cost limit for one evaluation of one rule (`PerCallLimit`).
pub const PER_CALL_COST_LIMIT: u64 = 1_000_000;

/// Kubernetes' cost budget for all rules of one object (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;

/// Settings of a [`Validator`]; the defaults are Kubernetes' for a custom resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationConfig {
    is_resource_root: bool,
    per_call_cost_limit: u64,
    cost_budget: u64,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig {
            is_resource_root: true,
            per_call_cost_limit: PER_CALL_COST_LIMIT,
            cost_budget: RUNTIME_COST_BUDGET,
        }
    }
}

impl ValidationConfig {
    /// Whether the schema is a whole object's (default), so that `self` of root rules also has
    /// `apiVersion`, `kind` and `metadata`.
    #[must_use]
    pub fn with_resource_root(mut self, is_resource_root: bool) -> Self {
        self.is_resource_root = is_resource_root;
        self
    }

    /// The cost limit of one rule evaluation.
    #[must_use]
    pub fn with_per_call_cost_limit(mut self, limit: u64) -> Self {
        self.per_call_cost_limit = limit;
        self
    }

    /// The cost budget shared by all rules of one object.
    #[must_use]
    pub fn with_cost_budget(mut self, budget: u64) -> Self {
        self.cost_budget = budget;
        self
    }
}

/// A schema compiled for validation: its CEL rules and patterns are compiled once, so
/// validating many objects costs no recompilation. Cheap to clone and to share between
/// threads.
#[derive(Debug, Clone)]
pub struct Validator {
    inner: Arc<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    schema: Schema,
    config: ValidationConfig,
    patterns: Patterns,
    rules: Option<RuleTree>,
    has_list_types: bool,
    has_embedded_resources: bool,
}

impl Validator {
    /// Compiles `schema` with the default [`ValidationConfig`].
    pub fn new(schema: &Schema) -> Self {
        Validator::with_config(schema, ValidationConfig::default())
    }

    /// Compiles `schema` with `config`.
    pub fn with_config(schema: &Schema, config: ValidationConfig) -> Self {
        Validator {
            inner: Arc::new(Compiled {
                schema: schema.clone(),
                config,
                patterns: Patterns::collect(schema),
                rules: RuleTree::compile(
                    schema,
                    config.is_resource_root,
                    config.per_call_cost_limit,
                ),
                has_list_types: list_types::has_list_types(schema),
                has_embedded_resources: embedded::has_embedded_resources(schema),
            }),
        }
    }

    /// The schema this validator checks against.
    pub fn schema(&self) -> &Schema {
        &self.inner.schema
    }

    /// Validates `value`, on update against the `old` object: transition rules (`oldSelf`)
    /// run only then, and problems in parts unchanged since `old` are not reported (Kubernetes'
    /// validation ratcheting). An empty list means valid.
    pub fn validate(&self, value: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.validate_with(value, old, Vec::new())
    }

    /// Like [`Validator::validate`], with errors of checks made outside the schema (such as a
    /// custom resource's scale replicas) reported where kube-apiserver reports them: after
    /// the schema keywords', before the embedded-resource, list-type and rule errors.
    pub fn validate_with(
        &self,
        value: &Value,
        old: Option<&Value>,
        outside_schema: Vec<FieldError>,
    ) -> Vec<FieldError> {
        let compiled = &*self.inner;
        let schema = &compiled.schema;
        let mut errors = keywords::check(schema, value, old, &compiled.patterns);
        errors.extend(outside_schema);
        if compiled.has_embedded_resources {
            errors.extend(embedded::check(schema, value));
        }
        if compiled.has_list_types
            && old.is_none_or(|old| list_types::check(schema, old).is_empty())
        {
            errors.extend(list_types::check(schema, value));
        }
        if let Some(rules) = &compiled.rules {
            if errors.iter().any(blocks_rules) {
                errors.push(FieldError::invalid(
                    FieldPath::root(),
                    BadValue::Value(Value::Null),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                errors.extend(rules.check(schema, value, old, compiled.config.cost_budget));
            }
        }
        errors
    }
}

/// How deep the walks over a schema go (schemas are finite trees, but untrusted).
const MAX_SCHEMA_DEPTH: usize = 256;

/// Whether any node of `schema` (following properties, items, map values and compositions)
/// satisfies `predicate`.
fn any_node(schema: &Schema, predicate: &dyn Fn(&Schema) -> bool) -> bool {
    fn walk(schema: &Schema, predicate: &dyn Fn(&Schema) -> bool, depth: usize) -> bool {
        if depth > MAX_SCHEMA_DEPTH {
            return false;
        }
        predicate(schema)
            || schema
                .properties
                .values()
                .chain(schema.items.as_deref())
                .chain(schema.additional_properties_schema())
                .chain(&schema.all_of)
                .chain(&schema.any_of)
                .chain(&schema.one_of)
                .chain(schema.not.as_deref())
                .any(|child| walk(child, predicate, depth + 1))
    }
    walk(schema, predicate, 0)
}

/// Errors after which Kubernetes does not run the CEL rules: the object's shape is wrong.
fn blocks_rules(error: &FieldError) -> bool {
    matches!(
        error.error_type,
        FieldErrorType::NotSupported
            | FieldErrorType::Required
            | FieldErrorType::TooLong
            | FieldErrorType::TooMany
            | FieldErrorType::TypeInvalid
    )
}

/// Validates `value` against `schema` (on update, against `old` too); see
/// [`Validator::validate`]. Compiles the schema each time: keep a [`Validator`] to validate
/// many objects.
pub fn validate(schema: &Schema, value: &Value, old: Option<&Value>) -> Vec<FieldError> {
    Validator::new(schema).validate(value, old)
}

#[cfg(test)]
mod tests;
