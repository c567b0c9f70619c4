//! Markers: the `key=value` settings after the first `|` of a field declaration.

use super::SimpleSchemaErrorKind;

/// The markers SimpleSchema knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// `required=true|false`
    Required,
    /// `default=<value>`
    Default,
    /// `description="..."`
    Description,
    /// `enum="a,b,c"`
    Enum,
    /// `minimum=<number>`
    Minimum,
    /// `maximum=<number>`
    Maximum,
    /// `pattern="<regex>"`
    Pattern,
    /// `minLength=<n>`
    MinLength,
    /// `maxLength=<n>`
    MaxLength,
    /// `uniqueItems=true|false`
    UniqueItems,
    /// `minItems=<n>`
    MinItems,
    /// `maxItems=<n>`
    MaxItems,
    /// `listType=atomic|set|map`
    ListType,
    /// `listMapKey=<field>` (repeatable)
    ListMapKey,
    /// `immutable=true|false`
    Immutable,
    /// `validation="<CEL>"`
    Validation,
    /// `scale`: the replica count of the scale subresource (spec and status).
    Scale,
    /// `scaleSelector`: the status field holding the pod label selector.
    ScaleSelector,
}

impl MarkerKind {
    fn from_key(key: &str) -> Option<MarkerKind> {
        Some(match key {
            "required" => MarkerKind::Required,
            "default" => MarkerKind::Default,
            "description" => MarkerKind::Description,
            "enum" => MarkerKind::Enum,
            "minimum" => MarkerKind::Minimum,
            "maximum" => MarkerKind::Maximum,
            "pattern" => MarkerKind::Pattern,
            "minLength" => MarkerKind::MinLength,
            "maxLength" => MarkerKind::MaxLength,
            "uniqueItems" => MarkerKind::UniqueItems,
            "minItems" => MarkerKind::MinItems,
            "maxItems" => MarkerKind::MaxItems,
            "listType" => MarkerKind::ListType,
            "listMapKey" => MarkerKind::ListMapKey,
            "immutable" => MarkerKind::Immutable,
            "validation" => MarkerKind::Validation,
            "scale" => MarkerKind::Scale,
            "scaleSelector" => MarkerKind::ScaleSelector,
            _ => return None,
        })
    }

    /// The marker's name as written.
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Required => "required",
            MarkerKind::Default => "default",
            MarkerKind::Description => "description",
            MarkerKind::Enum => "enum",
            MarkerKind::Minimum => "minimum",
            MarkerKind::Maximum => "maximum",
            MarkerKind::Pattern => "pattern",
            MarkerKind::MinLength => "minLength",
            MarkerKind::MaxLength => "maxLength",
            MarkerKind::UniqueItems => "uniqueItems",
            MarkerKind::MinItems => "minItems",
            MarkerKind::MaxItems => "maxItems",
            MarkerKind::ListType => "listType",
            MarkerKind::ListMapKey => "listMapKey",
            MarkerKind::Immutable => "immutable",
            MarkerKind::Validation => "validation",
            MarkerKind::Scale => "scale",
            MarkerKind::ScaleSelector => "scaleSelector",
        }
    }

    /// Markers written without `=value`.
    fn is_flag(self) -> bool {
        matches!(self, MarkerKind::Scale | MarkerKind::ScaleSelector)
    }
}

/// One marker with its (unquoted, unescaped) value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Which marker.
    pub kind: MarkerKind,
    /// Its value; empty for flag markers.
    pub value: String,
}

