//! kro's time library (KREP-025, as upstream's implementation believed to be #1434 has it):
//! expressions that read the current time, and the instant at which what they read changes.
//!
//! - `time` is a variable of the opaque type [`TIME_TYPE_NAME`], bound per evaluation to a
//!   [`Clock`] holding one fixed `now` ([`time_value`]); this library does not declare it (the
//!   graph builder does, behind its feature gate).
//! - `time.now() -> kro.Timestamp`: the clock's `now`. A `kro.Timestamp` or `kro.Duration` is
//!   a value that moves with the clock, `rate·now + offset`; `+` and `-` with CEL timestamps
//!   and durations (and with each other) keep it moving.
//! - `<`, `<=`, `>`, `>=` between a moving value and a timestamp or duration (or two moving
//!   values) answer at `now`, and record on the clock the first instant after `now` at which
//!   the answer changes; [`Clock::next_change`] is the earliest of them, the instant at which
//!   an evaluation must be repeated. Nothing else is ever worth re-evaluating for.
//! - `string(x)` is the only way out: RFC 3339 or duration text of the value at `now`,
//!   recording nothing (the caller asked for the text, not to follow it). `timestamp(x)` and
//!   `duration(x)` of a moving value are identity casts. A moving value cannot be turned into
//!   JSON ([`OpaqueValue::to_json`] is `None`): rendering it into an object is an error.
//! - `ts.withTime({hours, minutes, seconds, nanos}, zone) -> timestamp`: the instant on the
//!   local date of `ts` in the IANA `zone` at that wall-clock time. On `time.now()` the result
//!   changes at the next local midnight, which is recorded.
//! - `ts.addDays(n, zone) -> timestamp`: the same wall-clock time `n` calendar days later in
//!   `zone` (a day across a DST change is 23 or 25 hours). On `time.now()` the result moves
//!   with the clock; the next instant its offset from `now` changes (a DST transition of `now`
//!   or of the result, or at the latest the next local midnight) is recorded.
//!
//! A wall-clock time that does not exist (inside a spring-forward gap) is read with the offset
//! in effect before the gap, so 02:30 on the day clocks jump from 02:00 to 03:00 is 03:30; one
//! that exists twice (the autumn overlap) is the earlier instant.

use std::any::Any;
use std::sync::{Arc, Mutex};

use chrono::{Duration as ChronoDuration, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone};

use crate::cost::Budget;
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::time::{Duration, Timestamp};
use crate::types::Type;
use crate::value::{OpaqueValue, Value};

/// The name of the variable bound to [`time_value`].
pub const TIME_VARIABLE: &str = "time";
/// The opaque type of the `time` variable.
pub const TIME_TYPE_NAME: &str = "kro.Time";
/// The type of `time.now()` and of timestamps computed from it.
pub const MOVING_TIMESTAMP_TYPE_NAME: &str = "kro.Timestamp";
/// The type of durations computed from `time.now()`.
pub const MOVING_DURATION_TYPE_NAME: &str = "kro.Duration";

/// The largest factor of `now` a moving value may carry (`time.now() + time.now() - ts` has
/// 2): far more than any sensible expression, and small enough that no arithmetic on a
/// bounded value can overflow.
const MAX_RATE: i128 = 1 << 10;

/// The largest offset, in nanoseconds, a moving value may carry (about 3·10^13 years).
const MAX_OFFSET: i128 = 1_000_000_000_000_000_000_000_000_000_000;

/// One evaluation's time: a fixed `now`, and the earliest instant after it at which a
/// comparison read so far changes its answer.
#[derive(Debug)]
pub struct Clock {
    now: Timestamp,
    next_change: Mutex<Option<i128>>,
}

impl Clock {
    /// A clock fixed at `now`.
    pub fn new(now: Timestamp) -> Arc<Clock> {
        Arc::new(Clock {
            now,
            next_change: Mutex::new(None),
        })
    }

    /// The fixed `now`.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The earliest instant after `now` at which something read changes, if any.
    pub fn next_change(&self) -> Option<Timestamp> {
        let next = *self.next_change.lock().ok()?;
        next.and_then(|nanos| Timestamp::from_nanos(nanos).ok())
    }

    fn record(&self, at: i128) {
        if at <= self.now.total_nanos() {
            return;
        }
        if let Ok(mut next) = self.next_change.lock() {
            *next = Some(next.map_or(at, |earliest| earliest.min(at)));
        }
    }
}

