//! Controlled rollout of an RGD's changes (gate `PropagationControl`): which instances may move
//! to the graph's newest revision, and when.
//!
//! Instances always converge to the newest revision (no pinning, as upstream's last design,
//! #1259); the policy only decides *when* each one is reconciled against it. The policy is:
//!
//! - `spec.propagateWhen`: CEL conditions (written `${…}`, or bare as KREP-006 writes them),
//!   all of which must hold for an instance to move. The variables are the generated kind's
//!   singular name (the instance asking) and plural name (every instance, in propagation
//!   order). Instances have the methods `ready()` and `updated()`; the functions
//!   `linearlyReady(item, collection, n)` and `exponentiallyReady(item, collection)` make
//!   waves of `n` instances, or of 1, 2, 4, … instances, each waiting for the ones before it;
//! - the annotation `kro.run/propagation-rate: "<count>/<s|m|h>"` (#1267): instances move at
//!   most that often, evenly spaced;
//! - the annotation `kro.run/progress-deadline` (a Go duration, default `10m`): an instance
//!   that is not Ready on the new revision that long after it moved halts the rollout.
//!
//! **Order** (#1259): instances already on the revision first (they moved earlier), then the
//! others: Ready first, oldest first, then by namespace and name. The waves of
//! `linearlyReady` and `exponentiallyReady` are cut in this order.
//!
//! **`updated()`** is true for an instance that moved to the newest revision; **`ready()`**
//! is whether it is Ready on the revision it is on (for one that moved, Ready on the new
//! revision: until it has been reconciled against it, it is not).

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use kro_cel::{Budget, Env, EvalError, Function, Overload, Program, Type, Value};
use serde_json::Value as Json;

/// The annotation that limits how often instances move: `<count>/<s|m|h>`.
pub const PROPAGATION_RATE_ANNOTATION: &str = "kro.run/propagation-rate";
/// The annotation that says how long an instance may take to become Ready on a new revision
/// before the rollout halts (a Go duration).
pub const PROGRESS_DEADLINE_ANNOTATION: &str = "kro.run/progress-deadline";
/// The progress deadline when the annotation is not set.
pub const DEFAULT_PROGRESS_DEADLINE: Duration = Duration::from_secs(600);
/// The instance condition that says which revision an instance was last reconciled against,
/// and whether it is Ready on it.
pub const REVISION_RECONCILED: &str = "RevisionReconciled";
/// The RGD condition that says how far the newest revision has reached.
pub const PROPAGATED: &str = "Propagated";

/// The reason of [`REVISION_RECONCILED`] for revision `number`: `Revision<N>`.
pub fn revision_reason(number: i64) -> String {
    format!("Revision{number}")
}

/// The revision a [`REVISION_RECONCILED`] reason names.
pub fn revision_of_reason(reason: &str) -> Option<i64> {
    reason.strip_prefix("Revision")?.parse().ok()
}

/// Why a propagation policy was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A `propagateWhen` expression that does not compile or is not a bool.
    #[error("{list}[{index}] {expression:?}: {reason}")]
    Expression {
        /// The list it is in: `spec.propagateWhen`, `spec.resources[i].propagateWhen`.
        list: String,
        /// Its index in the list.
        index: usize,
        /// The expression as written.
        expression: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `propagateWhen` on a resource rather than on the RGD.
    #[error(
        "spec.resources[{index}].propagateWhen: only a collection's items (forEach) can be \
         gated yet; gating a single resource's mutation on other resources is not supported"
    )]
    OnResource {
        /// The resource's index.
        index: usize,
    },
    /// An annotation whose value cannot be read.
    #[error("annotation {annotation}: {value:?} {reason}")]
    Annotation {
        /// The annotation.
        annotation: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// `kro.run/propagation-rate`: at most `count` instances per `period`, evenly spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PropagationRate {
    /// Instances per period.
    pub count: u32,
    /// The period: a second, a minute or an hour.
    pub period: Duration,
}

impl PropagationRate {
    /// The time between two instances moving.
    pub fn interval(self) -> Duration {
        self.period / self.count.max(1)
    }

