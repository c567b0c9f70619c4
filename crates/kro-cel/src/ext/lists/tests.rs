use crate::error::{EvalErrorKind, TypeErrorKind};
use crate::ext::testing::{
    self, ErrorCheck, check_error, cost_with_input, env, error, is_invalid_argument,
    is_no_such_overload, output_type, value,
};
use crate::{Env, Type, Value};

fn lists() -> Env {
    env(super::library())
}

/// Each case compares the expression's value with the expected expression's value.
fn assert_same(cases: &[(&str, &str)]) {
    let env = lists();
    for (text, expected) in cases {
        assert_eq!(value(&env, text), value(&env, expected), "{text}");
    }
}

fn assert_errors(cases: &[(&str, ErrorCheck)]) {
    testing::assert_errors(&lists(), cases);
}

#[test]
fn slice_takes_a_half_open_range() {
    assert_same(&[
        ("[1, 2, 3, 4].slice(1, 3)", "[2, 3]"),
        ("[1, 2, 3, 4].slice(2, 4)", "[3, 4]"),
        ("[1, 2, 3, 4].slice(0, 0)", "[]"),
        ("[1, 2, 3, 4].slice(4, 4)", "[]"),
        ("['a', 'b'].slice(0, 2)", "['a', 'b']"),
    ]);
}

#[test]
fn slice_rejects_negative_reversed_and_out_of_range_indexes() {
    assert_errors(&[
        ("[1, 2, 3, 4].slice(-1, 3)", is_invalid_argument),
        ("[1, 2, 3, 4].slice(1, -3)", is_invalid_argument),
        ("[1, 2, 3, 4].slice(3, 1)", is_invalid_argument),
        ("[1, 2, 3, 4].slice(3, 5)", is_invalid_argument),
        (
            "[1, 2, 3, 4].slice(9223372036854775807, 9223372036854775807)",
            is_invalid_argument,
        ),
        ("dyn('abc').slice(0, 1)", is_no_such_overload),
    ]);
}

#[test]
fn flatten_splices_nested_lists_to_the_requested_depth() {
    assert_same(&[
        ("[1, [2, 3], [4]].flatten()", "[1, 2, 3, 4]"),
        ("[1, [2, [3, 4]]].flatten()", "[1, 2, [3, 4]]"),
        ("[1, 2, [], [], [3, 4]].flatten()", "[1, 2, 3, 4]"),
        ("[[], [[]]].flatten()", "[[]]"),
        ("[1, [2, [3, [4]]]].flatten(0)", "[1, [2, [3, [4]]]]"),
        ("[1, [2, [3, [4]]]].flatten(2)", "[1, 2, 3, [4]]"),
        (
            "[1, [2, [3, [4]]]].flatten(9223372036854775807)",
            "[1, 2, 3, 4]",
        ),
        ("[[{'a': [1]}]].flatten(5)", "[{'a': [1]}]"),
    ]);
}

#[test]
fn flatten_rejects_a_negative_depth() {
    assert_errors(&[
        ("[1, [2, [3, [4]]]].flatten(-1)", is_invalid_argument),
        ("dyn({}).flatten()", is_no_such_overload),
    ]);
}

#[test]
fn distinct_keeps_first_occurrences_by_cel_equality() {
    assert_same(&[
        ("[1, 2, 2, 3, 3, 3].distinct()", "[1, 2, 3]"),
        ("['b', 'b', 'c', 'a', 'c'].distinct()", "['b', 'c', 'a']"),
        ("[1, 'b', 2, 'b'].distinct()", "[1, 'b', 2]"),
        ("[1, 1u, 2u, 2].distinct()", "[1, 2u]"),
        ("[1, 1.0, 2.5, 2.5, 1u].distinct()", "[1, 2.5]"),
        ("[[1], [dyn(1.0)], [2]].distinct()", "[[1], [2]]"),
        ("[{'a': 1}, {'a': 1}].distinct()", "[{'a': 1}]"),
        ("[].distinct()", "[]"),
    ]);
    let env = lists();
    let nans = value(&env, "[0.0 / 0.0, 0.0 / 0.0].distinct().size()");
    assert_eq!(nans, Value::Int(2), "NaN equals nothing, itself included");
}

