//! A compiled set of key patterns: whether any of them matches a key, in time that grows with
//! the key's length, not with the number of patterns.
//!
//! Every pattern is split at its first glob character (`*?[\\`) into a literal head and a
//! rest. The heads form one radix trie, walked once along the key: a node where a literal
//! pattern ends accepts a key that ends there, a node where a `literal*` pattern's head ends
//! accepts every key that reaches it, and a node where another pattern's head ends holds that
//! pattern, matched whole with Redis's glob (`larder_engine::glob`) when the key reaches it.
//! Most key patterns are literals or prefixes, so a check is a walk of a few nodes; a glob is
//! tried only on keys that start with its literal head. The trie is flattened into arrays: the
//! root's children in a table by byte, every other node's edges sorted by byte, and a chain
//! of nodes with one child and nothing to accept merged into its first edge's label (`key:*`
//! among many other patterns is a table lookup and one three-byte comparison).

use std::collections::BTreeMap;

use larder_engine::glob;

use super::access::{READ, WRITE};

/// Whether a byte makes a pattern more than a literal.
fn is_special(b: u8) -> bool {
    matches!(b, b'*' | b'?' | b'[' | b'\\')
}

/// One trie node, flattened.
#[derive(Clone, Copy, Default)]
struct Node {
    /// The bytes after the edge's own byte that lead here: `labels[label..label + label_len]`.
    label: u32,
    label_len: u32,
    /// Its edges: `edges[first..first + count]`, sorted by byte.
    first: u32,
    count: u32,
    /// Its globs: `globs[glob_first..glob_first + glob_count]`.
    glob_first: u32,
    glob_count: u32,
    /// A literal pattern ends here.
    exact: bool,
    /// A `literal*` pattern ends here: every key reaching this node matches.
    prefix: bool,
}

/// No child of the root for this byte.
const NONE: u32 = u32::MAX;

#[derive(Clone)]
pub struct KeyMatcher {
    /// The root's child for each first byte (an index into `nodes`), or [`NONE`].
    root_children: Box<[u32; 256]>,
    nodes: Vec<Node>,
    /// (byte, child node) per edge.
    edges: Vec<(u8, u32)>,
    labels: Vec<u8>,
    globs: Vec<Vec<u8>>,
}

impl Default for KeyMatcher {
    fn default() -> Self {
        KeyMatcher::new([])
    }
}

/// The trie while it is built: one node per byte.
#[derive(Default)]
struct Building {
    children: BTreeMap<u8, usize>,
    exact: bool,
    prefix: bool,
    globs: Vec<Vec<u8>>,
}

impl Building {
    /// Nothing ends here and one edge leaves: a node a label can pass through.
    fn passes_through(&self) -> bool {
        !self.exact && !self.prefix && self.globs.is_empty() && self.children.len() == 1
    }
}

