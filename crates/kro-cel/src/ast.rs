//! The abstract syntax tree shared by the parser, the checker and the interpreter.
//!
//! Every node has an [`ExprId`], unique within one parsed expression, and the [`Span`] of the
//! text it came from. Macros are already expanded: `all`, `map`, `cel.bind` and the rest appear
//! as [`Comprehension`] nodes, and the original calls are kept in [`Ast::macro_calls`] so the
//! expression can be printed as written.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::source::{Source, Span};

/// Identifies one node within a parsed expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ExprId(pub u32);

impl fmt::Display for ExprId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A parsed expression: its root node, its text and the macro calls it expanded.
#[derive(Debug, Clone)]
pub struct Ast {
    /// The root of the tree.
    pub expr: Expr,
    /// The text the tree was parsed from.
    pub source: Arc<Source>,
    /// For each comprehension node produced by a macro, the call as written.
    pub macro_calls: HashMap<ExprId, Expr>,
    /// One more than the largest node id in the tree.
    pub next_id: u32,
}

/// Makes the nodes of one expression as it is parsed: hands out fresh ids and keeps the calls
/// that macros expanded. The parser and the macros it runs share one.
#[derive(Debug)]
pub(crate) struct NodeFactory {
    next_id: u32,
    /// For each node a macro produced, the call as written.
    pub(crate) macro_calls: HashMap<ExprId, Expr>,
}

impl NodeFactory {
    /// A factory whose first node gets id 1.
    pub(crate) fn new() -> Self {
        NodeFactory {
            next_id: 1,
            macro_calls: HashMap::new(),
        }
    }

    /// One more than the largest id handed out so far.
    pub(crate) fn next_id(&self) -> u32 {
        self.next_id
    }

    /// A fresh id.
    pub(crate) fn new_id(&mut self) -> ExprId {
        let id = ExprId(self.next_id);
        self.next_id += 1;
        id
    }

    /// A node of `kind` with a fresh id.
    pub(crate) fn node(&mut self, span: Span, kind: ExprKind) -> Expr {
        Expr {
            id: self.new_id(),
            span,
            kind,
        }
    }

    /// A global call of `function` with a fresh id.
    pub(crate) fn call(&mut self, span: Span, function: &str, args: Vec<Expr>) -> Expr {
        self.node(
            span,
            ExprKind::Call(Call {
                target: None,
                function: function.to_string(),
                args,
            }),
        )
    }
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// The node's id, unique within its [`Ast`].
    pub id: ExprId,
    /// Where in the text the node came from.
    pub span: Span,
    /// What the node is.
    pub kind: ExprKind,
}

/// The kinds of node.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A constant.
    Literal(Literal),
    /// A name: a variable, a type, or (before checking) a namespace prefix. A leading dot
    /// (`.a.b`) is kept in the name and means "resolve from the root, ignoring the container".
    Ident(String),
    /// Field selection `operand.field`, or with `test_only` the presence test `has(operand.field)`.
    Select(Select),
    /// A global call `f(args)` or a receiver call `target.f(args)`; operators are calls too
    /// (`_+_`, `_[_]`, `!_`, `_?._` ...).
    Call(Call),
    /// A list literal.
    List(ListExpr),
    /// A map literal.
    Map(MapExpr),
    /// A message (object) literal `Type{field: value}`.
    Struct(StructExpr),
    /// A fold over a list or a map; what macros expand into.
    Comprehension(Box<Comprehension>),
}

/// Literal constants.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A signed 64-bit integer.
    Int(i64),
    /// An unsigned 64-bit integer (`1u`).
    Uint(u64),
    /// A 64-bit float.
    Double(f64),
    /// A string.
    String(Arc<str>),
    /// A byte string (`b"..."`).
    Bytes(Arc<[u8]>),
}

/// `operand.field` or `has(operand.field)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// The expression whose field is selected.
    pub operand: Box<Expr>,
    /// The field name.
    pub field: String,
    /// True for the presence test of `has()`.
    pub test_only: bool,
}

/// A function call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The receiver of a member call (`target.f(...)`), if any.
    pub target: Option<Box<Expr>>,
    /// The function name, possibly qualified (`optional.of`).
    pub function: String,
    /// The arguments, not counting the receiver.
    pub args: Vec<Expr>,
}

/// `[a, ?b, c]`
#[derive(Debug, Clone, PartialEq)]
pub struct ListExpr {
    /// The elements in order.
    pub elements: Vec<Expr>,
    /// Indices of elements written `?e`: they are optionals, included only when present.
    pub optional_indices: Vec<usize>,
}

/// `{k: v, ?k2: v2}`
#[derive(Debug, Clone, PartialEq)]
pub struct MapExpr {
    /// The entries in order.
    pub entries: Vec<MapEntry>,
}

/// One entry of a map literal.
#[derive(Debug, Clone, PartialEq)]
pub struct MapEntry {
    /// The entry's id.
    pub id: ExprId,
    /// Where the entry was written.
    pub span: Span,
    /// The key expression.
    pub key: Expr,
    /// The value expression.
    pub value: Expr,
    /// True for `?k: v`: the value is an optional, and the entry exists only when present.
    pub optional: bool,
}

