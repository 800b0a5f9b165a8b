//! Number text as Redis spells it on the wire: `string2ll` for parsing, `ll2string` and
//! `d2string` for writing. Everything here works on stack buffers; nothing allocates.

use std::fmt::Write as _;

/// Redis's `LONG_STR_SIZE`: a number string this long or longer is rejected before any digit
/// is looked at, so a 64 KiB run of zeros costs nothing.
const LONG_STR_SIZE: usize = 21;

/// Parses `s` exactly like Redis's `string2ll`: an optional `-`, then either a lone `0` or a
/// digit 1-9 followed by digits, nothing else (no `+`, no spaces, no leading zeros, no `-0`),
/// and the value must fit an `i64`.
#[inline]
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= LONG_STR_SIZE {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let (&first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v = u64::from(first - b'0');
    for &c in rest {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        // -(2^63) is the one magnitude that is valid only with the sign.
        if v > 1 << 63 {
            None
        } else {
            Some(0i64.wrapping_sub_unsigned(v))
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Two ASCII digits for every value 0..100, so integer formatting does one division per pair.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `v` so that they end just before `out[end]`, and returns the
/// index of the first digit. `end` must leave room for 20 digits (`u64::MAX`).
#[inline]
pub(crate) fn write_digits(mut v: u64, out: &mut [u8], end: usize) -> usize {
    let mut i = end;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        out[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        i -= 2;
        out[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        out[i] = b'0' + v as u8;
    }
    i
}

/// Appends `prefix`, the decimal form of the signed value (`negative`, `magnitude`), and CRLF:
/// the shape of every RESP header (`*3`, `$5`, `:-1`, `%2`). One `extend_from_slice` per call.
#[inline]
pub(crate) fn put_header(out: &mut Vec<u8>, prefix: u8, negative: bool, magnitude: u64) {
    if magnitude < 10 && !negative {
        // Most headers are a single digit; skip the scratch buffer entirely.
        out.extend_from_slice(&[prefix, b'0' + magnitude as u8, b'\r', b'\n']);
        return;
    }
    // prefix + '-' + 20 digits + CRLF
    let mut tmp = [0u8; 24];
    tmp[22] = b'\r';
    tmp[23] = b'\n';
    let mut start = write_digits(magnitude, &mut tmp, 22);
    if negative {
        start -= 1;
        tmp[start] = b'-';
    }
    start -= 1;
    tmp[start] = prefix;
    out.extend_from_slice(&tmp[start..]);
}

/// Appends `prefix`, `v` in decimal, and CRLF.
#[inline]
pub(crate) fn put_signed_header(out: &mut Vec<u8>, prefix: u8, v: i64) {
    put_header(out, prefix, v < 0, v.unsigned_abs());
}

/// A double formatted the way Redis 7.2+ `d2string` does it, held on the stack.
pub(crate) struct DoubleText {
    buf: [u8; 32],
    len: usize,
}

impl DoubleText {
    /// The formatted text, always ASCII.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

/// A fixed-capacity `fmt::Write` sink for Rust's own float formatting.
struct Scratch {
    buf: [u8; 32],
    len: usize,
}

impl std::fmt::Write for Scratch {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let bytes = s.as_bytes();
        let end = self.len + bytes.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }
}

/// Formats `v` like Redis 7.2+ `d2string` (used by `addReplyDouble`): `nan`, `inf`, `-inf`,
/// `0`/`-0`, integers in plain decimal while |v| <= 2^62, and otherwise the shortest
/// round-trip digits laid out by fpconv's `emit_digits` rules (`1.5`, `0.001`, `1e-07` is
/// written `1e-7`, `1e+300`).
///
/// Redis 7.0 used `%.17g` (`1.1000000000000001`); 7.2 switched to shortest round-trip, which
/// is what clients compare against today.
pub(crate) fn format_double(v: f64) -> DoubleText {
    let mut out = DoubleText {
        buf: [0; 32],
        len: 0,
    };
    if v.is_nan() {
        out.extend(b"nan");
        return out;
    }
    if v.is_infinite() {
        out.extend(if v < 0.0 { b"-inf" } else { b"inf" });
        return out;
    }
    if v == 0.0 {
        out.extend(if v.is_sign_negative() { b"-0" } else { b"0" });
        return out;
    }
    // Redis's double2ll window: (double)(LLONG_MAX / 2) == 2^62.
    const INT_LIMIT: f64 = 4_611_686_018_427_387_904.0;
    if (-INT_LIMIT..=INT_LIMIT).contains(&v) && v.fract() == 0.0 {
        let mut tmp = [0u8; 20];
        let start = write_digits(v.abs() as u64, &mut tmp, 20);
        if v < 0.0 {
            out.push(b'-');
        }
        out.extend(&tmp[start..]);
        return out;
    }

    // Shortest round-trip digits from Rust's formatter.
    let (digits, ndigits, exp10) = scientific(v, None);
    if v < 0.0 {
        out.push(b'-');
    }
    emit_digits(&digits[..ndigits], exp10, v < 0.0, &mut out);
    out
}

/// Formats a sorted-set score the way Redis 7.0 replies it (`addReplyDouble`): `inf`, `-inf`,
/// `nan`, and otherwise C's `%.17g` (17 significant digits, `%g`'s choice between fixed and
/// exponent notation, trailing zeros stripped): `1.1000000000000001`, `1.0000000000000001e+300`,
/// `-0`, `2.5`.
pub(crate) fn format_score(v: f64) -> DoubleText {
    let mut out = DoubleText {
        buf: [0; 32],
        len: 0,
    };
    if v.is_nan() {
        out.extend(b"nan");
        return out;
    }
    if v.is_infinite() {
        out.extend(if v < 0.0 { b"-inf" } else { b"inf" });
        return out;
    }
    if v.is_sign_negative() {
        out.push(b'-');
    }
    if v == 0.0 {
        out.push(b'0');
        return out;
    }
    // 17 significant digits, correctly rounded like glibc's printf.
    let (digits, mut n, exp) = scientific(v, Some(16));
    // %g strips trailing zeros of the fraction.
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let digits = &digits[..n];
    if (-4..17).contains(&exp) {
        if exp < 0 {
            out.extend(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend(digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.extend(digits);
                for _ in digits.len()..int_len {
                    out.push(b'0');
                }
            } else {
                out.extend(&digits[..int_len]);
                out.push(b'.');
                out.extend(&digits[int_len..]);
            }
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        let mut tmp = [0u8; 20];
        let start = write_digits(u64::from(e), &mut tmp, 20);
        out.extend(&tmp[start..]);
    }
    out
}

/// The decimal digits of `|v|` (finite, non-zero) and its power of ten, from Rust's
/// scientific formatting: the shortest round-trip digits, or `1 + fraction` significant
/// digits correctly rounded (as C's `%.*e`). Digits are ASCII, `d.ddd` read as `ddd`.
fn scientific(v: f64, fraction: Option<usize>) -> ([u8; 20], usize, i32) {
    let mut sci = Scratch {
        buf: [0; 32],
        len: 0,
    };
    // The longest text is 24 bytes ("d.dddddddddddddddde-308"), so the write cannot fail.
    let _ = match fraction {
        None => write!(sci, "{:e}", v.abs()),
        Some(p) => write!(sci, "{:.*e}", p, v.abs()),
    };
    let text = &sci.buf[..sci.len];
    let e_at = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let mut digits = [0u8; 20];
    let mut n = 0usize;
    for &b in &text[..e_at] {
        if b.is_ascii_digit() && n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    let exp10 = text
        .get(e_at + 1..)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<i32>().ok())
        .unwrap_or(0);
    (digits, n, exp10)
}

/// fpconv's `emit_digits`: the value is `digits * 10^k` where `k = exp10 - (ndigits - 1)`.
fn emit_digits(digits: &[u8], exp10: i32, negative: bool, out: &mut DoubleText) {
    let ndigits = digits.len() as i32;
    let k = exp10 - (ndigits - 1);
    let exp = exp10.abs();

    // Plain integer.
    if k >= 0 && exp < ndigits + 7 {
        out.extend(digits);
        for _ in 0..k {
            out.push(b'0');
        }
        return;
    }

    // Decimal without exponent.
    if k < 0 && (k > -7 || exp < 4) {
        let offset = ndigits + k;
        if offset <= 0 {
            out.extend(b"0.");
            for _ in 0..-offset {
                out.push(b'0');
            }
            out.extend(digits);
        } else {
            let (int_part, frac_part) = digits.split_at(offset as usize);
            out.extend(int_part);
            out.push(b'.');
            out.extend(frac_part);
        }
        return;
    }

    // Scientific notation: no zero padding of the exponent except inside three digits.
    let shown = digits.len().min(18 - usize::from(negative));
    out.push(digits[0]);
    if shown > 1 {
        out.push(b'.');
        out.extend(&digits[1..shown]);
    }
    out.push(b'e');
    out.push(if exp10 < 0 { b'-' } else { b'+' });
    let mut tmp = [0u8; 20];
    let start = write_digits(u64::from(exp.unsigned_abs()), &mut tmp, 20);
    out.extend(&tmp[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_table() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"0", Some(0)),
            (b"1", Some(1)),
            (b"-1", Some(-1)),
            (b"123", Some(123)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"-9223372036854775809", None),
            (b"18446744073709551616", None),
            (b"99999999999999999999", None),
            (b"", None),
            (b"-", None),
            (b"-0", None),
            (b"00", None),
            (b"01", None),
            (b"+1", None),
            (b" 1", None),
            (b"1 ", None),
            (b"1a", None),
            (b"0x10", None),
            (b"000000000000000000001", None),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_i64(input),
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn headers() {
        let cases: &[(u8, i64, &str)] = &[
            (b'*', 0, "*0\r\n"),
            (b'*', 9, "*9\r\n"),
            (b'$', 10, "$10\r\n"),
            (b':', -1, ":-1\r\n"),
            (b':', 1234567890, ":1234567890\r\n"),
            (b':', i64::MAX, ":9223372036854775807\r\n"),
            (b':', i64::MIN, ":-9223372036854775808\r\n"),
        ];
        for &(prefix, v, want) in cases {
            let mut out = Vec::new();
            put_signed_header(&mut out, prefix, v);
            assert_eq!(out, want.as_bytes());
        }
        let mut out = Vec::new();
        put_header(&mut out, b'$', false, u64::MAX);
        assert_eq!(out, b"$18446744073709551615\r\n");
    }

    #[test]
    fn d2string_table() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-1.0, "-1"),
            (1.5, "1.5"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1.1, "1.1"),
            (3.0e-3, "0.003"),
            (1.0e-6, "0.000001"),
            (1.0e-7, "1e-7"),
            (1.2345e-5, "1.2345e-5"),
            (123.456, "123.456"),
            (1.0e17, "100000000000000000"),
            (4611686018427387904.0, "4611686018427387904"),
            (1.0e19, "1e+19"),
            (1.2345678901234567e19, "12345678901234567000"),
            (1.0e100, "1e+100"),
            (1.0e105, "1e+105"),
            (-2.5e300, "-2.5e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (0.30000000000000004, "0.30000000000000004"),
            (1234567.5, "1234567.5"),
        ];
        for &(v, want) in cases {
            let got = format_double(v);
            assert_eq!(std::str::from_utf8(got.as_bytes()), Ok(want), "{v:e}");
        }
    }

    #[test]
    fn d2string_round_trips() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if !v.is_finite() {
                continue;
            }
            let text = format_double(v);
            let s = std::str::from_utf8(text.as_bytes()).expect("ascii");
            assert_eq!(s.parse::<f64>().ok(), Some(v), "{s}");
        }
    }

    #[test]
    fn score_g17_table() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-3.0, "-3"),
            (1.5, "1.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
        ];
        for &(v, want) in cases {
            let got = format_score(v);
            assert_eq!(std::str::from_utf8(got.as_bytes()), Ok(want), "{v:e}");
        }
        // Expectations printed by C's printf("%.17g") (through Python's % operator).
        let printf: &[(f64, &str)] = &include!("score_g17_cases.in");
        assert!(printf.len() > 600);
        for &(v, want) in printf {
            let got = format_score(v);
            assert_eq!(std::str::from_utf8(got.as_bytes()), Ok(want), "{v:e}");
        }
    }
}
