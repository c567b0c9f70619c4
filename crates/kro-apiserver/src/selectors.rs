//! Label and field selectors of list and watch requests, in the string syntax of
//! `k8s.io/apimachinery/pkg/labels` and `.../fields`.

use serde_json::Value;

use crate::error::ApiError;
use crate::label_parser::Requirement;

/// The longest selector accepted, in bytes.
const MAX_SELECTOR_BYTES: usize = 16 * 1024;

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
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
        let requirements = crate::label_parser::parse(selector).map_err(ApiError::bad_request)?;
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
/// Whether kube-apiserver registers a field-label conversion of its own for the resource (its
/// errors then read `field label not supported`); the others use apimachinery's default.
fn has_field_label_conversion(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        (
            "",
            "pods"
                | "nodes"
                | "replicationcontrollers"
                | "events"
                | "namespaces"
                | "secrets"
                | "services"
        ) | ("events.k8s.io", "events")
            | ("batch", "jobs")
            | ("certificates.k8s.io", "certificatesigningrequests")
    )
}

/// kube-apiserver's message for a field it cannot select on.
fn unsupported_field(group: &str, resource: &str, field: &str, converted: bool) -> String {
    match (group, resource) {
        ("batch", "jobs") => format!("field label \"{field}\" not supported for Job"),
        _ if converted => format!("field label not supported: {field}"),
        _ => format!(
            "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ),
    }
}

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
        ("", "services") => &["spec.clusterIP", "spec.type"],
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
        custom: bool,
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
            let converted = custom || has_field_label_conversion(group, resource);
            // Kinds without their own conversion accept metadata.namespace even when
            // cluster-scoped (apimachinery's default conversion).
            let supported = field == "metadata.name"
                || (field == "metadata.namespace" && (namespaced || !converted))
                || extra_fields(group, resource).contains(&field);
            if !supported {
                return Err(ApiError::bad_request(unsupported_field(
                    group, resource, field, converted,
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
        let selector = FieldSelector::parse(
            "metadata.name=p,status.phase!=Pending",
            "",
            "pods",
            true,
            false,
        )
        .expect("pods support status.phase");
        assert!(selector.matches(&pod));
        assert_eq!(selector.pinned_name(), Some("p"));
        let error = FieldSelector::parse("spec.foo=x", "", "configmaps", true, false)
            .expect_err("not supported");
        assert_eq!(
            error.message,
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        let error = FieldSelector::parse("spec.foo=x", "", "secrets", true, false)
            .expect_err("not supported");
        assert_eq!(error.message, "field label not supported: spec.foo");
        let error = FieldSelector::parse("spec.foo=x", "example.com", "widgets", true, true)
            .expect_err("not supported");
        assert_eq!(error.message, "field label not supported: spec.foo");
        assert!(
            FieldSelector::parse("metadata.namespace=x", "", "namespaces", false, false).is_err()
        );
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "web", "kind": "Deployment"}});
        let selector = FieldSelector::parse(
            "involvedObject.name=web,involvedObject.kind=Deployment",
            "",
            "events",
            true,
            false,
        )
        .expect("events");
        assert!(selector.matches(&event));
    }
}
