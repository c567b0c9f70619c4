//! The lists extension (cel-go's `ext.Lists`, latest version), plus `first()` and `last()`,
//! which cel-go puts in its optional-types library.
//!
//! - `list.slice(start, end)`: the elements from `start` up to, not including, `end`.
//! - `list.flatten()` and `list.flatten(depth)`: nested lists spliced in, one level or
//!   `depth` levels deep.
//! - `list.distinct()`: the first occurrence of each element, by CEL equality.
//! - `list.reverse()`.
//! - `list.sort()`: ascending, for lists whose elements all have one comparable type (int,
//!   uint, double, bool, string, bytes, timestamp, duration).
//! - `list.sortBy(x, key)`: a macro that sorts by the key computed for each element; it
//!   expands into the internal `@sortByAssociatedKeys`. Sorting is stable.
//! - `list.first()` and `list.last()`: optionals, empty for an empty list.
//! - `lists.range(n)`: `[0, 1, ..., n - 1]`, empty when `n` is not positive.
//!
//! Costs: walking charges one unit per ten elements, copying one per two (like list
//! concatenation);
//! `lists.range` and `flatten` create their elements and charge one unit each (like a list
//! literal: `flatten` of a list that holds one list many times creates far more than it
//! walks); sorting charges for `n log n` comparisons, more for string and bytes keys;
//! `distinct` of ints, uints, bools and strings is hashed, two units per element, of anything
//! else compared pairwise and charged for each comparison.

use std::collections::HashSet;
use std::mem::discriminant;
use std::sync::Arc;

use crate::cost::{Budget, compare_cost, copy_cost, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::macros::SORT_BY_KEYS_FUNCTION;
use crate::stdlib::{operators, optionals};
use crate::types::Type;
use crate::value::{Key, Value};

use super::sets::scalar_keys;

/// The element types `sort` and `sortBy` accept, with cel-go's names for them in overload ids.
const COMPARABLE_TYPES: [(Type, &str); 8] = [
    (Type::Int, "int"),
    (Type::Uint, "uint"),
    (Type::Double, "double"),
    (Type::Bool, "bool"),
    (Type::Duration, "google.protobuf.Duration"),
    (Type::Timestamp, "google.protobuf.Timestamp"),
    (Type::String, "string"),
    (Type::Bytes, "bytes"),
];

fn list_t() -> Type {
    Type::list(Type::param("T"))
}

fn no_such_overload(name: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(name, &args.iter().collect::<Vec<_>>())
}

/// The lists library.
pub(crate) fn library() -> Library {
    let mut functions = vec![
        Function::new("slice").overload(
            Overload::member("list_slice", &[list_t(), Type::Int, Type::Int], list_t()).with_impl(
                |args, budget| match args {
                    [Value::List(items), Value::Int(start), Value::Int(end)] => {
                        slice(items, *start, *end, budget)
                    }
                    _ => Err(no_such_overload("slice", args)),
                },
            ),
        ),
        flatten_function(),
        Function::new("distinct").overload(
            Overload::member("list_distinct", &[list_t()], list_t()).with_impl(|args, budget| {
                match args {
                    [Value::List(items)] => distinct(items, budget),
                    _ => Err(no_such_overload("distinct", args)),
                }
            }),
        ),
        Function::new("reverse").overload(
            Overload::member("list_reverse", &[list_t()], list_t()).with_impl(|args, budget| {
                match args {
                    [Value::List(items)] => {
                        budget.charge(copy_cost(items.len()))?;
                        Ok(Value::list(items.iter().rev().cloned().collect()))
                    }
                    _ => Err(no_such_overload("reverse", args)),
                }
            }),
        ),
        Function::new("lists.range").overload(
            Overload::global("lists_range", &[Type::Int], Type::list(Type::Int)).with_impl(
                |args, budget| match args {
                    [Value::Int(count)] => range(*count, budget),
                    _ => Err(no_such_overload("lists.range", args)),
                },
            ),
        ),
        end_function("first", "list_first", <[Value]>::first),
        end_function("last", "list_last", <[Value]>::last),
    ];
    functions.extend(sort_functions());
    Library::new("lists", functions)
}

/// `list.slice(start, end)`
fn slice(items: &[Value], start: i64, end: i64, budget: &mut Budget) -> EvalResult<Value> {
    let invalid = |reason: String| EvalError::invalid_argument("slice", reason);
    if start < 0 || end < 0 {
        return Err(invalid(format!(
            "cannot slice({start}, {end}), negative indexes not supported"
        )));
    }
    if start > end {
        return Err(invalid(format!(
            "cannot slice({start}, {end}), start index must be less than or equal to end index"
        )));
    }
    let selected = usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(start, end)| items.get(start..end));
    let Some(selected) = selected else {
        return Err(invalid(format!(
            "cannot slice({start}, {end}), list is length {}",
            items.len()
        )));
    };
    budget.charge(copy_cost(selected.len()))?;
    Ok(Value::list(selected.to_vec()))
}

