//! `forEach` expansion: the iterations of a collection node, each with the variables its
//! template sees.
//!
//! - Upstream's named dimensions (`[{region: ...}, {tier: ...}]`): each must be a list; the
//!   iterations are their cartesian product, the first dimension the outer loop; an empty
//!   dimension gives no iteration.
//! - The seed's single expression (`forEach: ${expr}`): a list (in order) or a map (in sorted
//!   key order); the template sees `each.item`, `each.index`, `each.key`, `each.value` and
//!   `each.length`. For a list, `key` is the index and `value` the item; for a map, `item` and
//!   `value` are the entry's value.

use kro_cel::{Key, Map, Value};
use kro_graph::{CompiledExpression, CompiledForEach};

use crate::evaluate::{Problem, Scope, evaluate};

/// One iteration of a collection.
#[derive(Debug, Clone)]
pub(crate) struct Iteration {
    /// The variables of the template for this item.
    pub(crate) bindings: Vec<(String, Value)>,
    /// The item's key: the map key for a map, else the position.
    pub(crate) key: String,
}

/// Expands a forEach, refusing more than `limit` iterations.
pub(crate) fn expand(
    for_each: &CompiledForEach,
    scope: &Scope<'_>,
    limit: usize,
) -> Result<Vec<Iteration>, Problem> {
    match for_each {
        CompiledForEach::Dimensions(dimensions) => {
            let mut lists = Vec::with_capacity(dimensions.len());
            for (name, expression) in dimensions {
                let value = evaluate(expression, scope)?;
                let Value::List(items) = value else {
                    return Err(failed(
                        expression,
                        format!(
                            "forEach dimension {name:?} must be a list, found {}",
                            value.type_name()
                        ),
                    ));
                };
                lists.push((name, expression, items));
            }
            let total = lists.iter().try_fold(1usize, |total, (_, _, items)| {
                total.checked_mul(items.len())
            });
            match total {
                Some(total) if total <= limit => {}
                _ => {
                    let (_, expression, _) = &lists[0];
                    return Err(failed(expression, too_large(&lists, limit)));
                }
            }
            let mut iterations = vec![Iteration {
                bindings: Vec::new(),
                key: String::new(),
            }];
            for (name, _, items) in &lists {
                let mut next = Vec::with_capacity(iterations.len() * items.len());
                for iteration in &iterations {
                    for item in items.iter() {
                        let mut bindings = iteration.bindings.clone();
                        bindings.push(((*name).clone(), item.clone()));
                        next.push(Iteration {
                            bindings,
                            key: String::new(),
                        });
                    }
                }
                iterations = next;
            }
            if lists.is_empty() {
                iterations.clear();
            }
            for (index, iteration) in iterations.iter_mut().enumerate() {
                iteration.key = index.to_string();
            }
            Ok(iterations)
        }
        CompiledForEach::Each(expression) => {
            let value = evaluate(expression, scope)?;
            let entries: Vec<(Value, Value, String)> = match &value {
                Value::List(items) => items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| {
                        let index = i64::try_from(index).unwrap_or(i64::MAX);
                        (Value::Int(index), item.clone(), index.to_string())
                    })
                    .collect(),
                Value::Map(map) => {
                    let mut entries: Vec<(&Key, &Value)> = map.iter().collect();
                    entries.sort_by(|(a, _), (b, _)| compare_keys(a, b));
                    entries
                        .into_iter()
                        .map(|(key, item)| (key_value(key), item.clone(), key_text(key)))
                        .collect()
                }
                other => {
                    return Err(failed(
                        expression,
                        format!(
                            "forEach must be a list or a map, found {}",
                            other.type_name()
                        ),
                    ));
                }
            };
            if entries.len() > limit {
                return Err(failed(
                    expression,
                    format!(
                        "the collection has {} items, more than the limit of {limit}",
                        entries.len()
                    ),
                ));
            }
            let length = i64::try_from(entries.len()).unwrap_or(i64::MAX);
            Ok(entries
                .into_iter()
                .enumerate()
                .map(|(index, (key, item, key_text))| {
                    let each: Map = [
                        ("item", item.clone()),
                        ("value", item),
                        (
                            "index",
                            Value::Int(i64::try_from(index).unwrap_or(i64::MAX)),
                        ),
                        ("key", key),
                        ("length", Value::Int(length)),
                    ]
                    .into_iter()
                    .map(|(name, value)| (Key::String(name.into()), value))
                    .collect();
                    Iteration {
                        bindings: vec![("each".to_owned(), Value::Map(each))],
                        key: key_text,
                    }
                })
                .collect())
        }
    }
}

fn too_large(
    lists: &[(&String, &CompiledExpression, std::sync::Arc<Vec<Value>>)],
    limit: usize,
) -> String {
    let sizes: Vec<String> = lists
        .iter()
        .map(|(name, _, items)| format!("{name}: {}", items.len()))
        .collect();
    format!(
        "the collection would have more than the limit of {limit} items ({})",
        sizes.join(" × ")
    )
}

fn failed(expression: &CompiledExpression, message: String) -> Problem {
    Problem::Failed {
        expression: expression.source.clone(),
        message,
    }
}

fn key_value(key: &Key) -> Value {
    match key {
        Key::Int(value) => Value::Int(*value),
        Key::Uint(value) => Value::Uint(*value),
        Key::Bool(value) => Value::Bool(*value),
        Key::String(value) => Value::String(value.clone()),
    }
}

fn key_text(key: &Key) -> String {
    match key {
        Key::Int(value) => value.to_string(),
        Key::Uint(value) => value.to_string(),
        Key::Bool(value) => value.to_string(),
        Key::String(value) => value.to_string(),
    }
}

/// Sorted key order: by kind (bool, int, uint, string), then by value.
fn compare_keys(a: &Key, b: &Key) -> std::cmp::Ordering {
    fn rank(key: &Key) -> u8 {
        match key {
            Key::Bool(_) => 0,
            Key::Int(_) => 1,
            Key::Uint(_) => 2,
            Key::String(_) => 3,
        }
    }
    match (a, b) {
        (Key::Bool(a), Key::Bool(b)) => a.cmp(b),
        (Key::Int(a), Key::Int(b)) => a.cmp(b),
        (Key::Uint(a), Key::Uint(b)) => a.cmp(b),
        (Key::String(a), Key::String(b)) => a.cmp(b),
        _ => rank(a).cmp(&rank(b)),
    }
}
