//! Stream entry IDs: `<ms>-<seq>`, ordered as the pair, parsed and printed as Redis does.

use std::fmt;

/// A stream entry ID: milliseconds, then a sequence number within the millisecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

/// Why an argument is not a stream ID. The commands answer every case with Redis's
/// "Invalid stream ID specified as stream command argument".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidId;

/// What an XADD ID argument asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdSpec {
    /// `*`: the next ID after the last one, from the clock.
    Auto,
    /// `<ms>-*`: this millisecond, the next free sequence in it.
    AutoSeq(u64),
    /// An explicit `<ms>-<seq>` (or `<ms>`, sequence 0).
    Explicit(StreamId),
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The ID right after this one, or `None` for [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The ID right before this one, or `None` for [`StreamId::MIN`].
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self
                .ms
                .checked_sub(1)
                .map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }

    /// Parse an ID argument as Redis's `streamParseIDOrReply`: `-` is 0-0, `+` the largest
    /// ID, `<ms>` alone takes `missing_seq` as its sequence.
    pub fn parse(arg: &[u8], missing_seq: u64) -> Result<StreamId, InvalidId> {
        parse_generic(arg, missing_seq, false).map(|(id, _)| id)
    }

    /// Parse an ID as Redis's strict form (XADD, XSETID, exclusive range bounds): as
    /// [`StreamId::parse`] but `-` and `+` are refused.
    pub fn parse_strict(arg: &[u8], missing_seq: u64) -> Result<StreamId, InvalidId> {
        parse_generic(arg, missing_seq, true).map(|(id, _)| id)
    }

    /// Parse XADD's ID argument: `*`, `<ms>-*`, `<ms>-<seq>` or `<ms>`.
    pub fn parse_add(arg: &[u8]) -> Result<IdSpec, InvalidId> {
        if arg == b"*" {
            return Ok(IdSpec::Auto);
        }
        match parse_generic(arg, 0, true)? {
            (id, true) => Ok(IdSpec::Explicit(id)),
            (id, false) => Ok(IdSpec::AutoSeq(id.ms)),
        }
    }

    /// The 16 big-endian bytes Redis uses as the ID's radix-tree key.
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// An ID's `ms-seq` text, written on the stack (replies write one per entry).
pub struct IdText {
    buf: [u8; 41],
    start: usize,
}

