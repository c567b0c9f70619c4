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
    /// Whether the fields are a custom resource's, read at their paths with no built-in
    /// defaults.
    custom: bool,
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

/// The string value of a custom resource's selectable field, as kube-apiserver prints it
/// (`fmt.Sprint`): empty when the field is missing or null.
fn custom_field_value(object: &Value, field: &str) -> String {
    let pointer = format!(
        "/{}",
        field
            .replace('~', "~0")
            .replace('/', "~1")
            .replace('.', "/")
    );
    match object.pointer(&pointer) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// Why a field selector was refused: each is a 400 BadRequest whose message is
/// kube-apiserver's (apimachinery's `fields.ParseSelector`, then the resource's field label
/// conversion).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldSelectorError {
    /// Longer than the server reads.
    #[error("field selector is longer than {max_bytes} bytes")]
    TooLong {
        /// The limit.
        max_bytes: usize,
    },
    /// A term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    NoOperator {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
    },
    /// A backslash before something other than `\`, `,` or `=`, or ending a value.
    #[error("invalid field selector: invalid escape sequence: {sequence}")]
    InvalidEscape {
        /// The backslash and what follows it.
        sequence: String,
    },
    /// An `=` in a value without a backslash before it (Go prints the character's code).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.character))]
    UnescapedCharacter {
        /// The character.
        character: char,
    },
    /// A field the resource cannot be selected by.
    #[error("{}", unsupported_field(.group, .resource, .field, *.converted))]
    UnsupportedField {
        /// The resource's API group.
        group: String,
        /// The resource (plural).
        resource: String,
        /// The field.
        field: String,
        /// Whether kube-apiserver registers a field label conversion of its own for the
        /// resource, which words the message differently.
        converted: bool,
    },
}

impl FieldSelectorError {
    /// A stable name of the variant, for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            FieldSelectorError::TooLong { .. } => "TooLong",
            FieldSelectorError::NoOperator { .. } => "NoOperator",
            FieldSelectorError::InvalidEscape { .. } => "InvalidEscape",
            FieldSelectorError::UnescapedCharacter { .. } => "UnescapedCharacter",
            FieldSelectorError::UnsupportedField { .. } => "UnsupportedField",
        }
    }
}

impl From<FieldSelectorError> for ApiError {
    fn from(error: FieldSelectorError) -> Self {
        ApiError::bad_request(error.to_string())
    }
}

/// The terms of a field selector, split at the commas no backslash escapes (apimachinery's
/// `splitTerms`); the escapes stay for [`unescape_value`].
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, character) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else if character == ',' {
            terms.push(&selector[start..index]);
            start = index + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// A term split at its first operator (`!=`, `==` or `=`, tried in that order at each
/// character), as apimachinery's `splitTerm`: the field is taken as written, spaces included.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(index, _)| {
        let rest = &term[index..];
        let field = &term[..index];
        if let Some(value) = rest.strip_prefix("!=") {
            Some((field, false, value))
        } else if let Some(value) = rest.strip_prefix("==") {
            Some((field, true, value))
        } else {
            rest.strip_prefix('=').map(|value| (field, true, value))
        }
    })
}

/// A term's value with `\\`, `\,` and `\=` unescaped (apimachinery's `UnescapeValue`).
fn unescape_value(value: &str) -> Result<String, FieldSelectorError> {
    let mut unescaped = String::with_capacity(value.len());
    let mut escaped = false;
    for character in value.chars() {
        if escaped {
            if !matches!(character, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscape {
                    sequence: format!("\\{character}"),
                });
            }
            unescaped.push(character);
            escaped = false;
            continue;
        }
        match character {
            '\\' => escaped = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedCharacter { character }),
            other => unescaped.push(other),
        }
    }
    if escaped {
        return Err(FieldSelectorError::InvalidEscape {
            sequence: "\\".to_owned(),
        });
    }
    Ok(unescaped)
}

