//! Commands on parts of a string: APPEND, STRLEN, GETRANGE / SUBSTR, SETRANGE, LCS.

use larder_engine::feed::class;

use super::{count_hits, string_at};
use crate::args::Args;
use crate::config::Param;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const LCS_NOT_STRING: &str = "ERR The specified keys must contain string values";
const LCS_LEN_AND_IDX: &str = "ERR If you want both the length and indexes, please just use IDX.";
const LCS_TOO_LONG: &str = "ERR String too long for LCS";
const LCS_TABLE_TOO_BIG: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const LCS_ALLOC_FAILED: &str =
    "ERR Insufficient memory, failed allocating transient memory for LCS";

/// Fail unless a string of `base + extra` bytes fits in proto-max-bulk-len.
fn check_length(c: &Cmd<'_>, base: u64, extra: usize) -> Result<()> {
    let max = c.server.config.num(Param::ProtoMaxBulkLen).max(0) as u128;
    if u128::from(base) + extra as u128 > max {
        return Err(Error::Static(error::STRING_TOO_LONG));
    }
    Ok(())
}

/// APPEND key value
pub(super) fn append(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let value = c.args.next_arg()?;
    let (mut shard, hash) = c.shard_of(key);
    let len = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        // An empty value still creates the key, as in Redis.
        None => {
            shard.insert_string(key, hash, value, 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            value.len()
        }
        Some(slot) => {
            let old_len = string_at(&shard, slot)?.len();
            check_length(c, old_len as u64, value.len())?;
            shard
                .update_string(slot, |s| {
                    s.extend_from_slice(value);
                    s.len()
                })
                .ok_or(Error::Static(error::WRONGTYPE))?
        }
    };
    c.notify(class::STRING, "append", key);
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// STRLEN key
pub(super) fn strlen(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    let len = match found {
        Some(slot) => string_at(&shard, slot)?.len(),
        None => 0,
    };
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// The bytes GETRANGE returns for `start..=end` of a `len`-byte string, with Redis 7.0's
/// rules: negative indexes count from the end and are then clamped to 0, `end` is clamped to
/// the last byte. (So in 7.0 `GETRANGE k -100 -50` of a short string returns its first byte.)
fn getrange_bounds(len: usize, start: i64, end: i64) -> std::ops::Range<usize> {
    if start < 0 && end < 0 && start > end {
        return 0..0;
    }
    let len_i = len as i64;
    let from_end = |i: i64| if i < 0 { (len_i + i).max(0) } else { i };
    let start = from_end(start);
    let end = from_end(end).min(len_i - 1);
    if len == 0 || start > end {
        return 0..0;
    }
    start as usize..end as usize + 1
}

/// GETRANGE key start end, and its old name SUBSTR.
pub(super) fn getrange(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let start = c.args.i64()?;
    let end = c.args.i64()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    match found {
        Some(slot) => {
            let s = string_at(&shard, slot)?;
            let range = getrange_bounds(s.len(), start, end);
            c.out.bulk(s.get(range).unwrap_or_default());
        }
        // A missing key is an empty string, not null.
        None => c.out.bulk(b""),
    }
    Ok(())
}

/// Write `value` at `offset` of `s`, zero-padding first if `s` is shorter.
fn write_at(s: &mut Vec<u8>, offset: usize, value: &[u8]) -> usize {
    let end = offset + value.len();
    if s.len() < end {
        s.resize(end, 0);
    }
    s[offset..end].copy_from_slice(value);
    s.len()
}

/// SETRANGE key offset value
pub(super) fn setrange(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let offset = c.args.i64()?;
    let value = c.args.next_arg()?;
    if offset < 0 {
        return Err(Error::Static(error::OFFSET_OUT_OF_RANGE));
    }
    let offset = offset as u64;
    let (mut shard, hash) = c.shard_of(key);
    let len = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        // Setting nothing on a missing key creates nothing.
        None if value.is_empty() => 0,
        None => {
            check_length(c, offset, value.len())?;
            // Grow in place from an empty string rather than building a padded copy.
            let slot = shard.insert_string(key, hash, b"", 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            shard
                .update_string(slot, |s| write_at(s, offset as usize, value))
                .unwrap_or_default()
        }
        Some(slot) => {
            let old_len = string_at(&shard, slot)?.len();
            if value.is_empty() {
                old_len
            } else {
                check_length(c, offset, value.len())?;
                shard
                    .update_string(slot, |s| write_at(s, offset as usize, value))
                    .ok_or(Error::Static(error::WRONGTYPE))?
            }
        }
    };
    // Writing nothing changes nothing and raises nothing.
    if !value.is_empty() {
        c.notify(class::STRING, "setrange", key);
    }
    drop(shard);
    c.out.int(len as i64);
    Ok(())
}

/// LCS's options.
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

fn parse_lcs_options(args: &mut Args<'_>) -> Result<LcsOptions> {
    let mut o = LcsOptions {
        len: false,
        idx: false,
        with_match_len: false,
        min_match_len: 0,
    };
    while let Some(opt) = args.opt() {
        if opt.eq_ignore_ascii_case(b"IDX") {
            o.idx = true;
        } else if opt.eq_ignore_ascii_case(b"LEN") {
            o.len = true;
        } else if opt.eq_ignore_ascii_case(b"WITHMATCHLEN") {
            o.with_match_len = true;
        } else if opt.eq_ignore_ascii_case(b"MINMATCHLEN") && args.remaining() > 0 {
            o.min_match_len = args.i64()?.max(0) as u64;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    if o.len && o.idx {
        return Err(Error::Static(LCS_LEN_AND_IDX));
    }
    Ok(o)
}

/// One IDX match: byte ranges (inclusive) in the first and second string.
struct LcsMatch {
    a: (usize, usize),
    b: (usize, usize),
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
///
/// The values are copied out under both shards' locks and the table is built without any
/// lock held. The algorithm, its tie-breaking and its memory limit are Redis 7.0's, so the
/// string and the IDX ranges are the ones Redis returns.
pub(super) fn lcs(c: &mut Cmd<'_>) -> Result<()> {
    let a_key = c.args.key()?;
    let b_key = c.args.key()?;
    // Redis checks the keys' types before it parses the options.
    let options = parse_lcs_options(&mut c.args);
    // Both shards are held by the executor (LCS has two keys), so the two reads see one
    // moment. None: missing; Some(None): another type.
    let read = |key: &[u8]| {
        let (mut shard, hash) = c.shard_of(key);
        shard
            .find_touch(key, hash, c.now_ms, c.access())
            .map(|slot| shard.entry(slot).string().map(<[u8]>::to_vec))
    };
    let a = read(a_key);
    let b = read(b_key);
    let hits = u64::from(a.is_some()) + u64::from(b.is_some());
    count_hits(c, hits, 2 - hits);
    let (Some(a), Some(b)) = (a.unwrap_or(Some(Vec::new())), b.unwrap_or(Some(Vec::new()))) else {
        return Err(Error::Static(LCS_NOT_STRING));
    };
    let o = options?;
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(Error::Static(LCS_TOO_LONG));
    }
    let table = LcsTable::build(&a, &b, c.server.config.num(Param::ProtoMaxBulkLen))?;
    let total = table.at(a.len(), b.len());
    if o.len {
        c.out.int(i64::from(total));
        return Ok(());
    }
    let (common, matches) = table.walk(&a, &b, o.idx, o.min_match_len);
    if !o.idx {
        c.out.bulk(&common);
        return Ok(());
    }
    c.out.map(2);
    c.out.bulk(b"matches");
    c.out.array(matches.len());
    for m in &matches {
        c.out.array(2 + usize::from(o.with_match_len));
        c.out.array(2);
        c.out.int(m.a.0 as i64);
        c.out.int(m.a.1 as i64);
        c.out.array(2);
        c.out.int(m.b.0 as i64);
        c.out.int(m.b.1 as i64);
        if o.with_match_len {
            c.out.int((m.a.1 - m.a.0 + 1) as i64);
        }
    }
    c.out.bulk(b"len");
    c.out.int(i64::from(total));
    Ok(())
}

/// The dynamic-programming table: `at(i, j)` is the LCS length of `a[..i]` and `b[..j]`.
struct LcsTable {
    cells: Vec<u32>,
    width: usize,
}

impl LcsTable {
    fn build(a: &[u8], b: &[u8], max_bytes: i64) -> Result<LcsTable> {
        let width = b.len() + 1;
        let cells = (a.len() as u64 + 1) * width as u64;
        if cells * 4 > max_bytes.max(0) as u64 {
            return Err(Error::Static(LCS_TABLE_TOO_BIG));
        }
        let cells = cells as usize;
        let mut table = Vec::new();
        table
            .try_reserve_exact(cells)
            .map_err(|_| Error::Static(LCS_ALLOC_FAILED))?;
        table.resize(cells, 0u32);
        for (i, &ai) in a.iter().enumerate() {
            let (done, rest) = table.split_at_mut((i + 1) * width);
            let prev = &done[i * width..];
            let row = &mut rest[..width];
            for (j, &bj) in b.iter().enumerate() {
                row[j + 1] = if ai == bj {
                    prev[j] + 1
                } else {
                    prev[j + 1].max(row[j])
                };
            }
        }
        Ok(LcsTable {
            cells: table,
            width,
        })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// Walk back from the end as Redis does: the common string, and (if `want_matches`) the
    /// contiguous matches of at least `min_len` bytes, last first.
    fn walk(
        &self,
        a: &[u8],
        b: &[u8],
        want_matches: bool,
        min_len: u64,
    ) -> (Vec<u8>, Vec<LcsMatch>) {
        let mut idx = self.at(a.len(), b.len()) as usize;
        let mut common = vec![0u8; idx];
        let mut matches = Vec::new();
        let (mut i, mut j) = (a.len(), b.len());
        // `a_start == a.len()` means no match is open.
        let (mut a_start, mut a_end, mut b_start, mut b_end) = (a.len(), 0, 0, 0);
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                common[idx - 1] = a[i - 1];
                if a_start == a.len() {
                    (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
                } else if a_start == i && b_start == j {
                    a_start -= 1;
                    b_start -= 1;
                } else {
                    emit = true;
                }
                if a_start == 0 || b_start == 0 {
                    emit = true;
                }
                idx -= 1;
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                if a_start != a.len() {
                    emit = true;
                }
            }
            if emit {
                let len = a_end.wrapping_sub(a_start).wrapping_add(1) as u64;
                if want_matches && (min_len == 0 || len >= min_len) {
                    matches.push(LcsMatch {
                        a: (a_start, a_end),
                        b: (b_start, b_end),
                    });
                }
                a_start = a.len();
            }
        }
        (common, matches)
    }
}

#[cfg(test)]
mod tests {
    use larder_resp::{Frame, Protocol};

    use super::*;
    use crate::config::Config;
    use crate::testing::*;

    fn ints(a: i64, b: i64) -> Frame {
        Frame::Array(vec![int(a), int(b)])
    }

    #[test]
    fn append_strlen() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["STRLEN", "k"]), int(0));
        assert_eq!(h.run(&["APPEND", "k", "abc"]), int(3));
        assert_eq!(h.run(&["APPEND", "k", "de"]), int(5));
        assert_eq!(h.run(&["APPEND", "k", ""]), int(5));
        assert_eq!(h.run(&["GET", "k"]), bulk("abcde"));
        assert_eq!(h.run(&["STRLEN", "k"]), int(5));
        for i in 0..100 {
            h.run(&["APPEND", "k", &i.to_string()]);
        }
        assert_eq!(h.run(&["STRLEN", "k"]), int(5 + 10 + 90 * 2));
        // APPEND keeps the TTL; SET then replaces the grown string with an inline one.
        assert_eq!(h.run(&["SETEX", "t", "100", "x"]), ok());
        assert_eq!(h.run(&["APPEND", "t", "y"]), int(2));
        assert_eq!(h.run(&["SET", "t", "z", "KEEPTTL"]), ok());
        assert_eq!(h.run(&["APPEND", "t", "w"]), int(2));
        assert_eq!(h.run(&["GET", "t"]), bulk("zw"));
        let (mut shard, hash) = crate::testing::shard_for(&h.server, b"t");
        let slot = shard.find(b"t", hash, 0).expect("t");
        assert!(shard.entry(slot).expire_at_ms().is_some());
    }

    #[test]
    fn append_and_setrange_respect_proto_max_bulk_len() {
        let config = Config::new();
        config
            .set_many(&[("proto-max-bulk-len", "1mb")])
            .expect("config");
        let mut h = Harness::with_config(config);
        let too_long = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
        assert_eq!(h.run(&["SETRANGE", "k", "1048575", "x"]), int(1_048_576));
        assert_eq!(h.run(&["APPEND", "k", "y"]), err(too_long));
        assert_eq!(h.run(&["SETRANGE", "k", "1048576", "x"]), err(too_long));
        assert_eq!(h.run(&["SETRANGE", "k", "1048575", "xy"]), err(too_long));
        assert_eq!(
            h.run(&["SETRANGE", "k", "9223372036854775807", "x"]),
            err(too_long)
        );
        assert_eq!(h.run(&["SETRANGE", "new", "1048576", "x"]), err(too_long));
        assert_eq!(h.run(&["GET", "new"]), Frame::Null);
        // Setting nothing is never too long.
        assert_eq!(h.run(&["SETRANGE", "k", "2000000", ""]), int(1_048_576));
        assert_eq!(h.run(&["SETRANGE", "k", "0", "ab"]), int(1_048_576));
        assert_eq!(
            h.run(&["GETRANGE", "k", "0", "2"]),
            Frame::Bulk(b"ab\x00".to_vec())
        );
        assert_eq!(h.run(&["STRLEN", "k"]), int(1_048_576));
    }

    #[test]
    fn getrange_like_redis_7_0() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SET", "s", "Hello World"]), ok());
        for (start, end, want) in [
            ("0", "-1", "Hello World"),
            ("0", "4", "Hello"),
            ("-3", "-1", "rld"),
            ("-1", "-3", ""),
            ("5", "3", ""),
            ("-100", "3", "Hell"),
            ("0", "100", "Hello World"),
            ("100", "200", ""),
            ("-100", "-50", "H"),
            ("3", "-100", ""),
            ("-1", "-1", "d"),
            ("10", "10", "d"),
            ("-9223372036854775808", "9223372036854775807", "Hello World"),
        ] {
            assert_eq!(
                h.run(&["GETRANGE", "s", start, end]),
                bulk(want),
                "{start} {end}"
            );
        }
        assert_eq!(h.run(&["SUBSTR", "s", "6", "-1"]), bulk("World"));
        assert_eq!(h.run(&["GETRANGE", "missing", "0", "-1"]), bulk(""));
        assert_eq!(h.run(&["SET", "e", ""]), ok());
        assert_eq!(h.run(&["GETRANGE", "e", "0", "-1"]), bulk(""));
        let not_int = err("ERR value is not an integer or out of range");
        assert_eq!(h.run(&["GETRANGE", "s", "a", "1"]), not_int);
        assert_eq!(h.run(&["GETRANGE", "missing", "0", "b"]), not_int);
        assert_eq!(
            h.run(&["SUBSTR", "s", "0"]),
            err("ERR wrong number of arguments for 'substr' command")
        );
        h.out.proto = Protocol::Resp3;
        assert_eq!(
            h.run_raw(&[b"GETRANGE", b"missing", b"0", b"1"]),
            b"$0\r\n\r\n"
        );
    }

    #[test]
    fn setrange() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SETRANGE", "k", "0", ""]), int(0));
        assert_eq!(h.server.keyspace.db(0).len(), 0, "nothing created");
        assert_eq!(h.run(&["SETRANGE", "k", "3", "ab"]), int(5));
        assert_eq!(
            h.run(&["GET", "k"]),
            Frame::Bulk(b"\x00\x00\x00ab".to_vec())
        );
        assert_eq!(h.run(&["SETRANGE", "k", "0", "xyz"]), int(5));
        assert_eq!(h.run(&["GET", "k"]), bulk("xyzab"));
        assert_eq!(h.run(&["SETRANGE", "k", "4", "12"]), int(6));
        assert_eq!(h.run(&["GET", "k"]), bulk("xyza12"));
        assert_eq!(h.run(&["SETRANGE", "k", "100", ""]), int(6));
        assert_eq!(h.run(&["SET", "w", "Hello World"]), ok());
        assert_eq!(h.run(&["SETRANGE", "w", "6", "Redis"]), int(11));
        assert_eq!(h.run(&["GET", "w"]), bulk("Hello Redis"));
        assert_eq!(
            h.run(&["SETRANGE", "w", "-1", "x"]),
            err("ERR offset is out of range")
        );
        assert_eq!(
            h.run(&["SETRANGE", "w", "a", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(h.run(&["GET", "w"]), bulk("Hello Redis"));
    }

    #[test]
    fn getrange_bounds_never_exceed_the_string() {
        let samples = [
            i64::MIN,
            -1000,
            -12,
            -11,
            -10,
            -2,
            -1,
            0,
            1,
            5,
            10,
            11,
            12,
            1000,
            i64::MAX,
        ];
        for len in [0usize, 1, 11] {
            for &s in &samples {
                for &e in &samples {
                    let r = getrange_bounds(len, s, e);
                    assert!(r.start <= r.end && r.end <= len, "{len} {s} {e} {r:?}");
                }
            }
        }
    }

    #[test]
    fn lcs_like_redis() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["MSET", "a", "ohmytext", "b", "mynewtext"]), ok());
        assert_eq!(h.run(&["LCS", "a", "b"]), bulk("mytext"));
        assert_eq!(h.run(&["LCS", "a", "b", "WITHMATCHLEN"]), bulk("mytext"));
        assert_eq!(h.run(&["LCS", "a", "b", "len"]), int(6));
        let full = Frame::Array(vec![
            bulk("matches"),
            Frame::Array(vec![
                Frame::Array(vec![ints(4, 7), ints(5, 8)]),
                Frame::Array(vec![ints(2, 3), ints(0, 1)]),
            ]),
            bulk("len"),
            int(6),
        ]);
        assert_eq!(h.run(&["LCS", "a", "b", "IDX"]), full);
        assert_eq!(h.run(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "-5"]), full);
        assert_eq!(
            h.run(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]),
            Frame::Array(vec![
                bulk("matches"),
                Frame::Array(vec![Frame::Array(vec![ints(4, 7), ints(5, 8), int(4)])]),
                bulk("len"),
                int(6),
            ])
        );
        assert_eq!(h.run(&["LCS", "a", "nokey"]), bulk(""));
        assert_eq!(h.run(&["LCS", "nokey", "nokey", "LEN"]), int(0));
        assert_eq!(
            h.run(&["LCS", "a", "nokey", "IDX"]),
            Frame::Array(vec![
                bulk("matches"),
                Frame::Array(vec![]),
                bulk("len"),
                int(0)
            ])
        );
        assert_eq!(h.run(&["LCS", "a", "a"]), bulk("ohmytext"));
        for (argv, want) in [
            (&["LCS", "a", "b", "BAD"][..], "ERR syntax error"),
            (&["LCS", "a", "b", "MINMATCHLEN"], "ERR syntax error"),
            (
                &["LCS", "a", "b", "MINMATCHLEN", "x"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["LCS", "a", "b", "LEN", "IDX"],
                "ERR If you want both the length and indexes, please just use IDX.",
            ),
            (
                &["LCS", "a", "b", "IDX", "IDX", "LEN"],
                "ERR If you want both the length and indexes, please just use IDX.",
            ),
            (
                &["LCS", "a"],
                "ERR wrong number of arguments for 'lcs' command",
            ),
        ] {
            assert_eq!(h.run(argv), err(want), "{argv:?}");
        }
    }

    #[test]
    fn lcs_idx_is_a_map_in_resp3() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["MSET", "a", "ohmytext", "b", "mynewtext"]), ok());
        h.out.proto = Protocol::Resp3;
        assert_eq!(
            h.run(&["LCS", "a", "b", "IDX", "WITHMATCHLEN"]),
            Frame::Map(vec![
                (
                    bulk("matches"),
                    Frame::Array(vec![
                        Frame::Array(vec![ints(4, 7), ints(5, 8), int(4)]),
                        Frame::Array(vec![ints(2, 3), ints(0, 1), int(2)]),
                    ])
                ),
                (bulk("len"), int(6)),
            ])
        );
        assert_eq!(
            h.run(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "100"]),
            Frame::Map(vec![
                (bulk("matches"), Frame::Array(vec![])),
                (bulk("len"), int(6)),
            ])
        );
    }

    #[test]
    fn lcs_table_limit() {
        // The table needs (len_a + 1) * (len_b + 1) * 4 bytes: 601 * 601 * 4 > 1 MiB.
        let config = Config::new();
        config
            .set_many(&[("proto-max-bulk-len", "1mb")])
            .expect("config");
        let mut h = Harness::with_config(config);
        let big = "x".repeat(600);
        assert_eq!(h.run(&["MSET", "a", &big, "b", &big]), ok());
        assert_eq!(
            h.run(&["LCS", "a", "b"]),
            err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
        );
        let fits = "y".repeat(400);
        assert_eq!(h.run(&["MSET", "a", &fits, "b", &fits]), ok());
        assert_eq!(h.run(&["LCS", "a", "b", "LEN"]), int(400));
    }

    #[test]
    fn lcs_of_random_strings_is_common_and_maximal() {
        // Compare the length with a plain recursive LCS and check that the returned string is
        // a subsequence of both inputs.
        fn lcs_len(
            a: &[u8],
            b: &[u8],
            memo: &mut std::collections::HashMap<(usize, usize), usize>,
        ) -> usize {
            if a.is_empty() || b.is_empty() {
                return 0;
            }
            if let Some(&v) = memo.get(&(a.len(), b.len())) {
                return v;
            }
            let v = if a[0] == b[0] {
                1 + lcs_len(&a[1..], &b[1..], memo)
            } else {
                lcs_len(&a[1..], b, memo).max(lcs_len(a, &b[1..], memo))
            };
            memo.insert((a.len(), b.len()), v);
            v
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = crate::state::xorshift(seed);
            seed
        };
        let mut h = Harness::new();
        for _ in 0..30 {
            let a: String = (0..next() % 40)
                .map(|_| (b'a' + (next() % 4) as u8) as char)
                .collect();
            let b: String = (0..next() % 40)
                .map(|_| (b'a' + (next() % 4) as u8) as char)
                .collect();
            assert_eq!(h.run(&["MSET", "a", &a, "b", &b]), ok());
            let Frame::Bulk(common) = h.run(&["LCS", "a", "b"]) else {
                panic!("bulk")
            };
            let is_subsequence = |s: &[u8]| {
                let mut it = s.iter();
                common.iter().all(|ch| it.any(|x| x == ch))
            };
            assert!(is_subsequence(a.as_bytes()) && is_subsequence(b.as_bytes()));
            let want = lcs_len(a.as_bytes(), b.as_bytes(), &mut Default::default());
            assert_eq!(common.len(), want);
            assert_eq!(h.run(&["LCS", "a", "b", "LEN"]), int(want as i64));
        }
    }
}
