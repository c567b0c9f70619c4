//! The math extension (cel-go's `ext.Math`, latest version).
//!
//! - `math.greatest(...)` and `math.least(...)`: macros over one to many numbers, or one list
//!   of numbers, expanding into the internal `math.@max` / `math.@min`. Int, uint and double
//!   arguments mix and compare by numeric value; the winning argument keeps its type, and on a
//!   tie the earlier argument wins. NaN cannot be ordered and is an error.
//! - `math.ceil`, `floor`, `round` (half away from zero), `trunc`: `double -> double`.
//! - `math.isNaN`, `isInf`, `isFinite`: `double -> bool`.
//! - `math.abs` and `math.sign` over int, uint and double (`abs` of the smallest int
//!   overflows); `math.sqrt` over all three, giving a double.
//! - `math.bitAnd`, `bitOr`, `bitXor` over two ints or two uints; `math.bitNot` over one.
//! - `math.bitShiftLeft` and `bitShiftRight` of an int or uint by an int number of bits:
//!   shifting by 64 or more gives 0, a negative shift is an error, and an int shifted right
//!   is shifted as its unsigned bits (zeros come in at the top).

use std::cmp::Ordering;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::macros::{MAX_FUNCTION, MIN_FUNCTION};
use crate::types::Type;
use crate::value::Value;

/// The math library.
pub(crate) fn library() -> Library {
    let mut functions = vec![
        extremum_function(Extremum::Greatest),
        extremum_function(Extremum::Least),
    ];
    functions.extend(rounding_functions());
    functions.extend(classification_functions());
    functions.extend([abs_function(), sign_function(), sqrt_function()]);
    functions.extend(bitwise_functions());
    functions.extend(shift_functions());
    Library {
        name: "math",
        functions,
        object_types: Vec::new(),
    }
}

/// Which end of the order `math.@max` and `math.@min` look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extremum {
    Greatest,
    Least,
}

impl Extremum {
    /// The internal function the macro expands into.
    fn internal_name(self) -> &'static str {
        match self {
            Extremum::Greatest => MAX_FUNCTION,
            Extremum::Least => MIN_FUNCTION,
        }
    }

    /// The name users wrote, for error messages.
    fn macro_name(self) -> &'static str {
        match self {
            Extremum::Greatest => "math.greatest",
            Extremum::Least => "math.least",
        }
    }

    /// The overload-id stem, as in cel-go (`math_@max_int_uint`).
    fn id_stem(self) -> &'static str {
        match self {
            Extremum::Greatest => "math_@max",
            Extremum::Least => "math_@min",
        }
    }

    /// Whether `candidate` replaces `current` (ties keep the earlier value).
    fn prefers(self, candidate: &Value, current: &Value) -> EvalResult<bool> {
        let ordering = candidate
            .compare(current)
            .ok_or_else(|| unordered(self, candidate, current))?;
        Ok(match self {
            Extremum::Greatest => ordering == Ordering::Greater,
            Extremum::Least => ordering == Ordering::Less,
        })
    }
}

fn is_number(value: &Value) -> bool {
    matches!(value, Value::Int(_) | Value::Uint(_) | Value::Double(_))
}

/// The error for two values `compare` cannot order: NaN, or something that is not a number.
fn unordered(which: Extremum, a: &Value, b: &Value) -> EvalError {
    if is_number(a) && is_number(b) {
        EvalError::invalid_argument(which.macro_name(), "NaN values cannot be ordered")
    } else {
        EvalError::no_such_overload(which.macro_name(), &[a, b])
    }
}

fn number_type_name(ty: &Type) -> &'static str {
    match ty {
        Type::Int => "int",
        Type::Uint => "uint",
        _ => "double",
    }
}

fn extremum_function(which: Extremum) -> Function {
    let numbers = [Type::Double, Type::Int, Type::Uint];
    let stem = which.id_stem();
    let implementation = move |args: &[Value], budget: &mut Budget| extremum(which, args, budget);
    let mut function = Function::new(which.internal_name());
    for ty in &numbers {
        let id = format!("{stem}_{}", number_type_name(ty));
        function = function.overload(
            Overload::global(&id, std::slice::from_ref(ty), ty.clone()).with_impl(implementation),
        );
    }
    for first in &numbers {
        for second in &numbers {
            let id = format!(
                "{stem}_{}_{}",
                number_type_name(first),
                number_type_name(second)
            );
            let result = if first == second {
                first.clone()
            } else {
                Type::Dyn
            };
            function = function.overload(
                Overload::global(&id, &[first.clone(), second.clone()], result)
                    .with_impl(implementation),
            );
        }
    }
    for ty in &numbers {
        let id = format!("{stem}_list_{}", number_type_name(ty));
        function = function.overload(
            Overload::global(&id, &[Type::list(ty.clone())], ty.clone()).with_impl(implementation),
        );
    }
    function
}

