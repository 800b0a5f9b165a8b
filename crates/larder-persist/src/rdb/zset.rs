//! Sorted sets in RDB form, at the level of (member, score) pairs, so the codec does not
//! depend on the engine's sorted-set internals.
//!
//! Written as Redis 7.0 writes them: ZSET_LISTPACK (17), member then score, lowest score
//! first, a score that is a whole number within ±2^62 as an integer entry and any other as
//! `d2string` text (`%.17g`); or ZSET_2 (5), the count and then, highest score first (so that
//! loading appends to the skiplist's head), each member and its score as a little-endian
//! double. Read: those two, plus ZSET (3, scores as text) and ZSET_ZIPLIST (12).

use super::length::{put_len, put_string, Reader};
use super::{listpack, ziplist, Elem, Error};

pub const TYPE_ZSET: u8 = 3;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_ZSET_LISTPACK: u8 = 17;

/// Which of its two encodings a sorted set is (or loads) in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// "listpack"
    Compact,
    /// "skiplist"
    Full,
}

/// A sorted set as read: its members with their scores (never NaN, members distinct), in
/// payload order, and the encoding Redis 7.0 would give it under the limits in force.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub members: Vec<(Vec<u8>, f64)>,
    pub encoding: Encoding,
}

/// Redis's `double2ll`: the score as an integer when that loses nothing.
fn whole(score: f64) -> Option<i64> {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if !(-HALF..=HALF).contains(&score) {
        return None;
    }
    let v = score as i64;
    (v as f64 == score).then_some(v)
}

/// C's `printf("%.17g", v)` (glibc's spelling of NaN, infinities and signed zero): how Redis
/// prints a score into a listpack, and into DEBUG DIGEST's input.
pub fn g17(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        let decimals = usize::try_from(16 - exp).unwrap_or(0);
        trim(&format!("{v:.decimals$}"))
    }
}

/// A score as a sorted-set listpack holds it (`zzlInsertAt`).
pub fn score_text(score: f64) -> String {
    if let Some(v) = whole(score) {
        return v.to_string();
    }
    if score.is_nan() {
        // Whatever its sign bit: a listpack never holds "-nan".
        return "nan".into();
    }
    g17(score)
}

