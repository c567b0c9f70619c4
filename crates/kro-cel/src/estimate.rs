//! Static cost estimation: a bound on what an evaluation can cost, computed from a checked
//! expression and what is known about the sizes of its inputs.
//!
//! The estimate follows the interpreter's cost model (see [`crate::cost`]): it is a range whose
//! minimum is a lower bound and whose maximum, when known, is an upper bound of the units an
//! evaluation charges. Without size information a comprehension over an input has no upper
//! bound; schemas supply sizes (`maxItems`, `maxLength`, `maxProperties`) through
//! [`SizeHints`].

mod cel_go;

use std::collections::HashMap;

use crate::ast::{Expr, ExprKind, Literal, operators as names};
use crate::checker::{CheckedAst, Reference};
use crate::cost::{MAP_CREATE_COST, copy_cost, traversal_cost};
use crate::pattern;
use crate::types::Type;

pub use cel_go::{CelGoCostConfig, CostRange, PathSizes, SizeRange, estimate_cel_go_cost};

/// The range of cost units an evaluation may charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostEstimate {
    /// A lower bound.
    pub min: u64,
    /// An upper bound, or `None` when input sizes are unknown.
    pub max: Option<u64>,
}

impl CostEstimate {
    fn exact(cost: u64) -> Self {
        CostEstimate {
            min: cost,
            max: Some(cost),
        }
    }

    fn plus(self, other: CostEstimate) -> Self {
        CostEstimate {
            min: self.min.saturating_add(other.min),
            max: self.max.zip(other.max).map(|(a, b)| a.saturating_add(b)),
        }
    }

    fn times(self, count: Size) -> Self {
        CostEstimate {
            min: self.min.saturating_mul(count.min),
            max: self.max.zip(count.max).map(|(a, b)| a.saturating_mul(b)),
        }
    }

    fn either(self, other: CostEstimate) -> Self {
        CostEstimate {
            min: self.min.min(other.min),
            max: self.max.zip(other.max).map(|(a, b)| a.max(b)),
        }
    }
}

/// Maximum sizes of inputs, by path: a variable (`schema`), a field path (`schema.spec.ports`),
/// and the elements of a list or the keys and values of a map (`schema.spec.ports.@items`,
/// `labels.@keys`, `labels.@values`). A size is a string's length in bytes, or a list's or
/// map's number of entries.
pub trait SizeHints {
    /// The largest size the value at `path` can have, when known.
    fn max_size(&self, path: &str) -> Option<u64>;
}

/// No size information: comprehensions over inputs are unbounded.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSizeHints;

impl SizeHints for NoSizeHints {
    fn max_size(&self, _path: &str) -> Option<u64> {
        None
    }
}

impl SizeHints for HashMap<String, u64> {
    fn max_size(&self, path: &str) -> Option<u64> {
        self.get(path).copied()
    }
}

/// The same upper bound with no lower bound: work that may or may not be charged.
fn at_most(estimate: CostEstimate) -> CostEstimate {
    CostEstimate {
        min: 0,
        max: estimate.max,
    }
}

#[derive(Debug, Clone, Copy)]
struct Size {
    min: u64,
    max: Option<u64>,
}

impl Size {
    const UNKNOWN: Size = Size { min: 0, max: None };

    fn exact(size: u64) -> Self {
        Size {
            min: size,
            max: Some(size),
        }
    }
}

/// What the estimator knows about a subexpression.
#[derive(Debug, Clone)]
struct Estimate {
    cost: CostEstimate,
    size: Size,
    /// The input path the value comes from, for size hints.
    path: Option<String>,
    /// For literal lists and maps: the size of each element (or key) and of each map value.
    items: Option<(Size, Size)>,
    /// An upper bound on everything a deep walk of the value visits, when known: elements
    /// and entries at every level, plus the bytes of every string, bytes value and key.
    deep: Option<u64>,
}

fn widest(sizes: impl Iterator<Item = Size>) -> Size {
    sizes.fold(Size::exact(0), |widest, size| Size {
        min: widest.min.min(size.min),
        max: widest.max.zip(size.max).map(|(a, b)| a.max(b)),
    })
}

/// Estimates the cost range of evaluating `checked`.
pub fn estimate_cost(checked: &CheckedAst, hints: &dyn SizeHints) -> CostEstimate {
    let mut estimator = Estimator {
        checked,
        hints,
        locals: Vec::new(),
    };
    estimator.estimate(&checked.ast.expr).cost
}

struct Estimator<'a> {
    checked: &'a CheckedAst,
    hints: &'a dyn SizeHints,
    /// Comprehension variables: name, input path, and size when known without hints.
    locals: Vec<(String, Option<String>, Size)>,
}

