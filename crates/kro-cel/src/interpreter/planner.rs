//! Turns an [`Ast`] (checked or not) into the node tree the evaluator runs.

use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::{Call, Comprehension, Expr, ExprKind, Literal, operators as names};
use crate::checker::{CheckedAst, Declarations, Reference};
use crate::error::{EvalError, EvalErrorKind};
use crate::functions::Overload;
use crate::source::Span;
use crate::stdlib::operators::Relation;
use crate::types::builtin_type;
use crate::value::{Key, Value};

use super::node::{Arithmetic, Fold, NameOption, Node, PathRoot};

pub(crate) struct Planner<'a> {
    env: &'a dyn Declarations,
    checked: Option<&'a CheckedAst>,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(String, u32)>,
    next_slot: u32,
    pub(crate) max_slots: u32,
    pub(crate) globals: Vec<Arc<str>>,
    global_index: HashMap<String, u32>,
}

fn key(name: &str) -> Key {
    Key::String(Arc::from(name))
}

impl<'a> Planner<'a> {
    pub(crate) fn new(env: &'a dyn Declarations, checked: Option<&'a CheckedAst>) -> Self {
        Planner {
            env,
            checked,
            scopes: Vec::new(),
            next_slot: 0,
            max_slots: 0,
            globals: Vec::new(),
            global_index: HashMap::new(),
        }
    }

    fn global_slot(&mut self, name: &str) -> u32 {
        if let Some(slot) = self.global_index.get(name) {
            return *slot;
        }
        let slot = self.globals.len() as u32;
        self.globals.push(Arc::from(name));
        self.global_index.insert(name.to_string(), slot);
        slot
    }

    fn local(&self, name: &str) -> Option<u32> {
        self.scopes
            .iter()
            .rev()
            .find(|(local, _)| local == name)
            .map(|(_, slot)| *slot)
    }

    fn allocate_slot(&mut self) -> u32 {
        let slot = self.next_slot;
        self.next_slot += 1;
        self.max_slots = self.max_slots.max(self.next_slot);
        slot
    }