#[test]
fn reverse_first_and_last_read_the_ends() {
    assert_same(&[
        ("[5, 3, 1, 2].reverse()", "[2, 1, 3, 5]"),
        ("[].reverse()", "[]"),
        ("[1, 2, 3].first()", "optional.of(1)"),
        ("[1, 2, 3].last()", "optional.of(3)"),
        ("[].first()", "optional.none()"),
        ("[].last()", "optional.none()"),
        ("[[1]].first().value()", "[1]"),
    ]);
    assert_errors(&[
        ("dyn('a').reverse()", is_no_such_overload),
        ("dyn({}).first()", is_no_such_overload),
        ("dyn(1).last()", is_no_such_overload),
    ]);
}

#[test]
fn range_counts_up_from_zero() {
    assert_same(&[
        ("lists.range(5)", "[0, 1, 2, 3, 4]"),
        ("lists.range(1)", "[0]"),
        ("lists.range(0)", "[]"),
        ("lists.range(-3)", "[]"),
    ]);
}

#[test]
fn range_is_bounded_by_the_budget_and_by_memory() {
    let kind = error(&lists(), "lists.range(5000000)");
    assert!(
        matches!(kind, EvalErrorKind::CostLimitExceeded { .. }),
        "{kind:?}"
    );
    let unlimited = lists().with_cost_limit(None);
    let kind = error(&unlimited, "lists.range(9223372036854775807)");
    assert!(is_invalid_argument(&kind), "{kind:?}");
}

#[test]
fn sort_orders_every_comparable_type() {
    assert_same(&[
        ("[3, 1, 2].sort()", "[1, 2, 3]"),
        ("[3u, 1u, 2u].sort()", "[1u, 2u, 3u]"),
        ("[2.5, -1.0, 0.5].sort()", "[-1.0, 0.5, 2.5]"),
        ("[true, false].sort()", "[false, true]"),
        ("['b', 'c', 'a'].sort()", "['a', 'b', 'c']"),
        ("[b'b', b'a'].sort()", "[b'a', b'b']"),
        (
            "[duration('2s'), duration('1s')].sort()",
            "[duration('1s'), duration('2s')]",
        ),
        (
            "[timestamp('2024-01-02T00:00:00Z'), timestamp('2024-01-01T00:00:00Z')].sort()",
            "[timestamp('2024-01-01T00:00:00Z'), timestamp('2024-01-02T00:00:00Z')]",
        ),
        ("[].sort()", "[]"),
        ("[dyn(2), dyn(1)].sort()", "[1, 2]"),
    ]);
}

#[test]
fn sort_rejects_mixed_incomparable_and_nan_elements() {
    assert_errors(&[
        ("[1, 'b'].sort()", is_invalid_argument),
        ("[1, 1u].sort()", is_invalid_argument),
        ("[dyn([1]), dyn([2])].sort()", is_invalid_argument),
        ("[dyn({}), dyn({})].sort()", is_invalid_argument),
        ("[1.0, 0.0 / 0.0].sort()", is_invalid_argument),
        ("dyn('ba').sort()", is_no_such_overload),
    ]);
}

#[test]
fn sort_by_orders_elements_by_their_keys_stably() {
    assert_same(&[
        ("[3, 1, 2].sortBy(x, -x)", "[3, 2, 1]"),
        (
            "['bb', 'a', 'cc', 'd'].sortBy(s, size(s))",
            "['a', 'd', 'bb', 'cc']",
        ),
        (
            "[{'n': 'foo', 's': 0}, {'n': 'bar', 's': -10}, {'n': 'baz', 's': 1000}]\
             .sortBy(e, e.s).map(e, e.n)",
            "['bar', 'foo', 'baz']",
        ),
        ("[].sortBy(x, x)", "[]"),
        ("lists.range(4).sortBy(i, [2, 0, 3, 1][i])", "[1, 3, 0, 2]"),
        (
            "[[2, 'b'], [1, 'a']].sortBy(p, p[0]).map(p, p[1])",
            "['a', 'b']",
        ),
    ]);
    assert_errors(&[
        (
            "[1, 2].sortBy(x, x == 1 ? dyn('a') : dyn(x))",
            is_invalid_argument,
        ),
        ("[1, 2].sortBy(x, dyn([x]))", is_invalid_argument),
    ]);
}

