//! The interpreter: a planned [`Program`] evaluated against an [`Activation`] under a cost
//! budget, with CEL's exact semantics (error absorption in `&&`, `||` and `?:`, heterogeneous
//! equality, typed "not found" errors).

mod node;
mod planner;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::ast::Ast;
use crate::checker::{CheckedAst, Declarations};
use crate::cost::{Budget, MAP_CREATE_COST, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::source::{Source, Span};
use crate::stdlib::{operators, optionals};
use crate::types::Type;
use crate::value::{Key, Map, Value};

use node::{Arithmetic, Fold, Node, PathRoot};

/// Supplies the values of variables during one evaluation.
pub trait Activation {
    /// The value bound to a fully qualified variable name, if any.
    fn resolve(&self, name: &str) -> Option<Value>;
}

impl Activation for HashMap<String, Value> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.get(name).cloned()
    }
}

impl Activation for BTreeMap<String, Value> {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.get(name).cloned()
    }
}

impl Activation for [(&str, Value)] {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.iter()
            .find(|(bound, _)| *bound == name)
            .map(|(_, value)| value.clone())
    }
}

impl<const N: usize> Activation for [(&str, Value); N] {
    fn resolve(&self, name: &str) -> Option<Value> {
        self.as_slice().resolve(name)
    }
}

/// An activation that binds nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoVariables;

impl Activation for NoVariables {
    fn resolve(&self, _name: &str) -> Option<Value> {
        None
    }
}

/// The result of one evaluation and what it cost.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The value, or the error that ended evaluation.
    pub result: EvalResult<Value>,
    /// Cost units spent.
    pub cost: u64,
}

/// A compiled expression, ready to evaluate any number of times (concurrently, too).
#[derive(Debug, Clone)]
pub struct Program {
    inner: Arc<ProgramInner>,
}

#[derive(Debug)]
struct ProgramInner {
    root: Node,
    globals: Vec<Arc<str>>,
    slot_count: usize,
    cost_limit: Option<u64>,
    source: Arc<Source>,
    output_type: Option<Type>,
}

impl Program {
    /// Plans `ast` (with its check results, if it was checked), resolving names and calls
    /// against `env`; each evaluation may spend up to `cost_limit`.
    pub(crate) fn plan(
        env: &dyn Declarations,
        cost_limit: Option<u64>,
        ast: &Ast,
        checked: Option<&CheckedAst>,
    ) -> Program {
        let mut planner = planner::Planner::new(env, checked);
        let root = planner.plan(&ast.expr);
        Program {
            inner: Arc::new(ProgramInner {
                root,
                globals: planner.globals,
                slot_count: planner.max_slots as usize,
                cost_limit,
                source: ast.source.clone(),
                output_type: checked.map(|checked| checked.output_type().clone()),
            }),
        }
    }

    /// The checked result type, when the program was checked.
    pub fn output_type(&self) -> Option<&Type> {
        self.inner.output_type.as_ref()
    }

    /// The expression text, for rendering errors.
    pub fn source(&self) -> &Source {
        &self.inner.source
    }

    /// The variable names the program may read from its activation.
    pub fn variables(&self) -> &[Arc<str>] {
        &self.inner.globals
    }

    /// Evaluates with the environment's cost limit.
    ///
    /// # Errors
    /// The [`EvalError`] that ended evaluation.
    pub fn evaluate(&self, activation: &dyn Activation) -> EvalResult<Value> {
        self.evaluate_with_limit(activation, self.inner.cost_limit)
            .result
    }

    /// Evaluates with an explicit cost limit (`None`: unlimited) and reports the cost.
    pub fn evaluate_with_limit(
        &self,
        activation: &dyn Activation,
        limit: Option<u64>,
    ) -> Evaluation {
        let mut frame = Frame {
            activation,
            names: &self.inner.globals,
            globals: vec![Global::Unresolved; self.inner.globals.len()],
            locals: vec![Ok(Value::Null); self.inner.slot_count],
            budget: Budget::new(limit),
        };
        let mut result = frame.eval(&self.inner.root);
        // `a && b` absorbs an error on one side when the other decides, so a cost error can
        // be absorbed too: running out of budget anywhere ends the evaluation with it.
        if frame.budget.is_exhausted() {
            result = Err(frame.budget.exhausted_error());
        }
        Evaluation {
            result,
            cost: frame.budget.used(),
        }
    }
}