/// `math.@max` / `math.@min` of one number, two numbers, or a non-empty list of numbers.
fn extremum(which: Extremum, args: &[Value], budget: &mut Budget) -> EvalResult<Value> {
    let name = which.macro_name();
    let candidates: &[Value] = match args {
        [Value::List(items)] => {
            budget.charge(traversal_cost(items.len()))?;
            items
        }
        [single] | [single, _] if !is_number(single) => {
            return Err(EvalError::no_such_overload(
                name,
                &args.iter().collect::<Vec<_>>(),
            ));
        }
        [_] | [_, _] => args,
        _ => {
            return Err(EvalError::no_such_overload(
                name,
                &args.iter().collect::<Vec<_>>(),
            ));
        }
    };
    let Some((first, rest)) = candidates.split_first() else {
        return Err(EvalError::invalid_argument(
            name,
            "the list argument must not be empty",
        ));
    };
    if !is_number(first) {
        return Err(EvalError::no_such_overload(name, &[first]));
    }
    let mut best = first;
    for candidate in rest {
        if !is_number(candidate) {
            return Err(EvalError::no_such_overload(name, &[candidate]));
        }
        if which.prefers(candidate, best)? {
            best = candidate;
        }
    }
    Ok(best.clone())
}

/// A `double -> R` function with one overload, `math_<short>_double`.
fn double_function(name: &'static str, result: Type, operation: fn(f64) -> Value) -> Function {
    let short = name.trim_start_matches("math.");
    Function::new(name).overload(
        Overload::global(&format!("math_{short}_double"), &[Type::Double], result).with_impl(
            move |args, _| match args {
                [Value::Double(x)] => Ok(operation(*x)),
                _ => Err(EvalError::no_such_overload(
                    name,
                    &args.iter().collect::<Vec<_>>(),
                )),
            },
        ),
    )
}

fn rounding_functions() -> [Function; 4] {
    [
        double_function("math.ceil", Type::Double, |x| Value::Double(x.ceil())),
        double_function("math.floor", Type::Double, |x| Value::Double(x.floor())),
        double_function("math.round", Type::Double, |x| Value::Double(x.round())),
        double_function("math.trunc", Type::Double, |x| Value::Double(x.trunc())),
    ]
}

fn classification_functions() -> [Function; 3] {
    [
        double_function("math.isNaN", Type::Bool, |x| Value::Bool(x.is_nan())),
        double_function("math.isInf", Type::Bool, |x| Value::Bool(x.is_infinite())),
        double_function("math.isFinite", Type::Bool, |x| Value::Bool(x.is_finite())),
    ]
}

/// A function of one number with an overload per numeric type, `math_<short>_<type>`, all
/// sharing `operation`; `result` gives each overload's result type from its parameter type.
fn numeric_function(
    name: &'static str,
    result: fn(&Type) -> Type,
    operation: fn(&Value) -> Option<EvalResult<Value>>,
) -> Function {
    let short = name.trim_start_matches("math.");
    let mut function = Function::new(name);
    for ty in [Type::Double, Type::Int, Type::Uint] {
        let id = format!("math_{short}_{}", number_type_name(&ty));
        let result = result(&ty);
        function = function.overload(Overload::global(&id, &[ty], result).with_impl(
            move |args, _| match args {
                [x] => operation(x).unwrap_or_else(|| Err(EvalError::no_such_overload(name, &[x]))),
                _ => Err(EvalError::no_such_overload(
                    name,
                    &args.iter().collect::<Vec<_>>(),
                )),
            },
        ));
    }
    function
}

fn abs_function() -> Function {
    numeric_function("math.abs", Type::clone, |x| match x {
        Value::Int(i) => Some(
            i.checked_abs()
                .map(Value::Int)
                .ok_or_else(|| EvalError::new(EvalErrorKind::Overflow("math.abs"))),
        ),
        Value::Uint(u) => Some(Ok(Value::Uint(*u))),
        Value::Double(d) => Some(Ok(Value::Double(d.abs()))),
        _ => None,
    })
}

fn sign_function() -> Function {
    numeric_function("math.sign", Type::clone, |x| match x {
        Value::Int(i) => Some(Ok(Value::Int(i.signum()))),
        Value::Uint(u) => Some(Ok(Value::Uint(u64::from(*u != 0)))),
        Value::Double(d) if d.is_nan() => Some(Ok(Value::Double(*d))),
        Value::Double(d) => Some(Ok(Value::Double(match d.partial_cmp(&0.0) {
            Some(Ordering::Greater) => 1.0,
            Some(Ordering::Less) => -1.0,
            _ => 0.0,
        }))),
        _ => None,
    })
}