impl KeyMatcher {
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a [u8]>) -> KeyMatcher {
        let mut tree: Vec<Building> = vec![Building::default()];
        for p in patterns {
            let head = p.iter().position(|&b| is_special(b)).unwrap_or(p.len());
            let mut n = 0;
            for &b in &p[..head] {
                n = match tree[n].children.get(&b) {
                    Some(&c) => c,
                    None => {
                        tree.push(Building::default());
                        let c = tree.len() - 1;
                        tree[n].children.insert(b, c);
                        c
                    }
                };
            }
            if head == p.len() {
                tree[n].exact = true;
            } else if p[head..].iter().all(|&b| b == b'*') {
                tree[n].prefix = true;
            } else {
                tree[n].globs.push(p.to_vec());
            }
        }
        let mut m = KeyMatcher {
            root_children: Box::new([NONE; 256]),
            nodes: Vec::new(),
            edges: Vec::new(),
            labels: Vec::new(),
            globs: Vec::new(),
        };
        // Breadth first: (tree node, its label); the root has none.
        let mut queue = std::collections::VecDeque::from([(0usize, Vec::new())]);
        let mut pending_edges: Vec<Vec<(u8, usize, Vec<u8>)>> = Vec::new();
        while let Some((n, label)) = queue.pop_front() {
            let b = &mut tree[n];
            let mut out = Vec::new();
            for (&byte, &child) in &b.children {
                out.push((byte, child, Vec::new()));
            }
            m.nodes.push(Node {
                label: m.labels.len() as u32,
                label_len: label.len() as u32,
                glob_first: m.globs.len() as u32,
                glob_count: b.globs.len() as u32,
                exact: b.exact,
                prefix: b.prefix,
                ..Node::default()
            });
            m.labels.extend_from_slice(&label);
            m.globs.append(&mut b.globs);
            pending_edges.push(out);
            let last = pending_edges.len() - 1;
            for edge in &mut pending_edges[last] {
                // Follow the chain of pass-through nodes, collecting their bytes.
                let mut target = edge.1;
                while tree[target].passes_through() {
                    let (&byte, &next) = tree[target].children.iter().next().expect("one child");
                    edge.2.push(byte);
                    target = next;
                }
                edge.1 = target;
                queue.push_back((target, edge.2.clone()));
            }
        }
        // Nodes were numbered in the order they were queued: node i's children are the next
        // ones after all the children queued before them.
        let mut next = 1u32;
        for (i, out) in pending_edges.iter().enumerate() {
            m.nodes[i].first = m.edges.len() as u32;
            m.nodes[i].count = out.len() as u32;
            for &(byte, _, _) in out {
                if i == 0 {
                    m.root_children[usize::from(byte)] = next;
                }
                m.edges.push((byte, next));
                next += 1;
            }
        }
        m
    }

    /// Whether any pattern matches `key`.
    #[inline]
    pub fn matches(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// `None` when no pattern matches `key`; else `Some(n)` when a `literal*` pattern of
    /// head `key[..n]` does (so every key starting so matches too), `Some(usize::MAX)` when
    /// another pattern does.
    #[inline]
    fn find(&self, key: &[u8]) -> Option<usize> {
        let mut node = &self.nodes[0];
        let mut depth = 0;
        loop {
            if node.prefix {
                return Some(depth);
            }
            if self.globs_match(node, key) {
                return Some(usize::MAX);
            }
            let Some(&b) = key.get(depth) else {
                return node.exact.then_some(usize::MAX);
            };
            let child = if depth == 0 {
                self.root_children[usize::from(b)]
            } else {
                let edges = &self.edges[node.first as usize..(node.first + node.count) as usize];
                edges.iter().find(|e| e.0 == b).map_or(NONE, |e| e.1)
            };
            if child == NONE {
                return None;
            }
            node = &self.nodes[child as usize];
            depth += 1;
            if node.label_len > 0 {
                let label =
                    &self.labels[node.label as usize..(node.label + node.label_len) as usize];
                // Labels are short: a byte loop, not a call to memcmp.
                let rest = &key[depth..];
                if rest.len() < label.len() || rest.iter().zip(label).any(|(a, b)| a != b) {
                    return None;
                }
                depth += label.len();
            }
        }
    }

    #[inline]
    fn globs_match(&self, node: &Node, key: &[u8]) -> bool {
        node.glob_count > 0
            && self.globs[node.glob_first as usize..(node.glob_first + node.glob_count) as usize]
                .iter()
                .any(|p| glob::matches(p, key, false))
    }
}

#[derive(Clone)]
pub struct SelectorKeys {
    /// Unique among every `SelectorKeys` ever built (never reused, unlike an address): the
    /// key of a [`Memo`].
    id: u64,
    /// By the access bits a key needs (`READ | WRITE`, 0 to 3): every pattern for 0, the
    /// patterns granting read for 1, write for 2, both for 3.
    by_access: [KeyMatcher; 4],
}

