//! The lexer: expression text to tokens, decoding every literal form of the CEL grammar.

use std::sync::Arc;

use crate::error::SyntaxErrorKind;
use crate::source::Span;

/// Reserved words that may not be used as identifiers.
const RESERVED: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Whether a word is reserved in CEL (and so not usable as an identifier).
pub(crate) fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word)
}

/// Whether CEL keeps `word` for itself: a keyword (`true`, `false`, `null`, `in`) or a
/// reserved word. Neither can name a variable.
pub fn is_reserved_word(word: &str) -> bool {
    matches!(word, "true" | "false" | "null" | "in") || is_reserved(word)
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    /// An identifier (reserved words included; the parser rejects them where it matters).
    Ident(String),
    /// A backtick-quoted field name (`` `content-type` ``).
    QuotedIdent(String),
    /// An integer literal without sign; the parser checks its range (to allow `-2^63`).
    Int(u64),
    /// An unsigned literal (`1u`).
    Uint(u64),
    /// A floating-point literal.
    Double(f64),
    /// A string literal, decoded.
    String(Arc<str>),
    /// A bytes literal, decoded.
    Bytes(Arc<[u8]>),
    /// `true`, `false`
    Bool(bool),
    /// `null`
    Null,
    /// `in`
    In,
    /// Punctuation and operators.
    Punct(Punct),
    /// The end of the text.
    Eof,
}

/// Punctuation and operator tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Punct {
    LeftParen,
    RightParen,
    LeftBracket,
    RightBracket,
    LeftBrace,
    RightBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Bang,
    Minus,
    Plus,
    Star,
    Slash,
    Percent,
    EqualEqual,
    BangEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    AndAnd,
    OrOr,
}

impl Punct {
    pub(crate) fn text(self) -> &'static str {
        match self {
            Punct::LeftParen => "(",
            Punct::RightParen => ")",
            Punct::LeftBracket => "[",
            Punct::RightBracket => "]",
            Punct::LeftBrace => "{",
            Punct::RightBrace => "}",
            Punct::Dot => ".",
            Punct::Comma => ",",
            Punct::Colon => ":",
            Punct::Question => "?",
            Punct::Bang => "!",
            Punct::Minus => "-",
            Punct::Plus => "+",
            Punct::Star => "*",
            Punct::Slash => "/",
            Punct::Percent => "%",
            Punct::EqualEqual => "==",
            Punct::BangEqual => "!=",
            Punct::Less => "<",
            Punct::LessEqual => "<=",
            Punct::Greater => ">",
            Punct::GreaterEqual => ">=",
            Punct::AndAnd => "&&",
            Punct::OrOr => "||",
        }
    }
}

impl Token {
    /// How the token reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            Token::Ident(name) => format!("'{name}'"),
            Token::QuotedIdent(name) => format!("'`{name}`'"),
            Token::Int(value) => format!("'{value}'"),
            Token::Uint(value) => format!("'{value}u'"),
            Token::Double(value) => format!("'{value}'"),
            Token::String(_) => "string literal".to_string(),
            Token::Bytes(_) => "bytes literal".to_string(),
            Token::Bool(value) => format!("'{value}'"),
            Token::Null => "'null'".to_string(),
            Token::In => "'in'".to_string(),
            Token::Punct(punct) => format!("'{}'", punct.text()),
            Token::Eof => "end of input".to_string(),
        }
    }
}

/// A token and where it was.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned {
    pub token: Token,
    pub span: Span,
}

/// A lexing failure and where it happened.
pub(crate) type LexError = (Span, SyntaxErrorKind);

/// Splits the whole text into tokens, ending with [`Token::Eof`].
pub(crate) fn tokenize(text: &str) -> Result<Vec<Spanned>, LexError> {
    let mut lexer = Lexer {
        text,
        bytes: text.as_bytes(),
        position: 0,
    };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token()?;
        let end = token.token == Token::Eof;
        tokens.push(token);
        if end {
            return Ok(tokens);
        }
    }
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    position: usize,
}

