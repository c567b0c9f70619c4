//! The planned form of an expression: a tree of nodes with names resolved to slots, overloads
//! resolved to implementations, and constants folded into values.

use std::sync::Arc;

use crate::functions::{Implementation, Overload};
use crate::source::Span;
use crate::stdlib::operators::Relation;
use crate::value::{Key, Value};

/// Arithmetic operators evaluated natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arithmetic {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
}

/// One way to resolve a possibly-qualified name at run time (unchecked programs): read the
/// global in `slot`, then select `fields` from it.
#[derive(Debug, Clone)]
pub(crate) struct NameOption {
    pub slot: u32,
    pub fields: Box<[Key]>,
}

/// Where a [`Node::Path`] starts.
#[derive(Debug, Clone)]
pub(crate) enum PathRoot {
    Global {
        slot: u32,
        name: Arc<str>,
        span: Span,
    },
    Local(u32),
}

/// A comprehension, with its variables assigned to local slots.
#[derive(Debug)]
pub(crate) struct Fold {
    pub iter_range: Node,
    pub iter_slot: u32,
    pub iter2_slot: Option<u32>,
    pub accu_slot: u32,
    pub accu_init: Node,
    pub condition: Node,
    pub step: Node,
    pub result: Node,
    pub span: Span,
}

/// A planned node.
pub(crate) enum Node {
    Const(Value),
    Global {
        slot: u32,
        name: Arc<str>,
        span: Span,
    },
    Local(u32),
    /// A chain of field selections on a variable (`schema.spec.name`), walked by reference
    /// without copying the intermediate objects.
    Path {
        root: PathRoot,
        steps: Box<[(Key, Span)]>,
    },
    /// An unchecked name: the first option whose global is bound wins; else the type value,
    /// else "no such attribute".
    Name {
        name: Arc<str>,
        options: Box<[NameOption]>,
        type_value: Option<Value>,
        span: Span,
    },
    Select {
        operand: Box<Node>,
        field: Key,
        span: Span,
    },
    Presence {
        operand: Box<Node>,
        field: Key,
        span: Span,
    },
    OptionalSelect {
        operand: Box<Node>,
        field: Key,
        span: Span,
    },
    Not(Box<Node>, Span),
    Negate(Box<Node>, Span),
    Arithmetic {
        operator: Arithmetic,
        left: Box<Node>,
        right: Box<Node>,
        /// The operator's overloads on a library's opaque types (`kro.Timestamp + duration`),
        /// tried when an operand is opaque.
        library: Option<Arc<[Overload]>>,
        span: Span,
    },
    Equals {
        left: Box<Node>,
        right: Box<Node>,
        negate: bool,
    },
    Relate {
        relation: Relation,
        left: Box<Node>,
        right: Box<Node>,
        /// As for `Arithmetic`.
        library: Option<Arc<[Overload]>>,
        span: Span,
    },
    Index {
        operand: Box<Node>,
        index: Box<Node>,
        span: Span,
    },
    OptionalIndex {
        operand: Box<Node>,
        index: Box<Node>,
        span: Span,
    },
    In {
        element: Box<Node>,
        container: Box<Node>,
        span: Span,
    },
    Size(Box<Node>, Span),
    And(Box<Node>, Box<Node>, Span),
    Or(Box<Node>, Box<Node>, Span),
    Conditional(Box<Node>, Box<Node>, Box<Node>, Span),
    NotStrictlyFalse(Box<Node>),
    /// `opt.or(other)` / `opt.orValue(other)`: `other` is evaluated only when needed.
    OptionalOr {
        optional: Box<Node>,
        alternative: Box<Node>,
        unwrap: bool,
        span: Span,
    },
    /// A call with one known implementation.
    Call {
        name: Arc<str>,
        implementation: Implementation,
        args: Box<[Node]>,
        span: Span,
    },
    /// A call whose overload is chosen by the runtime types of the arguments.
    Dispatch {
        name: Arc<str>,
        overloads: Arc<[Overload]>,
        args: Box<[Node]>,
        span: Span,
    },
    List {
        elements: Box<[Node]>,
        optional: Box<[bool]>,
        span: Span,
    },
    Map {
        entries: Box<[(Node, Node, bool)]>,
        span: Span,
    },
    /// `accumulator + [element]`, appending in place when the accumulator is not shared.
    Append {
        accu_slot: u32,
        element: Box<Node>,
        span: Span,
    },
    /// `cel.@mapInsert(accumulator, key, value)` or `(accumulator, map)`.
    MapInsert {
        accumulator: Box<Node>,
        accu_slot: Option<u32>,
        key: Option<Box<Node>>,
        value: Box<Node>,
        span: Span,
    },
    Fold(Box<Fold>),
    /// An error found while planning (for example an unknown function in an unchecked
    /// program), raised if evaluation reaches it.
    Fail(crate::error::EvalError),
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Const(value) => write!(f, "Const({value})"),
            Node::Global { slot, .. } => write!(f, "Global({slot})"),
            Node::Local(slot) => write!(f, "Local({slot})"),
            Node::Call { name, args, .. } => f.debug_tuple("Call").field(name).field(args).finish(),
            Node::Dispatch { name, args, .. } => {
                f.debug_tuple("Dispatch").field(name).field(args).finish()
            }
            _ => f.write_str("Node(..)"),
        }
    }
}
