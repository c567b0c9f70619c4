//! An example value for a structural schema: what `kro generate instance` fills an instance's
//! `spec` with. Every required field is there, every field with a default shows it, and the
//! values chosen satisfy the schema's own constraints where a plain value can (enums, bounds,
//! lengths, item counts, a pattern among a few candidates); what no plain value can promise
//! (a pattern none of the candidates matches, a CEL rule) is left to the caller's validation,
//! which names the field.
//!
//! The example is deterministic: the same schema gives the same value.

use serde_json::{Map, Number, Value};

use crate::openapi::{AdditionalProperties, Schema};

/// How deep the example follows nested schemas (generated CRDs nest far less).
const MAX_DEPTH: usize = 64;

/// Strings tried, in order, against a `pattern`: common shapes of names, hosts and versions.
const PATTERN_CANDIDATES: [&str; 12] = [
    "example",
    "a",
    "0",
    "example-1",
    "example.com",
    "Example",
    "EXAMPLE",
    "1.0.0",
    "v1",
    "10Gi",
    "https://example.com",
    "a@example.com",
];

/// An example value of `schema`: its default when it has one, else a value of its type that
/// keeps within its constraints, with the required and defaulted fields of objects.
pub fn example_value(schema: &Schema) -> Value {
    example_at(schema, 0)
}

