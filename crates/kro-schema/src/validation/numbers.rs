//! Number keywords (`minimum`, `maximum`, `exclusive*`, `multipleOf`) and the range of numeric
//! formats (`int32`, `int64`, `float`), as kube-openapi's `numberValidator` checks them.
//!
//! Values are what Go decodes JSON into: an `int64` when the number is an integer that fits,
//! otherwise a `float64`. Integers compare against bounds truncated to integers; the bounds
//! themselves must fit the schema's numeric type, else kube-openapi reports that too and
//! compares as floats.

use std::cell::OnceCell;

use serde_json::{Number, Value};

use super::location::{Step, elements, openapi_name};
use super::outcome::{Code, Issue, Outcome};
use super::types::TypeList;
use crate::field_error::format_float;
use crate::openapi::Schema;

/// The largest integer a `float64` holds exactly (`2^53 - 1`).
const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;

/// A decoded JSON number, as Go holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn of(number: &Number) -> Num {
        match number.as_i64() {
            Some(int) => Num::Int(int),
            None => Num::Float(number.as_f64().unwrap_or(f64::NAN)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(int) => int as f64,
            Num::Float(float) => float,
        }
    }

    /// `strconv.FormatInt` / `strconv.FormatFloat(f, 'f', -1, 64)`.
    fn decimal(self) -> String {
        match self {
            Num::Int(int) => int.to_string(),
            Num::Float(float) => format!("{float}"),
        }
    }
}

/// `%v` of a Go `int64` or `float64`.
fn show(number: Num) -> String {
    match number {
        Num::Int(int) => int.to_string(),
        Num::Float(float) => format_float(float),
    }
}

/// swag's `IsFloat64AJSONInteger`: an integer within ±(2^53 - 1), allowing a relative error
/// of 1e-9 above zero (Go converts negative floats to `uint64` far away, so not below).
pub(super) fn is_json_integer(value: f64) -> bool {
    if !value.is_finite() || value.abs() > MAX_JSON_FLOAT {
        return false;
    }
    if value.fract() == 0.0 {
        return true;
    }
    if value < 0.0 {
        return false;
    }
    let truncated = value.trunc();
    if truncated == 0.0 {
        return false;
    }
    (value - truncated).abs() / (value + truncated) < 1e-9
}

/// The numeric type and format whose range values must fit: only for a single `integer`
/// (`int32`/`int64`) or `number` (`float`/`double`) type.
fn range_type<'a>(types: &TypeList, format: Option<&'a str>) -> (&'static str, &'a str) {
    match types.single() {
        Some("integer") => (
            "integer",
            format
                .filter(|f| matches!(*f, "int32" | "int64"))
                .unwrap_or(""),
        ),
        Some("number") => (
            "number",
            format
                .filter(|f| matches!(*f, "float" | "double"))
                .unwrap_or(""),
        ),
        _ => ("", ""),
    }
}

/// Where the number is; its name is rendered only when a message needs it.
struct At<'a, 'v> {
    steps: &'a [Step<'v>],
    name: OnceCell<String>,
}

impl At<'_, '_> {
    fn name(&self) -> &str {
        self.name.get_or_init(|| openapi_name(self.steps))
    }

    fn issue(&self, value: Value, message: String) -> Issue {
        Issue::validation(Code::Other, elements(self.steps), Some(value), message)
    }
}

/// `IsValueValidAgainstRange`: whether `value` converts to the type and format without loss.
fn range_error(
    value: Num,
    type_name: &str,
    format: &str,
    prefix: &str,
    at: &At<'_, '_>,
) -> Option<Issue> {
    let text = value.decimal();
    let fits = match (type_name, format) {
        ("integer", "int32") => text.parse::<i32>().is_ok(),
        ("integer", _) => text.parse::<i64>().is_ok(),
        ("number", "float") => text
            .parse::<f64>()
            .is_ok_and(|float| (float as f32).is_finite()),
        _ => true,
    };
    if fits {
        return None;
    }
    let name = at.name();
    Some(Issue::plain(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {name}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {name}")
    }))
}

