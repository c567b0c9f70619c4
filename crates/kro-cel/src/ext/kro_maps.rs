//! kro's maps library (upstream `pkg/cel/library/maps.go`): merging maps. The argument's
//! entries win; neither input is changed.
//!
//! - `map(K, V).merge(map(K, V)) -> map(K, V)`: a shallow merge. Both maps must have the same
//!   key and value types, so `{'a': 1}.merge({'a': 'x'})` does not type-check.
//! - `dyn.deepMerge(dyn) -> dyn`: a recursive merge. Where both sides have a map under a key,
//!   the two maps are merged; otherwise (scalars, lists, a map against a non-map) the
//!   argument's value replaces the receiver's. Lists are replaced, never concatenated or
//!   merged element by element. Accepts values of any static type (such as Kubernetes
//!   objects), and fails at run time with "no such overload" unless both are maps.
//!
//! The result lists the receiver's keys first, in its order, then the argument's new keys.
//! (Upstream's maps are unordered; only iteration order can tell.)
//!
//! Costs: each map a merge creates is charged [`MAP_CREATE_COST`] and two units per entry
//! copied, at every level: copying a map rehashes every
//! entry, and maps that hold one map many times merge into a new map for each.

use crate::cost::{Budget, MAP_CREATE_COST};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::{Map, Value};

/// The kro.maps library.
pub(crate) fn library() -> Library {
    let map_type = Type::map(Type::param("K"), Type::param("V"));
    Library::new(
        "kro.maps",
        vec![
            Function::new("merge").overload(
                Overload::member("map_merge", &[map_type.clone(), map_type.clone()], map_type)
                    .with_impl(|args, budget| match args {
                        [Value::Map(receiver), Value::Map(argument)] => {
                            budget.charge(copy_cost(receiver, argument))?;
                            Ok(Value::Map(merge(receiver, argument)))
                        }
                        _ => Err(no_such_overload("merge", args)),
                    }),
            ),
            Function::new("deepMerge").overload(
                Overload::member("dyn_deepmerge_dyn", &[Type::Dyn, Type::Dyn], Type::Dyn)
                    .with_impl(|args, budget| match args {
                        [Value::Map(receiver), Value::Map(argument)] => {
                            deep_merge(receiver, argument, budget).map(Value::Map)
                        }
                        _ => Err(no_such_overload("deepMerge", args)),
                    }),
            ),
        ],
    )
}

fn no_such_overload(name: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(name, &args.iter().collect::<Vec<_>>())
}

/// What merging two maps costs: a new map holding both's entries, each copied and rehashed:
/// [`MAP_CREATE_COST`] and two units per entry. Merging maps that
/// hold the same map many times, nested, creates a map for each.
fn copy_cost(receiver: &Map, argument: &Map) -> u64 {
    if argument.is_empty() || receiver.is_empty() {
        return 1;
    }
    MAP_CREATE_COST.saturating_add(2 * (receiver.len() + argument.len()) as u64)
}

/// The receiver's entries overwritten and extended by the argument's.
fn merge(receiver: &Map, argument: &Map) -> Map {
    if argument.is_empty() {
        return receiver.clone();
    }
    let mut merged = receiver.clone();
    for (key, value) in argument.iter() {
        merged.insert(key.clone(), value.clone());
    }
    merged
}

