//! The strings extension (cel-go's `ext.Strings`, all versions): `charAt`, `indexOf`,
//! `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`,
//! `reverse` and `format` on strings, `join` on lists of strings, and `strings.quote`.
//!
//! Every index is counted in Unicode code points, never bytes. An index outside
//! `0..=size` is an `InvalidArgument` error rather than "index out of bounds", because a
//! string that is too short is a defect of the expression or the data, not data that has yet
//! to arrive (see [`EvalError::is_pending`]).
//!
//! Where the CEL specification's conformance data and cel-go disagree, the specification
//! wins: `indexOf` and `lastIndexOf` reject an offset past the end of the string, where
//! current cel-go returns -1 (and skips those two conformance tests).

mod format;

use std::sync::Arc;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

/// The strings library.
pub(crate) fn library() -> Library {
    let mut functions = search_functions();
    functions.extend(transform_functions());
    functions.extend(split_and_join_functions());
    functions.push(
        Function::new("format").overload(
            Overload::member(
                "string_format",
                &[Type::String, Type::list(Type::Dyn)],
                Type::String,
            )
            .with_impl(|args, budget| match args {
                [Value::String(template), Value::List(values)] => {
                    format::format(template, values, budget)
                }
                _ => Err(mismatch("format", args)),
            }),
        ),
    );
    Library::new("strings", functions)
}

/// `charAt`, `indexOf`, `lastIndexOf` and `substring`: the functions that take indexes.
fn search_functions() -> Vec<Function> {
    vec![
        Function::new("charAt").overload(
            Overload::member(
                "string_char_at_int",
                &[Type::String, Type::Int],
                Type::String,
            )
            .with_impl(|args, budget| match args {
                [Value::String(text), Value::Int(index)] => char_at(text, *index, budget),
                _ => Err(mismatch("charAt", args)),
            }),
        ),
        Function::new("indexOf")
            .overload(
                Overload::member(
                    "string_index_of_string",
                    &[Type::String, Type::String],
                    Type::Int,
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::String(needle)] => {
                        index_of(text, needle, None, budget)
                    }
                    _ => Err(mismatch("indexOf", args)),
                }),
            )
            .overload(
                Overload::member(
                    "string_index_of_string_int",
                    &[Type::String, Type::String, Type::Int],
                    Type::Int,
                )
                .with_impl(|args, budget| match args {
                    [
                        Value::String(text),
                        Value::String(needle),
                        Value::Int(offset),
                    ] => index_of(text, needle, Some(*offset), budget),
                    _ => Err(mismatch("indexOf", args)),
                }),
            ),
        Function::new("lastIndexOf")
            .overload(
                Overload::member(
                    "string_last_index_of_string",
                    &[Type::String, Type::String],
                    Type::Int,
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::String(needle)] => {
                        last_index_of(text, needle, None, budget)
                    }
                    _ => Err(mismatch("lastIndexOf", args)),
                }),
            )
            .overload(
                Overload::member(
                    "string_last_index_of_string_int",
                    &[Type::String, Type::String, Type::Int],
                    Type::Int,
                )
                .with_impl(|args, budget| match args {
                    [
                        Value::String(text),
                        Value::String(needle),
                        Value::Int(offset),
                    ] => last_index_of(text, needle, Some(*offset), budget),
                    _ => Err(mismatch("lastIndexOf", args)),
                }),
            ),
        Function::new("substring")
            .overload(
                Overload::member(
                    "string_substring_int",
                    &[Type::String, Type::Int],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::Int(start)] => {
                        substring(text, *start, None, budget)
                    }
                    _ => Err(mismatch("substring", args)),
                }),
            )
            .overload(
                Overload::member(
                    "string_substring_int_int",
                    &[Type::String, Type::Int, Type::Int],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::Int(start), Value::Int(end)] => {
                        substring(text, *start, Some(*end), budget)
                    }
                    _ => Err(mismatch("substring", args)),
                }),
            ),
    ]
}

/// `lowerAscii`, `upperAscii`, `trim`, `reverse`, `replace` and `strings.quote`: the functions
/// that map one string to another.
fn transform_functions() -> Vec<Function> {
    let unary = |name: &'static str, id: &str, transform: fn(&str) -> String| {
        Function::new(name).overload(
            Overload::member(id, &[Type::String], Type::String).with_impl(move |args, budget| {
                match args {
                    [Value::String(text)] => transform_charged(text, transform, budget),
                    _ => Err(mismatch(name, args)),
                }
            }),
        )
    };
    vec![
        unary("lowerAscii", "string_lower_ascii", |text| {
            text.to_ascii_lowercase()
        }),
        unary("upperAscii", "string_upper_ascii", |text| {
            text.to_ascii_uppercase()
        }),
        unary("trim", "string_trim", |text| text.trim().to_string()),
        unary("reverse", "string_reverse", |text| {
            text.chars().rev().collect()
        }),
        Function::new("strings.quote").overload(
            Overload::global("strings_quote", &[Type::String], Type::String).with_impl(
                |args, budget| match args {
                    [Value::String(text)] => transform_charged(text, quote, budget),
                    _ => Err(mismatch("strings.quote", args)),
                },
            ),
        ),
        Function::new("replace")
            .overload(
                Overload::member(
                    "string_replace_string_string",
                    &[Type::String, Type::String, Type::String],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::String(old), Value::String(new)] => {
                        replace(text, old, new, None, budget)
                    }
                    _ => Err(mismatch("replace", args)),
                }),
            )
            .overload(
                Overload::member(
                    "string_replace_string_string_int",
                    &[Type::String, Type::String, Type::String, Type::Int],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [
                        Value::String(text),
                        Value::String(old),
                        Value::String(new),
                        Value::Int(limit),
                    ] => replace(text, old, new, Some(*limit), budget),
                    _ => Err(mismatch("replace", args)),
                }),
            ),
    ]
}

