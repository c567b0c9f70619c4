//! The standard library: every operator and function of the CEL specification.

pub(crate) mod conversions;
pub(crate) mod operators;
pub(crate) mod optionals;
pub(crate) mod strings;
mod time;

use crate::ast::operators as names;
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

use operators::Relation;

/// The standard library: operators, `size`, string functions, conversions and time accessors.
pub fn library() -> Library {
    let mut functions = operator_functions();
    functions.extend(conversions::functions());
    functions.extend(strings::functions());
    functions.extend(time::functions());
    Library::new("standard", functions)
}

fn a() -> Type {
    Type::param("A")
}

fn operator_functions() -> Vec<Function> {
    let list_a = || Type::list(a());
    let map_kv = || Type::map(Type::param("K"), Type::param("V"));
    let mut functions = vec![
        Function::new(names::LOGICAL_NOT).overload(
            Overload::global("logical_not", &[Type::Bool], Type::Bool)
                .with_impl(|args, _| operators::not(&args[0])),
        ),
        Function::new(names::LOGICAL_AND).overload(Overload::global(
            "logical_and",
            &[Type::Bool, Type::Bool],
            Type::Bool,
        )),
        Function::new(names::LOGICAL_OR).overload(Overload::global(
            "logical_or",
            &[Type::Bool, Type::Bool],
            Type::Bool,
        )),
        Function::new(names::CONDITIONAL).overload(Overload::global(
            "conditional",
            &[Type::Bool, a(), a()],
            a(),
        )),
        Function::new(names::NOT_STRICTLY_FALSE).overload(Overload::global(
            "not_strictly_false",
            &[Type::Bool],
            Type::Bool,
        )),
        Function::new(names::NEGATE)
            .overload(
                Overload::global("negate_int64", &[Type::Int], Type::Int)
                    .with_impl(|args, _| operators::negate(&args[0])),
            )
            .overload(
                Overload::global("negate_double", &[Type::Double], Type::Double)
                    .with_impl(|args, _| operators::negate(&args[0])),
            ),
        Function::new(names::EQUALS).overload(
            Overload::global("equals", &[a(), a()], Type::Bool).with_impl(|args, budget| {
                Ok(Value::Bool(operators::equality(
                    &args[0], &args[1], false, budget,
                )?))
            }),
        ),
        Function::new(names::NOT_EQUALS).overload(
            Overload::global("not_equals", &[a(), a()], Type::Bool).with_impl(|args, budget| {
                Ok(Value::Bool(operators::equality(
                    &args[0], &args[1], true, budget,
                )?))
            }),
        ),
        Function::new(names::INDEX)
            .overload(
                Overload::global("index_list", &[list_a(), Type::Int], a())
                    .with_impl(|args, _| operators::index(&args[0], &args[1])),
            )
            .overload(
                Overload::global("index_map", &[map_kv(), Type::param("K")], Type::param("V"))
                    .with_impl(|args, budget| {
                        operators::charge_lookup(&args[1], budget)?;
                        operators::index(&args[0], &args[1])
                    }),
            ),
        Function::new(names::IN)
            .overload(
                Overload::global("in_list", &[a(), list_a()], Type::Bool)
                    .with_impl(|args, budget| operators::contained_in(&args[0], &args[1], budget)),
            )
            .overload(
                Overload::global("in_map", &[Type::param("K"), map_kv()], Type::Bool)
                    .with_impl(|args, budget| operators::contained_in(&args[0], &args[1], budget)),
            ),
        size_function(),
        // Used by the expansion of the two-variable `transformMap` macros; evaluated natively.
        Function::new(names::MAP_INSERT)
            .overload(Overload::global(
                "cel_@mapInsert_map_key_value",
                &[map_kv(), Type::param("K"), Type::param("V")],
                map_kv(),
            ))
            .overload(Overload::global(
                "cel_@mapInsert_map_map",
                &[map_kv(), map_kv()],
                map_kv(),
            )),
    ];
    functions.extend(arithmetic_functions());
    for relation in [
        Relation::Less,
        Relation::LessEquals,
        Relation::Greater,
        Relation::GreaterEquals,
    ] {
        functions.push(relation_function(relation));
    }
    functions
}

fn size_function() -> Function {
    let mut size = Function::new("size");
    let sized = [
        ("string", Type::String),
        ("bytes", Type::Bytes),
        ("list", Type::list(a())),
        ("map", Type::map(Type::param("K"), Type::param("V"))),
    ];
    for (name, ty) in sized {
        size = size
            .overload(
                Overload::global(
                    &format!("size_{name}"),
                    std::slice::from_ref(&ty),
                    Type::Int,
                )
                .with_impl(|args, budget| operators::size(&args[0], budget)),
            )
            .overload(
                Overload::member(&format!("{name}_size"), &[ty], Type::Int)
                    .with_impl(|args, budget| operators::size(&args[0], budget)),
            );
    }
    size
}

