//! Timestamp and duration accessors: `getFullYear()`, `getHours()` ... with optional time zones.

use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Overload};
use crate::time::CalendarFields;
use crate::types::Type;
use crate::value::Value;

/// Which timestamp field an accessor reads.
type FieldReader = fn(&CalendarFields) -> i64;

/// How a duration accessor converts the duration's nanoseconds.
type DurationReader = fn(i128) -> i128;

fn timestamp_field(name: &str, args: &[Value], read: FieldReader) -> EvalResult<Value> {
    let (timestamp, zone) = match args {
        [Value::Timestamp(t)] => (t, None),
        [Value::Timestamp(t), Value::String(zone)] => (t, Some(zone.as_ref())),
        _ => {
            return Err(EvalError::no_such_overload(
                name,
                &args.iter().collect::<Vec<_>>(),
            ));
        }
    };
    Ok(Value::Int(read(&timestamp.fields_in(zone)?)))
}

pub(crate) fn functions() -> Vec<Function> {
    let timestamp_fields: [(&'static str, &'static str, FieldReader); 10] = [
        ("getFullYear", "timestamp_to_year", |f| f.year),
        ("getMonth", "timestamp_to_month", |f| f.month0),
        ("getDate", "timestamp_to_day_of_month_1_based", |f| {
            f.day_of_month0 + 1
        }),
        ("getDayOfMonth", "timestamp_to_day_of_month", |f| {
            f.day_of_month0
        }),
        ("getDayOfYear", "timestamp_to_day_of_year", |f| {
            f.day_of_year0
        }),
        ("getDayOfWeek", "timestamp_to_day_of_week", |f| {
            f.day_of_week
        }),
        ("getHours", "timestamp_to_hours", |f| f.hours),
        ("getMinutes", "timestamp_to_minutes", |f| f.minutes),
        ("getSeconds", "timestamp_to_seconds", |f| f.seconds),
        ("getMilliseconds", "timestamp_to_milliseconds", |f| {
            f.milliseconds
        }),
    ];
    let duration_fields: [(&'static str, &'static str, DurationReader); 4] = [
        ("getHours", "duration_to_hours", |nanos| {
            nanos / 3_600_000_000_000
        }),
        ("getMinutes", "duration_to_minutes", |nanos| {
            nanos / 60_000_000_000
        }),
        ("getSeconds", "duration_to_seconds", |nanos| {
            nanos / 1_000_000_000
        }),
        ("getMilliseconds", "duration_to_milliseconds", |nanos| {
            (nanos % 1_000_000_000) / 1_000_000
        }),
    ];
    let mut functions = Vec::new();
    for (name, id, read) in timestamp_fields {
        let mut function = Function::new(name)
            .overload(
                Overload::member(id, &[Type::Timestamp], Type::Int)
                    .with_impl(move |args, _| timestamp_field(name, args, read)),
            )
            .overload(
                Overload::member(
                    &format!("{id}_with_tz"),
                    &[Type::Timestamp, Type::String],
                    Type::Int,
                )
                .with_impl(move |args, _| timestamp_field(name, args, read)),
            );
        if let Some((_, duration_id, convert)) = duration_fields
            .iter()
            .find(|(duration_name, _, _)| *duration_name == name)
        {
            let convert = *convert;
            function = function.overload(
                Overload::member(duration_id, &[Type::Duration], Type::Int).with_impl(
                    move |args, _| match args {
                        [Value::Duration(d)] => Ok(Value::Int(convert(d.total_nanos()) as i64)),
                        _ => Err(EvalError::no_such_overload(
                            name,
                            &args.iter().collect::<Vec<_>>(),
                        )),
                    },
                ),
            );
        }
        functions.push(function);
    }
    functions
}