/// The last `literal*` pattern that accepted a key on this thread: requests mostly touch keys
/// with a common prefix (`user:*`), and a key that starts with the same literal is accepted
/// by comparing a few bytes, without walking the trie (whose nodes the keyspace's own memory
/// traffic keeps pushing out of the cache).
#[derive(Clone, Copy)]
pub struct Memo {
    /// The `SelectorKeys::id` it holds for (0: none).
    id: u64,
    access: u8,
    len: u8,
    prefix: [u8; Memo::MAX],
}

impl Memo {
    /// The longest literal a memo keeps.
    const MAX: usize = 22;
    /// A memo that holds nothing.
    pub const EMPTY: Memo = Memo {
        id: 0,
        access: 0,
        len: 0,
        prefix: [0; Memo::MAX],
    };
}

impl SelectorKeys {
    /// From `(pattern, access bits)` pairs.
    pub fn new(patterns: &[(Vec<u8>, u8)]) -> SelectorKeys {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let with = |need: u8| {
            KeyMatcher::new(
                patterns
                    .iter()
                    .filter(move |(_, bits)| bits & need == need)
                    .map(|(p, _)| p.as_slice()),
            )
        };
        SelectorKeys {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            by_access: [with(0), with(READ), with(WRITE), with(READ | WRITE)],
        }
    }

    /// Whether some pattern granting `access` matches `key`.
    #[inline]
    pub fn allows(&self, key: &[u8], access: u8) -> bool {
        self.by_access[usize::from(access & (READ | WRITE))].matches(key)
    }

    /// [`SelectorKeys::allows`], trying `memo` first and keeping in it the `literal*`
    /// pattern that accepted the key.
    #[inline]
    pub fn allows_memo(&self, key: &[u8], access: u8, memo: &mut Memo) -> bool {
        let access = access & (READ | WRITE);
        if memo.id == self.id && memo.access == access {
            let len = usize::from(memo.len);
            if key.len() >= len && key[..len].iter().zip(&memo.prefix).all(|(a, b)| a == b) {
                return true;
            }
        }
        match self.by_access[usize::from(access)].find(key) {
            None => false,
            Some(n) => {
                if n <= Memo::MAX {
                    memo.id = self.id;
                    memo.access = access;
                    memo.len = n as u8;
                    memo.prefix[..n].copy_from_slice(&key[..n]);
                }
                true
            }
        }
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

    /// A memo never changes an answer: two selectors with different patterns share one memo
    /// (as a thread's checks of different users do), on random keys and access bits.
    #[test]
    fn memo_agrees_with_the_trie() {
        let a = SelectorKeys::new(&[
            (b"key:*".to_vec(), READ | WRITE),
            (b"k*".to_vec(), READ),
            (b"user:1".to_vec(), WRITE),
            (b"g?:*".to_vec(), READ | WRITE),
        ]);
        let b = SelectorKeys::new(&[(b"key:1*".to_vec(), WRITE), (b"x*".to_vec(), READ)]);
        const KEY: &[u8] = b"key:1uxg?*";
        let mut memo = Memo::EMPTY;
        let mut x = 0x1234_5678_9abc_def1u64;
        for _ in 0..20_000 {
            x = xorshift(x);
            // Keys often start with a pattern's literal, so the memo is hit and missed.
            const HEADS: [&[u8]; 7] = [b"", b"key:", b"key:1", b"k", b"x", b"user:1", b"g1:"];
            let len = (x % 4) as usize;
            let mut key = HEADS[((x >> 4) % 7) as usize].to_vec();
            key.extend((0..len).map(|i| KEY[((x >> (8 + 4 * i)) % KEY.len() as u64) as usize]));
            let access = ((x >> 60) % 4) as u8;
            let sel = if x & 1 == 0 { &a } else { &b };
            assert_eq!(
                sel.allows_memo(&key, access, &mut memo),
                sel.allows(&key, access),
                "key {key:?} access {access}"
            );
        }
    }
}
