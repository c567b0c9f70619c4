//! What the fuzz targets of single decoders (`fuzz_protobuf`, `fuzz_json_patch`,
//! `fuzz_strategic`, `fuzz_selectors`) share: a proptest configuration with a fixed seed, the
//! checked-in corpus of each target under `testdata/fuzz/<target>/`, and byte mutations.
//!
//! Each target runs a few thousand cases from its fixed seed, so CI sends the same inputs
//! every time; `PROPTEST_RNG_SEED=<number>` explores others and `PROPTEST_CASES=<number>`
//! runs more (the unbounded run in `docs/apiserver.md`). Whatever a new seed finds goes into
//! the target's corpus, which is replayed first and also seeds the mutations.

#![allow(dead_code)]

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngSeed;

/// `cases` cases from the fixed `seed`, unless `PROPTEST_CASES` or `PROPTEST_RNG_SEED` say
/// otherwise; failures are not persisted (the corpus is where a found input goes).
pub fn config(cases: u32, seed: u64) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if matches!(config.rng_seed, RngSeed::Random) {
        config.rng_seed = RngSeed::Fixed(seed);
    }
    config.failure_persistence = None;
    config
}

/// One file of a corpus.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file name.
    pub name: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// The corpus of `target`: every file of `testdata/fuzz/<target>/`, in name order.
///
/// # Panics
/// When the directory is missing or empty: a target without its corpus is a broken target.
pub fn corpus(target: &str) -> Vec<Entry> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/fuzz")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{} is empty", directory.display());
    paths
        .into_iter()
        .map(|path| Entry {
            name: path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes: std::fs::read(&path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display())),
        })
        .collect()
}

/// Bytes a mutation may write: boundaries of integers and varints, and the characters that
/// structure JSON, selectors and paths.
const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff\"\\,=!()[]{}:/%$ \t\n";

/// One change to a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Replaces a byte.
    Set(Index, u8),
    /// Replaces a byte with an interesting one.
    SetInteresting(Index, Index),
    /// Inserts a byte.
    Insert(Index, u8),
    /// Removes up to that many bytes.
    Remove(Index, usize),
    /// Cuts the string short.
    Truncate(Index),
    /// Copies up to that many bytes to another place.
    Duplicate(Index, Index, usize),
}

/// Up to `most` mutations.
pub fn mutations(most: usize) -> impl Strategy<Value = Vec<Mutation>> {
    let one = prop_oneof![
        3 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set(at, byte)),
        3 => (any::<Index>(), any::<Index>())
            .prop_map(|(at, which)| Mutation::SetInteresting(at, which)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Insert(at, byte)),
        2 => (any::<Index>(), 1usize..16).prop_map(|(at, count)| Mutation::Remove(at, count)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), any::<Index>(), 1usize..64)
            .prop_map(|(from, to, count)| Mutation::Duplicate(from, to, count)),
    ];
    prop::collection::vec(one, 0..=most)
}

/// `bytes` with `mutations` made in order.
pub fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let len = bytes.len();
        match mutation {
            Mutation::Insert(at, byte) => {
                let at = at.index(len + 1);
                bytes.insert(at, *byte);
            }
            _ if len == 0 => {}
            Mutation::Set(at, byte) => bytes[at.index(len)] = *byte,
            Mutation::SetInteresting(at, which) => {
                bytes[at.index(len)] = INTERESTING[which.index(INTERESTING.len())];
            }
            Mutation::Remove(at, count) => {
                let at = at.index(len);
                bytes.drain(at..(at + count).min(len));
            }
            Mutation::Truncate(at) => bytes.truncate(at.index(len)),
            Mutation::Duplicate(from, to, count) => {
                let from = from.index(len);
                let copied: Vec<u8> = bytes[from..(from + count).min(len)].to_vec();
                let to = to.index(len + 1);
                bytes.splice(to..to, copied);
            }
        }
    }
    bytes
}
