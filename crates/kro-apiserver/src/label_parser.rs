//! The label selector language of `k8s.io/apimachinery/pkg/labels` (`labels.Parse`): a lexer
//! of identifiers and operator symbols and a recursive-descent parser over its tokens, with
//! the same acceptance and the same error texts as kube-apiserver, because clients show those
//! texts to people (`unable to parse requirement: found '=', expected: identifier`).

use std::collections::BTreeSet;

use kro_schema::{BadValue, FieldError, FieldPath};

/// One requirement of a label selector: the key, the operator and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Requirement {
    /// `key`.
    Exists(String),
    /// `!key`.
    NotExists(String),
    /// `key in (a,b)`, `key=a`, `key==a`.
    In(String, BTreeSet<String>),
    /// `key notin (a,b)`, `key!=a`.
    NotIn(String, BTreeSet<String>),
    /// `key>3`.
    GreaterThan(String, i64),
    /// `key<3`.
    LessThan(String, i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(text: &str) -> Option<Token> {
    Some(match text {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the selector into tokens, ending with [`Token::End`]. Works on bytes, as Go's lexer
/// does, including its reading of NUL bytes (it reads them as the end of the input): where a
/// token would begin, a NUL ends the selector; right after a token it ends that token and is
/// consumed, so it separates as a space would (`a\0b` is two identifiers).
fn lex(selector: &str) -> Vec<(Token, String)> {
    let bytes = selector.as_bytes();
    let mut position = 0;
    let mut tokens = Vec::new();
    loop {
        while bytes.get(position).is_some_and(|byte| is_whitespace(*byte)) {
            position += 1;
        }
        let Some(&first) = bytes.get(position).filter(|byte| **byte != 0) else {
            tokens.push((Token::End, String::new()));
            return tokens;
        };
        if is_special(first) {
            // The longest run of symbols that is still an operator.
            let start = position;
            let mut last: Option<(Token, usize)> = None;
            let mut swallowed_nul = false;
            loop {
                match bytes.get(position) {
                    Some(byte) if is_special(*byte) => {
                        let candidate = &selector[start..=position];
                        match keyword(candidate) {
                            Some(token) => {
                                last = Some((token, position + 1));
                                position += 1;
                            }
                            None if last.is_some() => break,
                            None => position += 1,
                        }
                    }
                    Some(0) => {
                        swallowed_nul = true;
                        break;
                    }
                    _ => break,
                }
            }
            match last {
                Some((token, end)) => {
                    tokens.push((token, selector[start..end].to_owned()));
                    // A NUL read right after the symbol (when it is the whole run) is consumed.
                    position = if swallowed_nul && end == position {
                        end + 1
                    } else {
                        end
                    };
                }
                None => tokens.push((
                    Token::Error,
                    format!(
                        "error expected: keyword found '{}'",
                        &selector[start..position]
                    ),
                )),
            }
        } else {
            let start = position;
            while bytes
                .get(position)
                .is_some_and(|byte| *byte != 0 && !is_special(*byte) && !is_whitespace(*byte))
            {
                position += 1;
            }
            let text = String::from_utf8_lossy(&bytes[start..position]).into_owned();
            if bytes.get(position) == Some(&0) {
                // The NUL that ended the identifier is consumed with it.
                position += 1;
            }
            let token = keyword(&text).unwrap_or(Token::Identifier);
            tokens.push((token, text));
        }
    }
}

/// Whether parsing reads values (where `in` and `notin` are plain identifiers) or operators.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    tokens: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn token_at(&self, index: usize, context: Context) -> (Token, String) {
        let (token, text) = self
            .tokens
            .get(index)
            .cloned()
            .unwrap_or((Token::End, String::new()));
        let token = match token {
            Token::In | Token::NotIn if context == Context::Values => Token::Identifier,
            other => other,
        };
        (token, text)
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.token_at(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.token_at(self.position, context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, text) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|error| format!("unable to parse requirement: {error}"))?;
                    requirements.push(requirement);
                    let (next, next_text) = self.consume(Context::Values);
                    match next {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (after, after_text) = self.lookahead(Context::Values);
                            if after != Token::Identifier && after != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{after_text}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{next_text}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{text}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut does_not_exist = false;
        let (mut token, mut key) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            does_not_exist = true;
            (token, key) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        if let Some(error) = key_error(&key, FieldPath::new("<nil>")) {
            return Err(error.to_string());
        }
        if does_not_exist {
            // Whatever follows `!key` is checked when the caller reads the next token.
            return Ok(Requirement::NotExists(key));
        }
        if matches!(self.lookahead(Context::Values).0, Token::End | Token::Comma) {
            return Ok(Requirement::Exists(key));
        }
        let (operator, operator_text) = self.consume(Context::KeyAndOperator);
        let values = match operator {
            Token::In | Token::NotIn => self.set_values()?,
            Token::Equals
            | Token::DoubleEquals
            | Token::NotEquals
            | Token::GreaterThan
            | Token::LessThan => self.exact_value()?,
            _ => {
                return Err(format!(
                    "found '{operator_text}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        new_requirement(key, operator, values)
    }

    fn set_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, text) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{text}' expected: '('"));
        }
        let (token, text) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifier_list()?;
                let (closing, _) = self.consume(Context::Values);
                if closing != Token::ClosedPar {
                    return Err(format!("found '{text}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{text}', expected: ',', ')' or identifier")),
        }
    }

    fn identifier_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut values = BTreeSet::new();
        loop {
            let (token, text) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(text);
                    let (next, next_text) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{next_text}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{text}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::End | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, text) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(BTreeSet::from([text]))
        } else {
            Err(format!("found '{text}', expected: identifier"))
        }
    }
}

/// Builds a requirement, checking it as apimachinery's `NewRequirement` does: every problem
/// found, one message for one, `[a, b]` for several.
fn new_requirement(
    key: String,
    operator: Token,
    values: BTreeSet<String>,
) -> Result<Requirement, String> {
    let mut errors: Vec<FieldError> = Vec::new();
    errors.extend(key_error(&key, FieldPath::new("key")));
    let values_path = FieldPath::new("values");
    let mut number = None;
    if matches!(operator, Token::GreaterThan | Token::LessThan) {
        for (index, value) in values.iter().enumerate() {
            match value.parse::<i64>() {
                Ok(parsed) => number = Some(parsed),
                Err(_) => errors.push(FieldError::invalid(
                    values_path.index(index),
                    BadValue::text(value),
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                )),
            }
        }
    }
    for (index, value) in values.iter().enumerate() {
        let problems = value_problems(value);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                values_path.index(index).key(&key),
                BadValue::text(value),
                &problems.join("; "),
            ));
        }
    }
    let mut messages: Vec<String> = Vec::new();
    for error in &errors {
        let message = error.to_string();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.as_slice() {
        [] => {}
        [single] => return Err(single.clone()),
        several => return Err(format!("[{}]", several.join(", "))),
    }
    Ok(match operator {
        Token::In | Token::Equals | Token::DoubleEquals => Requirement::In(key, values),
        Token::NotIn | Token::NotEquals => Requirement::NotIn(key, values),
        Token::GreaterThan => Requirement::GreaterThan(key, number.unwrap_or_default()),
        _ => Requirement::LessThan(key, number.unwrap_or_default()),
    })
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`.
fn is_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        let bytes = label.as_bytes();
        let alphanumeric = |byte: &u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
        !bytes.is_empty()
            && bytes.first().is_some_and(alphanumeric)
            && bytes.last().is_some_and(alphanumeric)
            && bytes.iter().all(|byte| alphanumeric(byte) || *byte == b'-')
    })
}

/// apimachinery's `IsQualifiedName` problems of a label key.
fn key_problems(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut problems = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    problems.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !is_subdomain(prefix) {
                    problems.push(format!("prefix part {SUBDOMAIN_MESSAGE}"));
                }
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_owned());
    }
    if !is_qualified_name_part(name) {
        problems.push(format!("name part {QUALIFIED_NAME_MESSAGE}"));
    }
    problems
}

fn key_error(key: &str, path: FieldPath) -> Option<FieldError> {
    let problems = key_problems(key);
    (!problems.is_empty())
        .then(|| FieldError::invalid(path, BadValue::text(key), &problems.join("; ")))
}

/// The errors of an object's `metadata.labels` at `path`, as apimachinery's `ValidateLabels`
/// words them: one per problem of a key (`IsQualifiedName`) or of a value
/// (`IsValidLabelValue`, at most 63 characters).
pub(crate) fn label_errors(
    labels: &serde_json::Map<String, serde_json::Value>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in labels {
        for problem in key_problems(key) {
            errors.push(FieldError::invalid(
                path.clone(),
                BadValue::text(key),
                &problem,
            ));
        }
        if let Some(value) = value.as_str() {
            for problem in value_problems(value) {
                errors.push(FieldError::invalid(
                    path.clone(),
                    BadValue::text(value),
                    &problem,
                ));
            }
        }
    }
    errors
}

/// apimachinery's `IsValidLabelValue` problems.
fn value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        problems.push(LABEL_VALUE_MESSAGE.to_owned());
    }
    problems
}

/// Parses a label selector; the error is kube-apiserver's message.
pub(crate) fn parse(selector: &str) -> Result<Vec<Requirement>, String> {
    let mut parser = Parser {
        tokens: lex(selector),
        position: 0,
    };
    let mut requirements = parser.parse()?;
    requirements.sort_by(|a, b| key_of(a).cmp(key_of(b)));
    Ok(requirements)
}

fn key_of(requirement: &Requirement) -> &str {
    match requirement {
        Requirement::Exists(key)
        | Requirement::NotExists(key)
        | Requirement::In(key, _)
        | Requirement::NotIn(key, _)
        | Requirement::GreaterThan(key, _)
        | Requirement::LessThan(key, _) => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_labels_are_held_to_kubernetes_rules() {
        let path = FieldPath::new("metadata").child("labels");
        let labels =
            serde_json::json!({"app": "web", "kro.run/set-name": "a".repeat(64), "bad key!": "x"});
        let errors: Vec<String> = label_errors(labels.as_object().expect("a map"), &path)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors.iter().any(|error| error.starts_with(
                "metadata.labels: Invalid value: \"bad key!\": name part must consist of"
            )),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|error| error.ends_with(": must be no more than 63 characters")),
            "{errors:?}"
        );
        let fine =
            serde_json::json!({"app": "web", "kro.run/set-name": "a".repeat(63), "empty": ""});
        assert!(label_errors(fine.as_object().expect("a map"), &path).is_empty());
    }

    #[test]
    fn requirements_carry_their_operators_and_values() {
        let parsed = parse("z in (b,a,),y notin (c),x=1,w!=2,!v,u,t>3,s<4").expect("valid");
        assert_eq!(
            parsed,
            [
                Requirement::LessThan("s".to_owned(), 4),
                Requirement::GreaterThan("t".to_owned(), 3),
                Requirement::Exists("u".to_owned()),
                Requirement::NotExists("v".to_owned()),
                Requirement::NotIn("w".to_owned(), BTreeSet::from(["2".to_owned()])),
                Requirement::In("x".to_owned(), BTreeSet::from(["1".to_owned()])),
                Requirement::NotIn("y".to_owned(), BTreeSet::from(["c".to_owned()])),
                Requirement::In(
                    "z".to_owned(),
                    BTreeSet::from([String::new(), "a".to_owned(), "b".to_owned()])
                ),
            ]
        );
        assert_eq!(parse("").expect("empty"), []);
        assert_eq!(parse("   ").expect("blank"), []);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        for selector in [
            "\0a",
            "a\0=b",
            "é=ü",
            "a in (é)",
            "((((",
            "!!!!",
            "=",
            "a in (",
            "a in (b,",
        ] {
            let _ = parse(selector);
        }
    }
}
