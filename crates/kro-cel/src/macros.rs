//! Macro expansion: calls such as `list.all(x, p)` become comprehension nodes while parsing.
//!
//! The expansions follow the CEL specification (and cel-go's accumulator layout), so the
//! checker and the interpreter only ever see comprehensions. The extension libraries' macros
//! (`math.greatest`, `math.least`, `sortBy`) expand into calls of internal functions, and
//! kro's `runtime.newCondition` has its map argument's identifier keys rewritten to strings;
//! see [`extensions`].

mod block;
mod extensions;

pub(crate) use extensions::{MAX_FUNCTION, MIN_FUNCTION, SORT_BY_KEYS_FUNCTION};

use extensions::NEW_CONDITION;

use crate::ast::{
    Call, Comprehension, Expr, ExprKind, ListExpr, Literal, MapExpr, NodeFactory, Select, operators,
};
use crate::error::{MacroError, MacroProblem, PResult, SyntaxErrorKind};
use crate::source::Span;

/// The accumulator's name in expanded comprehensions; it is not a valid identifier, so user
/// code cannot refer to it.
pub const ACCUMULATOR: &str = "@result";

/// What a call is, as far as macros go.
enum Recognised {
    /// `has(a.b)`
    Has,
    /// A macro that expands into a comprehension.
    Fold(Macro),
    /// `opt.optMap(x, e)` or (flat) `opt.optFlatMap(x, e)`.
    OptionalMap {
        /// True for `optFlatMap`.
        flat: bool,
    },
    /// `math.greatest(...)` or `math.least(...)`.
    Extremum {
        /// True for `math.greatest`.
        greatest: bool,
    },
    /// `list.sortBy(x, key)`.
    SortBy,
    /// `cel.block([bindings], result)`.
    Block,
    /// `cel.index(N)`, `cel.iterVar(N, M)` or `cel.accuVar(N, M)`.
    BlockVariable,
    /// kro's `runtime.newCondition({type: ..., status: ...})`.
    NewCondition,
}

/// A macro that expands into a comprehension, decided by its name, its argument count and
/// whether it has a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    MapFiltered,
    Filter,
    AllTwo,
    ExistsTwo,
    ExistsOneTwo,
    TransformList,
    TransformListFiltered,
    TransformMap,
    TransformMapFiltered,
    TransformMapEntry,
    TransformMapEntryFiltered,
    Bind,
}

impl Macro {
    fn name(self) -> &'static str {
        match self {
            Macro::All | Macro::AllTwo => "all",
            Macro::Exists | Macro::ExistsTwo => "exists",
            Macro::ExistsOne => "exists_one",
            Macro::ExistsOneTwo => "existsOne",
            Macro::Map | Macro::MapFiltered => "map",
            Macro::Filter => "filter",
            Macro::TransformList | Macro::TransformListFiltered => "transformList",
            Macro::TransformMap | Macro::TransformMapFiltered => "transformMap",
            Macro::TransformMapEntry | Macro::TransformMapEntryFiltered => "transformMapEntry",
            Macro::Bind => "cel.bind",
        }
    }

    fn recognise(call: &Call) -> Option<Recognised> {
        let arity = call.args.len();
        let Some(target) = &call.target else {
            return (call.function == "has" && arity == 1).then_some(Recognised::Has);
        };
        let found = match (call.function.as_str(), arity) {
            ("all", 2) => Macro::All,
            ("all", 3) => Macro::AllTwo,
            ("exists", 2) => Macro::Exists,
            ("exists", 3) => Macro::ExistsTwo,
            ("exists_one", 2) => Macro::ExistsOne,
            ("existsOne", 3) => Macro::ExistsOneTwo,
            ("map", 2) => Macro::Map,
            ("map", 3) => Macro::MapFiltered,
            ("filter", 2) => Macro::Filter,
            ("transformList", 3) => Macro::TransformList,
            ("transformList", 4) => Macro::TransformListFiltered,
            ("transformMap", 3) => Macro::TransformMap,
            ("transformMap", 4) => Macro::TransformMapFiltered,
            ("transformMapEntry", 3) => Macro::TransformMapEntry,
            ("transformMapEntry", 4) => Macro::TransformMapEntryFiltered,
            ("optMap", 2) => return Some(Recognised::OptionalMap { flat: false }),
            ("optFlatMap", 2) => return Some(Recognised::OptionalMap { flat: true }),
            ("sortBy", 2) => return Some(Recognised::SortBy),
            (name @ ("greatest" | "least"), _) if is_ident(target, "math") => {
                return Some(Recognised::Extremum {
                    greatest: name == "greatest",
                });
            }
            ("bind", 3) if is_ident(target, "cel") => Macro::Bind,
            ("block", 2) if is_ident(target, "cel") => return Some(Recognised::Block),
            ("index", 1) | ("iterVar" | "accuVar", 2) if is_ident(target, "cel") => {
                return Some(Recognised::BlockVariable);
            }
            (NEW_CONDITION, 1) if is_ident(target, extensions::RUNTIME_RECEIVER) => {
                return Some(Recognised::NewCondition);
            }
            _ => return None,
        };
        Some(Recognised::Fold(found))
    }

    fn variable_count(self) -> usize {
        match self {
            Macro::All
            | Macro::Exists
            | Macro::ExistsOne
            | Macro::Map
            | Macro::MapFiltered
            | Macro::Filter
            | Macro::Bind => 1,
            _ => 2,
        }
    }
}