/// `split` on strings and `join` on lists of strings.
fn split_and_join_functions() -> Vec<Function> {
    let list_of_strings = || Type::list(Type::String);
    vec![
        Function::new("split")
            .overload(
                Overload::member(
                    "string_split_string",
                    &[Type::String, Type::String],
                    list_of_strings(),
                )
                .with_impl(|args, budget| match args {
                    [Value::String(text), Value::String(separator)] => {
                        split(text, separator, None, budget)
                    }
                    _ => Err(mismatch("split", args)),
                }),
            )
            .overload(
                Overload::member(
                    "string_split_string_int",
                    &[Type::String, Type::String, Type::Int],
                    list_of_strings(),
                )
                .with_impl(|args, budget| match args {
                    [
                        Value::String(text),
                        Value::String(separator),
                        Value::Int(limit),
                    ] => split(text, separator, Some(*limit), budget),
                    _ => Err(mismatch("split", args)),
                }),
            ),
        Function::new("join")
            .overload(
                Overload::member("list_join", &[list_of_strings()], Type::String).with_impl(
                    |args, budget| match args {
                        [Value::List(items)] => join(items, "", budget),
                        _ => Err(mismatch("join", args)),
                    },
                ),
            )
            .overload(
                Overload::member(
                    "list_join_string",
                    &[list_of_strings(), Type::String],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [Value::List(items), Value::String(separator)] => {
                        join(items, separator, budget)
                    }
                    _ => Err(mismatch("join", args)),
                }),
            ),
    ]
}

/// The "no such overload" error for arguments an implementation cannot take (reached only
/// when a program was not type-checked).
fn mismatch(function: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(function, &args.iter().collect::<Vec<_>>())
}

fn index_out_of_range(function: &str, index: i64) -> EvalError {
    EvalError::invalid_argument(function, format!("index out of range: {index}"))
}

/// A code-point index into a string of `size` code points: it may be `size` itself (just
/// past the last code point) but no more, and never negative.
fn checked_index(function: &str, index: i64, size: usize) -> EvalResult<usize> {
    usize::try_from(index)
        .ok()
        .filter(|index| *index <= size)
        .ok_or_else(|| index_out_of_range(function, index))
}

/// The byte offset of the code point at `index`, or the text's length when `index` is the
/// number of code points (or more).
fn byte_offset(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(offset, _)| offset)
}

fn code_points(text: &str) -> usize {
    text.chars().count()
}

/// A count or index as a CEL int. Strings and lists cannot hold more than `isize::MAX` items,
/// so the conversion never saturates in practice.
fn int(count: usize) -> Value {
    Value::Int(i64::try_from(count).unwrap_or(i64::MAX))
}

fn string(text: String) -> Value {
    Value::String(Arc::from(text))
}

/// Runs a string-to-string transform, charging for the bytes read and written.
fn transform_charged(
    text: &str,
    transform: fn(&str) -> String,
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len()))?;
    let result = transform(text);
    budget.charge(traversal_cost(result.len()))?;
    Ok(string(result))
}

/// `text.charAt(index)`: the code point at `index`, or `""` at the end of the string.
fn char_at(text: &str, index: i64, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len()))?;
    let index = checked_index("charAt", index, code_points(text))?;
    Ok(string(
        text.chars()
            .nth(index)
            .map(String::from)
            .unwrap_or_default(),
    ))
}

/// `text.indexOf(needle[, offset])`: the code-point index of the first match at or after
/// `offset`, or -1. The empty needle matches at `offset`.
fn index_of(
    text: &str,
    needle: &str,
    offset: Option<i64>,
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len() + needle.len()))?;
    let start = match offset {
        Some(offset) => checked_index("indexOf", offset, code_points(text))?,
        None => 0,
    };
    if needle.is_empty() {
        return Ok(int(start));
    }
    let start_byte = byte_offset(text, start);
    let rest = &text[start_byte..];
    Ok(match rest.find(needle) {
        Some(found) => int(start + code_points(&rest[..found])),
        None => Value::Int(-1),
    })
}

