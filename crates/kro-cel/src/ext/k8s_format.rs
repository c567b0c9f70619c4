//! The Kubernetes format library (`kubernetes.format`): `format.named(name)`,
//! `format.<name>()` and `<format>.validate(text)`, as
//! `k8s.io/apiserver/pkg/cel/library/format.go`. `validate` returns `optional.none()` for
//! valid text and otherwise the list of validation errors.
//!
//! Upstream kro does not enable this library, so it is not in
//! [`KRO_LIBRARIES`](crate::KRO_LIBRARIES).

mod validators;

pub use validators::is_go_date;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::cost::Budget;
use crate::error::EvalResult;
use crate::ext::{opaque_arg, string_arg};
use crate::functions::{Function, Library, Overload};
use crate::stdlib::optionals;
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The type name of format values.
const FORMAT_TYPE: &str = "kubernetes.NamedFormat";

/// A `kubernetes.NamedFormat` value: a named string validation.
#[derive(Clone, Copy)]
struct NamedFormat {
    /// The format's name in Kubernetes (`DNS1123Label`), which equality compares.
    name: &'static str,
    validate: fn(&str) -> Vec<String>,
    /// The length of the regular expression the validation amounts to, for cost.
    regex_size: usize,
}

impl fmt::Debug for NamedFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "format({:?})", self.name)
    }
}

