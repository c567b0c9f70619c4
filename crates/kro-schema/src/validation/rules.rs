//! `x-kubernetes-validations`: CEL rules compiled once per schema into a tree that mirrors
//! the schema locations holding rules (`pkg/apiserver/schema/cel/validation.go`), evaluated
//! with `self` (and `oldSelf` on update) typed from the schema.
//!
//! Each evaluation runs under a per-call cost limit, and all rules of one object share a
//! budget; running out stops further rules with Kubernetes' messages, never hangs or panics.

use std::collections::BTreeMap;
use std::sync::Arc;

use kro_cel::{ALL_LIBRARIES, Activation, Env, EvalErrorKind, Program, Type, from_json};
use serde_json::Value;

use super::correlation;
use super::field_path;
use super::location::{Step, elements};
use crate::cel_types::{NoDefinitions, SchemaTypes};
use crate::field_error::{BadValue, FieldError, FieldPath, quote};
use crate::openapi::{Schema, ValidationRule};

/// The type name `self` gets at the root (nested objects are named below it).
const ROOT_TYPE: &str = "__self";

/// Longest message a `messageExpression` may produce, in bytes.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// How deep the rule tree and the walk go.
const MAX_DEPTH: usize = 512;

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// One rule, compiled.
#[derive(Debug, Clone)]
struct CompiledRule {
    rule: ValidationRule,
    /// `None` for an empty rule; `Err` holds the compile error's detail.
    program: Option<Result<Program, String>>,
    uses_old_self: bool,
    message_expression: Option<Program>,
    /// The rule's `fieldPath`, normalized, when it names a field.
    field_path: Option<String>,
}

impl CompiledRule {
    /// The rule as messages name it: its message if it has one, else its expression.
    fn error_string(&self) -> &str {
        match self.rule.message.as_deref().map(str::trim) {
            Some(message) if !message.is_empty() => message,
            _ => self.rule.rule.trim(),
        }
    }

    fn default_message(&self) -> String {
        match self.rule.message.as_deref().map(str::trim) {
            Some(message) if !message.is_empty() => message.to_string(),
            _ => format!("failed rule: {}", self.rule.rule.trim()),
        }
    }
}

/// The rules at one schema location and the locations below it that have rules.
#[derive(Debug, Clone, Default)]
struct RuleNode {
    rules: Vec<CompiledRule>,
    self_type: Option<Type>,
    all_of: Vec<RuleNode>,
    properties: BTreeMap<String, RuleNode>,
    items: Option<Box<RuleNode>>,
    values: Option<Box<RuleNode>>,
}

impl RuleNode {
    fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.all_of.is_empty()
            && self.properties.is_empty()
            && self.items.is_none()
            && self.values.is_none()
    }
}

/// The compiled rules of a schema, keyed by schema location (the tree's shape) and rule.
#[derive(Debug, Clone)]
pub(super) struct RuleTree {
    root: RuleNode,
    types: SchemaTypes,
    per_call_limit: u64,
}

impl RuleTree {
    /// Compiles every rule in `schema`; `None` when it has none.
    pub fn compile(schema: &Schema, is_resource_root: bool, per_call_limit: u64) -> Option<Self> {
        let types = SchemaTypes::new();
        let root_type = if is_resource_root {
            types.register(ROOT_TYPE, schema, &NoDefinitions)
        } else {
            types.type_of(schema, ROOT_TYPE, &NoDefinitions)
        };
        let env = ALL_LIBRARIES
            .iter()
            .filter_map(|name| kro_cel::library(name))
            .fold(Env::standard(), Env::with_library)
            .with_type_provider(Arc::new(types.clone()))
            .with_cost_limit(Some(per_call_limit));
        let builder = Builder { env, types: &types };
        let root = builder.node(schema, schema, ROOT_TYPE, root_type, 0);
        (!root.is_empty()).then_some(RuleTree {
            root,
            types,
            per_call_limit,
        })
    }

    /// The compile error of each rule at the tree's root that does not compile against its
    /// location's type (or is not a bool), as kube-apiserver's CRD validation reports them.
    pub fn root_compile_errors(&self) -> Vec<(String, String)> {
        self.root
            .rules
            .iter()
            .filter_map(|rule| match &rule.program {
                Some(Err(error)) => Some((rule.rule.rule.clone(), error.clone())),
                _ => None,
            })
            .collect()
    }

    /// Evaluates the rules against `value` (and `old` on update) within `budget`.
    pub fn check(
        &self,
        schema: &Schema,
        value: &Value,
        old: Option<&Value>,
        budget: u64,
    ) -> Vec<FieldError> {
        let mut walk = Walk {
            tree: self,
            path: Vec::new(),
            remaining: i64::try_from(budget).unwrap_or(i64::MAX),
            errors: Vec::new(),
            stopped: false,
        };
        let nearest = old.map(|old| (value, old));
        walk.node(&self.root, schema, value, old, nearest, 0);
        walk.errors
    }
}

