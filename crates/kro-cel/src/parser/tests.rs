use super::*;
use crate::error::{MacroError, MacroProblem, SyntaxErrorKind};

fn parse_ok(text: &str) -> Ast {
    parse(text).unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn parse_error(text: &str) -> (u32, SyntaxErrorKind) {
    let error = parse(text).expect_err(text);
    let issue = error.issues.into_iter().next().expect("one issue");
    (issue.span.start, issue.kind)
}

fn call_name(expr: &Expr) -> &str {
    match &expr.kind {
        ExprKind::Call(call) => &call.function,
        other => panic!("not a call: {other:?}"),
    }
}

fn args(expr: &Expr) -> &[Expr] {
    match &expr.kind {
        ExprKind::Call(call) => &call.args,
        other => panic!("not a call: {other:?}"),
    }
}

#[test]
fn multiplication_binds_tighter_than_addition() {
    let ast = parse_ok("1 + 2 * 3");
    assert_eq!(call_name(&ast.expr), operators::ADD);
    assert_eq!(call_name(&args(&ast.expr)[1]), operators::MULTIPLY);
}

#[test]
fn subtraction_is_left_associative() {
    let ast = parse_ok("a - b - c");
    let left = &args(&ast.expr)[0];
    assert_eq!(call_name(left), operators::SUBTRACT);
    assert_eq!(args(&ast.expr)[1].kind, ExprKind::Ident("c".into()));
}

#[test]
fn conditional_is_right_associative_and_lowest() {
    let ast = parse_ok("a || b ? c : d ? e : f");
    assert_eq!(call_name(&ast.expr), operators::CONDITIONAL);
    assert_eq!(call_name(&args(&ast.expr)[0]), operators::LOGICAL_OR);
    assert_eq!(call_name(&args(&ast.expr)[2]), operators::CONDITIONAL);
}

#[test]
fn long_logical_chains_are_balanced() {
    let text = vec!["x"; 64].join(" && ");
    let ast = parse_ok(&text);
    fn depth(expr: &Expr) -> usize {
        match &expr.kind {
            ExprKind::Call(call) => 1 + call.args.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    assert_eq!(depth(&ast.expr), 6);
}

#[test]
fn minus_before_a_literal_is_part_of_it() {
    let ast = parse_ok("-9223372036854775808");
    assert_eq!(ast.expr.kind, ExprKind::Literal(Literal::Int(i64::MIN)));
    let ast = parse_ok("--1");
    assert_eq!(call_name(&ast.expr), operators::NEGATE);
    assert_eq!(args(&ast.expr)[0].kind, ExprKind::Literal(Literal::Int(-1)));
    assert!(matches!(
        parse_error("9223372036854775808"),
        (0, SyntaxErrorKind::IntegerOutOfRange(_))
    ));
}

#[test]
fn member_calls_selects_and_indexes_chain() {
    let ast = parse_ok("a.b[0].c(1).d");
    let ExprKind::Select(select) = &ast.expr.kind else {
        panic!("select")
    };
    assert_eq!(select.field, "d");
    let ExprKind::Call(call) = &select.operand.kind else {
        panic!("call")
    };
    assert_eq!(call.function, "c");
    assert_eq!(
        call_name(call.target.as_deref().expect("receiver")),
        operators::INDEX
    );
}

#[test]
fn optional_syntax_parses_to_optional_operators() {
    let ast = parse_ok("a.?b[?0]");
    assert_eq!(call_name(&ast.expr), operators::OPTIONAL_INDEX);
    assert_eq!(call_name(&args(&ast.expr)[0]), operators::OPTIONAL_SELECT);
    let ast = parse_ok("[?x, y]");
    let ExprKind::List(list) = &ast.expr.kind else {
        panic!("list")
    };
    assert_eq!(list.optional_indices, vec![0]);
    let ast = parse_ok("{?'k': v}");
    let ExprKind::Map(map) = &ast.expr.kind else {
        panic!("map")
    };
    assert!(map.entries[0].optional);
}

#[test]
fn message_literals_take_qualified_names() {
    let ast = parse_ok(".a.b.C{x: 1, ?y: z}");
    let ExprKind::Struct(object) = &ast.expr.kind else {
        panic!("struct")
    };
    assert_eq!(object.type_name, ".a.b.C");
    assert_eq!(object.fields.len(), 2);
    assert!(object.fields[1].optional);
    assert!(matches!(
        parse_error("T{a: 1, a: 2}"),
        (8, SyntaxErrorKind::RepeatedField(field)) if field == "a"
    ));
}

#[test]
fn macros_expand_into_comprehensions_and_remember_the_call() {
    let ast = parse_ok("[1, 2].map(x, x * 2)");
    let ExprKind::Comprehension(comprehension) = &ast.expr.kind else {
        panic!("fold")
    };
    assert_eq!(comprehension.iter_var, "x");
    assert_eq!(comprehension.accu_var, crate::macros::ACCUMULATOR);
    let original = ast.macro_calls.get(&ast.expr.id).expect("macro call kept");
    assert_eq!(call_name(original), "map");
}

#[test]
fn has_becomes_a_presence_test() {
    let ast = parse_ok("has(a.b)");
    let ExprKind::Select(select) = &ast.expr.kind else {
        panic!("select")
    };
    assert!(select.test_only);
    assert!(matches!(
        parse_error("has(a)"),
        (
            0,
            SyntaxErrorKind::InvalidMacro(MacroError {
                problem: MacroProblem::InvalidHasArgument,
                ..
            })
        )
    ));
}

#[test]
fn macro_variables_must_be_simple_names() {
    assert!(matches!(
        parse_error("[1].all(x.y, true)"),
        (
            3,
            SyntaxErrorKind::InvalidMacro(MacroError {
                name: "all",
                problem: MacroProblem::ArgumentMustBeSimpleName
            })
        )
    ));
    assert!(matches!(
        parse_error("{}.all(k, k, true)"),
        (
            2,
            SyntaxErrorKind::InvalidMacro(MacroError {
                problem: MacroProblem::DuplicateVariableName,
                ..
            })
        )
    ));
}

#[test]
fn macros_can_be_disabled() {
    let config = ParserConfig::default().enable_macros(false);
    let ast = parse_with("[1].map(x, x)", &config).expect("parses");
    assert_eq!(call_name(&ast.expr), "map");
}

#[test]
fn reserved_words_are_not_identifiers_but_may_be_fields() {
    assert!(
        matches!(parse_error("  if"), (2, SyntaxErrorKind::ReservedIdentifier(word)) if word == "if")
    );
    parse_ok("a.if + a.in + a.null");
}

#[test]
fn quoted_field_names_select_keys_with_punctuation() {
    let ast = parse_ok("m.`content-type`");
    let ExprKind::Select(select) = &ast.expr.kind else {
        panic!("select")
    };
    assert_eq!(select.field, "content-type");
}

#[test]
fn syntax_errors_name_the_token_and_place() {
    let (start, kind) = parse_error("1 + ");
    assert_eq!(start, 4);
    assert!(
        matches!(kind, SyntaxErrorKind::UnexpectedToken { found, .. } if found == "end of input")
    );
    let (start, _) = parse_error("a b");
    assert_eq!(start, 2);
    let (start, _) = parse_error("(1");
    assert_eq!(start, 2);
}

#[test]
fn nesting_past_the_limit_is_an_error_not_a_crash() {
    let deep = format!("{}1{}", "(".repeat(300), ")".repeat(300));
    assert!(matches!(
        parse_error(&deep),
        (_, SyntaxErrorKind::RecursionLimitExceeded { limit: 250 })
    ));
    let chain = vec!["1"; 300].join(" + ");
    assert!(matches!(
        parse_error(&chain),
        (_, SyntaxErrorKind::RecursionLimitExceeded { .. })
    ));
    let negations = format!("{}true", "!".repeat(300));
    assert!(matches!(
        parse_error(&negations),
        (_, SyntaxErrorKind::RecursionLimitExceeded { .. })
    ));
    let selects = format!("a{}", ".b".repeat(300));
    assert!(matches!(
        parse_error(&selects),
        (_, SyntaxErrorKind::RecursionLimitExceeded { .. })
    ));
}

#[test]
fn oversized_input_is_rejected_before_lexing() {
    let config = ParserConfig::default().max_code_points(10);
    let error = parse_with("1 + 2 + 3 + 4", &config).expect_err("too long");
    assert_eq!(
        error.issues[0].kind,
        SyntaxErrorKind::SizeLimitExceeded {
            size: 13,
            limit: 10
        }
    );
}

#[test]
fn node_ids_are_unique() {
    let ast = parse_ok(
        "[1, 2].exists(x, x > 1) && {'a': 1}.all(k, v, v > 0) ? m.?x.optMap(y, y) : T{f: 1}",
    );
    let mut ids = Vec::new();
    ast.expr.walk(&mut |expr| ids.push(expr.id));
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count);
}

#[test]
fn errors_render_with_cel_go_layout() {
    let error = parse("a +\n  * b").expect_err("bad");
    assert_eq!(
        error.to_string(),
        "ERROR: <input>:2:3: syntax error: mismatched input '*' expecting an expression\n |   * b\n | ..^"
    );
}