/// Checks a number at `steps` against the number keywords of `schema`.
pub(super) fn check(
    schema: &Schema,
    types: &TypeList,
    format: Option<&str>,
    number: &Number,
    steps: &[Step<'_>],
) -> Outcome {
    let at = At {
        steps,
        name: OnceCell::new(),
    };
    let value = Num::of(number);
    let (type_name, range_format) = range_type(types, format);
    let range = |bound: Num, prefix: &str| range_error(bound, type_name, range_format, prefix, &at);
    let mut outcome = Outcome::default();
    push(&mut outcome, range(value, "Checked"));
    let json = || Value::Number(number.clone());

    if let Some(factor) = schema.multiple_of.as_ref().and_then(Number::as_f64) {
        match range(Num::Float(factor), "MultipleOf") {
            None => push(&mut outcome, multiple_of(value, factor, &at, &json)),
            Some(issue) => {
                outcome.add(issue);
                let value = Num::Float(value.as_f64());
                push(&mut outcome, multiple_of(value, factor, &at, &json));
            }
        }
    }
    let bounds = [
        (
            schema.minimum.as_ref(),
            schema.exclusive_minimum,
            "Minimum boundary",
        ),
        (
            schema.maximum.as_ref(),
            schema.exclusive_maximum,
            "Maximum boundary",
        ),
    ];
    for (bound, exclusive, prefix) in bounds {
        let Some(bound) = bound.and_then(Number::as_f64) else {
            continue;
        };
        let boundary = range(Num::Float(bound), prefix);
        let (compared, limit, shown) = compare(value, bound, boundary.is_none());
        push(&mut outcome, boundary);
        let is_minimum = prefix == "Minimum boundary";
        let relation = match (is_minimum, exclusive) {
            (true, true) if compared <= limit => "greater than",
            (true, false) if compared < limit => "greater than or equal to",
            (false, true) if compared >= limit => "less than",
            (false, false) if compared > limit => "less than or equal to",
            _ => continue,
        };
        let message = format!("{} in body should be {relation} {shown}", at.name());
        outcome.add(at.issue(json(), message));
    }
    outcome
}

/// The value and bound to compare, and the bound as the message shows it: integers against
/// the bound truncated to an integer when the bound fits the type, else both as floats.
fn compare(value: Num, bound: f64, native: bool) -> (f64, f64, String) {
    match value {
        Num::Int(int) if native => {
            let bound = bound as i64;
            (int as f64, bound as f64, bound.to_string())
        }
        _ => (value.as_f64(), bound, format_float(bound)),
    }
}

fn multiple_of(
    value: Num,
    factor: f64,
    at: &At<'_, '_>,
    json: &dyn Fn() -> Value,
) -> Option<Issue> {
    let not_positive = |shown: String| {
        let message = format!(
            "factor MultipleOf declared for {} must be positive: {shown}",
            at.name()
        );
        at.issue(serde_json::from_str(&shown).unwrap_or(Value::Null), message)
    };
    let not_multiple = |shown: String| {
        at.issue(
            json(),
            format!("{} in body should be a multiple of {shown}", at.name()),
        )
    };
    match value {
        Num::Int(int) => {
            let factor = factor as i64;
            if factor <= 0 {
                return Some(not_positive(factor.to_string()));
            }
            (int % factor != 0).then(|| not_multiple(show(Num::Int(factor))))
        }
        Num::Float(float) => {
            if factor <= 0.0 {
                return Some(not_positive(format_float(factor)));
            }
            let multiple = if factor < 1.0 {
                1.0 / factor * float
            } else {
                float / factor
            };
            (!is_json_integer(multiple)).then(|| not_multiple(format_float(factor)))
        }
    }
}

fn push(outcome: &mut Outcome, issue: Option<Issue>) {
    if let Some(issue) = issue {
        outcome.add(issue);
    }
}