/// `Type{field: value, ...}`
#[derive(Debug, Clone, PartialEq)]
pub struct StructExpr {
    /// The type name as written, possibly qualified or with a leading dot.
    pub type_name: String,
    /// The field initialisers in order.
    pub fields: Vec<FieldInit>,
}

/// One field initialiser of a message literal.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldInit {
    /// The initialiser's id.
    pub id: ExprId,
    /// Where the initialiser was written.
    pub span: Span,
    /// The field name.
    pub field: String,
    /// The value expression.
    pub value: Expr,
    /// True for `?field: v`.
    pub optional: bool,
}

/// A fold: `accu = init; for (iter_var[, iter_var2]) in range { if !condition break; accu =
/// step }; result`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comprehension {
    /// The loop variable (for two-variable forms: the index or key).
    pub iter_var: String,
    /// The second loop variable of two-variable forms (the element or value).
    pub iter_var2: Option<String>,
    /// The list or map iterated over.
    pub iter_range: Expr,
    /// The accumulator's name.
    pub accu_var: String,
    /// The accumulator's initial value.
    pub accu_init: Expr,
    /// Evaluated before each step; the loop stops when it is false.
    pub loop_condition: Expr,
    /// The accumulator's next value.
    pub loop_step: Expr,
    /// The result, computed from the accumulator after the loop.
    pub result: Expr,
}

impl Expr {
    /// The function name and arguments, when this node is a global call.
    pub fn as_global_call(&self) -> Option<(&str, &[Expr])> {
        match &self.kind {
            ExprKind::Call(Call {
                target: None,
                function,
                args,
            }) => Some((function, args)),
            _ => None,
        }
    }

    /// The qualified name this node spells when it is an identifier or a chain of plain field
    /// selections on one (`a.b.c`), else `None`.
    pub fn qualified_name(&self) -> Option<String> {
        match &self.kind {
            ExprKind::Ident(name) => Some(name.clone()),
            ExprKind::Select(Select {
                operand,
                field,
                test_only: false,
            }) => operand
                .qualified_name()
                .map(|prefix| format!("{prefix}.{field}")),
            _ => None,
        }
    }

    /// Calls `visit` on this node and every node below it, parents before children.
    pub fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Expr)) {
        visit(self);
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
            ExprKind::Select(select) => select.operand.walk(visit),
            ExprKind::Call(call) => {
                if let Some(target) = &call.target {
                    target.walk(visit);
                }
                for arg in &call.args {
                    arg.walk(visit);
                }
            }
            ExprKind::List(list) => {
                for element in &list.elements {
                    element.walk(visit);
                }
            }
            ExprKind::Map(map) => {
                for entry in &map.entries {
                    entry.key.walk(visit);
                    entry.value.walk(visit);
                }
            }
            ExprKind::Struct(object) => {
                for field in &object.fields {
                    field.value.walk(visit);
                }
            }
            ExprKind::Comprehension(comprehension) => {
                comprehension.iter_range.walk(visit);
                comprehension.accu_init.walk(visit);
                comprehension.loop_condition.walk(visit);
                comprehension.loop_step.walk(visit);
                comprehension.result.walk(visit);
            }
        }
    }
}

/// Operator function names, as cel-go spells them.
pub mod operators {
    /// `a ? b : c`
    pub const CONDITIONAL: &str = "_?_:_";
    /// `a && b`
    pub const LOGICAL_AND: &str = "_&&_";
    /// `a || b`
    pub const LOGICAL_OR: &str = "_||_";
    /// `!a`
    pub const LOGICAL_NOT: &str = "!_";
    /// `-a`
    pub const NEGATE: &str = "-_";
    /// `a == b`
    pub const EQUALS: &str = "_==_";
    /// `a != b`
    pub const NOT_EQUALS: &str = "_!=_";
    /// `a < b`
    pub const LESS: &str = "_<_";
    /// `a <= b`
    pub const LESS_EQUALS: &str = "_<=_";
    /// `a > b`
    pub const GREATER: &str = "_>_";
    /// `a >= b`
    pub const GREATER_EQUALS: &str = "_>=_";
    /// `a + b`
    pub const ADD: &str = "_+_";
    /// `a - b`
    pub const SUBTRACT: &str = "_-_";
    /// `a * b`
    pub const MULTIPLY: &str = "_*_";
    /// `a / b`
    pub const DIVIDE: &str = "_/_";
    /// `a % b`
    pub const MODULO: &str = "_%_";
    /// `a in b`
    pub const IN: &str = "@in";
    /// `a[b]`
    pub const INDEX: &str = "_[_]";
    /// `a[?b]`
    pub const OPTIONAL_INDEX: &str = "_[?_]";
    /// `a.?b`
    pub const OPTIONAL_SELECT: &str = "_?._";
    /// The internal loop guard of `all`/`exists`: false once the result is decided.
    pub const NOT_STRICTLY_FALSE: &str = "@not_strictly_false";
    /// Internal map insertion used by the two-variable `transformMap` macros.
    pub const MAP_INSERT: &str = "cel.@mapInsert";
}