/// Append a sorted set: `scored` lowest score first (ties by member), in `encoding`.
pub fn write<'a>(
    out: &mut Vec<u8>,
    scored: impl Iterator<Item = (&'a [u8], f64)>,
    encoding: Encoding,
) {
    match encoding {
        Encoding::Compact => {
            let pairs: Vec<(&[u8], String)> = scored.map(|(m, s)| (m, score_text(s))).collect();
            out.push(TYPE_ZSET_LISTPACK);
            let lp = listpack::encode(pairs.iter().flat_map(|(m, s)| [*m, s.as_bytes()]));
            put_string(out, &lp);
        }
        Encoding::Full => {
            let pairs: Vec<(&[u8], f64)> = scored.collect();
            out.push(TYPE_ZSET_2);
            put_len(out, pairs.len() as u64);
            for (m, s) in pairs.iter().rev() {
                put_string(out, m);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
}

/// C's `strtod` on a listpack score's text (Redis reads at most 127 bytes of it).
fn parse_score(text: &[u8]) -> Result<f64, Error> {
    let text = &text[..text.len().min(127)];
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.trim_start().parse::<f64>().ok())
        .ok_or(Error::BadData)
}

/// Read the sorted set of object type `kind` (one of the `TYPE_ZSET*`), deciding its
/// encoding from `max_entries` and `max_value` (`zset-max-listpack-entries` / `-value`) as
/// Redis's `rdbLoadObject` does: a set read member by member is compact when it has few
/// enough members and none too long; a listpack or ziplist stays compact unless it has too
/// many members. Empty sets, repeated members and NaN scores are bad data.
pub fn read(
    r: &mut Reader<'_>,
    kind: u8,
    max_entries: usize,
    max_value: usize,
) -> Result<Loaded, Error> {
    let mut seen = std::collections::HashSet::new();
    let mut members = Vec::new();
    let mut add = |m: Vec<u8>, s: f64, members: &mut Vec<(Vec<u8>, f64)>| {
        if s.is_nan() || !seen.insert(m.clone()) {
            return Err(Error::BadData);
        }
        members.push((m, s));
        Ok(())
    };
    let encoding = match kind {
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            for _ in 0..n {
                let m = r.string()?;
                let s = if kind == TYPE_ZSET {
                    r.text_double()?
                } else {
                    r.binary_double()?
                };
                add(m, s, &mut members)?;
            }
            let longest = members.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            if members.len() <= max_entries && longest <= max_value {
                Encoding::Compact
            } else {
                Encoding::Full
            }
        }
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let elems = if kind == TYPE_ZSET_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            if elems.len() % 2 != 0 {
                return Err(Error::BadData);
            }
            for pair in elems.chunks_exact(2) {
                let s = match pair[1] {
                    Elem::Int(v) => v as f64,
                    Elem::Str(t) => parse_score(t)?,
                };
                add(pair[0].to_vec(), s, &mut members)?;
            }
            if members.len() > max_entries {
                Encoding::Full
            } else {
                Encoding::Compact
            }
        }
        _ => return Err(Error::BadData),
    };
    if members.is_empty() {
        return Err(Error::BadData);
    }
    Ok(Loaded { members, encoding })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn body(payload_hex: &str) -> Vec<u8> {
        let p = unhex(payload_hex);
        p[..p.len() - 10].to_vec()
    }

    // Redis 7.0.15's DUMP of `ZADD z_small 1 a 2.5 b -3 c` and, with
    // zset-max-listpack-entries 1, `ZADD z_big 1 a 2.5 b` (testdata/redis-7.0.15-dump.txt).
    const Z_SMALL: &str =
        "111a1a0000000600816302dffd02816102010181620283322e3504ff0a00a68a1ab1a9f2dcc2";
    const Z_BIG: &str = "0502016200000000000004400161000000000000f03f0a00f46eb73919767291";

    #[test]
    fn redis_bytes_both_ways() {
        let small: [(&[u8], f64); 3] = [(b"c", -3.0), (b"a", 1.0), (b"b", 2.5)];
        let mut out = Vec::new();
        write(&mut out, small.iter().copied(), Encoding::Compact);
        assert_eq!(out, body(Z_SMALL));
        let big: [(&[u8], f64); 2] = [(b"a", 1.0), (b"b", 2.5)];
        let mut out = Vec::new();
        write(&mut out, big.iter().copied(), Encoding::Full);
        assert_eq!(out, body(Z_BIG));

        let b = body(Z_SMALL);
        let mut r = Reader::new(&b[1..]);
        let got = read(&mut r, b[0], 128, 64).expect("golden");
        assert_eq!(got.encoding, Encoding::Compact);
        let want: Vec<(Vec<u8>, f64)> = small.iter().map(|(m, s)| (m.to_vec(), *s)).collect();
        assert_eq!(got.members, want);
        let b = body(Z_BIG);
        let got = read(&mut Reader::new(&b[1..]), b[0], 128, 64).expect("golden");
        assert_eq!(
            got.encoding,
            Encoding::Compact,
            "two members fit a listpack here"
        );
        assert_eq!(
            got.members,
            vec![(b"b".to_vec(), 2.5), (b"a".to_vec(), 1.0)]
        );
        let got = read(&mut Reader::new(&b[1..]), b[0], 1, 64).expect("golden");
        assert_eq!(got.encoding, Encoding::Full);
    }

    #[test]
    fn scores_print_as_redis_does() {
        for (v, s) in [
            (1.0, "1"),
            (-3.0, "-3"),
            (2.5, "2.5"),
            (0.1, "0.10000000000000001"),
            (1e300, "1.0000000000000001e+300"),
            (1.5e-7, "1.4999999999999999e-07"),
            (123456789.125, "123456789.125"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-0.0, "0"),
            (4.611686018427388e18, "4611686018427387904"),
            (1e19, "1e+19"),
        ] {
            assert_eq!(score_text(v), s, "{v}");
            assert_eq!(parse_score(s.as_bytes()).expect("parses"), v);
        }
    }

    #[test]
    fn text_scores_duplicates_and_nan() {
        // ZSET (3): "a" 1.5, "b" +inf.
        let ok = [2u8, 1, b'a', 3, b'1', b'.', b'5', 1, b'b', 254];
        let got = read(&mut Reader::new(&ok), TYPE_ZSET, 128, 64).expect("valid");
        assert_eq!(
            got.members,
            vec![(b"a".to_vec(), 1.5), (b"b".to_vec(), f64::INFINITY)]
        );
        let nan = [1u8, 1, b'a', 253];
        assert_eq!(
            read(&mut Reader::new(&nan), TYPE_ZSET, 128, 64),
            Err(Error::BadData)
        );
        let dup = [2u8, 1, b'a', 1, b'1', 1, b'a', 1, b'2'];
        assert_eq!(
            read(&mut Reader::new(&dup), TYPE_ZSET, 128, 64),
            Err(Error::BadData)
        );
        assert_eq!(
            read(&mut Reader::new(&[0]), TYPE_ZSET_2, 128, 64),
            Err(Error::BadData)
        );
        let long = [1u8, 3, b'a', b'b', b'c', 1, b'1'];
        let got = read(&mut Reader::new(&long), TYPE_ZSET, 128, 2).expect("valid");
        assert_eq!(got.encoding, Encoding::Full);
        let mut zl = Vec::new();
        put_string(
            &mut zl,
            &ziplist::encode_strings(&[b"m", b"2.5", b"n", b"-1"]),
        );
        let got = read(&mut Reader::new(&zl), TYPE_ZSET_ZIPLIST, 128, 64).expect("valid");
        assert_eq!(
            got.members,
            vec![(b"m".to_vec(), 2.5), (b"n".to_vec(), -1.0)]
        );
    }
}
