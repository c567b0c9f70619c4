//! The `| scale` and `| scaleSelector` markers on instance status values (horizontal scaling,
//! seed 002): `replicas: "${deployment.status.replicas} | scale"`.

use super::{Expression, TemplateError, find_expressions};

/// A marker after a status expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScaleMarker {
    /// `| scale`: the field holds the current replica count (an integer).
    Scale,
    /// `| scaleSelector`: the field holds the label selector of the replicas (a string).
    ScaleSelector,
}

impl ScaleMarker {
    /// The marker as written after `|`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScaleMarker::Scale => "scale",
            ScaleMarker::ScaleSelector => "scaleSelector",
        }
    }
}

/// A standalone expression followed by a scale marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleMarked {
    /// The expression; its offsets are in the whole string.
    pub expression: Expression,
    /// The marker.
    pub marker: ScaleMarker,
}

/// Splits a trailing `| scale` or `| scaleSelector` from a status value.
///
/// Returns `Some` only when the value is exactly one `${...}` starting at byte 0, then optional
/// whitespace, `|`, optional whitespace, the marker and optional whitespace. Anything else
/// (no marker, text before the expression, two expressions, an unknown marker, or
/// `integer | scale`, which is a SimpleSchema declaration) gives `None`, and the caller treats
/// the value as an ordinary template or declaration.
///
/// # Errors
///
/// The [`TemplateError`]s of [`find_expressions`] on the value.
pub fn split_scale_marker(value: &str) -> Result<Option<ScaleMarked>, TemplateError> {
    let expressions = find_expressions(value)?;
    let [expression] = expressions.as_slice() else {
        return Ok(None);
    };
    if expression.start != 0 {
        return Ok(None);
    }
    let Some(rest) = value[expression.end..].trim().strip_prefix('|') else {
        return Ok(None);
    };
    let marker = match rest.trim() {
        "scale" => ScaleMarker::Scale,
        "scaleSelector" => ScaleMarker::ScaleSelector,
        _ => return Ok(None),
    };
    Ok(Some(ScaleMarked {
        expression: expression.clone(),
        marker,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::TemplateErrorKind;

    #[test]
    fn scale_markers_split_only_from_one_leading_expression() {
        let cases: [(&str, Option<(&str, ScaleMarker)>); 12] = [
            (
                "${deployment.status.replicas} | scale",
                Some(("deployment.status.replicas", ScaleMarker::Scale)),
            ),
            (
                "${sel} | scaleSelector",
                Some(("sel", ScaleMarker::ScaleSelector)),
            ),
            ("${a}|scale", Some(("a", ScaleMarker::Scale))),
            ("${a}  |  scale  ", Some(("a", ScaleMarker::Scale))),
            (
                "${a || b ? 1 : 2} | scale",
                Some(("a || b ? 1 : 2", ScaleMarker::Scale)),
            ),
            ("${a}", None),
            ("integer | scale", None),
            ("x${a} | scale", None),
            ("${a}${b} | scale", None),
            ("${a} | scales", None),
            ("${a} scale", None),
            ("${a} | scale | scale", None),
        ];
        for (value, expected) in cases {
            let split = split_scale_marker(value).expect(value);
            let got = split
                .as_ref()
                .map(|marked| (marked.expression.cel.as_str(), marked.marker));
            assert_eq!(got, expected, "{value}");
        }
    }

    #[test]
    fn scale_marked_expression_keeps_its_offsets() {
        let marked = split_scale_marker("${x.y} | scale")
            .expect("valid")
            .expect("marked");
        assert_eq!((marked.expression.start, marked.expression.end), (0, 6));
        assert_eq!(marked.marker.as_str(), "scale");
    }

    #[test]
    fn nested_expression_before_a_marker_is_an_error() {
        let error = split_scale_marker("${a(${b})} | scale").expect_err("nested");
        assert!(matches!(
            error.kind,
            TemplateErrorKind::NestedExpression { outer_start: 0 }
        ));
    }
}
