//! Fuzzing of the label and field selector parsers ([`LabelSelector::parse`],
//! [`FieldSelector::parse`]) with selectors built from their grammar and with arbitrary and
//! mutated text.
//!
//! Properties: nothing panics; a refused selector is a 400 with a message; a selector built
//! from requirements matches exactly the label sets those requirements describe; a field
//! selector's escaped values come back unescaped, its terms may come in any order, and the
//! name it pins is the name of every object it matches.
//!
//! Fixed seed and corpus (`testdata/fuzz/label-selectors/`, `testdata/fuzz/field-selectors/`):
//! see `fuzzing/mod.rs`.

mod fuzzing;

use std::collections::{BTreeMap, BTreeSet};

use kro_apiserver::selectors::{FieldSelector, FieldSelectorError, LabelSelector};
use proptest::prelude::*;
use serde_json::{Value, json};

const KEYS: &[&str] = &["app", "tier", "size", "example.com/team", "x-y_z.w", "in"];
const VALUES: &[&str] = &["", "web", "db", "a.b", "1", "42", "x_y", "in", "notin"];

/// One requirement of a label selector, as the grammar has it.
#[derive(Debug, Clone)]
enum Requirement {
    Exists(&'static str),
    NotExists(&'static str),
    Equal(&'static str, &'static str, bool),
    NotEqual(&'static str, &'static str),
    In(&'static str, BTreeSet<&'static str>),
    NotIn(&'static str, BTreeSet<&'static str>),
    GreaterThan(&'static str, u8),
    LessThan(&'static str, u8),
}

impl Requirement {
    /// Whether labels satisfy the requirement, by the meaning `labels.Parse` gives it.
    fn holds(&self, labels: &BTreeMap<&str, &str>) -> bool {
        let number = |key: &str| labels.get(key).and_then(|value| value.parse::<i64>().ok());
        match self {
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::NotExists(key) => !labels.contains_key(key),
            Requirement::Equal(key, value, _) => labels.get(key) == Some(value),
            Requirement::NotEqual(key, value) => labels.get(key) != Some(value),
            Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Requirement::GreaterThan(key, bound) => {
                number(key).is_some_and(|value| value > i64::from(*bound))
            }
            Requirement::LessThan(key, bound) => {
                number(key).is_some_and(|value| value < i64::from(*bound))
            }
        }
    }

    /// The requirement as text, with `space` wherever the grammar allows blanks.
    fn render(&self, space: &str) -> String {
        let list = |values: &BTreeSet<&str>| {
            let items: Vec<&str> = values.iter().copied().collect();
            format!(
                "({space}{}{space})",
                items.join(&format!("{space},{space}"))
            )
        };
        match self {
            Requirement::Exists(key) => format!("{space}{key}{space}"),
            Requirement::NotExists(key) => format!("{space}!{space}{key}{space}"),
            Requirement::Equal(key, value, double) => {
                let operator = if *double { "==" } else { "=" };
                format!("{space}{key}{space}{operator}{space}{value}{space}")
            }
            Requirement::NotEqual(key, value) => format!("{space}{key}{space}!={space}{value}"),
            Requirement::In(key, values) => format!("{key} in{space}{}", list(values)),
            Requirement::NotIn(key, values) => format!("{key} notin {}", list(values)),
            Requirement::GreaterThan(key, bound) => format!("{key}{space}>{space}{bound}"),
            Requirement::LessThan(key, bound) => format!("{key}{space}<{space}{bound}"),
        }
    }
}

fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(KEYS)
}

fn value() -> impl Strategy<Value = &'static str> {
    prop::sample::select(VALUES)
}

fn value_set() -> impl Strategy<Value = BTreeSet<&'static str>> {
    prop::collection::btree_set(value().prop_filter("non-empty", |v| !v.is_empty()), 1..4)
}

fn requirement() -> impl Strategy<Value = Requirement> {
    prop_oneof![
        key().prop_map(Requirement::Exists),
        key().prop_map(Requirement::NotExists),
        (key(), value(), any::<bool>()).prop_map(|(k, v, double)| Requirement::Equal(k, v, double)),
        (key(), value()).prop_map(|(k, v)| Requirement::NotEqual(k, v)),
        (key(), value_set()).prop_map(|(k, v)| Requirement::In(k, v)),
        (key(), value_set()).prop_map(|(k, v)| Requirement::NotIn(k, v)),
        (key(), any::<u8>()).prop_map(|(k, n)| Requirement::GreaterThan(k, n)),
        (key(), any::<u8>()).prop_map(|(k, n)| Requirement::LessThan(k, n)),
    ]
}

fn labels() -> impl Strategy<Value = BTreeMap<&'static str, &'static str>> {
    prop::collection::btree_map(key(), value(), 0..5)
}

fn labelled(labels: &BTreeMap<&str, &str>) -> Value {
    json!({"metadata": {"name": "x", "labels": labels}})
}

/// The properties every label selector has, whatever its text.
fn check_label_selector(text: &str, labels: &BTreeMap<&str, &str>) -> Result<(), String> {
    match LabelSelector::parse(text) {
        Ok(selector) => {
            // Matching is total.
            let _ = selector.matches(&labelled(labels));
            Ok(())
        }
        Err(error) if error.code == 400 && !error.message.is_empty() => Ok(()),
        Err(error) => Err(format!("{text:?}: {} {:?}", error.code, error.message)),
    }
}

/// Text that looks like selectors: their symbols, words and blanks, and arbitrary characters.
fn selector_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9=!<>(),./ \t_-]{0,40}",
        1 => "(in|notin|a|=|==|!=|!|\\(|\\)|,| |\\\\|>|<|1){0,16}",
        1 => "\\PC{0,24}",
        1 => any::<String>(),
    ]
}

