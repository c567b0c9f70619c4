//! A reader for protobuf text format, enough for the CEL conformance data: messages, repeated
//! fields, strings with C escapes, numbers, enum identifiers, `[type.url/Name]` Any fields,
//! list syntax and comments. It produces an untyped tree; the runner gives it meaning.

use std::fmt;

/// A field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// A quoted string (bytes, since text-format strings may hold any octets).
    String(Vec<u8>),
    /// A number or an identifier (enum value, `true`, `inf`), as written.
    Word(String),
    /// A nested message.
    Message(Message),
}

/// A message: its fields in order; repeated fields appear once per element.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    pub fields: Vec<(String, Field)>,
}

impl Message {
    /// The first value of a field.
    pub fn get(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value)
    }

    /// Every value of a repeated field.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
        self.fields
            .iter()
            .filter(move |(field, _)| field == name)
            .map(|(_, value)| value)
    }

    /// A nested message field.
    pub fn message(&self, name: &str) -> Option<&Message> {
        match self.get(name) {
            Some(Field::Message(message)) => Some(message),
            _ => None,
        }
    }

    /// A string field, decoded as UTF-8 (lossily).
    pub fn string(&self, name: &str) -> Option<String> {
        match self.get(name) {
            Some(Field::String(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }

    /// A word field (number, enum or boolean identifier).
    pub fn word(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Field::Word(word)) => Some(word),
            _ => None,
        }
    }

    /// A boolean field (absent means false).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.word(name), Some("true" | "True" | "t" | "1"))
    }
}