impl IdText {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    pub fn as_str(&self) -> &str {
        // Digits and one '-' only.
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl StreamId {
    /// The ID as Redis writes it, `ms-seq`, without allocating.
    pub fn text(self) -> IdText {
        let mut buf = [0u8; 41];
        let mut start = crate::decimal::digits_before(&mut buf, 41, self.seq);
        start -= 1;
        buf[start] = b'-';
        start = crate::decimal::digits_before(&mut buf, start, self.ms);
        IdText { buf, start }
    }
}

/// `streamGenericParseIDOrReply`: the ID and whether its sequence was given (false for
/// `<ms>-*`, accepted only when `strict`, which is how XADD calls it).
fn parse_generic(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
) -> Result<(StreamId, bool), InvalidId> {
    match parse_plain(arg, missing_seq) {
        Some(id) => Ok((id, true)),
        None => parse_general(arg, missing_seq, strict),
    }
}

/// The common form, `<ms>-<seq>` or `<ms>` in plain digits, 1 to 19 of each (so no overflow),
/// in one pass: what [`parse_general`] returns for it. `None` for anything else.
fn parse_plain(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
    let (ms, rest) = plain_digits(arg)?;
    match rest {
        [] => Some(StreamId::new(ms, missing_seq)),
        [b'-', seq @ ..] => match plain_digits(seq)? {
            (seq, []) => Some(StreamId::new(ms, seq)),
            _ => None,
        },
        _ => None,
    }
}

/// The value of the 1 to 19 ASCII digits that start `s`, and what follows them.
fn plain_digits(s: &[u8]) -> Option<(u64, &[u8])> {
    let n = s.iter().take(20).take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 19 {
        return None;
    }
    let v = s[..n]
        .iter()
        .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
    Some((v, &s[n..]))
}

/// [`parse_generic`] for every form.
fn parse_general(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
) -> Result<(StreamId, bool), InvalidId> {
    if arg.len() > 127 {
        return Err(InvalidId);
    }
    // Redis reads the argument as a C string.
    let arg = arg.split(|&b| b == 0).next().unwrap_or_default();
    match arg {
        b"-" | b"+" if strict => return Err(InvalidId),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms_part, seq_part) = match arg.iter().position(|&b| b == b'-') {
        Some(i) => (&arg[..i], Some(&arg[i + 1..])),
        None => (arg, None),
    };
    let ms = string2ull(ms_part).ok_or(InvalidId)?;
    match seq_part {
        Some(b"*") if strict => Ok((StreamId::new(ms, 0), false)),
        Some(s) => Ok((StreamId::new(ms, string2ull(s).ok_or(InvalidId)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

/// Redis's `string2ull`: a strict decimal first, then what C's `strtoull` accepts (leading
/// white space, a sign, a negative value wrapping around), the whole string consumed.
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = strict_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// Redis's `string2ll`: an optional `-`, digits without leading zeros (or a lone `0`), no
/// other bytes, within `i64`.
pub(crate) fn strict_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits == b"0" {
        return (!negative).then_some(0);
    }
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if v <= 1 << 63 {
            Some((v as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_forms() {
        assert_eq!(StreamId::parse(b"5-3", 0), Ok(StreamId::new(5, 3)));
        assert_eq!(StreamId::parse(b"5", 7), Ok(StreamId::new(5, 7)));
        assert_eq!(StreamId::parse(b"-", 7), Ok(StreamId::MIN));
        assert_eq!(StreamId::parse(b"+", 7), Ok(StreamId::MAX));
        assert_eq!(StreamId::parse_strict(b"+", 7), Err(InvalidId));
        assert_eq!(StreamId::parse(b"5-*", 0), Err(InvalidId));
        assert_eq!(StreamId::parse(b"-5", 0), Err(InvalidId));
        assert_eq!(StreamId::parse(b"5-", 0), Err(InvalidId));
        assert_eq!(StreamId::parse(b"a", 0), Err(InvalidId));
        assert_eq!(StreamId::parse(b"5-3-1", 0), Err(InvalidId));
        assert_eq!(StreamId::parse(b"+5-0", 0), Ok(StreamId::new(5, 0)));
        assert_eq!(StreamId::parse(b"5- -1", 0), Ok(StreamId::new(5, u64::MAX)));
        assert_eq!(StreamId::parse(b"5--1", 0), Err(InvalidId));
        assert_eq!(
            StreamId::parse(b"18446744073709551615-18446744073709551615", 0),
            Ok(StreamId::MAX)
        );
        assert_eq!(StreamId::parse(b"18446744073709551616", 0), Err(InvalidId));
        assert_eq!(StreamId::parse_add(b"*"), Ok(IdSpec::Auto));
        assert_eq!(StreamId::parse_add(b"7-*"), Ok(IdSpec::AutoSeq(7)));
        assert_eq!(
            StreamId::parse_add(b"7"),
            Ok(IdSpec::Explicit(StreamId::new(7, 0)))
        );
        assert_eq!(StreamId::new(1, 2).to_string(), "1-2");
        for id in [
            StreamId::MIN,
            StreamId::new(10, 0),
            StreamId::new(1_700_000_000_123, 99),
            StreamId::MAX,
        ] {
            let text = id.text();
            assert_eq!(text.as_str(), format!("{}-{}", id.ms, id.seq));
            assert_eq!(StreamId::parse(text.as_bytes(), 0), Ok(id));
        }
    }

    /// The one-pass parse agrees with the general one on every input it accepts, and leaves
    /// every other input to it: strings of digits, `-`, `*`, `+`, a space and a NUL up to 42
    /// bytes long, digit runs around the 19 and 20 digits where the fast path hands over.
    #[test]
    fn plain_parse_matches_the_general_one() {
        let mut rng = crate::xorshift::xorshift(0x9e37_79b9_7f4a_7c15);
        let alphabet = b"0123456789000999---*+ \0";
        let mut accepted = 0;
        for i in 0..200_000 {
            let mut arg = Vec::new();
            if i % 4 == 0 {
                // Two digit runs of 1..=21 digits, the sort of ID the fast path takes.
                for part in 0..2 {
                    if part == 1 {
                        arg.push(b'-');
                    }
                    for _ in 0..=rng() % 21 {
                        arg.push(b"0123456789"[(rng() % 10) as usize]);
                    }
                }
            } else {
                for _ in 0..rng() % 43 {
                    arg.push(alphabet[(rng() as usize) % alphabet.len()]);
                }
            }
            for missing in [0, 7, u64::MAX] {
                let general = parse_general(&arg, missing, false).map(|(id, _)| id);
                if let Some(id) = parse_plain(&arg, missing) {
                    accepted += 1;
                    assert_eq!(Ok(id), general, "{:?}", String::from_utf8_lossy(&arg));
                }
                assert_eq!(StreamId::parse(&arg, missing), general);
                assert_eq!(
                    parse_generic(&arg, missing, true),
                    parse_general(&arg, missing, true)
                );
            }
        }
        assert!(accepted > 100_000, "the fast path took {accepted}");
        assert_eq!(
            parse_plain(b"9999999999999999999-1", 0),
            Some(StreamId::new(9_999_999_999_999_999_999, 1))
        );
        assert_eq!(parse_plain(b"10000000000000000000-1", 0), None);
    }

    #[test]
    fn neighbours() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
    }
}
