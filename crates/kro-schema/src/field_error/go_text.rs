//! Go's text renderings that Kubernetes' messages are made of: `strconv.Quote` (`%q`), `%v` of
//! a `float64`, and `encoding/json`'s `Marshal` of decoded JSON (sorted keys, HTML escaping).
//! Error texts are pinned byte for byte, so these follow Go's rules rather than Rust's.

use std::fmt::Write;

use serde_json::Value;

/// `strconv.Quote`: a double-quoted Go string literal, escaping what Go does not print.
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the ASCII space; other
/// spaces, controls and invisible format characters are escaped.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
            | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
            | 0xE000..=0xF8FF | 0xD800..=0xDFFF)
}

/// The shortest decimal digits of a finite, non-zero `f64` and its decimal exponent
/// (`1234.5` gives `("12345", 3)`).
fn shortest_digits(value: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest digits that round-trip, as Go's `-1` precision does.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse().unwrap_or(0))
}

fn exponent_form(
    negative: bool,
    digits: &str,
    exponent: i32,
    min_exponent_digits: usize,
) -> String {
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let (first, rest) = digits.split_at(1.min(digits.len()));
    out.push_str(first);
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    out.push('e');
    out.push(if exponent < 0 { '-' } else { '+' });
    let _ = write!(
        out,
        "{:0width$}",
        exponent.unsigned_abs(),
        width = min_exponent_digits
    );
    out
}

fn fixed_form(negative: bool, digits: &str, exponent: i32) -> String {
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if exponent < 0 {
        out.push_str("0.");
        for _ in 0..(-exponent - 1) {
            out.push('0');
        }
        out.push_str(digits);
        return out;
    }
    let integer_digits = exponent as usize + 1;
    if digits.len() <= integer_digits {
        out.push_str(digits);
        for _ in digits.len()..integer_digits {
            out.push('0');
        }
    } else {
        out.push_str(&digits[..integer_digits]);
        out.push('.');
        out.push_str(&digits[integer_digits..]);
    }
    out
}

fn special_float(value: f64) -> Option<String> {
    if value.is_nan() {
        Some("NaN".to_string())
    } else if value.is_infinite() {
        Some(if value > 0.0 { "+Inf" } else { "-Inf" }.to_string())
    } else if value == 0.0 {
        Some(if value.is_sign_negative() { "-0" } else { "0" }.to_string())
    } else {
        None
    }
}

/// `fmt.Sprintf("%v", value)` for a `float64`: `%g` with the shortest digits, switching to
/// exponent form below 1e-4 and from 1e6 (`1e+06`, `1.5e-05`).
pub(crate) fn format_float(value: f64) -> String {
    if let Some(special) = special_float(value) {
        return special;
    }
    let (digits, exponent) = shortest_digits(value);
    if !(-4..6).contains(&exponent) {
        exponent_form(value < 0.0, &digits, exponent, 2)
    } else {
        fixed_form(value < 0.0, &digits, exponent)
    }
}

/// `encoding/json`'s rendering of a `float64`: fixed notation, except exponent form below 1e-6
/// and from 1e21 (`1e-7`, `1e+21`).
pub fn json_float(value: f64) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (digits, exponent) = shortest_digits(value);
    let magnitude = value.abs();
    if !(1e-6..1e21).contains(&magnitude) {
        exponent_form(value < 0.0, &digits, exponent, 1)
    } else {
        fixed_form(value < 0.0, &digits, exponent)
    }
}

/// A JSON number as Go holds a decoded one: `int64` when it is an integer that fits, else
/// `float64`.
pub(crate) fn number_text(number: &serde_json::Number, float: fn(f64) -> String) -> String {
    match number.as_i64() {
        Some(int) => int.to_string(),
        None => float(number.as_f64().unwrap_or(f64::NAN)),
    }
}

/// `%v` of a decoded JSON number.
pub(crate) fn format_number(number: &serde_json::Number) -> String {
    number_text(number, format_float)
}

/// `json.Marshal` of a decoded JSON value: object keys sorted, `<`, `>` and `&` escaped.
pub(crate) fn marshal_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number_text(number, json_float)),
        Value::String(text) => kro_cel::push_go_json_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                kro_cel::push_go_json_string(out, key);
                out.push(':');
                if let Some(item) = fields.get(key) {
                    write_json(item, out);
                }
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_prints_them_with_percent_v() {
        let cases = [
            (0.9, "0.9"),
            (1.0, "1"),
            (-2.5, "-2.5"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e300, "1.5e+300"),
            (0.0, "0"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_float(value), expected, "{value}");
        }
    }

    #[test]
    fn json_floats_switch_to_exponents_only_at_the_extremes() {
        let cases = [
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (2.5, "2.5"),
        ];
        for (value, expected) in cases {
            assert_eq!(json_float(value), expected, "{value}");
        }
    }

    #[test]
    fn quoting_escapes_as_strconv_quote_does() {
        assert_eq!(quote("a\"b\\c\n\t"), r#""a\"b\\c\n\t""#);
        assert_eq!(quote("\u{1}x\u{7f}"), r#""\x01x\x7f""#);
        assert_eq!(quote("héllo ✓"), "\"héllo ✓\"");
        assert_eq!(quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
    }

    #[test]
    fn json_is_marshalled_with_sorted_keys_and_html_escapes() {
        let value = json!({"b": [1, 2.5, 1e21, null], "a": "<x&y>", "c": {"z": true, "y": false}});
        assert_eq!(
            marshal_json(&value),
            r#"{"a":"\u003cx\u0026y\u003e","b":[1,2.5,1e+21,null],"c":{"y":false,"z":true}}"#
        );
    }
}
