//! The static cost estimate of cel-go's checker (`checker/cost.go`), together with the
//! estimates Kubernetes registers for its CEL libraries (`k8s.io/apiserver/pkg/cel/library`)
//! and for `ext.Sets()`, so that an expression gets the figure kube-apiserver computes when
//! it decides whether a CRD validation rule is too expensive.
//!
//! This is a different cost model from kro's own ([`crate::estimate_cost`]): cel-go charges
//! constants for `size()` and most calls where kro charges by length. Kubernetes' limits are
//! expressed in cel-go's units, so only this estimate can be compared with them.
//!
//! Sizes of inputs come from a [`PathSizes`]: cel-go names every value read from a variable
//! by a path (`self`, `spec`, `@items`, `@keys`, `@values`, field names) and asks for the
//! largest size of the value at that path.

use std::collections::HashMap;

use crate::ast::{Expr, ExprId, ExprKind, Literal};
use crate::checker::{CheckedAst, Reference};
use crate::types::Type;

/// cel-go's `common.StringTraversalCostFactor`.
const STRING_TRAVERSAL: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
const REGEX_LENGTH: f64 = 0.25;
/// cel-go's `common.ListCreateBaseCost`.
const LIST_CREATE: u64 = 10;
/// cel-go's `common.MapCreateBaseCost`.
const MAP_CREATE: u64 = 30;
/// cel-go's `common.StructCreateBaseCost`.
const STRUCT_CREATE: u64 = 40;
/// The largest regular expression Kubernetes assumes behind a named format.
const MAX_NAME_FORMAT_REGEX: f64 = 128.0;
/// The longest named format (`cel.MaxFormatSize`).
const MAX_FORMAT_SIZE: u64 = 64;
/// The names cel-go gives comprehension accumulators (visible and hidden).
const ACCUMULATORS: [&str; 2] = ["__result__", "@result"];

/// A range of sizes (string length, list or map entries); `u64::MAX` stands for unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeRange {
    /// The smallest size.
    pub min: u64,
    /// The largest size.
    pub max: u64,
}

/// A range of cost units as cel-go estimates them; sums and products saturate at `u64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostRange {
    /// The cheapest evaluation.
    pub min: u64,
    /// The most expensive evaluation.
    pub max: u64,
}

/// Sizes of input values by path, as a cel-go `CostEstimator.EstimateSize` gives them. The
/// path starts with the name of the variable the value comes from, followed by field names
/// and `@items`, `@keys`, `@values` (or `@indices`) for the elements of lists and maps.
pub trait PathSizes {
    /// The size range of the value at `path` (which may be empty), when known.
    fn estimate_size(&self, path: &[String]) -> Option<SizeRange>;
}

/// How cel-go is configured for the estimate.
#[derive(Debug, Clone, Copy)]
pub struct CelGoCostConfig {
    /// Whether `has()` costs one unit (cel-go's default) or nothing (Kubernetes).
    pub presence_test_has_cost: bool,
}

impl Default for CelGoCostConfig {
    fn default() -> Self {
        CelGoCostConfig {
            presence_test_has_cost: true,
        }
    }
}

impl CelGoCostConfig {
    /// The configuration kube-apiserver uses for CRD validation rules.
    pub fn kubernetes() -> Self {
        CelGoCostConfig {
            presence_test_has_cost: false,
        }
    }
}

const UNKNOWN: SizeRange = SizeRange {
    min: 0,
    max: u64::MAX,
};

impl SizeRange {
    fn fixed(size: u64) -> Self {
        SizeRange {
            min: size,
            max: size,
        }
    }