impl FieldSelector {
    /// Parses a selector such as `metadata.name=web,status.phase!=Running` as kube-apiserver
    /// does: terms split at unescaped commas and taken in sorted order, values unescaped
    /// (`\,`, `\=`, `\\`), and only the fields `resource` supports accepted: for a custom
    /// resource (`custom` holds the names of its definition's `selectableFields`), those and
    /// the metadata fields.
    ///
    /// # Errors
    /// A [`FieldSelectorError`] for the first term (in sorted order) that does not parse, else
    /// for the first whose field is not supported.
    pub fn parse(
        selector: &str,
        group: &str,
        resource: &str,
        namespaced: bool,
        custom: Option<&[String]>,
    ) -> Result<Self, FieldSelectorError> {
        if selector.len() > MAX_SELECTOR_BYTES {
            return Err(FieldSelectorError::TooLong {
                max_bytes: MAX_SELECTOR_BYTES,
            });
        }
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|part| !part.is_empty()) {
            let Some((field, equal, value)) = split_term(part) else {
                return Err(FieldSelectorError::NoOperator {
                    selector: selector.to_owned(),
                    term: part.to_owned(),
                });
            };
            terms.push(FieldTerm {
                field: field.to_owned(),
                value: unescape_value(value)?,
                equal,
            });
        }
        let converted = custom.is_some() || has_field_label_conversion(group, resource);
        for term in &terms {
            let field = term.field.as_str();
            // Kinds without their own conversion accept metadata.namespace even when
            // cluster-scoped (apimachinery's default conversion).
            let supported = field == "metadata.name"
                || (field == "metadata.namespace" && (namespaced || !converted))
                || match custom {
                    Some(selectable) => selectable.iter().any(|name| name == field),
                    None => extra_fields(group, resource).contains(&field),
                };
            if !supported {
                return Err(FieldSelectorError::UnsupportedField {
                    group: group.to_owned(),
                    resource: resource.to_owned(),
                    field: field.to_owned(),
                    converted,
                });
            }
        }
        Ok(FieldSelector {
            terms,
            custom: custom.is_some(),
        })
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
        self.terms.iter().all(|term| {
            let value = if self.custom {
                custom_field_value(object, &term.field)
            } else {
                field_value(object, &term.field)
            };
            (value == term.value) == term.equal
        })
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

