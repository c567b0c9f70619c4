//! The variable paths an expression reads, as written: `schema.spec.name` is the variable
//! `schema` with the fields `spec` and `name` selected after it. Found from the tokens, with
//! their byte spans, so that a tool can rename a variable or replace a path in the text
//! without printing the expression again (kro-compose prefixes the resource ids of a nested
//! composition this way).

use crate::error::ParseError;
use crate::lexer::{Punct, Spanned, Token, tokenize};
use crate::parser::parse;
use crate::source::Span;

/// One variable read by an expression and the plain field selections after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariablePath {
    /// The variable first, then each field, with where it is written.
    pub segments: Vec<(String, Span)>,
}

impl VariablePath {
    /// The names: `["schema", "spec", "name"]`.
    pub fn names(&self) -> Vec<&str> {
        self.segments
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// Every variable path of `text`, in order of appearance. A variable is an identifier that
/// is not a field (after `.` or `.?`), not a function being called, not a type name before
/// `{` and not a field name inside such a literal; its path goes on through `.field` selections, and stops at an optional
/// selection (`.?field`), an index or a method call. Names bound by macros (`x` in
/// `list.exists(x, x > 0)`) are variables too: the caller knows which names it looks for.
///
/// ```
/// let paths = kro_cel::variable_paths("size(deployment.spec.replicas) > 0 ? a.?b : c.d.exists(x, x)")?;
/// let names: Vec<Vec<&str>> = paths.iter().map(|path| path.names()).collect();
/// assert_eq!(names, [vec!["deployment", "spec", "replicas"], vec!["a"], vec!["c", "d"], vec!["x"], vec!["x"]]);
/// # Ok::<(), kro_cel::ParseError>(())
/// ```
///
/// # Errors
/// The [`ParseError`] of [`parse`] when `text` is not a CEL expression.
pub fn variable_paths(text: &str) -> Result<Vec<VariablePath>, ParseError> {
    parse(text)?;
    // The text parsed, so it tokenizes.
    let Ok(tokens) = tokenize(text) else {
        return Ok(Vec::new());
    };
    let mut paths = Vec::new();
    // For each open `{`: whether it opens a message literal (`Type{field: value}`), whose
    // field names are not variables.
    let mut braces: Vec<bool> = Vec::new();
    let mut after_type_name = false;
    let mut index = 0;
    while index < tokens.len() {
        let Token::Ident(name) = &tokens[index].token else {
            if is_punct(&tokens[index], Punct::LeftBrace) {
                braces.push(after_type_name);
            } else if is_punct(&tokens[index], Punct::RightBrace) {
                braces.pop();
            }
            after_type_name = false;
            index += 1;
            continue;
        };
        let is_field_name = braces.last() == Some(&true)
            && index.checked_sub(1).is_some_and(|before| {
                is_punct(&tokens[before], Punct::LeftBrace)
                    || is_punct(&tokens[before], Punct::Comma)
            })
            && tokens
                .get(index + 1)
                .is_some_and(|next| is_punct(next, Punct::Colon));
        let is_field = index
            .checked_sub(1)
            .is_some_and(|before| is_punct(&tokens[before], Punct::Dot))
            || (index >= 2
                && is_punct(&tokens[index - 1], Punct::Question)
                && is_punct(&tokens[index - 2], Punct::Dot));
        let next = tokens.get(index + 1);
        let is_call = next.is_some_and(|next| is_punct(next, Punct::LeftParen));
        if is_field || is_call || is_field_name {
            index += 1;
            continue;
        }
        let mut segments = vec![(name.clone(), tokens[index].span)];
        let mut end = index + 1;
        while let (Some(dot), Some(field)) = (tokens.get(end), tokens.get(end + 1)) {
            let Token::Ident(field_name) = &field.token else {
                break;
            };
            let called = tokens
                .get(end + 2)
                .is_some_and(|after| is_punct(after, Punct::LeftParen));
            if !is_punct(dot, Punct::Dot) || called {
                break;
            }
            segments.push((field_name.clone(), field.span));
            end += 2;
        }
        let is_type_name = tokens
            .get(end)
            .is_some_and(|after| is_punct(after, Punct::LeftBrace));
        if !is_type_name {
            paths.push(VariablePath { segments });
        }
        after_type_name = is_type_name;
        index = end;
    }
    Ok(paths)
}

fn is_punct(token: &Spanned, punct: Punct) -> bool {
    token.token == Token::Punct(punct)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<Vec<String>> {
        variable_paths(text)
            .expect("parses")
            .iter()
            .map(|path| path.names().into_iter().map(str::to_owned).collect())
            .collect()
    }

    #[test]
    fn variables_fields_calls_and_strings_are_told_apart() {
        assert_eq!(names("schema.spec.name"), [["schema", "spec", "name"]]);
        assert_eq!(
            names("'schema.spec.name' + \"a.b\" + r'''c.d'''"),
            Vec::<Vec<String>>::new()
        );
        assert_eq!(
            names("string(a.b) + a.c.size() + a.d[0].e + a.?f.g"),
            [vec!["a", "b"], vec!["a", "c"], vec!["a", "d"], vec!["a"]]
        );
        assert_eq!(names("x ? y.z : w"), [vec!["x"], vec!["y", "z"], vec!["w"]]);
        assert_eq!(names("{'k': v.w, k2: 1}"), [vec!["v", "w"], vec!["k2"]]);
        assert_eq!(names("google.protobuf.Duration{seconds: s}"), [["s"]]);
        assert_eq!(
            names("l.map(x1, x1.name)"),
            [vec!["l"], vec!["x1"], vec!["x1", "name"]]
        );
    }

    #[test]
    fn spans_point_at_each_name() {
        let text = "1 + schema.spec.port";
        let paths = variable_paths(text).expect("parses");
        let spans: Vec<&str> = paths[0]
            .segments
            .iter()
            .map(|(_, span)| &text[span.start as usize..span.end as usize])
            .collect();
        assert_eq!(spans, ["schema", "spec", "port"]);
        assert!(variable_paths("a +").is_err());
    }
}