/// `text.lastIndexOf(needle[, offset])`: the code-point index of the last match that starts
/// at or before `offset` (default: the end of the string), or -1. The empty needle matches
/// at `offset`.
fn last_index_of(
    text: &str,
    needle: &str,
    offset: Option<i64>,
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len() + needle.len()))?;
    let size = code_points(text);
    let last_start = match offset {
        Some(offset) => checked_index("lastIndexOf", offset, size)?,
        None => size,
    };
    if needle.is_empty() {
        return Ok(int(last_start));
    }
    let needle_size = code_points(needle);
    let Some(latest_fit) = size.checked_sub(needle_size) else {
        return Ok(Value::Int(-1));
    };
    // A match starting at or before `start` ends at or before `start + needle_size`.
    let end_byte = byte_offset(text, last_start.min(latest_fit) + needle_size);
    let window = &text[..end_byte];
    Ok(match window.rfind(needle) {
        Some(found) => int(code_points(&window[..found])),
        None => Value::Int(-1),
    })
}

/// `text.substring(start[, end])`: the code points from `start` up to (not including) `end`.
fn substring(text: &str, start: i64, end: Option<i64>, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len()))?;
    if let Some(end) = end
        && start > end
    {
        return Err(EvalError::invalid_argument(
            "substring",
            format!("invalid substring range. start: {start}, end: {end}"),
        ));
    }
    let size = code_points(text);
    let start = checked_index("substring", start, size)?;
    let end = match end {
        Some(end) => checked_index("substring", end, size)?,
        None => size,
    };
    let start_byte = byte_offset(text, start);
    let end_byte = start_byte + byte_offset(&text[start_byte..], end - start);
    let result = &text[start_byte..end_byte];
    budget.charge(traversal_cost(result.len()))?;
    Ok(Value::string(result))
}

/// What `split` charges per piece: a new string, allocated.
const PIECE_COST: u64 = 2;

/// A replacement or split limit: negative means "no limit".
fn limit(count: Option<i64>) -> usize {
    match count {
        Some(count) => usize::try_from(count).unwrap_or(usize::MAX),
        None => usize::MAX,
    }
}

/// `text.replace(old, new[, limit])`: replaces the first `limit` matches of `old` (all when
/// the limit is negative or absent). The empty `old` matches before every code point and at
/// the end.
fn replace(
    text: &str,
    old: &str,
    new: &str,
    count: Option<i64>,
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len() + old.len()))?;
    let limit = limit(count);
    let matches = text.match_indices(old).take(limit).count();
    if matches == 0 {
        return Ok(Value::string(text));
    }
    // Charge for the result before building it: with many matches it can be far larger
    // than the input.
    let result_size =
        (text.len() - matches * old.len()).saturating_add(matches.saturating_mul(new.len()));
    budget.charge(traversal_cost(result_size))?;
    Ok(string(text.replacen(old, new, matches)))
}

/// `text.split(separator[, limit])`: at most `limit` pieces (all when negative or absent, none
/// when zero), the last holding the rest of the text. The empty separator splits between
/// code points.
fn split(
    text: &str,
    separator: &str,
    count: Option<i64>,
    budget: &mut Budget,
) -> EvalResult<Value> {
    budget.charge(traversal_cost(text.len() + separator.len()))?;
    let limit = limit(count);
    if limit == 0 {
        return Ok(Value::list(Vec::new()));
    }
    budget.charge(traversal_cost(text.len()))?;
    // Each piece is a new string, allocated: two units each, charged before it is made.
    let mut pieces = Vec::new();
    if separator.is_empty() {
        split_code_points(text, limit, &mut pieces, budget)?;
    } else {
        for piece in text.splitn(limit, separator) {
            budget.charge(PIECE_COST)?;
            pieces.push(Value::string(piece));
        }
    }
    Ok(Value::list(pieces))
}

/// Splits into single code points, the last piece holding whatever is left once `limit`
/// pieces are reached. The empty string gives no pieces at all.
fn split_code_points(
    text: &str,
    limit: usize,
    pieces: &mut Vec<Value>,
    budget: &mut Budget,
) -> EvalResult<()> {
    let mut rest = text;
    while let Some(first) = rest.chars().next() {
        budget.charge(PIECE_COST)?;
        if pieces.len() + 1 == limit {
            pieces.push(Value::string(rest));
            break;
        }
        let (piece, tail) = rest.split_at(first.len_utf8());
        pieces.push(Value::string(piece));
        rest = tail;
    }
    Ok(())
}

/// `list.join([separator])`: the strings of the list, with `separator` between them.
fn join(items: &[Value], separator: &str, budget: &mut Budget) -> EvalResult<Value> {
    budget.charge(traversal_cost(items.len()))?;
    let mut size = separator
        .len()
        .saturating_mul(items.len().saturating_sub(1));
    for item in items {
        match item {
            Value::String(text) => size = size.saturating_add(text.len()),
            other => return Err(EvalError::no_such_overload("join", &[other])),
        }
    }
    budget.charge(traversal_cost(size))?;
    let mut joined = String::with_capacity(size);
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            joined.push_str(separator);
        }
        if let Value::String(text) = item {
            joined.push_str(text);
        }
    }
    Ok(string(joined))
}

/// `strings.quote(text)`: the text in double quotes, with the characters that CEL string
/// literals escape written as escapes, so that printing it shows them.
fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests;
