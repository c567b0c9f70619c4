//! The time library on a clock fixed by the test: answers at `now`, and the instant at which
//! each answer changes.

use std::sync::Arc;

use super::*;
use crate::{Env, Program};

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("RFC 3339")
}

fn env() -> Env {
    Env::kro()
        .with_library(library())
        .with_variable(TIME_VARIABLE, time_type())
        .with_variable("expiry", Type::Timestamp)
}

fn compile(source: &str) -> Program {
    env()
        .compile(source)
        .unwrap_or_else(|error| panic!("{source}: {error}"))
}

fn variables(clock: &Arc<Clock>) -> std::collections::HashMap<String, Value> {
    std::collections::HashMap::from([
        (TIME_VARIABLE.to_owned(), time_value(clock)),
        (
            "expiry".to_owned(),
            Value::Timestamp(at("2026-03-01T00:00:00Z")),
        ),
    ])
}

/// The value of `source` at `now`, and the next change it recorded.
fn run(source: &str, now: &str) -> (Value, Option<String>) {
    let clock = Clock::new(at(now));
    let variables = variables(&clock);
    let value = compile(source)
        .evaluate(&variables)
        .unwrap_or_else(|error| panic!("{source}: {error}"));
    (value, clock.next_change().map(|next| next.to_string()))
}

#[test]
fn a_comparison_answers_at_now_and_records_when_it_flips() {
    // A grace period: true once an hour has passed since the expiry.
    let source = r#"time.now() - expiry > duration("1h")"#;
    assert_eq!(
        run(source, "2026-03-01T00:30:00Z"),
        (
            Value::Bool(false),
            Some("2026-03-01T01:00:00.000000001Z".into())
        )
    );
    // At the flip instant it holds, and nothing is left to wait for.
    assert_eq!(
        run(source, "2026-03-01T01:00:00.000000001Z"),
        (Value::Bool(true), None)
    );
    // >= flips at the boundary itself.
    assert_eq!(
        run(
            r#"time.now() >= expiry - duration("720h")"#,
            "2026-01-01T00:00:00Z"
        ),
        (Value::Bool(false), Some("2026-01-30T00:00:00Z".into()))
    );
    // The earliest of several flips is the one recorded.
    assert_eq!(
        run(
            r#"time.now() < expiry && time.now() > expiry - duration("48h")"#,
            "2026-02-01T00:00:00Z"
        ),
        (
            Value::Bool(false),
            Some("2026-02-27T00:00:00.000000001Z".into())
        )
    );
    // Reversed operands and durations the other way round.
    assert_eq!(
        run(
            r#"expiry - time.now() < duration("24h")"#,
            "2026-02-27T00:00:00Z"
        ),
        (
            Value::Bool(false),
            Some("2026-02-28T00:00:00.000000001Z".into())
        )
    );
}

#[test]
fn what_cannot_change_records_nothing() {
    assert_eq!(
        run("time.now() > expiry", "2026-04-01T00:00:00Z"),
        (Value::Bool(true), None)
    );
    assert_eq!(
        run(
            "time.now() - time.now() > duration('0s')",
            "2026-04-01T00:00:00Z"
        )
        .1,
        None
    );
    assert_eq!(
        run("string(time.now())", "2026-04-01T12:00:00Z"),
        (Value::String("2026-04-01T12:00:00Z".into()), None)
    );
    assert_eq!(
        run("string(time.now() - expiry)", "2026-03-01T00:01:00Z"),
        (Value::String("60s".into()), None)
    );
}

#[test]
fn business_hours_follow_the_local_day_across_a_dst_change() {
    // Berlin moves from CET (+01:00) to CEST (+02:00) at 2026-03-29T01:00:00Z.
    let open = r#"time.now() >= time.now().withTime({"hours": 9}, "Europe/Berlin") && time.now() < time.now().withTime({"hours": 17}, "Europe/Berlin")"#;
    // Saturday 07:00 local (+01:00): closed until 09:00 local.
    assert_eq!(
        run(open, "2026-03-28T06:00:00Z"),
        (Value::Bool(false), Some("2026-03-28T08:00:00Z".into()))
    );
    // 18:00 local: closed; the next change is the local midnight (23:00Z), when today's
    // window becomes tomorrow's.
    assert_eq!(
        run(open, "2026-03-28T17:00:00Z"),
        (Value::Bool(false), Some("2026-03-28T23:00:00Z".into()))
    );
    // After the change, 09:00 local is 07:00Z.
    assert_eq!(
        run(open, "2026-03-28T23:00:00Z"),
        (Value::Bool(false), Some("2026-03-29T07:00:00Z".into()))
    );
    assert_eq!(
        run(open, "2026-03-29T07:00:00Z"),
        (Value::Bool(true), Some("2026-03-29T15:00:00Z".into()))
    );
}

