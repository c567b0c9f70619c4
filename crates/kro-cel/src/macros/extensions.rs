//! Macros of the extension libraries: `math.greatest` and `math.least` (the math library),
//! `sortBy` (the lists library) and `runtime.newCondition` (kro's runtime library).
//!
//! The first three expand into calls of internal functions whose names start with `@`, so
//! that user code cannot call them directly; the libraries declare and implement those
//! functions. Without the library the expansion fails to check with an undeclared function,
//! as in cel-go. `runtime.newCondition({type: 'Ready', status: 'True'})` stays the same call,
//! with the map literal's bare-identifier keys rewritten to string literals and checked.

use std::collections::HashSet;
use std::sync::Arc;

use crate::ast::{
    Call, Comprehension, Expr, ExprKind, ListExpr, Literal, MapEntry, MapExpr, NodeFactory,
};
use crate::error::{ConditionSyntaxError, MacroError, MacroProblem, PResult, SyntaxErrorKind};
use crate::source::Span;

use super::{ACCUMULATOR, Builder, Macro};

/// The internal function `math.greatest(...)` expands into.
pub(crate) const MAX_FUNCTION: &str = "math.@max";

/// The internal function `math.least(...)` expands into.
pub(crate) const MIN_FUNCTION: &str = "math.@min";

/// The internal member function `list.sortBy(x, key)` expands into: it sorts the receiver by
/// the list of keys computed for its elements.
pub(crate) const SORT_BY_KEYS_FUNCTION: &str = "@sortByAssociatedKeys";

/// The variable `sortBy` binds its receiver to, so the receiver is evaluated once.
const SORT_BY_INPUT: &str = "@__sortBy_input__";

/// The receiver whose `newCondition(...)` calls are rewritten: kro's `runtime` variable.
pub(crate) const RUNTIME_RECEIVER: &str = "runtime";

/// The member function `runtime.newCondition(...)` calls.
pub(super) const NEW_CONDITION: &str = "newCondition";

/// The keys `runtime.newCondition`'s map may have, required ones first.
const CONDITION_KEYS: [&str; 4] = ["type", "status", "reason", "message"];

/// The keys `runtime.newCondition`'s map must have.
const REQUIRED_CONDITION_KEYS: [&str; 2] = ["type", "status"];

fn invalid(span: Span, name: &'static str, problem: MacroProblem) -> (Span, SyntaxErrorKind) {
    (
        span,
        SyntaxErrorKind::InvalidMacro(MacroError { name, problem }),
    )
}

/// Whether an argument may be a number: numeric literals and anything that is not a literal
/// or an aggregate literal (its type is only known after checking).
fn may_be_numeric(arg: &Expr) -> bool {
    match &arg.kind {
        ExprKind::Literal(literal) => matches!(
            literal,
            Literal::Int(_) | Literal::Uint(_) | Literal::Double(_)
        ),
        ExprKind::List(_) | ExprKind::Map(_) | ExprKind::Struct(_) => false,
        _ => true,
    }
}

/// Whether an argument is a non-empty list literal whose elements may all be numbers.
fn is_numeric_list_literal(arg: &Expr) -> bool {
    match &arg.kind {
        ExprKind::List(list) => {
            !list.elements.is_empty() && list.elements.iter().all(may_be_numeric)
        }
        _ => false,
    }
}

