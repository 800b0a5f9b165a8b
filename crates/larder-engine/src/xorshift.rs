//! A small reproducible pseudo-random source: PFSELFTEST's inputs and the randomized tests'
//! operations. Not for anything a client could predict to its advantage.

/// One step of Marsaglia's xorshift64 (shifts 13, 7, 17); 0 stays 0.
pub(crate) fn step(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// The xorshift64 sequence after `seed`, which must not be 0.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x = step(x);
        x
    }
}
