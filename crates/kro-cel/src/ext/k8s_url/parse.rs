//! URL parsing and printing with the rules of Go's `net/url` (`Parse`, `ParseRequestURI`,
//! `URL.String`, `EscapedPath`, `Hostname`, `Port`, `Query`), which Kubernetes' `url()` uses.
//!
//! Go strings are bytes, so components are kept as bytes (percent-decoding may produce any
//! byte) and turned into text, replacing invalid UTF-8, only when returned to CEL.

use std::fmt;

use crate::ext::k8s_ip::is_ipv6_literal;

/// Why text is not a URL, worded as `net/url`'s errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlError {
    /// A byte below 0x20 or 0x7f.
    ControlCharacter,
    /// Empty text where a request URI is required.
    Empty,
    /// `:` before any scheme character.
    MissingScheme,
    /// Neither an absolute URI nor an absolute path.
    NotForRequest,
    /// A relative path whose first segment has a colon.
    ColonInFirstSegment,
    /// `[` without `]` in the host.
    MissingBracket,
    /// Non-digits after the host's last colon.
    InvalidPort(String),
    /// A bracketed host that is not an IPv6 address, or a bracket elsewhere in the host.
    InvalidIpLiteral(String),
    /// A malformed or disallowed `%XX`.
    Escape(String),
    /// A character not allowed in a host name.
    InvalidHostCharacter(String),
    /// A character not allowed in user information.
    InvalidUserinfo,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::ControlCharacter => f.write_str("net/url: invalid control character in URL"),
            UrlError::Empty => f.write_str("empty url"),
            UrlError::MissingScheme => f.write_str("missing protocol scheme"),
            UrlError::NotForRequest => f.write_str("invalid URI for request"),
            UrlError::ColonInFirstSegment => {
                f.write_str("first path segment in URL cannot contain colon")
            }
            UrlError::MissingBracket => f.write_str("missing ']' in host"),
            UrlError::InvalidPort(port) => write!(f, "invalid port {port:?} after host"),
            UrlError::InvalidIpLiteral(host) => write!(f, "invalid IP-literal {host:?}"),
            UrlError::Escape(escape) => write!(f, "invalid URL escape {escape:?}"),
            UrlError::InvalidHostCharacter(c) => write!(f, "invalid character {c:?} in host name"),
            UrlError::InvalidUserinfo => f.write_str("net/url: invalid userinfo"),
        }
    }
}

/// Which component is being escaped or unescaped (Go's `encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// A parsed URL: Go's `url.URL` fields that Kubernetes' functions read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Url {
    pub(crate) scheme: Vec<u8>,
    opaque: Vec<u8>,
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    pub(crate) host: Vec<u8>,
    path: Vec<u8>,
    raw_path: Vec<u8>,
    force_query: bool,
    pub(crate) raw_query: Vec<u8>,
    fragment: Vec<u8>,
    raw_fragment: Vec<u8>,
}