struct Builder<'a> {
    env: Env,
    types: &'a SchemaTypes,
}

impl Builder<'_> {
    /// The rules of `rules` (a schema or an `allOf` branch of it) at the location of `node`.
    fn node(
        &self,
        rules: &Schema,
        node: &Schema,
        name: &str,
        self_type: Type,
        depth: usize,
    ) -> RuleNode {
        let mut tree = RuleNode::default();
        if depth > MAX_DEPTH {
            return tree;
        }
        tree.rules = rules
            .x_kubernetes_validations
            .iter()
            .map(|rule| self.compile(rule, node, &self_type))
            .collect();
        for (key, rule_property) in &rules.properties {
            if let Some(property) = node.properties.get(key) {
                let name = format!("{name}.{key}");
                let ty = self.types.type_of(property, &name, &NoDefinitions);
                let child = self.node(rule_property, property, &name, ty, depth + 1);
                if !child.is_empty() {
                    tree.properties.insert(key.clone(), child);
                }
            }
        }
        if let (Some(rule_items), Some(items)) = (&rules.items, &node.items) {
            let name = format!("{name}.@items");
            let ty = self.types.type_of(items, &name, &NoDefinitions);
            let child = self.node(rule_items, items, &name, ty, depth + 1);
            tree.items = (!child.is_empty()).then(|| Box::new(child));
        }
        if let (Some(rule_values), Some(values)) = (
            rules.additional_properties_schema(),
            node.additional_properties_schema(),
        ) {
            let name = format!("{name}.@values");
            let ty = self.types.type_of(values, &name, &NoDefinitions);
            let child = self.node(rule_values, values, &name, ty, depth + 1);
            tree.values = (!child.is_empty()).then(|| Box::new(child));
        }
        for branch in &rules.all_of {
            let child = self.node(branch, node, name, self_type.clone(), depth + 1);
            if !child.is_empty() {
                tree.all_of.push(child);
            }
        }
        if !tree.rules.is_empty() {
            tree.self_type = Some(self_type);
        }
        tree
    }

    fn compile(&self, rule: &ValidationRule, node: &Schema, self_type: &Type) -> CompiledRule {
        let optional = rule.optional_old_self == Some(true);
        let old_type = if optional {
            Type::optional(self_type.clone())
        } else {
            self_type.clone()
        };
        let env = self
            .env
            .clone()
            .with_variable("self", self_type.clone())
            .with_variable("oldSelf", old_type);
        let program = (!rule.rule.trim().is_empty()).then(|| match env.compile(&rule.rule) {
            Err(error) => Err(format!("compilation failed: {error}")),
            Ok(program) if program.output_type() != Some(&Type::Bool) => {
                Err("cel expression must evaluate to a bool".to_string())
            }
            Ok(program) => Ok(program),
        });
        let uses_old_self = matches!(&program, Some(Ok(program))
            if program.variables().iter().any(|variable| &**variable == "oldSelf"));
        let message_expression = rule
            .message_expression
            .as_deref()
            .filter(|expression| !expression.is_empty())
            .and_then(|expression| env.compile(expression).ok())
            .filter(|program| program.output_type() == Some(&Type::String));
        let field_path = rule
            .field_path
            .as_deref()
            .filter(|path| !path.is_empty())
            .and_then(|path| field_path::normalize(path, node).ok());
        CompiledRule {
            rule: rule.clone(),
            program,
            uses_old_self,
            message_expression,
            field_path,
        }
    }
}

/// The bindings of one rule evaluation.
struct Bindings<'a> {
    self_value: &'a kro_cel::Value,
    old_self: Option<kro_cel::Value>,
}

impl Activation for Bindings<'_> {
    fn resolve(&self, name: &str) -> Option<kro_cel::Value> {
        match name {
            "self" => Some(self.self_value.clone()),
            "oldSelf" => self.old_self.clone(),
            _ => None,
        }
    }
}

/// The location a rule is evaluated at.
struct Site<'a> {
    /// The schema's type, the value shown by failed rules and evaluation errors
    /// (`Invalid value: "object"`).
    type_value: &'a BadValue,
    /// Whether the nearest correlated value equals its old value (ratcheting).
    unchanged: bool,
}

/// The closest correlated value and its old value, whose equality ratchets errors.
type Nearest<'a> = Option<(&'a Value, &'a Value)>;