/// The type to declare the `time` variable with.
pub fn time_type() -> Type {
    Type::opaque(TIME_TYPE_NAME)
}

/// The type of `time.now()`.
pub fn moving_timestamp_type() -> Type {
    Type::opaque(MOVING_TIMESTAMP_TYPE_NAME)
}

/// The type of a duration computed from `time.now()`.
pub fn moving_duration_type() -> Type {
    Type::opaque(MOVING_DURATION_TYPE_NAME)
}

/// The value of `time` for an evaluation on `clock`.
pub fn time_value(clock: &Arc<Clock>) -> Value {
    Value::Opaque(Arc::new(TimeSource(clock.clone())))
}

/// Whether `value` is a moving time value (`kro.Timestamp`, `kro.Duration`).
pub fn is_moving(value: &Value) -> bool {
    matches!(value, Value::Opaque(opaque) if opaque.as_any().is::<Moving>())
}

/// The value of `time`.
#[derive(Debug)]
struct TimeSource(Arc<Clock>);

impl OpaqueValue for TimeSource {
    fn type_name(&self) -> &str {
        TIME_TYPE_NAME
    }

    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<TimeSource>()
            .is_some_and(|other| Arc::ptr_eq(&self.0, &other.0))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Whether a value is an instant or a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Timestamp,
    Duration,
}

/// A value that moves with the clock: `rate·t + offset` nanoseconds at the instant `t`
/// (nanoseconds since the epoch).
#[derive(Debug, Clone)]
struct Moving {
    clock: Arc<Clock>,
    unit: Unit,
    rate: i128,
    offset: i128,
}

impl Moving {
    fn at_now(&self) -> i128 {
        self.rate * self.clock.now.total_nanos() + self.offset
    }

    fn value(self) -> Value {
        Value::Opaque(Arc::new(self))
    }
}

impl OpaqueValue for Moving {
    fn type_name(&self) -> &str {
        match self.unit {
            Unit::Timestamp => MOVING_TIMESTAMP_TYPE_NAME,
            Unit::Duration => MOVING_DURATION_TYPE_NAME,
        }
    }

