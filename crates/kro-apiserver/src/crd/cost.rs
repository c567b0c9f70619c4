//! The estimated cost of `x-kubernetes-validations` rules, as kube-apiserver limits it when a
//! definition is created or updated: each rule's cel-go estimate times the number of times
//! it can run must stay under [`RULE_COST_LIMIT`], and the sum over a schema under
//! [`SCHEMA_COST_LIMIT`].
//!
//! Sizes follow apiextensions-apiserver: a string, list or map declared without `maxLength`,
//! `maxItems` or `maxProperties` is as large as the 3 MiB request limit allows given the
//! smallest serialized size of its elements, and a rule under unbounded lists or maps runs as
//! many times as its smallest serialized value fits in a request.

use std::collections::BTreeMap;

use kro_cel::{PathSizes, SizeRange};
use kro_schema::{AdditionalProperties, FieldError, FieldPath, Schema};

/// kube-apiserver's largest estimated cost of one rule (`StaticEstimatedCostLimit`).
pub(super) const RULE_COST_LIMIT: u64 = 10_000_000;
/// kube-apiserver's largest estimated cost of all rules of a schema
/// (`StaticEstimatedCRDCostLimit`).
pub(super) const SCHEMA_COST_LIMIT: u64 = 100_000_000;
/// The largest request kube-apiserver reads (`MaxRequestSizeBytes`), which bounds every size.
const MAX_REQUEST_BYTES: i64 = 3 * 1024 * 1024;
/// How deep the size model follows a schema (the structural check refuses deeper ones).
const MAX_DEPTH: usize = 64;

/// What the cost estimate knows of a schema node (apiextensions' `DeclType` sizes): the
/// smallest JSON it serializes to, and its largest size (string length, entries).
#[derive(Debug, Clone, Default)]
pub(super) struct DeclSize {
    pub(super) min_serialized: i64,
    max_elements: i64,
    fields: BTreeMap<String, DeclSize>,
    elements: Option<Box<DeclSize>>,
    keys: Option<Box<DeclSize>>,
}

impl DeclSize {
    fn simple(min_serialized: i64, max_elements: i64) -> Self {
        DeclSize {
            min_serialized,
            max_elements,
            ..DeclSize::default()
        }
    }

    /// The sizes of a schema node, or `None` when it has no CEL type (no `type`, or a list
    /// without `items`).
    pub(super) fn of(schema: &Schema, is_root: bool) -> Option<DeclSize> {
        Self::build(schema, is_root, 0)
    }

    fn build(schema: &Schema, is_root: bool, depth: usize) -> Option<DeclSize> {
        const UNBOUNDED_STRING: i64 = MAX_REQUEST_BYTES - 2;
        if depth > MAX_DEPTH {
            return None;
        }
        if schema.x_kubernetes_int_or_string {
            return Some(DeclSize::simple(1, UNBOUNDED_STRING));
        }
        let with_meta;
        let schema = if is_root && !has_type_and_object_meta(schema) {
            with_meta = with_type_and_object_meta(schema);
            &with_meta
        } else {
            schema
        };
        let limit =
            |value: Option<u64>| value.map(|value| i64::try_from(value).unwrap_or(i64::MAX));
        match schema.type_.as_deref()? {
            "array" => {
                let items = schema.items.as_deref()?;
                let elements = Self::build(items, items.x_kubernetes_embedded_resource, depth + 1)?;
                let max = limit(schema.max_items).unwrap_or(
                    (MAX_REQUEST_BYTES - 2) / (elements.min_serialized.saturating_add(1)),
                );
                Some(DeclSize {
                    elements: Some(Box::new(elements)),
                    ..DeclSize::simple(2, max)
                })
            }
            "object" => match &schema.additional_properties {
                Some(AdditionalProperties::Schema(values)) => {
                    let values =
                        Self::build(values, values.x_kubernetes_embedded_resource, depth + 1)?;
                    let max = limit(schema.max_properties).unwrap_or(
                        (MAX_REQUEST_BYTES - 2) / (values.min_serialized.saturating_add(6)),
                    );
                    Some(DeclSize {
                        elements: Some(Box::new(values)),
                        keys: Some(Box::new(DeclSize::simple(2, 0))),
                        ..DeclSize::simple(2, max)
                    })
                }
                _ => {
                    let mut object = DeclSize::simple(2, 0);
                    for (name, property) in &schema.properties {
                        let embedded = property.x_kubernetes_embedded_resource;
                        let Some(field) = Self::build(property, embedded, depth + 1) else {
                            continue;
                        };
                        if schema.required.contains(name) && property.default.is_none() {
                            object.min_serialized = object
                                .min_serialized
                                .saturating_add(name.len() as i64)
                                .saturating_add(field.min_serialized)
                                .saturating_add(4);
                        }
                        if let Some(escaped) = escape(name) {
                            object.fields.insert(escaped, field);
                        }
                    }
                    Some(object)
                }
            },
            "string" => Some(match schema.format.as_deref() {
                Some("byte") => {
                    DeclSize::simple(2, limit(schema.max_length).unwrap_or(UNBOUNDED_STRING))
                }
                Some("duration") => DeclSize::simple(3, 32),
                Some("date") => DeclSize::simple(12, 12),
                Some("date-time") => DeclSize::simple(21, 32),
                _ => {
                    let max = match (limit(schema.max_length), &schema.enum_) {
                        (Some(length), _) => length.saturating_mul(4),
                        (None, Some(values)) if !values.is_empty() => values
                            .iter()
                            .filter_map(|value| value.as_str())
                            .map(|value| value.len() as i64)
                            .max()
                            .unwrap_or(0),
                        _ => UNBOUNDED_STRING,
                    };
                    DeclSize::simple(2, max)
                }
            }),
            "boolean" => Some(DeclSize::simple(4, 0)),
            "number" | "integer" => Some(DeclSize::simple(1, 0)),
            _ => None,
        }
    }

