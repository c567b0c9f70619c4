//! Label and field selectors of list and watch requests, in the string syntax of
//! `k8s.io/apimachinery/pkg/labels` and `.../fields`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::ApiError;

/// The longest selector accepted, in bytes.
const MAX_SELECTOR_BYTES: usize = 16 * 1024;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn label_error(selector: &str, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: {detail} (in label selector {selector:?})"
    ))
}

/// Whether `key` is a valid label key: an optional DNS-subdomain prefix and `/`, then a name
/// of at most 63 characters of alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn valid_label_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty()
            || prefix.len() > 253
            || !prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            }))
    {
        return false;
    }
    !name.is_empty() && name.len() <= 63 && valid_label_value(name)
}

/// Whether `value` is a valid label value (possibly empty).
fn valid_label_value(value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    let bytes = value.as_bytes();
    value.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Splits on commas outside parentheses.
fn split_requirements(selector: &str) -> Result<Vec<&str>, ApiError> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, character) in selector.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| label_error(selector, "unbalanced ')'"))?;
            }
            ',' if depth == 0 => {
                parts.push(&selector[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(label_error(selector, "missing ')'"));
    }
    parts.push(&selector[start..]);
    Ok(parts)
}

fn parse_set(selector: &str, text: &str) -> Result<BTreeSet<String>, ApiError> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| label_error(selector, "expected '(' and ')' around the values"))?;
    let mut values = BTreeSet::new();
    for value in inner.split(',') {
        let value = value.trim();
        if !valid_label_value(value) {
            return Err(label_error(
                selector,
                &format!("invalid label value: {value:?}"),
            ));
        }
        values.insert(value.to_owned());
    }
    Ok(values)
}

fn checked_key<'a>(selector: &str, key: &'a str) -> Result<&'a str, ApiError> {
    let key = key.trim();
    if valid_label_key(key) {
        Ok(key)
    } else {
        Err(label_error(selector, &format!("invalid label key {key:?}")))
    }
}

fn checked_value(selector: &str, value: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if valid_label_value(value) {
        Ok(value.to_owned())
    } else {
        Err(label_error(
            selector,
            &format!("invalid label value: {value:?}"),
        ))
    }
}

fn parse_requirement(selector: &str, text: &str) -> Result<Requirement, ApiError> {
    let text = text.trim();
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Requirement::NotExists(
            checked_key(selector, key)?.to_owned(),
        ));
    }
    for (operator, build) in [(" notin ", false), (" in ", true)] {
        if let Some((key, values)) = text.split_once(operator) {
            let key = checked_key(selector, key)?.to_owned();
            let values = parse_set(selector, values)?;
            return Ok(if build {
                Requirement::In(key, values)
            } else {
                Requirement::NotIn(key, values)
            });
        }
    }
    if let Some((key, value)) = text.split_once("!=") {
        let key = checked_key(selector, key)?.to_owned();
        return Ok(Requirement::NotIn(
            key,
            BTreeSet::from([checked_value(selector, value)?]),
        ));
    }
    if let Some((key, value)) = text.split_once("==").or_else(|| text.split_once('=')) {
        let key = checked_key(selector, key)?.to_owned();
        return Ok(Requirement::In(
            key,
            BTreeSet::from([checked_value(selector, value)?]),
        ));
    }
    for (operator, greater) in [('>', true), ('<', false)] {
        if let Some((key, value)) = text.split_once(operator) {
            let key = checked_key(selector, key)?.to_owned();
            let number: i64 = value.trim().parse().map_err(|_| {
                label_error(
                    selector,
                    &format!("for 'Gt', 'Lt' operators, the value must be an integer: {value:?}"),
                )
            })?;
            return Ok(if greater {
                Requirement::GreaterThan(key, number)
            } else {
                Requirement::LessThan(key, number)
            });
        }
    }
    Ok(Requirement::Exists(checked_key(selector, text)?.to_owned()))
}

impl LabelSelector {
    /// Parses a selector such as `app=web,tier in (a,b),!legacy`.
    ///
    /// # Errors
    /// 400 BadRequest naming the requirement that does not parse.
    pub fn parse(selector: &str) -> Result<Self, ApiError> {
        if selector.len() > MAX_SELECTOR_BYTES {
            return Err(ApiError::bad_request(format!(
                "label selector is longer than {MAX_SELECTOR_BYTES} bytes"
            )));
        }
        if selector.trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        let requirements = split_requirements(selector)?
            .into_iter()
            .map(|text| parse_requirement(selector, text))
            .collect::<Result<_, _>>()?;
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's labels match.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| {
            labels
                .and_then(|labels| labels.get(key))
                .and_then(Value::as_str)
        };
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Exists(key) => label(key).is_some(),
                Requirement::NotExists(key) => label(key).is_none(),
                Requirement::In(key, values) => {
                    label(key).is_some_and(|value| values.contains(value))
                }
                Requirement::NotIn(key, values) => {
                    label(key).is_none_or(|value| !values.contains(value))
                }
                Requirement::GreaterThan(key, number) => label(key)
                    .and_then(|value| value.parse::<i64>().ok())
                    .is_some_and(|value| value > *number),
                Requirement::LessThan(key, number) => label(key)
                    .and_then(|value| value.parse::<i64>().ok())
                    .is_some_and(|value| value < *number),
            })
    }
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    equal: bool,
}

