//! `stats detail on|off|dump`: per-prefix counts of gets, hits, sets and deletes, as
//! memcached's `stats_prefix.c` keeps them. A key's prefix is what comes before the first
//! `memcached-prefix-delimiter` (memcached's `-D`, `:` by default); a key without one is not
//! counted. Counting happens only while turned on (a relaxed load per request otherwise), for
//! the text and binary protocols' get, set-family and delete commands, as memcached does
//! (meta commands, incr/decr and touch are not counted there either).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// At most this many prefixes are kept: keys of a new prefix past it are not counted (the
/// counts live in memory; memcached has no such bound).
pub const MAX_PREFIXES: usize = 65_536;

/// One prefix's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    gets: u64,
    hits: u64,
    sets: u64,
    deletes: u64,
}

/// The door's per-prefix counts.
#[derive(Debug, Default)]
pub struct Detail {
    enabled: AtomicBool,
    prefixes: Mutex<HashMap<Vec<u8>, Counts>>,
}

impl Detail {
    /// `stats detail on` / `off`.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Whether counting is on (`stats settings` `detail_enabled`).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// A get of `key` (one per key of a multi-key get), found or not.
    pub fn get(&self, delimiter: u8, key: &[u8], hit: bool) {
        self.count(delimiter, key, |c| {
            c.gets += 1;
            c.hits += u64::from(hit);
        });
    }

    /// A set-family command (set, add, replace, append, prepend, cas), stored or not.
    pub fn set(&self, delimiter: u8, key: &[u8]) {
        self.count(delimiter, key, |c| c.sets += 1);
    }

    /// A delete, found or not.
    pub fn delete(&self, delimiter: u8, key: &[u8]) {
        self.count(delimiter, key, |c| c.deletes += 1);
    }

    fn count(&self, delimiter: u8, key: &[u8], f: impl FnOnce(&mut Counts)) {
        if !self.enabled() {
            return;
        }
        let Some(end) = key.iter().position(|&b| b == delimiter) else {
            return;
        };
        let prefix = &key[..end];
        let mut prefixes = self.prefixes.lock();
        if let Some(c) = prefixes.get_mut(prefix) {
            f(c);
        } else if prefixes.len() < MAX_PREFIXES {
            let mut c = Counts::default();
            f(&mut c);
            prefixes.insert(prefix.to_vec(), c);
        }
    }

    /// `stats detail dump`: memcached's lines (`PREFIX <p> get <n> hit <n> set <n> del <n>`),
    /// by prefix, then `END`. The counts stay (memcached keeps them across on/off too).
    pub fn dump(&self) -> Vec<u8> {
        let prefixes = self.prefixes.lock();
        let mut sorted: Vec<(&Vec<u8>, &Counts)> = prefixes.iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::with_capacity(64 * sorted.len() + 5);
        for (p, c) in sorted {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(p);
            out.extend_from_slice(
                format!(
                    " get {} hit {} set {} del {}\r\n",
                    c.gets, c.hits, c.sets, c.deletes
                )
                .as_bytes(),
            );
        }
        out.extend_from_slice(b"END\r\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_prefix_only_while_on() {
        let d = Detail::default();
        d.get(b':', b"a:1", true);
        assert_eq!(d.dump(), b"END\r\n");
        d.set_enabled(true);
        d.set(b':', b"a:1");
        d.get(b':', b"a:1", true);
        d.get(b':', b"a:2", false);
        d.get(b':', b"nodelimiter", true);
        d.delete(b':', b"zz:q");
        d.set(b':', b"a:9");
        d.set_enabled(false);
        d.get(b':', b"a:5", false);
        assert_eq!(
            String::from_utf8_lossy(&d.dump()),
            "PREFIX a get 2 hit 1 set 2 del 0\r\nPREFIX zz get 0 hit 0 set 0 del 1\r\nEND\r\n"
        );
        d.set_enabled(true);
        d.get(b'/', b"x/y", true);
        assert!(String::from_utf8_lossy(&d.dump()).contains("PREFIX x get 1 hit 1"));
    }

    #[test]
    fn prefixes_are_bounded() {
        let d = Detail::default();
        d.set_enabled(true);
        for i in 0..MAX_PREFIXES + 10 {
            d.set(b':', format!("p{i}:k").as_bytes());
        }
        assert_eq!(d.prefixes.lock().len(), MAX_PREFIXES);
    }
}