    /// How many times a value of this node fits in one request: the number of times a rule
    /// on it can run when no enclosing list or map is bounded.
    pub(super) fn max_cardinality(&self) -> u64 {
        u64::try_from(MAX_REQUEST_BYTES / self.min_serialized.saturating_add(1).max(1)).unwrap_or(0)
    }
}

/// Sizes for one rule's estimate: paths start at the rule's `self` (or `oldSelf`).
impl PathSizes for DeclSize {
    fn estimate_size(&self, path: &[String]) -> Option<SizeRange> {
        let (_, rest) = path.split_first()?;
        let mut node = self;
        for step in rest {
            node = match step.as_str() {
                "@items" | "@values" => node.elements.as_deref()?,
                "@keys" => node.keys.as_deref()?,
                field => node.fields.get(field)?,
            };
        }
        Some(SizeRange {
            min: 0,
            max: u64::try_from(node.max_elements).unwrap_or(0),
        })
    }
}

fn is_typed(schema: Option<&Schema>, type_name: &str) -> bool {
    schema.is_some_and(|schema| schema.type_.as_deref() == Some(type_name))
}

/// Whether a root schema already declares `kind`, `apiVersion` and `metadata` with `name`
/// and `generateName`, as kube-apiserver checks before adding them.
fn has_type_and_object_meta(schema: &Schema) -> bool {
    let metadata = schema.properties.get("metadata");
    is_typed(schema.properties.get("kind"), "string")
        && is_typed(schema.properties.get("apiVersion"), "string")
        && is_typed(metadata, "object")
        && metadata.is_some_and(|metadata| {
            is_typed(metadata.properties.get("name"), "string")
                && is_typed(metadata.properties.get("generateName"), "string")
        })
}

fn with_type_and_object_meta(schema: &Schema) -> Schema {
    let string = || Schema {
        type_: Some("string".to_owned()),
        ..Schema::default()
    };
    let mut result = schema.clone();
    result.properties.insert("kind".to_owned(), string());
    result.properties.insert("apiVersion".to_owned(), string());
    let metadata = Schema {
        type_: Some("object".to_owned()),
        properties: [
            ("name".to_owned(), string()),
            ("generateName".to_owned(), string()),
        ]
        .into_iter()
        .collect(),
        ..Schema::default()
    };
    result.properties.insert("metadata".to_owned(), metadata);
    result
}