/// The argument merged onto the receiver, recursing where both sides hold maps.
fn deep_merge(receiver: &Map, argument: &Map, budget: &mut Budget) -> EvalResult<Map> {
    crate::stack::guard(|| {
        budget.charge(copy_cost(receiver, argument))?;
        if argument.is_empty() {
            return Ok(receiver.clone());
        }
        if receiver.is_empty() {
            return Ok(argument.clone());
        }
        let mut merged = receiver.clone();
        for (key, value) in argument.iter() {
            let combined = match (receiver.get(key), value) {
                (Some(Value::Map(inner)), Value::Map(other)) => {
                    Value::Map(deep_merge(inner, other, budget)?)
                }
                _ => value.clone(),
            };
            merged.insert(key.clone(), combined);
        }
        Ok(merged)
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, is_no_such_overload};
    use crate::{Env, Key, Map, Type, TypeErrorKind, Value};

    fn env() -> Env {
        testing::env(super::library())
    }

    fn assert_equal_values(env: &Env, cases: &[(&str, &str)]) {
        for (text, expected) in cases {
            let expected_value = testing::value(env, expected);
            assert_eq!(testing::value(env, text), expected_value, "{text}");
        }
    }

    #[test]
    fn merge_lets_the_argument_win() {
        assert_equal_values(
            &env(),
            &[
                ("{}.merge({})", "{}"),
                ("{}.merge({'a': 1})", "{'a': 1}"),
                ("{}.merge({'a': 2.1})", "{'a': 2.1}"),
                ("{'a': 1}.merge({})", "{'a': 1}"),
                ("{'a': 1}.merge({'b': 2})", "{'a': 1, 'b': 2}"),
                ("{'a': 1}.merge({'a': 2, 'b': 2})", "{'a': 2, 'b': 2}"),
                (
                    "{'a': {'x': 1, 'y': 2}}.merge({'a': {'y': 3, 'z': 4}})",
                    "{'a': {'y': 3, 'z': 4}}",
                ),
                ("{'a': dyn(1)}.merge({'b': 2.0})", "{'a': 1, 'b': 2.0}"),
            ],
        );
    }

    #[test]
    fn deep_merge_merges_nested_maps_and_replaces_everything_else() {
        assert_equal_values(
            &env(),
            &[
                ("{}.deepMerge({})", "{}"),
                ("{'a': 1}.deepMerge({})", "{'a': 1}"),
                ("{}.deepMerge({'a': 1})", "{'a': 1}"),
                ("{'a': 1}.deepMerge({'b': 2})", "{'a': 1, 'b': 2}"),
                ("{'a': 1}.deepMerge({'a': 2})", "{'a': 2}"),
                (
                    "{'a': {'x': 1}, 'keep': 7}.deepMerge({'a': {'y': 2}})",
                    "{'a': {'x': 1, 'y': 2}, 'keep': 7}",
                ),
                (
                    "{'a': {'x': 1, 'y': 2}}.deepMerge({'a': {'y': 3, 'z': 4}})",
                    "{'a': {'x': 1, 'y': 3, 'z': 4}}",
                ),
                (
                    "{'a': {'b': {'c': 1, 'd': 2}}}.deepMerge({'a': {'b': {'d': 9, 'e': 5}}})",
                    "{'a': {'b': {'c': 1, 'd': 9, 'e': 5}}}",
                ),
                ("{'a': {'x': 1}}.deepMerge({'a': 5})", "{'a': 5}"),
                ("{'a': 5}.deepMerge({'a': {'x': 1}})", "{'a': {'x': 1}}"),
                ("{'a': [1, 2]}.deepMerge({'a': [3]})", "{'a': [3]}"),
                (
                    "{'a': [{'n': 'x', 'v': 1}]}.deepMerge({'a': [{'n': 'x', 'v': 2}]})",
                    "{'a': [{'n': 'x', 'v': 2}]}",
                ),
                (
                    "{1: 'a', 2: 'b'}.deepMerge({2: 'c', 3: 'd'})",
                    "{1: 'a', 2: 'c', 3: 'd'}",
                ),
                (
                    "{'securityContext': {'runAsNonRoot': true}}.deepMerge({'containers': \
                     [{'name': 'app'}], 'securityContext': {'fsGroup': 2000}})",
                    "{'containers': [{'name': 'app'}], 'securityContext': {'runAsNonRoot': \
                     true, 'fsGroup': 2000}}",
                ),
            ],
        );
    }

    #[test]
    fn merged_maps_list_the_receivers_keys_first() {
        let value = testing::value(
            &env(),
            "{'b': 1, 'a': {'y': 1}}.deepMerge({'c': 2, 'a': {'x': 2}})",
        );
        let Value::Map(map) = value else {
            panic!("not a map");
        };
        let keys: Vec<String> = map.keys().map(ToString::to_string).collect();
        assert_eq!(keys, ["\"b\"", "\"a\"", "\"c\""]);
        let Some(Value::Map(inner)) = map.get_str("a") else {
            panic!("not a map");
        };
        let keys: Vec<String> = inner.keys().map(ToString::to_string).collect();
        assert_eq!(keys, ["\"y\"", "\"x\""]);
    }

    #[test]
    fn deep_merge_of_non_maps_fails_at_run_time() {
        testing::assert_errors(
            &env(),
            &[
                ("{'a': 1}.deepMerge([1, 2, 3])", is_no_such_overload),
                ("[1, 2].deepMerge({'a': 1})", is_no_such_overload),
                ("{'a': 1}.deepMerge('nope')", is_no_such_overload),
                ("'nope'.deepMerge({'a': 1})", is_no_such_overload),
                ("1.deepMerge(2)", is_no_such_overload),
            ],
        );
    }

    #[test]
    fn merge_rejects_maps_of_different_types_while_deep_merge_accepts_objects() {
        let env = env().with_variable("pod", Type::object("PodSpec"));
        for text in [
            "{'a': 1}.merge({'a': 'x'})",
            "{1: 'a'}.merge({1u: 'b'})",
            "{'a': 1}.merge({'b': 2.0})",
            "{'a': 1}.merge([1])",
            "{'securityContext': {'runAsNonRoot': true}}.merge(pod)",
        ] {
            assert!(
                matches!(
                    testing::check_error(&env, text),
                    TypeErrorKind::NoMatchingOverload { .. }
                ),
                "{text}"
            );
        }
        assert_eq!(
            testing::output_type(
                &env,
                "{'securityContext': {'runAsNonRoot': true}}.deepMerge(pod)"
            ),
            Type::Dyn
        );
    }

    #[test]
    fn deep_merge_of_kubernetes_data_lets_the_argument_win() {
        let pod = crate::from_json(
            &serde_json::json!({
                "containers": [{"name": "app", "image": "nginx:latest"}],
                "securityContext": {"fsGroup": 2000, "runAsNonRoot": false}
            }),
            None,
            None,
        )
        .expect("converts");
        let program = env()
            .with_variable("pod", Type::Dyn)
            .compile("{'securityContext': {'runAsNonRoot': true}}.deepMerge(pod)")
            .expect("compiles");
        let merged = program
            .evaluate(&[("pod", pod.clone())])
            .expect("evaluates");
        assert_eq!(merged, pod);
        let Value::Map(map) = merged else {
            panic!("not a map");
        };
        assert!(map.contains_key(&Key::String("containers".into())));
    }

    #[test]
    fn deep_merge_costs_in_proportion_to_the_entries_visited() {
        let env = env();
        let big: Map = (0..10_000).map(|i| (Key::Int(i), Value::Int(i))).collect();
        let small = testing::cost_with_input(&env, "x.deepMerge({1: 2})", Value::Map(Map::new()));
        let large = testing::cost_with_input(&env, "x.deepMerge({1: 2})", Value::Map(big));
        assert!(large >= small + 999, "{small} {large}");
    }

    #[test]
    fn every_map_a_merge_creates_is_charged_as_a_literal() {
        // Found by the adversarial bench: merging maps that hold one map ten times, three
        // levels deep, created 1,111 maps for about 2,000 units (0.7 s in a loop).
        let env = env().with_variable("m", Type::Dyn);
        let leaf: Map = (0..10)
            .map(|i| (Key::String(i.to_string().into()), Value::Int(i)))
            .collect();
        let level = |inner: &Map| -> Map {
            (0..10)
                .map(|i| (Key::String(i.to_string().into()), Value::Map(inner.clone())))
                .collect()
        };
        let top = level(&level(&leaf));
        let evaluation = env
            .compile("m.deepMerge(m)")
            .expect("compiles")
            .evaluate_with_limit(&[("m", Value::Map(top))], None);
        assert!(evaluation.result.is_ok());
        // 1 + 10 + 100 maps of 10 entries each, merged with themselves.
        let per_map = crate::MAP_CREATE_COST + 2 * 20;
        assert_eq!(evaluation.cost, 1 + 111 * per_map);
    }
}