fn sqrt_function() -> Function {
    numeric_function(
        "math.sqrt",
        |_| Type::Double,
        |x| match x {
            Value::Int(i) => Some(Ok(Value::Double((*i as f64).sqrt()))),
            Value::Uint(u) => Some(Ok(Value::Double((*u as f64).sqrt()))),
            Value::Double(d) => Some(Ok(Value::Double(d.sqrt()))),
            _ => None,
        },
    )
}

/// A binary bitwise function over two ints or two uints.
fn bitwise_function(
    name: &'static str,
    int: fn(i64, i64) -> i64,
    uint: fn(u64, u64) -> u64,
) -> Function {
    let short = name.trim_start_matches("math.");
    let implementation = move |args: &[Value], _: &mut Budget| match args {
        [Value::Int(a), Value::Int(b)] => Ok(Value::Int(int(*a, *b))),
        [Value::Uint(a), Value::Uint(b)] => Ok(Value::Uint(uint(*a, *b))),
        _ => Err(EvalError::no_such_overload(
            name,
            &args.iter().collect::<Vec<_>>(),
        )),
    };
    Function::new(name)
        .overload(
            Overload::global(
                &format!("math_{short}_int_int"),
                &[Type::Int, Type::Int],
                Type::Int,
            )
            .with_impl(implementation),
        )
        .overload(
            Overload::global(
                &format!("math_{short}_uint_uint"),
                &[Type::Uint, Type::Uint],
                Type::Uint,
            )
            .with_impl(implementation),
        )
}

fn bitwise_functions() -> [Function; 4] {
    let not = |args: &[Value], _: &mut Budget| match args {
        [Value::Int(a)] => Ok(Value::Int(!a)),
        [Value::Uint(a)] => Ok(Value::Uint(!a)),
        _ => Err(EvalError::no_such_overload(
            "math.bitNot",
            &args.iter().collect::<Vec<_>>(),
        )),
    };
    [
        bitwise_function("math.bitAnd", |a, b| a & b, |a, b| a & b),
        bitwise_function("math.bitOr", |a, b| a | b, |a, b| a | b),
        bitwise_function("math.bitXor", |a, b| a ^ b, |a, b| a ^ b),
        // cel-go's overload ids for bitNot name the result type twice.
        Function::new("math.bitNot")
            .overload(
                Overload::global("math_bitNot_int_int", &[Type::Int], Type::Int).with_impl(not),
            )
            .overload(
                Overload::global("math_bitNot_uint_uint", &[Type::Uint], Type::Uint).with_impl(not),
            ),
    ]
}

/// The direction of a bit shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shift {
    Left,
    Right,
}

/// Shifts the 64 bits of `bits` by `offset`; 64 or more shifts every bit out.
fn shift_bits(direction: Shift, bits: u64, offset: i64, name: &str) -> EvalResult<u64> {
    if offset < 0 {
        return Err(EvalError::invalid_argument(
            name,
            format!("negative offset: {offset}"),
        ));
    }
    let shifted = u32::try_from(offset)
        .ok()
        .and_then(|offset| match direction {
            Shift::Left => bits.checked_shl(offset),
            Shift::Right => bits.checked_shr(offset),
        });
    Ok(shifted.unwrap_or(0))
}

fn shift_function(name: &'static str, direction: Shift) -> Function {
    let short = name.trim_start_matches("math.");
    let implementation = move |args: &[Value], _: &mut Budget| match args {
        [Value::Int(value), Value::Int(offset)] => {
            // Shift the two's complement bits (a right shift brings in zeros, as for uints);
            // the casts reinterpret the bits and cannot fail.
            let shifted = shift_bits(direction, *value as u64, *offset, name)?;
            Ok(Value::Int(shifted as i64))
        }
        [Value::Uint(value), Value::Int(offset)] => {
            Ok(Value::Uint(shift_bits(direction, *value, *offset, name)?))
        }
        _ => Err(EvalError::no_such_overload(
            name,
            &args.iter().collect::<Vec<_>>(),
        )),
    };
    Function::new(name)
        .overload(
            Overload::global(
                &format!("math_{short}_int_int"),
                &[Type::Int, Type::Int],
                Type::Int,
            )
            .with_impl(implementation),
        )
        .overload(
            Overload::global(
                &format!("math_{short}_uint_int"),
                &[Type::Uint, Type::Int],
                Type::Uint,
            )
            .with_impl(implementation),
        )
}

fn shift_functions() -> [Function; 2] {
    [
        shift_function("math.bitShiftLeft", Shift::Left),
        shift_function("math.bitShiftRight", Shift::Right),
    ]
}

#[cfg(test)]
mod tests;
