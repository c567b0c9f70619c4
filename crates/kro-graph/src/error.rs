//! Build errors: what is wrong with an RGD and where (the resource id and the field path in
//! the RGD document, which `kro validate` turns into file:line:column).

use std::fmt;

use kro_cel::Type;
use kro_schema::SimpleSchemaError;

use crate::template::{FieldPath, TemplateError};

/// One problem found while building a graph.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildError {
    /// Where in the RGD document (`spec.resources[1].template.spec.replicas`).
    pub path: FieldPath,
    /// The resource the problem belongs to, if any.
    pub resource: Option<String>,
    /// What is wrong.
    pub kind: BuildErrorKind,
}

/// What can be wrong with an RGD.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildErrorKind {
    /// `schema.kind` is not UpperCamelCase.
    #[error("kind {0:?} is not a valid kind: must be UpperCamelCase (^[A-Z][a-zA-Z0-9]{{0,62}}$)")]
    InvalidKind(String),
    /// The kind's CRD plural (upstream kro's pluralisation) is not a valid resource name.
    #[error(
        "kind {kind:?} would be served as {plural:?} (the plural upstream kro forms, with the flect library), which Kubernetes refuses as a resource name: choose another kind"
    )]
    InvalidPlural {
        /// The kind.
        kind: String,
        /// The plural it gets.
        plural: String,
    },
    /// `schema.apiVersion` is not a Kubernetes version.
    #[error("apiVersion {0:?} is not a valid version (v1, v1alpha1, v2beta3 ...)")]
    InvalidVersion(String),
    /// A short name or category that is not a DNS label.
    #[error("{0:?} is not a valid name: must be a lowercase DNS label")]
    InvalidName(String),
    /// `schema.group` is not an API group kube-apiserver accepts for a CRD.
    #[error(
        "group {0:?} is not a valid API group: must be a lowercase DNS subdomain with at least one dot (example.org)"
    )]
    InvalidGroup(String),
    /// `metadata.name` of the RGD is not a Kubernetes object name.
    #[error("metadata.name: Invalid value: {0}")]
    InvalidRgdName(crate::names::NameError),
    /// A resource id that is not lowerCamelCase.
    #[error("id {0:?} is not a valid resource id: must be lowerCamelCase")]
    InvalidId(String),
    /// A resource id that is reserved.
    #[error("id {0:?} is a reserved word")]
    ReservedId(String),
    /// Two resources with one id.
    #[error("id {0:?} is used by more than one resource")]
    DuplicateId(String),
    /// Not exactly one of template, externalRef and data.
    #[error("a resource needs exactly one of template, externalRef and data, found {0}")]
    NodeShape(String),
    /// `readyWhen` on a data node.
    #[error(
        "readyWhen is not allowed on a data node: a data node is ready once its expressions evaluate"
    )]
    ReadyWhenOnData,
    /// A template sets a label or annotation kro keeps for itself.
    #[error(
        "{field} under kro.run/ and internal.kro.run/ are kro's own; a template may not set {key:?}"
    )]
    ReservedMetadata {
        /// `labels` or `annotations`.
        field: &'static str,
        /// The key.
        key: String,
    },
    /// An externalRef's label selector with fields a selector does not have.
    #[error("invalid label selector: {0}")]
    InvalidSelector(String),
    /// A `forEach` with more dimensions than allowed.
    #[error("forEach has {count} dimensions; at most {max} are allowed")]
    TooManyDimensions {
        /// How many it has.
        count: usize,
        /// The limit (`--rgd-max-collection-dimension-size`).
        max: usize,
    },
    /// `forEach` on an externalRef.
    #[error("forEach is not allowed on an externalRef (use a label selector to read many objects)")]
    ForEachOnExternalRef,
    /// `externalRef.metadata` with both or neither of name and selector.
    #[error("externalRef.metadata needs exactly one of name and selector")]
    ExternalRefTarget,
    /// A template that is not a Kubernetes object.
    #[error("the template is not a Kubernetes object: {0}")]
    InvalidObject(String),
    /// A malformed apiVersion/kind.
    #[error("{0}")]
    InvalidGvk(String),
    /// A forEach iterator name that breaks the rules.
    #[error("forEach iterator {name:?}: {reason}")]
    InvalidIterator {
        /// The name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A field that must be one standalone `${...}`.
    #[error("{field} must be a single ${{...}} expression, found {value:?}")]
    NotStandalone {
        /// Which kind of field (readyWhen, includeWhen, forEach).
        field: &'static str,
        /// What was written.
        value: String,
    },
    /// A `${...}` template that does not scan.
    #[error("{0}")]
    Template(TemplateError),
    /// A SimpleSchema problem.
    #[error("{0}")]
    Schema(SimpleSchemaError),
    /// An expression that does not parse or type-check.
    #[error("expression {expression:?}: {error}{}", HintList(.hints))]
    Cel {
        /// The expression.
        expression: String,
        /// The CEL diagnostics, each with its position in the expression.
        error: kro_cel::CompileError,
        /// What the author most likely meant, where the mistake is a known one.
        hints: Vec<Hint>,
    },
    /// A dependency the graph could not record: the compiler found a reference it had not
    /// declared as a node (a bug in kro, not in the RGD).
    #[error("internal error: {0}")]
    Dependency(crate::DagError),
    /// A dependency cycle.
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// An expression whose type does not fit its field.
    #[error("expression {expression:?} has type {found}, but the field expects {expected}")]
    TypeMismatch {
        /// The expression.
        expression: String,
        /// The field's type.
        expected: Type,
        /// The expression's type.
        found: Type,
    },
    /// A condition that is not boolean.
    #[error("{field} expression {expression:?} must be a bool, found {found}")]
    NotBool {
        /// readyWhen or includeWhen.
        field: &'static str,
        /// The expression.
        expression: String,
        /// Its type.
        found: Type,
    },
    /// A forEach expression that is neither a list nor a map.
    #[error("forEach expression {expression:?} must be a list or a map, found {found}")]
    NotIterable {
        /// The expression.
        expression: String,
        /// Its type.
        found: Type,
    },
    /// A status field kro owns.
    #[error("status.{0} is reserved: kro writes it")]
    ReservedStatusField(String),
    /// A status value that is neither an expression nor a declaration.
    #[error("status fields must be ${{...}} expressions or SimpleSchema declarations, found {0}")]
    InvalidStatusField(String),
    /// A status expression that reads neither the instance (`schema`) nor a resource: upstream
    /// refuses it, as its value never changes.
    #[error("a status expression must read schema or a resource")]
    ConstantStatusField,
    /// A `status.conditions` expression whose type is neither a condition nor a list of them.
    #[error(
        "condition expressions must return runtime.newCondition(...) or a list of them, not {0}"
    )]
    NotACondition(Type),
    /// The generated CRD's spec or status schema is invalid (for example a scale marker rule).
    #[error("{0}")]
    Scaling(String),
    /// A propagation policy (`spec.propagateWhen`, the rollout annotations) that cannot be
    /// read.
    #[error("{0}")]
    Propagation(crate::propagation::PolicyError),
    /// A time value that moves with the clock written into an object or the status.
    #[error(
        "expression {expression:?} is a {found}, which changes with the clock: wrap it in \
         string(...) to write its text at reconcile time (and opt out of requeueing when it changes)"
    )]
    BareTimeValue {
        /// The expression.
        expression: String,
        /// Its type.
        found: Type,
    },
    /// A `lifecycle` that cannot be read or checked.
    #[error("{0}")]
    Lifecycle(crate::lifecycle::LifecycleError),
    /// An expression that uses a function behind a feature gate that is off.
    #[error(
        "expression {expression:?}: {function} requires the {feature} feature gate to be enabled \
         (--feature-gates={feature}=true)"
    )]
    FeatureGateDisabled {
        /// The expression.
        expression: String,
        /// What it uses (`omit()`).
        function: &'static str,
        /// The gate that would allow it.
        feature: crate::Feature,
    },
    /// `omit()` in a field the object cannot be without (its name; its namespace when no
    /// namespace is inherited from the instance).
    #[error(
        "expression {0:?}: omit() cannot be used here: the field is required and must resolve \
         to a concrete value"
    )]
    OmitOnIdentity(String),
}

