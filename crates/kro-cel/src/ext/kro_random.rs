//! kro's random library (upstream `pkg/cel/library/random.go`): deterministic "random" values
//! derived from a seed, so that a resource gets the same generated name or port on every
//! reconcile.
//!
//! - `random.seededString(length, seed)`: `length` characters from `0-9a-z`. Character `i` is
//!   the big-endian 32-bit word at byte `4 * (i mod 8)` of SHA-256(`seed`), modulo 36. The
//!   string therefore repeats every 8 characters, exactly as upstream's does. `length` must be
//!   positive.
//! - `random.seededInt(min, max, seed)`: an int in `[min, max)`: `min` plus the first 8 bytes
//!   of SHA-256(`seed`), read as a big-endian unsigned integer, modulo `max - min`. `min` must
//!   be less than `max`.
//!
//! Costs: hashing charges for the seed's length; `seededString` also for the characters it
//! creates.

use sha2::{Digest, Sha256};

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalResult};
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

/// The characters `seededString` picks from.
const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

const SEEDED_STRING: &str = "random.seededString";
const SEEDED_INT: &str = "random.seededInt";

/// The kro.random library.
pub(crate) fn library() -> Library {
    Library::new(
        "kro.random",
        vec![
            Function::new(SEEDED_STRING).overload(
                Overload::global(
                    "random.seededString_int_string",
                    &[Type::Int, Type::String],
                    Type::String,
                )
                .with_impl(|args, budget| match args {
                    [Value::Int(length), Value::String(seed)] => {
                        seeded_string(*length, seed, budget)
                    }
                    _ => Err(no_such_overload(SEEDED_STRING, args)),
                }),
            ),
            Function::new(SEEDED_INT).overload(
                Overload::global(
                    "random.seededInt_int_int_string",
                    &[Type::Int, Type::Int, Type::String],
                    Type::Int,
                )
                .with_impl(|args, budget| match args {
                    [Value::Int(min), Value::Int(max), Value::String(seed)] => {
                        seeded_int(*min, *max, seed, budget)
                    }
                    _ => Err(no_such_overload(SEEDED_INT, args)),
                }),
            ),
        ],
    )
}

fn no_such_overload(name: &str, args: &[Value]) -> EvalError {
    EvalError::no_such_overload(name, &args.iter().collect::<Vec<_>>())
}

fn seed_hash(seed: &str, budget: &mut Budget) -> EvalResult<[u8; 32]> {
    budget.charge(traversal_cost(seed.len()))?;
    Ok(Sha256::digest(seed.as_bytes()).into())
}

/// `random.seededString(length, seed)`
fn seeded_string(length: i64, seed: &str, budget: &mut Budget) -> EvalResult<Value> {
    let invalid = |reason: String| EvalError::invalid_argument(SEEDED_STRING, reason);
    let length = usize::try_from(length)
        .ok()
        .filter(|length| *length > 0)
        .ok_or_else(|| invalid("length must be positive".to_string()))?;
    budget.charge(traversal_cost(length))?;
    let hash = seed_hash(seed, budget)?;
    let mut text = String::new();
    text.try_reserve_exact(length)
        .map_err(|_| invalid(format!("length {length} is too large")))?;
    for index in 0..length {
        let start = (index % 8) * 4;
        let word = u32::from_be_bytes([
            hash[start],
            hash[start + 1],
            hash[start + 2],
            hash[start + 3],
        ]);
        // The remainder is below 36, so it indexes the alphabet.
        text.push(char::from(ALPHABET[(word % 36) as usize]));
    }
    Ok(Value::from(text))
}