    /// Reads `<count>/<s|m|h>`.
    ///
    /// # Errors
    /// A message saying what is wrong, for [`PolicyError::Annotation`].
    pub fn parse(text: &str) -> Result<PropagationRate, String> {
        let (count, unit) = text
            .trim()
            .split_once('/')
            .ok_or("is not <count>/<s|m|h> (10/m, say)")?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| format!("count {count:?} is not a whole number"))?;
        if count == 0 {
            return Err("count must be at least 1".to_owned());
        }
        let period = match unit.trim() {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            other => return Err(format!("unit {other:?} is not s, m or h")),
        };
        Ok(PropagationRate { count, period })
    }
}

/// One instance as the policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// `namespace/name` (or `name` for a cluster-scoped kind).
    pub id: String,
    /// The instance as stored.
    pub object: Json,
    /// Whether it moved to the newest revision.
    pub updated: bool,
    /// Whether it is Ready on the revision it is on.
    pub ready: bool,
}

impl Candidate {
    /// The instance's `metadata.creationTimestamp` (RFC 3339 sorts as text).
    fn created(&self) -> &str {
        self.object
            .pointer("/metadata/creationTimestamp")
            .and_then(Json::as_str)
            .unwrap_or_default()
    }
}

/// Sorts instances in propagation order (see the module doc).
pub fn propagation_order(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| {
        (!a.updated, !a.ready, a.created(), &a.id).cmp(&(!b.updated, !b.ready, b.created(), &b.id))
    });
}

/// What the functions know of each instance during one evaluation.
#[derive(Debug, Default)]
struct View {
    /// `(ready, updated)` by id.
    states: std::collections::HashMap<String, (bool, bool)>,
}

/// Candidates' objects as CEL values (see [`PropagationPolicy::prepare`]).
#[derive(Debug, Default)]
pub struct Prepared {
    values: std::collections::HashMap<String, Value>,
}

/// A compiled `propagateWhen` expression.
#[derive(Debug, Clone)]
pub struct PolicyExpression {
    /// As written.
    pub text: String,
    program: Program,
}

/// An RGD's propagation policy, compiled.
#[derive(Debug, Clone)]
pub struct PropagationPolicy {
    /// `spec.propagateWhen`.
    pub when: Vec<PolicyExpression>,
    /// `kro.run/propagation-rate`.
    pub rate: Option<PropagationRate>,
    /// `kro.run/progress-deadline`.
    pub progress_deadline: Duration,
    /// The variables bound to the object asking to move.
    items: Vec<String>,
    /// The variable bound to the collection.
    collection: String,
    view: Arc<RwLock<View>>,
    /// One evaluation at a time: the view is the evaluation's.
    evaluating: Arc<Mutex<()>>,
}

impl PartialEq for PropagationPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.rate == other.rate
            && self.progress_deadline == other.progress_deadline
            && self.items == other.items
            && self.collection == other.collection
            && self.when.len() == other.when.len()
            && self
                .when
                .iter()
                .zip(&other.when)
                .all(|(a, b)| a.text == b.text)
    }
}

