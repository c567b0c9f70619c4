//! `x-kubernetes-validations` rules compiled and cost-estimated when a definition is created
//! or updated, so a rule that does not compile (or does not give a bool), or that could cost
//! more than kube-apiserver allows, is refused at definition time with kube-apiserver's field
//! path and message, instead of failing (or running long) on every object later.
//!
//! Rules compile as the object validator compiles them (`kro-schema`): `self` and `oldSelf`
//! typed from the schema, with every CEL library Kubernetes enables. Costs are cel-go's
//! estimates ([`kro_cel::estimate_cel_go_cost`]) with the sizes of [`super::cost`].

use std::sync::Arc;

use kro_cel::{
    ALL_LIBRARIES, CelGoCostConfig, CheckedAst, CompileError, Env, Type, estimate_cel_go_cost,
};
use kro_schema::{
    BadValue, FieldError, FieldPath, NoDefinitions, Schema, SchemaTypes, ValidationRule,
};

use super::cost::{
    DeclSize, RULE_COST_LIMIT, TotalCost, child_cardinality, multiply_with_overflow_guard,
    over_budget_message,
};

/// How deep the walk goes (the structural check refuses deeper schemas first).
const MAX_DEPTH: usize = 64;

/// Whether the per-rule cost limit applies: kube-apiserver does not apply it to a version
/// whose schema an update leaves unchanged, so a definition accepted before stays
/// updatable; the limit on the total applies either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RuleCostLimit {
    Enforced,
    Suppressed,
}

/// The errors of the rules in `schema` (a version's `openAPIV3Schema`, reported at `path`):
/// children before parents, as kube-apiserver lists them, then the total cost.
pub(super) fn rule_errors(
    schema: &Schema,
    path: &FieldPath,
    limit: RuleCostLimit,
) -> Vec<FieldError> {
    let types = SchemaTypes::new();
    let root_type = types.register("__self", schema, &NoDefinitions);
    let env = ALL_LIBRARIES
        .iter()
        .filter_map(|name| kro_cel::library(name))
        .fold(Env::standard(), Env::with_library)
        .with_type_provider(Arc::new(types.clone()));
    let mut walk = Walk {
        env,
        types,
        limit,
        total: TotalCost::default(),
        errors: Vec::new(),
    };
    let node = Node {
        schema,
        path: path.clone(),
        name: "__self".to_owned(),
        ty: root_type,
        is_root: true,
        cardinality: Some(1),
        uncorrelatable: None,
    };
    walk.node(node, 0);
    let mut errors = walk.errors;
    errors.extend(walk.total.errors(path));
    errors
}

struct Walk {
    env: Env,
    types: SchemaTypes,
    limit: RuleCostLimit,
    total: TotalCost,
    errors: Vec<FieldError>,
}

/// A schema node being walked.
struct Node<'s> {
    schema: &'s Schema,
    path: FieldPath,
    /// Its CEL type's registered name.
    name: String,
    ty: Type,
    /// The top of the schema, or an embedded resource: `apiVersion`, `kind` and `metadata`
    /// are added to its sizes.
    is_root: bool,
    /// How many times its rules can run (`None`: under an unbounded list or map).
    cardinality: Option<u64>,
    /// The highest enclosing path whose old and new values cannot be correlated (a list that
    /// is not a map list), where rules may not use `oldSelf`.
    uncorrelatable: Option<FieldPath>,
}

