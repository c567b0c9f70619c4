//! The OpenAPI keywords, checked as kube-openapi's `SchemaValidator` checks a custom resource:
//! per node the type, then `allOf`/`anyOf`/`oneOf`/`not`, string, format, number, list, `enum`
//! and object checks, with kube-openapi's messages (`spec.replicas in body should be greater
//! than or equal to 1`) and its paths (map values are `.key`, list items `[i]`).
//!
//! On update, a node whose value equals its correlated old value reports nothing
//! (validation ratcheting, on by default since Kubernetes 1.30).

use serde_json::{Map, Value};

use super::correlation;
use super::formats;
use super::location::{Step, elements, openapi_name};
use super::numbers::{self, is_json_integer};
use super::outcome::{Code, Issue, Outcome};
use super::patterns::Patterns;
use super::types::{TypeList, effective_format, json_kind};
use crate::field_error::{FieldError, PathElement, format_number, quote};
use crate::openapi::{AdditionalProperties, Schema};

/// How deep the walk follows schema and value together.
const MAX_DEPTH: usize = 512;

/// Checks `value` (and, on update, ratchets against `old`) and returns Kubernetes' errors.
pub(super) fn check(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    patterns: &Patterns,
) -> Vec<FieldError> {
    let mut walk = Walk {
        patterns,
        path: Vec::new(),
    };
    walk.node(schema, value, old)
        .issues
        .into_iter()
        .map(Issue::into_field_error)
        .collect()
}

/// Where the walk is.
struct Walk<'a, 'v> {
    patterns: &'a Patterns,
    path: Vec<Step<'v>>,
}