/// Whether `expr` is the plain identifier `name` (a macro's namespace, such as `cel`).
fn is_ident(expr: &Expr, name: &str) -> bool {
    matches!(&expr.kind, ExprKind::Ident(ident) if ident == name)
}

/// Expands `call` if it is a macro, else returns it unchanged.
pub(crate) fn expand(nodes: &mut NodeFactory, call: Expr) -> PResult<Expr> {
    let ExprKind::Call(details) = &call.kind else {
        return Ok(call);
    };
    let Some(which) = Macro::recognise(details) else {
        return Ok(call);
    };
    let span = call.span;
    let ExprKind::Call(Call { target, args, .. }) = call.kind.clone() else {
        return Ok(call);
    };
    let which = match which {
        Recognised::Has => return expand_has(nodes, call, args),
        Recognised::OptionalMap { flat } => {
            return expand_optional_map(nodes, call, target, args, flat);
        }
        Recognised::Extremum { greatest } => {
            return extensions::expand_extremum(nodes, call, args, greatest);
        }
        Recognised::SortBy => return extensions::expand_sort_by(nodes, call, target, args),
        Recognised::Block => return block::expand_block(nodes, &call, args),
        Recognised::BlockVariable => {
            let function = details.function.clone();
            return block::expand_variable(nodes, &call, &function, &args);
        }
        Recognised::NewCondition => {
            return extensions::expand_new_condition(nodes, call, target, args);
        }
        Recognised::Fold(which) => which,
    };
    let fail = |problem| {
        (
            span,
            SyntaxErrorKind::InvalidMacro(MacroError {
                name: which.name(),
                problem,
            }),
        )
    };
    let mut args = args.into_iter();
    let mut variables = Vec::new();
    for _ in 0..which.variable_count() {
        let Some(argument) = args.next() else {
            return Ok(call);
        };
        match argument.kind {
            ExprKind::Ident(name) if !name.starts_with('.') => variables.push(name),
            _ => return Err(fail(MacroProblem::ArgumentMustBeSimpleName)),
        }
    }
    if variables.len() == 2 && variables[0] == variables[1] {
        return Err(fail(MacroProblem::DuplicateVariableName));
    }
    if variables.iter().any(|name| name == ACCUMULATOR) {
        return Err(fail(MacroProblem::ReservedAccumulatorName));
    }
    let rest: Vec<Expr> = args.collect();
    let range = match target {
        Some(target) if which != Macro::Bind => *target,
        _ => nodes.node(
            span,
            ExprKind::List(ListExpr {
                elements: Vec::new(),
                optional_indices: Vec::new(),
            }),
        ),
    };
    let mut builder = Builder { nodes, span };
    let comprehension = builder.comprehension(which, variables, range, rest);
    let expanded = builder
        .nodes
        .node(span, ExprKind::Comprehension(Box::new(comprehension)));
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

/// `opt.optMap(x, e)` becomes `opt.hasValue() ? optional.of(cel.bind(x, opt.value(), e)) :
/// optional.none()`; `optFlatMap` the same without wrapping `e` in `optional.of`.
fn expand_optional_map(
    nodes: &mut NodeFactory,
    call: Expr,
    target: Option<Box<Expr>>,
    args: Vec<Expr>,
    flat: bool,
) -> PResult<Expr> {
    let span = call.span;
    let name = if flat { "optFlatMap" } else { "optMap" };
    let mut args = args.into_iter();
    let (Some(target), Some(variable), Some(body)) = (target, args.next(), args.next()) else {
        return Ok(call);
    };
    let ExprKind::Ident(variable) = variable.kind else {
        return Err((
            span,
            SyntaxErrorKind::InvalidMacro(MacroError {
                name,
                problem: MacroProblem::ArgumentMustBeSimpleName,
            }),
        ));
    };
    let target = *target;
    let member = |nodes: &mut NodeFactory, target: Expr, function: &str| {
        nodes.node(
            span,
            ExprKind::Call(Call {
                target: Some(Box::new(target)),
                function: function.to_string(),
                args: Vec::new(),
            }),
        )
    };
    let mut target_copy = target.clone();
    renumber(nodes, &mut target_copy);
    let has_value = member(nodes, target, "hasValue");
    let value = member(nodes, target_copy, "value");
    let mut builder = Builder { nodes, span };
    let empty_range = builder.empty_list();
    let step = builder.ident(&variable);
    let condition = builder.literal(Literal::Bool(false));
    let bound = Comprehension {
        iter_var: "#unused".to_string(),
        iter_var2: None,
        iter_range: empty_range,
        accu_var: variable,
        accu_init: value,
        loop_condition: condition,
        loop_step: step,
        result: body,
    };
    let bound = builder
        .nodes
        .node(span, ExprKind::Comprehension(Box::new(bound)));
    let present = if flat {
        bound
    } else {
        builder.call("optional.of", vec![bound])
    };
    let absent = builder.call("optional.none", Vec::new());
    let expanded = builder.call(operators::CONDITIONAL, vec![has_value, present, absent]);
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

/// Gives a copied subtree fresh ids, so that every node of the tree stays unique.
fn renumber(nodes: &mut NodeFactory, expr: &mut Expr) {
    crate::stack::guard(|| renumber_unguarded(nodes, expr));
}

fn renumber_unguarded(nodes: &mut NodeFactory, expr: &mut Expr) {
    expr.id = nodes.new_id();
    match &mut expr.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Select(select) => renumber(nodes, &mut select.operand),
        ExprKind::Call(call) => {
            if let Some(target) = &mut call.target {
                renumber(nodes, target);
            }
            for arg in &mut call.args {
                renumber(nodes, arg);
            }
        }
        ExprKind::List(list) => {
            for element in &mut list.elements {
                renumber(nodes, element);
            }
        }
        ExprKind::Map(map) => {
            for entry in &mut map.entries {
                entry.id = nodes.new_id();
                renumber(nodes, &mut entry.key);
                renumber(nodes, &mut entry.value);
            }
        }
        ExprKind::Struct(object) => {
            for field in &mut object.fields {
                field.id = nodes.new_id();
                renumber(nodes, &mut field.value);
            }
        }
        ExprKind::Comprehension(comprehension) => {
            renumber(nodes, &mut comprehension.iter_range);
            renumber(nodes, &mut comprehension.accu_init);
            renumber(nodes, &mut comprehension.loop_condition);
            renumber(nodes, &mut comprehension.loop_step);
            renumber(nodes, &mut comprehension.result);
        }
    }
}

/// `has(a.b)` becomes the presence test on `a.b`.
fn expand_has(nodes: &mut NodeFactory, call: Expr, mut args: Vec<Expr>) -> PResult<Expr> {
    let invalid = (
        call.span,
        SyntaxErrorKind::InvalidMacro(MacroError {
            name: "has",
            problem: MacroProblem::InvalidHasArgument,
        }),
    );
    let Some(Expr {
        span,
        kind:
            ExprKind::Select(Select {
                operand,
                field,
                test_only: false,
            }),
        ..
    }) = args.pop()
    else {
        return Err(invalid);
    };
    let expanded = nodes.node(
        span,
        ExprKind::Select(Select {
            operand,
            field,
            test_only: true,
        }),
    );
    nodes.macro_calls.insert(expanded.id, call);
    Ok(expanded)
}

struct Builder<'p> {
    nodes: &'p mut NodeFactory,
    span: Span,
}