impl Walk {
    fn node(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let schema = node.schema;
        let child_cardinality = child_cardinality(schema, node.cardinality);
        let forbid_below = |forbid: bool| {
            node.uncorrelatable
                .clone()
                .or_else(|| forbid.then(|| node.path.clone()))
        };
        let properties_uncorrelatable = forbid_below(
            schema
                .x_kubernetes_map_type
                .as_deref()
                .is_some_and(|map_type| !matches!(map_type, "granular" | "atomic")),
        );
        let items_uncorrelatable =
            forbid_below(schema.x_kubernetes_list_type.as_deref() != Some("map"));
        for (key, property) in &schema.properties {
            let name = format!("{}.{key}", node.name);
            let child = Node {
                ty: self.types.type_of(property, &name, &NoDefinitions),
                path: node.path.child("properties").key(key),
                name,
                schema: property,
                is_root: property.x_kubernetes_embedded_resource,
                cardinality: child_cardinality,
                uncorrelatable: properties_uncorrelatable.clone(),
            };
            self.node(child, depth + 1);
        }
        if let Some(items) = &schema.items {
            let name = format!("{}.@items", node.name);
            let child = Node {
                ty: self.types.type_of(items, &name, &NoDefinitions),
                path: node.path.child("items"),
                name,
                schema: items,
                is_root: items.x_kubernetes_embedded_resource,
                cardinality: child_cardinality,
                uncorrelatable: items_uncorrelatable.clone(),
            };
            self.node(child, depth + 1);
        }
        if let Some(values) = schema.additional_properties_schema() {
            let name = format!("{}.@values", node.name);
            let child = Node {
                ty: self.types.type_of(values, &name, &NoDefinitions),
                path: node.path.child("additionalProperties"),
                name,
                schema: values,
                is_root: values.x_kubernetes_embedded_resource,
                cardinality: child_cardinality,
                uncorrelatable: node.uncorrelatable.clone(),
            };
            self.node(child, depth + 1);
        }
        for (index, branch) in schema.all_of.iter().enumerate() {
            // kube-apiserver compiles no rules under allOf; kro reports those that cannot
            // compile, and estimates no cost there.
            let branch = Node {
                schema: branch,
                path: node.path.child("allOf").index(index),
                name: node.name.clone(),
                ty: node.ty.clone(),
                is_root: false,
                cardinality: None,
                uncorrelatable: None,
            };
            self.compile_errors_only(&branch, depth + 1);
        }
        self.rules(&node);
    }

    /// The errors of a node's own rules: cost over the limit, then compilation, per rule.
    fn rules(&mut self, node: &Node<'_>) {
        if node.schema.x_kubernetes_validations.is_empty() {
            return;
        }
        let sizes = DeclSize::of(node.schema, node.is_root);
        let rules_path = node.path.child("x-kubernetes-validations");
        for (index, rule) in node.schema.x_kubernetes_validations.iter().enumerate() {
            let rule_path = rules_path.index(index).child("rule");
            let compiled = self.compile(rule, &node.ty);
            if let (Some(Ok(checked)), Some(sizes)) = (&compiled, &sizes) {
                let estimate = estimate_cel_go_cost(checked, sizes, CelGoCostConfig::kubernetes());
                let count = node.cardinality.unwrap_or_else(|| sizes.max_cardinality());
                let cost = multiply_with_overflow_guard(estimate.max, count);
                if self.limit == RuleCostLimit::Enforced && cost > RULE_COST_LIMIT {
                    self.errors.push(FieldError::forbidden(
                        rule_path.clone(),
                        &over_budget_message("estimated rule cost", cost, RULE_COST_LIMIT),
                    ));
                }
                self.total.observe(rule_path.clone(), cost);
            }
            let uses_old_self = matches!(&compiled, Some(Ok(checked))
                if checked.referenced_variables().contains(&"oldSelf"));
            match compiled {
                Some(Err(message)) => self.errors.push(FieldError::invalid(
                    rule_path.clone(),
                    BadValue::GoSyntax(go_rule(rule)),
                    &message,
                )),
                // kube-apiserver looks at the message expression only once the rule compiles.
                Some(Ok(_)) => self.message_expression(node, index, sizes.as_ref()),
                None => {}
            }
            if uses_old_self {
                if let Some(uncorrelatable) = &node.uncorrelatable {
                    self.errors.push(FieldError::invalid(
                        rule_path,
                        BadValue::text(&rule.rule),
                        &format!(
                            "oldSelf cannot be used on the uncorrelatable portion of the schema \
                             within {uncorrelatable}"
                        ),
                    ));
                }
            } else if let Some(optional) = rule.optional_old_self {
                self.errors.push(FieldError::invalid(
                    rules_path.index(index).child("optionalOldSelf"),
                    BadValue::Value(serde_json::Value::Bool(optional)),
                    "may not be set if oldSelf is not used in rule",
                ));
            }
        }
    }

