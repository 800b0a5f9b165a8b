//! SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The walk itself is the engine's
//! `Db::scan`, which returns every key present for the whole iteration at least once.

use larder_engine::{Db, ObjectKind, ScanFilter};

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const INVALID_CURSOR: &str = "ERR invalid cursor";
const DEFAULT_COUNT: usize = 10;

const KINDS: &[ObjectKind] = &[
    ObjectKind::String,
    ObjectKind::List,
    ObjectKind::Hash,
    ObjectKind::Set,
    ObjectKind::ZSet,
    ObjectKind::Stream,
];

/// Parse a cursor like Redis's `parseScanCursorOrReply`, which uses C's `strtoul`: an optional
/// sign (a negative value wraps), decimal digits, nothing after them, no leading space, no
/// overflow. As in C, the text ends at a NUL byte, and an empty text is cursor 0.
pub(crate) fn parse_cursor(raw: &[u8]) -> Option<u64> {
    let text = raw.split(|&b| b == 0).next().unwrap_or_default();
    let Some((&first, _)) = text.split_first() else {
        return Some(0);
    };
    if matches!(first, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        return None;
    }
    let (negative, digits) = match first {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
pub(super) fn scan(c: &mut Cmd<'_>) -> Result<()> {
    let cursor = parse_cursor(c.args.next_arg()?).ok_or(Error::Static(INVALID_CURSOR))?;
    let mut count = DEFAULT_COUNT;
    let mut pattern = None;
    let mut type_name = None;
    while let Some(opt) = c.args.opt() {
        if c.args.remaining() == 0 {
            return Err(Error::Static(error::SYNTAX));
        }
        if opt.eq_ignore_ascii_case(b"count") {
            let n = parse_i64(c.args.next_arg()?).ok_or(Error::Static(error::NOT_INTEGER))?;
            if n < 1 {
                return Err(Error::Static(error::SYNTAX));
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if opt.eq_ignore_ascii_case(b"match") {
            let p = c.args.next_arg()?;
            pattern = (p != b"*").then_some(p);
        } else if opt.eq_ignore_ascii_case(b"type") {
            type_name = Some(c.args.next_arg()?);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    // Redis 7.0 compares type names case-insensitively; an unknown name matches no key.
    let kind = type_name.map(|name| {
        KINDS
            .iter()
            .copied()
            .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    });
    let filter = ScanFilter {
        pattern,
        kind: kind.flatten(),
    };
    let (next, mut keys) = Db::scan_with(c.lock_fn(c.conn.db), cursor, count, &filter, c.now_ms);
    if kind.is_some() {
        // Redis looks each candidate up to read its type, which counts as a keyspace hit.
        for _ in 0..keys.len() {
            c.hit(true);
        }
        if kind == Some(None) {
            keys.clear();
        }
    }
    c.out.array(2);
    c.out.bulk(next.to_string().as_bytes());
    c.out.array(keys.len());
    for key in &keys {
        c.out.bulk(key);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use larder_resp::Frame;

    use super::parse_cursor;
    use crate::testing::*;

    /// Run a full SCAN with extra options; returns every key seen and the number of calls.
    fn scan_all(h: &mut Harness, opts: &[&str]) -> (Vec<String>, usize) {
        let mut cursor = "0".to_string();
        let mut keys = Vec::new();
        let mut calls = 0;
        loop {
            let mut argv = vec!["SCAN", cursor.as_str()];
            argv.extend_from_slice(opts);
            let Frame::Array(parts) = h.run(&argv) else {
                panic!("scan reply")
            };
            let [Frame::Bulk(next), Frame::Array(batch)] = &parts[..] else {
                panic!("scan shape {parts:?}")
            };
            calls += 1;
            for k in batch {
                let Frame::Bulk(k) = k else { panic!("key") };
                keys.push(String::from_utf8_lossy(k).into_owned());
            }
            cursor = String::from_utf8_lossy(next).into_owned();
            if cursor == "0" {
                break;
            }
        }
        keys.sort();
        (keys, calls)
    }

    #[test]
    fn cursor_parsing_like_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"007"), Some(7));
        assert_eq!(parse_cursor(b"+1"), Some(1));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"5\0junk"), Some(5));
        for bad in [
            &b"18446744073709551616"[..],
            b"x",
            b" 1",
            b"1 ",
            b"+",
            b"-",
            b"1.0",
            b"0x10",
        ] {
            assert_eq!(
                parse_cursor(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn scan_walks_everything_with_options() {
        let mut h = Harness::new();
        for i in 0..300 {
            h.run(&["SET", &format!("user:{i}"), "v"]);
            h.run(&["SET", &format!("item:{i}"), "v"]);
        }
        let (all, calls) = scan_all(&mut h, &[]);
        assert_eq!(all.len(), 600);
        assert_eq!(all.iter().collect::<HashSet<_>>().len(), 600);
        assert!(calls > 1);
        let (users, _) = scan_all(&mut h, &["MATCH", "user:*", "COUNT", "1000"]);
        assert_eq!(users.len(), 300);
        assert!(users.iter().all(|k| k.starts_with("user:")));
        let (strings, _) = scan_all(&mut h, &["type", "STRING", "count", "50"]);
        assert_eq!(strings.len(), 600);
        let (hashes, _) = scan_all(&mut h, &["TYPE", "hash"]);
        assert!(hashes.is_empty());
        let (unknown, _) = scan_all(&mut h, &["TYPE", "foo", "MATCH", "*"]);
        assert!(unknown.is_empty());
        // Expired keys are skipped.
        h.run(&["PEXPIREAT", "user:0", "1"]);
        let (users, _) = scan_all(&mut h, &["MATCH", "user:*"]);
        assert_eq!(users.len(), 299);
    }

    #[test]
    fn scan_errors_and_reply_shape() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SCAN", "x"]), err("ERR invalid cursor"));
        assert_eq!(h.run(&["SCAN", "-"]), err("ERR invalid cursor"));
        assert_eq!(
            h.run(&["SCAN", "18446744073709551616"]),
            err("ERR invalid cursor")
        );
        assert_eq!(
            h.run(&["SCAN", "x", "COUNT", "0"]),
            err("ERR invalid cursor")
        );
        assert_eq!(h.run(&["SCAN", "0", "COUNT", "0"]), err("ERR syntax error"));
        assert_eq!(
            h.run(&["SCAN", "0", "COUNT", "-1"]),
            err("ERR syntax error")
        );
        assert_eq!(
            h.run(&["SCAN", "0", "COUNT", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            h.run(&["SCAN", "0", "COUNT", "99999999999999999999"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(h.run(&["SCAN", "0", "MATCH"]), err("ERR syntax error"));
        assert_eq!(h.run(&["SCAN", "0", "foo", "bar"]), err("ERR syntax error"));
        assert_eq!(
            h.run(&["SCAN"]),
            err("ERR wrong number of arguments for 'scan' command")
        );
        let empty = Frame::Array(vec![bulk("0"), Frame::Array(vec![])]);
        assert_eq!(h.run(&["SCAN", "0"]), empty);
        assert_eq!(h.run(&["SCAN", "-1"]), empty);
        assert_eq!(h.run(&["SCAN", ""]), empty);
        h.run(&["SET", "k", "v"]);
        assert_eq!(
            h.run(&["SCAN", "0", "COUNT", "1000"]),
            Frame::Array(vec![bulk("0"), Frame::Array(vec![bulk("k")])])
        );
        // RESP3 uses the same shape.
        h.out.proto = larder_resp::Protocol::Resp3;
        assert_eq!(
            h.run_raw(&[b"SCAN", b"0", b"COUNT", b"1000"]),
            b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"
        );
    }
}