impl BuildErrorKind {
    /// A stable CamelCase name for condition reasons and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            BuildErrorKind::InvalidKind(_) => "InvalidKind",
            BuildErrorKind::InvalidPlural { .. } => "InvalidPlural",
            BuildErrorKind::InvalidVersion(_) => "InvalidVersion",
            BuildErrorKind::InvalidName(_) => "InvalidName",
            BuildErrorKind::InvalidGroup(_) => "InvalidGroup",
            BuildErrorKind::InvalidRgdName(_) => "InvalidName",
            BuildErrorKind::InvalidId(_) => "InvalidResourceId",
            BuildErrorKind::ReservedId(_) => "ReservedResourceId",
            BuildErrorKind::DuplicateId(_) => "DuplicateResourceId",
            BuildErrorKind::NodeShape(_) => "InvalidResource",
            BuildErrorKind::ReadyWhenOnData => "ReadyWhenOnData",
            BuildErrorKind::ForEachOnExternalRef => "ForEachOnExternalRef",
            BuildErrorKind::TooManyDimensions { .. } => "TooManyDimensions",
            BuildErrorKind::ReservedMetadata { .. } => "ReservedMetadata",
            BuildErrorKind::InvalidSelector(_) => "InvalidSelector",
            BuildErrorKind::ExternalRefTarget => "InvalidExternalRef",
            BuildErrorKind::InvalidObject(_) => "InvalidTemplate",
            BuildErrorKind::InvalidGvk(_) => "InvalidGroupVersionKind",
            BuildErrorKind::InvalidIterator { .. } => "InvalidIterator",
            BuildErrorKind::NotStandalone { .. } => "NotStandaloneExpression",
            BuildErrorKind::Template(_) => "InvalidTemplateExpression",
            BuildErrorKind::Schema(_) => "InvalidSchema",
            BuildErrorKind::Cel { .. } => "InvalidExpression",
            BuildErrorKind::Dependency(_) => "InternalError",
            BuildErrorKind::Cycle(_) => "DependencyCycle",
            BuildErrorKind::TypeMismatch { .. } => "TypeMismatch",
            BuildErrorKind::NotBool { .. } => "ConditionNotBool",
            BuildErrorKind::NotIterable { .. } => "ForEachNotIterable",
            BuildErrorKind::ReservedStatusField(_) => "ReservedStatusField",
            BuildErrorKind::InvalidStatusField(_) => "InvalidStatusField",
            BuildErrorKind::ConstantStatusField => "ConstantStatusField",
            BuildErrorKind::NotACondition(_) => "InvalidConditionType",
            BuildErrorKind::Scaling(_) => "InvalidScaling",
            BuildErrorKind::Propagation(_) => "InvalidPropagationConfig",
            BuildErrorKind::Lifecycle(_) => "InvalidLifecycle",
            BuildErrorKind::BareTimeValue { .. } => "BareTimeValue",
            BuildErrorKind::FeatureGateDisabled { .. } => "FeatureGateDisabled",
            BuildErrorKind::OmitOnIdentity(_) => "OmitOnIdentityField",
        }
    }
}

