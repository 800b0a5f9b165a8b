//! Integers written in decimal into stack buffers, without allocating: what values, counters,
//! stream IDs and the replication stream all write.

/// Writes `v`'s decimal digits to end just before `buf[end]` and returns where they start.
/// `end` must leave room for 20 digits (`u64::MAX`) when `v` can be that large.
#[inline]
pub fn digits_before(buf: &mut [u8], end: usize, mut v: u64) -> usize {
    let mut at = end;
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return at;
        }
    }
}

/// Room for any `i64` in decimal: "-9223372036854775808".
pub const I64_MAX_DIGITS: usize = 20;

/// `v` in decimal, written into the end of `buf`.
#[inline]
pub fn format_i64(v: i64, buf: &mut [u8; I64_MAX_DIGITS]) -> &[u8] {
    let mut at = digits_before(buf, I64_MAX_DIGITS, v.unsigned_abs());
    if v < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_std_writes_them() {
        for v in [0, 1, 9, 10, -1, -10, 1234567890, i64::MAX, i64::MIN] {
            let mut buf = [0u8; I64_MAX_DIGITS];
            assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        }
        let mut buf = [0u8; 24];
        let at = digits_before(&mut buf, 22, u64::MAX);
        assert_eq!(&buf[at..22], u64::MAX.to_string().as_bytes());
    }
}