impl Builder<'_> {
    fn literal(&mut self, literal: Literal) -> Expr {
        self.nodes.node(self.span, ExprKind::Literal(literal))
    }

    fn ident(&mut self, name: &str) -> Expr {
        self.nodes
            .node(self.span, ExprKind::Ident(name.to_string()))
    }

    fn accumulator(&mut self) -> Expr {
        self.ident(ACCUMULATOR)
    }

    fn call(&mut self, function: &str, args: Vec<Expr>) -> Expr {
        self.nodes.call(self.span, function, args)
    }

    fn empty_list(&mut self) -> Expr {
        self.nodes.node(
            self.span,
            ExprKind::List(ListExpr {
                elements: Vec::new(),
                optional_indices: Vec::new(),
            }),
        )
    }

    fn append(&mut self, element: Expr) -> Expr {
        let accumulator = self.accumulator();
        let list = self.nodes.node(
            self.span,
            ExprKind::List(ListExpr {
                elements: vec![element],
                optional_indices: Vec::new(),
            }),
        );
        self.call(operators::ADD, vec![accumulator, list])
    }

    fn guarded(&mut self, condition: Expr, step: Expr) -> Expr {
        let accumulator = self.accumulator();
        self.call(operators::CONDITIONAL, vec![condition, step, accumulator])
    }

    fn comprehension(
        &mut self,
        which: Macro,
        mut variables: Vec<String>,
        iter_range: Expr,
        mut args: Vec<Expr>,
    ) -> Comprehension {
        let second = (variables.len() == 2).then(|| variables.pop()).flatten();
        let first = variables.pop().unwrap_or_default();
        let mut take = || args.remove(0);
        let (accu_init, loop_condition, loop_step, result) = match which {
            Macro::All | Macro::AllTwo => {
                let predicate = take();
                let init = self.literal(Literal::Bool(true));
                let accumulator = self.accumulator();
                let condition = self.call(operators::NOT_STRICTLY_FALSE, vec![accumulator]);
                let accumulator = self.accumulator();
                let step = self.call(operators::LOGICAL_AND, vec![accumulator, predicate]);
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::Exists | Macro::ExistsTwo => {
                let predicate = take();
                let init = self.literal(Literal::Bool(false));
                let accumulator = self.accumulator();
                let negated = self.call(operators::LOGICAL_NOT, vec![accumulator]);
                let condition = self.call(operators::NOT_STRICTLY_FALSE, vec![negated]);
                let accumulator = self.accumulator();
                let step = self.call(operators::LOGICAL_OR, vec![accumulator, predicate]);
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::ExistsOne | Macro::ExistsOneTwo => {
                let predicate = take();
                let init = self.literal(Literal::Int(0));
                let condition = self.literal(Literal::Bool(true));
                let accumulator = self.accumulator();
                let one = self.literal(Literal::Int(1));
                let increment = self.call(operators::ADD, vec![accumulator, one]);
                let step = self.guarded(predicate, increment);
                let accumulator = self.accumulator();
                let one = self.literal(Literal::Int(1));
                let result = self.call(operators::EQUALS, vec![accumulator, one]);
                (init, condition, step, result)
            }
            Macro::Map | Macro::TransformList => {
                let transform = take();
                let init = self.empty_list();
                let condition = self.literal(Literal::Bool(true));
                let step = self.append(transform);
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::MapFiltered | Macro::TransformListFiltered => {
                let predicate = take();
                let transform = take();
                let init = self.empty_list();
                let condition = self.literal(Literal::Bool(true));
                let append = self.append(transform);
                let step = self.guarded(predicate, append);
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::Filter => {
                let predicate = take();
                let init = self.empty_list();
                let condition = self.literal(Literal::Bool(true));
                let element = self.ident(&first);
                let append = self.append(element);
                let step = self.guarded(predicate, append);
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::TransformMap
            | Macro::TransformMapFiltered
            | Macro::TransformMapEntry
            | Macro::TransformMapEntryFiltered => {
                let filtered = matches!(
                    which,
                    Macro::TransformMapFiltered | Macro::TransformMapEntryFiltered
                );
                let predicate = filtered.then(&mut take);
                let transform = take();
                let init = self.nodes.node(
                    self.span,
                    ExprKind::Map(MapExpr {
                        entries: Vec::new(),
                    }),
                );
                let condition = self.literal(Literal::Bool(true));
                let accumulator = self.accumulator();
                let insert_args =
                    if matches!(which, Macro::TransformMap | Macro::TransformMapFiltered) {
                        let key = self.ident(&first);
                        vec![accumulator, key, transform]
                    } else {
                        vec![accumulator, transform]
                    };
                let insert = self.call(operators::MAP_INSERT, insert_args);
                let step = match predicate {
                    Some(predicate) => self.guarded(predicate, insert),
                    None => insert,
                };
                let result = self.accumulator();
                (init, condition, step, result)
            }
            Macro::Bind => {
                let init = take();
                let body = take();
                let condition = self.literal(Literal::Bool(false));
                let step = self.ident(&first);
                let comprehension = Comprehension {
                    iter_var: "#unused".to_string(),
                    iter_var2: None,
                    iter_range,
                    accu_var: first,
                    accu_init: init,
                    loop_condition: condition,
                    loop_step: step,
                    result: body,
                };
                return comprehension;
            }
        };
        Comprehension {
            iter_var: first,
            iter_var2: second,
            iter_range,
            accu_var: ACCUMULATOR.to_string(),
            accu_init,
            loop_condition,
            loop_step,
            result,
        }
    }
}