impl<'v> Walk<'_, 'v> {
    /// kube-openapi's path string of the current value.
    fn name(&self) -> String {
        openapi_name(&self.path)
    }

    fn issue(&self, code: Code, value: Option<Value>, message: String) -> Issue {
        Issue::validation(code, elements(&self.path), value, message)
    }

    fn invalid_type(&self, expected: &str, actual: &str) -> Issue {
        self.issue(
            Code::InvalidType,
            Some(Value::String(actual.to_string())),
            format!(
                "{} in body must be of type {expected}: {}",
                self.name(),
                quote(actual)
            ),
        )
    }

    /// Validates a child reached by `step`.
    fn child(
        &mut self,
        step: Step<'v>,
        schema: &Schema,
        value: &'v Value,
        old: Option<&Value>,
    ) -> Outcome {
        self.path.push(step);
        let outcome = self.node(schema, value, old);
        self.path.pop();
        outcome
    }

    /// A node reached from its parent (or the root): ratchets when unchanged.
    fn node(&mut self, schema: &Schema, value: &'v Value, old: Option<&Value>) -> Outcome {
        let outcome = self.value(schema, value, old);
        if !outcome.is_valid() && old.is_some_and(|old| old == value) {
            return Outcome {
                issues: Vec::new(),
                match_count: outcome.match_count,
            };
        }
        outcome
    }

    /// kube-openapi's `SchemaValidator.Validate`.
    fn value(&mut self, schema: &Schema, value: &'v Value, old: Option<&Value>) -> Outcome {
        if schema.reference.is_some() || self.path.len() > MAX_DEPTH {
            return Outcome::pass();
        }
        let types = TypeList::of(schema);
        let format = effective_format(schema, types);
        let mut result = Outcome::default();
        if value.is_null() {
            if !types.is_empty() && !types.contains("null") && !schema.nullable {
                result.merge(Outcome::failure(self.invalid_type(&types.joined(), "null")));
            } else {
                result.merge(Outcome::pass());
            }
            result.merge(self.check_enum(schema, value));
            return result;
        }
        if !types.is_empty() || format.is_some() {
            result.merge(self.check_type(types, format, value));
            result.inc();
        }
        result.merge(self.check_composition(schema, value, old));
        result.inc();
        if let Value::String(text) = value {
            result.merge(self.check_string(schema, text));
            result.inc();
            if let Some(format) = format.filter(|format| formats::is_supported(format)) {
                if !formats::validates(format, text) {
                    let message = format!(
                        "{} in body must be of type {format}: {}",
                        self.name(),
                        quote(text)
                    );
                    result.merge(Outcome::failure(self.issue(
                        Code::InvalidType,
                        Some(value.clone()),
                        message,
                    )));
                }
                result.inc();
            }
        }
        if let Value::Number(number) = value {
            let mut outcome = numbers::check(schema, &types, format, number, &self.path);
            outcome.inc();
            result.merge(outcome);
            result.inc();
        }
        if let Value::Array(items) = value {
            let outcome = self.check_list(schema, items, old);
            result.merge(outcome);
            result.inc();
        }
        result.merge(self.check_enum(schema, value));
        result.inc();
        if let Value::Object(fields) = value {
            let outcome = self.check_object(schema, fields, old);
            result.merge(outcome);
            result.inc();
        }
        result.inc();
        result
    }

    fn check_type(&self, types: TypeList<'_>, format: Option<&str>, value: &Value) -> Outcome {
        let (json_type, json_format) = json_kind(value);
        let format = format.unwrap_or("");
        let is_string_or_list = matches!(value, Value::String(_) | Value::Array(_));
        let float_is_integer = json_type == "number"
            && value.as_f64().is_some_and(is_json_integer)
            && types.contains("integer");
        let integer_is_number = json_type == "integer" && types.contains("number");
        let accepted = types.contains(json_type) || float_is_integer || integer_is_number;
        if !(is_string_or_list || format.is_empty() || accepted || format == json_format) {
            return Outcome::failure(self.invalid_type(format, json_format));
        }
        let numeric = types.contains("number") || types.contains("integer");
        if !numeric && !format.is_empty() && is_string_or_list {
            return Outcome::pass();
        }
        if !accepted {
            return Outcome::failure(self.invalid_type(&types.joined(), json_type));
        }
        Outcome::pass()
    }

    fn check_string(&self, schema: &Schema, text: &str) -> Outcome {
        let length = text.chars().count() as u64;
        let name = || self.name();
        let value = || Some(Value::String(text.to_string()));
        if let Some(max) = schema.max_length.filter(|max| length > *max) {
            let message = format!("{} in body should be at most {max} chars long", name());
            return Outcome::failure(self.issue(Code::TooLong { max }, value(), message));
        }
        if let Some(min) = schema.min_length.filter(|min| length < *min) {
            let message = format!("{} in body should be at least {min} chars long", name());
            return Outcome::failure(self.issue(Code::Other, value(), message));
        }
        if let Some(pattern) = &schema.pattern {
            let message = match self.patterns.matches(pattern, text) {
                Ok(true) => return Outcome::default(),
                Ok(false) => format!("{} in body should match '{pattern}'", name()),
                Err(error) => format!(
                    "{} in body should match '{pattern}, but pattern is invalid: {error}'",
                    name()
                ),
            };
            return Outcome::failure(self.issue(Code::Other, value(), message));
        }
        Outcome::default()
    }

    fn check_enum(&self, schema: &Schema, value: &Value) -> Outcome {
        let Some(allowed) = schema.enum_.as_ref().filter(|allowed| !allowed.is_empty()) else {
            return Outcome::default();
        };
        if allowed
            .iter()
            .any(|candidate| enum_matches(value, candidate))
        {
            return Outcome::default();
        }
        let listed: Vec<String> = allowed.iter().map(go_value).collect();
        let message = format!(
            "{} in body should be one of [{}]",
            self.name(),
            listed.join(" ")
        );
        let code = Code::Enum {
            allowed: allowed.clone(),
        };
        Outcome::failure(self.issue(code, Some(value.clone()), message))
    }

    fn check_list(&mut self, schema: &Schema, items: &'v [Value], old: Option<&Value>) -> Outcome {
        let mut outcome = Outcome::default();
        if let Some(item_schema) = &schema.items {
            for (index, item) in items.iter().enumerate() {
                let old_item = correlation::list_item(schema, old, item);
                outcome.merge(self.child(Step::Index(index), item_schema, item, old_item));
            }
        }
        let size = items.len() as u64;
        let name = || self.name();
        if let Some(min) = schema.min_items.filter(|min| size < *min) {
            let message = format!("{} in body should have at least {min} items", name());
            outcome.add(self.issue(Code::Other, Some(Value::from(size)), message));
        }
        if let Some(max) = schema.max_items.filter(|max| size > *max) {
            let message = format!("{} in body should have at most {max} items", name());
            let code = Code::TooMany { actual: size, max };
            outcome.add(self.issue(code, Some(Value::from(size)), message));
        }
        if schema.unique_items && has_duplicates(items) {
            let message = format!("{} in body shouldn't contain duplicates", name());
            outcome.add(self.issue(Code::Other, None, message));
        }
        outcome.inc();
        outcome
    }

    fn check_object(
        &mut self,
        schema: &Schema,
        fields: &'v Map<String, Value>,
        old: Option<&Value>,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let count = fields.len() as u64;
        if let Some(min) = schema.min_properties.filter(|min| count < *min) {
            let message = format!(
                "{} in body should have at least {min} properties",
                self.name()
            );
            outcome.add(self.issue(Code::Other, Some(Value::from(count)), message));
        }
        if let Some(max) = schema.max_properties.filter(|max| count > *max) {
            let message = format!(
                "{} in body should have at most {max} properties",
                self.name()
            );
            let code = Code::TooMany { actual: count, max };
            outcome.add(self.issue(code, Some(Value::from(count)), message));
        }
        let additional = fields
            .iter()
            .filter(|(key, _)| !schema.properties.contains_key(*key));
        match &schema.additional_properties {
            Some(AdditionalProperties::Allowed(false)) => {
                for (key, _) in additional {
                    let message = format!("{}.{key} in body is a forbidden property", self.name());
                    let value = Some(Value::String(key.clone()));
                    outcome.add(self.issue(Code::Other, value, message));
                }
            }
            Some(AdditionalProperties::Schema(values)) => {
                for (key, item) in additional {
                    let old = correlation::field(old, key);
                    outcome.merge(self.child(Step::Additional(key), values, item, old));
                }
            }
            _ => {}
        }
        for (key, property) in &schema.properties {
            if let Some((name, item)) = fields.get_key_value(key) {
                let old = correlation::field(old, key)
                    .filter(|_| !correlation::is_root_type_meta(self.path.is_empty(), key));
                outcome.merge(self.child(Step::Property(name), property, item, old));
            }
        }
        for key in &schema.required {
            if !fields.contains_key(key) {
                let message = format!("{}.{key} in body is required", self.name());
                let mut path = elements(&self.path);
                path.push(PathElement::Field(key.clone()));
                outcome.add(Issue::validation(Code::Required, path, None, message));
            }
        }
        outcome
    }

    /// `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi's `schemaPropsValidator`).
    fn check_composition(
        &mut self,
        schema: &Schema,
        value: &'v Value,
        old: Option<&Value>,
    ) -> Outcome {
        let mut main = Outcome::default();
        if !schema.any_of.is_empty() {
            let (mut best, mut success): (Option<Outcome>, Option<Outcome>) = (None, None);
            for branch in &schema.any_of {
                let result = self.value(branch, value, old);
                if result.is_valid() {
                    best = None;
                    success = Some(result);
                    break;
                }
                if best
                    .as_ref()
                    .is_none_or(|best| result.match_count > best.match_count)
                {
                    best = Some(result);
                }
            }
            if success.is_none() {
                main.add(Issue::plain(format!(
                    "{} must validate at least one schema (anyOf)",
                    quote(&self.name())
                )));
            }
            if let Some(result) = best.or(success) {
                main.merge(result);
            }
        }
        if !schema.one_of.is_empty() {
            let (mut best, mut success): (Option<Outcome>, Option<Outcome>) = (None, None);
            let mut valid = 0;
            for branch in &schema.one_of {
                let result = self.value(branch, value, old);
                if result.is_valid() {
                    valid += 1;
                    best = None;
                    success.get_or_insert(result);
                    continue;
                }
                if valid == 0
                    && best
                        .as_ref()
                        .is_none_or(|best| result.match_count > best.match_count)
                {
                    best = Some(result);
                }
            }
            if valid != 1 {
                let found = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                main.add(Issue::plain(format!(
                    "{} must validate one and only one schema (oneOf). {found}",
                    quote(&self.name())
                )));
                if let Some(best) = best {
                    main.merge(best);
                }
            } else if let Some(success) = success {
                main.merge(success);
            }
        }
        if !schema.all_of.is_empty() {
            let mut valid = 0;
            for branch in &schema.all_of {
                let result = self.value(branch, value, old);
                if result.is_valid() {
                    valid += 1;
                }
                main.merge(result);
            }
            if valid != schema.all_of.len() {
                let none = if valid == 0 { ". None validated" } else { "" };
                main.add(Issue::plain(format!(
                    "{} must validate all the schemas (allOf){none}",
                    quote(&self.name())
                )));
            }
        }
        if let Some(not) = &schema.not
            && self.value(not, value, old).is_valid()
        {
            main.add(Issue::plain(format!(
                "{} must not validate the schema (not)",
                quote(&self.name())
            )));
        }
        main.inc();
        main
    }
}