fn arithmetic_functions() -> Vec<Function> {
    let numbers = [
        ("int64", Type::Int),
        ("uint64", Type::Uint),
        ("double", Type::Double),
    ];
    let mut add = Function::new(names::ADD);
    let mut subtract = Function::new(names::SUBTRACT);
    let mut multiply = Function::new(names::MULTIPLY);
    let mut divide = Function::new(names::DIVIDE);
    let mut modulo = Function::new(names::MODULO);
    for (name, ty) in &numbers {
        let pair = [ty.clone(), ty.clone()];
        add = add.overload(
            Overload::global(&format!("add_{name}"), &pair, ty.clone())
                .with_impl(|args, budget| operators::add(&args[0], &args[1], budget)),
        );
        subtract = subtract.overload(
            Overload::global(&format!("subtract_{name}"), &pair, ty.clone())
                .with_impl(|args, _| operators::subtract(&args[0], &args[1])),
        );
        multiply = multiply.overload(
            Overload::global(&format!("multiply_{name}"), &pair, ty.clone())
                .with_impl(|args, _| operators::multiply(&args[0], &args[1])),
        );
        divide = divide.overload(
            Overload::global(&format!("divide_{name}"), &pair, ty.clone())
                .with_impl(|args, _| operators::divide(&args[0], &args[1])),
        );
        if *ty != Type::Double {
            modulo = modulo.overload(
                Overload::global(&format!("modulo_{name}"), &pair, ty.clone())
                    .with_impl(|args, _| operators::modulo(&args[0], &args[1])),
            );
        }
    }
    let adders = [
        ("add_string", [Type::String, Type::String], Type::String),
        ("add_bytes", [Type::Bytes, Type::Bytes], Type::Bytes),
        (
            "add_list",
            [Type::list(a()), Type::list(a())],
            Type::list(a()),
        ),
        (
            "add_timestamp_duration",
            [Type::Timestamp, Type::Duration],
            Type::Timestamp,
        ),
        (
            "add_duration_timestamp",
            [Type::Duration, Type::Timestamp],
            Type::Timestamp,
        ),
        (
            "add_duration_duration",
            [Type::Duration, Type::Duration],
            Type::Duration,
        ),
    ];
    for (id, params, result) in adders {
        add = add.overload(
            Overload::global(id, &params, result)
                .with_impl(|args, budget| operators::add(&args[0], &args[1], budget)),
        );
    }
    let subtracters = [
        (
            "subtract_timestamp_timestamp",
            [Type::Timestamp, Type::Timestamp],
            Type::Duration,
        ),
        (
            "subtract_timestamp_duration",
            [Type::Timestamp, Type::Duration],
            Type::Timestamp,
        ),
        (
            "subtract_duration_duration",
            [Type::Duration, Type::Duration],
            Type::Duration,
        ),
    ];
    for (id, params, result) in subtracters {
        subtract = subtract.overload(
            Overload::global(id, &params, result)
                .with_impl(|args, _| operators::subtract(&args[0], &args[1])),
        );
    }
    vec![add, subtract, multiply, divide, modulo]
}

fn relation_function(relation: Relation) -> Function {
    let prefix = match relation {
        Relation::Less => "less",
        Relation::LessEquals => "less_equals",
        Relation::Greater => "greater",
        Relation::GreaterEquals => "greater_equals",
    };
    let same_type = [
        ("bool", Type::Bool),
        ("int64", Type::Int),
        ("uint64", Type::Uint),
        ("double", Type::Double),
        ("string", Type::String),
        ("bytes", Type::Bytes),
        ("timestamp", Type::Timestamp),
        ("duration", Type::Duration),
    ];
    let mixed = [
        ("int64_uint64", Type::Int, Type::Uint),
        ("int64_double", Type::Int, Type::Double),
        ("uint64_int64", Type::Uint, Type::Int),
        ("uint64_double", Type::Uint, Type::Double),
        ("double_int64", Type::Double, Type::Int),
        ("double_uint64", Type::Double, Type::Uint),
    ];
    let signatures = same_type
        .into_iter()
        .map(|(name, ty)| (name, ty.clone(), ty))
        .chain(mixed);
    let mut function = Function::new(relation.function());
    for (suffix, left, right) in signatures {
        let implementation = move |args: &[Value], budget: &mut crate::cost::Budget| {
            operators::relate(relation, &args[0], &args[1], budget)
        };
        function = function.overload(
            Overload::global(&format!("{prefix}_{suffix}"), &[left, right], Type::Bool)
                .with_impl(implementation),
        );
    }
    function
}
