//! A small reproducible pseudo-random source: PFSELFTEST's inputs and the randomized tests'
//! operations. Not for anything a client could predict to its advantage.

/// Marsaglia's xorshift64 (shifts 13, 7, 17) from `seed`, which must not be 0 (0 stays 0).
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
