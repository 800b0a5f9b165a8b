//! DEBUG DIGEST and DIGEST-VALUE: Redis 7.0's dataset and value digests (debug.c's
//! `computeDatasetDigest` and `xorObjectDigest`), byte for byte, so that a larder and a
//! redis-server holding the same data print the same 40 hex digits.
//!
//! Two primitives build everything: [`xor_digest`] (`digest ^= SHA1(data)`, commutative, for
//! unordered collections) and [`mix_digest`] (`digest = SHA1(digest ^ SHA1(data))`, order
//! dependent, for sequences). A value's digest mixes its type number, then its contents
//! (strings as bytes, lists element by element, sets as the xor of their members, sorted sets
//! and hashes as the xor of one mixed digest per member/score or field/value pair, scores
//! printed `%.17g`), and xors in the literal `!!expire!!` when the key has a deadline (Redis
//! mixes the fact that a key expires, not its deadline). The dataset digest mixes each
//! non-empty database's number and xors in the SHA1 of every key's digest (its name mixed
//! first).

use larder_engine::{Entry, Object, ObjectKind};
use sha1::{Digest as _, Sha1};

/// A 20-byte SHA1-based digest.
pub type Digest = [u8; 20];

/// Redis's `OBJ_*` type numbers, mixed into each value's digest.
const OBJ_STRING: u32 = 0;
const OBJ_LIST: u32 = 1;
const OBJ_SET: u32 = 2;
const OBJ_ZSET: u32 = 3;
const OBJ_HASH: u32 = 4;
const OBJ_STREAM: u32 = 6;

/// SHA1 of `data`.
fn sha1(data: &[u8]) -> Digest {
    Sha1::digest(data).into()
}

/// `digest ^= SHA1(data)` (Redis's `xorDigest`): the order of xored items does not matter.
pub fn xor_digest(digest: &mut Digest, data: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(data)) {
        *d ^= h;
    }
}

/// `digest = SHA1(digest ^ SHA1(data))` (Redis's `mixDigest`): the order of mixed items
/// matters, and so do their boundaries ("foo","bar" differs from "fo","obar").
pub fn mix_digest(digest: &mut Digest, data: &[u8]) {
    xor_digest(digest, data);
    *digest = sha1(digest);
}

/// Lower-case hex, as DEBUG DIGEST prints a digest.
pub fn hex(digest: &Digest) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(40);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// C's `printf("%.17g", v)`, as Redis formats a score before mixing it.
pub use larder_persist::rdb::zset::g17;

/// Redis's type number for a value kind.
fn type_number(kind: ObjectKind) -> u32 {
    match kind {
        ObjectKind::String => OBJ_STRING,
        ObjectKind::List => OBJ_LIST,
        ObjectKind::Set => OBJ_SET,
        ObjectKind::ZSet => OBJ_ZSET,
        ObjectKind::Hash => OBJ_HASH,
        ObjectKind::Stream => OBJ_STREAM,
    }
}

