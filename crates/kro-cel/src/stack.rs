//! Stack growth for the recursive phases.
//!
//! Parsing, checking, planning and evaluation recurse over the tree. The parser bounds the
//! tree's depth, but how much stack one level takes depends on the build (an unoptimised
//! build uses many times more). Rather than pick a limit that is safe only in release builds,
//! each recursive step makes sure some stack is left, moving to a fresh heap-allocated segment
//! when it runs low.

/// Stack that must remain before a recursive step runs on the current segment.
const RED_ZONE_BYTES: usize = 128 * 1024;
/// The size of each additional segment.
const SEGMENT_BYTES: usize = 2 * 1024 * 1024;

/// Runs `f`, first moving to a new stack segment if the current one is nearly used up.
#[inline]
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE_BYTES, SEGMENT_BYTES, f)
}