/// A parsed field selector over the fields a resource supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

/// The extra selectable fields of built-in resources (beyond `metadata.name` and
/// `metadata.namespace`), as kube-apiserver 1.33 registers them.
fn extra_fields(group: &str, resource: &str) -> &'static [&'static str] {
    match (group, resource) {
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "replicationcontrollers") | ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    }
}

/// The string value of a selectable field of `object`.
fn field_value(object: &Value, field: &str) -> String {
    let value = match field {
        "source" => object
            .pointer("/source/component")
            .or_else(|| object.get("reportingComponent")),
        _ => {
            let pointer = format!("/{}", field.replace('.', "/"));
            object.pointer(&pointer)
        }
    };
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Bool(flag)) => flag.to_string(),
        Some(Value::Number(number)) => number.to_string(),
        _ if field == "spec.hostNetwork" || field == "spec.unschedulable" => "false".to_owned(),
        _ if field == "status.replicas" || field == "status.successful" => "0".to_owned(),
        _ => String::new(),
    }
}

impl FieldSelector {
    /// Parses a selector such as `metadata.name=web,status.phase!=Running`, accepting the
    /// fields `resource` supports.
    ///
    /// # Errors
    /// 400 BadRequest: `field label not supported: <field>`, or a malformed term.
    pub fn parse(
        selector: &str,
        group: &str,
        resource: &str,
        namespaced: bool,
    ) -> Result<Self, ApiError> {
        if selector.len() > MAX_SELECTOR_BYTES {
            return Err(ApiError::bad_request(format!(
                "field selector is longer than {MAX_SELECTOR_BYTES} bytes"
            )));
        }
        let mut terms = Vec::new();
        for text in selector
            .split(',')
            .map(str::trim)
            .filter(|text| !text.is_empty())
        {
            let (field, value, equal) = if let Some((field, value)) = text.split_once("!=") {
                (field, value, false)
            } else if let Some((field, value)) = text.split_once("==") {
                (field, value, true)
            } else if let Some((field, value)) = text.split_once('=') {
                (field, value, true)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{selector}'; can't understand '{text}'"
                )));
            };
            let field = field.trim();
            let supported = field == "metadata.name"
                || (namespaced && field == "metadata.namespace")
                || extra_fields(group, resource).contains(&field);
            if !supported {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push(FieldTerm {
                field: field.to_owned(),
                value: value.trim().to_owned(),
                equal,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The name the selector pins with `metadata.name=<name>`, if any.
    pub fn pinned_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|term| term.equal && term.field == "metadata.name")
            .map(|term| term.value.as_str())
    }

    /// Whether an object matches.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms
            .iter()
            .all(|term| (field_value(object, &term.field) == term.value) == term.equal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "x", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_selectors_cover_the_set_based_syntax() {
        let object = labelled(json!({"app": "web", "tier": "front", "size": "3"}));
        for (selector, expected) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app=db", false),
            ("tier in (front, back)", true),
            ("tier notin (front)", false),
            ("missing notin (a)", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app=web,tier in (back)", false),
            ("size>2", true),
            ("size<3", false),
            ("example.com/team", false),
        ] {
            let parsed = LabelSelector::parse(selector).expect(selector);
            assert_eq!(parsed.matches(&object), expected, "{selector}");
        }
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for selector in ["app in (a", "app=we b", "Bad Key=x", "x in a,b", "size>x"] {
            let error = LabelSelector::parse(selector).expect_err(selector);
            assert_eq!(error.code, 400, "{selector}");
        }
    }

    #[test]
    fn field_selectors_accept_the_fields_each_resource_supports() {
        let pod =
            json!({"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"}});
        let selector =
            FieldSelector::parse("metadata.name=p,status.phase!=Pending", "", "pods", true)
                .expect("pods support status.phase");
        assert!(selector.matches(&pod));
        assert_eq!(selector.pinned_name(), Some("p"));
        let error =
            FieldSelector::parse("spec.foo=x", "", "configmaps", true).expect_err("not supported");
        assert_eq!(error.message, "field label not supported: spec.foo");
        assert!(FieldSelector::parse("metadata.namespace=x", "", "namespaces", false).is_err());
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "web", "kind": "Deployment"}});
        let selector = FieldSelector::parse(
            "involvedObject.name=web,involvedObject.kind=Deployment",
            "",
            "events",
            true,
        )
        .expect("events");
        assert!(selector.matches(&event));
    }
}