fn flatten_function() -> Function {
    Function::new("flatten")
        .overload(
            Overload::member("list_flatten", &[Type::list(list_t())], list_t()).with_impl(
                |args, budget| match args {
                    [Value::List(items)] => flatten(items, 1, budget),
                    _ => Err(no_such_overload("flatten", args)),
                },
            ),
        )
        .overload(
            Overload::member(
                "list_flatten_int",
                &[Type::list(Type::Dyn), Type::Int],
                Type::list(Type::Dyn),
            )
            .with_impl(|args, budget| match args {
                [Value::List(items), Value::Int(depth)] => flatten(items, *depth, budget),
                _ => Err(no_such_overload("flatten", args)),
            }),
        )
}

/// Splices nested lists into their parent, `depth` levels deep. Iterative, so deeply nested
/// values cannot exhaust the stack; every list walked is charged for its size.
fn flatten(items: &[Value], depth: i64, budget: &mut Budget) -> EvalResult<Value> {
    if depth < 0 {
        return Err(EvalError::invalid_argument(
            "flatten",
            format!("level must be non-negative, got {depth}"),
        ));
    }
    budget.charge(traversal_cost(items.len()))?;
    let mut flat = Vec::with_capacity(items.len());
    let mut pending = vec![(items.iter(), depth)];
    while let Some((walk, remaining)) = pending.last_mut() {
        let remaining = *remaining;
        match walk.next() {
            None => {
                pending.pop();
            }
            Some(Value::List(inner)) if remaining > 0 => {
                budget.charge(traversal_cost(inner.len()))?;
                pending.push((inner.iter(), remaining - 1));
            }
            Some(element) => {
                // Each element copied into the result is created anew, as in a literal.
                budget.charge(1)?;
                flat.push(element.clone());
            }
        }
    }
    Ok(Value::list(flat))
}

/// `list.distinct()`: keeps the first of each group of equal elements.
fn distinct(items: &[Value], budget: &mut Budget) -> EvalResult<Value> {
    if let Some(keys) = scalar_keys(items) {
        // Every element is hashed: two units each, and a unit per ten bytes of string.
        budget.charge(2 * items.len() as u64)?;
        for key in &keys {
            operators::charge_key(key, budget)?;
        }
        let mut seen: HashSet<Key, foldhash::fast::FixedState> =
            HashSet::with_capacity_and_hasher(keys.len(), foldhash::fast::FixedState::default());
        let kept = items
            .iter()
            .zip(keys)
            .filter(|(_, key)| seen.insert(key.clone()))
            .map(|(item, _)| item.clone())
            .collect();
        return Ok(Value::list(kept));
    }
    let mut kept: Vec<Value> = Vec::new();
    for item in items.iter() {
        budget.charge(compare_cost(kept.len()))?;
        let mut seen = false;
        for earlier in &kept {
            if operators::equals(earlier, item, budget)? {
                seen = true;
                break;
            }
        }
        if !seen {
            kept.push(item.clone());
        }
    }
    Ok(Value::list(kept))
}

