//! Type expressions of SimpleSchema: `string`, `integer`, `boolean`, `float`, `object`, `[]T`,
//! `map[string]T` and names of custom types.

use super::SimpleSchemaErrorKind;

/// The deepest a type expression may nest (`[][]...`), as upstream.
pub const MAX_TYPE_DEPTH: usize = 16;

/// A parsed type expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeExpr {
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `boolean`
    Boolean,
    /// `float` (OpenAPI `number`)
    Float,
    /// `object`: any object, unknown fields preserved.
    Object,
    /// `[]T`
    List(Box<TypeExpr>),
    /// `map[string]T`
    Map(Box<TypeExpr>),
    /// A custom type from `types:`.
    Custom(String),
}

impl TypeExpr {
    /// The OpenAPI `type` of this expression, when it is not a custom type.
    pub fn openapi_type(&self) -> Option<&'static str> {
        Some(match self {
            TypeExpr::String => "string",
            TypeExpr::Integer => "integer",
            TypeExpr::Boolean => "boolean",
            TypeExpr::Float => "number",
            TypeExpr::Object | TypeExpr::Map(_) => "object",
            TypeExpr::List(_) => "array",
            TypeExpr::Custom(_) => return None,
        })
    }

    /// Every custom type this expression refers to.
    pub fn custom_types(&self) -> Vec<&str> {
        match self {
            TypeExpr::Custom(name) => vec![name.as_str()],
            TypeExpr::List(inner) | TypeExpr::Map(inner) => inner.custom_types(),
            _ => Vec::new(),
        }
    }
}

/// Parses a type expression.
///
/// # Errors
/// `InvalidType` for malformed `[]`/`map[..]` syntax, `UnsupportedMapKey` for keys other than
/// `string`, `NestingTooDeep` past [`MAX_TYPE_DEPTH`].
pub fn parse_type(text: &str) -> Result<TypeExpr, SimpleSchemaErrorKind> {
    parse_at_depth(text.trim(), 0)
}

fn parse_at_depth(text: &str, depth: usize) -> Result<TypeExpr, SimpleSchemaErrorKind> {
    // Upstream trims every level: `[] string` and `map[string] integer` are fine.
    let text = text.trim();
    if depth > MAX_TYPE_DEPTH {
        return Err(SimpleSchemaErrorKind::NestingTooDeep {
            limit: MAX_TYPE_DEPTH,
        });
    }
    if let Some(element) = text.strip_prefix("[]") {
        if element.is_empty() {
            return Err(SimpleSchemaErrorKind::InvalidType(text.to_string()));
        }
        return Ok(TypeExpr::List(Box::new(parse_at_depth(
            element,
            depth + 1,
        )?)));
    }
    if let Some(rest) = text.strip_prefix("map[") {
        let (key, value) =
            split_map(rest).ok_or_else(|| SimpleSchemaErrorKind::InvalidType(text.to_string()))?;
        if value.is_empty() {
            return Err(SimpleSchemaErrorKind::InvalidType(text.to_string()));
        }
        if key != "string" {
            return Err(SimpleSchemaErrorKind::UnsupportedMapKey(key.to_string()));
        }
        return Ok(TypeExpr::Map(Box::new(parse_at_depth(value, depth + 1)?)));
    }
    Ok(match text {
        "string" => TypeExpr::String,
        "integer" => TypeExpr::Integer,
        "boolean" => TypeExpr::Boolean,
        "float" => TypeExpr::Float,
        "object" => TypeExpr::Object,
        // Any other text names a custom type, as upstream: `types:` keys are free text.
        "" => return Err(SimpleSchemaErrorKind::InvalidType(String::new())),
        name => TypeExpr::Custom(name.to_string()),
    })
}

/// Splits `K]V` (after `map[`) at the `]` matching the opening bracket.
fn split_map(rest: &str) -> Option<(&str, &str)> {
    let mut depth = 1usize;
    for (index, character) in rest.char_indices() {
        match character {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&rest[..index], &rest[index + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_parse_recursively() {
        let cases = [
            ("string", TypeExpr::String),
            ("float", TypeExpr::Float),
            ("[]integer", TypeExpr::List(Box::new(TypeExpr::Integer))),
            (
                "map[string]map[string]boolean",
                TypeExpr::Map(Box::new(TypeExpr::Map(Box::new(TypeExpr::Boolean)))),
            ),
            (
                "[]map[string]Container",
                TypeExpr::List(Box::new(TypeExpr::Map(Box::new(TypeExpr::Custom(
                    "Container".into(),
                ))))),
            ),
            ("number", TypeExpr::Custom("number".into())),
            ("My Type", TypeExpr::Custom("My Type".into())),
            (
                "[] map[string] integer",
                TypeExpr::List(Box::new(TypeExpr::Map(Box::new(TypeExpr::Integer)))),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_type(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn malformed_types_are_rejected() {
        assert_eq!(
            parse_type("map[integer]string"),
            Err(SimpleSchemaErrorKind::UnsupportedMapKey("integer".into()))
        );
        assert_eq!(
            parse_type("map[string"),
            Err(SimpleSchemaErrorKind::InvalidType("map[string".into()))
        );
        assert_eq!(
            parse_type("[]"),
            Err(SimpleSchemaErrorKind::InvalidType("[]".into()))
        );
        assert_eq!(
            parse_type(" "),
            Err(SimpleSchemaErrorKind::InvalidType(String::new()))
        );
        let deep = format!("{}string", "[]".repeat(17));
        assert_eq!(
            parse_type(&deep),
            Err(SimpleSchemaErrorKind::NestingTooDeep { limit: 16 })
        );
    }
}