    fn add(self, other: SizeRange) -> Self {
        SizeRange {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }

    fn multiply(self, other: SizeRange) -> Self {
        SizeRange {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    fn by_factor(self, factor: f64) -> CostRange {
        CostRange {
            min: by_factor(self.min, factor),
            max: by_factor(self.max, factor),
        }
    }

    fn by_cost(self, cost: CostRange) -> CostRange {
        CostRange {
            min: self.min.saturating_mul(cost.min),
            max: self.max.saturating_mul(cost.max),
        }
    }

    fn union(self, other: SizeRange) -> Self {
        SizeRange {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

impl CostRange {
    fn fixed(cost: u64) -> Self {
        CostRange {
            min: cost,
            max: cost,
        }
    }

    fn add(self, other: CostRange) -> Self {
        CostRange {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }

    fn multiply(self, other: CostRange) -> Self {
        CostRange {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    fn by_factor(self, factor: f64) -> CostRange {
        CostRange {
            min: by_factor(self.min, factor),
            max: by_factor(self.max, factor),
        }
    }

    fn union(self, other: CostRange) -> Self {
        CostRange {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

/// `x * factor` rounded up, in float64 arithmetic as cel-go does it, saturating.
fn by_factor(x: u64, factor: f64) -> u64 {
    const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
    let x = x as f64;
    if x > 0.0 && factor > 0.0 && x > TWO_TO_64 / factor {
        return u64::MAX;
    }
    let product = (x * factor).ceil();
    if product >= TWO_TO_64 {
        u64::MAX
    } else {
        product as u64
    }
}

/// The kind of a type, as cel-go's estimator distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Map,
    Struct,
    Param,
    Other,
}

fn kind_of(ty: Option<&Type>) -> Kind {
    match ty {
        Some(Type::List(_)) => Kind::List,
        Some(Type::Map(..)) => Kind::Map,
        Some(Type::Object(_)) => Kind::Struct,
        Some(Type::Param(_)) => Kind::Param,
        _ => Kind::Other,
    }
}

/// Types of a constant size (cel-go's `isScalar`).
fn is_scalar(ty: Option<&Type>) -> bool {
    match ty {
        Some(
            Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint,
        ) => true,
        Some(Type::Optional(inner)) => is_scalar(Some(inner)),
        _ => false,
    }
}

/// The sizes of the entries of a list or map built in the expression.
#[derive(Debug, Clone, Copy)]
struct EntrySize {
    container: Kind,
    key: SizeRange,
    value: SizeRange,
}

fn union_entries(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
    let (a, b) = (a?, b?);
    Some(EntrySize {
        container: a.container,
        key: a.key.union(b.key),
        value: a.value.union(b.value),
    })
}

#[derive(Debug, Clone)]
struct LocalVar {
    path: Vec<String>,
    size: Option<SizeRange>,
    entry: Option<EntrySize>,
}

/// What a function estimate sees of an argument (cel-go's `AstNode`).
#[derive(Debug, Clone)]
struct Node<'e> {
    expr: Option<&'e Expr>,
    path: Vec<String>,
    ty: Option<Type>,
    derived: Option<SizeRange>,
}

struct CallEstimate {
    cost: CostRange,
    result: Option<SizeRange>,
}

impl CallEstimate {
    fn cost(cost: CostRange) -> Self {
        CallEstimate { cost, result: None }
    }
}

/// Estimates the cost of `checked` as cel-go's `checker.Cost` does with Kubernetes' library
/// estimator, input sizes from `sizes`.
pub fn estimate_cel_go_cost(
    checked: &CheckedAst,
    sizes: &dyn PathSizes,
    config: CelGoCostConfig,
) -> CostRange {
    let mut coster = Coster {
        checked,
        sizes,
        presence: CostRange::fixed(u64::from(config.presence_test_has_cost)),
        paths: HashMap::new(),
        locals: HashMap::new(),
        computed: HashMap::new(),
        entries: HashMap::new(),
    };
    coster.cost(&checked.ast.expr)
}

struct Coster<'a> {
    checked: &'a CheckedAst,
    sizes: &'a dyn PathSizes,
    presence: CostRange,
    paths: HashMap<ExprId, Vec<String>>,
    locals: HashMap<String, Vec<LocalVar>>,
    computed: HashMap<ExprId, SizeRange>,
    entries: HashMap<ExprId, EntrySize>,
}

impl<'a> Coster<'a> {
    fn cost(&mut self, expr: &'a Expr) -> CostRange {
        crate::stack::guard(|| self.cost_unguarded(expr))
    }

    fn cost_unguarded(&mut self, expr: &'a Expr) -> CostRange {
        if let Some(Reference::Variable(name)) = self.checked.reference(expr.id) {
            // A qualified name the checker resolved to a variable is an identifier.
            let name = name.clone();
            return self.cost_ident(expr, &name);
        }
        match &expr.kind {
            ExprKind::Literal(_) => CostRange::fixed(0),
            ExprKind::Ident(name) => self.cost_ident(expr, name),
            ExprKind::Select(select) => {
                if select.test_only {
                    return self.presence.add(self.cost(&select.operand));
                }
                let mut sum = self.cost(&select.operand);
                if matches!(
                    kind_of(self.checked.type_of(select.operand.id)),
                    Kind::Map | Kind::Struct | Kind::Param
                ) {
                    sum = sum.add(CostRange::fixed(1));
                }
                let mut path = self.path_of(&select.operand);
                path.push(select.field.clone());
                self.paths.insert(expr.id, path);
                sum
            }
            ExprKind::Call(_) => self.cost_call(expr),
            ExprKind::List(list) => {
                let mut sum = CostRange::fixed(0);
                let mut item = if list.elements.is_empty() {
                    SizeRange::fixed(0)
                } else {
                    SizeRange {
                        min: u64::MAX,
                        max: 0,
                    }
                };
                for element in &list.elements {
                    sum = sum.add(self.cost(element));
                    item = item.union(self.size_or_unknown(element));
                }
                self.entries.insert(
                    expr.id,
                    EntrySize {
                        container: Kind::List,
                        key: SizeRange::fixed(1),
                        value: item,
                    },
                );
                sum.add(CostRange::fixed(LIST_CREATE))
            }
            ExprKind::Map(map) => {
                let mut sum = CostRange::fixed(0);
                let empty = if map.entries.is_empty() {
                    SizeRange::fixed(0)
                } else {
                    SizeRange {
                        min: u64::MAX,
                        max: 0,
                    }
                };
                let (mut key, mut value) = (empty, empty);
                for entry in &map.entries {
                    sum = sum.add(self.cost(&entry.key));
                    sum = sum.add(self.cost(&entry.value));
                    key = key.union(self.size_or_unknown(&entry.key));
                    value = value.union(self.size_or_unknown(&entry.value));
                }
                self.entries.insert(
                    expr.id,
                    EntrySize {
                        container: Kind::Map,
                        key,
                        value,
                    },
                );
                sum.add(CostRange::fixed(MAP_CREATE))
            }
            ExprKind::Struct(object) => {
                let mut sum = CostRange::fixed(0);
                for field in &object.fields {
                    sum = sum.add(self.cost(&field.value));
                }
                sum.add(CostRange::fixed(STRUCT_CREATE))
            }
            ExprKind::Comprehension(_) => self.cost_comprehension(expr),
        }
    }

    fn cost_ident(&mut self, expr: &Expr, name: &str) -> CostRange {
        let path = match self.local(name) {
            Some(local) => local.path.clone(),
            None => vec![name.to_owned()],
        };
        self.paths.insert(expr.id, path);
        CostRange::fixed(1)
    }

    fn local(&self, name: &str) -> Option<&LocalVar> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    fn push_local(&mut self, name: &str, local: LocalVar) {
        self.locals.entry(name.to_owned()).or_default().push(local);
    }

    fn pop_local(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    fn path_of(&self, expr: &Expr) -> Vec<String> {
        if let ExprKind::Ident(name) = &expr.kind
            && let Some(local) = self.local(name)
        {
            return local.path.clone();
        }
        self.paths.get(&expr.id).cloned().unwrap_or_default()
    }

    fn literal_size(expr: &Expr) -> Option<SizeRange> {
        let size = match &expr.kind {
            ExprKind::Literal(Literal::String(text)) => text.chars().count() as u64,
            ExprKind::Literal(Literal::Bytes(bytes)) => bytes.len() as u64,
            ExprKind::Literal(_) => 1,
            ExprKind::List(list) => list.elements.len() as u64,
            ExprKind::Map(map) => map.entries.len() as u64,
            _ => return None,
        };
        Some(SizeRange::fixed(size))
    }

    /// cel-go's `computeSize`.
    fn compute_size(&mut self, expr: &Expr) -> Option<SizeRange> {
        if let Some(size) = self.computed.get(&expr.id) {
            return Some(*size);
        }
        if let Some(size) = Self::literal_size(expr) {
            return Some(size);
        }
        let path = self.path_of(expr);
        if let Some(size) = self.sizes.estimate_size(&path) {
            self.computed.insert(expr.id, size);
            return Some(size);
        }
        if is_scalar(self.checked.type_of(expr.id)) {
            return Some(SizeRange::fixed(1));
        }
        if let ExprKind::Ident(name) = &expr.kind {
            return self.local(name).and_then(|local| local.size);
        }
        None
    }

    fn size_or_unknown(&mut self, expr: &Expr) -> SizeRange {
        self.compute_size(expr).unwrap_or(UNKNOWN)
    }

    fn entry_size(&self, expr: &Expr) -> Option<EntrySize> {
        if let Some(entry) = self.entries.get(&expr.id) {
            return Some(*entry);
        }
        if let ExprKind::Ident(name) = &expr.kind {
            return self.local(name).and_then(|local| local.entry);
        }
        None
    }

    fn node(&mut self, expr: &'a Expr) -> Node<'a> {
        let mut path = self.path_of(expr);
        if path
            .first()
            .is_some_and(|first| ACCUMULATORS.contains(&first.as_str()))
        {
            path.clear();
        }
        Node {
            expr: Some(expr),
            path,
            ty: self.checked.type_of(expr.id).cloned(),
            derived: self.compute_size(expr),
        }
    }

    /// A node's size as cel-go's own estimates take it: computed, or unknown.
    fn go_size(node: Option<&Node<'_>>) -> SizeRange {
        node.and_then(|node| node.derived).unwrap_or(UNKNOWN)
    }

    /// A node's size as the Kubernetes estimator takes it: computed, else by path.
    fn k8s_size(&self, node: Option<&Node<'_>>) -> SizeRange {
        match node {
            Some(node) => node
                .derived
                .or_else(|| self.sizes.estimate_size(&node.path))
                .unwrap_or(UNKNOWN),
            None => UNKNOWN,
        }
    }

    fn cost_comprehension(&mut self, expr: &'a Expr) -> CostRange {
        let ExprKind::Comprehension(comprehension) = &expr.kind else {
            return CostRange::fixed(0);
        };
        let is_bind = matches!(&comprehension.iter_range.kind, ExprKind::List(list) if list.elements.is_empty())
            && matches!(
                comprehension.loop_condition.kind,
                ExprKind::Literal(Literal::Bool(false))
            )
            && comprehension.accu_var != ACCUMULATORS[0];
        let mut sum = self.cost(&comprehension.iter_range);
        sum = sum.add(self.cost(&comprehension.accu_init));
        let accumulator = LocalVar {
            path: self.path_of(&comprehension.accu_init),
            size: self.compute_size(&comprehension.accu_init),
            entry: self.entry_size(&comprehension.accu_init),
        };
        self.push_local(&comprehension.accu_var, accumulator);
        if is_bind {
            sum = sum.add(self.cost(&comprehension.result));
            self.pop_local(&comprehension.accu_var);
            if let Some(size) = self.compute_size(&comprehension.result) {
                self.computed.insert(expr.id, size);
            }
            if let Some(entry) = self.entry_size(&comprehension.result) {
                self.entries.insert(expr.id, entry);
            }
            return sum;
        }
        let range = &comprehension.iter_range;
        let entry = self.entry_size(range);
        let container = match entry {
            Some(entry) if entry.container != Kind::Other => entry.container,
            _ => kind_of(self.checked.type_of(range.id)),
        };
        let range_path = self.path_of(range);
        let with_sub = |sub: &str| {
            let mut path = range_path.clone();
            path.push(sub.to_owned());
            path
        };
        match &comprehension.iter_var2 {
            Some(second) => {
                let (key_sub, value_sub) = if container == Kind::List {
                    ("@indices", "@items")
                } else {
                    ("@keys", "@values")
                };
                let key = LocalVar {
                    path: with_sub(key_sub),
                    size: entry.map(|entry| entry.key),
                    entry: None,
                };
                let value = LocalVar {
                    path: with_sub(value_sub),
                    size: entry.map(|entry| entry.value),
                    entry: None,
                };
                self.push_local(&comprehension.iter_var, key);
                self.push_local(second, value);
            }
            None => {
                let local = if container == Kind::List {
                    LocalVar {
                        path: with_sub("@items"),
                        size: entry.map(|entry| entry.value),
                        entry: None,
                    }
                } else {
                    LocalVar {
                        path: with_sub("@keys"),
                        size: entry.map(|entry| entry.key),
                        entry: None,
                    }
                };
                self.push_local(&comprehension.iter_var, local);
            }
        }
        let loop_cost = self.cost(&comprehension.loop_condition);
        let step_cost = self.cost(&comprehension.loop_step);
        self.pop_local(&comprehension.iter_var);
        if let Some(second) = &comprehension.iter_var2 {
            self.pop_local(second);
        }
        sum = sum.add(self.cost(&comprehension.result));
        self.pop_local(&comprehension.accu_var);
        let count = self.size_or_unknown(range);
        sum = sum.add(count.by_cost(step_cost.add(loop_cost)));
        match &comprehension.accu_init.kind {
            ExprKind::Literal(_) => {
                if let Some(size) = self.compute_size(&comprehension.accu_init) {
                    self.computed.insert(expr.id, size);
                }
            }
            ExprKind::List(_) | ExprKind::Map(_) => {
                self.computed.insert(expr.id, count);
                if let Some(entry) = self.entry_size(&comprehension.loop_step) {
                    self.entries.insert(expr.id, entry);
                }
            }
            _ => {}
        }
        sum
    }

    fn cost_call(&mut self, expr: &'a Expr) -> CostRange {
        let ExprKind::Call(call) = &expr.kind else {
            return CostRange::fixed(0);
        };
        let (function, overloads) = match self.checked.reference(expr.id) {
            Some(Reference::Function { name, overloads }) => (name.clone(), overloads.clone()),
            _ => (call.function.clone(), Vec::new()),
        };
        // `ns.f(x)` resolved to the global function `ns.f`: the namespace is no target.
        let target = call
            .target
            .as_deref()
            .filter(|_| function == call.function || self.checked.reference(expr.id).is_none());
        if function == "dyn"
            && let Some(arg) = call.args.first()
        {
            let cost = self.cost(arg);
            if let Some(size) = self.compute_size(arg) {
                self.computed.insert(expr.id, size);
            }
            if let Some(entry) = self.entry_size(arg) {
                self.entries.insert(expr.id, entry);
            }
            return CostRange::fixed(1).add(cost);
        }
        let mut arg_nodes = Vec::with_capacity(call.args.len());
        let mut arg_costs = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            arg_costs.push(self.cost(arg));
            arg_nodes.push(self.node(arg));
        }
        if overloads.is_empty() {
            return CostRange::fixed(0);
        }
        let mut sum = CostRange::fixed(0);
        let target_node = match target {
            Some(target) => {
                sum = sum.add(self.cost(target));
                Some(self.node(target))
            }
            None => None,
        };
        let mut function_cost = CostRange {
            min: u64::MAX,
            max: 0,
        };
        let mut result: Option<SizeRange> = None;
        for overload in &overloads {
            let estimate = self.function_cost(
                expr,
                &function,
                overload,
                target_node.as_ref(),
                &arg_nodes,
                &arg_costs,
            );
            function_cost = function_cost.union(estimate.cost);
            if let Some(size) = estimate.result {
                result = Some(result.map_or(size, |known| known.union(size)));
            }
            if matches!(overload.as_str(), "index_list" | "index_map")
                && let Some(container) = call.args.first()
            {
                result = self.entry_size(container).map(|entry| entry.value);
                let mut path = self.path_of(container);
                path.push(
                    if overload == "index_list" {
                        "@items"
                    } else {
                        "@values"
                    }
                    .to_owned(),
                );
                self.paths.insert(expr.id, path);
            }
            if result.is_none() {
                result = self.compute_size(expr);
            }
        }
        if let Some(size) = result {
            self.computed.insert(expr.id, size);
        }
        sum.add(function_cost)
    }

    fn function_cost(
        &mut self,
        expr: &Expr,
        function: &str,
        overload: &str,
        target: Option<&Node<'_>>,
        args: &[Node<'_>],
        arg_costs: &[CostRange],
    ) -> CallEstimate {
        let arg_sum = arg_costs
            .iter()
            .fold(CostRange::fixed(0), |sum, cost| sum.add(*cost));
        let sets_factor = match overload {
            "list_sets_contains_list" | "list_sets_intersects_list" => Some(1.0),
            "list_sets_equivalent_list" => Some(2.0),
            _ => None,
        };
        if let Some(factor) = sets_factor
            && let [left, right] = args
        {
            let cost = self
                .k8s_size(Some(left))
                .multiply(self.k8s_size(Some(right)))
                .by_factor(factor)
                .add(CostRange::fixed(1));
            return CallEstimate::cost(cost.add(arg_sum));
        }
        if let Some(estimate) = self.kubernetes_cost(function, overload, target, args) {
            return CallEstimate {
                cost: estimate.cost.add(arg_sum),
                result: estimate.result,
            };
        }
        if let Some(estimate) = self.standard_cost(expr, overload, target, args, arg_costs) {
            return estimate;
        }
        CallEstimate::cost(CostRange::fixed(1).add(arg_sum))
    }

    /// cel-go's own estimates of the standard functions whose cost depends on sizes.
    fn standard_cost(
        &mut self,
        expr: &Expr,
        overload: &str,
        target: Option<&Node<'_>>,
        args: &[Node<'_>],
        arg_costs: &[CostRange],
    ) -> Option<CallEstimate> {
        let arg_sum = arg_costs
            .iter()
            .fold(CostRange::fixed(0), |sum, cost| sum.add(*cost));
        let traversal = |size: SizeRange| size.by_factor(STRING_TRAVERSAL);
        let estimate = match (overload, args) {
            ("string_format", _) => {
                CallEstimate::cost(traversal(Self::go_size(target)).add(arg_sum))
            }
            ("string_to_bytes", [arg]) => {
                let size = Self::go_size(Some(arg));
                CallEstimate {
                    cost: traversal(size).add(arg_sum),
                    result: Some(SizeRange {
                        min: size.min,
                        max: size.max.wrapping_mul(4),
                    }),
                }
            }
            ("bytes_to_string", [arg]) => {
                let size = Self::go_size(Some(arg));
                CallEstimate {
                    cost: traversal(size).add(arg_sum),
                    result: Some(SizeRange {
                        min: size.min / 4,
                        max: size.max,
                    }),
                }
            }
            ("strings_quote", [arg]) => {
                let size = Self::go_size(Some(arg));
                CallEstimate {
                    cost: traversal(size).add(arg_sum),
                    result: Some(SizeRange {
                        min: size.min.wrapping_add(2),
                        max: size.max.wrapping_mul(2).wrapping_add(2),
                    }),
                }
            }
            ("starts_with_string" | "ends_with_string", [arg]) => {
                CallEstimate::cost(traversal(Self::go_size(Some(arg))).add(arg_sum))
            }
            ("in_list", [_, list]) => {
                CallEstimate::cost(Self::go_size(Some(list)).by_factor(1.0).add(arg_sum))
            }
            ("matches_string", [pattern]) if target.is_some() => {
                let text = traversal(Self::go_size(target).add(SizeRange::fixed(1)));
                let regex = Self::go_size(Some(pattern)).by_factor(REGEX_LENGTH);
                CallEstimate::cost(text.multiply(regex).add(arg_sum))
            }
            ("contains_string", [needle]) if target.is_some() => {
                let text = traversal(Self::go_size(target));
                let needle = traversal(Self::go_size(Some(needle)));
                CallEstimate::cost(text.multiply(needle).add(arg_sum))
            }
            ("logical_and" | "logical_or", _) => {
                let (left, right) = (
                    arg_costs.first().copied().unwrap_or(CostRange::fixed(0)),
                    arg_costs.get(1).copied().unwrap_or(CostRange::fixed(0)),
                );
                CallEstimate::cost(CostRange {
                    min: left.min,
                    max: left.add(right).max,
                })
            }
            ("conditional", [_, yes, no]) => {
                let size = Self::go_size(Some(yes)).union(Self::go_size(Some(no)));
                let entries = union_entries(
                    yes.expr.and_then(|e| self.entry_size(e)),
                    no.expr.and_then(|e| self.entry_size(e)),
                );
                if let Some(entries) = entries {
                    self.entries.insert(expr.id, entries);
                }
                let cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                CallEstimate {
                    cost,
                    result: Some(size),
                }
            }
            ("add_string" | "add_bytes" | "add_list", [left, right]) => {
                let size = Self::go_size(Some(left)).add(Self::go_size(Some(right)));
                let entries = union_entries(
                    left.expr.and_then(|e| self.entry_size(e)),
                    right.expr.and_then(|e| self.entry_size(e)),
                );
                if let Some(entries) = entries {
                    self.entries.insert(expr.id, entries);
                }
                let cost = if overload == "add_list" {
                    CostRange::fixed(1).add(arg_sum)
                } else {
                    traversal(size).add(arg_sum)
                };
                CallEstimate {
                    cost,
                    result: Some(size),
                }
            }
            (
                "less_string"
                | "greater_string"
                | "less_equals_string"
                | "greater_equals_string"
                | "less_bytes"
                | "greater_bytes"
                | "less_equals_bytes"
                | "greater_equals_bytes"
                | "equals"
                | "not_equals",
                [left, right],
            ) => {
                let smallest = Self::go_size(Some(left))
                    .max
                    .min(Self::go_size(Some(right)).max);
                let cost = CostRange {
                    min: u64::from(smallest > 0),
                    max: smallest,
                };
                CallEstimate::cost(traversal_cost(cost).add(arg_sum))
            }
            _ => return None,
        };
        Some(estimate)
    }

    /// The element of a list node, as Kubernetes' `listElementNode`.
    fn list_element(list: &Node<'_>) -> Option<Node<'static>> {
        let element = match list.ty.as_ref()? {
            Type::List(element) => (**element).clone(),
            Type::Map(key, _) => (**key).clone(),
            _ => return None,
        };
        let path = if list.path.is_empty() {
            Vec::new()
        } else {
            let mut path = list.path.clone();
            path.push("@items".to_owned());
            path
        };
        Some(Node {
            expr: None,
            path,
            ty: Some(element),
            derived: None,
        })
    }

    /// Kubernetes' `library.CostEstimator.EstimateCallCost`, keyed by function name.
    fn kubernetes_cost(
        &self,
        function: &str,
        overload: &str,
        target: Option<&Node<'_>>,
        args: &[Node<'_>],
    ) -> Option<CallEstimate> {
        let fixed = |cost: u64| Some(CallEstimate::cost(CostRange::fixed(cost)));
        let traversal = |size: SizeRange| size.by_factor(STRING_TRAVERSAL);
        let first = args.first();
        match function {
            "check" => fixed(350_000),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
            | "name" | "allowed" | "reason" | "error" | "errored" => fixed(1),
            "fieldSelector" | "labelSelector" if args.len() == 1 => {
                let length = self.k8s_size(first);
                let parse = traversal(length);
                let requirements = length
                    .by_factor(0.5)
                    .by_factor((LIST_CREATE + STRUCT_CREATE) as f64);
                Some(CallEstimate::cost(
                    CostRange::fixed(LIST_CREATE).add(parse).add(requirements),
                ))
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let target = target?;
                let list_size = self.k8s_size(Some(target));
                match Self::list_element(target) {
                    Some(element) => {
                        let mut per_element = CostRange::fixed(1);
                        if matches!(element.ty, Some(Type::String | Type::Bytes)) {
                            per_element = per_element.add(traversal(self.k8s_size(Some(&element))));
                        }
                        Some(CallEstimate::cost(list_size.by_cost(per_element)))
                    }
                    None => Some(CallEstimate::cost(traversal(list_size))),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let size = self.k8s_size(first);
                Some(CallEstimate {
                    cost: traversal(size),
                    result: Some(size),
                })
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let size = self.k8s_size(Some(target?));
                Some(CallEstimate {
                    cost: traversal(size),
                    result: Some(size),
                })
            }
            "replace" if args.len() >= 2 => {
                let size = self.k8s_size(Some(target?));
                Some(CallEstimate {
                    cost: size.by_factor(2.0 * STRING_TRAVERSAL),
                    result: Some(replace_size(
                        size,
                        self.k8s_size(args.first()),
                        self.k8s_size(args.get(1)),
                    )),
                })
            }
            "split" => {
                let size = self.k8s_size(Some(target?));
                let mut max = size.max;
                if let Some(limit) = args.get(1).and_then(|arg| arg.expr)
                    && let ExprKind::Literal(Literal::Int(limit)) = limit.kind
                {
                    max = limit as u64;
                }
                Some(CallEstimate {
                    cost: size.by_factor(2.0 * STRING_TRAVERSAL),
                    result: Some(SizeRange { min: 0, max }),
                })
            }
            "join" => {
                let target = target?;
                let list_size = self.k8s_size(Some(target));
                let mut size = match Self::list_element(target) {
                    Some(element) => list_size.multiply(self.k8s_size(Some(&element))),
                    None => SizeRange { min: 0, max: 0 },
                };
                if let Some(separator) = first {
                    let separators = SizeRange {
                        min: list_size.min.saturating_sub(1),
                        max: list_size.max.saturating_sub(1),
                    };
                    size = size.add(self.k8s_size(Some(separator)).multiply(separators));
                }
                Some(CallEstimate {
                    cost: traversal(size),
                    result: Some(size),
                })
            }
            "find" | "findAll" if !args.is_empty() => {
                let size = self.k8s_size(Some(target?));
                let text = traversal(size.add(SizeRange::fixed(1)));
                let regex = self.k8s_size(first).by_factor(REGEX_LENGTH);
                Some(CallEstimate {
                    cost: text.multiply(regex),
                    result: Some(SizeRange {
                        min: 0,
                        max: size.max,
                    }),
                })
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
                Some(CallEstimate::cost(traversal(self.k8s_size(Some(first?)))))
            }
            "ip" => {
                if overload == "cidr_ip" || first.is_none() {
                    fixed(1)
                } else {
                    Some(CallEstimate::cost(traversal(self.k8s_size(first))))
                }
            }
            "ip.isCanonical" => Some(CallEstimate::cost(
                self.k8s_size(Some(first?))
                    .by_factor(2.0 * STRING_TRAVERSAL),
            )),
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => fixed(1),
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let bytes = SizeRange { min: 4, max: 16 };
                let mut cost = traversal(bytes.add(bytes));
                if function == "containsCIDR" {
                    cost = cost.add(traversal(bytes)).add(CostRange::fixed(1));
                }
                if matches!(
                    overload,
                    "cidr_contains_ip_string" | "cidr_contains_cidr_string"
                ) {
                    cost = cost.add(traversal(self.k8s_size(first)));
                }
                Some(CallEstimate::cost(cost))
            }
            "validate" => Some(CallEstimate::cost(
                traversal(self.k8s_size(Some(first?)))
                    .by_factor(MAX_NAME_FORMAT_REGEX * REGEX_LENGTH),
            )),
            "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat"
            | "isGreaterThan" | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor"
            | "patch" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
            | "getQuery" => fixed(1),
            "_==_" => {
                let [left, right] = args else { return None };
                let ty = left.ty.as_ref()?;
                if Some(ty) != right.ty.as_ref() {
                    return None;
                }
                let name = match ty {
                    Type::Object(name) => name.as_ref(),
                    Type::Opaque(name, _) => name.as_ref(),
                    _ => return None,
                };
                match name {
                    "net.IP" | "net.CIDR" | "kubernetes.Quantity" | "kubernetes.Semver" => fixed(1),
                    "kubernetes.NamedFormat" => {
                        Some(CallEstimate::cost(traversal_cost(CostRange {
                            min: 1,
                            max: MAX_FORMAT_SIZE,
                        })))
                    }
                    "kubernetes.URL" => {
                        let max = right.derived.map_or(1, |size| size.max);
                        Some(CallEstimate::cost(traversal_cost(CostRange {
                            min: 1,
                            max,
                        })))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

fn traversal_cost(cost: CostRange) -> CostRange {
    cost.by_factor(STRING_TRAVERSAL)
}

/// The size of `s.replace(from, to)`, as Kubernetes estimates it.
fn replace_size(size: SizeRange, from: SizeRange, to: SizeRange) -> SizeRange {
    let mut count = SizeRange { min: 0, max: 0 };
    let mut retained = SizeRange { min: 0, max: 0 };
    if from.min == 0 {
        count.max = size.max.saturating_add(1);
        retained.max = size.max;
    } else if to.max <= from.min {
        retained.max = size.max;
    } else {
        count.max = (size.max as f64 / from.min as f64).ceil() as u64;
    }
    if from.max == 0 {
        count.min = size.min.saturating_add(1);
        retained.min = size.min;
    } else if from.max <= to.min {
        retained.min = size.min;
    } else {
        count.min = (size.min as f64 / from.max as f64).ceil() as u64;
    }
    count.multiply(to).add(retained)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Env;

    /// Sizes by full path, `None` elsewhere.
    struct Sizes(Vec<(&'static [&'static str], u64)>);

    impl PathSizes for Sizes {
        fn estimate_size(&self, path: &[String]) -> Option<SizeRange> {
            self.0
                .iter()
                .find(|(known, _)| known.iter().copied().eq(path.iter().map(String::as_str)))
                .map(|(_, max)| SizeRange { min: 0, max: *max })
        }
    }

    fn env(self_type: Type) -> Env {
        crate::ext::ALL_LIBRARIES
            .iter()
            .filter_map(|name| crate::ext::library(name))
            .fold(Env::standard(), Env::with_library)
            .with_variable("self", self_type)
    }

    fn max_cost(self_type: Type, text: &str, sizes: &Sizes) -> u64 {
        cost(self_type, text, sizes, CelGoCostConfig::kubernetes()).max
    }

    fn cost(self_type: Type, text: &str, sizes: &Sizes, config: CelGoCostConfig) -> CostRange {
        let env = env(self_type);
        let ast = env.parse(text).expect("parses");
        let checked = env.check(&ast).expect("checks");
        estimate_cel_go_cost(&checked, sizes, config)
    }

    fn strings() -> Type {
        Type::list(Type::String)
    }

    #[test]
    fn constant_arithmetic_costs_one_per_call() {
        let sizes = Sizes(Vec::new());
        assert_eq!(max_cost(Type::Int, "1 + 2 == 3", &sizes), 2);
        // `self` (1), `size()` (1), `>` (1).
        assert_eq!(max_cost(strings(), "self.size() > 3", &sizes), 3);
    }

    #[test]
    fn a_regex_over_each_element_costs_string_length_times_pattern_length() {
        let sizes = Sizes(vec![(&["self"], 5), (&["self", "@items"], 10)]);
        // Per element: the loop condition (2), `@result &&` (1), `x` (1), and the match
        // ceil((10 + 1) * 0.1) * ceil(8 * 0.25) = 2 * 2; plus `self` and the result (2).
        assert_eq!(
            max_cost(strings(), "self.all(x, x.matches('^[a-z]+$'))", &sizes),
            2 + 5 * (2 + 1 + 1 + 4)
        );
    }

    #[test]
    fn an_unsized_list_makes_the_cost_saturate() {
        let sizes = Sizes(Vec::new());
        assert_eq!(
            max_cost(strings(), "self.all(x, x.matches('a'))", &sizes),
            u64::MAX
        );
    }

    #[test]
    fn presence_tests_cost_what_the_configuration_says() {
        let map = Type::map(Type::String, Type::Int);
        let sizes = Sizes(Vec::new());
        let free = cost(
            map.clone(),
            "has(self.a)",
            &sizes,
            CelGoCostConfig::kubernetes(),
        );
        let charged = cost(map, "has(self.a)", &sizes, CelGoCostConfig::default());
        assert_eq!((free.max, charged.max), (1, 2));
    }

    #[test]
    fn string_comparisons_cost_a_tenth_of_the_shorter_side() {
        let map = Type::map(Type::String, Type::String);
        let sizes = Sizes(vec![(&["self", "name"], 100)]);
        // `self.name` (2), the literal (0), ceil(min(100, 3) * 0.1) = 1.
        assert_eq!(max_cost(map.clone(), "self.name == 'abc'", &sizes), 3);
        // Against another long string: ceil(100 * 0.1) = 10.
        let sizes = Sizes(vec![(&["self", "name"], 100), (&["self", "other"], 200)]);
        assert_eq!(max_cost(map, "self.name < self.other", &sizes), 2 + 2 + 10);
    }

    #[test]
    fn literal_lists_give_their_sizes_to_comprehensions() {
        let sizes = Sizes(Vec::new());
        // `[...]` 10; per element: condition 3, `@result ||` 1, `x == 'a'` 1 + 1; result 1.
        assert_eq!(
            max_cost(Type::Int, "['a', 'b'].exists(x, x == 'a')", &sizes),
            10 + 1 + 2 * (3 + 1 + 2)
        );
    }

    #[test]
    fn kubernetes_library_functions_use_their_estimates() {
        let sizes = Sizes(vec![(&["self"], 40)]);
        // `self` (1) + ceil(40 * 0.1) for lowerAscii, `==` with the literal: ceil(1 * 0.1).
        assert_eq!(
            max_cost(Type::String, "self.lowerAscii() == 'a'", &sizes),
            1 + 4 + 1
        );
        let sizes = Sizes(vec![(&["self"], 20), (&["self", "@items"], 8)]);
        // isSorted: 20 elements, each 1 + ceil(8 * 0.1).
        assert_eq!(max_cost(strings(), "self.isSorted()", &sizes), 1 + 20 * 2);
    }

    #[test]
    fn set_functions_cost_the_product_of_the_sizes() {
        let sizes = Sizes(vec![(&["self"], 30)]);
        // 30 * 3 + 1, plus `self` (1) and the literal list (10).
        assert_eq!(
            max_cost(strings(), "sets.contains(self, ['a', 'b', 'c'])", &sizes),
            91 + 1 + 10
        );
    }

    #[test]
    fn a_binding_gives_its_value_size_to_its_variable() {
        let sizes = Sizes(vec![(&["self"], 4)]);
        let bound = max_cost(strings(), "cel.bind(v, self, v.all(x, x == 'a'))", &sizes);
        // The empty loop (10) and the value (1); then `v` (1), the result (1), and per
        // element of `self` (4 of them, the bound path): the condition (2) and
        // `@result && x == 'a'` (3: `x` is `self.@items`, compared with one character).
        assert_eq!(bound, 10 + 1 + 1 + 1 + 4 * (2 + 3));
    }

    #[test]
    fn deep_expressions_are_estimated_without_overflowing_the_stack() {
        // The parser bounds the depth; the estimator takes whatever it accepts.
        let text = vec!["1"; 200].join(" + ");
        let sizes = Sizes(Vec::new());
        assert_eq!(max_cost(Type::Int, &text, &sizes), 199);
    }

    #[test]
    fn factors_round_up_and_saturate() {
        assert_eq!(by_factor(11, 0.1), 2);
        assert_eq!(by_factor(u64::MAX, 1.0), u64::MAX);
        assert_eq!(by_factor(u64::MAX, 0.1), 1_844_674_407_370_955_264);
        assert_eq!(by_factor(0, 0.25), 0);
    }
}