/// `lists.range(n)`: the ints from 0 up to, not including, `n`.
fn range(count: i64, budget: &mut Budget) -> EvalResult<Value> {
    let Ok(count) = u64::try_from(count) else {
        return Ok(Value::list(Vec::new()));
    };
    budget.charge(count)?;
    let too_large = || EvalError::invalid_argument("lists.range", format!("{count} is too large"));
    let size = usize::try_from(count).map_err(|_| too_large())?;
    let mut values = Vec::new();
    values.try_reserve_exact(size).map_err(|_| too_large())?;
    // `count` fits in an i64: it came from one.
    values.extend((0..count).map(|i| Value::Int(i as i64)));
    Ok(Value::list(values))
}

/// `list.first()` or `list.last()`: the end `pick` chooses, as an optional.
fn end_function(name: &'static str, id: &str, pick: fn(&[Value]) -> Option<&Value>) -> Function {
    Function::new(name).overload(
        Overload::member(id, &[list_t()], Type::optional(Type::param("T"))).with_impl(
            move |args, _| match args {
                [Value::List(items)] => Ok(pick(items)
                    .cloned()
                    .map_or_else(optionals::none, optionals::some)),
                _ => Err(no_such_overload(name, args)),
            },
        ),
    )
}

/// `sort()` and the internal function behind `sortBy`, with one overload per comparable
/// element type (of the list for `sort`, of the keys for `sortBy`).
fn sort_functions() -> [Function; 2] {
    let mut sort = Function::new("sort");
    let mut sort_by = Function::new(SORT_BY_KEYS_FUNCTION);
    for (ty, type_name) in COMPARABLE_TYPES {
        let list = Type::list(ty);
        sort = sort.overload(
            Overload::member(
                &format!("list_{type_name}_sort"),
                std::slice::from_ref(&list),
                list.clone(),
            )
            .with_impl(|args, budget| match args {
                [Value::List(items)] => sort_by_keys("sort", items, items, budget),
                _ => Err(no_such_overload("sort", args)),
            }),
        );
        sort_by = sort_by.overload(
            Overload::member(
                &format!("list_{type_name}_sortByAssociatedKeys"),
                &[list_t(), list],
                list_t(),
            )
            .with_impl(|args, budget| match args {
                [Value::List(items), Value::List(keys)] => {
                    sort_by_keys("sortBy", items, keys, budget)
                }
                _ => Err(no_such_overload("sortBy", args)),
            }),
        );
    }
    [sort, sort_by]
}

/// Sorts `items` by `keys` (element `i` by key `i`), stably. The keys must all have one
/// comparable type, and doubles must not be NaN.
fn sort_by_keys(
    name: &str,
    items: &Arc<Vec<Value>>,
    keys: &[Value],
    budget: &mut Budget,
) -> EvalResult<Value> {
    let invalid = |reason: &str| EvalError::invalid_argument(name, reason);
    if items.len() != keys.len() {
        return Err(invalid(&format!(
            "expected as many keys as elements, got {} keys for {} elements",
            keys.len(),
            items.len()
        )));
    }
    let Some(first) = keys.first() else {
        return Ok(Value::List(items.clone()));
    };
    if !first.is_orderable() {
        return Err(invalid("list elements must be comparable"));
    }
    let mut key_bytes = 0usize;
    for key in keys {
        if discriminant(key) != discriminant(first) {
            return Err(invalid("list elements must have the same type"));
        }
        match key {
            Value::Double(d) if d.is_nan() => {
                return Err(invalid("NaN values cannot be ordered"));
            }
            Value::String(text) => key_bytes = key_bytes.saturating_add(text.len()),
            Value::Bytes(bytes) => key_bytes = key_bytes.saturating_add(bytes.len()),
            _ => {}
        }
    }
    // About log2(n) rounds of comparisons, each walking every key once.
    let rounds = (usize::BITS - keys.len().leading_zeros()) as usize;
    let walked = keys.len().saturating_add(key_bytes).saturating_mul(rounds);
    // Then the sorted copy.
    budget.charge(traversal_cost(walked).saturating_add(copy_cost(items.len())))?;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    // The keys were checked to be of one ordered type without NaN, so `compare` orders all.
    order.sort_by(|&a, &b| {
        keys[a]
            .compare(&keys[b])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(Value::list(
        order
            .into_iter()
            .map(|index| items[index].clone())
            .collect(),
    ))
}

#[cfg(test)]
mod tests;