fn should_escape(byte: u8, mode: Mode) -> bool {
    if byte.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            byte,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match byte {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return byte == b'?',
            Mode::UserPassword => return matches!(byte, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(byte, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Decodes `%XX` (and `+` in query components), rejecting what Go's `unescape` rejects.
fn unescape(text: &[u8], mode: Mode) -> Result<Vec<u8>, UrlError> {
    let mut output = Vec::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        match text[index] {
            b'%' => {
                let escape = || {
                    let end = (index + 3).min(text.len());
                    UrlError::Escape(String::from_utf8_lossy(&text[index..end]).into_owned())
                };
                let (Some(high), Some(low)) = (
                    text.get(index + 1).copied().and_then(hex_value),
                    text.get(index + 2).copied().and_then(hex_value),
                ) else {
                    return Err(escape());
                };
                let is_percent = high == 2 && low == 5;
                // In a host, %-escapes may only encode non-ASCII bytes (or %25 before a zone).
                if mode == Mode::Host && high < 8 && !is_percent {
                    return Err(escape());
                }
                let decoded = (high << 4) | low;
                if mode == Mode::Zone
                    && !is_percent
                    && decoded != b' '
                    && should_escape(decoded, Mode::Host)
                {
                    return Err(escape());
                }
                output.push(decoded);
                index += 3;
            }
            b'+' => {
                output.push(if mode == Mode::QueryComponent {
                    b' '
                } else {
                    b'+'
                });
                index += 1;
            }
            byte => {
                if matches!(mode, Mode::Host | Mode::Zone)
                    && byte < 0x80
                    && should_escape(byte, mode)
                {
                    return Err(UrlError::InvalidHostCharacter((byte as char).to_string()));
                }
                output.push(byte);
                index += 1;
            }
        }
    }
    Ok(output)
}

/// Percent-encodes what `mode` does not allow, with upper-case hex (Go's `escape`).
fn escape(text: &[u8], mode: Mode) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut output = Vec::with_capacity(text.len());
    for &byte in text {
        if byte == b' ' && mode == Mode::QueryComponent {
            output.push(b'+');
        } else if should_escape(byte, mode) {
            output.extend_from_slice(&[
                b'%',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 15)],
            ]);
        } else {
            output.push(byte);
        }
    }
    output
}