    fn reference(&self, expr: &Expr) -> Option<&'a Reference> {
        self.checked.and_then(|checked| checked.reference(expr.id))
    }

    fn is_rooted_in_local(&self, qualified: &str) -> bool {
        !qualified.starts_with('.')
            && self
                .local(qualified.split('.').next().unwrap_or(qualified))
                .is_some()
    }

    pub(crate) fn plan(&mut self, expr: &Expr) -> Node {
        crate::stack::guard(|| self.plan_unguarded(expr))
    }

    fn plan_unguarded(&mut self, expr: &Expr) -> Node {
        match self.reference(expr) {
            Some(Reference::Variable(name)) => {
                let slot = self.global_slot(name);
                return Node::Global {
                    slot,
                    name: Arc::from(name.as_str()),
                    span: expr.span,
                };
            }
            Some(Reference::Type(name)) if !matches!(expr.kind, ExprKind::Struct(_)) => {
                return Node::Const(type_value(name));
            }
            _ => {}
        }
        match &expr.kind {
            ExprKind::Literal(literal) => Node::Const(literal_value(literal)),
            ExprKind::Ident(name) => {
                if let Some(slot) = self.local(name).filter(|_| !name.starts_with('.')) {
                    return Node::Local(slot);
                }
                self.plan_name(name, expr.span)
            }
            ExprKind::Select(select) => {
                if !select.test_only
                    && self.checked.is_none()
                    && let Some(qualified) = expr.qualified_name()
                    && !self.is_rooted_in_local(&qualified)
                {
                    return self.plan_name(&qualified, expr.span);
                }
                let operand = self.plan(&select.operand);
                let field = key(&select.field);
                if !select.test_only {
                    match operand {
                        Node::Global { slot, name, span } => {
                            return Node::Path {
                                root: PathRoot::Global { slot, name, span },
                                steps: Box::new([(field, expr.span)]),
                            };
                        }
                        Node::Local(slot) => {
                            return Node::Path {
                                root: PathRoot::Local(slot),
                                steps: Box::new([(field, expr.span)]),
                            };
                        }
                        Node::Path { root, steps } => {
                            let mut steps = steps.into_vec();
                            steps.push((field, expr.span));
                            return Node::Path {
                                root,
                                steps: steps.into_boxed_slice(),
                            };
                        }
                        _ => {}
                    }
                }
                let operand = Box::new(operand);
                if select.test_only {
                    Node::Presence {
                        operand,
                        field,
                        span: expr.span,
                    }
                } else {
                    Node::Select {
                        operand,
                        field,
                        span: expr.span,
                    }
                }
            }
            ExprKind::Call(call) => self.plan_call(expr, call),
            ExprKind::List(list) => {
                let elements: Box<[Node]> = list.elements.iter().map(|e| self.plan(e)).collect();
                if list.optional_indices.is_empty()
                    && elements.iter().all(|e| matches!(e, Node::Const(_)))
                {
                    let values = elements
                        .into_vec()
                        .into_iter()
                        .filter_map(|node| match node {
                            Node::Const(value) => Some(value),
                            _ => None,
                        })
                        .collect();
                    return Node::Const(Value::list(values));
                }
                let optional = (0..list.elements.len())
                    .map(|index| list.optional_indices.contains(&index))
                    .collect();
                Node::List {
                    elements,
                    optional,
                    span: expr.span,
                }
            }
            ExprKind::Map(map) => {
                let entries = map
                    .entries
                    .iter()
                    .map(|entry| {
                        (
                            self.plan(&entry.key),
                            self.plan(&entry.value),
                            entry.optional,
                        )
                    })
                    .collect();
                Node::Map {
                    entries,
                    span: expr.span,
                }
            }
            ExprKind::Struct(object) => {
                let known = self.env.lookup_type_name(&object.type_name).is_some();
                if !known {
                    return Node::Fail(EvalError::new(EvalErrorKind::Custom(format!(
                        "unknown type '{}'",
                        object.type_name
                    ))));
                }
                let entries = object
                    .fields
                    .iter()
                    .map(|field| {
                        (
                            Node::Const(Value::string(&field.field)),
                            self.plan(&field.value),
                            field.optional,
                        )
                    })
                    .collect();
                Node::Map {
                    entries,
                    span: expr.span,
                }
            }
            ExprKind::Comprehension(comprehension) => self.plan_fold(comprehension, expr.span),
        }
    }

    /// A name that was not resolved by the checker: try each way to read it at run time.
    fn plan_name(&mut self, qualified: &str, span: Span) -> Node {
        let parts: Vec<&str> = qualified.trim_start_matches('.').split('.').collect();
        let rooted = qualified.starts_with('.');
        let mut options = Vec::new();
        for prefix_len in (1..=parts.len()).rev() {
            let prefix = parts[..prefix_len].join(".");
            let prefix = if rooted { format!(".{prefix}") } else { prefix };
            let fields: Box<[Key]> = parts[prefix_len..].iter().map(|field| key(field)).collect();
            for candidate in self.env.candidate_names(&prefix) {
                let slot = self.global_slot(&candidate);
                options.push(NameOption {
                    slot,
                    fields: fields.clone(),
                });
            }
        }
        let type_value = self
            .env
            .lookup_type_name(qualified)
            .map(|(name, _)| type_value(&name));
        Node::Name {
            name: Arc::from(qualified.trim_start_matches('.')),
            options: options.into_boxed_slice(),
            type_value,
            span,
        }
    }

    fn plan_fold(&mut self, comprehension: &Comprehension, span: Span) -> Node {
        let iter_range = self.plan(&comprehension.iter_range);
        let accu_init = self.plan(&comprehension.accu_init);
        let saved_next = self.next_slot;
        let accu_slot = self.allocate_slot();
        let iter_slot = self.allocate_slot();
        let iter2_slot = comprehension
            .iter_var2
            .as_ref()
            .map(|_| self.allocate_slot());
        self.scopes
            .push((comprehension.accu_var.clone(), accu_slot));
        let scope_depth = self.scopes.len();
        self.scopes
            .push((comprehension.iter_var.clone(), iter_slot));
        if let (Some(name), Some(slot)) = (&comprehension.iter_var2, iter2_slot) {
            self.scopes.push((name.clone(), slot));
        }
        let condition = self.plan(&comprehension.loop_condition);
        let step = self.plan(&comprehension.loop_step);
        self.scopes.truncate(scope_depth);
        let result = self.plan(&comprehension.result);
        self.scopes.pop();
        self.next_slot = saved_next;
        Node::Fold(Box::new(Fold {
            iter_range,
            iter_slot,
            iter2_slot,
            accu_slot,
            accu_init,
            condition,
            step,
            result,
            span,
        }))
    }

    fn plan_call(&mut self, expr: &Expr, call: &Call) -> Node {
        let span = expr.span;
        if call.target.is_none()
            && let Some(node) = self.plan_operator(call, span)
        {
            return node;
        }
        if let Some(node) = self.plan_special_member(call, span) {
            return node;
        }
        // Resolve the function: the checker's choice, else the same rules at plan time.
        let (name, is_member, overload_ids) = match self.reference(expr) {
            Some(Reference::Function { name, overloads }) => {
                let is_member = call.target.is_some() && name == &call.function;
                (name.clone(), is_member, Some(overloads.as_slice()))
            }
            _ => match self.resolve_unchecked(call) {
                Some((name, is_member)) => (name, is_member, None),
                None => {
                    return Node::Fail(
                        EvalError::new(EvalErrorKind::NoSuchOverload {
                            function: call.function.clone(),
                            arguments: Vec::new(),
                        })
                        .at(span),
                    );
                }
            },
        };
        let mut args: Vec<Node> = Vec::with_capacity(call.args.len() + 1);
        if is_member && let Some(target) = &call.target {
            args.push(self.plan(target));
        }
        args.extend(call.args.iter().map(|arg| self.plan(arg)));
        let Some(function) = self.env.function(&name) else {
            return Node::Fail(EvalError::new(EvalErrorKind::Internal(format!(
                "function '{name}' vanished between checking and planning"
            ))));
        };
        let candidates: Vec<Overload> = function
            .overloads
            .iter()
            .filter(|overload| {
                overload.is_member == is_member && overload.params.len() == args.len()
            })
            .filter(|overload| overload_ids.is_none_or(|ids| ids.contains(&overload.id)))
            .filter(|overload| overload.implementation.is_some())
            .cloned()
            .collect();
        let name: Arc<str> = Arc::from(name.as_str());
        if let [only] = candidates.as_slice()
            && let Some(implementation) = prepare(only, &args)
        {
            return Node::Call {
                name,
                implementation,
                args: args.into_boxed_slice(),
                span,
            };
        }
        if let [only] = candidates.as_slice()
            && overload_ids.is_some()
            && let Some(implementation) = &only.implementation
        {
            return Node::Call {
                name,
                implementation: implementation.clone(),
                args: args.into_boxed_slice(),
                span,
            };
        }
        Node::Dispatch {
            name,
            overloads: Arc::from(candidates),
            args: args.into_boxed_slice(),
            span,
        }
    }

    /// The function a call names without the checker's help: `a.b.f(x)` is the global
    /// `a.b.f` when such a function exists and `a` is not a loop variable.
    fn resolve_unchecked(&self, call: &Call) -> Option<(String, bool)> {
        if let Some(target) = &call.target {
            if let Some(namespace) = target.qualified_name()
                && !self.is_rooted_in_local(&namespace)
            {
                let qualified = format!("{namespace}.{}", call.function);
                if let Some(name) = self
                    .env
                    .candidate_names(&qualified)
                    .into_iter()
                    .find(|candidate| self.env.function(candidate).is_some())
                {
                    return Some((name, false));
                }
            }
            return self
                .env
                .function(&call.function)
                .map(|function| (function.name.clone(), true));
        }
        self.env
            .candidate_names(&call.function)
            .into_iter()
            .find(|candidate| self.env.function(candidate).is_some())
            .map(|name| (name, false))
    }

    fn plan_operator(&mut self, call: &Call, span: Span) -> Option<Node> {
        let function = call.function.as_str();
        let arity = call.args.len();
        let arg = |planner: &mut Self, index: usize| Box::new(planner.plan(&call.args[index]));
        let arithmetic = match function {
            names::ADD => Some(Arithmetic::Add),
            names::SUBTRACT => Some(Arithmetic::Subtract),
            names::MULTIPLY => Some(Arithmetic::Multiply),
            names::DIVIDE => Some(Arithmetic::Divide),
            names::MODULO => Some(Arithmetic::Modulo),
            _ => None,
        };
        if let (Some(operator), 2) = (arithmetic, arity) {
            if operator == Arithmetic::Add
                && let Some(node) = self.plan_append(call, span)
            {
                return Some(node);
            }
            return Some(Node::Arithmetic {
                operator,
                left: arg(self, 0),
                right: arg(self, 1),
                library: self.opaque_overloads(function),
                span,
            });
        }
        let relation = match function {
            names::LESS => Some(Relation::Less),
            names::LESS_EQUALS => Some(Relation::LessEquals),
            names::GREATER => Some(Relation::Greater),
            names::GREATER_EQUALS => Some(Relation::GreaterEquals),
            _ => None,
        };
        if let (Some(relation), 2) = (relation, arity) {
            return Some(Node::Relate {
                relation,
                left: arg(self, 0),
                right: arg(self, 1),
                library: self.opaque_overloads(function),
                span,
            });
        }
        Some(match (function, arity) {
            (names::LOGICAL_AND, 2) => Node::And(arg(self, 0), arg(self, 1), span),
            (names::LOGICAL_OR, 2) => Node::Or(arg(self, 0), arg(self, 1), span),
            (names::LOGICAL_NOT, 1) => Node::Not(arg(self, 0), span),
            (names::NEGATE, 1) => Node::Negate(arg(self, 0), span),
            (names::CONDITIONAL, 3) => {
                Node::Conditional(arg(self, 0), arg(self, 1), arg(self, 2), span)
            }
            (names::NOT_STRICTLY_FALSE, 1) => Node::NotStrictlyFalse(arg(self, 0)),
            (names::EQUALS | names::NOT_EQUALS, 2) => Node::Equals {
                left: arg(self, 0),
                right: arg(self, 1),
                negate: function == names::NOT_EQUALS,
            },
            (names::INDEX, 2) => Node::Index {
                operand: arg(self, 0),
                index: arg(self, 1),
                span,
            },
            (names::OPTIONAL_INDEX, 2) => Node::OptionalIndex {
                operand: arg(self, 0),
                index: arg(self, 1),
                span,
            },
            (names::IN, 2) => Node::In {
                element: arg(self, 0),
                container: arg(self, 1),
                span,
            },
            (names::OPTIONAL_SELECT, 2) => {
                let ExprKind::Literal(Literal::String(field)) = &call.args[1].kind else {
                    return None;
                };
                Node::OptionalSelect {
                    operand: arg(self, 0),
                    field: Key::String(field.clone()),
                    span,
                }
            }
            (names::MAP_INSERT, 2 | 3) => {
                let accu_slot = match &call.args[0].kind {
                    ExprKind::Ident(name) => self.local(name),
                    _ => None,
                };
                let accumulator = arg(self, 0);
                let (key, value) = if arity == 3 {
                    (Some(arg(self, 1)), arg(self, 2))
                } else {
                    (None, arg(self, 1))
                };
                Node::MapInsert {
                    accumulator,
                    accu_slot,
                    key,
                    value,
                    span,
                }
            }
            ("size", 1) if self.env.function("size").is_some() => Node::Size(arg(self, 0), span),
            _ => return None,
        })
    }

    /// The overloads of the operator `function` that a library declares on opaque types;
    /// `None` when there are none (the built-in operators do the rest).
    fn opaque_overloads(&self, function: &str) -> Option<Arc<[crate::functions::Overload]>> {
        let overloads: Vec<crate::functions::Overload> = self
            .env
            .function(function)?
            .overloads
            .iter()
            .filter(|overload| {
                overload.implementation.is_some()
                    && overload
                        .params
                        .iter()
                        .any(|param| matches!(param, crate::types::Type::Opaque(..)))
            })
            .cloned()
            .collect();
        (!overloads.is_empty()).then(|| Arc::from(overloads))
    }

    /// `accumulator + [element]` inside a comprehension step.
    fn plan_append(&mut self, call: &Call, span: Span) -> Option<Node> {
        let (ExprKind::Ident(name), ExprKind::List(list)) =
            (&call.args[0].kind, &call.args[1].kind)
        else {
            return None;
        };
        if name != crate::macros::ACCUMULATOR
            || list.elements.len() != 1
            || !list.optional_indices.is_empty()
        {
            return None;
        }
        let accu_slot = self.local(name)?;
        Some(Node::Append {
            accu_slot,
            element: Box::new(self.plan(&list.elements[0])),
            span,
        })
    }

    fn plan_special_member(&mut self, call: &Call, span: Span) -> Option<Node> {
        let target = call.target.as_ref()?;
        match (call.function.as_str(), call.args.len()) {
            ("size", 0) if self.env.function("size").is_some() => {
                Some(Node::Size(Box::new(self.plan(target)), span))
            }
            (name @ ("or" | "orValue"), 1) if self.env.function(name).is_some() => {
                Some(Node::OptionalOr {
                    optional: Box::new(self.plan(target)),
                    alternative: Box::new(self.plan(&call.args[0])),
                    unwrap: name == "orValue",
                    span,
                })
            }
            _ => None,
        }
    }
}