impl OpaqueValue for NamedFormat {
    fn type_name(&self) -> &str {
        FORMAT_TYPE
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<NamedFormat>()
            .is_some_and(|other| other.name == self.name)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The regex size Kubernetes assumes for `uri` (govalidator's URL pattern).
const URL_REGEX_SIZE: usize = 1103;
/// The regex size Kubernetes assumes for `byte` (govalidator's base64 pattern).
const BASE64_REGEX_SIZE: usize = 84;

/// Every named format, under the name `format.named` and `format.<name>()` use.
fn formats() -> [(&'static str, NamedFormat); 13] {
    let format = |name, validate, regex_size| NamedFormat {
        name,
        validate,
        regex_size,
    };
    let date_time_size = validators::DATE_TIME_PATTERN.len();
    [
        (
            "dns1123Label",
            format("DNS1123Label", validators::dns1123_label, 30),
        ),
        (
            "dns1123Subdomain",
            format("DNS1123Subdomain", validators::dns1123_subdomain, 60),
        ),
        (
            "dns1035Label",
            format("DNS1035Label", validators::dns1035_label, 30),
        ),
        (
            "qualifiedName",
            format("QualifiedName", validators::qualified_name, 60),
        ),
        (
            "dns1123LabelPrefix",
            format(
                "DNS1123LabelPrefix",
                |text| validators::dns1123_label(&validators::mask_trailing_dash(text)),
                30,
            ),
        ),
        (
            "dns1123SubdomainPrefix",
            format(
                "DNS1123SubdomainPrefix",
                |text| validators::dns1123_subdomain(&validators::mask_trailing_dash(text)),
                60,
            ),
        ),
        (
            "dns1035LabelPrefix",
            format(
                "DNS1035LabelPrefix",
                |text| validators::dns1035_label(&validators::mask_trailing_dash(text)),
                30,
            ),
        ),
        (
            "labelValue",
            format("LabelValue", validators::label_value, 40),
        ),
        ("uri", format("URI", validators::uri, URL_REGEX_SIZE)),
        (
            "uuid",
            format("uuid", validators::uuid, validators::UUID_PATTERN.len()),
        ),
        (
            "byte",
            format("byte", validators::base64, BASE64_REGEX_SIZE),
        ),
        ("date", format("date", validators::date, date_time_size)),
        (
            "datetime",
            format("datetime", validators::datetime, date_time_size),
        ),
    ]
}

/// `format.validate(text)`, charging as Kubernetes estimates a regex match: a tenth of a
/// unit per byte of text times a quarter unit per byte of pattern.
fn validate(format: &Value, text: &Value, budget: &mut Budget) -> EvalResult<Value> {
    let format = opaque_arg::<NamedFormat>("validate", format)?;
    let text = string_arg("validate", text)?;
    let text_cost = (text.len() as u64 + 1).div_ceil(10);
    let pattern_cost = (format.regex_size as u64).div_ceil(4);
    budget.charge(text_cost.saturating_mul(pattern_cost))?;
    let errors = (format.validate)(text);
    if errors.is_empty() {
        return Ok(optionals::none());
    }
    Ok(optionals::some(Value::list(
        errors.into_iter().map(Value::from).collect(),
    )))
}

/// The format library.
pub(crate) fn library() -> Library {
    let format_type = || Type::opaque(FORMAT_TYPE);
    let mut functions = vec![
        Function::new("validate").overload(
            Overload::member(
                "format-validate",
                &[format_type(), Type::String],
                Type::optional(Type::list(Type::String)),
            )
            .with_impl(|args, budget| validate(&args[0], &args[1], budget)),
        ),
        Function::new("format.named").overload(
            Overload::global(
                "format-named",
                &[Type::String],
                Type::optional(format_type()),
            )
            .with_impl(|args, _| {
                let name = string_arg("format.named", &args[0])?;
                Ok(formats()
                    .into_iter()
                    .find(|(key, _)| *key == name)
                    .map_or_else(optionals::none, |(_, format)| {
                        optionals::some(Value::Opaque(Arc::new(format)))
                    }))
            }),
        ),
    ];
    for (key, format) in formats() {
        let name = format!("format.{key}");
        functions.push(
            Function::new(&name).overload(
                Overload::global(&name, &[], format_type())
                    .with_impl(move |_, _| Ok(Value::Opaque(Arc::new(format)))),
            ),
        );
    }
    Library::new("kubernetes.format", functions)
}

#[cfg(test)]
mod tests {
    use crate::ext::testing::{assert_evaluations, eval, is_rejected_for_overloads};
    use crate::{Budget, Value};

    #[test]
    fn named_formats_are_optional_and_comparable() {
        assert_evaluations(&[
            ("format.named('dns1123Label').hasValue()", Value::Bool(true)),
            ("format.named('nope').hasValue()", Value::Bool(false)),
            (
                "format.named('dns1123Label').value() == format.dns1123Label()",
                Value::Bool(true),
            ),
            (
                "format.dns1123Label() == format.dns1035Label()",
                Value::Bool(false),
            ),
            (
                "type(format.uuid()) == type(format.named('uri').value())",
                Value::Bool(true),
            ),
        ]);
    }

    #[test]
    fn validate_returns_none_or_the_errors() {
        let valid = [
            "format.dns1123Label().validate('my-label-name')",
            "format.dns1123Subdomain().validate('apiextensions.k8s.io')",
            "format.dns1035Label().validate('my-label-name')",
            "format.qualifiedName().validate('apiextensions.k8s.io/v1beta1')",
            "format.dns1123LabelPrefix().validate('my-label-prefix-')",
            "format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-')",
            "format.dns1035LabelPrefix().validate('my-label-prefix-')",
            "format.labelValue().validate('my_value')",
            "format.uri().validate('http://example.com')",
            "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')",
            "format.byte().validate('aGVsbG8=')",
            "format.date().validate('2021-01-01')",
            "format.datetime().validate('2021-01-01T00:00:00Z')",
        ];
        for text in valid {
            assert_eq!(eval(text), Value::Optional(None), "{text}");
        }
        let invalid = [
            ("format.dns1123Label().validate('my.name')", 1),
            ("format.dns1123Label().validate('UPPER')", 1),
            ("format.dns1035Label().validate('1abc')", 1),
            ("format.qualifiedName().validate('/name')", 1),
            ("format.labelValue().validate('-bad-')", 1),
            ("format.uri().validate('../relative')", 1),
            ("format.uuid().validate('not-a-uuid')", 1),
            ("format.byte().validate('!!')", 1),
            ("format.date().validate('2021-02-30')", 1),
            ("format.datetime().validate('yesterday')", 1),
        ];
        for (text, count) in invalid {
            let size = format!("{text}.value().size()");
            assert_eq!(eval(&size), Value::Int(count), "{text}");
        }
        assert_eq!(
            eval("format.dns1123Label().validate('my.name').value()"),
            Value::list(vec![Value::string("must not contain dots")])
        );
        assert_eq!(
            eval("format.uri().validate('../relative').value()[0]"),
            Value::string("parse \"../relative\": invalid URI for request")
        );
    }

    #[test]
    fn wrong_types_are_rejected_at_check_time() {
        for text in [
            "format.named(1)",
            "format.dns1123Label().validate(1)",
            "'abc'.validate('abc')",
            "format.dns1123Label(1)",
        ] {
            assert!(is_rejected_for_overloads(text), "{text}");
        }
    }

    #[test]
    fn validation_cost_grows_with_the_text_and_the_pattern() {
        let mut short = Budget::new(None);
        let mut long = Budget::new(None);
        let label = eval("format.dns1123Label()");
        let uri = eval("format.uri()");
        super::validate(&label, &Value::string("a"), &mut short).expect("unlimited");
        super::validate(&uri, &Value::string(&"a".repeat(100)), &mut long).expect("unlimited");
        assert_eq!(short.used(), 8);
        assert_eq!(long.used(), 11 * 276);
    }
}