#[test]
fn result_types_follow_the_receiver() {
    let env = lists();
    let list_of = Type::list;
    let cases = [
        ("[3, 1, 2].sort()", list_of(Type::Int)),
        ("['b', 'a'].sort()", list_of(Type::String)),
        ("[1, 2].first()", Type::optional(Type::Int)),
        ("['a'].last()", Type::optional(Type::String)),
        ("[1].slice(0, 1)", list_of(Type::Int)),
        ("[[1], [2]].flatten()", list_of(Type::Int)),
        ("[1, [2]].flatten()", list_of(Type::Dyn)),
        ("[[1]].flatten(2)", list_of(Type::Dyn)),
        ("['a'].distinct()", list_of(Type::String)),
        ("[1u].reverse()", list_of(Type::Uint)),
        ("lists.range(3)", list_of(Type::Int)),
        ("[1, 2].sortBy(x, -x)", list_of(Type::Int)),
        ("['a'].sortBy(s, size(s))", list_of(Type::String)),
    ];
    for (text, expected) in cases {
        assert_eq!(output_type(&env, text), expected, "{text}");
    }
}

#[test]
fn wrong_argument_types_are_rejected_when_checking() {
    let env = lists();
    for text in [
        "[1].slice(0u, 1)",
        "[1].slice('a', 1)",
        "'abc'.slice(0, 1)",
        "[1].flatten()",
        "[[1]].flatten('a')",
        "[[1]].sort()",
        "[{'a': 1}].sort()",
        "[1].sortBy(x, [x])",
        "[1].distinct(1)",
        "'a'.first()",
        "{'a': 1}.reverse()",
        "lists.range(1u)",
    ] {
        assert!(
            matches!(
                check_error(&env, text),
                TypeErrorKind::NoMatchingOverload { .. }
            ),
            "{text}"
        );
    }
}

#[test]
fn work_on_long_lists_is_charged_in_proportion() {
    let env = lists();
    let ints = |size: i64| Value::list((0..size).rev().map(Value::Int).collect());
    let nested = |size: usize| Value::list(vec![Value::list(vec![Value::Int(1); 10]); size]);
    for text in ["x.distinct()", "x.reverse()", "x.slice(0, size(x))"] {
        let small = cost_with_input(&env, text, ints(10));
        let large = cost_with_input(&env, text, ints(10_000));
        assert!(large >= small + 900, "{text}: {small} vs {large}");
    }
    let small = cost_with_input(&env, "x.flatten()", nested(10));
    let large = cost_with_input(&env, "x.flatten()", nested(1000));
    assert!(large >= small + 1000, "flatten: {small} vs {large}");
    // 1024 elements: the copy reverse makes too, and about ten rounds of comparisons over all
    // of them.
    let sorted = cost_with_input(&env, "x.sort()", ints(1024));
    let reversed = cost_with_input(&env, "x.reverse()", ints(1024));
    assert!(
        sorted >= reversed + 1024,
        "sort: {sorted} vs reverse: {reversed}"
    );
    let pairs = Value::list((0..200).map(|i| Value::Double(f64::from(i))).collect());
    let scanned = cost_with_input(&env, "x.distinct()", pairs);
    assert!(scanned >= 1900, "pairwise distinct: {scanned}");
}

#[test]
fn flatten_charges_a_unit_for_each_element_it_creates() {
    // Found by the adversarial bench: one list held ten times at each of five levels
    // flattens to 100 million elements while walking few lists (305 ms on the default
    // budget at a tenth of a unit per element).
    let env = lists();
    let inner = Value::list((0..1000).map(Value::Int).collect());
    let shared = Value::list(vec![inner; 10]);
    let cost = cost_with_input(&env, "x.flatten()", shared);
    // The outer list, the ten inner lists, then the 10,000 elements copied.
    assert_eq!(cost, 1 + 1 + 10 * 100 + 10_000);
}

#[test]
fn distinct_charges_for_each_element_it_hashes() {
    let env = lists();
    let numbers = Value::list((0..1000).map(Value::Int).collect());
    assert_eq!(cost_with_input(&env, "x.distinct()", numbers), 1 + 2 * 1000);
    // Other elements are compared pairwise, and each comparison is charged in full.
    let inner = Value::list((0..1000).map(Value::Int).collect());
    let lists_of_lists = Value::list(vec![inner; 3]);
    let cost = cost_with_input(&env, "x.distinct()", lists_of_lists);
    assert!(cost >= 2 * 100, "{cost}");
}
