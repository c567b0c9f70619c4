//! The Kubernetes semver library (`kubernetes.semver`): `semver()`, `isSemver()` (both with
//! an optional `normalize` flag), `major()`, `minor()`, `patch()`, `compareTo()`,
//! `isGreaterThan()` and `isLessThan()` on `kubernetes.Semver` values, as
//! `k8s.io/apiserver/pkg/cel/library/semverlib.go`, which parses with `blang/semver/v4`.

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::ext::{opaque_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The type name of semantic version values.
const SEMVER_TYPE: &str = "kubernetes.Semver";

/// One dot-separated identifier of a pre-release.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prerelease {
    /// All digits, without leading zeros.
    Number(u64),
    /// Letters, digits and hyphens.
    Text(String),
}

impl Prerelease {
    /// Numbers sort before text; numbers numerically; text byte-wise.
    fn compare(&self, other: &Prerelease) -> Ordering {
        match (self, other) {
            (Prerelease::Number(a), Prerelease::Number(b)) => a.cmp(b),
            (Prerelease::Number(_), Prerelease::Text(_)) => Ordering::Less,
            (Prerelease::Text(_), Prerelease::Number(_)) => Ordering::Greater,
            (Prerelease::Text(a), Prerelease::Text(b)) => a.cmp(b),
        }
    }
}

impl fmt::Display for Prerelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prerelease::Number(number) => write!(f, "{number}"),
            Prerelease::Text(text) => f.write_str(text),
        }
    }
}

/// A `kubernetes.Semver` value.
#[derive(Clone, PartialEq, Eq)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    prerelease: Vec<Prerelease>,
    build: Vec<String>,
}

impl Semver {
    /// Semantic version precedence; build metadata does not count.
    fn compare(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.prerelease.is_empty(), other.prerelease.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self
                .prerelease
                .iter()
                .zip(&other.prerelease)
                .map(|(a, b)| a.compare(b))
                .find(|ordering| ordering.is_ne())
                .unwrap_or_else(|| self.prerelease.len().cmp(&other.prerelease.len())),
        }
    }
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (index, identifier) in self.prerelease.iter().enumerate() {
            f.write_str(if index == 0 { "-" } else { "." })?;
            write!(f, "{identifier}")?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build.join("."))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "semver(\"{self}\")")
    }
}

impl OpaqueValue for Semver {
    fn type_name(&self) -> &str {
        SEMVER_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Semver>()
            .is_some_and(|other| self.compare(other).is_eq())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.to_string()))
    }
}

fn is_numeric(text: &str) -> bool {
    text.bytes().all(|byte| byte.is_ascii_digit())
}