    /// Equal when both have the same value at `now` (equality records nothing).
    fn equals(&self, other: &dyn OpaqueValue) -> bool {
        other
            .as_any()
            .downcast_ref::<Moving>()
            .is_some_and(|other| other.unit == self.unit && other.at_now() == self.at_now())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An operand as `rate·t + offset` of `unit`, with the clock of a moving one.
fn operand(value: &Value) -> Option<(Unit, i128, i128, Option<Arc<Clock>>)> {
    match value {
        Value::Timestamp(timestamp) => Some((Unit::Timestamp, 0, timestamp.total_nanos(), None)),
        Value::Duration(duration) => Some((Unit::Duration, 0, duration.total_nanos(), None)),
        Value::Opaque(opaque) => opaque.as_any().downcast_ref::<Moving>().map(|moving| {
            (
                moving.unit,
                moving.rate,
                moving.offset,
                Some(moving.clock.clone()),
            )
        }),
        _ => None,
    }
}

fn no_overload(function: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(function, &args.iter().collect::<Vec<_>>())
}

/// `a + b` or `a - b` where one operand moves.
fn arithmetic(function: &'static str, subtract: bool, args: &[Value]) -> EvalResult<Value> {
    let (Some(left), Some(right)) = (operand(&args[0]), operand(&args[1])) else {
        return Err(no_overload(function, args));
    };
    let Some(clock) = left.3.clone().or(right.3.clone()) else {
        return Err(no_overload(function, args));
    };
    let unit = match (left.0, right.0, subtract) {
        (Unit::Timestamp, Unit::Duration, _) | (Unit::Duration, Unit::Timestamp, false) => {
            Unit::Timestamp
        }
        (Unit::Timestamp, Unit::Timestamp, true) | (Unit::Duration, Unit::Duration, _) => {
            Unit::Duration
        }
        _ => return Err(no_overload(function, args)),
    };
    let (rate, offset) = if subtract {
        (left.1 - right.1, left.2 - right.2)
    } else {
        (left.1 + right.1, left.2 + right.2)
    };
    // The operands are bounded, so their sums cannot overflow; the results are bounded again.
    if rate.abs() > MAX_RATE || offset.abs() > MAX_OFFSET {
        return Err(EvalError::invalid_argument(
            function,
            "the time value is out of range",
        ));
    }
    Ok(Moving {
        clock,
        unit,
        rate,
        offset,
    }
    .value())
}

/// The relational operators, as kro-cel's interpreter names them.
#[derive(Debug, Clone, Copy)]
enum Relation {
    Less,
    LessEquals,
    Greater,
    GreaterEquals,
}

impl Relation {
    fn holds(self, difference: i128) -> bool {
        match self {
            Relation::Less => difference < 0,
            Relation::LessEquals => difference <= 0,
            Relation::Greater => difference > 0,
            Relation::GreaterEquals => difference >= 0,
        }
    }
}

/// `a < b` and friends where one operand moves: the answer at `now`, with the first instant
/// after `now` at which it changes recorded on the clock.
fn relate(function: &'static str, relation: Relation, args: &[Value]) -> EvalResult<Value> {
    let (Some(left), Some(right)) = (operand(&args[0]), operand(&args[1])) else {
        return Err(no_overload(function, args));
    };
    if left.0 != right.0 {
        return Err(no_overload(function, args));
    }
    let Some(clock) = left.3.clone().or(right.3.clone()) else {
        return Err(no_overload(function, args));
    };
    // The difference d(t) = rate·t + offset; the answer is `relation` of d against zero.
    let rate = left.1 - right.1;
    let offset = left.2 - right.2;
    let now = clock.now.total_nanos();
    let answer = relation.holds(rate * now + offset);
    if rate != 0 {
        // The answer is monotone in t: find the first instant after now where it differs.
        if let Some(change) = first_change(rate, offset, now, |d| relation.holds(d) != answer) {
            clock.record(change);
        }
    }
    Ok(Value::Bool(answer))
}

/// The first instant `t > now` at which `changed(rate·t + offset)` holds, when `changed` is
/// monotone in t (false, then true) and it holds eventually: found by doubling then halving.
fn first_change(
    rate: i128,
    offset: i128,
    now: i128,
    changed: impl Fn(i128) -> bool,
) -> Option<i128> {
    let at = |t: i128| changed(rate * t + offset);
    // The zero of the difference, rounded down: the change is within a nanosecond of it.
    let zero = (-offset).div_euclid(rate);
    let mut low = now;
    let mut high = zero.max(now) + 2;
    if !at(high) {
        return None;
    }
    if at(now + 1) {
        return Some(now + 1);
    }
    low = low.max(now + 1);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if at(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(high)
}

/// An IANA time zone (or `UTC`).
fn zone(function: &str, name: &Value) -> EvalResult<chrono_tz::Tz> {
    let Value::String(name) = name else {
        return Err(EvalError::invalid_argument(
            function,
            "the time zone must be a string",
        ));
    };
    name.parse()
        .map_err(|_| EvalError::invalid_argument(function, format!("unknown time zone '{name}'")))
}

/// The instant of the local `wall` time in `zone`: a time in a gap is read with the offset
/// before the gap, one in an overlap is the earlier instant.
fn local_instant(function: &str, zone: chrono_tz::Tz, wall: NaiveDateTime) -> EvalResult<i128> {
    let utc = match zone.from_local_datetime(&wall) {
        chrono::LocalResult::Single(local) => local.naive_utc(),
        chrono::LocalResult::Ambiguous(earlier, _) => earlier.naive_utc(),
        chrono::LocalResult::None => {
            let before = zone
                .offset_from_utc_datetime(&(wall - ChronoDuration::hours(24)))
                .fix();
            wall - ChronoDuration::seconds(i64::from(before.local_minus_utc()))
        }
    };
    let seconds = utc.and_utc().timestamp();
    let nanos = utc.and_utc().timestamp_subsec_nanos();
    Timestamp::new(seconds, nanos)
        .map(Timestamp::total_nanos)
        .map_err(|_| EvalError::invalid_argument(function, "the result is out of range"))
}

/// The local date and time of the instant `at` in `zone`.
fn wall_time(function: &str, zone: chrono_tz::Tz, at: i128) -> EvalResult<NaiveDateTime> {
    let timestamp = Timestamp::from_nanos(at)
        .map_err(|_| EvalError::invalid_argument(function, "the timestamp is out of range"))?;
    Ok(timestamp.to_utc().with_timezone(&zone).naive_local())
}

/// The first local midnight in `zone` after the instant `at`.
fn next_midnight(function: &str, zone: chrono_tz::Tz, at: i128) -> EvalResult<i128> {
    let date: NaiveDate = wall_time(function, zone, at)?.date();
    let tomorrow = date
        .succ_opt()
        .ok_or_else(|| EvalError::invalid_argument(function, "the result is out of range"))?;
    local_instant(function, zone, tomorrow.and_time(NaiveTime::MIN))
}

/// The first instant in `(from, to]` at which `value` differs from its value at `from`, if
/// any (it is assumed to change at most once in the span: a day holds one DST transition).
fn first_differing(
    from: i128,
    to: i128,
    value: impl Fn(i128) -> EvalResult<i128>,
) -> EvalResult<Option<i128>> {
    let start = value(from)?;
    if value(to)? == start {
        return Ok(None);
    }
    let (mut low, mut high) = (from, to);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if value(middle)? == start {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(Some(high))
}

/// A timestamp argument (plain, or moving with its value at now), with the moving one.
fn timestamp_arg(function: &str, value: &Value) -> EvalResult<(i128, Option<Moving>)> {
    match value {
        Value::Timestamp(timestamp) => Ok((timestamp.total_nanos(), None)),
        Value::Opaque(opaque) => match opaque.as_any().downcast_ref::<Moving>() {
            Some(moving) if moving.unit == Unit::Timestamp => {
                Ok((moving.at_now(), Some(moving.clone())))
            }
            _ => Err(no_overload(function, std::slice::from_ref(value))),
        },
        other => Err(no_overload(function, std::slice::from_ref(other))),
    }
}

fn to_timestamp(function: &str, nanos: i128) -> EvalResult<Value> {
    Timestamp::from_nanos(nanos)
        .map(Value::Timestamp)
        .map_err(|_| EvalError::invalid_argument(function, "the result is out of range"))
}

/// `ts.withTime({hours, minutes, seconds, nanos}, zone)`.
fn with_time(args: &[Value], _: &mut Budget) -> EvalResult<Value> {
    const NAME: &str = "withTime";
    let (at, moving) = timestamp_arg(NAME, &args[0])?;
    let Value::Map(fields) = &args[1] else {
        return Err(no_overload(NAME, args));
    };
    let mut parts = [0i64; 4];
    let names = ["hours", "minutes", "seconds", "nanos"];
    let limits = [23, 59, 59, 999_999_999];
    for (key, value) in fields.iter() {
        let key = key.to_value();
        let Value::String(key) = &key else {
            return Err(EvalError::invalid_argument(
                NAME,
                "the time's keys must be strings",
            ));
        };
        let Some(index) = names.iter().position(|name| *name == key.as_ref()) else {
            return Err(EvalError::invalid_argument(
                NAME,
                format!("unknown field '{key}' (hours, minutes, seconds, nanos)"),
            ));
        };
        match value {
            Value::Int(number) if (0..=limits[index]).contains(number) => parts[index] = *number,
            _ => {
                return Err(EvalError::invalid_argument(
                    NAME,
                    format!("{key} must be an int from 0 to {}", limits[index]),
                ));
            }
        }
    }
    let zone = zone(NAME, &args[2])?;
    let date = wall_time(NAME, zone, at)?.date();
    let out_of_range = || EvalError::invalid_argument(NAME, "invalid time of day");
    let time = NaiveTime::from_hms_nano_opt(
        u32::try_from(parts[0]).map_err(|_| out_of_range())?,
        u32::try_from(parts[1]).map_err(|_| out_of_range())?,
        u32::try_from(parts[2]).map_err(|_| out_of_range())?,
        u32::try_from(parts[3]).map_err(|_| out_of_range())?,
    )
    .ok_or_else(out_of_range)?;
    let result = local_instant(NAME, zone, date.and_time(time))?;
    if let Some(moving) = moving {
        if moving.rate != 1 {
            return Err(moving_rate_error(NAME));
        }
        // Constant until the receiver's local date changes; the receiver is `now + offset`.
        moving
            .clock
            .record(next_midnight(NAME, zone, at)? - moving.offset);
    }
    to_timestamp(NAME, result)
}

fn moving_rate_error(function: &str) -> EvalError {
    EvalError::invalid_argument(
        function,
        "only time.now() plus or minus durations can be moved in calendar days",
    )
}

/// `ts.addDays(n, zone)`.
fn add_days(args: &[Value], _: &mut Budget) -> EvalResult<Value> {
    const NAME: &str = "addDays";
    let (at, moving) = timestamp_arg(NAME, &args[0])?;
    let Value::Int(days) = &args[1] else {
        return Err(no_overload(NAME, args));
    };
    if days.unsigned_abs() > 3_660_000 {
        return Err(EvalError::invalid_argument(NAME, "too many days"));
    }
    let zone = zone(NAME, &args[2])?;
    let shifted = |from: i128| -> EvalResult<i128> {
        let wall = wall_time(NAME, zone, from)?;
        let moved = wall
            .checked_add_signed(ChronoDuration::days(*days))
            .ok_or_else(|| EvalError::invalid_argument(NAME, "the result is out of range"))?;
        local_instant(NAME, zone, moved)
    };
    let result = shifted(at)?;
    let Some(moving) = moving else {
        return to_timestamp(NAME, result);
    };
    if moving.rate != 1 {
        return Err(moving_rate_error(NAME));
    }
    // result(x) - x, for the receiver's value x = now + offset, is constant until a DST
    // transition of x or of the result; the first change up to x's next local midnight (when
    // it is looked at again) is found on that difference itself, gaps and overlaps included.
    let midnight = next_midnight(NAME, zone, at)?;
    let difference = |x: i128| shifted(x).map(|result| result - x);
    let change = first_differing(at, midnight, difference)?;
    let next = change.map_or(midnight, |change| change.min(midnight)) - moving.offset;
    moving.clock.record(next);
    Ok(Moving {
        clock: moving.clock.clone(),
        unit: Unit::Timestamp,
        rate: 1,
        offset: result - moving.clock.now.total_nanos(),
    }
    .value())
}

/// `string(x)` of a moving value: its text at now.
fn moving_string(args: &[Value], _: &mut Budget) -> EvalResult<Value> {
    let Some(Value::Opaque(opaque)) = args.first() else {
        return Err(no_overload("string", args));
    };
    let Some(moving) = opaque.as_any().downcast_ref::<Moving>() else {
        return Err(no_overload("string", args));
    };
    let text = match moving.unit {
        Unit::Timestamp => Timestamp::from_nanos(moving.at_now())?.to_string(),
        Unit::Duration => Duration::from_nanos(moving.at_now())?.to_string(),
    };
    Ok(Value::String(text.into()))
}

/// The kro.time library.
pub(crate) fn library() -> Library {
    let timestamp = moving_timestamp_type();
    let duration = moving_duration_type();
    let identity = |args: &[Value], _: &mut Budget| Ok(args[0].clone());
    let mut add = Function::new("_+_");
    for (id, params, result) in [
        (
            "add_kro_timestamp_duration",
            [timestamp.clone(), Type::Duration],
            &timestamp,
        ),
        (
            "add_duration_kro_timestamp",
            [Type::Duration, timestamp.clone()],
            &timestamp,
        ),
        (
            "add_kro_timestamp_kro_duration",
            [timestamp.clone(), duration.clone()],
            &timestamp,
        ),
        (
            "add_kro_duration_kro_timestamp",
            [duration.clone(), timestamp.clone()],
            &timestamp,
        ),
        (
            "add_timestamp_kro_duration",
            [Type::Timestamp, duration.clone()],
            &timestamp,
        ),
        (
            "add_kro_duration_timestamp",
            [duration.clone(), Type::Timestamp],
            &timestamp,
        ),
        (
            "add_kro_duration_duration",
            [duration.clone(), Type::Duration],
            &duration,
        ),
        (
            "add_duration_kro_duration",
            [Type::Duration, duration.clone()],
            &duration,
        ),
        (
            "add_kro_duration_kro_duration",
            [duration.clone(), duration.clone()],
            &duration,
        ),
    ] {
        add = add.overload(
            Overload::global(id, &params, result.clone())
                .with_impl(|args, _| arithmetic("_+_", false, args)),
        );
    }
    let mut subtract = Function::new("_-_");
    for (id, params, result) in [
        (
            "subtract_kro_timestamp_timestamp",
            [timestamp.clone(), Type::Timestamp],
            &duration,
        ),
        (
            "subtract_timestamp_kro_timestamp",
            [Type::Timestamp, timestamp.clone()],
            &duration,
        ),
        (
            "subtract_kro_timestamp_kro_timestamp",
            [timestamp.clone(), timestamp.clone()],
            &duration,
        ),
        (
            "subtract_kro_timestamp_duration",
            [timestamp.clone(), Type::Duration],
            &timestamp,
        ),
        (
            "subtract_kro_timestamp_kro_duration",
            [timestamp.clone(), duration.clone()],
            &timestamp,
        ),
        (
            "subtract_timestamp_kro_duration",
            [Type::Timestamp, duration.clone()],
            &timestamp,
        ),
        (
            "subtract_kro_duration_duration",
            [duration.clone(), Type::Duration],
            &duration,
        ),
        (
            "subtract_duration_kro_duration",
            [Type::Duration, duration.clone()],
            &duration,
        ),
        (
            "subtract_kro_duration_kro_duration",
            [duration.clone(), duration.clone()],
            &duration,
        ),
    ] {
        subtract = subtract.overload(
            Overload::global(id, &params, result.clone())
                .with_impl(|args, _| arithmetic("_-_", true, args)),
        );
    }
    let mut functions = vec![
        Function::new("now").overload(
            Overload::member("kro_time_now", &[time_type()], timestamp.clone()).with_impl(
                |args, _| match &args[0] {
                    Value::Opaque(opaque) => match opaque.as_any().downcast_ref::<TimeSource>() {
                        Some(source) => Ok(Moving {
                            clock: source.0.clone(),
                            unit: Unit::Timestamp,
                            rate: 1,
                            offset: 0,
                        }
                        .value()),
                        None => Err(no_overload("now", args)),
                    },
                    _ => Err(no_overload("now", args)),
                },
            ),
        ),
        add,
        subtract,
        Function::new("string")
            .overload(
                Overload::global(
                    "string_kro_timestamp",
                    std::slice::from_ref(&timestamp),
                    Type::String,
                )
                .with_impl(moving_string),
            )
            .overload(
                Overload::global(
                    "string_kro_duration",
                    std::slice::from_ref(&duration),
                    Type::String,
                )
                .with_impl(moving_string),
            ),
        Function::new("timestamp").overload(
            Overload::global(
                "timestamp_kro_timestamp",
                std::slice::from_ref(&timestamp),
                timestamp.clone(),
            )
            .with_impl(identity),
        ),
        Function::new("duration").overload(
            Overload::global(
                "duration_kro_duration",
                std::slice::from_ref(&duration),
                duration.clone(),
            )
            .with_impl(identity),
        ),
    ];
    let time_map = Type::map(Type::String, Type::Int);
    let mut with_time_function = Function::new("withTime");
    let mut add_days_function = Function::new("addDays");
    for (suffix, receiver) in [
        ("timestamp", Type::Timestamp),
        ("kro_timestamp", timestamp.clone()),
    ] {
        with_time_function = with_time_function.overload(
            Overload::member(
                &format!("{suffix}_with_time"),
                &[receiver.clone(), time_map.clone(), Type::String],
                Type::Timestamp,
            )
            .with_impl(with_time),
        );
        let result = if suffix == "timestamp" {
            Type::Timestamp
        } else {
            timestamp.clone()
        };
        add_days_function = add_days_function.overload(
            Overload::member(
                &format!("{suffix}_add_days"),
                &[receiver, Type::Int, Type::String],
                result,
            )
            .with_impl(add_days),
        );
    }
    functions.push(with_time_function);
    functions.push(add_days_function);
    for (name, prefix, relation) in [
        ("_<_", "less", Relation::Less),
        ("_<=_", "less_equals", Relation::LessEquals),
        ("_>_", "greater", Relation::Greater),
        ("_>=_", "greater_equals", Relation::GreaterEquals),
    ] {
        let mut function = Function::new(name);
        for (id, params) in [
            (
                "kro_timestamp_timestamp",
                [timestamp.clone(), Type::Timestamp],
            ),
            (
                "timestamp_kro_timestamp",
                [Type::Timestamp, timestamp.clone()],
            ),
            (
                "kro_timestamp_kro_timestamp",
                [timestamp.clone(), timestamp.clone()],
            ),
            ("kro_duration_duration", [duration.clone(), Type::Duration]),
            ("duration_kro_duration", [Type::Duration, duration.clone()]),
            (
                "kro_duration_kro_duration",
                [duration.clone(), duration.clone()],
            ),
        ] {
            function = function.overload(
                Overload::global(&format!("{prefix}_{id}"), &params, Type::Bool)
                    .with_impl(move |args, _| relate(name, relation, args)),
            );
        }
        functions.push(function);
    }
    Library {
        types: vec![
            (TIME_TYPE_NAME.to_owned(), time_type()),
            (MOVING_TIMESTAMP_TYPE_NAME.to_owned(), timestamp),
            (MOVING_DURATION_TYPE_NAME.to_owned(), duration),
        ],
        ..Library::new("kro.time", functions)
    }
}

#[cfg(test)]
mod tests;