    /// Label selectors and kube-apiserver 1.33's answers to
    /// `GET /api/v1/namespaces/default/configmaps?labelSelector=...` (`None`: a 200 list; else
    /// the message of the 400 Status). Placeholders stand for repeated text: `{NAME}`,
    /// `{VALUE}`, `{SUBDOMAIN}` for the regex descriptions of apimachinery's validation, and
    /// `{X63}` and the like for a letter repeated that many times.
    const KUBE_APISERVER_ANSWERS: &[(&str, Option<&str>)] = &[
        (
            "a===b",
            Some("unable to parse requirement: found '=', expected: identifier"),
        ),
        (
            "a=B_",
            Some(
                r#"unable to parse requirement: values[0][a]: Invalid value: "B_": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ),
        ),
        (
            "A_=b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "A_": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ),
        ),
        (
            "a in b",
            Some("unable to parse requirement: found 'b' expected: '('"),
        ),
        (
            "a>",
            Some(
                r#"unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer"#,
            ),
        ),
        (
            "a>x",
            Some(
                r#"unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer"#,
            ),
        ),
        (
            "=b",
            Some("found '=', expected: !, identifier, or 'end of string'"),
        ),
        (
            "a in (b",
            Some("unable to parse requirement: found '', expected: ',' or ')'"),
        ),
        ("a,,b", Some("found ',', expected: identifier after ','")),
        (
            "a!b",
            Some("unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        ("", None),
        ("   ", None),
        ("a", None),
        ("!a", None),
        ("! a", None),
        ("a=b", None),
        ("a==b", None),
        ("a!=b", None),
        (" a = b ", None),
        ("a=b,!c,d in (e)", None),
        ("a in (b, c)", None),
        ("a notin (b,c)", None),
        ("a\tin\t(b)\n", None),
        ("a in(b)", None),
        ("a in (b,c,b)", None),
        ("a=", None),
        ("a==", None),
        ("a!=", None),
        ("a in ()", None),
        ("a notin ()", None),
        ("a in (,)", None),
        ("a in (b,)", None),
        ("a in (,b)", None),
        ("a in (b,,c)", None),
        ("a,", Some("found '', expected: identifier after ','")),
        ("a=b,", Some("found '', expected: identifier after ','")),
        (
            ",a",
            Some("found ',', expected: !, identifier, or 'end of string'"),
        ),
        ("a,b,c", None),
        (
            "!",
            Some("unable to parse requirement: found '', expected: identifier"),
        ),
        (
            "!=a",
            Some("found '!=', expected: !, identifier, or 'end of string'"),
        ),
        (
            "!(",
            Some("unable to parse requirement: found '(', expected: identifier"),
        ),
        ("!a=b", Some("found '=', expected: ',' or 'end of string'")),
        (
            "!!a",
            Some("unable to parse requirement: found '!', expected: identifier"),
        ),
        ("!a,!b", None),
        (
            "a in (b,c",
            Some("unable to parse requirement: found '', expected: ',' or ')'"),
        ),
        (
            "a in (b c)",
            Some("unable to parse requirement: found 'c', expected: ',' or ')'"),
        ),
        (
            "a in ((b))",
            Some("unable to parse requirement: found '(', expected: ',', ')' or identifier"),
        ),
        (
            "a in (b))",
            Some("found ')', expected: ',' or 'end of string'"),
        ),
        (
            "a in",
            Some("unable to parse requirement: found '' expected: '('"),
        ),
        (
            "a notin",
            Some("unable to parse requirement: found '' expected: '('"),
        ),
        (
            "a notin b",
            Some("unable to parse requirement: found 'b' expected: '('"),
        ),
        (
            "a in (b)c",
            Some("found 'c', expected: ',' or 'end of string'"),
        ),
        ("a>1", None),
        ("a<5", None),
        ("a>1,a<5", None),
        ("a> 1", None),
        ("a>01", None),
        (
            "a>+1",
            Some(r#"unable to parse requirement: values[0][a]: Invalid value: "+1": {VALUE}"#),
        ),
        (
            "a>-1",
            Some(r#"unable to parse requirement: values[0][a]: Invalid value: "-1": {VALUE}"#),
        ),
        (
            "a>-x",
            Some(
                r#"unable to parse requirement: [values[0]: Invalid value: "-x": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: "-x": {VALUE}]"#,
            ),
        ),
        (
            "a>1.5",
            Some(
                r#"unable to parse requirement: values[0]: Invalid value: "1.5": for 'Gt', 'Lt' operators, the value must be an integer"#,
            ),
        ),
        (
            "a>99999999999999999999",
            Some(
                r#"unable to parse requirement: values[0]: Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer"#,
            ),
        ),
        (
            "a<",
            Some(
                r#"unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer"#,
            ),
        ),
        (
            "a>>1",
            Some("unable to parse requirement: found '>', expected: identifier"),
        ),
        (
            "a<=1",
            Some("unable to parse requirement: found '=', expected: identifier"),
        ),
        (
            "a gt 1",
            Some("unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        ("a=b c", Some("found 'c', expected: ',' or 'end of string'")),
        ("a=b=c", Some("found '=', expected: ',' or 'end of string'")),
        (
            "a==b==c",
            Some("found '==', expected: ',' or 'end of string'"),
        ),
        (
            "a!==b",
            Some("unable to parse requirement: found '=', expected: identifier"),
        ),
        (
            "a=(b)",
            Some("unable to parse requirement: found '(', expected: identifier"),
        ),
        (
            "a=!b",
            Some("unable to parse requirement: found '!', expected: identifier"),
        ),
        (
            "a)",
            Some("unable to parse requirement: found ')', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        (
            "(a)",
            Some("found '(', expected: !, identifier, or 'end of string'"),
        ),
        (
            "a(",
            Some("unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        ("a=b)", Some("found ')', expected: ',' or 'end of string'")),
        ("in=notin", None),
        ("in in (in)", None),
        ("notin notin (notin,in)", None),
        ("a in (in)", None),
        ("example.com/a=b", None),
        ("example.com/a", None),
        ("a.b-c_d=e", None),
        (
            "Example.com/a=b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "Example.com/a": prefix part {SUBDOMAIN}"#,
            ),
        ),
        (
            "example..com/a",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "example..com/a": prefix part {SUBDOMAIN}"#,
            ),
        ),
        (
            "-a.com/b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "-a.com/b": prefix part {SUBDOMAIN}"#,
            ),
        ),
        (
            "/a=b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty"#,
            ),
        ),
        (
            "a/=b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; name part {NAME}"#,
            ),
        ),
        (
            "a/b/c=d",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name {NAME} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
            ),
        ),
        (
            "a/b/c/d",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "a/b/c/d": a qualified name {NAME} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#,
            ),
        ),
        (
            "a=-b",
            Some(r#"unable to parse requirement: values[0][a]: Invalid value: "-b": {VALUE}"#),
        ),
        (
            "-a=b",
            Some(r#"unable to parse requirement: <nil>: Invalid value: "-a": name part {NAME}"#),
        ),
        (
            "a.=b",
            Some(r#"unable to parse requirement: <nil>: Invalid value: "a.": name part {NAME}"#),
        ),
        (
            "a=b.",
            Some(r#"unable to parse requirement: values[0][a]: Invalid value: "b.": {VALUE}"#),
        ),
        ("a=Ab-1_z.9", None),
        ("{X63}=b", None),
        (
            "{X64}=b",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "{X64}": name part must be no more than 63 characters"#,
            ),
        ),
        ("a={Y63}", None),
        (
            "a={Y64}",
            Some(
                r#"unable to parse requirement: values[0][a]: Invalid value: "{Y64}": must be no more than 63 characters"#,
            ),
        ),
        (
            "a={D64}",
            Some(
                r#"unable to parse requirement: values[0][a]: Invalid value: "{D64}": must be no more than 63 characters; {VALUE}"#,
            ),
        ),
        (
            "{E250}.com/k",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "{E250}.com/k": prefix part must be no more than 253 characters"#,
            ),
        ),
        (
            "k/{X64}",
            Some(
                r#"unable to parse requirement: <nil>: Invalid value: "k/{X64}": name part must be no more than 63 characters"#,
            ),
        ),
        (
            "a\x0bb",
            Some(r#"unable to parse requirement: <nil>: Invalid value: "a\vb": name part {NAME}"#),
        ),
        (
            r#"a"b=c"#,
            Some(r#"unable to parse requirement: <nil>: Invalid value: "a\"b": name part {NAME}"#),
        ),
        (
            r#"a\b"#,
            Some(r#"unable to parse requirement: <nil>: Invalid value: "a\\b": name part {NAME}"#),
        ),
        (
            "é=b",
            Some(r#"unable to parse requirement: <nil>: Invalid value: "é": name part {NAME}"#),
        ),
        (
            "a=é",
            Some(r#"unable to parse requirement: values[0][a]: Invalid value: "é": {VALUE}"#),
        ),
        (
            "a\0b",
            Some("unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ),
        ("a=\0b", None),
        ("\0a", None),
        ("a\0", None),
        ("a\0\0b", None),
        ("a \0b", None),
        (
            "a=b\0c",
            Some("found 'c', expected: ',' or 'end of string'"),
        ),
        (
            "a in (b\0c)",
            Some("unable to parse requirement: found 'c', expected: ',' or ')'"),
        ),
        ("!\0a", None),
        ("a\0=b", None),
    ];

    fn expand(text: &str) -> String {
        const NAME: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        const VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        const SUBDOMAIN: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        text.replace("{NAME}", NAME)
            .replace("{VALUE}", VALUE)
            .replace("{SUBDOMAIN}", SUBDOMAIN)
            .replace("{X63}", &"x".repeat(63))
            .replace("{X64}", &"x".repeat(64))
            .replace("{Y63}", &"y".repeat(63))
            .replace("{Y64}", &"y".repeat(64))
            .replace("{D64}", &"-".repeat(64))
            .replace("{E250}", &"e".repeat(250))
    }

    #[test]
    fn label_selectors_parse_or_fail_as_kube_apiserver_does() {
        for (selector, expected) in KUBE_APISERVER_ANSWERS {
            let selector = expand(selector);
            let parsed = LabelSelector::parse(&selector);
            match expected {
                None => assert!(parsed.is_ok(), "{selector:?}: {parsed:?}"),
                Some(message) => {
                    let error = parsed.expect_err(&selector);
                    assert_eq!(error.code, 400, "{selector:?}");
                    assert_eq!(error.message, expand(message), "{selector:?}");
                }
            }
        }
    }

    #[test]
    fn empty_values_nul_bytes_and_spacing_keep_their_meaning() {
        let object = labelled(json!({"a": "", "b": "x", "in": "notin"}));
        for (selector, expected) in [
            ("a=", true),
            ("a in ()", true),
            ("a in (,)", true),
            ("b in (x,)", true),
            ("b in ()", false),
            ("a!=", false),
            ("b!=", true),
            ("c!=", true),
            ("c notin ()", true),
            ("! c", true),
            ("! b", false),
            ("in in (notin)", true),
            ("a=\0b", false),
            ("b=\0x", true),
            ("!\0b", false),
            ("c\0\0b", false),
            ("b \0c", true),
            (" b\t=\nx ", true),
        ] {
            let parsed = LabelSelector::parse(selector).expect(selector);
            assert_eq!(parsed.matches(&object), expected, "{selector:?}");
        }
    }

    #[test]
    fn arbitrary_label_selectors_never_panic() {
        let long = "a".repeat(MAX_SELECTOR_BYTES + 1);
        for selector in [
            "\0",
            "\0\0",
            "a\0",
            "é\0b",
            "(((((",
            "!!!!!",
            ")))",
            ",,,",
            "a in (((",
            "a in (é,\0",
            &long,
        ] {
            let _ = LabelSelector::parse(selector);
        }
        assert_eq!(
            LabelSelector::parse(&long).map_err(|error| error.code),
            Err(400)
        );
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
            None,
        )
        .expect("pods support status.phase");
        assert!(selector.matches(&pod));
        assert_eq!(selector.pinned_name(), Some("p"));
        let error = FieldSelector::parse("spec.foo=x", "", "configmaps", true, None)
            .expect_err("not supported");
        assert_eq!(
            ApiError::from(error).message,
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        let error = FieldSelector::parse("spec.foo=x", "", "secrets", true, None)
            .expect_err("not supported");
        assert_eq!(
            ApiError::from(error).message,
            "field label not supported: spec.foo"
        );
        let error = FieldSelector::parse("spec.foo=x", "example.com", "widgets", true, Some(&[]))
            .expect_err("not supported");
        assert_eq!(
            error,
            FieldSelectorError::UnsupportedField {
                group: "example.com".to_owned(),
                resource: "widgets".to_owned(),
                field: "spec.foo".to_owned(),
                converted: true,
            }
        );
        assert!(
            FieldSelector::parse("metadata.namespace=x", "", "namespaces", false, None).is_err()
        );
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "web", "kind": "Deployment"}});
        let selector = FieldSelector::parse(
            "involvedObject.name=web,involvedObject.kind=Deployment",
            "",
            "events",
            true,
            None,
        )
        .expect("events");
        assert!(selector.matches(&event));
    }

    /// Field selectors and kube-apiserver's answers to
    /// `GET /api/v1/namespaces/default/configmaps?fieldSelector=...` (`None`: a 200 list; else
    /// the message of the 400 Status), from apimachinery's `fields.ParseSelector` and the
    /// default field label conversion (the differential suite asks kube-apiserver the same).
    const KUBE_APISERVER_FIELD_ANSWERS: &[(&str, Option<&str>)] = &[
        ("", None),
        (",,", None),
        ("metadata.name=a", None),
        ("metadata.name==a", None),
        ("metadata.name!=a", None),
        ("metadata.name=", None),
        ("metadata.name==", None),
        ("metadata.name= a", None),
        (r"metadata.name=a\,b", None),
        (r"metadata.name=a\=b", None),
        (r"metadata.name=a\\b", None),
        (r"metadata.name=a\,b,metadata.namespace=default", None),
        (
            "a==",
            Some(
                r#""a" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
        ),
        (
            "=b",
            Some(r#""" is not a known field selector: only "metadata.name", "metadata.namespace""#),
        ),
        (
            " metadata.name=a",
            Some(
                r#"" metadata.name" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
        ),
        (
            "metadata.name>=a",
            Some(
                r#""metadata.name>" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
        ),
        ("a", Some("invalid selector: 'a'; can't understand 'a'")),
        (
            "metadata.name<a",
            Some("invalid selector: 'metadata.name<a'; can't understand 'metadata.name<a'"),
        ),
        (" ", Some("invalid selector: ' '; can't understand ' '")),
        (
            r"metadata.name=b\",
            Some(r"invalid field selector: invalid escape sequence: \"),
        ),
        (
            r"metadata.name=\x",
            Some(r"invalid field selector: invalid escape sequence: \x"),
        ),
        (
            "metadata.name=a=b",
            Some("invalid field selector: unescaped character in value: 61"),
        ),
        // Terms are taken in sorted order, and every term parses before any field is checked.
        (
            "z,metadata.name=a",
            Some("invalid selector: 'z,metadata.name=a'; can't understand 'z'"),
        ),
        (
            "zz=1,aa=2",
            Some(
                r#""aa" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
        ),
        (
            "a=1,c",
            Some("invalid selector: 'a=1,c'; can't understand 'c'"),
        ),
        (
            r"x=\,,a",
            Some(r"invalid selector: 'x=\,,a'; can't understand 'a'"),
        ),
    ];

    #[test]
    fn field_selectors_parse_or_fail_as_kube_apiserver_does() {
        for (selector, expected) in KUBE_APISERVER_FIELD_ANSWERS {
            let parsed = FieldSelector::parse(selector, "", "configmaps", true, None);
            match expected {
                None => assert!(parsed.is_ok(), "{selector:?}: {parsed:?}"),
                Some(message) => {
                    let error = ApiError::from(parsed.expect_err(selector));
                    assert_eq!(
                        (error.code, error.message.as_str()),
                        (400, *message),
                        "{selector:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn escaped_commas_equals_and_backslashes_are_part_of_field_values() {
        let pinned = |selector: &str| {
            FieldSelector::parse(selector, "", "configmaps", true, None)
                .expect(selector)
                .pinned_name()
                .map(str::to_owned)
        };
        assert_eq!(pinned(r"metadata.name=a\,b"), Some("a,b".to_owned()));
        assert_eq!(pinned(r"metadata.name=a\=b"), Some("a=b".to_owned()));
        assert_eq!(pinned(r"metadata.name=a\\b"), Some(r"a\b".to_owned()));
        assert_eq!(pinned("metadata.name= a"), Some(" a".to_owned()));
        let selectable = ["spec.color".to_owned()];
        let selector = FieldSelector::parse(
            r"spec.color=red\,blue",
            "example.com",
            "widgets",
            true,
            Some(&selectable),
        )
        .expect("an escaped comma");
        assert!(selector.matches(&json!({"spec": {"color": "red,blue"}})));
        assert!(!selector.matches(&json!({"spec": {"color": "red"}})));
        assert_eq!(
            FieldSelector::parse(r"metadata.name=\x", "", "configmaps", true, None),
            Err(FieldSelectorError::InvalidEscape {
                sequence: r"\x".to_owned()
            })
        );
        assert_eq!(
            FieldSelector::parse("metadata.name=a=b", "", "configmaps", true, None),
            Err(FieldSelectorError::UnescapedCharacter { character: '=' })
        );
    }

    #[test]
    fn custom_resources_are_selected_on_their_declared_fields() {
        let selectable = ["spec.snapshot.name".to_owned(), "spec.size".to_owned()];
        let selector = FieldSelector::parse(
            "spec.snapshot.name=s1,spec.size=3,metadata.namespace=ns",
            "kro.run",
            "graphrevisions",
            true,
            Some(&selectable),
        )
        .expect("declared fields");
        let object = |name: &str, size: Value| {
            json!({"metadata": {"name": "r", "namespace": "ns"},
                "spec": {"snapshot": {"name": name}, "size": size}})
        };
        assert!(selector.matches(&object("s1", json!(3))));
        assert!(!selector.matches(&object("s2", json!(3))));
        assert!(!selector.matches(&object("s1", json!(4))));
        let missing = FieldSelector::parse(
            "spec.size=",
            "kro.run",
            "graphrevisions",
            true,
            Some(&selectable),
        )
        .expect("an empty value");
        assert!(missing.matches(&json!({"metadata": {"name": "r"}, "spec": {}})));
        let error = FieldSelector::parse(
            "metadata.namespace=ns",
            "kro.run",
            "clusterthings",
            false,
            Some(&selectable),
        )
        .expect_err("cluster-scoped");
        assert_eq!(
            ApiError::from(error).message,
            "field label not supported: metadata.namespace"
        );
    }
}