/// Parses a marker list: space-separated `key=value` pairs (or the flags `scale` and
/// `scaleSelector`). Values may be double-quoted (with `\"` and `\\` escapes) and may hold
/// balanced `{}`/`[]` with spaces, so `default={"a": 1}` works.
///
/// The text must end with a marker: an empty text, or one ending in white space, is
/// `MissingMarker`, as upstream's parser has it.
///
/// # Errors
/// `UnknownMarker`, `MarkerWithoutValue`, `EmptyMarkerKey`, `UnclosedQuote`, `UnbalancedBrackets`,
/// `MissingMarker`.
pub fn parse_markers(text: &str) -> Result<Vec<Marker>, SimpleSchemaErrorKind> {
    let mut markers = Vec::new();
    let mut current: Option<MarkerKind> = None;
    let mut buffer = String::new();
    let mut in_quotes = false;
    let mut escaped = false;
    let mut brackets: i32 = 0;
    let mut finish = |current: &mut Option<MarkerKind>,
                      buffer: &mut String|
     -> Result<(), SimpleSchemaErrorKind> {
        match current.take() {
            Some(kind) => markers.push(Marker {
                kind,
                value: process_value(buffer),
            }),
            None => {
                let key = buffer.trim();
                if !key.is_empty() {
                    match MarkerKind::from_key(key) {
                        Some(kind) if kind.is_flag() => markers.push(Marker {
                            kind,
                            value: String::new(),
                        }),
                        Some(_) => {
                            return Err(SimpleSchemaErrorKind::MarkerWithoutValue(key.to_string()));
                        }
                        None => return Err(SimpleSchemaErrorKind::UnknownMarker(key.to_string())),
                    }
                }
            }
        }
        buffer.clear();
        Ok(())
    };
    for character in text.chars() {
        match character {
            '=' if current.is_none() && !in_quotes && brackets == 0 => {
                let key = buffer.trim();
                if key.is_empty() {
                    return Err(SimpleSchemaErrorKind::EmptyMarkerKey);
                }
                let kind = MarkerKind::from_key(key)
                    .ok_or_else(|| SimpleSchemaErrorKind::UnknownMarker(key.to_string()))?;
                current = Some(kind);
                buffer.clear();
            }
            '"' if !escaped => {
                in_quotes = !in_quotes;
                buffer.push(character);
            }
            '\\' if in_quotes && !escaped => {
                escaped = true;
                buffer.push(character);
            }
            '{' | '[' if !in_quotes => {
                brackets += 1;
                buffer.push(character);
            }
            '}' | ']' if !in_quotes => {
                brackets -= 1;
                if brackets < 0 {
                    return Err(SimpleSchemaErrorKind::UnbalancedBrackets);
                }
                buffer.push(character);
            }
            c if c.is_whitespace() && !in_quotes && brackets == 0 => {
                finish(&mut current, &mut buffer)?;
            }
            c => {
                escaped = false;
                buffer.push(c);
            }
        }
    }
    if in_quotes {
        return Err(SimpleSchemaErrorKind::UnclosedQuote);
    }
    if current.is_none() && buffer.trim().is_empty() {
        return Err(SimpleSchemaErrorKind::MissingMarker);
    }
    if brackets > 0 {
        return Err(SimpleSchemaErrorKind::UnbalancedBrackets);
    }
    finish(&mut current, &mut buffer)?;
    Ok(markers)
}

fn process_value(value: &str) -> String {
    let value = value.trim();
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) if value.len() >= 2 => unescape(inner),
        _ => value.to_string(),
    }
}

/// Removes the backslash of `\"` and `\\`; other escapes are kept as written (so regular
/// expressions such as `\d` survive).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for character in text.chars() {
        if escaped {
            if character != '"' && character != '\\' {
                out.push('\\');
            }
            out.push(character);
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else {
            out.push(character);
        }
    }
    if escaped {
        out.push('\\');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(MarkerKind, String)> {
        parse_markers(text)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .into_iter()
            .map(|marker| (marker.kind, marker.value))
            .collect()
    }

    #[test]
    fn values_may_be_quoted_or_hold_json() {
        assert_eq!(
            parsed(r#"required=true description="My \"quoted\" name" default={"a": [1, 2]}"#),
            vec![
                (MarkerKind::Required, "true".into()),
                (MarkerKind::Description, "My \"quoted\" name".into()),
                (MarkerKind::Default, "{\"a\": [1, 2]}".into()),
            ]
        );
        assert_eq!(
            parsed(r#"pattern="^[\\w\\.-]+@\d$""#),
            vec![(MarkerKind::Pattern, r"^[\w\.-]+@\d$".into())]
        );
    }

    #[test]
    fn scale_markers_take_no_value() {
        assert_eq!(parsed("scale"), vec![(MarkerKind::Scale, String::new())]);
        assert_eq!(
            parsed("scaleSelector description=x"),
            vec![
                (MarkerKind::ScaleSelector, String::new()),
                (MarkerKind::Description, "x".into())
            ]
        );
    }

    #[test]
    fn malformed_markers_are_rejected() {
        let cases = [
            (
                "bogus=1",
                SimpleSchemaErrorKind::UnknownMarker("bogus".into()),
            ),
            (
                "required",
                SimpleSchemaErrorKind::MarkerWithoutValue("required".into()),
            ),
            ("=1", SimpleSchemaErrorKind::EmptyMarkerKey),
            ("description=\"open", SimpleSchemaErrorKind::UnclosedQuote),
            (
                "default={\"a\": 1",
                SimpleSchemaErrorKind::UnbalancedBrackets,
            ),
            ("default=]", SimpleSchemaErrorKind::UnbalancedBrackets),
            ("", SimpleSchemaErrorKind::MissingMarker),
            (" ", SimpleSchemaErrorKind::MissingMarker),
            ("required=true ", SimpleSchemaErrorKind::MissingMarker),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_markers(text), Err(expected), "{text}");
        }
    }
}