/// Mix `entry`'s value (and whether it expires) into `digest`: Redis's `xorObjectDigest`.
/// DIGEST-VALUE starts it from zeros; the dataset digest from the key's mixed name.
pub fn value_digest(digest: &mut Digest, entry: &Entry) {
    mix_digest(digest, &type_number(entry.kind()).to_be_bytes());
    match entry.object() {
        None | Some(Object::Str(_) | Object::Shared(_)) => {
            mix_digest(digest, entry.string().unwrap_or_default());
        }
        Some(Object::List(l)) => {
            for element in l.iter() {
                mix_digest(digest, element);
            }
        }
        Some(Object::Set(s)) => {
            for member in s.iter() {
                member.with_bytes(|b| xor_digest(digest, b));
            }
        }
        Some(Object::ZSet(z)) => {
            for (member, score) in z.scored() {
                let mut element = [0u8; 20];
                mix_digest(&mut element, member);
                mix_digest(&mut element, g17(score).as_bytes());
                xor_digest(digest, &element);
            }
        }
        Some(Object::Hash(h)) => {
            for (field, value) in h.pairs() {
                let mut element = [0u8; 20];
                mix_digest(&mut element, field);
                mix_digest(&mut element, value);
                xor_digest(digest, &element);
            }
        }
        Some(Object::Stream(s)) => {
            use larder_engine::stream::StreamId;
            for (id, fields) in s.range(StreamId::MIN, StreamId::MAX, false) {
                mix_digest(digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                for (field, value) in fields {
                    mix_digest(digest, field);
                    mix_digest(digest, value);
                }
            }
        }
    }
    if entry.expire_at_ms().is_some() {
        xor_digest(digest, b"!!expire!!");
    }
}

/// One key's share of the dataset digest: its name mixed, then its value.
pub fn key_digest(entry: &Entry) -> Digest {
    let mut digest = [0u8; 20];
    mix_digest(&mut digest, entry.key());
    value_digest(&mut digest, entry);
    digest
}

/// Accumulates the dataset digest database by database (Redis's `computeDatasetDigest`):
/// call [`Dataset::database`] for each non-empty database in increasing order, then
/// [`Dataset::key`] for each of its keys in any order.
#[derive(Default)]
pub struct Dataset {
    pub digest: Digest,
}

impl Dataset {
    /// Start database `db` (skip empty databases: Redis mixes only those with keys).
    pub fn database(&mut self, db: usize) {
        mix_digest(&mut self.digest, &(db as u32).to_be_bytes());
    }

    /// Add one key of the current database: the SHA1 of its digest is xored in (Redis's
    /// `xorDigest(final, digest, 20)`).
    pub fn key(&mut self, entry: &Entry) {
        xor_digest(&mut self.digest, &key_digest(entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Digest {
        let mut d = [0u8; 20];
        for (i, b) in d.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
        }
        d
    }

    /// FIPS 180 test vectors, through `xor_digest` from zeros (which is plain SHA1).
    #[test]
    fn xor_from_zero_is_sha1() {
        for (data, want) in [
            (&b""[..], "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
            (b"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
            ),
        ] {
            let mut d = [0u8; 20];
            xor_digest(&mut d, data);
            assert_eq!(hex(&d), want);
        }
    }

    #[test]
    fn xor_is_commutative_and_self_inverse() {
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        xor_digest(&mut a, b"x");
        xor_digest(&mut a, b"y");
        xor_digest(&mut b, b"y");
        xor_digest(&mut b, b"x");
        assert_eq!(a, b);
        xor_digest(&mut a, b"x");
        xor_digest(&mut a, b"y");
        assert_eq!(a, [0u8; 20]);
    }

    /// mix = SHA1(digest ^ SHA1(data)); from zeros that is SHA1(SHA1(data)).
    #[test]
    fn mix_hashes_the_xored_digest() {
        let mut d = [0u8; 20];
        mix_digest(&mut d, b"abc");
        assert_eq!(d, sha1(&unhex("a9993e364706816aba3e25717850c26c9cd0d89d")));
        let (mut ab, mut ba) = ([0u8; 20], [0u8; 20]);
        mix_digest(&mut ab, b"a");
        mix_digest(&mut ab, b"b");
        mix_digest(&mut ba, b"b");
        mix_digest(&mut ba, b"a");
        assert_ne!(ab, ba);
        let (mut split1, mut split2) = ([0u8; 20], [0u8; 20]);
        mix_digest(&mut split1, b"foo");
        mix_digest(&mut split1, b"bar");
        mix_digest(&mut split2, b"fo");
        mix_digest(&mut split2, b"obar");
        assert_ne!(split1, split2);
    }

    /// Expectations printed by C's printf("%.17g").
    #[test]
    fn g17_matches_printf() {
        for (v, want) in [
            (1.0, "1"),
            (-3.0, "-3"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (2.5, "2.5"),
            (1e17, "1e+17"),
            (1e16, "10000000000000000"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1e300, "1.0000000000000001e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (3.5e-7, "3.4999999999999998e-07"),
        ] {
            assert_eq!(g17(v), want, "{v}");
        }
    }
}
