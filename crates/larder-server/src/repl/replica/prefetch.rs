//! Cache hints for the stream a replica applies: the commands its master sent arrive many to
//! a read, and applying them one by one waits on one key lookup's cache misses after
//! another. Before applying a run of them, [`ahead`] finds each one's key (the second
//! argument, as the RESP door's pipelines do) with a scan of the RESP framing that copies
//! nothing, and hands the keys to `Db::prefetch`, so that their misses overlap.

use larder_engine::Db;

/// Prefetches the keys of the complete commands at the start of `buf` (up to
/// `Db::PREFETCH_BATCH` of them) in database `db`; returns how many bytes they take, so the
/// caller looks again only past them.
pub fn ahead(db: &Db, buf: &[u8]) -> usize {
    let mut keys = [&[][..]; Db::PREFETCH_BATCH];
    let (mut n, mut at) = (0, 0);
    while n < keys.len() {
        let Some((len, key)) = scan(&buf[at..]) else {
            break;
        };
        at += len;
        if let Some(key) = key {
            keys[n] = key;
            n += 1;
        }
    }
    if n > 1 {
        db.prefetch(&keys[..n]);
    }
    at
}

/// One complete multibulk request at the start of `buf`: its length in bytes and its
/// second argument, if any. `None` when the request is incomplete or not a multibulk one
/// (the parser that applies it says what is wrong).
fn scan(buf: &[u8]) -> Option<(usize, Option<&[u8]>)> {
    let (count, mut at) = number(buf, b'*')?;
    let mut key = None;
    for i in 0..count {
        let (len, from) = number(buf.get(at..)?, b'$')?;
        let start = at + from;
        let end = start.checked_add(len)?;
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        if i == 1 {
            key = Some(&buf[start..end]);
        }
        at = end + 2;
    }
    Some((at, key))
}

/// `<kind><decimal>\r\n` at the start of `buf`: the number and the bytes it took.
fn number(buf: &[u8], kind: u8) -> Option<(usize, usize)> {
    if buf.first() != Some(&kind) {
        return None;
    }
    let mut n = 0usize;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        match b {
            b'0'..=b'9' if i < 12 => n = n * 10 + usize::from(b - b'0'),
            b'\r' if i > 1 && buf.get(i + 1) == Some(&b'\n') => return Some((n, i + 2)),
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_whole_requests_and_their_keys() {
        let set = b"*3\r\n$3\r\nSET\r\n$4\r\nkey1\r\n$2\r\nvv\r\n";
        assert_eq!(scan(set), Some((set.len(), Some(&b"key1"[..]))));
        let ping = b"*1\r\n$4\r\nPING\r\n";
        assert_eq!(scan(ping), Some((ping.len(), None)));
        // Incomplete at every cut, and never past the buffer.
        for cut in 0..set.len() {
            assert_eq!(scan(&set[..cut]), None, "cut at {cut}");
        }
        // Not RESP multibulk, or damaged framing: no guess.
        assert_eq!(scan(b"PING\r\n"), None);
        assert_eq!(scan(b"*1\r\n$4\r\nPINGxx"), None);
        assert_eq!(scan(b"*1\r\n$99999999999999999999\r\n"), None);
        assert_eq!(scan(b"*-1\r\n"), None);
    }

    #[test]
    fn ahead_covers_the_complete_requests_only() {
        let ks = larder_engine::Keyspace::new(1);
        let mut buf = Vec::new();
        for i in 0..40 {
            buf.extend_from_slice(format!("*2\r\n$3\r\nGET\r\n$3\r\nk{i:02}\r\n").as_bytes());
        }
        let one = buf.len() / 40;
        // The first 32 (a batch), not the rest.
        assert_eq!(ahead(ks.db(0), &buf), 32 * one);
        // A torn request at the end is left for later.
        assert_eq!(ahead(ks.db(0), &buf[..3 * one + 5]), 3 * one);
    }
}
