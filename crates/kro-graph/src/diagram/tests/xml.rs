//! A small XML well-formedness checker for the SVG tests: one root element, balanced tags,
//! quoted attributes without duplicates, valid names, and only the five predefined entities or
//! character references. It reads comments and an XML declaration, and nothing fancier (no
//! DOCTYPE, CDATA or processing instructions), which is all the renderer writes.

/// An element with its attributes (values decoded) and children.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Content>,
}

/// A child of an element.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Content {
    Element(Element),
    Text(String),
}

impl Element {
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// This element and every element below it, in document order.
    pub fn descendants(&self) -> Vec<&Element> {
        let mut all = vec![self];
        for child in &self.children {
            if let Content::Element(element) = child {
                all.extend(element.descendants());
            }
        }
        all
    }

    /// The decoded text directly inside this element.
    pub fn text(&self) -> String {
        self.children
            .iter()
            .filter_map(|child| match child {
                Content::Text(text) => Some(text.as_str()),
                Content::Element(_) => None,
            })
            .collect()
    }
}

/// Parses `input`, or says at which byte offset it is not well-formed and why.
pub(super) fn parse(input: &str) -> Result<Element, String> {
    let mut parser = Parser { input, at: 0 };
    if parser.rest().starts_with("<?xml") {
        parser.skip_past("?>")?;
    }
    parser.skip_misc()?;
    if !parser.rest().starts_with('<') {
        return Err(parser.error("expected the root element"));
    }
    let root = parser.element()?;
    parser.skip_misc()?;
    if parser.at != input.len() {
        return Err(parser.error("content after the root element"));
    }
    Ok(root)
}

struct Parser<'a> {
    input: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.at..]
    }

    fn error(&self, message: &str) -> String {
        let context: String = self.rest().chars().take(40).collect();
        format!("{message} at byte {} (`{context}`)", self.at)
    }

    fn skip_past(&mut self, end: &str) -> Result<(), String> {
        match self.rest().find(end) {
            Some(offset) => {
                self.at += offset + end.len();
                Ok(())
            }
            None => Err(self.error(&format!("unterminated, expected `{end}`"))),
        }
    }

    fn skip_whitespace(&mut self) {
        let trimmed = self.rest().trim_start_matches([' ', '\t', '\n', '\r']);
        self.at = self.input.len() - trimmed.len();
    }

    /// Whitespace and comments.
    fn skip_misc(&mut self) -> Result<(), String> {
        loop {
            self.skip_whitespace();
            if self.rest().starts_with("<!--") {
                self.comment()?;
            } else {
                return Ok(());
            }
        }
    }

    fn comment(&mut self) -> Result<(), String> {
        self.at += "<!--".len();
        let end = self
            .rest()
            .find("-->")
            .ok_or_else(|| self.error("unterminated comment"))?;
        if self.rest()[..end].contains("--") {
            return Err(self.error("`--` inside a comment"));
        }
        self.at += end + "-->".len();
        Ok(())
    }

    fn name(&mut self) -> Result<String, String> {
        let rest = self.rest();
        let length = rest
            .char_indices()
            .find(|&(index, character)| {
                let allowed =
                    character.is_ascii_alphabetic() || character == '_' || character == ':';
                !(allowed
                    || (index > 0
                        && (character.is_ascii_digit() || character == '-' || character == '.')))
            })
            .map_or(rest.len(), |(index, _)| index);
        if length == 0 {
            return Err(self.error("expected a name"));
        }
        let name = rest[..length].to_owned();
        self.at += length;
        Ok(name)
    }

    fn element(&mut self) -> Result<Element, String> {
        self.at += 1; // '<'
        let name = self.name()?;
        let mut attributes: Vec<(String, String)> = Vec::new();
        loop {
            let before = self.at;
            self.skip_whitespace();
            if self.rest().starts_with("/>") {
                self.at += 2;
                return Ok(Element {
                    name,
                    attributes,
                    children: Vec::new(),
                });
            }
            if self.rest().starts_with('>') {
                self.at += 1;
                break;
            }
            if self.at == before {
                return Err(self.error("expected whitespace before an attribute"));
            }
            let key = self.name()?;
            self.skip_whitespace();
            if !self.rest().starts_with('=') {
                return Err(self.error("expected `=` after an attribute name"));
            }
            self.at += 1;
            self.skip_whitespace();
            let quote = self
                .rest()
                .chars()
                .next()
                .filter(|quote| *quote == '"' || *quote == '\'');
            let quote = quote.ok_or_else(|| self.error("attribute value without quotes"))?;
            self.at += 1;
            let end = self
                .rest()
                .find(quote)
                .ok_or_else(|| self.error("unterminated attribute value"))?;
            let raw = &self.rest()[..end];
            if raw.contains('<') {
                return Err(self.error("`<` in an attribute value"));
            }
            let value = decode(raw).map_err(|message| self.error(&message))?;
            self.at += end + 1;
            if attributes.iter().any(|(existing, _)| *existing == key) {
                return Err(self.error(&format!("attribute `{key}` given twice")));
            }
            attributes.push((key, value));
        }
        let mut children = Vec::new();
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Err(self.error(&format!("`<{name}>` is never closed")));
            } else if rest.starts_with("</") {
                self.at += 2;
                let closing = self.name()?;
                if closing != name {
                    return Err(self.error(&format!("`<{name}>` closed by `</{closing}>`")));
                }
                self.skip_whitespace();
                if !self.rest().starts_with('>') {
                    return Err(self.error("expected `>`"));
                }
                self.at += 1;
                return Ok(Element {
                    name,
                    attributes,
                    children,
                });
            } else if rest.starts_with("<!--") {
                self.comment()?;
            } else if rest.starts_with('<') {
                children.push(Content::Element(self.element()?));
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                let text = decode(&rest[..end]).map_err(|message| self.error(&message))?;
                self.at += end;
                children.push(Content::Text(text));
            }
        }
    }
}

/// Replaces entity and character references, refusing unknown ones and bare `&`.
fn decode(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find(';').ok_or("`&` without `;`")? + start;
        let entity = &rest[start + 1..end];
        let character = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(hex) = entity.strip_prefix("#x") {
                    u32::from_str_radix(hex, 16).ok()
                } else if let Some(decimal) = entity.strip_prefix('#') {
                    decimal.parse().ok()
                } else {
                    None
                };
                code.and_then(char::from_u32)
                    .ok_or(format!("unknown entity `&{entity};`"))?
            }
        };
        out.push(character);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn the_checker_accepts_a_well_formed_document() {
    let root = parse(
        "<?xml version=\"1.0\"?>\n<!-- x -->\n<a k='1' j=\"&lt;&#65;\"><b/>t&amp;u<!-- c --></a>\n",
    )
    .unwrap();
    assert_eq!(root.name, "a");
    assert_eq!(root.attribute("j"), Some("<A"));
    assert_eq!(root.text(), "t&u");
}

#[test]
fn the_checker_refuses_documents_that_are_not_well_formed() {
    for bad in [
        "",
        "<a>",
        "<a></b>",
        "<a k=1/>",
        "<a k=\"1\" k=\"2\"/>",
        "<a k=\"<\"/>",
        "<a>&nope;</a>",
        "<a>& </a>",
        "<a/><b/>",
        "<a/>text",
        "<a k=\"1\"j=\"2\"/>",
        "<1a/>",
        "<a><!-- -- --></a>",
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}