impl PropagationPolicy {
    /// The policy of an RGD with these `propagateWhen` expressions and annotations, for a kind
    /// named `singular`/`plural`; `None` when it sets none of them (every instance moves at
    /// once, as without the gate).
    ///
    /// # Errors
    /// Every expression and annotation that cannot be read.
    pub fn compile(
        propagate_when: &[String],
        annotations: &std::collections::BTreeMap<String, String>,
        singular: &str,
        plural: &str,
        cost_limit: Option<u64>,
    ) -> Result<Option<PropagationPolicy>, Vec<PolicyError>> {
        let mut errors = Vec::new();
        let rate = annotations
            .get(PROPAGATION_RATE_ANNOTATION)
            .and_then(|value| match PropagationRate::parse(value) {
                Ok(rate) => Some(rate),
                Err(reason) => {
                    errors.push(PolicyError::Annotation {
                        annotation: PROPAGATION_RATE_ANNOTATION,
                        value: value.clone(),
                        reason,
                    });
                    None
                }
            });
        let deadline = annotations.get(PROGRESS_DEADLINE_ANNOTATION);
        let progress_deadline = match deadline.map(|value| parse_deadline(value)) {
            None => DEFAULT_PROGRESS_DEADLINE,
            Some(Ok(deadline)) => deadline,
            Some(Err(reason)) => {
                errors.push(PolicyError::Annotation {
                    annotation: PROGRESS_DEADLINE_ANNOTATION,
                    value: deadline.cloned().unwrap_or_default(),
                    reason,
                });
                DEFAULT_PROGRESS_DEADLINE
            }
        };
        let compiled = PropagationPolicy::expressions(
            "spec.propagateWhen",
            propagate_when,
            &[singular.to_owned()],
            plural,
            cost_limit,
        );
        let mut policy = match compiled {
            Ok(policy) if errors.is_empty() => policy,
            Ok(_) => return Err(errors),
            Err(more) => {
                errors.extend(more);
                return Err(errors);
            }
        };
        if policy.when.is_empty() && rate.is_none() {
            return Ok(None);
        }
        policy.rate = rate;
        policy.progress_deadline = progress_deadline;
        Ok(Some(policy))
    }

    /// The `propagateWhen` of the collection resource at `index` (KREP-006), whose items move
    /// in collection order: `each` and the iterator names `items` are bound to the item's
    /// object, the resource's `id` to the collection's objects.
    ///
    /// # Errors
    /// Every expression that does not compile or is not a bool.
    pub fn for_collection(
        index: usize,
        propagate_when: &[String],
        id: &str,
        items: &[String],
        cost_limit: Option<u64>,
    ) -> Result<PropagationPolicy, Vec<PolicyError>> {
        let mut names = vec!["each".to_owned()];
        names.extend(items.iter().filter(|name| *name != "each").cloned());
        PropagationPolicy::expressions(
            &format!("spec.resources[{index}].propagateWhen"),
            propagate_when,
            &names,
            id,
            cost_limit,
        )
    }