/// A known mistake in an expression, and what the author most likely meant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// A field of the instance written without `schema.` (`spec.workers`): the instance is
    /// the variable `schema`.
    InstanceIsSchema {
        /// What was written, from the undeclared name to the end of its field path.
        written: String,
    },
    /// A field selected on a collection (`workerPods.items`): a collection is the list of its
    /// objects itself.
    CollectionIsAList {
        /// The collection's resource id.
        id: String,
        /// The field selected on it.
        field: String,
    },
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hint::InstanceIsSchema { written } => write!(
                f,
                "the instance is the variable `schema`: write `schema.{written}` instead of `{written}`"
            ),
            Hint::CollectionIsAList { id, field } => write!(
                f,
                "`{id}` is a collection (forEach): it is the list of its objects and has no field \
                 `{field}`; use `{id}` itself, for example `size({id})` or \
                 `{id}.map(item, item.metadata.name)`"
            ),
        }
    }
}

/// Hints after an expression's diagnostics, one per line.
struct HintList<'a>(&'a [Hint]);

impl fmt::Display for HintList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for hint in self.0 {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl fmt::Display for BuildError {
    /// `resource deployment: spec.resources[0].template.spec.replicas: <what is wrong>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(resource) = &self.resource {
            write!(f, "resource {resource}: ")?;
        }
        if !self.path.is_root() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for BuildError {}

/// Every problem found in one RGD.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildErrors {
    /// The problems, in the order found.
    pub errors: Vec<BuildError>,
}

impl fmt::Display for BuildErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildErrors {}