impl Estimator<'_> {
    fn hinted(&self, path: Option<String>, cost: CostEstimate) -> Estimate {
        let size = path
            .as_deref()
            .and_then(|path| self.hints.max_size(path))
            .map_or(Size::UNKNOWN, |max| Size {
                min: 0,
                max: Some(max),
            });
        Estimate {
            cost,
            size,
            path,
            items: None,
            deep: None,
        }
    }

    fn estimate(&mut self, expr: &Expr) -> Estimate {
        let mut estimate = crate::stack::guard(|| self.estimate_unguarded(expr));
        // Values of scalar types have no size, whatever their origin.
        if matches!(
            self.checked.type_of(expr.id),
            Some(
                Type::Bool
                    | Type::Int
                    | Type::Uint
                    | Type::Double
                    | Type::Null
                    | Type::Timestamp
                    | Type::Duration
                    | Type::Type(_)
            )
        ) {
            estimate.size = Size::exact(0);
            estimate.deep = Some(0);
        }
        if estimate.deep.is_none() {
            estimate.deep = self
                .checked
                .type_of(expr.id)
                .filter(|ty| is_flat(ty))
                .and(estimate.size.max);
        }
        estimate
    }

    fn estimate_unguarded(&mut self, expr: &Expr) -> Estimate {
        if let Some(Reference::Variable(name)) = self.checked.reference(expr.id) {
            return self.hinted(Some(name.clone()), CostEstimate::exact(0));
        }
        match &expr.kind {
            ExprKind::Literal(literal) => Estimate {
                cost: CostEstimate::exact(0),
                size: Size::exact(match literal {
                    Literal::String(text) => text.len() as u64,
                    Literal::Bytes(bytes) => bytes.len() as u64,
                    _ => 0,
                }),
                path: None,
                items: None,
                deep: Some(match literal {
                    Literal::String(text) => text.len() as u64,
                    Literal::Bytes(bytes) => bytes.len() as u64,
                    _ => 0,
                }),
            },
            ExprKind::Ident(name) => {
                match self.locals.iter().rev().find(|(local, _, _)| local == name) {
                    Some((_, path, size)) => {
                        let (path, size) = (path.clone(), *size);
                        let mut estimate = self.hinted(path, CostEstimate::exact(0));
                        if estimate.size.max.is_none() {
                            estimate.size = size;
                        }
                        estimate
                    }
                    None => self.hinted(Some(name.clone()), CostEstimate::exact(0)),
                }
            }
            ExprKind::Select(select) => {
                let operand = self.estimate(&select.operand);
                let cost = operand.cost.plus(CostEstimate::exact(1));
                if select.test_only {
                    return Estimate {
                        cost,
                        size: Size::exact(0),
                        path: None,
                        items: None,
                        deep: None,
                    };
                }
                let path = operand.path.map(|path| format!("{path}.{}", select.field));
                self.hinted(path, cost)
            }
            ExprKind::Call(call) => {
                // `@result + [x]` in a comprehension step appends in place: one unit.
                if call.function == names::ADD
                    && matches!(call.args.first().map(|arg| &arg.kind), Some(ExprKind::Ident(name)) if name.starts_with('@'))
                {
                    let element = call.args.get(1).map(|arg| self.estimate(arg).cost);
                    return Estimate {
                        cost: element
                            .unwrap_or(CostEstimate::exact(0))
                            .plus(CostEstimate::exact(2)),
                        size: Size::UNKNOWN,
                        path: None,
                        items: None,
                        deep: None,
                    };
                }
                // `strings.quote(x)` parses as a call of `quote` on `strings`: the checker
                // resolved it to the global function, whose arguments exclude the namespace.
                let resolved = match self.checked.reference(expr.id) {
                    Some(Reference::Function { name, .. }) => Some(name.as_str()),
                    _ => None,
                };
                let namespaced =
                    call.target.is_some() && resolved.is_some_and(|name| name != call.function);
                let function = resolved.unwrap_or(&call.function).to_string();
                let mut parts: Vec<Estimate> = Vec::new();
                if let Some(target) = call.target.as_ref().filter(|_| !namespaced) {
                    parts.push(self.estimate(target));
                }
                for arg in &call.args {
                    parts.push(self.estimate(arg));
                }
                if let Some(search) = self.regex_search(expr) {
                    let pattern = call
                        .target
                        .iter()
                        .filter(|_| !namespaced)
                        .map(AsRef::as_ref)
                        .chain(&call.args)
                        .nth(1);
                    return regex_call(search, pattern, &parts);
                }
                if matches!(function.as_str(), "lists.range" | "range")
                    && let Some(estimate) = range_call(&call.args, &parts)
                {
                    return estimate;
                }
                let walks_deep = call
                    .target
                    .iter()
                    .filter(|_| !namespaced)
                    .map(AsRef::as_ref)
                    .chain(&call.args)
                    .any(|arg| !self.checked.type_of(arg.id).is_some_and(is_leaf));
                self.call(&function, parts, walks_deep)
            }
            ExprKind::List(list) => {
                // A list of constants is built once, when planning: it may cost nothing.
                let mut cost = at_most(CostEstimate::exact(1 + list.elements.len() as u64));
                let mut element_sizes = Vec::with_capacity(list.elements.len());
                let mut deep = Some(list.elements.len() as u64);
                for element in &list.elements {
                    let estimate = self.estimate(element);
                    cost = cost.plus(estimate.cost);
                    element_sizes.push(estimate.size);
                    deep = deep.zip(estimate.deep).map(|(a, b)| a.saturating_add(b));
                }
                let count = list.elements.len() as u64;
                let optional = list.optional_indices.len() as u64;
                Estimate {
                    cost,
                    size: Size {
                        min: count - optional,
                        max: Some(count),
                    },
                    path: None,
                    items: Some((widest(element_sizes.into_iter()), Size::UNKNOWN)),
                    deep,
                }
            }
            ExprKind::Map(map) => {
                let mut cost = CostEstimate::exact(MAP_CREATE_COST + map.entries.len() as u64);
                let mut key_sizes = Vec::with_capacity(map.entries.len());
                let mut value_sizes = Vec::with_capacity(map.entries.len());
                let mut deep = Some(map.entries.len() as u64);
                for entry in &map.entries {
                    let key = self.estimate(&entry.key);
                    let value = self.estimate(&entry.value);
                    cost = cost.plus(key.cost).plus(value.cost);
                    key_sizes.push(key.size);
                    value_sizes.push(value.size);
                    deep = deep
                        .zip(key.deep)
                        .zip(value.deep)
                        .map(|((a, b), c)| a.saturating_add(b).saturating_add(c));
                }
                Estimate {
                    cost,
                    size: Size {
                        min: 0,
                        max: Some(map.entries.len() as u64),
                    },
                    path: None,
                    items: Some((
                        widest(key_sizes.into_iter()),
                        widest(value_sizes.into_iter()),
                    )),
                    deep,
                }
            }
            ExprKind::Struct(object) => {
                let mut cost = CostEstimate::exact(MAP_CREATE_COST + object.fields.len() as u64);
                let mut deep = Some(object.fields.len() as u64);
                for field in &object.fields {
                    let value = self.estimate(&field.value);
                    cost = cost.plus(value.cost);
                    deep = deep
                        .zip(value.deep)
                        .map(|(a, b)| a.saturating_add(b).saturating_add(field.field.len() as u64));
                }
                Estimate {
                    cost,
                    size: Size::exact(object.fields.len() as u64),
                    path: None,
                    items: None,
                    deep,
                }
            }
            ExprKind::Comprehension(comprehension) => {
                let range = self.estimate(&comprehension.iter_range);
                let init = self.estimate(&comprehension.accu_init);
                let is_map = matches!(
                    self.checked.type_of(comprehension.iter_range.id),
                    Some(Type::Map(_, _))
                );
                let (first, second) = match (&range.path, is_map) {
                    (Some(path), true) => (
                        Some(format!("{path}.@keys")),
                        Some(format!("{path}.@values")),
                    ),
                    (Some(path), false) if comprehension.iter_var2.is_some() => {
                        (None, Some(format!("{path}.@items")))
                    }
                    (Some(path), false) => (Some(format!("{path}.@items")), None),
                    (None, _) => (None, None),
                };
                let (first_size, second_size) = match range.items {
                    Some((items, values)) if is_map => (items, values),
                    Some((items, _)) if comprehension.iter_var2.is_some() => {
                        (Size::exact(0), items)
                    }
                    Some((items, _)) => (items, Size::UNKNOWN),
                    None => (Size::UNKNOWN, Size::UNKNOWN),
                };
                let depth = self.locals.len();
                self.locals
                    .push((comprehension.accu_var.clone(), None, Size::UNKNOWN));
                self.locals
                    .push((comprehension.iter_var.clone(), first, first_size));
                if let Some(name) = &comprehension.iter_var2 {
                    self.locals.push((name.clone(), second, second_size));
                }
                let condition = self.estimate(&comprehension.loop_condition);
                let step = self.estimate(&comprehension.loop_step);
                self.locals.truncate(depth + 1);
                let result = self.estimate(&comprehension.result);
                self.locals.truncate(depth);
                let per_iteration = CostEstimate::exact(1).plus(condition.cost).plus(step.cost);
                // Loops may stop early (all/exists), so the minimum counts no iterations.
                let iterations = CostEstimate {
                    min: 0,
                    max: per_iteration.times(range.size).max,
                };
                // The macros build their result in the accumulator, one element per iteration
                // at most; any other result (`cel.bind`'s body) has its own size.
                let returns_accumulator = matches!(
                    &comprehension.result.kind,
                    ExprKind::Ident(name) if *name == comprehension.accu_var
                );
                let size = if returns_accumulator {
                    Size {
                        min: 0,
                        max: init
                            .size
                            .max
                            .zip(range.size.max)
                            .map(|(init, range)| init.saturating_add(range)),
                    }
                } else {
                    result.size
                };
                Estimate {
                    cost: range
                        .cost
                        .plus(init.cost)
                        .plus(iterations)
                        .plus(result.cost),
                    size,
                    path: None,
                    items: None,
                    deep: None,
                }
            }
        }
    }

    /// The kind of regex search a call makes, when it resolves to a regex overload.
    fn regex_search(&self, expr: &Expr) -> Option<RegexSearch> {
        let Some(Reference::Function { overloads, .. }) = self.checked.reference(expr.id) else {
            return None;
        };
        let kind = |id: &str| match id {
            "matches" | "matches_string" => Some(RegexSearch::Matches),
            "string_find_string" => Some(RegexSearch::Find),
            "string_find_all_string" | "string_find_all_string_int" => Some(RegexSearch::FindAll),
            _ => None,
        };
        let mut kinds = overloads.iter().map(|id| kind(id));
        let first = kinds.next()??;
        kinds.all(|other| other == Some(first)).then_some(first)
    }

    /// A call's cost: its arguments, one unit, and what the function charges for the size of
    /// what it walks; `walks_deep` when an argument may be an aggregate, whose equality walks
    /// every level.
    fn call(&mut self, function: &str, parts: Vec<Estimate>, walks_deep: bool) -> Estimate {
        let arguments = parts
            .iter()
            .fold(CostEstimate::exact(0), |total, part| total.plus(part.cost));
        let walked = |size: Size| CostEstimate {
            min: traversal_cost(size.min as usize),
            max: size.max.map(|max| traversal_cost(max as usize)),
        };
        let sizes: Vec<Size> = parts.iter().map(|part| part.size).collect();
        let total_size = sizes.iter().fold(Size::exact(0), |total, size| Size {
            min: total.min.saturating_add(size.min),
            max: total.max.zip(size.max).map(|(a, b)| a.saturating_add(b)),
        });
        match function {
            names::LOGICAL_AND | names::LOGICAL_OR | names::CONDITIONAL => {
                // Short-circuit: at least the first operand, at most all of them.
                let first = parts
                    .first()
                    .map_or(CostEstimate::exact(0), |part| part.cost);
                let rest = if function == names::CONDITIONAL {
                    let branches = parts.get(1).zip(parts.get(2));
                    branches.map_or(CostEstimate::exact(0), |(a, b)| a.cost.either(b.cost))
                } else {
                    parts
                        .get(1)
                        .map_or(CostEstimate::exact(0), |part| part.cost)
                };
                // `a && b` may succeed with `a` failing early (its error absorbed because `b`
                // decided), so only the cheaper side is certain to be paid for.
                let min = if function == names::CONDITIONAL {
                    first.min
                } else {
                    first.min.min(rest.min)
                };
                let cost = CostEstimate {
                    min,
                    max: first.max.zip(rest.max).map(|(a, b)| a.saturating_add(b)),
                };
                let size = match function {
                    names::CONDITIONAL => {
                        parts
                            .get(1)
                            .zip(parts.get(2))
                            .map_or(Size::UNKNOWN, |(a, b)| Size {
                                min: a.size.min.min(b.size.min),
                                max: a.size.max.zip(b.size.max).map(|(x, y)| x.max(y)),
                            })
                    }
                    _ => Size::exact(0),
                };
                let deep = match function {
                    names::CONDITIONAL => parts
                        .get(1)
                        .zip(parts.get(2))
                        .and_then(|(a, b)| a.deep.zip(b.deep))
                        .map(|(a, b)| a.max(b)),
                    _ => Some(0),
                };
                Estimate {
                    cost,
                    size,
                    path: None,
                    items: None,
                    deep,
                }
            }
            "dyn" => match parts.into_iter().next() {
                Some(part) => Estimate {
                    cost: part.cost.plus(CostEstimate::exact(1)),
                    ..part
                },
                None => Estimate {
                    cost: CostEstimate::exact(1),
                    size: Size::UNKNOWN,
                    path: None,
                    items: None,
                    deep: None,
                },
            },
            names::ADD => Estimate {
                // Strings and bytes are walked; list elements are copied, which costs more.
                cost: arguments
                    .plus(CostEstimate::exact(1))
                    .plus(at_most(if walks_deep {
                        CostEstimate {
                            min: copy_cost(total_size.min as usize),
                            max: total_size.max.map(|max| copy_cost(max as usize)),
                        }
                    } else {
                        walked(total_size)
                    })),
                size: total_size,
                path: None,
                items: None,
                deep: None,
            },
            names::EQUALS
            | names::NOT_EQUALS
            | names::IN
            | "contains"
            | "startsWith"
            | "endsWith"
            | "size" => {
                let first = sizes.first().copied().unwrap_or(Size::exact(0));
                let second = sizes.get(1).copied().unwrap_or(Size::exact(0));
                let walked_size = match function {
                    // Equality walks the shorter operand; `in` walks the container.
                    names::EQUALS | names::NOT_EQUALS => Size {
                        min: first.min.min(second.min),
                        max: match (first.max, second.max) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (known, None) | (None, known) => known,
                        },
                    },
                    names::IN => second,
                    // `size` walks strings only, so its minimum is none.
                    "size" => Size {
                        min: 0,
                        max: first.max,
                    },
                    _ => first,
                };
                // Equality and list membership compare every level of aggregates, charging
                // for each pair of lists, maps and strings met (see `operators::equals`); a
                // membership test in a map hashes the element.
                let deeper = match function {
                    names::EQUALS | names::NOT_EQUALS if walks_deep => {
                        let deeps = parts.iter().filter_map(|part| part.deep);
                        let smallest = deeps.min();
                        if parts.iter().any(|part| part.deep.is_some()) {
                            CostEstimate {
                                min: 0,
                                max: smallest.map(deep_walk_cost),
                            }
                        } else {
                            CostEstimate { min: 0, max: None }
                        }
                    }
                    names::IN => CostEstimate {
                        min: 0,
                        max: parts
                            .get(1)
                            .and_then(|container| container.deep)
                            .map(deep_walk_cost)
                            .zip(walked(first).max)
                            .map(|(a, b)| a.saturating_add(b)),
                    },
                    _ => CostEstimate::exact(0),
                };
                Estimate {
                    cost: arguments
                        .plus(CostEstimate::exact(1))
                        .plus(walked(walked_size))
                        .plus(deeper),
                    size: Size::exact(0),
                    path: None,
                    items: None,
                    deep: Some(0),
                }
            }
            names::INDEX | names::OPTIONAL_INDEX => {
                let path = parts
                    .first()
                    .and_then(|part| part.path.clone())
                    .map(|path| format!("{path}.@items"));
                // A string key is hashed to look it up.
                let key = parts
                    .get(1)
                    .map_or(CostEstimate::exact(0), |part| at_most(walked(part.size)));
                self.hinted(path, arguments.plus(CostEstimate::exact(1)).plus(key))
            }
            // kro functions whose cost follows nested contents or argument values rather than
            // the arguments' sizes: only a lower bound is known.
            "deepMerge"
            | "condition"
            | "json.marshal"
            | "json.unmarshal"
            | "random.seededString"
            | "runtime.condition" => Estimate {
                cost: arguments.plus(CostEstimate { min: 1, max: None }),
                size: Size::UNKNOWN,
                path: None,
                items: None,
                deep: None,
            },
            _ => Estimate {
                cost: arguments
                    .plus(CostEstimate::exact(1))
                    .plus(at_most(charged_by(
                        function, &sizes, total_size, walks_deep,
                    ))),
                size: Size::UNKNOWN,
                path: None,
                items: None,
                deep: None,
            },
        }
    }
}

