//! `x-kubernetes-validations` rules compiled when a definition is created or updated, so a
//! rule that does not compile (or does not give a bool) is refused at definition time with
//! kube-apiserver's field path, instead of failing every object later.
//!
//! Rules compile as the object validator compiles them (`kro-schema`): `self` and `oldSelf`
//! typed from the schema, with every CEL library Kubernetes enables.

use std::sync::Arc;

use kro_cel::{ALL_LIBRARIES, Env, Type};
use kro_schema::{
    BadValue, FieldError, FieldPath, NoDefinitions, Schema, SchemaTypes, ValidationRule,
};

/// How deep the walk goes (the structural check refuses deeper schemas first).
const MAX_DEPTH: usize = 64;

/// The errors of the rules in `schema` (a version's `openAPIV3Schema`, reported at `path`).
pub(super) fn rule_errors(schema: &Schema, path: &FieldPath) -> Vec<FieldError> {
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
        errors: Vec::new(),
    };
    walk.node(schema, path, "__self", root_type, 0);
    walk.errors
}

struct Walk {
    env: Env,
    types: SchemaTypes,
    errors: Vec<FieldError>,
}

impl Walk {
    fn node(&mut self, schema: &Schema, path: &FieldPath, name: &str, ty: Type, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let rules_path = path.child("x-kubernetes-validations");
        for (index, rule) in schema.x_kubernetes_validations.iter().enumerate() {
            if let Some(message) = self.compile_error(rule, &ty) {
                self.errors.push(FieldError::invalid(
                    rules_path.index(index).child("rule"),
                    BadValue::GoSyntax(go_rule(rule)),
                    &message,
                ));
            }
        }
        for (key, property) in &schema.properties {
            let child_name = format!("{name}.{key}");
            let child_type = self.types.type_of(property, &child_name, &NoDefinitions);
            let child_path = path.child("properties").key(key);
            self.node(property, &child_path, &child_name, child_type, depth + 1);
        }
        if let Some(items) = &schema.items {
            let child_name = format!("{name}.@items");
            let child_type = self.types.type_of(items, &child_name, &NoDefinitions);
            self.node(
                items,
                &path.child("items"),
                &child_name,
                child_type,
                depth + 1,
            );
        }
        if let Some(values) = schema.additional_properties_schema() {
            let child_name = format!("{name}.@values");
            let child_type = self.types.type_of(values, &child_name, &NoDefinitions);
            let child_path = path.child("additionalProperties");
            self.node(values, &child_path, &child_name, child_type, depth + 1);
        }
        for (index, branch) in schema.all_of.iter().enumerate() {
            let branch_path = path.child("allOf").index(index);
            self.node(branch, &branch_path, name, ty.clone(), depth + 1);
        }
    }

    /// Why the rule does not compile, with kube-apiserver's wording; `None` when it does (an
    /// empty rule is reported by the schema's own validation).
    fn compile_error(&self, rule: &ValidationRule, self_type: &Type) -> Option<String> {
        if rule.rule.trim().is_empty() {
            return None;
        }
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
        match env.compile(&rule.rule) {
            Err(error) => Some(format!("compilation failed: {error}")),
            Ok(program) if program.output_type() != Some(&Type::Bool) => {
                Some("cel expression must evaluate to a bool".to_owned())
            }
            Ok(_) => None,
        }
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
}
