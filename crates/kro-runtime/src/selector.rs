//! Kubernetes label selectors (`matchLabels`, `matchExpressions`), as an externalRef by
//! selector uses them.

use std::collections::BTreeMap;

use serde_json::Value as Json;

/// A parsed `metav1.LabelSelector`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// `matchLabels`: each label must have the value.
    pub match_labels: BTreeMap<String, String>,
    /// `matchExpressions`.
    pub match_expressions: Vec<Requirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator and its values.
    pub operator: Operator,
}

/// The selector operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operator {
    /// The label has one of the values.
    In(Vec<String>),
    /// The label is absent or has none of the values.
    NotIn(Vec<String>),
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

/// Why a selector cannot be used, with the field that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct SelectorError {
    /// The selector field (`matchLabels.app`, `matchExpressions[0].operator`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl LabelSelector {
    /// Parses a selector as the API server would accept it.
    ///
    /// # Errors
    /// [`SelectorError`] naming the malformed field: an unknown field, a non-string label
    /// value, an unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with
    /// values.
    pub fn parse(selector: &Json) -> Result<LabelSelector, SelectorError> {
        let error = |field: String, problem: &str| SelectorError {
            field,
            problem: problem.to_owned(),
        };
        let Json::Object(fields) = selector else {
            return Err(error(String::new(), "a selector must be an object"));
        };
        // Decoded strictly, as upstream kro v0.9.4 does: a misspelt field (`matchLabel`)
        // would otherwise leave an empty selector, which matches everything.
        if let Some(unknown) = fields
            .keys()
            .find(|key| !matches!(key.as_str(), "matchLabels" | "matchExpressions"))
        {
            return Err(error(
                unknown.clone(),
                "unknown field (a selector has matchLabels and matchExpressions)",
            ));
        }
        let mut parsed = LabelSelector::default();
        if let Some(labels) = fields.get("matchLabels") {
            let Json::Object(labels) = labels else {
                return Err(error("matchLabels".into(), "must be a map of strings"));
            };
            for (key, value) in labels {
                let Json::String(value) = value else {
                    return Err(error(format!("matchLabels.{key}"), "must be a string"));
                };
                parsed.match_labels.insert(key.clone(), value.clone());
            }
        }
        if let Some(expressions) = fields.get("matchExpressions") {
            let Json::Array(expressions) = expressions else {
                return Err(error("matchExpressions".into(), "must be a list"));
            };
            for (index, expression) in expressions.iter().enumerate() {
                let field = |name: &str| format!("matchExpressions[{index}].{name}");
                if let Some(unknown) = expression.as_object().and_then(|requirement| {
                    requirement
                        .keys()
                        .find(|key| !matches!(key.as_str(), "key" | "operator" | "values"))
                }) {
                    return Err(error(
                        field(unknown),
                        "unknown field (a requirement has key, operator and values)",
                    ));
                }
                let Some(key) = expression.get("key").and_then(Json::as_str) else {
                    return Err(error(field("key"), "must be a string"));
                };
                let values: Vec<String> = match expression.get("values") {
                    None | Some(Json::Null) => Vec::new(),
                    Some(Json::Array(values)) => values
                        .iter()
                        .map(|value| value.as_str().map(str::to_owned))
                        .collect::<Option<_>>()
                        .ok_or_else(|| error(field("values"), "must be a list of strings"))?,
                    Some(_) => return Err(error(field("values"), "must be a list of strings")),
                };
                let operator = match expression.get("operator").and_then(Json::as_str) {
                    Some("In" | "NotIn") if values.is_empty() => {
                        return Err(error(
                            field("values"),
                            "must be specified when `operator` is 'In' or 'NotIn'",
                        ));
                    }
                    Some("Exists" | "DoesNotExist") if !values.is_empty() => {
                        return Err(error(
                            field("values"),
                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                        ));
                    }
                    Some("In") => Operator::In(values),
                    Some("NotIn") => Operator::NotIn(values),
                    Some("Exists") => Operator::Exists,
                    Some("DoesNotExist") => Operator::DoesNotExist,
                    _ => {
                        return Err(error(
                            field("operator"),
                            "not a valid selector operator (In, NotIn, Exists, DoesNotExist)",
                        ));
                    }
                };
                parsed.match_expressions.push(Requirement {
                    key: key.to_owned(),
                    operator,
                });
            }
        }
        Ok(parsed)
    }

    /// Whether an object's labels satisfy every requirement. An empty selector matches
    /// everything, as in Kubernetes.
    pub fn matches(&self, object: &Json) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Json::as_object);
        let label = |key: &str| {
            labels
                .and_then(|labels| labels.get(key))
                .and_then(Json::as_str)
        };
        self.match_labels
            .iter()
            .all(|(key, value)| label(key) == Some(value.as_str()))
            && self
                .match_expressions
                .iter()
                .all(|requirement| match &requirement.operator {
                    Operator::In(values) => {
                        label(&requirement.key).is_some_and(|v| values.iter().any(|x| x == v))
                    }
                    Operator::NotIn(values) => {
                        label(&requirement.key).is_none_or(|v| !values.iter().any(|x| x == v))
                    }
                    Operator::Exists => label(&requirement.key).is_some(),
                    Operator::DoesNotExist => label(&requirement.key).is_none(),
                })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Json) -> Json {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn match_labels_and_expressions_combine() {
        let selector = LabelSelector::parse(&json!({
            "matchLabels": {"team": "frontend"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["web", "api"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]}
            ]
        }))
        .expect("a valid selector");
        assert!(selector.matches(&labelled(json!({"team": "frontend", "tier": "web"}))));
        assert!(!selector.matches(&labelled(json!({"team": "frontend", "tier": "db"}))));
        assert!(!selector.matches(&labelled(
            json!({"team": "frontend", "tier": "web", "legacy": "y"})
        )));
        assert!(!selector.matches(&labelled(
            json!({"team": "frontend", "tier": "web", "env": "dev"})
        )));
        assert!(!selector.matches(&json!({"metadata": {}})));
        assert!(
            LabelSelector::parse(&json!({}))
                .expect("empty")
                .matches(&json!({}))
        );
    }

    #[test]
    fn malformed_selectors_name_the_field() {
        let error = |selector: Json| LabelSelector::parse(&selector).err().map(|e| e.to_string());
        assert_eq!(
            error(json!({"matchLabels": {"a": 1}})).as_deref(),
            Some("matchLabels.a: must be a string")
        );
        assert_eq!(
            error(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).as_deref(),
            Some(
                "matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"
            )
        );
        assert_eq!(
            error(json!({"matchExpressions": [{"key": "a", "operator": "Near"}]})).as_deref(),
            Some(
                "matchExpressions[0].operator: not a valid selector operator (In, NotIn, Exists, DoesNotExist)"
            )
        );
        // Strict, as upstream v0.9.4: a misspelt field is an error, not an empty selector.
        assert_eq!(
            error(json!({"matchLabel": {"app": "web"}})).as_deref(),
            Some("matchLabel: unknown field (a selector has matchLabels and matchExpressions)")
        );
        assert_eq!(
            error(
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "value": ["x"]}]})
            )
            .as_deref(),
            Some(
                "matchExpressions[0].value: unknown field (a requirement has key, operator and values)"
            )
        );
    }
}