/// What a call of `function` charges beyond its one unit, from the sizes of its arguments
/// (receiver first): a bound for the functions whose cost their arguments' sizes bound, and
/// unknown for the rest (those that create values from numbers, such as `lists.range(n)`, or
/// walk nested contents, such as `format`), so that an estimate never understates.
fn charged_by(function: &str, sizes: &[Size], total: Size, walks_deep: bool) -> CostEstimate {
    let walk = |size: u64| traversal_cost(usize::try_from(size).unwrap_or(usize::MAX));
    let bound = |f: &dyn Fn(&[u64]) -> u64| CostEstimate {
        min: 0,
        max: sizes
            .iter()
            .map(|size| size.max)
            .collect::<Option<Vec<u64>>>()
            .map(|maxima| f(&maxima)),
    };
    let nth = |maxima: &[u64], index: usize| maxima.get(index).copied().unwrap_or(0);
    match function {
        // Scalars, and functions that walk their arguments once (a string's bytes to convert
        // or hash it, a list's elements to add them up).
        names::SUBTRACT
        | names::MULTIPLY
        | names::DIVIDE
        | names::MODULO
        | names::LOGICAL_NOT
        | names::NEGATE
        | names::NOT_STRICTLY_FALSE
        | names::LESS
        | names::LESS_EQUALS
        | names::GREATER
        | names::GREATER_EQUALS
        | names::MAP_INSERT
        | "int"
        | "uint"
        | "double"
        | "bool"
        | "string"
        | "bytes"
        | "type"
        | "timestamp"
        | "hasValue"
        | "value"
        | "or"
        | "orValue"
        | "of"
        | "ofNonZeroValue"
        | "none"
        | "optional.of"
        | "optional.ofNonZeroValue"
        | "optional.none" => CostEstimate {
            min: 0,
            max: total.max.map(walk),
        },
        // A duration is parsed at a unit per two bytes (see `stdlib::conversions`).
        "duration" => CostEstimate {
            min: 0,
            max: total.max.map(|max| max.div_ceil(2)),
        },
        // Read the text, then write a result no longer than it.
        // (`reverse`, `indexOf` and `lastIndexOf` of lists are other functions of the same
        // names.)
        "lowerAscii" | "upperAscii" | "trim" | "reverse" | "charAt" | "indexOf" | "lastIndexOf"
        | "substring"
            if !walks_deep =>
        {
            bound(&|maxima| {
                walk(maxima.iter().fold(0u64, |a, b| a.saturating_add(*b))).saturating_mul(2)
            })
        }
        // Every character may need an escape, and there are the quotes.
        "strings.quote" => bound(&|maxima| {
            let text = nth(maxima, 0);
            walk(text).saturating_add(walk(text.saturating_mul(2).saturating_add(2)))
        }),
        // Every position may be replaced: up to (text + 1) copies of the new text.
        "replace" => bound(&|maxima| {
            let (text, old, new) = (nth(maxima, 0), nth(maxima, 1), nth(maxima, 2));
            let result = text.saturating_add(text.saturating_add(1).saturating_mul(new));
            walk(text.saturating_add(old)).saturating_add(walk(result))
        }),
        // Read twice, and two units for each piece: at most one per byte, plus one.
        "split" => bound(&|maxima| {
            let (text, separator) = (nth(maxima, 0), nth(maxima, 1));
            walk(text.saturating_add(separator))
                .saturating_add(walk(text))
                .saturating_add(text.saturating_add(1).saturating_mul(2))
        }),
        _ => CostEstimate { min: 0, max: None },
    }
}