/// Whether a value is one of the `enum` values, with Go's conversions: integers equal to
/// floats of the same value, floats truncated to integer members, integers as the character
/// of a string member. `null` never matches.
fn enum_matches(value: &Value, candidate: &Value) -> bool {
    if value.is_null() || candidate.is_null() {
        return false;
    }
    if value == candidate {
        return true;
    }
    match (value, candidate) {
        (Value::Number(value), Value::Number(candidate)) => {
            match (numbers::Num::of(value), numbers::Num::of(candidate)) {
                (numbers::Num::Int(int), numbers::Num::Float(float)) => int as f64 == float,
                (numbers::Num::Float(float), numbers::Num::Int(int)) => float as i64 == int,
                _ => false,
            }
        }
        (Value::Number(value), Value::String(candidate)) => value.as_i64().is_some_and(|int| {
            let character = u32::try_from(int)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            candidate.chars().eq(std::iter::once(character))
        }),
        _ => false,
    }
}

/// Go's `%v` of a decoded JSON value (for messages that only serve de-duplication).
fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(number) => format_number(number),
        Value::String(text) => text.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(key, item)| format!("{key}:{}", go_value(item)))
                .collect();
            format!("map[{}]", fields.join(" "))
        }
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(index, item)| items[..index].contains(item))
}