    /// Compiles `propagate_when` (the list at `list`) with `items` bound to the object asking
    /// to move and `collection` to all of them.
    fn expressions(
        list: &str,
        propagate_when: &[String],
        items: &[String],
        collection: &str,
        cost_limit: Option<u64>,
    ) -> Result<PropagationPolicy, Vec<PolicyError>> {
        let mut errors = Vec::new();
        let view = Arc::new(RwLock::new(View::default()));
        let env = policy_env(items, collection, &view).with_cost_limit(cost_limit);
        let mut when = Vec::new();
        for (index, written) in propagate_when.iter().enumerate() {
            let text = unwrap_expression(written);
            let fail = |reason: String| PolicyError::Expression {
                list: list.to_owned(),
                index,
                expression: written.clone(),
                reason,
            };
            match env.compile(text) {
                Ok(program) => match program.output_type() {
                    Some(Type::Bool | Type::Dyn) | None => when.push(PolicyExpression {
                        text: written.clone(),
                        program,
                    }),
                    Some(other) => errors.push(fail(format!("must be a bool, found {other}"))),
                },
                Err(error) => errors.push(fail(error.to_string())),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(PropagationPolicy {
            when,
            rate: None,
            progress_deadline: DEFAULT_PROGRESS_DEADLINE,
            items: items.to_vec(),
            collection: collection.to_owned(),
            view,
            evaluating: Arc::new(Mutex::new(())),
        })
    }

    /// The candidates' objects as CEL values, converted once for every [`may_move`]
    /// (Self::may_move) over them (their order and states may change in between).
    ///
    /// # Errors
    /// An object that cannot be converted (too deep), naming it.
    pub fn prepare(&self, candidates: &[Candidate]) -> Result<Prepared, String> {
        let mut values = std::collections::HashMap::with_capacity(candidates.len());
        if !self.when.is_empty() {
            for candidate in candidates {
                let value = kro_cel::from_json(&candidate.object, None, None)
                    .map_err(|error| format!("{}: {error}", candidate.id))?;
                values.insert(candidate.id.clone(), value);
            }
        }
        Ok(Prepared { values })
    }

    /// Whether every `propagateWhen` expression holds for `candidates[index]`, with
    /// `candidates` (in [`propagation_order`] for instances, collection order for a
    /// resource's items) as the collection; `prepared` from [`prepare`](Self::prepare).
    ///
    /// # Errors
    /// The first expression that fails to evaluate, or is not a bool, with its text.
    pub fn may_move(
        &self,
        prepared: &Prepared,
        candidates: &[Candidate],
        index: usize,
    ) -> Result<bool, String> {
        if self.when.is_empty() {
            return Ok(true);
        }
        let Some(item) = candidates.get(index) else {
            return Ok(false);
        };
        let _one = self
            .evaluating
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        {
            let mut view = self.view.write().unwrap_or_else(PoisonError::into_inner);
            view.states = candidates
                .iter()
                .map(|candidate| (candidate.id.clone(), (candidate.ready, candidate.updated)))
                .collect();
        }
        let value = |candidate: &Candidate| {
            prepared
                .values
                .get(&candidate.id)
                .cloned()
                .ok_or_else(|| format!("{} was not prepared", candidate.id))
        };
        let all = candidates
            .iter()
            .map(value)
            .collect::<Result<Vec<_>, _>>()?;
        let item = value(item)?;
        let mut activation: std::collections::BTreeMap<String, Value> = self
            .items
            .iter()
            .map(|name| (name.clone(), item.clone()))
            .collect();
        activation.insert(self.collection.clone(), Value::list(all));
        for expression in &self.when {
            match expression.program.evaluate(&activation) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(false),
                Ok(other) => {
                    return Err(format!(
                        "propagateWhen {:?} returned {}, not a bool",
                        expression.text,
                        other.type_name()
                    ));
                }
                Err(error) => {
                    return Err(format!("propagateWhen {:?}: {error}", expression.text));
                }
            }
        }
        Ok(true)
    }
}

/// `${expr}` written whole is `expr`; anything else is taken as bare CEL.
fn unwrap_expression(written: &str) -> &str {
    let trimmed = written.trim();
    match trimmed
        .strip_prefix("${")
        .and_then(|inner| inner.strip_suffix('}'))
    {
        Some(inner) if !inner.contains("${") => inner,
        _ => trimmed,
    }
}

fn parse_deadline(value: &str) -> Result<Duration, String> {
    let parsed = kro_cel::Duration::parse(value.trim())
        .map_err(|error| format!("is not a duration (10m, 1h30m): {error}"))?;
    let nanos = parsed.total_nanos();
    if nanos <= 0 {
        return Err("must be positive".to_owned());
    }
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| "is too long".to_owned())
}