/// `math.greatest(a)` becomes `math.@max(a)`, `math.greatest(a, b)` becomes
/// `math.@max(a, b)`, and three or more arguments become `math.@max([a, b, c ...])`;
/// `math.least` likewise with `math.@min`. Literal arguments must be numbers.
pub(super) fn expand_extremum(
    nodes: &mut NodeFactory,
    call: Expr,
    args: Vec<Expr>,
    greatest: bool,
) -> PResult<Expr> {
    let (name, function) = if greatest {
        ("math.greatest", MAX_FUNCTION)
    } else {
        ("math.least", MIN_FUNCTION)
    };
    let span = call.span;
    let args = match args.as_slice() {
        [] => return Err(invalid(span, name, MacroProblem::MissingArguments)),
        [only] => {
            if !is_numeric_list_literal(only) && !may_be_numeric(only) {
                return Err(invalid(
                    only.span,
                    name,
                    MacroProblem::InvalidSingleArgument,
                ));
            }
            args
        }
        many => {
            if let Some(bad) = many.iter().find(|arg| !may_be_numeric(arg)) {
                return Err(invalid(bad.span, name, MacroProblem::NonNumericArgument));
            }
            if many.len() == 2 {
                args
            } else {
                let list = nodes.node(
                    span,
                    ExprKind::List(ListExpr {
                        elements: args,
                        optional_indices: Vec::new(),
                    }),
                );
                vec![list]
            }
        }
    };
    let expanded = nodes.call(span, function, args);
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

/// `list.sortBy(x, key)` becomes, in effect,
/// `cel.bind(@input, list, @input.@sortByAssociatedKeys(@input.map(x, key)))`: the receiver
/// is evaluated once, each element's key is computed by a `map` comprehension, and the
/// internal function sorts the elements by their keys.
pub(super) fn expand_sort_by(
    nodes: &mut NodeFactory,
    call: Expr,
    target: Option<Box<Expr>>,
    args: Vec<Expr>,
) -> PResult<Expr> {
    const NAME: &str = "sortBy";
    let span = call.span;
    let Some(target) = target else {
        return Ok(call);
    };
    if !matches!(
        target.kind,
        ExprKind::List(_)
            | ExprKind::Select(_)
            | ExprKind::Ident(_)
            | ExprKind::Comprehension(_)
            | ExprKind::Call(_)
    ) {
        return Err(invalid(target.span, NAME, MacroProblem::UnsupportedTarget));
    }
    let mut args = args.into_iter();
    let (Some(variable), Some(key)) = (args.next(), args.next()) else {
        return Ok(call);
    };
    let variable = match variable.kind {
        ExprKind::Ident(name) if !name.starts_with('.') => name,
        _ => {
            return Err(invalid(
                variable.span,
                NAME,
                MacroProblem::ArgumentMustBeSimpleName,
            ));
        }
    };
    if variable == ACCUMULATOR {
        return Err(invalid(span, NAME, MacroProblem::ReservedAccumulatorName));
    }
    let mut builder = Builder { nodes, span };
    let range = builder.ident(SORT_BY_INPUT);
    let keys = builder.comprehension(Macro::Map, vec![variable], range, vec![key]);
    let keys = builder
        .nodes
        .node(span, ExprKind::Comprehension(Box::new(keys)));
    let input = builder.ident(SORT_BY_INPUT);
    let sorted = builder.nodes.node(
        span,
        ExprKind::Call(Call {
            target: Some(Box::new(input)),
            function: SORT_BY_KEYS_FUNCTION.to_string(),
            args: vec![keys],
        }),
    );
    let empty_range = builder.empty_list();
    let never = builder.literal(Literal::Bool(false));
    let step = builder.ident(SORT_BY_INPUT);
    let bound = Comprehension {
        iter_var: "#unused".to_string(),
        iter_var2: None,
        iter_range: empty_range,
        accu_var: SORT_BY_INPUT.to_string(),
        accu_init: *target,
        loop_condition: never,
        loop_step: step,
        result: sorted,
    };
    let expanded = nodes.node(span, ExprKind::Comprehension(Box::new(bound)));
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

/// `runtime.newCondition({type: t, status: s})` becomes `runtime.newCondition({'type': t,
/// 'status': s})`. The argument must be a map literal whose keys are bare identifiers among
/// `type`, `status`, `reason` and `message`, none repeated, with `type` and `status` present.
/// String-literal values are checked as evaluation would check them: `type` non-empty and
/// `status` one of `True`, `False` and `Unknown`.
pub(super) fn expand_new_condition(
    nodes: &mut NodeFactory,
    call: Expr,
    target: Option<Box<Expr>>,
    args: Vec<Expr>,
) -> PResult<Expr> {
    let fail = |span: Span, problem| (span, SyntaxErrorKind::InvalidCondition(problem));
    let span = call.span;
    let (Some(target), [argument]) = (target, args.as_slice()) else {
        return Ok(call);
    };
    let ExprKind::Map(map) = &argument.kind else {
        return Err(fail(argument.span, ConditionSyntaxError::NotAMapLiteral));
    };
    let mut seen = HashSet::new();
    let mut entries = Vec::with_capacity(map.entries.len());
    for entry in &map.entries {
        let ExprKind::Ident(name) = &entry.key.kind else {
            return Err(fail(
                entry.key.span,
                ConditionSyntaxError::KeyNotAnIdentifier,
            ));
        };
        if !CONDITION_KEYS.contains(&name.as_str()) {
            return Err(fail(
                entry.key.span,
                ConditionSyntaxError::UnknownKey(name.clone()),
            ));
        }
        if !seen.insert(name.as_str()) {
            return Err(fail(
                entry.key.span,
                ConditionSyntaxError::DuplicateKey(name.clone()),
            ));
        }
        if let ExprKind::Literal(Literal::String(value)) = &entry.value.kind {
            match name.as_str() {
                "type" if value.is_empty() => {
                    return Err(fail(entry.value.span, ConditionSyntaxError::EmptyType));
                }
                "status" if !crate::ext::is_valid_condition_status(value) => {
                    return Err(fail(
                        entry.value.span,
                        ConditionSyntaxError::InvalidStatus(value.to_string()),
                    ));
                }
                _ => {}
            }
        }
        let key = nodes.node(
            entry.key.span,
            ExprKind::Literal(Literal::String(Arc::from(name.as_str()))),
        );
        entries.push(MapEntry {
            id: nodes.new_id(),
            span: entry.span,
            key,
            value: entry.value.clone(),
            optional: false,
        });
    }
    if let Some(missing) = REQUIRED_CONDITION_KEYS
        .into_iter()
        .find(|key| !seen.contains(key))
    {
        return Err(fail(
            argument.span,
            ConditionSyntaxError::MissingKey(missing),
        ));
    }
    let rewritten = nodes.node(argument.span, ExprKind::Map(MapExpr { entries }));
    let expanded = nodes.node(
        span,
        ExprKind::Call(Call {
            target: Some(target),
            function: NEW_CONDITION.to_string(),
            args: vec![rewritten],
        }),
    );
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

#[cfg(test)]
mod tests {
    use crate::ast::ExprKind;
    use crate::error::{MacroProblem, SyntaxErrorKind};
    use crate::parser::parse;

    fn macro_problem(text: &str) -> MacroProblem {
        let error = parse(text).expect_err("invalid macro call");
        match &error.issues[0].kind {
            SyntaxErrorKind::InvalidMacro(error) => error.problem,
            other => panic!("expected a macro error, got {other:?}"),
        }
    }

    fn called_function(text: &str) -> String {
        match parse(text).expect("parses").expr.kind {
            ExprKind::Call(call) => call.function,
            other => panic!("expected a call, got {other:?}"),
        }
    }

    #[test]
    fn greatest_and_least_expand_to_internal_functions() {
        assert_eq!(called_function("math.greatest(1)"), "math.@max");
        assert_eq!(called_function("math.greatest(1, 2.0)"), "math.@max");
        assert_eq!(called_function("math.least(x, 2u, 3)"), "math.@min");
        assert_eq!(called_function("math.least([1, 2])"), "math.@min");
    }

    #[test]
    fn three_or_more_extremum_arguments_become_one_list() {
        let ast = parse("math.greatest(1, 2, 3)").expect("parses");
        let ExprKind::Call(call) = ast.expr.kind else {
            panic!("expected a call");
        };
        assert_eq!(call.args.len(), 1);
        assert!(matches!(&call.args[0].kind, ExprKind::List(list) if list.elements.len() == 3));
    }

    #[test]
    fn extremum_macros_reject_bad_literal_arguments() {
        let cases = [
            ("math.greatest()", MacroProblem::MissingArguments),
            ("math.least('a')", MacroProblem::InvalidSingleArgument),
            ("math.least([])", MacroProblem::InvalidSingleArgument),
            ("math.greatest({})", MacroProblem::InvalidSingleArgument),
            (
                "math.greatest([1, 'a'])",
                MacroProblem::InvalidSingleArgument,
            ),
            ("math.greatest(1, 'a')", MacroProblem::NonNumericArgument),
            ("math.least(1, 2, [3])", MacroProblem::NonNumericArgument),
        ];
        for (text, problem) in cases {
            assert_eq!(macro_problem(text), problem, "{text}");
        }
    }

    #[test]
    fn greatest_on_another_receiver_is_an_ordinary_call() {
        assert_eq!(called_function("x.greatest(1)"), "greatest");
    }

    #[test]
    fn sort_by_binds_its_receiver_once() {
        let ast = parse("[3, 1].sortBy(x, -x)").expect("parses");
        let ExprKind::Comprehension(bound) = &ast.expr.kind else {
            panic!("expected a comprehension");
        };
        assert_eq!(bound.accu_var, "@__sortBy_input__");
        assert!(matches!(bound.accu_init.kind, ExprKind::List(_)));
        assert!(matches!(
            &bound.result.kind,
            ExprKind::Call(call) if call.function == "@sortByAssociatedKeys"
        ));
    }

    #[test]
    fn sort_by_rejects_literal_receivers_and_complex_variables() {
        assert_eq!(
            macro_problem("'a'.sortBy(x, x)"),
            MacroProblem::UnsupportedTarget
        );
        assert_eq!(
            macro_problem("{}.sortBy(x, x)"),
            MacroProblem::UnsupportedTarget
        );
        assert_eq!(
            macro_problem("[1].sortBy(x.y, x)"),
            MacroProblem::ArgumentMustBeSimpleName
        );
    }
}