/// `lists.range(n)`, `range(n)` or `range(start, end)` with literal bounds: one unit per
/// element created (and the call's), a list of ints of known size.
fn range_call(args: &[Expr], parts: &[Estimate]) -> Option<Estimate> {
    let literal = |expr: &Expr| match expr.kind {
        ExprKind::Literal(Literal::Int(value)) => Some(value),
        _ => None,
    };
    let (start, end) = match args {
        [end] => (0, literal(end)?),
        [start, end] => (literal(start)?, literal(end)?),
        _ => return None,
    };
    let count = u64::try_from(end.saturating_sub(start)).unwrap_or(0);
    let arguments = parts
        .iter()
        .fold(CostEstimate::exact(0), |total, part| total.plus(part.cost));
    Some(Estimate {
        cost: arguments.plus(CostEstimate::exact(count.saturating_add(1))),
        size: Size::exact(count),
        path: None,
        items: Some((Size::exact(0), Size::UNKNOWN)),
        deep: Some(count),
    })
}

/// Types whose values equality does not walk into (scalars) or walks as one run of bytes.
fn is_leaf(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Bool
            | Type::Int
            | Type::Uint
            | Type::Double
            | Type::Null
            | Type::Timestamp
            | Type::Duration
            | Type::Type(_)
            | Type::String
            | Type::Bytes
    )
}

