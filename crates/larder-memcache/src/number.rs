//! Decimal numbers as memcached reads and writes them.
//!
//! memcached parses every numeric token with C's `strtol`/`strtoul`/`strtoull` wrapped in its
//! `safe_strto*` helpers, and the quirks of those decide which requests are accepted: leading
//! C whitespace and a `+` sign are allowed, the number may be followed by whitespace, a
//! negative number is refused by the unsigned parsers only when it wraps to a value with the
//! top bit set, and the 32-bit results are truncated from 64 bits rather than range-checked.
//! The `parse_*` functions here reproduce that exactly.

use std::fmt;

/// C `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The shared core of `strtoull`/`strtoll` in base 10: skips leading whitespace, reads an
/// optional sign and the digits, and checks what memcached's `safe_strto*` check after the
/// call: at least one digit, no overflow of the magnitude, and the number followed by the end
/// of the token, a NUL or whitespace. Returns the sign and the magnitude.
fn c_strto(tok: &[u8]) -> Option<(bool, u64)> {
    let mut i = 0;
    while i < tok.len() && is_c_space(tok[i]) {
        i += 1;
    }
    let mut negative = false;
    if let Some(&sign @ (b'+' | b'-')) = tok.get(i) {
        negative = sign == b'-';
        i += 1;
    }
    let digits_start = i;
    let mut magnitude: u64 = 0;
    while let Some(&d @ b'0'..=b'9') = tok.get(i) {
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(d - b'0'))?;
        i += 1;
    }
    if i == digits_start {
        return None;
    }
    match tok.get(i) {
        None | Some(0) => Some((negative, magnitude)),
        Some(&b) if is_c_space(b) => Some((negative, magnitude)),
        Some(_) => None,
    }
}

/// The part of the token C sees: everything before the first NUL.
fn c_str(tok: &[u8]) -> &[u8] {
    match memchr::memchr(0, tok) {
        Some(nul) => &tok[..nul],
        None => tok,
    }
}

/// memcached's `safe_strtoull`: an unsigned 64-bit number.
pub(crate) fn parse_u64(tok: &[u8]) -> Option<u64> {
    let (negative, magnitude) = c_strto(tok)?;
    let value = if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    };
    // Like safe_strtoull: "-1" wraps to a huge value and is refused, "-0" is 0.
    if value > i64::MAX as u64 && c_str(tok).contains(&b'-') {
        return None;
    }
    Some(value)
}

/// memcached's `safe_strtoul` on a 64-bit host: parsed as 64 bits, then truncated to 32
/// (`set k 4294967297 0 1` stores client flags 1).
pub fn parse_u32(tok: &[u8]) -> Option<u32> {
    // Truncation is the point: it is what memcached does.
    parse_u64(tok).map(|v| v as u32)
}

/// memcached's `safe_strtol` on a 64-bit host: parsed as a signed 64-bit number, then
/// truncated to 32 bits (`2147483648` becomes `-2147483648`, `4294967297` becomes `1`).
pub fn parse_i32(tok: &[u8]) -> Option<i32> {
    let (negative, magnitude) = c_strto(tok)?;
    let value: i64 = if negative {
        if magnitude > i64::MAX as u64 + 1 {
            return None;
        }
        (magnitude as i64).wrapping_neg()
    } else {
        i64::try_from(magnitude).ok()?
    };
    Some(value as i32)
}

/// The decimal digits of `v`, right-aligned in a stack buffer: `&buf[start..]`.
pub(crate) fn digits_u64(mut v: u64) -> ([u8; 20], usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    (buf, i)
}

/// Appends the decimal form of `v`.
pub(crate) fn push_u64(out: &mut Vec<u8>, v: u64) {
    let (buf, start) = digits_u64(v);
    out.extend_from_slice(&buf[start..]);
}

/// Appends the decimal form of `v`, with a `-` when negative.
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// An incr/decr (or meta arithmetic) against a value that is not a decimal 64-bit unsigned
/// number. memcached answers `CLIENT_ERROR cannot increment or decrement non-numeric value`
/// (text and meta) or status 0x0006 (binary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonNumeric;

impl fmt::Display for NonNumeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot increment or decrement non-numeric value")
    }
}

impl std::error::Error for NonNumeric {}

