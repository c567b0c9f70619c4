//! `cel.block`, cel-go's common-subexpression form: `cel.block([e0, e1, ...], result)` binds
//! `cel.index(0)` to `e0`, `cel.index(1)` to `e1` (which may use `cel.index(0)`) and so on
//! within `result`; `cel.iterVar(N, M)` and `cel.accuVar(N, M)` name the variables of nested
//! comprehensions. The block expands into nested `cel.bind`s, whose bindings are evaluated
//! when reached and whose errors surface only when used.

use crate::ast::{Comprehension, Expr, ExprKind, ListExpr, Literal, NodeFactory};
use crate::error::{MacroError, MacroProblem, PResult, SyntaxErrorKind};

/// The variable `cel.index(n)` stands for.
pub(crate) fn index_variable(index: u64) -> String {
    format!("@index{index}")
}

fn problem(
    span: crate::source::Span,
    name: &'static str,
    problem: MacroProblem,
) -> (crate::source::Span, SyntaxErrorKind) {
    (
        span,
        SyntaxErrorKind::InvalidMacro(MacroError { name, problem }),
    )
}

fn non_negative_literal(expr: &Expr) -> Option<u64> {
    match &expr.kind {
        ExprKind::Literal(Literal::Int(value)) => u64::try_from(*value).ok(),
        ExprKind::Literal(Literal::Uint(value)) => Some(*value),
        _ => None,
    }
}

/// `cel.index(N)`, `cel.iterVar(N, M)` or `cel.accuVar(N, M)` become the identifiers
/// `@indexN`, `@it:N:M` and `@ac:N:M`.
pub(super) fn expand_variable(
    nodes: &mut NodeFactory,
    call: &Expr,
    function: &str,
    args: &[Expr],
) -> PResult<Expr> {
    let name: &'static str = match function {
        "index" => "cel.index",
        "iterVar" => "cel.iterVar",
        _ => "cel.accuVar",
    };
    let numbers: Option<Vec<u64>> = args.iter().map(non_negative_literal).collect();
    let Some(numbers) = numbers else {
        return Err(problem(
            call.span,
            name,
            MacroProblem::ExpectedNonNegativeLiteral,
        ));
    };
    let identifier = match (function, numbers.as_slice()) {
        ("index", [index]) => index_variable(*index),
        ("iterVar", [depth, position]) => format!("@it:{depth}:{position}"),
        (_, [depth, position]) => format!("@ac:{depth}:{position}"),
        _ => {
            return Err(problem(
                call.span,
                name,
                MacroProblem::ExpectedNonNegativeLiteral,
            ));
        }
    };
    Ok(nodes.node(call.span, ExprKind::Ident(identifier)))
}

/// `cel.block([e0, ..., en], result)` becomes `cel.bind(@index0, e0, ... cel.bind(@indexn, en,
/// result))`.
pub(super) fn expand_block(
    nodes: &mut NodeFactory,
    call: &Expr,
    mut args: Vec<Expr>,
) -> PResult<Expr> {
    let span = call.span;
    let (Some(result), Some(bindings)) = (args.pop(), args.pop()) else {
        return Err(problem(
            span,
            "cel.block",
            MacroProblem::ExpectedListOfBindings,
        ));
    };
    let ExprKind::List(ListExpr {
        elements,
        optional_indices,
    }) = bindings.kind
    else {
        return Err(problem(
            bindings.span,
            "cel.block",
            MacroProblem::ExpectedListOfBindings,
        ));
    };
    if !optional_indices.is_empty() {
        return Err(problem(
            bindings.span,
            "cel.block",
            MacroProblem::ExpectedListOfBindings,
        ));
    }
    let mut expanded = result;
    for (index, binding) in elements.into_iter().enumerate().rev() {
        let variable = index_variable(index as u64);
        let empty = nodes.node(
            span,
            ExprKind::List(ListExpr {
                elements: Vec::new(),
                optional_indices: Vec::new(),
            }),
        );
        let never = nodes.node(span, ExprKind::Literal(Literal::Bool(false)));
        let step = nodes.node(span, ExprKind::Ident(variable.clone()));
        let comprehension = Comprehension {
            iter_var: "#unused".to_string(),
            iter_var2: None,
            iter_range: empty,
            accu_var: variable,
            accu_init: binding,
            loop_condition: never,
            loop_step: step,
            result: expanded,
        };
        expanded = nodes.node(span, ExprKind::Comprehension(Box::new(comprehension)));
    }
    Ok(expanded)
}