fn example_at(schema: &Schema, depth: usize) -> Value {
    let default = schema.default.as_ref().filter(|default| !default.is_null());
    // An object's fields are shown one by one, its own default (kro gives `default: {}` to
    // an object whose fields all have defaults) filling in only what they leave out.
    if depth <= MAX_DEPTH && !schema.properties.is_empty() {
        let mut example = object_example(schema, depth);
        if let (Value::Object(fields), Some(Value::Object(defaults))) = (&mut example, default) {
            for (name, value) in defaults {
                fields.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
        return example;
    }
    if let Some(default) = default {
        return default.clone();
    }
    if let Some(first) = schema.enum_.as_ref().and_then(|values| values.first()) {
        return first.clone();
    }
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if schema.x_kubernetes_int_or_string {
        return Value::from(0);
    }
    match schema.type_.as_deref() {
        Some("object") => object_example(schema, depth),
        Some("array") => {
            let count = schema.min_items.unwrap_or(0);
            let item = schema
                .items
                .as_deref()
                .map_or(Value::Null, |items| example_at(items, depth + 1));
            let items = (0..count)
                .map(|index| distinct(&item, index, schema.unique_items))
                .collect();
            Value::Array(items)
        }
        Some("string") => Value::String(string_example(schema)),
        Some("integer") => Value::Number(Number::from(integer_example(schema))),
        Some("number") => number_example(schema),
        Some("boolean") => Value::Bool(false),
        _ if !schema.properties.is_empty() => object_example(schema, depth),
        _ => Value::Object(Map::new()),
    }
}

/// The required properties and those with defaults; a map (`additionalProperties`) gets as
/// many entries as `minProperties` asks.
fn object_example(schema: &Schema, depth: usize) -> Value {
    let mut object = Map::new();
    for (name, property) in &schema.properties {
        let shown = schema.required.iter().any(|required| required == name)
            || property
                .default
                .as_ref()
                .is_some_and(|default| !default.is_null());
        if shown {
            object.insert(name.clone(), example_at(property, depth + 1));
        }
    }
    if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
        let wanted = usize::try_from(schema.min_properties.unwrap_or(0)).unwrap_or(usize::MAX);
        let value = example_at(values, depth + 1);
        let mut index = 0;
        while object.len() < wanted && index < wanted + schema.properties.len() {
            object
                .entry(format!("key{index}"))
                .or_insert_with(|| value.clone());
            index += 1;
        }
    }
    Value::Object(object)
}

/// The `index`th item of a list: the example itself, or, when items must be unique, the
/// example told apart (a string or number suffix).
fn distinct(item: &Value, index: u64, unique: bool) -> Value {
    if !unique || index == 0 {
        return item.clone();
    }
    match item {
        Value::String(text) => Value::String(format!("{text}{index}")),
        Value::Number(number) => number
            .as_i64()
            .and_then(|value| value.checked_add(i64::try_from(index).ok()?))
            .map_or_else(|| item.clone(), Value::from),
        other => other.clone(),
    }
}

fn string_example(schema: &Schema) -> String {
    let min = usize::try_from(schema.min_length.unwrap_or(0)).unwrap_or(usize::MAX);
    let max = schema
        .max_length
        .and_then(|max| usize::try_from(max).ok())
        .unwrap_or(usize::MAX);
    let fits = |text: &str| (min..=max).contains(&text.chars().count());
    let shaped = match schema.format.as_deref() {
        Some("date-time") => Some("2026-01-01T00:00:00Z"),
        Some("date") => Some("2026-01-01"),
        Some("duration") => Some("1h"),
        Some("uri") => Some("https://example.com"),
        Some("email") => Some("a@example.com"),
        Some("hostname") => Some("example.com"),
        Some("ipv4") => Some("192.0.2.1"),
        Some("ipv6") => Some("2001:db8::1"),
        Some("uuid") => Some("00000000-0000-4000-8000-000000000000"),
        Some("byte") => Some("ZXhhbXBsZQ=="),
        _ => None,
    };
    if let Some(shaped) = shaped.filter(|shaped| fits(shaped)) {
        return shaped.to_owned();
    }
    if let Some(pattern) = &schema.pattern
        && let Ok(pattern) = regex::Regex::new(pattern)
        && let Some(found) = PATTERN_CANDIDATES
            .iter()
            .find(|candidate| fits(candidate) && pattern.is_match(candidate))
    {
        return (*found).to_owned();
    }
    let mut text: String = "example".chars().take(max).collect();
    while text.chars().count() < min {
        text.push('x');
    }
    text
}

fn integer_example(schema: &Schema) -> i64 {
    let minimum = schema.minimum.as_ref().and_then(|minimum| {
        let value = minimum
            .as_i64()
            .or_else(|| minimum.as_f64().map(|value| value.ceil() as i64))?;
        Some(if schema.exclusive_minimum {
            value.saturating_add(1)
        } else {
            value
        })
    });
    let maximum = schema.maximum.as_ref().and_then(|maximum| {
        let value = maximum
            .as_i64()
            .or_else(|| maximum.as_f64().map(|value| value.floor() as i64))?;
        Some(if schema.exclusive_maximum {
            value.saturating_sub(1)
        } else {
            value
        })
    });
    match (minimum, maximum) {
        (Some(minimum), _) => minimum,
        (None, Some(maximum)) if maximum < 0 => maximum,
        _ => 0,
    }
}

fn number_example(schema: &Schema) -> Value {
    let minimum = schema.minimum.as_ref().and_then(Number::as_f64);
    let maximum = schema.maximum.as_ref().and_then(Number::as_f64);
    let value = match (minimum, maximum) {
        (Some(minimum), Some(maximum)) if schema.exclusive_minimum => (minimum + maximum) / 2.0,
        (Some(minimum), None) if schema.exclusive_minimum => minimum + 1.0,
        (Some(minimum), _) => minimum,
        (None, Some(maximum)) if schema.exclusive_maximum && maximum <= 0.0 => maximum - 1.0,
        (None, Some(maximum)) if maximum < 0.0 => maximum,
        _ => 0.0,
    };
    Number::from_f64(value).map_or(Value::from(0), Value::Number)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::validation::validate;

    fn schema(value: Value) -> Schema {
        serde_json::from_value(value).expect("a schema")
    }

    #[test]
    fn required_and_defaulted_fields_are_shown_and_optional_ones_left_out() {
        let spec = schema(json!({
            "type": "object",
            "required": ["name", "replicas"],
            "properties": {
                "name": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "image": {"type": "string", "default": "nginx"},
                "port": {"type": "integer", "default": 80},
                "debug": {"type": "boolean"},
                "tier": {"type": "string", "enum": ["web", "batch"]},
            },
        }));
        let example = example_value(&spec);
        assert_eq!(
            example,
            json!({"name": "example", "replicas": 1, "image": "nginx", "port": 80})
        );
        assert!(validate(&spec, &example, None).is_empty());
    }

    #[test]
    fn constraints_are_kept_where_a_plain_value_can_keep_them() {
        let spec = schema(json!({
            "type": "object",
            "required": ["short", "long", "dns", "tier", "below", "ratio", "tags", "labels", "when", "size"],
            "properties": {
                "short": {"type": "string", "maxLength": 3},
                "long": {"type": "string", "minLength": 10},
                "dns": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]+)+$"},
                "tier": {"type": "string", "enum": ["web", "batch"]},
                "below": {"type": "integer", "maximum": -5},
                "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true, "maximum": 1},
                "tags": {"type": "array", "minItems": 2, "uniqueItems": true,
                    "items": {"type": "string"}},
                "labels": {"type": "object", "minProperties": 1,
                    "additionalProperties": {"type": "string"}},
                "when": {"type": "string", "format": "date-time"},
                "size": {"x-kubernetes-int-or-string": true},
            },
        }));
        let example = example_value(&spec);
        assert_eq!(example["short"], "exa");
        assert_eq!(example["long"], "examplexxx");
        assert_eq!(example["dns"], "example.com");
        assert_eq!(example["tier"], "web");
        assert_eq!(example["below"], -5);
        assert_eq!(example["ratio"], 0.75);
        assert_eq!(example["tags"], json!(["example", "example1"]));
        assert_eq!(example["labels"], json!({"key0": "example"}));
        let errors = validate(&spec, &example, None);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn nested_objects_and_lists_of_objects_get_their_required_fields() {
        let spec = schema(json!({
            "type": "object",
            "required": ["database", "ports"],
            "properties": {
                "database": {"type": "object", "required": ["engine"], "properties": {
                    "engine": {"type": "string"},
                    "storage": {"type": "string", "default": "1Gi"},
                    "backup": {"type": "object", "properties": {"enabled": {"type": "boolean"}}},
                }},
                "ports": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["port"],
                    "properties": {"port": {"type": "integer", "minimum": 1}}}},
            },
        }));
        assert_eq!(
            example_value(&spec),
            json!({"database": {"engine": "example", "storage": "1Gi"}, "ports": [{"port": 1}]})
        );
    }

    #[test]
    fn an_object_defaulted_to_empty_shows_the_defaults_of_its_fields() {
        let spec = schema(json!({
            "type": "object",
            "properties": {
                "web": {"type": "object", "default": {}, "properties": {
                    "image": {"type": "string", "default": "nginx"},
                    "replicas": {"type": "integer", "default": 2},
                }},
            },
        }));
        assert_eq!(
            example_value(&spec),
            json!({"web": {"image": "nginx", "replicas": 2}})
        );
    }

    #[test]
    fn a_pattern_no_candidate_matches_is_left_to_validation() {
        let spec = schema(json!({
            "type": "object", "required": ["code"],
            "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
        }));
        let example = example_value(&spec);
        assert_eq!(example["code"], "example");
        let errors = validate(&spec, &example, None);
        assert_eq!(errors.len(), 1, "{errors:?}");
    }
}