/// `random.seededInt(min, max, seed)`
fn seeded_int(min: i64, max: i64, seed: &str, budget: &mut Budget) -> EvalResult<Value> {
    if min >= max {
        return Err(EvalError::invalid_argument(
            SEEDED_INT,
            "min must be less than max",
        ));
    }
    let hash = seed_hash(seed, budget)?;
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    let value = u64::from_be_bytes(first);
    // `max - min` is positive and fits in a u64; wrapping arithmetic gives it exactly even
    // when it overflows an i64, and `min` plus the offset lands in `[min, max)`.
    let range = max.wrapping_sub(min) as u64;
    Ok(Value::Int(min.wrapping_add((value % range) as i64)))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, is_invalid_argument};
    use crate::TypeErrorKind;
    use crate::{Env, Value};

    fn env() -> Env {
        testing::env(super::library())
    }

    #[test]
    fn seeded_strings_are_upstream_kros() {
        // Expected values: upstream kro's random.seededString on the same inputs.
        let env = env();
        let cases = [
            ("random.seededString(8, 'x')", "iot11jnp"),
            ("random.seededString(10, 'test-seed')", "5czheg3o5c"),
            (
                "random.seededString(20, 'test-seed')",
                "5czheg3o5czheg3o5czh",
            ),
            ("random.seededString(10, 'different-seed')", "molvf9mxmo"),
            (
                "random.seededString(40, 'abc')",
                "r6qfjs5dr6qfjs5dr6qfjs5dr6qfjs5dr6qfjs5d",
            ),
            ("random.seededString(1, '')", "e"),
        ];
        for (text, expected) in cases {
            assert_eq!(
                testing::value(&env, text),
                Value::string(expected),
                "{text}"
            );
        }
        let program = env
            .compile("random.seededString(8, 'x')")
            .expect("compiles");
        for _ in 0..3 {
            assert_eq!(
                program.evaluate(&crate::NoVariables),
                Ok(Value::string("iot11jnp"))
            );
        }
    }

    #[test]
    fn seeded_strings_repeat_every_eight_characters() {
        let env = env();
        let Value::String(text) = testing::value(&env, "random.seededString(20, 'test-seed')")
        else {
            panic!("not a string");
        };
        assert_eq!(text.len(), 20);
        assert_eq!(&text[..8], &text[8..16]);
        assert_eq!(&text[..4], &text[16..]);
        assert!(text.bytes().all(|byte| super::ALPHABET.contains(&byte)));
    }

    #[test]
    fn seeded_ints_are_upstream_kros() {
        // Expected values: upstream kro's random.seededInt on the same inputs.
        let env = env();
        let cases = [
            ("random.seededInt(0, 100, 'test-seed')", 56),
            ("random.seededInt(30000, 32768, 'my-service')", 31247),
            ("random.seededInt(5, 6, 'seed')", 5),
            ("random.seededInt(-100, -50, 'seed')", -58),
            ("random.seededInt(0, 1000000, 'seed-a')", 616453),
            ("random.seededInt(0, 1000000, 'seed-b')", 11447),
            (
                "random.seededInt(-9223372036854775808, 9223372036854775807, 'x')",
                -5948949156983295932,
            ),
            (
                "random.seededInt(-9223372036854775808, 0, 'x')",
                -5948949156983295932,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(testing::value(&env, text), Value::Int(expected), "{text}");
        }
    }

    #[test]
    fn empty_or_inverted_ranges_and_nonpositive_lengths_are_errors() {
        testing::assert_errors(
            &env(),
            &[
                ("random.seededString(0, 'x')", is_invalid_argument),
                ("random.seededString(-1, 'x')", is_invalid_argument),
                ("random.seededInt(5, 5, 'seed')", is_invalid_argument),
                ("random.seededInt(10, 5, 'seed')", is_invalid_argument),
            ],
        );
    }

    #[test]
    fn wrong_argument_types_are_rejected_by_the_checker() {
        let env = env();
        for text in [
            "random.seededString('10', 'seed')",
            "random.seededString(10, 123)",
            "random.seededString(10)",
            "random.seededInt('a', 10, 'seed')",
            "random.seededInt(0, 10, 123)",
            "random.seededInt(0, 10)",
        ] {
            assert!(
                matches!(
                    testing::check_error(&env, text),
                    TypeErrorKind::NoMatchingOverload { .. }
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn long_strings_cost_in_proportion_to_their_length() {
        let env = env();
        let short =
            testing::cost_with_input(&env, "random.seededString(10, x)", Value::string("s"));
        let long =
            testing::cost_with_input(&env, "random.seededString(10000, x)", Value::string("s"));
        assert!(long >= short + 900, "{short} {long}");
        let limited = env
            .with_cost_limit(Some(100))
            .compile("random.seededString(100000, 'seed')")
            .expect("compiles")
            .evaluate(&crate::NoVariables);
        assert!(matches!(
            limited.map_err(|error| error.kind().clone()),
            Err(crate::EvalErrorKind::CostLimitExceeded { .. })
        ));
    }
}