#[test]
fn add_days_keeps_the_wall_clock_across_a_dst_change() {
    assert_eq!(
        run(
            r#"timestamp("2026-03-28T12:00:00Z").addDays(1, "Europe/Berlin")"#,
            "2026-01-01T00:00:00Z"
        ),
        (Value::Timestamp(at("2026-03-29T11:00:00Z")), None)
    );
    // A time in the spring-forward gap is read with the offset before it.
    assert_eq!(
        run(
            r#"timestamp("2026-03-28T01:30:00Z").withTime({"hours": 2, "minutes": 30}, "Europe/Berlin").addDays(1, "Europe/Berlin")"#,
            "2026-01-01T00:00:00Z"
        )
        .0,
        Value::Timestamp(at("2026-03-29T01:30:00Z"))
    );
    // On now: tomorrow at this time; the next change is the DST transition.
    let (value, next) = run(
        r#"time.now().addDays(1, "Europe/Berlin") > expiry"#,
        "2026-03-28T12:00:00Z",
    );
    assert_eq!(value, Value::Bool(true));
    assert_eq!(next.as_deref(), Some("2026-03-28T23:00:00Z"));
}

#[test]
fn mistakes_are_errors_with_the_reason() {
    let clock = Clock::new(at("2026-01-01T00:00:00Z"));
    let variables = variables(&clock);
    for (source, reason) in [
        (
            r#"time.now().withTime({"hours": 24}, "UTC")"#,
            "hours must be an int from 0 to 23",
        ),
        (
            r#"time.now().withTime({"hour": 1}, "UTC")"#,
            "unknown field 'hour'",
        ),
        (
            r#"time.now().addDays(1, "Mars/Olympus")"#,
            "unknown time zone 'Mars/Olympus'",
        ),
    ] {
        let error = compile(source)
            .evaluate(&variables)
            .expect_err(source)
            .to_string();
        assert!(error.contains(reason), "{source}: {error}");
    }
    // Adding two instants is not a thing.
    assert!(env().compile("time.now() + time.now()").is_err());
    assert!(
        env()
            .compile("time.now() - duration('1h') > duration('1h')")
            .is_err()
    );
}

#[test]
fn a_moving_value_has_no_json_form() {
    let (value, _) = run("time.now()", "2026-01-01T00:00:00Z");
    let Value::Opaque(opaque) = &value else {
        panic!("opaque: {value:?}");
    };
    assert_eq!(opaque.type_name(), MOVING_TIMESTAMP_TYPE_NAME);
    assert!(opaque.to_json().is_none());
    assert!(is_moving(&value));
    let _ = Arc::strong_count(opaque);
}

#[test]
fn a_shifted_now_records_its_own_changes() {
    // An hour behind now, the receiver's date changes at 01:00Z, not at midnight.
    assert_eq!(
        run(
            r#"(time.now() - duration("1h")).withTime({"hours": 9}, "UTC") > expiry"#,
            "2026-03-01T00:30:00Z"
        ),
        (Value::Bool(false), Some("2026-03-01T01:00:00Z".into()))
    );
    // Twelve hours ahead, the receiver's midnight comes twelve hours early.
    assert_eq!(
        run(
            r#"(time.now() + duration("12h")).addDays(1, "UTC") > expiry"#,
            "2026-03-01T00:30:00Z"
        )
        .1,
        Some("2026-03-01T12:00:00Z".into())
    );
}

#[test]
fn add_days_on_now_sees_the_gap_on_the_result_side() {
    // Saturday 01:30 CET: tomorrow at this time is still before Sunday's jump from 02:00 to
    // 03:00. From Saturday 02:00 local the result falls in the gap (read with the offset before
    // it, still 24h away); from Saturday 03:00 local (02:00Z) tomorrow's 03:00 is CEST and the
    // result is 23h away: that is the next change, not the midnight.
    let (_, next) = run(
        r#"time.now().addDays(1, "Europe/Berlin") > expiry"#,
        "2026-03-28T00:30:00Z",
    );
    assert_eq!(next.as_deref(), Some("2026-03-28T02:00:00Z"));
}

#[test]
fn values_that_would_overflow_are_errors() {
    let mut source = "time.now() - timestamp('1970-01-01T00:00:00Z')".to_owned();
    for level in 0..20 {
        source = format!("cel.bind(a{level}, {source}, a{level} + a{level})");
    }
    let clock = Clock::new(at("2026-01-01T00:00:00Z"));
    let error = compile(&format!("{source} > duration('1s')"))
        .evaluate(&variables(&clock))
        .expect_err("out of range");
    assert!(error.to_string().contains("out of range"), "{error}");
}