    /// The errors of rule `index`'s `messageExpression`: it does not compile or give a
    /// string, or its estimated cost (once per failure, so not multiplied) is over the limit.
    fn message_expression(&mut self, node: &Node<'_>, index: usize, sizes: Option<&DeclSize>) {
        let rule = &node.schema.x_kubernetes_validations[index];
        let Some(expression) = rule.message_expression.as_deref().filter(|e| !e.is_empty()) else {
            return;
        };
        let path = node
            .path
            .child("x-kubernetes-validations")
            .index(index)
            .child("messageExpression");
        let checked = match self.check(expression, rule, &node.ty) {
            Err(error) => Err(format!("messageExpression compilation failed: {error}")),
            Ok(checked) if checked.output_type() != &Type::String => {
                Err("messageExpression must evaluate to a string".to_owned())
            }
            Ok(checked) => Ok(checked),
        };
        match (checked, sizes) {
            (Err(message), _) => self.errors.push(FieldError::invalid(
                path,
                BadValue::GoSyntax(go_rule(rule)),
                &message,
            )),
            (Ok(checked), Some(sizes)) => {
                let cost = estimate_cel_go_cost(&checked, sizes, CelGoCostConfig::kubernetes()).max;
                if self.limit == RuleCostLimit::Enforced && cost > RULE_COST_LIMIT {
                    self.errors.push(FieldError::forbidden(
                        path.clone(),
                        &over_budget_message(
                            "estimated messageExpression cost",
                            cost,
                            RULE_COST_LIMIT,
                        ),
                    ));
                }
                self.total.observe(path, cost);
            }
            (Ok(_), None) => {}
        }
    }

    /// Under allOf: the rules that do not compile, and nothing deeper.
    fn compile_errors_only(&mut self, node: &Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let rules_path = node.path.child("x-kubernetes-validations");
        for (index, rule) in node.schema.x_kubernetes_validations.iter().enumerate() {
            if let Some(Err(message)) = self.compile(rule, &node.ty) {
                self.errors.push(FieldError::invalid(
                    rules_path.index(index).child("rule"),
                    BadValue::GoSyntax(go_rule(rule)),
                    &message,
                ));
            }
        }
    }

    /// The checked rule, or why it does not compile with kube-apiserver's wording; `None`
    /// for an empty rule (reported by the schema's own validation).
    fn compile(
        &self,
        rule: &ValidationRule,
        self_type: &Type,
    ) -> Option<Result<CheckedAst, String>> {
        if rule.rule.trim().is_empty() {
            return None;
        }
        Some(match self.check(&rule.rule, rule, self_type) {
            Err(error) => Err(format!("compilation failed: {error}")),
            Ok(checked) if checked.output_type() != &Type::Bool => {
                Err("cel expression must evaluate to a bool".to_owned())
            }
            Ok(checked) => Ok(checked),
        })
    }

    /// `text` (the rule or its message expression) parsed and checked with `self` and
    /// `oldSelf` of the node's type.
    fn check(
        &self,
        text: &str,
        rule: &ValidationRule,
        self_type: &Type,
    ) -> Result<CheckedAst, CompileError> {
        let old_type = if rule.optional_old_self == Some(true) {
            Type::optional(self_type.clone())
        } else {
            self_type.clone()
        };
        let env = self
            .env
            .clone()
            .with_variable("self", self_type.clone())
            .with_variable("oldSelf", old_type);
        let ast = env.parse(text)?;
        Ok(env.check(&ast)?)
    }
}