/// memcached's `do_add_delta` arithmetic on a stored value: the value is read the way
/// `safe_strtoull` reads it (so `" 12"`, `"12 "` and `"+12"` are 12, while `""`, `"-12"`,
/// `"12abc"` and anything above `u64::MAX` are not numbers), then incremented with
/// wrap-around at 2^64 (`incr`) or decremented with a floor at 0 (`decr`).
///
/// The new value is stored as its decimal digits; flags, TTL and the key stay, the CAS
/// changes.
pub fn apply_delta(stored: &[u8], op: crate::CounterOp, delta: u64) -> Result<u64, NonNumeric> {
    let current = parse_u64(stored).ok_or(NonNumeric)?;
    Ok(match op {
        crate::CounterOp::Incr => current.wrapping_add(delta),
        crate::CounterOp::Decr => current.saturating_sub(delta),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CounterOp;

    #[test]
    fn u64_table() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"42", Some(42)),
            (b"+42", Some(42)),
            (b"\t42", Some(42)),
            (b"42\r", Some(42)),
            (b"42\tjunk", Some(42)),
            (b"42\0junk", Some(42)),
            (b"18446744073709551615", Some(u64::MAX)),
            (b"18446744073709551616", None),
            (b"-0", Some(0)),
            (b"-1", None),
            (b"-18446744073709551615", Some(1)),
            (b"", None),
            (b"+", None),
            (b"-", None),
            (b"x", None),
            (b"4x", None),
            (b"0x10", None),
            (b" ", None),
        ];
        for &(tok, want) in cases {
            assert_eq!(parse_u64(tok), want, "{:?}", String::from_utf8_lossy(tok));
        }
    }

    #[test]
    fn u32_truncates_like_memcached() {
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), Some(0));
        assert_eq!(parse_u32(b"4294967297"), Some(1));
        assert_eq!(parse_u32(b"-1"), None);
        assert_eq!(parse_u32(b"abc"), None);
        assert_eq!(parse_u32(b"+5"), Some(5));
        assert_eq!(parse_u32(b"-0"), Some(0));
        assert_eq!(parse_u32(b"5x"), None);
        assert_eq!(parse_u32(b""), None);
    }

    #[test]
    fn i32_truncates_like_memcached() {
        let cases: &[(&[u8], Option<i32>)] = &[
            (b"0", Some(0)),
            (b"-1", Some(-1)),
            (b"+7", Some(7)),
            (b"2147483647", Some(i32::MAX)),
            (b"2147483648", Some(i32::MIN)),
            (b"4294967297", Some(1)),
            (b"-2147483649", Some(i32::MAX)),
            (b"9223372036854775807", Some(-1)),
            (b"9223372036854775808", None),
            (b"-9223372036854775808", Some(0)),
            (b"-9223372036854775809", None),
            (b"1x", None),
            (b"", None),
        ];
        for &(tok, want) in cases {
            assert_eq!(parse_i32(tok), want, "{:?}", String::from_utf8_lossy(tok));
        }
    }

    #[test]
    fn push_numbers() {
        let mut out = Vec::new();
        for v in [0u64, 7, 10, 99, 12345, u64::MAX] {
            out.clear();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
        for v in [0i64, -1, 42, i64::MIN, i64::MAX] {
            out.clear();
            push_i64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
    }

    #[test]
    fn delta_table() {
        type Case = (&'static [u8], CounterOp, u64, Result<u64, NonNumeric>);
        let cases: &[Case] = &[
            (b"10", CounterOp::Incr, 5, Ok(15)),
            (b"10", CounterOp::Decr, 100, Ok(0)),
            (b"100", CounterOp::Decr, 1, Ok(99)),
            (b"18446744073709551615", CounterOp::Incr, 2, Ok(1)),
            (b" 12", CounterOp::Incr, 1, Ok(13)),
            (b"12 ", CounterOp::Incr, 1, Ok(13)),
            (b"12 ab", CounterOp::Incr, 1, Ok(13)),
            (b"+12", CounterOp::Incr, 1, Ok(13)),
            (b"000000000000000000012", CounterOp::Incr, 1, Ok(13)),
            (b"-12", CounterOp::Incr, 1, Err(NonNumeric)),
            (b"", CounterOp::Incr, 1, Err(NonNumeric)),
            (b"abc", CounterOp::Decr, 1, Err(NonNumeric)),
            (b"18446744073709551616", CounterOp::Incr, 1, Err(NonNumeric)),
        ];
        for &(stored, op, delta, want) in cases {
            assert_eq!(
                apply_delta(stored, op, delta),
                want,
                "{stored:?} {op:?} {delta}"
            );
        }
        assert_eq!(
            NonNumeric.to_string(),
            "cannot increment or decrement non-numeric value"
        );
    }
}