fn valid_optional_port(port: &[u8]) -> bool {
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

fn find(text: &[u8], byte: u8) -> Option<usize> {
    text.iter().position(|b| *b == byte)
}

fn rfind(text: &[u8], byte: u8) -> Option<usize> {
    text.iter().rposition(|b| *b == byte)
}

fn find_slice(text: &[u8], needle: &[u8]) -> Option<usize> {
    text.windows(needle.len())
        .position(|window| window == needle)
}

/// Parses `host[:port]` as Go's `parseHost`, including the checks added for CVE-2025-47912
/// and CVE-2026-25679: brackets only around an IPv6 address, at the start of the host.
fn parse_host(host: &[u8]) -> Result<Vec<u8>, UrlError> {
    if host.first() == Some(&b'[') {
        let close = rfind(host, b']').ok_or(UrlError::MissingBracket)?;
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(UrlError::InvalidPort(
                String::from_utf8_lossy(port).into_owned(),
            ));
        }
        let literal = &host[1..close];
        let (address, zone) = match find_slice(literal, b"%25") {
            Some(start) => (&literal[..start], Some(&literal[start..])),
            None => (literal, None),
        };
        let address = unescape(address, Mode::Host)?;
        if !std::str::from_utf8(&address).is_ok_and(is_ipv6_literal) {
            return Err(UrlError::InvalidIpLiteral(
                String::from_utf8_lossy(literal).into_owned(),
            ));
        }
        let mut output = vec![b'['];
        output.extend(address);
        if let Some(zone) = zone {
            output.extend(unescape(zone, Mode::Zone)?);
        }
        output.push(b']');
        output.extend(unescape(port, Mode::Host)?);
        return Ok(output);
    }
    if host.contains(&b'[') || host.contains(&b']') {
        return Err(UrlError::InvalidIpLiteral(
            String::from_utf8_lossy(host).into_owned(),
        ));
    }
    if let Some(colon) = rfind(host, b':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(UrlError::InvalidPort(
                String::from_utf8_lossy(port).into_owned(),
            ));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(userinfo: &[u8]) -> bool {
    userinfo.iter().all(|byte| {
        byte.is_ascii_alphanumeric()
            || matches!(
                byte,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

impl Url {
    /// Parses as Go's `parse(rawURL, viaRequest)`.
    fn parse_reference(raw: &[u8], via_request: bool) -> Result<Url, UrlError> {
        if raw.iter().any(|byte| *byte < 0x20 || *byte == 0x7f) {
            return Err(UrlError::ControlCharacter);
        }
        if raw.is_empty() && via_request {
            return Err(UrlError::Empty);
        }
        let mut url = Url::default();
        if raw == b"*" {
            url.path = b"*".to_vec();
            return Ok(url);
        }
        let mut rest = raw;
        for (index, &byte) in raw.iter().enumerate() {
            match byte {
                b'a'..=b'z' | b'A'..=b'Z' => {}
                b'0'..=b'9' | b'+' | b'-' | b'.' if index > 0 => {}
                b':' if index == 0 => return Err(UrlError::MissingScheme),
                b':' => {
                    url.scheme = raw[..index].to_ascii_lowercase();
                    rest = &raw[index + 1..];
                    break;
                }
                _ => break,
            }
        }
        let question_marks = rest.iter().filter(|byte| **byte == b'?').count();
        if rest.last() == Some(&b'?') && question_marks == 1 {
            url.force_query = true;
            rest = &rest[..rest.len() - 1];
        } else if let Some(mark) = find(rest, b'?') {
            url.raw_query = rest[mark + 1..].to_vec();
            rest = &rest[..mark];
        }
        if rest.first() != Some(&b'/') {
            if !url.scheme.is_empty() {
                url.opaque = rest.to_vec();
                return Ok(url);
            }
            if via_request {
                return Err(UrlError::NotForRequest);
            }
            let segment = &rest[..find(rest, b'/').unwrap_or(rest.len())];
            if segment.contains(&b':') {
                return Err(UrlError::ColonInFirstSegment);
            }
        }
        let has_authority = (!url.scheme.is_empty() || !via_request && !rest.starts_with(b"///"))
            && rest.starts_with(b"//");
        if has_authority {
            let authority = &rest[2..];
            let (authority, path) = match find(authority, b'/') {
                Some(slash) => (&authority[..slash], &authority[slash..]),
                None => (authority, &b""[..]),
            };
            rest = path;
            let (userinfo, host) = match rfind(authority, b'@') {
                Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
                None => (None, authority),
            };
            url.host = parse_host(host)?;
            if let Some(userinfo) = userinfo {
                if !valid_userinfo(userinfo) {
                    return Err(UrlError::InvalidUserinfo);
                }
                url.user = Some(match find(userinfo, b':') {
                    None => (unescape(userinfo, Mode::UserPassword)?, None),
                    Some(colon) => (
                        unescape(&userinfo[..colon], Mode::UserPassword)?,
                        Some(unescape(&userinfo[colon + 1..], Mode::UserPassword)?),
                    ),
                });
            }
        }
        url.path = unescape(rest, Mode::Path)?;
        url.raw_path = if escape(&url.path, Mode::Path) == rest {
            Vec::new()
        } else {
            rest.to_vec()
        };
        Ok(url)
    }

    /// Parses as Kubernetes' `url()` does: `url.ParseRequestURI` must accept the text (an
    /// absolute URI or an absolute path), and the result is then read with `url.Parse`,
    /// which splits off the fragment.
    pub(crate) fn parse(raw: &str) -> Result<Url, UrlError> {
        Url::parse_reference(raw.as_bytes(), true)?;
        let bytes = raw.as_bytes();
        let (reference, fragment) = match find(bytes, b'#') {
            Some(hash) => (&bytes[..hash], Some(&bytes[hash + 1..])),
            None => (bytes, None),
        };
        let mut url = Url::parse_reference(reference, false)?;
        if let Some(fragment) = fragment.filter(|fragment| !fragment.is_empty()) {
            url.fragment = unescape(fragment, Mode::Fragment)?;
            url.raw_fragment = if escape(&url.fragment, Mode::Fragment) == fragment {
                Vec::new()
            } else {
                fragment.to_vec()
            };
        }
        Ok(url)
    }

    /// Whether `ParseRequestURI` accepts the text (Kubernetes' `isURL`).
    pub(crate) fn is_request_uri(raw: &str) -> bool {
        Url::parse_reference(raw.as_bytes(), true).is_ok()
    }

    /// Why `ParseRequestURI` rejects the text, if it does.
    pub(crate) fn request_uri_error(raw: &str) -> Option<UrlError> {
        Url::parse_reference(raw.as_bytes(), true).err()
    }

    /// `host` without a valid `:port`, and without brackets.
    pub(crate) fn hostname(&self) -> &[u8] {
        self.split_host_port().0
    }

    /// The digits after the host's last colon, when they form a valid port.
    pub(crate) fn port(&self) -> &[u8] {
        self.split_host_port().1
    }

    fn split_host_port(&self) -> (&[u8], &[u8]) {
        let mut host = self.host.as_slice();
        let mut port: &[u8] = b"";
        if let Some(colon) = rfind(host, b':')
            && valid_optional_port(&host[colon..])
        {
            port = &host[colon + 1..];
            host = &host[..colon];
        }
        if host.len() >= 2 && host[0] == b'[' && host[host.len() - 1] == b']' {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// The path as it should be written: the original escaping when it is a valid one, else
    /// Go's default escaping.
    pub(crate) fn escaped_path(&self) -> Vec<u8> {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|path| path == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return self.path.clone();
        }
        escape(&self.path, Mode::Path)
    }

    fn escaped_fragment(&self) -> Vec<u8> {
        if !self.raw_fragment.is_empty()
            && valid_encoded(&self.raw_fragment, Mode::Fragment)
            && unescape(&self.raw_fragment, Mode::Fragment).is_ok_and(|f| f == self.fragment)
        {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Mode::Fragment)
    }

    /// The query parameters: keys to values in order, decoded, skipping malformed pairs and
    /// pairs containing `;` (Go's `URL.Query`).
    pub(crate) fn query(&self) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
        let mut parameters: Vec<(Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
        for pair in self.raw_query.split(|byte| *byte == b'&') {
            if pair.is_empty() || pair.contains(&b';') {
                continue;
            }
            let (key, value) = match find(pair, b'=') {
                Some(equals) => (&pair[..equals], &pair[equals + 1..]),
                None => (pair, &b""[..]),
            };
            let (Ok(key), Ok(value)) = (
                unescape(key, Mode::QueryComponent),
                unescape(value, Mode::QueryComponent),
            ) else {
                continue;
            };
            match parameters.iter_mut().find(|(existing, _)| *existing == key) {
                Some((_, values)) => values.push(value),
                None => parameters.push((key, vec![value])),
            }
        }
        parameters
    }

    /// The URL reassembled as Go's `URL.String()` does.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.scheme.is_empty() {
            out.extend_from_slice(&self.scheme);
            out.push(b':');
        }
        if !self.opaque.is_empty() {
            out.extend_from_slice(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.extend_from_slice(b"//");
                }
                if let Some((username, password)) = &self.user {
                    out.extend(escape(username, Mode::UserPassword));
                    if let Some(password) = password {
                        out.push(b':');
                        out.extend(escape(password, Mode::UserPassword));
                    }
                    out.push(b'@');
                }
                out.extend(escape(&self.host, Mode::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && path[0] != b'/' && !self.host.is_empty() {
                out.push(b'/');
            }
            if out.is_empty() {
                let segment = &path[..find(&path, b'/').unwrap_or(path.len())];
                if segment.contains(&b':') {
                    out.extend_from_slice(b"./");
                }
            }
            out.extend(path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push(b'?');
            out.extend_from_slice(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push(b'#');
            out.extend(self.escaped_fragment());
        }
        out
    }
}

/// Whether `text` needs no escaping beyond what it has (Go's `validEncoded`).
fn valid_encoded(text: &[u8], mode: Mode) -> bool {
    text.iter().all(|byte| {
        matches!(
            byte,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(*byte, mode)
    })
}