struct Walk<'a, 'v> {
    tree: &'a RuleTree,
    path: Vec<Step<'v>>,
    remaining: i64,
    errors: Vec<FieldError>,
    stopped: bool,
}

impl<'v> Walk<'_, 'v> {
    fn node(
        &mut self,
        node: &RuleNode,
        schema: &Schema,
        value: &'v Value,
        old: Option<&Value>,
        nearest: Nearest<'_>,
        depth: usize,
    ) {
        if value.is_null() || self.stopped || depth > MAX_DEPTH {
            return;
        }
        let old = old.filter(|old| !old.is_null());
        self.rules(node, schema, value, old, nearest);
        for branch in &node.all_of {
            self.node(branch, schema, value, old, nearest, depth + 1);
        }
        match value {
            Value::Array(items) => {
                let (Some(item_node), Some(item_schema)) = (&node.items, &schema.items) else {
                    return;
                };
                for (index, item) in items.iter().enumerate() {
                    let old_item = correlation::list_item(schema, old, item);
                    let nearest = old_item.map(|old_item| (item, old_item)).or(nearest);
                    self.path.push(Step::Index(index));
                    self.node(item_node, item_schema, item, old_item, nearest, depth + 1);
                    self.path.pop();
                }
            }
            Value::Object(fields) => {
                let correlatable = matches!(
                    schema.x_kubernetes_map_type.as_deref(),
                    None | Some("granular") | Some("atomic")
                );
                let old = old.filter(|_| correlatable);
                if let (Some(value_node), Some(value_schema)) =
                    (&node.values, schema.additional_properties_schema())
                {
                    for (key, item) in fields {
                        let old_item = correlation::field(old, key);
                        let nearest = old_item.map(|old_item| (item, old_item)).or(nearest);
                        self.path.push(Step::Key(key));
                        self.node(value_node, value_schema, item, old_item, nearest, depth + 1);
                        self.path.pop();
                    }
                }
                for (key, item) in fields {
                    let (Some(property_node), Some(property)) =
                        (node.properties.get(key), schema.properties.get(key))
                    else {
                        continue;
                    };
                    let (old_item, nearest) =
                        if correlation::is_root_type_meta(self.path.is_empty(), key) {
                            (None, None)
                        } else {
                            let old_item = correlation::field(old, key);
                            (old_item, old_item.map(|old| (item, old)).or(nearest))
                        };
                    self.path.push(Step::Property(key));
                    self.node(property_node, property, item, old_item, nearest, depth + 1);
                    self.path.pop();
                }
            }
            _ => {}
        }
    }

    fn here(&self) -> FieldPath {
        FieldPath::from_elements(elements(&self.path))
    }

    fn stop(&mut self, path: FieldPath, type_value: &BadValue, detail: &str) {
        self.errors
            .push(FieldError::invalid(path, type_value.clone(), detail));
        self.stopped = true;
    }

    /// The rules at one location (`validateExpressions`).
    fn rules(
        &mut self,
        node: &RuleNode,
        schema: &Schema,
        value: &Value,
        old: Option<&Value>,
        nearest: Nearest<'_>,
    ) {
        let (Some(self_type), false) = (&node.self_type, node.rules.is_empty()) else {
            return;
        };
        let type_value = BadValue::text(schema.type_.as_deref().unwrap_or(""));
        if self.remaining <= 0 {
            self.stop(self.here(), &type_value, OUT_OF_BUDGET);
            return;
        }
        let convert = |json: &Value| from_json(json, Some(self_type), Some(&self.tree.types));
        let converted = convert(value).and_then(|self_value| {
            let old_self = match old {
                Some(old) if node.rules.iter().any(|rule| rule.uses_old_self) => {
                    Some(convert(old)?)
                }
                _ => None,
            };
            Ok((self_value, old_self))
        });
        let (self_value, old_self) = match converted {
            Ok(values) => values,
            Err(error) => {
                for rule in node
                    .rules
                    .iter()
                    .filter(|rule| matches!(rule.program, Some(Ok(_))))
                {
                    let detail = format!("{error} evaluating rule: {}", rule.error_string());
                    self.errors.push(FieldError::invalid(
                        self.here(),
                        type_value.clone(),
                        &detail,
                    ));
                }
                return;
            }
        };
        let unchanged = nearest.is_some_and(|(new, old)| new == old);
        for rule in &node.rules {
            let program = match &rule.program {
                None => continue,
                Some(Err(detail)) => {
                    let detail = format!("rule compile error: {detail}");
                    self.errors.push(FieldError::invalid(
                        self.here(),
                        type_value.clone(),
                        &detail,
                    ));
                    continue;
                }
                Some(Ok(program)) => program,
            };
            let optional = rule.rule.optional_old_self == Some(true);
            if rule.uses_old_self && old_self.is_none() && !optional {
                // A transition rule only runs when there is an old value to compare with.
                continue;
            }
            let bindings = Bindings {
                self_value: &self_value,
                old_self: match (&old_self, optional) {
                    (Some(old), true) => {
                        Some(kro_cel::Value::Optional(Some(Arc::new(old.clone()))))
                    }
                    (None, true) => Some(kro_cel::Value::Optional(None)),
                    (old, false) => old.clone(),
                },
            };
            let site = Site {
                type_value: &type_value,
                unchanged,
            };
            if !self.evaluate(rule, program, &bindings, &site) {
                return;
            }
        }
    }

    /// Evaluates one rule and records its failure; `false` when no further rule may run.
    fn evaluate(
        &mut self,
        rule: &CompiledRule,
        program: &Program,
        bindings: &Bindings<'_>,
        site: &Site<'_>,
    ) -> bool {
        let type_value = site.type_value;
        let evaluation = program.evaluate_with_limit(bindings, Some(self.tree.per_call_limit));
        let cost = i64::try_from(evaluation.cost).unwrap_or(i64::MAX);
        if cost > self.remaining {
            self.stop(self.here(), type_value, OUT_OF_BUDGET);
            return false;
        }
        self.remaining -= cost;
        let name = rule.error_string();
        match evaluation.result {
            Err(error) => {
                let detail = match error.kind() {
                    EvalErrorKind::CostLimitExceeded { .. } => {
                        let detail = format!(
                            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {name}"
                        );
                        self.stop(self.here(), type_value, &detail);
                        return false;
                    }
                    EvalErrorKind::NoSuchOverload { .. } => format!(
                        "'{error}': call arguments did not match a supported operator, function or macro signature for rule: {name}"
                    ),
                    _ => format!("{error} evaluating rule: {name}"),
                };
                self.errors.push(FieldError::invalid(
                    self.here(),
                    type_value.clone(),
                    &detail,
                ));
                return true;
            }
            Ok(kro_cel::Value::Bool(true)) => return true,
            Ok(_) => {}
        }
        let mut path = self.here();
        if let Some(field_path) = &rule.field_path {
            path = path.child(field_path);
        }
        let detail = match &rule.message_expression {
            Some(expression) => match self.message(rule, expression, bindings, &path, type_value) {
                Some(Ok(message)) => message,
                Some(Err(())) => return false,
                None => rule.default_message(),
            },
            None => rule.default_message(),
        };
        // Kubernetes 1.33 reports the schema type (`"object"`, `"integer"`…) as the invalid
        // value of a failed rule, never the value itself (1.35 changed this; we follow the
        // version whose API we serve).
        let bad_value = type_value.clone();
        let error = match rule.rule.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(path, &detail),
            Some("FieldValueRequired") => FieldError::required(path, &detail),
            Some("FieldValueDuplicate") => FieldError::duplicate(path, bad_value),
            _ => FieldError::invalid(path, bad_value, &detail),
        };
        // Validation ratcheting: a failure of an unchanged value is not reported, unless the
        // rule is about the transition itself.
        if rule.uses_old_self || !site.unchanged {
            self.errors.push(error);
        }
        true
    }

    /// The `messageExpression` result: `None` to fall back to the message, `Some(Err)` when the
    /// budget ran out (the error is recorded and validation stops).
    fn message(
        &mut self,
        rule: &CompiledRule,
        expression: &Program,
        bindings: &Bindings<'_>,
        path: &FieldPath,
        type_value: &BadValue,
    ) -> Option<Result<String, ()>> {
        let evaluation = expression.evaluate_with_limit(bindings, Some(self.tree.per_call_limit));
        let cost = i64::try_from(evaluation.cost).unwrap_or(i64::MAX);
        if cost > self.remaining {
            self.stop(
                path.clone(),
                type_value,
                "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
            );
            return Some(Err(()));
        }
        if let Err(error) = &evaluation.result
            && matches!(error.kind(), EvalErrorKind::CostLimitExceeded { .. })
        {
            let source = rule.rule.message_expression.as_deref().unwrap_or("");
            let detail = format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                quote(source)
            );
            self.stop(path.clone(), type_value, &detail);
            return Some(Err(()));
        }
        self.remaining -= cost;
        match evaluation.result {
            Ok(kro_cel::Value::String(message)) => {
                let message = message.trim();
                let usable = !message.is_empty()
                    && message.len() <= MAX_MESSAGE_EXPRESSION_BYTES
                    && !message.contains('\n');
                usable.then(|| Ok(message.to_string()))
            }
            _ => None,
        }
    }
}