/// A variable of the activation, resolved on first use.
#[derive(Clone)]
enum Global {
    Unresolved,
    Bound(Value),
    Unbound,
}

struct Frame<'a> {
    activation: &'a dyn Activation,
    names: &'a [Arc<str>],
    globals: Vec<Global>,
    locals: Vec<EvalResult<Value>>,
    budget: Budget,
}

fn select_field(operand: &Value, field: &Key, span: Span) -> EvalResult<Value> {
    match operand {
        Value::Map(map) => match map.get(field) {
            Some(value) => Ok(value.clone()),
            None => Err(EvalError::new(EvalErrorKind::NoSuchKey(field_name(field))).at(span)),
        },
        Value::Optional(None) => Ok(optionals::none()),
        Value::Optional(Some(inner)) => Ok(match inner.as_ref() {
            Value::Map(map) => map
                .get(field)
                .cloned()
                .map_or_else(optionals::none, optionals::some),
            other => return select_field(other, field, span),
        }),
        other => Err(EvalError::no_such_overload("_._", &[other]).at(span)),
    }
}

fn field_name(field: &Key) -> String {
    match field {
        Key::String(name) => name.to_string(),
        other => other.to_string(),
    }
}

fn has_field(operand: &Value, field: &Key, span: Span) -> EvalResult<Value> {
    match operand {
        Value::Map(map) => Ok(Value::Bool(map.contains_key(field))),
        Value::Optional(None) => Ok(Value::Bool(false)),
        Value::Optional(Some(inner)) => has_field(inner, field, span),
        other => Err(EvalError::no_such_overload("has", &[other]).at(span)),
    }
}

fn expect_bool(function: &str, value: &Value) -> EvalResult<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        other => Err(EvalError::no_such_overload(function, &[other])),
    }
}