/// A corpus entry mutated, as text.
fn mutated(corpus: Vec<fuzzing::Entry>) -> impl Strategy<Value = String> {
    (prop::sample::select(corpus), fuzzing::mutations(4)).prop_map(|(entry, mutations)| {
        String::from_utf8_lossy(&fuzzing::mutate(entry.bytes, &mutations)).into_owned()
    })
}

/// Go's `fields.EscapeValue`.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace(',', r"\,")
        .replace('=', r"\=")
}

/// A resource field selectors are parsed for: `(group, plural, namespaced, selectable)`.
type Resource = (
    &'static str,
    &'static str,
    bool,
    Option<&'static [&'static str]>,
);

const RESOURCES: &[Resource] = &[
    ("", "configmaps", true, None),
    ("", "pods", true, None),
    ("", "namespaces", false, None),
    ("batch", "jobs", true, None),
    (
        "example.com",
        "widgets",
        true,
        Some(&["spec.color", "spec.size"]),
    ),
];

fn parse_fields(text: &str, resource: &Resource) -> Result<FieldSelector, FieldSelectorError> {
    let (group, plural, namespaced, selectable) = *resource;
    let selectable: Option<Vec<String>> =
        selectable.map(|fields| fields.iter().map(|field| (*field).to_owned()).collect());
    FieldSelector::parse(text, group, plural, namespaced, selectable.as_deref())
}

/// The properties every field selector has, whatever its text.
fn check_field_selector(text: &str) -> Result<(), String> {
    for resource in RESOURCES {
        match parse_fields(text, resource) {
            Ok(selector) => {
                let _ = selector.matches(&json!({"metadata": {"name": "x"}}));
            }
            Err(error) => {
                let api = kro_apiserver::ApiError::from(error.clone());
                if api.code != 400 || api.message.is_empty() || error.reason().is_empty() {
                    return Err(format!("{text:?} for {}: {error:?}", resource.1));
                }
            }
        }
    }
    Ok(())
}

/// One term of a field selector on configmaps or on the custom resource.
#[derive(Debug, Clone)]
struct Term {
    field: &'static str,
    operator: &'static str,
    value: String,
}

impl Term {
    fn render(&self) -> String {
        format!("{}{}{}", self.field, self.operator, escape(&self.value))
    }
}

fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c,=\\\\! ]{0,6}",
        1 => "\\PC{0,8}",
    ]
}

fn term(fields: &'static [&'static str]) -> impl Strategy<Value = Term> {
    (
        prop::sample::select(fields),
        prop::sample::select(&["=", "==", "!="][..]),
        field_value(),
    )
        .prop_map(|(field, operator, value)| Term {
            field,
            operator,
            value,
        })
}

const CUSTOM_FIELDS: &[&str] = &["metadata.name", "spec.color", "spec.size"];

/// A custom resource with the fields the terms may select.
fn widget(name: &str, color: &str, size: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default"},
           "spec": {"color": color, "size": size}})
}

