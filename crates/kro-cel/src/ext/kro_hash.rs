//! kro's hash library (upstream `pkg/cel/library/hash.go`): digests of a string's UTF-8 bytes,
//! as bytes (pass them to `base64.encode` for text).
//!
//! - `hash.fnv64a(string) -> bytes`: FNV-1a, 64 bits, big-endian (8 bytes); upstream's
//!   recommended choice for checksums and names.
//! - `hash.sha256(string) -> bytes`: SHA-256 (32 bytes).
//! - `hash.md5(string) -> bytes`: MD5 (16 bytes), for compatibility only.
//!
//! Costs: one unit per ten bytes hashed.

use std::sync::Arc;

use md5::Md5;
use sha2::{Digest, Sha256};

use crate::cost::traversal_cost;
use crate::error::EvalError;
use crate::functions::{Function, Library, Overload};
use crate::types::Type;
use crate::value::Value;

/// FNV-1a's 64-bit offset basis.
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV's 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv64a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

/// A `hash.<name>(string) -> bytes` function.
fn hash_function(name: &'static str, digest: fn(&[u8]) -> Vec<u8>) -> Function {
    Function::new(name).overload(
        Overload::global(&format!("{name}_string"), &[Type::String], Type::Bytes).with_impl(
            move |args, budget| match args {
                [Value::String(text)] => {
                    budget.charge(traversal_cost(text.len()))?;
                    Ok(Value::Bytes(Arc::from(digest(text.as_bytes()))))
                }
                _ => Err(EvalError::no_such_overload(
                    name,
                    &args.iter().collect::<Vec<_>>(),
                )),
            },
        ),
    )
}

/// The kro.hash library.
pub(crate) fn library() -> Library {
    Library::new(
        "kro.hash",
        vec![
            hash_function("hash.fnv64a", |bytes| fnv64a(bytes).to_be_bytes().to_vec()),
            hash_function("hash.sha256", |bytes| Sha256::digest(bytes).to_vec()),
            hash_function("hash.md5", |bytes| Md5::digest(bytes).to_vec()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use crate::ext::encoders;
    use crate::{Env, TypeErrorKind, Value};

    fn env() -> Env {
        testing::env(super::library()).with_library(encoders::library())
    }

    #[test]
    fn digests_match_upstream_kro() {
        // Expected values: upstream kro's hash functions on the same inputs, base64-encoded.
        let env = env();
        let cases = [
            ("hash.fnv64a('hello world')", "d5pl5wI80uc="),
            ("hash.fnv64a('')", "y/Kc5IQiIyU="),
            (
                "hash.sha256('hello world')",
                "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=",
            ),
            (
                "hash.sha256('')",
                "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
            ),
            ("hash.md5('hello world')", "XrY7u+Ae7tCTyyK7j1rNww=="),
            ("hash.md5('')", "1B2M2Y8AsgTpgAmY7PhCfg=="),
        ];
        for (text, expected) in cases {
            let encoded = format!("base64.encode({text})");
            assert_eq!(
                testing::value(&env, &encoded),
                Value::string(expected),
                "{text}"
            );
        }
    }

    #[test]
    fn digests_have_their_algorithms_sizes() {
        let env = env();
        for (text, size) in [
            ("size(hash.fnv64a('kro'))", 8),
            ("size(hash.sha256('kro'))", 32),
            ("size(hash.md5('kro'))", 16),
        ] {
            assert_eq!(testing::value(&env, text), Value::Int(size), "{text}");
        }
    }

    #[test]
    fn non_string_arguments_are_rejected_by_the_checker() {
        let env = env();
        for text in ["hash.fnv64a(123)", "hash.sha256(b'x')", "hash.md5(1.0)"] {
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
    fn hashing_costs_in_proportion_to_the_input() {
        let env = env();
        let short = testing::cost_with_input(&env, "hash.sha256(x)", Value::string("a"));
        let long =
            testing::cost_with_input(&env, "hash.sha256(x)", Value::from("a".repeat(10_000)));
        assert!(long >= short + 999, "{short} {long}");
    }
}