/// A syntax error with its line.
#[derive(Debug)]
pub struct TextError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Parses a whole text-format document as one message.
pub fn parse(text: &str) -> Result<Message, TextError> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        position: 0,
    };
    let message = reader.fields(None)?;
    reader.skip_trivia();
    if reader.position < reader.bytes.len() {
        return Err(reader.error("unexpected text after the last field"));
    }
    Ok(message)
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn error(&self, message: &str) -> TextError {
        let line = self.bytes[..self.position.min(self.bytes.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        TextError {
            line,
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn skip_trivia(&mut self) {
        while let Some(byte) = self.peek() {
            if byte.is_ascii_whitespace() {
                self.position += 1;
            } else if byte == b'#' {
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.position += 1;
                }
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_trivia();
        if self.peek() == Some(byte) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    /// Fields until `close` (or the end of input when `close` is `None`).
    fn fields(&mut self, close: Option<u8>) -> Result<Message, TextError> {
        let mut message = Message::default();
        loop {
            self.skip_trivia();
            match (self.peek(), close) {
                (None, None) => return Ok(message),
                (None, Some(_)) => return Err(self.error("unterminated message")),
                (Some(byte), Some(end)) if byte == end => {
                    self.position += 1;
                    return Ok(message);
                }
                _ => {}
            }
            let name = self.field_name()?;
            let has_colon = self.eat(b':');
            self.skip_trivia();
            if self.peek() == Some(b'[') && has_colon {
                self.position += 1;
                loop {
                    if self.eat(b']') {
                        break;
                    }
                    let value = self.value()?;
                    message.fields.push((name.clone(), value));
                    self.eat(b',');
                }
            } else {
                let value = self.value()?;
                message.fields.push((name, value));
            }
            if !self.eat(b',') {
                self.eat(b';');
            }
        }
    }

    fn field_name(&mut self) -> Result<String, TextError> {
        self.skip_trivia();
        if self.eat(b'[') {
            let start = self.position;
            while self.peek().is_some_and(|b| b != b']') {
                self.position += 1;
            }
            let name = String::from_utf8_lossy(&self.bytes[start..self.position])
                .trim()
                .to_string();
            if !self.eat(b']') {
                return Err(self.error("unterminated [extension] name"));
            }
            return Ok(format!("[{name}]"));
        }
        let word = self.word();
        if word.is_empty() {
            return Err(self.error("expected a field name"));
        }
        Ok(word)
    }

    fn word(&mut self) -> String {
        self.skip_trivia();
        let start = self.position;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"_.-+".contains(&b))
        {
            self.position += 1;
        }
        String::from_utf8_lossy(&self.bytes[start..self.position]).into_owned()
    }

    fn value(&mut self) -> Result<Field, TextError> {
        self.skip_trivia();
        match self.peek() {
            Some(b'{') => {
                self.position += 1;
                Ok(Field::Message(self.fields(Some(b'}'))?))
            }
            Some(b'<') => {
                self.position += 1;
                Ok(Field::Message(self.fields(Some(b'>'))?))
            }
            Some(b'"' | b'\'') => {
                let mut bytes = Vec::new();
                // Adjacent string literals concatenate.
                while matches!(self.peek(), Some(b'"' | b'\'')) {
                    bytes.extend(self.string()?);
                    self.skip_trivia();
                }
                Ok(Field::String(bytes))
            }
            _ => {
                let word = self.word();
                if word.is_empty() {
                    return Err(self.error("expected a value"));
                }
                Ok(Field::Word(word))
            }
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, TextError> {
        let quote = self.peek().ok_or_else(|| self.error("expected a string"))?;
        self.position += 1;
        let mut out = Vec::new();
        loop {
            let byte = self
                .peek()
                .ok_or_else(|| self.error("unterminated string"))?;
            self.position += 1;
            if byte == quote {
                return Ok(out);
            }
            if byte != b'\\' {
                out.push(byte);
                continue;
            }
            let kind = self
                .peek()
                .ok_or_else(|| self.error("unterminated escape"))?;
            self.position += 1;
            match kind {
                b'a' => out.push(0x07),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0c),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(0x0b),
                b'0'..=b'7' => {
                    let mut value = u32::from(kind - b'0');
                    for _ in 0..2 {
                        match self.peek() {
                            Some(digit @ b'0'..=b'7') => {
                                value = value * 8 + u32::from(digit - b'0');
                                self.position += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(value as u8);
                }
                b'x' | b'X' => {
                    let mut value = 0u32;
                    let mut digits = 0;
                    while digits < 2 {
                        match self.peek().and_then(|b| (b as char).to_digit(16)) {
                            Some(digit) => {
                                value = value * 16 + digit;
                                self.position += 1;
                                digits += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(value as u8);
                }
                b'u' | b'U' => {
                    let width = if kind == b'u' { 4 } else { 8 };
                    let digits = self
                        .bytes
                        .get(self.position..self.position + width)
                        .ok_or_else(|| self.error("short unicode escape"))?;
                    let text = std::str::from_utf8(digits).map_err(|_| self.error("bad escape"))?;
                    let code =
                        u32::from_str_radix(text, 16).map_err(|_| self.error("bad escape"))?;
                    let character =
                        char::from_u32(code).ok_or_else(|| self.error("bad code point"))?;
                    self.position += width;
                    let mut buffer = [0; 4];
                    out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
                }
                other => out.push(other),
            }
        }
    }
}

/// Checks the reader on a document that uses every construct; the conformance runner calls
/// this first, since a harness-less test binary runs no `#[test]` functions.
pub fn self_check() -> Result<(), String> {
    let text = r#"
        name: "basic"  # a comment
        section {
          test { expr: 'a' "b" value: { int64_value: -3 } }
          test < expr: "\x41\101\n" >
        }
        tags: [1, 2]
        [type.googleapis.com/google.protobuf.Duration] { seconds: 1 }
    "#;
    let message = parse(text).map_err(|error| error.to_string())?;
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("textproto self-check: {what}"))
        }
    };
    check(message.string("name").as_deref() == Some("basic"), "name")?;
    let section = message
        .message("section")
        .ok_or("textproto self-check: section")?;
    let tests: Vec<_> = section.all("test").collect();
    check(tests.len() == 2, "two tests")?;
    let (Field::Message(first), Field::Message(second)) = (tests[0], tests[1]) else {
        return Err("textproto self-check: tests are messages".into());
    };
    check(
        first.string("expr").as_deref() == Some("ab"),
        "adjacent strings concatenate",
    )?;
    check(
        first.message("value").and_then(|v| v.word("int64_value")) == Some("-3"),
        "negative numbers",
    )?;
    check(second.string("expr").as_deref() == Some("AA\n"), "escapes")?;
    check(message.all("tags").count() == 2, "list syntax")?;
    check(
        message
            .message("[type.googleapis.com/google.protobuf.Duration]")
            .is_some(),
        "Any fields",
    )
}