/// A rule as kube-apiserver prints it in a message: Go syntax of its internal type.
fn go_rule(rule: &ValidationRule) -> String {
    let text = |value: Option<&String>| kro_schema::go_quote(value.map_or("", String::as_str));
    let pointer = |set: bool, type_name: &str| {
        if set {
            format!("(*{type_name})(0xc000000000)")
        } else {
            format!("(*{type_name})(nil)")
        }
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, \
         FieldPath:{}, OptionalOldSelf:{}}}",
        kro_schema::go_quote(&rule.rule),
        text(rule.message.as_ref()),
        text(rule.message_expression.as_ref()),
        pointer(rule.reason.is_some(), "apiextensions.FieldValueErrorReason"),
        text(rule.field_path.as_ref()),
        pointer(rule.optional_old_self.is_some(), "bool"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors_of(schema: serde_json::Value) -> Vec<FieldError> {
        let schema: Schema = serde_json::from_value(schema).expect("a schema");
        rule_errors(
            &schema,
            &FieldPath::new("spec")
                .child("validation")
                .child("openAPIV3Schema"),
            RuleCostLimit::Enforced,
        )
    }

    #[test]
    fn rules_that_compile_to_a_bool_are_accepted() {
        let errors = errors_of(json!({"type": "object", "properties": {
            "spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": "self.replicas <= self.max"}],
                "properties": {
                    "replicas": {"type": "integer"}, "max": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string",
                        "x-kubernetes-validations": [{"rule": "self.size() < 10"}]}}}}}}));
        assert_eq!(errors, Vec::new());
    }

    #[test]
    fn a_rule_that_does_not_compile_is_named_by_its_field_path() {
        let errors = errors_of(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self.size() < 10"},
                        {"rule": "self.nope ==", "message": "m"}]}}}}}}));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].path.to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items\
             .x-kubernetes-validations[1].rule"
        );
    }

    #[test]
    fn a_rule_of_another_type_than_bool_is_refused() {
        let errors = errors_of(json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-validations": [{"rule": "1 + 1"}]}}}));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].path.to_string(),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    fn list_of_strings(list: serde_json::Value, rule: &str) -> serde_json::Value {
        let mut list = list;
        list["type"] = json!("array");
        list["x-kubernetes-validations"] = json!([{"rule": rule}]);
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "names": list}}}})
    }

    const MATCH_ALL: &str = "self.all(x, x.matches('^[a-z]+$'))";
    const NAMES_RULE: &str = "spec.validation.openAPIV3Schema.properties[spec].properties[names]\
                              .x-kubernetes-validations[0].rule";

    #[test]
    fn a_regex_over_every_element_of_an_unbounded_list_is_refused_as_too_expensive() {
        let errors = errors_of(list_of_strings(
            json!({"items": {"type": "string"}}),
            MATCH_ALL,
        ));
        let advice = "(try simplifying the rule, or adding maxItems, maxProperties, and \
                      maxLength where arrays, maps, and strings are declared)";
        // Over the rule limit, and alone over the schema's total too.
        assert_eq!(
            messages(&errors),
            [
                format!(
                    "{NAMES_RULE}: Forbidden: estimated rule cost exceeds budget by factor of \
                     more than 100x {advice}"
                ),
                format!(
                    "{NAMES_RULE}: Forbidden: contributed to estimated rule cost total \
                     exceeding cost limit for entire OpenAPIv3 schema"
                ),
                format!(
                    "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations \
                     estimated rule cost total for entire OpenAPIv3 schema exceeds budget by \
                     factor of more than 100x {advice}"
                ),
            ]
        );
    }

    #[test]
    fn the_same_rule_is_accepted_once_the_list_and_its_strings_are_bounded() {
        let list = json!({"maxItems": 10, "items": {"type": "string", "maxLength": 20}});
        assert_eq!(errors_of(list_of_strings(list, MATCH_ALL)), Vec::new());
    }

    fn nested_strings(rules: serde_json::Value) -> serde_json::Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "grid": {"type": "array", "items": {"type": "array", "items": {
                "type": "array", "items": {"type": "string", "maxLength": 10,
                    "x-kubernetes-validations": rules}}}}}}}})
    }

    #[test]
    fn a_rule_deep_under_unbounded_lists_runs_as_often_as_its_value_fits_in_a_request() {
        // 3 units, 3 MiB / 3 bytes ("" and a comma) times: 3,145,728, under the limit.
        assert_eq!(
            errors_of(nested_strings(json!([{"rule": "self.size() < 10"}]))),
            Vec::new()
        );
        // 21 units (a 40-byte string against a 14-character pattern): 22,020,096.
        let errors = errors_of(nested_strings(
            json!([{"rule": "self.matches('^[a-z]{1,10}$')"}]),
        ));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].to_string().contains("by factor of 2.2x (try"),
            "{errors:?}"
        );
    }

    fn eleven_rules() -> serde_json::Value {
        // 9 units each, run up to 1,048,576 times: 9,437,184 each, 103,809,024 in all.
        let rule = json!({"rule": "self.size() < 10 && self.size() > 1 && self.size() != 5"});
        nested_strings(json!(vec![rule; 11]))
    }

    #[test]
    fn rules_each_under_the_limit_are_refused_when_their_total_is_over_the_schema_limit() {
        let errors = errors_of(eleven_rules());
        let rule = |index: usize| {
            format!(
                "spec.validation.openAPIV3Schema.properties[spec].properties[grid].items.items\
                 .items.x-kubernetes-validations[{index}].rule: Forbidden: contributed to \
                 estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            )
        };
        assert_eq!(
            messages(&errors),
            [
                rule(0),
                rule(1),
                rule(2),
                rule(3),
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated \
                 rule cost total for entire OpenAPIv3 schema exceeds budget by factor of \
                 1.038090x (try simplifying the rule, or adding maxItems, maxProperties, and \
                 maxLength where arrays, maps, and strings are declared)"
                    .to_owned(),
            ]
        );
    }

    #[test]
    fn an_unchanged_schema_skips_the_per_rule_limit_but_not_the_total() {
        let path = FieldPath::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        let expensive: Schema = serde_json::from_value(list_of_strings(
            json!({"items": {"type": "string"}}),
            MATCH_ALL,
        ))
        .expect("a schema");
        let errors = rule_errors(&expensive, &path, RuleCostLimit::Suppressed);
        // The per-rule error is suppressed; the same cost is still over the total.
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .contains("contributed to estimated rule cost total")
        );
        let eleven: Schema = serde_json::from_value(eleven_rules()).expect("a schema");
        assert_eq!(
            rule_errors(&eleven, &path, RuleCostLimit::Suppressed).len(),
            5
        );
    }

    #[test]
    fn a_rule_that_does_not_compile_adds_no_cost() {
        let errors = errors_of(list_of_strings(
            json!({"items": {"type": "string"}}),
            "self.all(x,",
        ));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].to_string().contains("compilation failed"),
            "{errors:?}"
        );
    }

    #[test]
    fn message_expressions_are_compiled_and_their_cost_is_not_multiplied() {
        let with_message = |message: &str| {
            json!({"type": "object", "properties": {"names": {"type": "array",
                "items": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [
                    {"rule": "self.size() < 5", "messageExpression": message}]}}})
        };
        let path = "spec.validation.openAPIV3Schema.properties[names].x-kubernetes-validations[0]\
                    .messageExpression";
        // Per element 1 + 1 + 10 + 1 + 1 + ceil(80 * 0.1) = 22, 1,048,575 elements.
        let errors = errors_of(with_message("self.map(x, x + x).join(', ')"));
        assert!(
            errors[0].to_string().starts_with(&format!(
                "{path}: Forbidden: estimated messageExpression cost exceeds budget by factor of"
            )),
            "{errors:?}"
        );
        // Cheap once, although the list may be long.
        assert_eq!(
            errors_of(with_message("self.size() > 9 ? 'too many' : 'too few'")),
            Vec::new()
        );
        let errors = errors_of(with_message("self.size()"));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .ends_with("messageExpression must evaluate to a string")
        );
        let errors = errors_of(with_message("self.nope("));
        assert!(
            errors[0]
                .to_string()
                .contains("messageExpression compilation failed: ")
        );
    }

    #[test]
    fn deep_and_wide_schemas_with_rules_everywhere_are_estimated() {
        // 60 unbounded lists deep, a rule at every level: each is estimated once, with the
        // cost saturating rather than overflowing.
        let mut deep = json!({"type": "string",
            "x-kubernetes-validations": [{"rule": "self.size() < 10"}]});
        for _ in 0..60 {
            deep = json!({"type": "array", "items": deep,
                "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]});
        }
        let errors = errors_of(json!({"type": "object", "properties": {"deep": deep}}));
        assert!(errors.len() > 60, "{}", errors.len());
        // 500 properties, each with a rule over a list of 500 literals (3 MiB of request
        // holds about as much).
        let literals: Vec<String> = (0..500).map(|i| format!("'v{i}'")).collect();
        let rule = format!("self in [{}]", literals.join(", "));
        let properties: serde_json::Map<String, serde_json::Value> = (0..500)
            .map(|i| {
                let field = json!({"type": "string", "maxLength": 8,
                    "x-kubernetes-validations": [{"rule": rule}]});
                (format!("p{i}"), field)
            })
            .collect();
        let errors = errors_of(json!({"type": "object", "properties": properties}));
        assert_eq!(errors, Vec::new());
    }

    #[test]
    fn old_self_is_refused_under_lists_that_are_not_map_lists() {
        let list = |list_type: &str| {
            json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 4,
                "x-kubernetes-list-type": list_type, "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string", "maxLength": 4}},
                    "x-kubernetes-validations": [{"rule": "self.name == oldSelf.name"}]}}}})
        };
        assert_eq!(errors_of(list("map")), Vec::new());
        assert_eq!(
            messages(&errors_of(list("atomic"))),
            [
                "spec.validation.openAPIV3Schema.properties[items].items.x-kubernetes-validations[0]\
              .rule: Invalid value: \"self.name == oldSelf.name\": oldSelf cannot be used on the \
              uncorrelatable portion of the schema within \
              spec.validation.openAPIV3Schema.properties[items]"
            ]
        );
        let unused = json!({"type": "string", "x-kubernetes-validations": [
            {"rule": "self != 'a'", "optionalOldSelf": true}]});
        assert_eq!(
            messages(&errors_of(unused)),
            [
                "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].optionalOldSelf: \
              Invalid value: true: may not be set if oldSelf is not used in rule"
            ]
        );
    }
}