/// Types whose deep size is their size: strings and bytes (bytes), lists of scalars
/// (elements), maps from scalars to scalars (entries).
fn is_flat(ty: &Type) -> bool {
    let scalar = |ty: &Type| is_leaf(ty) && !matches!(ty, Type::String | Type::Bytes);
    match ty {
        Type::String | Type::Bytes => true,
        Type::List(element) => scalar(element),
        Type::Map(key, value) => scalar(key) && scalar(value),
        _ => false,
    }
}

/// The most a deep comparison charges when the smaller side has `deep` elements and bytes
/// in all: a unit per ten of them, plus the rounding up at each list, map, string and key
/// (at most one of each per element).
fn deep_walk_cost(deep: u64) -> u64 {
    if deep == 0 {
        return 0;
    }
    traversal_cost(usize::try_from(deep).unwrap_or(usize::MAX))
        .saturating_add(deep.saturating_mul(2))
        .saturating_add(2)
}

/// The regex functions, whose cost follows the pattern's compiled size (see
/// [`crate::pattern`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegexSearch {
    Matches,
    Find,
    FindAll,
}

/// A regex call's cost: its arguments, one unit, compiling the pattern unless it is a valid
/// constant (compiled once when the program is planned), and searching the text with it.
fn regex_call(search: RegexSearch, pattern: Option<&Expr>, parts: &[Estimate]) -> Estimate {
    let arguments = parts
        .iter()
        .fold(CostEstimate::exact(0), |total, part| total.plus(part.cost));
    let text = parts.first().map_or(Size::UNKNOWN, |part| part.size);
    let constant = match pattern.map(|pattern| &pattern.kind) {
        Some(ExprKind::Literal(Literal::String(text))) => pattern::size_of("", text).ok(),
        _ => None,
    };
    let (compile, size) = match constant {
        Some(size) => (CostEstimate::exact(0), Size::exact(size)),
        None => {
            let length = parts.get(1).map_or(Size::UNKNOWN, |part| part.size);
            (
                CostEstimate {
                    min: 0,
                    max: length.max.map(pattern::max_compile_cost),
                },
                Size {
                    min: 1,
                    max: Some(pattern::MAX_PATTERN_STATES),
                },
            )
        }
    };
    let searched = CostEstimate {
        min: pattern::search_cost(text.min, size.min),
        max: text
            .max
            .zip(size.max)
            .map(|(text, size)| pattern::search_cost(text, size)),
    };
    // findAll charges one unit per match plus the bytes of each: at most one match per
    // position, all of them together no longer than the text.
    let results = match search {
        RegexSearch::FindAll => CostEstimate {
            min: 0,
            max: text.max.map(|text| {
                text.saturating_add(1)
                    .saturating_add(traversal_cost(text as usize))
                    .saturating_add(text.saturating_add(1))
            }),
        },
        RegexSearch::Matches | RegexSearch::Find => CostEstimate::exact(0),
    };
    let result_size = match search {
        RegexSearch::Matches => Size::exact(0),
        RegexSearch::Find => Size {
            min: 0,
            max: text.max,
        },
        RegexSearch::FindAll => Size {
            min: 0,
            max: text.max.map(|text| text.saturating_add(1)),
        },
    };
    Estimate {
        cost: arguments
            .plus(CostEstimate::exact(1))
            .plus(compile)
            .plus(searched)
            .plus(results),
        size: result_size,
        path: None,
        items: None,
        deep: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Env, NoVariables};

    /// What evaluating `text` really costs, without a limit.
    fn actual_cost(env: &Env, text: &str) -> u64 {
        env.compile(text)
            .expect("compiles")
            .evaluate_with_limit(&NoVariables, None)
            .cost
    }

    fn estimate(env: &Env, text: &str, hints: &dyn SizeHints) -> CostEstimate {
        let ast = env.parse(text).expect("parses");
        let checked = env.check(&ast).expect("checks");
        estimate_cost(&checked, hints)
    }

    #[test]
    fn constant_expressions_have_an_exact_small_cost() {
        let env = Env::standard();
        let estimate = estimate(&env, "1 + 2 == 3", &NoSizeHints);
        assert_eq!(estimate.max, Some(estimate.min));
        assert!(estimate.min >= 2);
    }

    #[test]
    fn comprehensions_over_unsized_inputs_are_unbounded() {
        let env = Env::standard().with_variable("items", Type::list(Type::Int));
        assert_eq!(
            estimate(&env, "items.all(i, i > 0)", &NoSizeHints).max,
            None
        );
    }

    #[test]
    fn size_hints_bound_comprehensions() {
        let env = Env::standard().with_variable("items", Type::list(Type::Int));
        let hints: HashMap<String, u64> = [("items".to_string(), 100)].into_iter().collect();
        let small = estimate(&env, "items.map(i, i * 2)", &hints);
        let nested = estimate(&env, "items.map(i, items.map(j, i * j))", &hints);
        let (small_max, nested_max) = (small.max.expect("bounded"), nested.max.expect("bounded"));
        assert!(nested_max > 50 * small_max, "{small_max} vs {nested_max}");
    }

    #[test]
    fn a_binding_has_the_size_of_its_body_not_of_its_empty_loop() {
        // Found by the property suite: `cel.bind` expands to a loop over nothing whose result
        // is its body, so the body's size bounds what is done with the binding.
        let env = Env::kro().with_variable("l", Type::list(Type::Int));
        let unbounded = estimate(&env, "cel.bind(v, 0, l).all(x, true)", &NoSizeHints);
        assert_eq!(unbounded.max, None);
        let text = "cel.bind(v, 0, [1, 2, 3]).all(x, x > 0)";
        let bounded = estimate(&env, text, &NoSizeHints);
        let actual = actual_cost(&env, text);
        assert!(
            bounded.max.is_some_and(|max| actual <= max),
            "{bounded:?} vs {actual}"
        );
    }

    #[test]
    fn the_estimate_bounds_the_actual_cost() {
        let env = Env::standard();
        for text in [
            "[1, 2, 3].map(x, x * 2).filter(y, y > 2)",
            "'abc' + 'def' == 'abcdef'",
            "[1, 2, 3].exists_one(x, x > 2)",
            "{'a': 1, 'b': 2}.all(k, k.startsWith('a'))",
            // Found by the property suite: comparing bytes walks them, as strings.
            "b'a\\x00' == b'a\\x00'",
        ] {
            let estimate = estimate(&env, text, &NoSizeHints);
            let actual = actual_cost(&env, text);
            assert!(
                estimate.min <= actual,
                "{text}: min {} > actual {actual}",
                estimate.min
            );
            let Some(max) = estimate.max else {
                panic!("{text}: literal inputs have known sizes");
            };
            assert!(actual <= max, "{text}: actual {actual} > max {max}");
        }
    }

    #[test]
    fn regex_estimates_bound_the_cost_of_compiling_and_searching() {
        let env = Env::kro();
        let cases = [
            "'abc'.matches('a+')",
            "'b'.matches('(a{0,100}){0,50}')",
            "'abc'.find('(a{0,100}){0,50}')",
            "'a b'.findAll('[a-z]')",
            "'a b c'.findAll('[a-z]*', 2)",
            "'b'.matches('(a{0,10}){0,5}' + 'x')",
            "['ab', 'cd'].all(p, 'abcd'.findAll(p).size() == 1)",
        ];
        for text in cases {
            let estimate = estimate(&env, text, &NoSizeHints);
            let actual = env
                .compile(text)
                .expect("compiles")
                .evaluate_with_limit(&NoVariables, None);
            assert!(actual.result.is_ok(), "{text}: {:?}", actual.result);
            assert!(
                estimate.min <= actual.cost,
                "{text}: {estimate:?} vs {}",
                actual.cost
            );
            let max = estimate.max.expect("literal inputs have known sizes");
            assert!(
                actual.cost <= max,
                "{text}: {estimate:?} vs {}",
                actual.cost
            );
        }
        // A constant pattern is charged by its compiled size, not its length.
        let nested = estimate(&env, "'b'.matches('(a{0,100}){0,50}')", &NoSizeHints);
        assert!(nested.min > 2_000, "{nested:?}");
        // A computed pattern may be as large as the limit allows.
        let computed = estimate(&env, "'b'.matches('a' + 'b')", &NoSizeHints);
        assert!(
            computed
                .max
                .is_some_and(|max| max >= pattern::compile_cost(pattern::MAX_PATTERN_STATES)),
            "{computed:?}"
        );
    }

    #[test]
    fn functions_whose_cost_sizes_do_not_bound_have_no_upper_bound() {
        // Every unmodelled function was bounded by the size of its arguments, so
        // `lists.range(100000000)` was estimated at 2 units.
        let env = Env::kro();
        for text in [
            "lists.range(size('abc') * 100000000)",
            "'%s'.format([[1, 2], [3]])",
            "[[1], [2]].flatten()",
            "[1, 2].sort()",
        ] {
            assert_eq!(estimate(&env, text, &NoSizeHints).max, None, "{text}");
        }
    }

    #[test]
    fn list_functions_are_not_estimated_as_the_string_functions_of_their_names() {
        // Found by the fuzzer: `indexOf` of a list was bounded like `indexOf` of a string,
        // a tenth of a unit per element, under what comparing the elements costs.
        let env = Env::kro();
        for text in [
            "string(lists.range(25).indexOf(0))",
            "lists.range(25).lastIndexOf(0)",
            "lists.range(25).reverse()",
        ] {
            let estimate = estimate(&env, text, &NoSizeHints);
            let actual = actual_cost(&env, text);
            assert!(
                estimate.max.is_none_or(|max| actual <= max),
                "{text}: {estimate:?} vs {actual}"
            );
        }
    }

    #[test]
    fn a_logical_operator_may_succeed_without_paying_for_a_failing_side() {
        // Found by the fuzzer: the left side fails before building its map, `&&` absorbs the
        // error because the right side is false, and the minimum counted the whole left side.
        let env = Env::kro();
        let text = "({'': 1} == {''.substring(1): 2}) && (lists.range(3) == [1])";
        let estimate = estimate(&env, text, &NoSizeHints);
        let actual = env
            .compile(text)
            .expect("compiles")
            .evaluate_with_limit(&NoVariables, None);
        assert_eq!(actual.result, Ok(crate::Value::Bool(false)));
        assert!(
            estimate.min <= actual.cost,
            "{estimate:?} vs {}",
            actual.cost
        );
    }

    #[test]
    fn ranges_with_literal_bounds_cost_their_elements() {
        let env = Env::kro();
        assert_eq!(
            estimate(&env, "lists.range(100000000)", &NoSizeHints),
            CostEstimate::exact(100_000_001)
        );
        assert_eq!(
            estimate(&env, "range(2, 5)", &NoSizeHints),
            CostEstimate::exact(4)
        );
        let nested = estimate(
            &env,
            "lists.range(10).map(i, lists.range(10))",
            &NoSizeHints,
        );
        assert!(nested.max.is_some_and(|max| max >= 10 * 11), "{nested:?}");
    }

    #[test]
    fn string_functions_and_deep_equality_are_bounded_from_literal_sizes() {
        let env = Env::kro();
        for text in [
            "'abc'.lowerAscii() == 'abc'",
            "strings.quote('a\\nb\\\\')",
            "'aaa'.replace('', 'bb')",
            "'a,b,c'.split(',')",
            "'abc' < 'abd'",
            "[[1, 2], ['x', 'y']] == [[1, 2], ['x', 'y']]",
            "{'a': [1, 2], 'b': {'c': 'd'}} == {'a': [1, 2], 'b': {'c': 'd'}}",
            "[1, 2] in [[0], [1, 2]]",
            "'key' in {'key': 1}",
            "{'key': 1}['key']",
            "[1, 2].map(x, {'v': x})",
        ] {
            let estimate = estimate(&env, text, &NoSizeHints);
            let actual = env
                .compile(text)
                .expect("compiles")
                .evaluate_with_limit(&NoVariables, None);
            assert!(actual.result.is_ok(), "{text}: {:?}", actual.result);
            assert!(
                estimate.min <= actual.cost,
                "{text}: {estimate:?} vs {}",
                actual.cost
            );
            let max = estimate
                .max
                .unwrap_or_else(|| panic!("{text}: no upper bound"));
            assert!(
                actual.cost <= max,
                "{text}: {estimate:?} vs {}",
                actual.cost
            );
        }
    }

    #[test]
    fn merges_and_json_of_unknown_depth_have_no_upper_bound() {
        let env = Env::kro();
        for text in [
            "{'a': {1: 1, 2: 2}}.deepMerge({'a': {3: 3}})",
            "json.marshal(['x', 'x'])",
            "json.unmarshal('[1, 2]')",
            "random.seededString(1000, 'seed')",
        ] {
            assert_eq!(estimate(&env, text, &NoSizeHints).max, None, "{text}");
        }
    }
}