/// The overload's implementation specialised to the constant arguments among `args`, when it
/// has a preparation that applies (a regex function with a constant pattern, compiled here
/// once for every evaluation).
fn prepare(overload: &Overload, args: &[Node]) -> Option<crate::functions::Implementation> {
    let preparation = overload.preparation.as_ref()?;
    let constants: Vec<Option<&Value>> = args
        .iter()
        .map(|arg| match arg {
            Node::Const(value) => Some(value),
            _ => None,
        })
        .collect();
    if constants.iter().all(Option::is_none) {
        return None;
    }
    preparation(&constants)
}

/// The runtime type value for a type name.
fn type_value(name: &str) -> Value {
    let runtime_name = builtin_type(name).map_or_else(|| name.to_string(), |ty| ty.runtime_name());
    Value::Type(Arc::from(runtime_name))
}

fn literal_value(literal: &Literal) -> Value {
    match literal {
        Literal::Null => Value::Null,
        Literal::Bool(v) => Value::Bool(*v),
        Literal::Int(v) => Value::Int(*v),
        Literal::Uint(v) => Value::Uint(*v),
        Literal::Double(v) => Value::Double(*v),
        Literal::String(v) => Value::String(v.clone()),
        Literal::Bytes(v) => Value::Bytes(v.clone()),
    }
}