fn is_alphanumeric(text: &str) -> bool {
    text.bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

/// A major, minor or patch number: digits, no leading zero, at most 2^64-1.
fn parse_number(part: &str, role: &str) -> Result<u64, String> {
    if !is_numeric(part) {
        return Err(format!(
            "Invalid character(s) found in {role} number {part:?}"
        ));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(format!(
            "{role} number must not contain leading zeroes {part:?}"
        ));
    }
    part.parse()
        .map_err(|_| format!("invalid {role} number {part:?}"))
}

/// Parses a version as `semver.Parse` (blang/semver v4) does.
fn parse_semver(text: &str) -> Result<Semver, String> {
    if text.is_empty() {
        return Err("Version string empty".to_string());
    }
    let parts: Vec<&str> = text.splitn(3, '.').collect();
    let [major, minor, rest] = parts.as_slice() else {
        return Err("No Major.Minor.Patch elements found".to_string());
    };
    let major = parse_number(major, "Major")?;
    let minor = parse_number(minor, "Minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (*rest, None),
    };
    let (patch, prerelease) = match rest.split_once('-') {
        Some((patch, prerelease)) => (patch, Some(prerelease)),
        None => (rest, None),
    };
    let patch = parse_number(patch, "Patch")?;
    let prerelease = prerelease
        .map(|identifiers| identifiers.split('.').map(parse_prerelease).collect())
        .transpose()?
        .unwrap_or_default();
    let build = build
        .map(|identifiers| {
            identifiers
                .split('.')
                .map(|identifier| {
                    if identifier.is_empty() {
                        Err("Build meta data is empty".to_string())
                    } else if !is_alphanumeric(identifier) {
                        Err(format!(
                            "Invalid character(s) found in build meta data {identifier:?}"
                        ))
                    } else {
                        Ok(identifier.to_string())
                    }
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Semver {
        major,
        minor,
        patch,
        prerelease,
        build,
    })
}

fn parse_prerelease(identifier: &str) -> Result<Prerelease, String> {
    if identifier.is_empty() {
        return Err("Prerelease is empty".to_string());
    }
    if is_numeric(identifier) {
        if identifier.len() > 1 && identifier.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {identifier:?}"
            ));
        }
        return identifier
            .parse()
            .map(Prerelease::Number)
            .map_err(|_| format!("invalid prerelease number {identifier:?}"));
    }
    if is_alphanumeric(identifier) {
        return Ok(Prerelease::Text(identifier.to_string()));
    }
    Err(format!(
        "Invalid character(s) found in prerelease {identifier:?}"
    ))
}

/// Parses after normalizing as Kubernetes does: drop one leading `v`, strip leading zeros
/// from each of the first three dot-separated parts, and fill a missing minor or patch
/// with `0` (a short version may not carry pre-release or build data).
fn normalize_and_parse(text: &str) -> Result<Semver, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text
        .splitn(3, '.')
        .map(|part| {
            if part.len() <= 1 {
                return part.to_string();
            }
            let trimmed = part.trim_start_matches('0');
            if trimmed.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        parts.resize(3, "0".to_string());
    }
    parse_semver(&parts.join("."))
}

/// `semver(text[, normalize])`, charging for the text walked.
fn parse_charged(
    function: &str,
    text: &Value,
    normalize: bool,
    budget: &mut Budget,
) -> EvalResult<Result<Semver, String>> {
    let text = string_arg(function, text)?;
    budget.charge(traversal_cost(text.len()))?;
    Ok(if normalize {
        normalize_and_parse(text)
    } else {
        parse_semver(text)
    })
}

fn bool_arg(function: &str, value: &Value) -> EvalResult<bool> {
    match value {
        Value::Bool(flag) => Ok(*flag),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

fn to_semver(text: &Value, normalize: bool, budget: &mut Budget) -> EvalResult<Value> {
    match parse_charged("semver", text, normalize, budget)? {
        Ok(version) => Ok(Value::Opaque(Arc::new(version))),
        Err(reason) => Err(EvalError::invalid_argument("semver", reason)),
    }
}

fn is_semver(text: &Value, normalize: bool, budget: &mut Budget) -> EvalResult<Value> {
    Ok(Value::Bool(
        parse_charged("isSemver", text, normalize, budget)?.is_ok(),
    ))
}

fn comparison(
    name: &'static str,
    id: &str,
    result: Type,
    apply: fn(Ordering) -> Value,
) -> Function {
    let semver = Type::opaque(SEMVER_TYPE);
    Function::new(name).overload(
        Overload::member(id, &[semver.clone(), semver], result).with_impl(move |args, _| {
            let a = opaque_arg::<Semver>(name, &args[0])?;
            let b = opaque_arg::<Semver>(name, &args[1])?;
            Ok(apply(a.compare(b)))
        }),
    )
}

fn component(name: &'static str, id: &str, get: fn(&Semver) -> u64) -> Function {
    Function::new(name).overload(
        Overload::member(id, &[Type::opaque(SEMVER_TYPE)], Type::Int).with_impl(move |args, _| {
            // Kubernetes converts the unsigned component to int64, wrapping.
            Ok(Value::Int(get(opaque_arg::<Semver>(name, &args[0])?) as i64))
        }),
    )
}

/// The semver library.
pub(crate) fn library() -> Library {
    let semver = || Type::opaque(SEMVER_TYPE);
    Library::new(
        "kubernetes.semver",
        vec![
            Function::new("semver")
                .overload(
                    Overload::global("string_to_semver", &[Type::String], semver())
                        .with_impl(|args, budget| to_semver(&args[0], false, budget)),
                )
                .overload(
                    Overload::global(
                        "string_bool_to_semver",
                        &[Type::String, Type::Bool],
                        semver(),
                    )
                    .with_impl(|args, budget| {
                        to_semver(&args[0], bool_arg("semver", &args[1])?, budget)
                    }),
                ),
            Function::new("isSemver")
                .overload(
                    Overload::global("is_semver_string", &[Type::String], Type::Bool)
                        .with_impl(|args, budget| is_semver(&args[0], false, budget)),
                )
                .overload(
                    Overload::global(
                        "is_semver_string_bool",
                        &[Type::String, Type::Bool],
                        Type::Bool,
                    )
                    .with_impl(|args, budget| {
                        is_semver(&args[0], bool_arg("isSemver", &args[1])?, budget)
                    }),
                ),
            comparison("isGreaterThan", "semver_is_greater_than", Type::Bool, |o| {
                Value::Bool(o.is_gt())
            }),
            comparison("isLessThan", "semver_is_less_than", Type::Bool, |o| {
                Value::Bool(o.is_lt())
            }),
            comparison("compareTo", "semver_compare_to", Type::Int, |o| {
                Value::Int(o as i64)
            }),
            component("major", "semver_major", |v| v.major),
            component("minor", "semver_minor", |v| v.minor),
            component("patch", "semver_patch", |v| v.patch),
        ],
    )
}

#[cfg(test)]
mod tests {
    use crate::error::EvalErrorKind;
    use crate::ext::testing::{assert_evaluations, eval, eval_error, is_rejected_for_overloads};
    use crate::{Value, to_json};

    #[test]
    fn versions_parse_compare_and_expose_components() {
        assert_evaluations(&[
            ("semver('1.2.3').major()", Value::Int(1)),
            ("semver('1.2.3').minor()", Value::Int(2)),
            ("semver('1.2.3').patch()", Value::Int(3)),
            ("semver('1.2.3').compareTo(semver('1.2.3'))", Value::Int(0)),
            ("semver('1.2.3').compareTo(semver('2.0.0'))", Value::Int(-1)),
            ("semver('1.2.3').compareTo(semver('0.1.2'))", Value::Int(1)),
            (
                "semver('1.2.3').isGreaterThan(semver('1.2.2'))",
                Value::Bool(true),
            ),
            (
                "semver('1.2.3').isLessThan(semver('1.10.0'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))",
                Value::Bool(true),
            ),
            (
                "semver('1.0.0+build.1') == semver('1.0.0+build.2')",
                Value::Bool(true),
            ),
            ("semver('1.0.0') == semver('1.0.1')", Value::Bool(false)),
            ("isSemver('1.0.0')", Value::Bool(true)),
            (
                "isSemver('0.1.0-alpha.1+exp.sha.5114f85')",
                Value::Bool(true),
            ),
            ("isSemver('hello')", Value::Bool(false)),
            ("isSemver('v1.0')", Value::Bool(false)),
            ("isSemver('1.0')", Value::Bool(false)),
            ("isSemver('01.0.0')", Value::Bool(false)),
            ("isSemver('1.0.0-01')", Value::Bool(false)),
            ("isSemver('1.0.0-')", Value::Bool(false)),
            ("isSemver('1.0.0+')", Value::Bool(false)),
            ("isSemver('1.0.0-a_b')", Value::Bool(false)),
            ("isSemver('v1.0', true)", Value::Bool(true)),
            ("isSemver('01.01.01', true)", Value::Bool(true)),
            ("isSemver('1.0-alpha', true)", Value::Bool(false)),
            (
                "semver('v1.0.0', true) == semver('1.0.0')",
                Value::Bool(true),
            ),
            ("semver('1.0', true) == semver('1.0.0')", Value::Bool(true)),
            (
                "semver('01.01.01', true) == semver('1.1.1')",
                Value::Bool(true),
            ),
            ("semver('1.2.3', false).patch()", Value::Int(3)),
            ("semver('18446744073709551615.0.0').major()", Value::Int(-1)),
        ]);
    }

    #[test]
    fn invalid_versions_are_runtime_errors() {
        for text in [
            "semver('200K')",
            "semver('Three')",
            "semver('1.2')",
            "semver('')",
            "semver('1.2.3.4')",
            "semver('18446744073709551616.0.0')",
            "semver('1.0-rc.1', true)",
        ] {
            let error = eval_error(text);
            assert!(
                matches!(error.kind(), EvalErrorKind::InvalidArgument { .. }),
                "{text}"
            );
        }
    }

    #[test]
    fn wrong_types_are_rejected_at_check_time() {
        for text in [
            "semver(1)",
            "isSemver('1.0.0', 'yes')",
            "semver('1.0.0').isGreaterThan('1.0.0')",
            "semver('1.0.0').major(1)",
            "semver('1.0.0').compareTo(quantity('1'))",
        ] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }

    #[test]
    fn versions_convert_to_json_strings() {
        let version = eval("semver('v01.2', true)");
        assert_eq!(
            to_json(&version).expect("has a JSON form"),
            serde_json::json!("1.2.0")
        );
        let full = eval("semver('1.0.0-rc.1+build.5')");
        assert_eq!(
            to_json(&full).expect("has a JSON form"),
            serde_json::json!("1.0.0-rc.1+build.5")
        );
    }
}