fn span(start: usize, end: usize) -> Span {
    Span::new(start as u32, end as u32)
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.position + ahead).copied()
    }

    fn skip_trivia(&mut self) {
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => self.position += 1,
                b'/' if self.peek_at(1) == Some(b'/') => {
                    while let Some(byte) = self.peek() {
                        if byte == b'\n' {
                            break;
                        }
                        self.position += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn next_token(&mut self) -> Result<Spanned, LexError> {
        self.skip_trivia();
        let start = self.position;
        let Some(byte) = self.peek() else {
            return Ok(Spanned {
                token: Token::Eof,
                span: span(start, start),
            });
        };
        let token = match byte {
            b'0'..=b'9' => self.number()?,
            b'.' if self.peek_at(1).is_some_and(|b| b.is_ascii_digit()) => self.number()?,
            b'\'' | b'"' => self.string(start, false, false)?,
            b'`' => self.quoted_ident()?,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                if let Some((raw, bytes, prefix_len)) = self.string_prefix() {
                    self.position += prefix_len;
                    self.string(start, raw, bytes)?
                } else {
                    self.word()
                }
            }
            _ => Token::Punct(self.punct()?),
        };
        Ok(Spanned {
            token,
            span: span(start, self.position),
        })
    }

    /// Recognises `r`, `b`, `rb`, `br` (any case) directly followed by a quote.
    fn string_prefix(&self) -> Option<(bool, bool, usize)> {
        let first = self.peek()?.to_ascii_lowercase();
        let second = self.peek_at(1)?;
        let is_quote = |b: u8| b == b'\'' || b == b'"';
        match first {
            b'r' | b'b' if is_quote(second) => Some((first == b'r', first == b'b', 1)),
            b'r' | b'b' => {
                let second_lower = second.to_ascii_lowercase();
                let pair = (first, second_lower);
                if (pair == (b'r', b'b') || pair == (b'b', b'r')) && is_quote(self.peek_at(2)?) {
                    Some((true, true, 2))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn word(&mut self) -> Token {
        let start = self.position;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.position += 1;
        }
        match &self.text[start..self.position] {
            "true" => Token::Bool(true),
            "false" => Token::Bool(false),
            "null" => Token::Null,
            "in" => Token::In,
            word => Token::Ident(word.to_string()),
        }
    }

    fn quoted_ident(&mut self) -> Result<Token, LexError> {
        let start = self.position;
        self.position += 1;
        let body_start = self.position;
        while let Some(byte) = self.peek() {
            match byte {
                b'`' => {
                    let name = &self.text[body_start..self.position];
                    self.position += 1;
                    let valid = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"_.-/ ".contains(&b));
                    if !valid {
                        return Err((
                            span(start, self.position),
                            SyntaxErrorKind::InvalidQuotedIdentifier(name.to_string()),
                        ));
                    }
                    return Ok(Token::QuotedIdent(name.to_string()));
                }
                b'\n' => break,
                _ => self.position += 1,
            }
        }
        Err((
            span(start, self.position),
            SyntaxErrorKind::UnterminatedQuotedIdentifier,
        ))
    }

    fn punct(&mut self) -> Result<Punct, LexError> {
        let start = self.position;
        let byte = self.bytes[start];
        let next = self.peek_at(1);
        let (punct, len) = match (byte, next) {
            (b'=', Some(b'=')) => (Punct::EqualEqual, 2),
            (b'!', Some(b'=')) => (Punct::BangEqual, 2),
            (b'<', Some(b'=')) => (Punct::LessEqual, 2),
            (b'>', Some(b'=')) => (Punct::GreaterEqual, 2),
            (b'&', Some(b'&')) => (Punct::AndAnd, 2),
            (b'|', Some(b'|')) => (Punct::OrOr, 2),
            (b'(', _) => (Punct::LeftParen, 1),
            (b')', _) => (Punct::RightParen, 1),
            (b'[', _) => (Punct::LeftBracket, 1),
            (b']', _) => (Punct::RightBracket, 1),
            (b'{', _) => (Punct::LeftBrace, 1),
            (b'}', _) => (Punct::RightBrace, 1),
            (b'.', _) => (Punct::Dot, 1),
            (b',', _) => (Punct::Comma, 1),
            (b':', _) => (Punct::Colon, 1),
            (b'?', _) => (Punct::Question, 1),
            (b'!', _) => (Punct::Bang, 1),
            (b'-', _) => (Punct::Minus, 1),
            (b'+', _) => (Punct::Plus, 1),
            (b'*', _) => (Punct::Star, 1),
            (b'/', _) => (Punct::Slash, 1),
            (b'%', _) => (Punct::Percent, 1),
            (b'<', _) => (Punct::Less, 1),
            (b'>', _) => (Punct::Greater, 1),
            _ => {
                let character = self.text[start..].chars().next().unwrap_or('\u{fffd}');
                return Err((
                    span(start, start + character.len_utf8()),
                    SyntaxErrorKind::UnexpectedCharacter(character),
                ));
            }
        };
        self.position += len;
        Ok(punct)
    }

    fn digits(&mut self, hex: bool) -> usize {
        let start = self.position;
        while self.peek().is_some_and(|b| {
            if hex {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        }) {
            self.position += 1;
        }
        self.position - start
    }

    fn number(&mut self) -> Result<Token, LexError> {
        let start = self.position;
        if self.peek() == Some(b'0') && matches!(self.peek_at(1), Some(b'x' | b'X')) {
            self.position += 2;
            let digits_start = self.position;
            if self.digits(true) == 0 {
                return Err((
                    span(start, self.position),
                    SyntaxErrorKind::InvalidNumber(self.text[start..self.position].to_string()),
                ));
            }
            let digits = &self.text[digits_start..self.position];
            let value = u64::from_str_radix(digits, 16);
            return self.integer_suffix(start, value.ok());
        }
        self.digits(false);
        let mut is_float = false;
        if self.peek() == Some(b'.') && self.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            is_float = true;
            self.position += 1;
            self.digits(false);
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.position;
            self.position += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            if self.digits(false) == 0 {
                self.position = save;
            } else {
                is_float = true;
            }
        }
        let text = &self.text[start..self.position];
        if is_float {
            return text.parse::<f64>().map(Token::Double).map_err(|_| {
                (
                    span(start, self.position),
                    SyntaxErrorKind::InvalidNumber(text.to_string()),
                )
            });
        }
        let value = text.parse::<u64>().ok();
        self.integer_suffix(start, value)
    }

    fn integer_suffix(&mut self, start: usize, value: Option<u64>) -> Result<Token, LexError> {
        let unsigned = matches!(self.peek(), Some(b'u' | b'U'));
        if unsigned {
            self.position += 1;
        }
        let text = &self.text[start..self.position];
        let Some(value) = value else {
            return Err((
                span(start, self.position),
                SyntaxErrorKind::IntegerOutOfRange(text.to_string()),
            ));
        };
        Ok(if unsigned {
            Token::Uint(value)
        } else {
            Token::Int(value)
        })
    }

    /// Lexes a quoted literal; `self.position` is at the opening quote.
    fn string(&mut self, start: usize, raw: bool, bytes: bool) -> Result<Token, LexError> {
        let quote = self.bytes[self.position];
        let triple = self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote);
        self.position += if triple { 3 } else { 1 };
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err((
                    span(start, self.position),
                    SyntaxErrorKind::UnterminatedString,
                ));
            };
            if byte == quote {
                if !triple {
                    self.position += 1;
                    break;
                }
                if self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote) {
                    self.position += 3;
                    break;
                }
            }
            if !triple && (byte == b'\n' || byte == b'\r') {
                return Err((
                    span(start, self.position),
                    SyntaxErrorKind::UnterminatedString,
                ));
            }
            if byte == b'\\' && !raw {
                self.escape(&mut out, bytes)?;
                continue;
            }
            out.push(byte);
            self.position += 1;
        }
        if bytes {
            return Ok(Token::Bytes(Arc::from(out)));
        }
        match String::from_utf8(out) {
            Ok(text) => Ok(Token::String(Arc::from(text))),
            Err(_) => Err((
                span(start, self.position),
                SyntaxErrorKind::InvalidUtf8InString,
            )),
        }
    }

    /// Decodes one escape sequence; `self.position` is at the backslash.
    fn escape(&mut self, out: &mut Vec<u8>, bytes: bool) -> Result<(), LexError> {
        let start = self.position;
        self.position += 1;
        let Some(kind) = self.peek() else {
            return Err((
                span(start, self.position),
                SyntaxErrorKind::UnterminatedString,
            ));
        };
        self.position += 1;
        let simple = match kind {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' | b'?' | b'"' | b'\'' | b'`' => Some(kind),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            return Ok(());
        }
        let invalid = |position: usize| {
            (
                span(start, position),
                SyntaxErrorKind::InvalidEscape(
                    self.text
                        .get(start..position.min(self.text.len()))
                        .unwrap_or("\\")
                        .to_string(),
                ),
            )
        };
        let (radix, width) = match kind {
            b'x' | b'X' => (16, 2),
            b'u' => (16, 4),
            b'U' => (16, 8),
            b'0'..=b'3' => {
                self.position -= 1;
                (8, 3)
            }
            _ => return Err(invalid(self.position)),
        };
        let digits = self
            .text
            .get(self.position..self.position + width)
            .ok_or_else(|| invalid(self.bytes.len()))?;
        let value =
            u32::from_str_radix(digits, radix).map_err(|_| invalid(self.position + width))?;
        if !digits.bytes().all(|b| (b as char).is_digit(radix)) {
            return Err(invalid(self.position + width));
        }
        self.position += width;
        let is_unicode_escape = matches!(kind, b'u' | b'U');
        if bytes && !is_unicode_escape {
            // \x and octal escapes in bytes are raw bytes (octal is at most \377).
            out.push(u8::try_from(value).map_err(|_| invalid(self.position))?);
            return Ok(());
        }
        let character = char::from_u32(value).ok_or_else(|| invalid(self.position))?;
        let mut buffer = [0; 4];
        out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<Token> {
        tokenize(text)
            .expect("lexes")
            .into_iter()
            .map(|spanned| spanned.token)
            .collect()
    }

    fn string(text: &str) -> Token {
        Token::String(Arc::from(text))
    }

    #[test]
    fn numbers_in_every_form() {
        assert_eq!(
            tokens("0 42 0x1F 7u 0x10U 1.5 .5 1e3 2.5E-2 1e"),
            vec![
                Token::Int(0),
                Token::Int(42),
                Token::Int(31),
                Token::Uint(7),
                Token::Uint(16),
                Token::Double(1.5),
                Token::Double(0.5),
                Token::Double(1000.0),
                Token::Double(0.025),
                Token::Int(1),
                Token::Ident("e".into()),
                Token::Eof
            ]
        );
    }

    #[test]
    fn integer_dot_is_not_a_float() {
        assert_eq!(
            tokens("1.size"),
            vec![
                Token::Int(1),
                Token::Punct(Punct::Dot),
                Token::Ident("size".into()),
                Token::Eof
            ]
        );
    }

    #[test]
    fn strings_decode_escapes() {
        assert_eq!(
            tokens(r#"'a\n\t\\' "\x41\101\u00e9\U0001F600""#),
            vec![string("a\n\t\\"), string("AAé😀"), Token::Eof]
        );
    }

    #[test]
    fn raw_and_triple_quoted_strings() {
        assert_eq!(
            tokens(
                r#"r'\n' R"a\b" '''x'y''' """l1
l2""""#
            ),
            vec![
                string("\\n"),
                string("a\\b"),
                string("x'y"),
                string("l1\nl2"),
                Token::Eof
            ]
        );
    }

    #[test]
    fn bytes_keep_raw_octets() {
        assert_eq!(
            tokens(r"b'\xff\377\u00e9' rb'\x'"),
            vec![
                Token::Bytes(Arc::from(&[0xff, 0xff, 0xc3, 0xa9][..])),
                Token::Bytes(Arc::from(&b"\\x"[..])),
                Token::Eof
            ]
        );
    }

    #[test]
    fn operators_and_comments() {
        assert_eq!(
            tokens("a<=b // comment\n&&!c"),
            vec![
                Token::Ident("a".into()),
                Token::Punct(Punct::LessEqual),
                Token::Ident("b".into()),
                Token::Punct(Punct::AndAnd),
                Token::Punct(Punct::Bang),
                Token::Ident("c".into()),
                Token::Eof
            ]
        );
    }

    #[test]
    fn bad_input_is_an_error_with_its_place() {
        let cases = [
            ("'abc", 0, SyntaxErrorKind::UnterminatedString),
            ("'a\nb'", 0, SyntaxErrorKind::UnterminatedString),
            ("  #", 2, SyntaxErrorKind::UnexpectedCharacter('#')),
            (
                "18446744073709551616",
                0,
                SyntaxErrorKind::IntegerOutOfRange("18446744073709551616".into()),
            ),
            ("'\\q'", 1, SyntaxErrorKind::InvalidEscape("\\q".into())),
            (
                "'\\ud800'",
                1,
                SyntaxErrorKind::InvalidEscape("\\ud800".into()),
            ),
        ];
        for (text, start, kind) in cases {
            let (span, error) = tokenize(text).expect_err(text);
            assert_eq!((span.start, error), (start, kind), "{text}");
        }
    }
}
