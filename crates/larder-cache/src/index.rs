//! Index bucket arithmetic shared by the builder and the reader: home bucket, tag, lanes.

use crate::view;

/// The home bucket of a hash among `home_bucket_count` buckets: the high bits of a 128-bit
/// product, so any bucket count works (no power-of-two rounding, no modulo).
#[inline(always)]
pub(crate) fn home_bucket(hash: u64, home_bucket_count: u64) -> u64 {
    ((u128::from(hash) * u128::from(home_bucket_count)) >> 64) as u64
}

/// The tag byte stored for a key in its bucket: the hash's low byte, never 0 (0 marks an
/// empty lane). The home bucket comes from the high bits, so the two are independent.
#[inline(always)]
pub(crate) fn bucket_tag(hash: u64) -> u8 {
    let t = hash as u8;
    t | u8::from(t == 0)
}

/// Bit masks of the lanes among a bucket's first 16 bytes that hold `tag`, and that are empty.
#[inline(always)]
pub(crate) fn lane_masks(line: &[u8], tag: u8) -> (u32, u32) {
    let mut group = [0u8; 16];
    group.copy_from_slice(&line[..16]);
    view::byte_masks(&group, tag)
}

/// The record offset in `lane` of a bucket.
#[inline(always)]
pub(crate) fn lane_offset<const WIDE: bool>(line: &[u8], lane: usize) -> u64 {
    if WIDE {
        let mut b = [0u8; 8];
        b.copy_from_slice(&line[8 + 8 * lane..16 + 8 * lane]);
        u64::from_le_bytes(b)
    } else {
        let mut b = [0u8; 4];
        b.copy_from_slice(&line[16 + 4 * lane..20 + 4 * lane]);
        u64::from(u32::from_le_bytes(b))
    }
}
