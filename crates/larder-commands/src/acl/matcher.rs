//! A compiled set of key patterns: whether any of them matches a key, in time that does not
//! grow with the number of literal and `prefix*` patterns.
//!
//! Patterns fall into three classes: literals (no `*?[\`) in a hash set; `literal*` patterns
//! in a hash set probed once per distinct prefix length; the rest matched one by one with
//! Redis's glob (`larder_engine::glob`). Users with many key patterns mostly write the first
//! two kinds, so a check costs a few hash probes rather than a glob per pattern.

use hashbrown::HashSet;
use larder_engine::glob;

use super::access::{READ, WRITE};

/// Whether a byte makes a pattern more than a literal.
fn is_special(b: u8) -> bool {
    matches!(b, b'*' | b'?' | b'[' | b'\\')
}

#[derive(Default, Clone)]
pub struct KeyMatcher {
    /// A `*` pattern (or a `**`...): everything matches.
    any: bool,
    exact: HashSet<Vec<u8>>,
    prefixes: HashSet<Vec<u8>>,
    /// The distinct lengths of `prefixes`, ascending.
    prefix_lens: Vec<usize>,
    globs: Vec<Vec<u8>>,
}

impl KeyMatcher {
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a [u8]>) -> KeyMatcher {
        let mut m = KeyMatcher::default();
        for p in patterns {
            let literal_len = p.iter().position(|&b| is_special(b)).unwrap_or(p.len());
            if literal_len == p.len() {
                m.exact.insert(p.to_vec());
            } else if p[literal_len..].iter().all(|&b| b == b'*') {
                if literal_len == 0 {
                    m.any = true;
                }
                m.prefixes.insert(p[..literal_len].to_vec());
            } else {
                m.globs.push(p.to_vec());
            }
        }
        m.prefix_lens = m.prefixes.iter().map(Vec::len).collect();
        m.prefix_lens.sort_unstable();
        m.prefix_lens.dedup();
        m
    }

    /// Whether some pattern matches `key` (case-sensitive, as Redis's ACL).
    pub fn matches(&self, key: &[u8]) -> bool {
        if self.any || self.exact.contains(key) {
            return true;
        }
        for &len in &self.prefix_lens {
            if len > key.len() {
                break;
            }
            if self.prefixes.contains(&key[..len]) {
                return true;
            }
        }
        self.globs.iter().any(|p| glob::matches(p, key, false))
    }
}

/// One selector's key patterns, compiled once per access a key may need: a key needing read
/// and write must match one pattern that grants both (Redis's `ACLSelectorCheckKey`).
#[derive(Clone)]
pub struct SelectorKeys {
    /// Every pattern: keys whose key spec asks for no access.
    any: KeyMatcher,
    read: KeyMatcher,
    write: KeyMatcher,
    both: KeyMatcher,
}

impl SelectorKeys {
    /// From `(pattern, access bits)` pairs.
    pub fn new(patterns: &[(Vec<u8>, u8)]) -> SelectorKeys {
        let with = |need: u8| {
            KeyMatcher::new(
                patterns
                    .iter()
                    .filter(move |(_, bits)| bits & need == need)
                    .map(|(p, _)| p.as_slice()),
            )
        };
        SelectorKeys {
            any: with(0),
            read: with(READ),
            write: with(WRITE),
            both: with(READ | WRITE),
        }
    }

    /// Whether some pattern granting `access` matches `key`.
    #[inline]
    pub fn allows(&self, key: &[u8], access: u8) -> bool {
        match access & (READ | WRITE) {
            0 => &self.any,
            READ => &self.read,
            WRITE => &self.write,
            _ => &self.both,
        }
        .matches(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::xorshift;

    #[test]
    fn classes() {
        let pats: [&[u8]; 5] = [b"user:1", b"cache:*", b"a?c", b"x[yz]", b"lit\\*"];
        let m = KeyMatcher::new(pats);
        assert!(m.matches(b"user:1") && !m.matches(b"user:12"));
        assert!(m.matches(b"cache:") && m.matches(b"cache:9") && !m.matches(b"cach"));
        assert!(m.matches(b"abc") && m.matches(b"xz") && m.matches(b"lit*"));
        assert!(!m.matches(b"") && !m.matches(b"litx"));
        assert!(KeyMatcher::new([&b"**"[..]]).matches(b""));
        assert!(!KeyMatcher::new([]).matches(b"k"));
    }

    #[test]
    fn access_classes() {
        let k = SelectorKeys::new(&[
            (b"r*".to_vec(), READ),
            (b"w*".to_vec(), WRITE),
            (b"b*".to_vec(), READ | WRITE),
        ]);
        assert!(k.allows(b"r1", READ) && !k.allows(b"r1", WRITE) && !k.allows(b"r1", 3));
        assert!(k.allows(b"w1", WRITE) && !k.allows(b"w1", READ));
        assert!(k.allows(b"b1", 3) && k.allows(b"b1", READ) && k.allows(b"r1", 0));
    }

    /// The model: the compiled matcher answers as a glob per pattern does, on random
    /// patterns and keys over a small alphabet (so that they often match).
    #[test]
    fn agrees_with_a_glob_loop() {
        const PAT: &[u8] = b"ab:*?[]\\^-";
        const KEY: &[u8] = b"ab:*?[]";
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            x = xorshift(x);
            (x % n as u64) as usize
        };
        for _ in 0..300 {
            let count = next(12);
            let mut pats: Vec<Vec<u8>> = Vec::new();
            for _ in 0..count {
                let len = next(7);
                let mut p: Vec<u8> = (0..len).map(|_| PAT[next(PAT.len())]).collect();
                // Plenty of plain literals and `literal*` patterns, the fast classes.
                match next(3) {
                    0 => p.retain(|&b| !is_special(b)),
                    1 => {
                        p.retain(|&b| !is_special(b));
                        p.push(b'*');
                    }
                    _ => {}
                }
                pats.push(p);
            }
            let m = KeyMatcher::new(pats.iter().map(Vec::as_slice));
            for _ in 0..200 {
                let len = next(6);
                let key: Vec<u8> = (0..len).map(|_| KEY[next(KEY.len())]).collect();
                let want = pats.iter().any(|p| glob::matches(p, &key, false));
                assert_eq!(m.matches(&key), want, "patterns {pats:?} key {key:?}");
            }
        }
    }
}