/// The CEL name of a property (apiserver's `cel.Escape`), `None` when it has none.
pub(super) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if kro_cel::is_reserved_word(name) {
        return Some(format!("__{name}__"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    let mut escaped = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            escaped.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => escaped.push_str("__dot__"),
            '-' => escaped.push_str("__dash__"),
            '/' => escaped.push_str("__slash__"),
            other => escaped.push(other),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(escaped)
}

/// How many times the rules of a child node can run, from the node's own (apiextensions'
/// `CELSchemaContext` cardinality): `None` is unbounded.
pub(super) fn child_cardinality(parent: &Schema, cardinality: Option<u64>) -> Option<u64> {
    let per_parent = match parent.type_.as_deref() {
        Some("object") if parent.additional_properties.is_some() => parent.max_properties?,
        Some("array") => parent.max_items?,
        _ => 1,
    };
    Some(multiply_with_overflow_guard(cardinality?, per_parent))
}

/// `base * count`, saturating, and 0 when `base` is 0 (kube-apiserver's guard).
pub(super) fn multiply_with_overflow_guard(base: u64, count: u64) -> u64 {
    if base == 0 {
        0
    } else {
        base.saturating_mul(count)
    }
}

/// kube-apiserver's message for a cost over its limit.
pub(super) fn over_budget_message(cost_name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or adding \
         maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The cost of all rules of one schema, and the (at most four) rules that cost the most.
#[derive(Debug, Default)]
pub(super) struct TotalCost {
    total: u64,
    most_expensive: Vec<(FieldPath, u64)>,
}

impl TotalCost {
    /// Adds a rule's cost; rules under 1% of the schema limit are not named later.
    pub(super) fn observe(&mut self, path: FieldPath, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_COST_LIMIT / 100 {
            return;
        }
        // After the last entry that costs as much: equal costs keep their order.
        let at = self
            .most_expensive
            .iter()
            .position(|(_, known)| *known < cost)
            .unwrap_or(self.most_expensive.len());
        self.most_expensive.insert(at, (path, cost));
        self.most_expensive.truncate(4);
    }

    /// The errors when the total is over the limit, reported at `schema_path`.
    pub(super) fn errors(&self, schema_path: &FieldPath) -> Vec<FieldError> {
        if self.total <= SCHEMA_COST_LIMIT {
            return Vec::new();
        }
        let mut errors: Vec<FieldError> = self
            .most_expensive
            .iter()
            .map(|(path, _)| {
                FieldError::forbidden(
                    path.clone(),
                    "contributed to estimated rule cost total exceeding cost limit for entire \
                     OpenAPIv3 schema",
                )
            })
            .collect();
        errors.push(FieldError::forbidden(
            schema_path.clone(),
            &over_budget_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total,
                SCHEMA_COST_LIMIT,
            ),
        ));
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: serde_json::Value) -> Schema {
        serde_json::from_value(value).expect("a schema")
    }

    fn path(steps: &[&str]) -> Vec<String> {
        steps.iter().map(|step| (*step).to_owned()).collect()
    }

    #[test]
    fn unbounded_sizes_come_from_the_request_limit() {
        let sizes = DeclSize::of(
            &schema(json!({"type": "array", "items": {"type": "string"}})),
            false,
        )
        .expect("typed");
        // (3 MiB - 2) / (2 + 1) items of at most 3 MiB - 2 bytes.
        assert_eq!(
            sizes.estimate_size(&path(&["self"])).map(|size| size.max),
            Some(1_048_575)
        );
        assert_eq!(
            sizes
                .estimate_size(&path(&["self", "@items"]))
                .map(|size| size.max),
            Some(3_145_726)
        );
        assert_eq!(sizes.max_cardinality(), 1_048_576);
    }

    #[test]
    fn declared_limits_bound_sizes_and_max_length_counts_four_bytes_a_character() {
        let sizes = DeclSize::of(
            &schema(json!({"type": "object", "properties": {
                "tags": {"type": "array", "maxItems": 10,
                    "items": {"type": "string", "maxLength": 5}},
                "kind-of": {"type": "string", "enum": ["a", "abc"]}}})),
            false,
        )
        .expect("typed");
        let max = |steps: &[&str]| sizes.estimate_size(&path(steps)).map(|size| size.max);
        assert_eq!(max(&["self", "tags"]), Some(10));
        assert_eq!(max(&["self", "tags", "@items"]), Some(20));
        assert_eq!(max(&["self", "kind__dash__of"]), Some(3));
        assert_eq!(max(&["self", "kind-of"]), None);
    }

    #[test]
    fn required_fields_raise_the_smallest_serialized_size() {
        let sizes = DeclSize::of(
            &schema(
                json!({"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "other": {"type": "integer"}}}),
            ),
            false,
        )
        .expect("typed");
        // {} plus "name":"" (4 + 2 + 4).
        assert_eq!(sizes.min_serialized, 12);
        assert_eq!(sizes.max_cardinality(), 3_145_728 / 13);
    }

    #[test]
    fn names_escape_as_kube_apiserver_escapes_them() {
        assert_eq!(
            escape("a.b-c/d__e").as_deref(),
            Some("a__dot__b__dash__c__slash__d__underscores__e")
        );
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn cardinality_multiplies_declared_limits_and_is_lost_under_unbounded_ones() {
        let bounded = schema(json!({"type": "array", "maxItems": 7}));
        let unbounded = schema(json!({"type": "array"}));
        let map = schema(json!({"type": "object", "maxProperties": 3,
            "additionalProperties": {"type": "string"}}));
        assert_eq!(child_cardinality(&bounded, Some(2)), Some(14));
        assert_eq!(child_cardinality(&unbounded, Some(2)), None);
        assert_eq!(child_cardinality(&map, Some(2)), Some(6));
        assert_eq!(child_cardinality(&bounded, None), None);
    }

    #[test]
    fn messages_print_the_factor_as_kube_apiserver_does() {
        let message = |cost| over_budget_message("estimated rule cost", cost, RULE_COST_LIMIT);
        assert!(message(12_000_000).contains("factor of 1.200000x (try"));
        assert!(message(25_000_000).contains("factor of 2.5x (try"));
        assert!(message(2_000_000_000).contains("factor of more than 100x (try"));
    }

    #[test]
    fn the_total_names_the_four_most_expensive_rules_in_order() {
        let mut total = TotalCost::default();
        for (index, cost) in [
            5_000_000, 30_000_000, 500_000, 30_000_000, 20_000_000, 40_000_000,
        ]
        .into_iter()
        .enumerate()
        {
            total.observe(FieldPath::new("r").index(index), cost);
        }
        let errors = total.errors(&FieldPath::new("schema"));
        let paths: Vec<String> = errors.iter().map(|error| error.path.to_string()).collect();
        assert_eq!(paths, ["r[5]", "r[1]", "r[3]", "r[4]", "schema"]);
    }
}