fn config() -> ProptestConfig {
    fuzzing::config(3_000, 0x006b_726f_7365_6c31)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn label_selectors_built_from_requirements_match_what_they_say(
        requirements in prop::collection::vec(requirement(), 0..5),
        space in prop::sample::select(&["", " ", "\t", "  "][..]),
        candidates in prop::collection::vec(labels(), 1..6),
    ) {
        let text: Vec<String> = requirements.iter().map(|r| r.render(space)).collect();
        let text = text.join(",");
        let selector = LabelSelector::parse(&text)
            .map_err(|error| TestCaseError::fail(format!("{text:?}: {}", error.message)))?;
        for labels in &candidates {
            let expected = requirements.iter().all(|requirement| requirement.holds(labels));
            prop_assert_eq!(selector.matches(&labelled(labels)), expected, "{:?} on {:?}", text, labels);
        }
    }

    #[test]
    fn any_label_selector_text_parses_or_is_a_bad_request(
        text in prop_oneof![
            3 => selector_text(),
            2 => mutated(fuzzing::corpus("label-selectors")),
        ],
        labels in labels(),
    ) {
        check_label_selector(&text, &labels).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn any_field_selector_text_parses_or_is_a_bad_request(
        text in prop_oneof![
            3 => selector_text(),
            2 => mutated(fuzzing::corpus("field-selectors")),
        ],
    ) {
        check_field_selector(&text).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn escaped_field_values_come_back_as_they_were(value in field_value()) {
        let text = format!("metadata.name={}", escape(&value));
        let selector = parse_fields(&text, &RESOURCES[0])
            .map_err(|error| TestCaseError::fail(format!("{text:?}: {error}")))?;
        prop_assert_eq!(selector.pinned_name(), Some(value.as_str()));
        let object = json!({"metadata": {"name": value}});
        prop_assert!(selector.matches(&object), "{:?} does not match its own name", text);
    }

    #[test]
    fn field_selectors_match_what_their_terms_say_in_any_order(
        terms in prop::collection::vec(term(CUSTOM_FIELDS), 0..5),
        mut order in any::<u64>(),
        extra in prop_oneof![
            Just(None),
            Just(Some("nope=1".to_owned())),
            Just(Some("no operator".to_owned())),
            Just(Some(r"spec.color=bad\escape".to_owned())),
            Just(Some("spec.color=un=escaped".to_owned())),
        ],
    ) {
        let resource = &RESOURCES[4];
        let mut rendered: Vec<String> = terms.iter().map(Term::render).collect();
        rendered.extend(extra.clone());
        let forward = parse_fields(&rendered.join(","), resource);
        // Any other order of the same terms: kube-apiserver sorts them before it reads them.
        let mut shuffled = rendered.clone();
        for index in (1..shuffled.len()).rev() {
            order = order.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let other = usize::try_from((order >> 33) % (index as u64 + 1)).unwrap_or(0);
            shuffled.swap(index, other);
        }
        let shuffled = shuffled.join(",");
        let again = parse_fields(&shuffled, resource);
        match (&forward, &again) {
            // The message quotes the whole selector, which differs by order.
            (Err(FieldSelectorError::NoOperator { term: a, .. }),
             Err(FieldSelectorError::NoOperator { term: b, .. })) => prop_assert_eq!(a, b),
            _ => prop_assert_eq!(&forward, &again, "{:?}", shuffled),
        }
        match extra {
            Some(_) => prop_assert!(forward.is_err(), "{:?}", rendered),
            None => {
                let selector = forward.map_err(|error| TestCaseError::fail(error.to_string()))?;
                let values: Vec<&str> = terms.iter().map(|term| term.value.as_str()).chain(["", "a"]).collect();
                for name in &values {
                    for color in &values {
                        let object = widget(name, color, "a");
                        let expected = terms.iter().all(|term| {
                            let actual = match term.field {
                                "metadata.name" => *name,
                                "spec.color" => *color,
                                _ => "a",
                            };
                            (actual == term.value) == (term.operator != "!=")
                        });
                        prop_assert_eq!(selector.matches(&object), expected, "{:?} on {}", rendered, object);
                        if let (true, Some(pinned)) = (expected, selector.pinned_name()) {
                            prop_assert_eq!(pinned, *name);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_label_selector_corpus_parses_or_is_refused_as_a_bad_request() {
    let labels: BTreeMap<&str, &str> = [("app", "web"), ("size", "3")].into_iter().collect();
    for entry in fuzzing::corpus("label-selectors") {
        let text = String::from_utf8_lossy(&entry.bytes);
        if let Err(problem) = check_label_selector(&text, &labels) {
            panic!("{}: {problem}", entry.name);
        }
    }
}

#[test]
fn the_field_selector_corpus_parses_or_is_refused_as_a_bad_request() {
    for entry in fuzzing::corpus("field-selectors") {
        let text = String::from_utf8_lossy(&entry.bytes);
        if let Err(problem) = check_field_selector(&text) {
            panic!("{}: {problem}", entry.name);
        }
    }
}