/// The id [`Candidate::id`] has for `object`: `namespace/name`, or `name` without a namespace.
pub fn candidate_id(object: &Json) -> String {
    let name = object
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default();
    match object
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .filter(|namespace| !namespace.is_empty())
    {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// The id of an instance value: `namespace/name`, or `name`.
fn id_of(value: &Value) -> Option<String> {
    let Value::Map(object) = value else {
        return None;
    };
    let Some(Value::Map(metadata)) = object.get_str("metadata") else {
        return None;
    };
    let name = match metadata.get_str("name") {
        Some(Value::String(name)) => name.to_string(),
        _ => return None,
    };
    Some(match metadata.get_str("namespace") {
        Some(Value::String(namespace)) if !namespace.is_empty() => format!("{namespace}/{name}"),
        _ => name,
    })
}

/// The environment of `propagateWhen`: the two variables and the rollout functions, which read
/// the instances' states from `view`.
fn policy_env(items: &[String], collection: &str, view: &Arc<RwLock<View>>) -> Env {
    let state = {
        let view = Arc::clone(view);
        move |value: &Value, function: &str| -> Result<(bool, bool), EvalError> {
            let id = id_of(value).ok_or_else(|| {
                EvalError::invalid_argument(function, "not an instance (no metadata.name)")
            })?;
            view.read()
                .unwrap_or_else(PoisonError::into_inner)
                .states
                .get(&id)
                .copied()
                .ok_or_else(|| {
                    EvalError::invalid_argument(
                        function,
                        format!("{id} is no instance of this kind"),
                    )
                })
        }
    };
    let ready = {
        let state = state.clone();
        move |args: &[Value], _: &mut Budget| Ok(Value::Bool(state(&args[0], "ready")?.0))
    };
    let updated = {
        let state = state.clone();
        move |args: &[Value], _: &mut Budget| Ok(Value::Bool(state(&args[0], "updated")?.1))
    };
    let waves = |name: &'static str, wave_start: fn(usize, i64) -> usize| {
        let state = state.clone();
        move |args: &[Value], budget: &mut Budget| {
            let Value::List(collection) = &args[1] else {
                return Err(EvalError::invalid_argument(
                    name,
                    "the collection is not a list",
                ));
            };
            let size = match args.get(2) {
                Some(Value::Int(size)) if *size >= 1 => *size,
                Some(_) => {
                    return Err(EvalError::invalid_argument(
                        name,
                        "the wave size must be at least 1",
                    ));
                }
                None => 0,
            };
            let item = id_of(&args[0]).ok_or_else(|| {
                EvalError::invalid_argument(name, "the item is not an instance (no metadata.name)")
            })?;
            budget.charge(collection.len() as u64)?;
            let position = collection
                .iter()
                .position(|element| id_of(element).as_deref() == Some(item.as_str()))
                .ok_or_else(|| {
                    EvalError::invalid_argument(name, format!("{item} is not in the collection"))
                })?;
            let before = wave_start(position, size);
            for element in &collection[..before] {
                let (ready, updated) = state(element, name)?;
                if !(ready && updated) {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }
    };
    let linear = waves("linearlyReady", |position, size| {
        let size = usize::try_from(size).unwrap_or(usize::MAX).max(1);
        position / size * size
    });
    let exponential = waves("exponentiallyReady", |position, _| {
        // Waves of 1, 2, 4, …: wave k starts at 2^k - 1.
        let wave = usize::BITS - 1 - (position + 1).leading_zeros();
        (1usize << wave) - 1
    });
    let list = Type::list(Type::Dyn);
    let mut env = Env::kro();
    for name in items {
        env = env.with_variable(name, Type::Dyn);
    }
    env.with_variable(collection, list.clone())
        .with_function(Function::new("ready").overload(
            Overload::member("instance_ready", &[Type::Dyn], Type::Bool).with_impl(ready),
        ))
        .with_function(Function::new("updated").overload(
            Overload::member("instance_updated", &[Type::Dyn], Type::Bool).with_impl(updated),
        ))
        .with_function(
            Function::new("linearlyReady").overload(
                Overload::global(
                    "linearly_ready",
                    &[Type::Dyn, list.clone(), Type::Int],
                    Type::Bool,
                )
                .with_impl(linear),
            ),
        )
        .with_function(
            Function::new("exponentiallyReady").overload(
                Overload::global("exponentially_ready", &[Type::Dyn, list], Type::Bool)
                    .with_impl(exponential),
            ),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn policy(when: &[&str]) -> PropagationPolicy {
        let when: Vec<String> = when.iter().map(|text| (*text).to_owned()).collect();
        PropagationPolicy::compile(&when, &BTreeMap::new(), "app", "apps", None)
            .expect("compiles")
            .expect("a policy")
    }

    fn instance(name: &str, created: &str, updated: bool, ready: bool) -> Candidate {
        Candidate {
            id: format!("default/{name}"),
            object: json!({"metadata": {"name": name, "namespace": "default",
                "creationTimestamp": created}, "spec": {"tier": "web"}}),
            updated,
            ready,
        }
    }

    /// Moves instances one at a time as a controller would: every instance the policy lets
    /// through, in order, each move seen by the next evaluation.
    fn moved(policy: &PropagationPolicy, candidates: &mut [Candidate]) -> Vec<String> {
        let mut moved = Vec::new();
        loop {
            propagation_order(candidates);
            let prepared = policy.prepare(candidates).expect("converts");
            let next = (0..candidates.len()).find(|&index| {
                !candidates[index].updated
                    && policy
                        .may_move(&prepared, candidates, index)
                        .expect("evaluates")
            });
            let Some(index) = next else { return moved };
            candidates[index].updated = true;
            candidates[index].ready = false;
            moved.push(candidates[index].id.clone());
        }
    }

    #[test]
    fn linear_waves_move_n_instances_and_wait_for_them() {
        let policy = policy(&["${linearlyReady(app, apps, 2)}"]);
        let mut candidates: Vec<Candidate> = (0..5)
            .map(|index| {
                instance(
                    &format!("i{index}"),
                    &format!("2026-01-0{}T00:00:00Z", 5 - index),
                    false,
                    true,
                )
            })
            .collect();
        // Oldest first: i4 was created first.
        assert_eq!(
            moved(&policy, &mut candidates),
            ["default/i4", "default/i3"]
        );
        // The first wave becomes Ready: the next two move.
        for candidate in &mut candidates {
            if candidate.updated {
                candidate.ready = true;
            }
        }
        assert_eq!(
            moved(&policy, &mut candidates),
            ["default/i2", "default/i1"]
        );
        assert_eq!(moved(&policy, &mut candidates), Vec::<String>::new());
    }

    #[test]
    fn exponential_waves_double() {
        let policy = policy(&["exponentiallyReady(app, apps)"]);
        let mut candidates: Vec<Candidate> = (0..8)
            .map(|index| instance(&format!("i{index}"), "2026-01-01T00:00:00Z", false, true))
            .collect();
        let mut waves = Vec::new();
        loop {
            let wave = moved(&policy, &mut candidates);
            if wave.is_empty() {
                break;
            }
            waves.push(wave.len());
            for candidate in &mut candidates {
                candidate.ready = true;
            }
        }
        assert_eq!(waves, [1, 2, 4, 1]);
    }

    #[test]
    fn ready_instances_go_first_and_budgets_can_be_written_in_cel() {
        let policy = policy(&["${apps.filter(a, a.updated() && !a.ready()).size() < 1}"]);
        let mut candidates = vec![
            instance("broken", "2026-01-01T00:00:00Z", false, false),
            instance("healthy", "2026-01-02T00:00:00Z", false, true),
        ];
        assert_eq!(moved(&policy, &mut candidates), ["default/healthy"]);
    }

    #[test]
    fn bad_policies_are_refused_saying_where() {
        let annotations = BTreeMap::from([
            (PROPAGATION_RATE_ANNOTATION.to_owned(), "10/d".to_owned()),
            (PROGRESS_DEADLINE_ANNOTATION.to_owned(), "soon".to_owned()),
        ]);
        let errors = PropagationPolicy::compile(
            &["${apps.size()}".to_owned(), "${nope(app)}".to_owned()],
            &annotations,
            "app",
            "apps",
            None,
        )
        .expect_err("refused");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 4, "{text:?}");
        assert!(
            text[0].starts_with("annotation kro.run/propagation-rate: \"10/d\" unit"),
            "{text:?}"
        );
        assert!(
            text[1].starts_with("annotation kro.run/progress-deadline: \"soon\""),
            "{text:?}"
        );
        assert!(
            text[2].contains("spec.propagateWhen[0]")
                && text[2].contains("must be a bool, found int"),
            "{text:?}"
        );
        assert!(text[3].contains("spec.propagateWhen[1]"), "{text:?}");
    }

    #[test]
    fn rates_and_deadlines_read_as_documented() {
        let rate = PropagationRate::parse("10/m").expect("valid");
        assert_eq!(rate.interval(), Duration::from_secs(6));
        assert!(PropagationRate::parse("0/s").is_err());
        assert!(PropagationRate::parse("ten/s").is_err());
        assert_eq!(parse_deadline("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_deadline("-1s").is_err());
        assert_eq!(
            PropagationPolicy::compile(&[], &BTreeMap::new(), "app", "apps", None),
            Ok(None)
        );
    }

    #[test]
    fn revision_reasons_round_trip() {
        assert_eq!(revision_reason(5), "Revision5");
        assert_eq!(revision_of_reason("Revision5"), Some(5));
        assert_eq!(revision_of_reason("Ready"), None);
    }
}
