//! Printing an [`Ast`] back to CEL text that parses to the same tree.
//!
//! Operators are fully parenthesised, strings are escaped so they read back byte for byte, and
//! macros are printed as they were written (from [`Ast::macro_calls`]).

use std::fmt::Write;

use crate::ast::{Ast, Expr, ExprKind, Literal, operators as names};

/// CEL text for `ast`; parsing it gives a tree equal to `ast` up to node ids and positions.
pub fn unparse(ast: &Ast) -> String {
    let mut out = String::new();
    write_expr(ast, &ast.expr, &mut out);
    out
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn write_field(name: &str, out: &mut String) {
    if is_identifier(name) {
        out.push_str(name);
    } else {
        out.push('`');
        out.push_str(name);
        out.push('`');
    }
}

fn write_list(ast: &Ast, items: &[Expr], out: &mut String) {
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        write_expr(ast, item, out);
    }
}

fn binary_symbol(function: &str) -> Option<&'static str> {
    Some(match function {
        names::LOGICAL_AND => "&&",
        names::LOGICAL_OR => "||",
        names::EQUALS => "==",
        names::NOT_EQUALS => "!=",
        names::LESS => "<",
        names::LESS_EQUALS => "<=",
        names::GREATER => ">",
        names::GREATER_EQUALS => ">=",
        names::ADD => "+",
        names::SUBTRACT => "-",
        names::MULTIPLY => "*",
        names::DIVIDE => "/",
        names::MODULO => "%",
        names::IN => "in",
        _ => return None,
    })
}

fn write_expr(ast: &Ast, expr: &Expr, out: &mut String) {
    crate::stack::guard(|| write_expr_unguarded(ast, expr, out));
}

fn write_expr_unguarded(ast: &Ast, expr: &Expr, out: &mut String) {
    if let Some(call) = ast.macro_calls.get(&expr.id) {
        write_expr(ast, call, out);
        return;
    }
    match &expr.kind {
        ExprKind::Literal(literal) => write_literal(literal, out),
        ExprKind::Ident(name) => out.push_str(name),
        ExprKind::Select(select) => {
            if select.test_only {
                out.push_str("has(");
            }
            write_expr(ast, &select.operand, out);
            out.push('.');
            write_field(&select.field, out);
            if select.test_only {
                out.push(')');
            }
        }
        ExprKind::Call(call) => {
            let args = &call.args;
            match (
                call.target.as_deref(),
                call.function.as_str(),
                args.as_slice(),
            ) {
                (None, function, [left, right]) if binary_symbol(function).is_some() => {
                    out.push('(');
                    write_expr(ast, left, out);
                    let _ = write!(out, " {} ", binary_symbol(function).unwrap_or("?"));
                    write_expr(ast, right, out);
                    out.push(')');
                }
                (None, names::LOGICAL_NOT | names::NEGATE, [operand]) => {
                    out.push_str(if call.function == names::NEGATE {
                        "(-("
                    } else {
                        "(!("
                    });
                    write_expr(ast, operand, out);
                    out.push_str("))");
                }
                (None, names::CONDITIONAL, [condition, then, otherwise]) => {
                    out.push('(');
                    write_expr(ast, condition, out);
                    out.push_str(" ? ");
                    write_expr(ast, then, out);
                    out.push_str(" : ");
                    write_expr(ast, otherwise, out);
                    out.push(')');
                }
                (None, names::INDEX | names::OPTIONAL_INDEX, [operand, index]) => {
                    write_expr(ast, operand, out);
                    out.push_str(if call.function == names::INDEX {
                        "["
                    } else {
                        "[?"
                    });
                    write_expr(ast, index, out);
                    out.push(']');
                }
                (None, names::OPTIONAL_SELECT, [operand, field]) => {
                    write_expr(ast, operand, out);
                    out.push_str(".?");
                    match &field.kind {
                        ExprKind::Literal(Literal::String(name)) => write_field(name, out),
                        _ => write_expr(ast, field, out),
                    }
                }
                (Some(target), function, _) => {
                    write_expr(ast, target, out);
                    out.push('.');
                    out.push_str(function);
                    out.push('(');
                    write_list(ast, args, out);
                    out.push(')');
                }
                (None, function, _) => {
                    out.push_str(function);
                    out.push('(');
                    write_list(ast, args, out);
                    out.push(')');
                }
            }
        }
        ExprKind::List(list) => {
            out.push('[');
            for (index, element) in list.elements.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                if list.optional_indices.contains(&index) {
                    out.push('?');
                }
                write_expr(ast, element, out);
            }
            out.push(']');
        }
        ExprKind::Map(map) => {
            out.push('{');
            for (index, entry) in map.entries.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                if entry.optional {
                    out.push('?');
                }
                write_expr(ast, &entry.key, out);
                out.push_str(": ");
                write_expr(ast, &entry.value, out);
            }
            out.push('}');
        }
        ExprKind::Struct(object) => {
            out.push_str(&object.type_name);
            out.push('{');
            for (index, field) in object.fields.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                if field.optional {
                    out.push('?');
                }
                write_field(&field.field, out);
                out.push_str(": ");
                write_expr(ast, &field.value, out);
            }
            out.push('}');
        }
        ExprKind::Comprehension(comprehension) => {
            // Only macros produce comprehensions, and those print as the macro call above; a
            // hand-built one prints its parts in a form that names what it is.
            let _ = write!(
                out,
                "__comprehension__({}, {}, ",
                comprehension.iter_var, comprehension.accu_var
            );
            write_expr(ast, &comprehension.iter_range, out);
            out.push(')');
        }
    }
}

fn write_literal(literal: &Literal, out: &mut String) {
    match literal {
        Literal::Null => out.push_str("null"),
        Literal::Bool(value) => {
            let _ = write!(out, "{value}");
        }
        Literal::Int(value) => {
            let _ = write!(out, "{value}");
        }
        Literal::Uint(value) => {
            let _ = write!(out, "{value}u");
        }
        Literal::Double(value) => {
            let _ = write!(out, "{value:?}");
        }
        Literal::String(text) => {
            out.push('"');
            for character in text.chars() {
                match character {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c.is_control() => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Literal::Bytes(bytes) => {
            out.push_str("b\"");
            for byte in bytes.iter() {
                match byte {
                    b'"' => out.push_str("\\\""),
                    b'\\' => out.push_str("\\\\"),
                    0x20..=0x7e => out.push(*byte as char),
                    _ => {
                        let _ = write!(out, "\\x{byte:02x}");
                    }
                }
            }
            out.push('"');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    #[test]
    fn printing_keeps_macros_and_operators() {
        let cases = [
            ("[1, 2].map(x, x * 2)", "[1, 2].map(x, (x * 2))"),
            ("has(a.b) && !c", "(has(a.b) && (!(c)))"),
            ("a.?b[?0].orValue(1u)", "a.?b[?0].orValue(1u)"),
            ("m.`content-type`", "m.`content-type`"),
            ("-1 - -x", "(-1 - (-(x)))"),
            ("'a\\n\"' + b'\\xff'", "(\"a\\n\\\"\" + b\"\\xff\")"),
        ];
        for (text, printed) in cases {
            let ast = parse(text).expect("parses");
            assert_eq!(unparse(&ast), printed, "{text}");
        }
    }
}