impl Frame<'_> {
    /// The value of a global, resolving it from the activation on first use.
    fn global(&mut self, slot: u32) -> Option<&Value> {
        let slot = slot as usize;
        if matches!(self.globals[slot], Global::Unresolved) {
            self.globals[slot] = match self.activation.resolve(&self.names[slot]) {
                Some(value) => Global::Bound(value),
                None => Global::Unbound,
            };
        }
        match &self.globals[slot] {
            Global::Bound(value) => Some(value),
            _ => None,
        }
    }

    fn eval_path(&mut self, root: &PathRoot, steps: &[(Key, Span)]) -> EvalResult<Value> {
        self.budget.charge(steps.len() as u64)?;
        let mut current: &Value = match root {
            PathRoot::Global { slot, name, span } => match self.global(*slot) {
                Some(value) => value,
                None => {
                    return Err(
                        EvalError::new(EvalErrorKind::NoSuchAttribute(name.to_string())).at(*span),
                    );
                }
            },
            PathRoot::Local(slot) => match &self.locals[*slot as usize] {
                Ok(value) => value,
                Err(error) => return Err(error.clone()),
            },
        };
        for (index, (key, span)) in steps.iter().enumerate() {
            match current {
                Value::Map(map) => match map.get(key) {
                    Some(value) => current = value,
                    None => {
                        return Err(
                            EvalError::new(EvalErrorKind::NoSuchKey(field_name(key))).at(*span)
                        );
                    }
                },
                // Optionals and errors take the general (copying) path.
                other => {
                    let mut owned = select_field(other, key, *span)?;
                    for (key, span) in &steps[index + 1..] {
                        owned = select_field(&owned, key, *span)?;
                    }
                    return Ok(owned);
                }
            }
        }
        Ok(current.clone())
    }

    #[inline]
    fn eval(&mut self, node: &Node) -> EvalResult<Value> {
        match node {
            Node::Const(value) => Ok(value.clone()),
            Node::Local(slot) => self.locals[*slot as usize].clone(),
            _ => crate::stack::guard(|| self.eval_node(node)),
        }
    }

    fn eval_node(&mut self, node: &Node) -> EvalResult<Value> {
        match node {
            Node::Const(value) => Ok(value.clone()),
            Node::Local(slot) => self.locals[*slot as usize].clone(),
            Node::Global { slot, name, span } => self.global(*slot).cloned().ok_or_else(|| {
                EvalError::new(EvalErrorKind::NoSuchAttribute(name.to_string())).at(*span)
            }),
            Node::Path { root, steps } => self.eval_path(root, steps),
            Node::Name {
                name,
                options,
                type_value,
                span,
            } => {
                for option in options.iter() {
                    if let Some(value) = self.global(option.slot) {
                        let mut value = value.clone();
                        for field in option.fields.iter() {
                            self.budget.charge(1)?;
                            value = select_field(&value, field, *span)?;
                        }
                        return Ok(value);
                    }
                }
                type_value.clone().ok_or_else(|| {
                    EvalError::new(EvalErrorKind::NoSuchAttribute(name.to_string())).at(*span)
                })
            }
            Node::Select {
                operand,
                field,
                span,
            } => {
                let operand = self.eval(operand)?;
                self.budget.charge(1)?;
                select_field(&operand, field, *span)
            }
            Node::Presence {
                operand,
                field,
                span,
            } => {
                let operand = self.eval(operand)?;
                self.budget.charge(1)?;
                has_field(&operand, field, *span)
            }
            Node::OptionalSelect {
                operand,
                field,
                span,
            } => {
                let operand = self.eval(operand)?;
                self.budget.charge(1)?;
                let inner = match &operand {
                    Value::Optional(None) => return Ok(optionals::none()),
                    Value::Optional(Some(inner)) => inner.as_ref(),
                    other => other,
                };
                match inner {
                    Value::Map(map) => Ok(map
                        .get(field)
                        .cloned()
                        .map_or_else(optionals::none, optionals::some)),
                    other => Err(EvalError::no_such_overload("_?._", &[other]).at(*span)),
                }
            }
            Node::Not(operand, span) => {
                let value = self.eval(operand)?;
                self.budget.charge(1)?;
                operators::not(&value).map_err(|e| e.at(*span))
            }
            Node::Negate(operand, span) => {
                let value = self.eval(operand)?;
                self.budget.charge(1)?;
                operators::negate(&value).map_err(|e| e.at(*span))
            }
            Node::Arithmetic {
                operator,
                left,
                right,
                library,
                span,
            } => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                self.budget.charge(1)?;
                if let Some(result) = self.on_opaque(library, &left, &right) {
                    return result.map_err(|e| e.at(*span));
                }
                match operator {
                    Arithmetic::Add => operators::add(&left, &right, &mut self.budget),
                    Arithmetic::Subtract => operators::subtract(&left, &right),
                    Arithmetic::Multiply => operators::multiply(&left, &right),
                    Arithmetic::Divide => operators::divide(&left, &right),
                    Arithmetic::Modulo => operators::modulo(&left, &right),
                }
                .map_err(|e| e.at(*span))
            }
            Node::Equals {
                left,
                right,
                negate,
            } => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                self.budget.charge(1)?;
                let result = operators::equality(&left, &right, *negate, &mut self.budget)?;
                Ok(Value::Bool(result))
            }
            Node::Relate {
                relation,
                left,
                right,
                library,
                span,
            } => {
                let left = self.eval(left)?;
                let right = self.eval(right)?;
                self.budget.charge(1)?;
                if let Some(result) = self.on_opaque(library, &left, &right) {
                    return result.map_err(|e| e.at(*span));
                }
                operators::relate(*relation, &left, &right, &mut self.budget)
                    .map_err(|e| e.at(*span))
            }
            Node::Index {
                operand,
                index,
                span,
            } => {
                let operand = self.eval(operand)?;
                let index = self.eval(index)?;
                self.budget.charge(1)?;
                if matches!(operand, Value::Map(_)) {
                    operators::charge_lookup(&index, &mut self.budget)?;
                }
                if matches!(operand, Value::Optional(_)) {
                    return optionals::optional_index(&operand, &index).map_err(|e| e.at(*span));
                }
                operators::index(&operand, &index).map_err(|e| e.at(*span))
            }
            Node::OptionalIndex {
                operand,
                index,
                span,
            } => {
                let operand = self.eval(operand)?;
                let index = self.eval(index)?;
                self.budget.charge(1)?;
                operators::charge_lookup(&index, &mut self.budget)?;
                optionals::optional_index(&operand, &index).map_err(|e| e.at(*span))
            }
            Node::In {
                element,
                container,
                span,
            } => {
                let element = self.eval(element)?;
                let container = self.eval(container)?;
                self.budget.charge(1)?;
                operators::contained_in(&element, &container, &mut self.budget)
                    .map_err(|e| e.at(*span))
            }
            Node::Size(operand, span) => {
                let value = self.eval(operand)?;
                self.budget.charge(1)?;
                operators::size(&value, &mut self.budget).map_err(|e| e.at(*span))
            }
            Node::And(left, right, span) => self.logical(left, right, false, *span),
            Node::Or(left, right, span) => self.logical(left, right, true, *span),
            Node::Conditional(condition, then, otherwise, span) => {
                let condition = self.eval(condition)?;
                if expect_bool("_?_:_", &condition).map_err(|e| e.at(*span))? {
                    self.eval(then)
                } else {
                    self.eval(otherwise)
                }
            }
            Node::NotStrictlyFalse(operand) => {
                let value = self.eval(operand);
                self.budget.charge(1)?;
                Ok(Value::Bool(!matches!(value, Ok(Value::Bool(false)))))
            }
            Node::OptionalOr {
                optional,
                alternative,
                unwrap,
                span,
            } => {
                let value = self.eval(optional)?;
                self.budget.charge(1)?;
                match value {
                    Value::Optional(Some(inner)) if *unwrap => Ok(inner.as_ref().clone()),
                    Value::Optional(Some(_)) => Ok(value),
                    Value::Optional(None) => self.eval(alternative),
                    other => {
                        let name = if *unwrap { "orValue" } else { "or" };
                        Err(EvalError::no_such_overload(name, &[&other]).at(*span))
                    }
                }
            }
            Node::Call {
                implementation,
                args,
                span,
                ..
            } => {
                self.budget.charge(1)?;
                let result = match args.as_ref() {
                    [] => implementation(&[], &mut self.budget),
                    [a] => {
                        let values = [self.eval(a)?];
                        implementation(&values, &mut self.budget)
                    }
                    [a, b] => {
                        let values = [self.eval(a)?, self.eval(b)?];
                        implementation(&values, &mut self.budget)
                    }
                    _ => {
                        let values = self.eval_all(args)?;
                        implementation(&values, &mut self.budget)
                    }
                };
                result.map_err(|e| e.at(*span))
            }
            Node::Dispatch {
                name,
                overloads,
                args,
                span,
            } => {
                self.budget.charge(1)?;
                let values = self.eval_all(args)?;
                match overloads.iter().find(|overload| overload.accepts(&values)) {
                    Some(overload) => match &overload.implementation {
                        Some(implementation) => implementation(&values, &mut self.budget),
                        None => Err(EvalError::no_such_overload(
                            name,
                            &values.iter().collect::<Vec<_>>(),
                        )),
                    },
                    None => Err(EvalError::no_such_overload(
                        name,
                        &values.iter().collect::<Vec<_>>(),
                    )),
                }
                .map_err(|e| e.at(*span))
            }
            Node::List {
                elements,
                optional,
                span,
            } => {
                self.budget.charge(1 + elements.len() as u64)?;
                let mut values = Vec::with_capacity(elements.len());
                for (element, is_optional) in elements.iter().zip(optional.iter()) {
                    let value = self.eval(element)?;
                    if *is_optional {
                        match value {
                            Value::Optional(Some(inner)) => values.push(inner.as_ref().clone()),
                            Value::Optional(None) => {}
                            other => {
                                return Err(
                                    EvalError::no_such_overload("[?_]", &[&other]).at(*span)
                                );
                            }
                        }
                    } else {
                        values.push(value);
                    }
                }
                Ok(Value::list(values))
            }
            Node::Map { entries, span } => {
                self.budget.charge(MAP_CREATE_COST + entries.len() as u64)?;
                let mut map = Map::with_capacity(entries.len());
                for (key_node, value_node, is_optional) in entries.iter() {
                    let key_value = self.eval(key_node)?;
                    let key = Key::from_value(&key_value).map_err(|e| e.at(*span))?;
                    let mut value = self.eval(value_node)?;
                    if *is_optional {
                        match value {
                            Value::Optional(Some(inner)) => value = inner.as_ref().clone(),
                            Value::Optional(None) => continue,
                            other => {
                                return Err(
                                    EvalError::no_such_overload("{?_}", &[&other]).at(*span)
                                );
                            }
                        }
                    }
                    if map.contains_key(&key) {
                        return Err(
                            EvalError::new(EvalErrorKind::DuplicateKey(key.to_string())).at(*span)
                        );
                    }
                    map.insert(key, value);
                }
                Ok(Value::Map(map))
            }
            Node::Append {
                accu_slot,
                element,
                span,
            } => {
                let element = self.eval(element)?;
                self.budget.charge(1)?;
                let slot = *accu_slot as usize;
                let accumulator = std::mem::replace(&mut self.locals[slot], Ok(Value::Null))?;
                match accumulator {
                    Value::List(mut items) => {
                        Arc::make_mut(&mut items).push(element);
                        Ok(Value::List(items))
                    }
                    other => operators::add(&other, &Value::list(vec![element]), &mut self.budget)
                        .map_err(|e| e.at(*span)),
                }
            }
            Node::MapInsert {
                accumulator,
                accu_slot,
                key,
                value,
                span,
            } => self.map_insert(accumulator, *accu_slot, key.as_deref(), value, *span),
            Node::Fold(fold) => self.fold(fold),
            Node::Fail(error) => Err(error.clone()),
        }
    }

    /// An operator applied to an opaque operand, through the library overload that accepts
    /// both operands; `None` when neither is opaque or no library overload accepts them (the
    /// built-in operator then reports it).
    fn on_opaque(
        &mut self,
        library: &Option<Arc<[crate::functions::Overload]>>,
        left: &Value,
        right: &Value,
    ) -> Option<EvalResult<Value>> {
        let library = library.as_ref()?;
        if !matches!(left, Value::Opaque(_)) && !matches!(right, Value::Opaque(_)) {
            return None;
        }
        let values = [left.clone(), right.clone()];
        let overload = library.iter().find(|overload| overload.accepts(&values))?;
        let implementation = overload.implementation.as_ref()?;
        Some(implementation(&values, &mut self.budget))
    }

    fn eval_all(&mut self, nodes: &[Node]) -> EvalResult<Vec<Value>> {
        let mut values = Vec::with_capacity(nodes.len());
        for node in nodes {
            values.push(self.eval(node)?);
        }
        Ok(values)
    }

    /// `&&` (`is_or` false) and `||` (`is_or` true) with commutative error absorption: a
    /// decisive operand wins over an error on the other side.
    fn logical(&mut self, left: &Node, right: &Node, is_or: bool, span: Span) -> EvalResult<Value> {
        let function = if is_or { "_||_" } else { "_&&_" };
        let left = self.eval(left);
        if self.budget.is_exhausted() {
            return Err(self.budget.exhausted_error());
        }
        if let Ok(Value::Bool(value)) = left
            && value == is_or
        {
            return Ok(Value::Bool(is_or));
        }
        let right = self.eval(right);
        if let Ok(Value::Bool(value)) = right
            && value == is_or
        {
            return Ok(Value::Bool(is_or));
        }
        match (left, right) {
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!is_or)),
            (Err(error), _) => Err(error),
            (Ok(Value::Bool(_)), Err(error)) => Err(error),
            (Ok(Value::Bool(_)), Ok(other)) | (Ok(other), _) => {
                Err(EvalError::no_such_overload(function, &[&other]).at(span))
            }
        }
    }

    fn map_insert(
        &mut self,
        accumulator: &Node,
        accu_slot: Option<u32>,
        key: Option<&Node>,
        value: &Node,
        span: Span,
    ) -> EvalResult<Value> {
        let key = key.map(|key| self.eval(key)).transpose()?;
        let value = self.eval(value)?;
        self.budget.charge(1)?;
        let accumulator = match accu_slot {
            Some(slot) => std::mem::replace(&mut self.locals[slot as usize], Ok(Value::Null))?,
            None => self.eval(accumulator)?,
        };
        let Value::Map(mut map) = accumulator else {
            return Err(EvalError::no_such_overload("cel.@mapInsert", &[&accumulator]).at(span));
        };
        let entries: Vec<(Key, Value)> = match key {
            Some(key) => vec![(Key::from_value(&key).map_err(|e| e.at(span))?, value)],
            None => match value {
                Value::Map(entries) => {
                    self.budget.charge(traversal_cost(entries.len()))?;
                    entries
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                }
                other => {
                    return Err(EvalError::no_such_overload("cel.@mapInsert", &[&other]).at(span));
                }
            },
        };
        for (key, value) in entries {
            operators::charge_key(&key, &mut self.budget).map_err(|e| e.at(span))?;
            if map.contains_key(&key) {
                return Err(EvalError::new(EvalErrorKind::DuplicateKey(key.to_string())).at(span));
            }
            map.insert(key, value);
        }
        Ok(Value::Map(map))
    }

    fn fold(&mut self, fold: &Fold) -> EvalResult<Value> {
        let range = self.eval(&fold.iter_range)?;
        let initial = self.eval(&fold.accu_init);
        let accu = fold.accu_slot as usize;
        let iter = fold.iter_slot as usize;
        self.locals[accu] = initial;
        match &range {
            Value::List(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.budget.charge(1)?;
                    match fold.iter2_slot {
                        Some(second) => {
                            self.locals[iter] = Ok(Value::Int(index as i64));
                            self.locals[second as usize] = Ok(item.clone());
                        }
                        None => self.locals[iter] = Ok(item.clone()),
                    }
                    if !self.continue_loop(&fold.condition)? {
                        break;
                    }
                    self.locals[accu] = self.eval(&fold.step);
                }
            }
            Value::Map(map) => {
                for (key, value) in map.iter() {
                    self.budget.charge(1)?;
                    self.locals[iter] = Ok(key.to_value());
                    if let Some(second) = fold.iter2_slot {
                        self.locals[second as usize] = Ok(value.clone());
                    }
                    if !self.continue_loop(&fold.condition)? {
                        break;
                    }
                    self.locals[accu] = self.eval(&fold.step);
                }
            }
            other => {
                return Err(EvalError::no_such_overload("comprehension", &[other]).at(fold.span));
            }
        }
        let result = self.eval(&fold.result);
        self.locals[accu] = Ok(Value::Null);
        result
    }

    fn continue_loop(&mut self, condition: &Node) -> EvalResult<bool> {
        if let Node::Const(Value::Bool(value)) = condition {
            return Ok(*value);
        }
        let value = self.eval(condition)?;
        expect_bool("loop condition", &value)
    }
}

#[cfg(test)]
mod tests;
