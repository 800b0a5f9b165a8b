//! On-disk layout: constants, value type tags, the header codec and the varint codec.
//!
//! The byte diagram lives in `docs/cache-format.md`; this module is its executable form. All
//! integers are little-endian and fixed-width except record-internal lengths, which are LEB128
//! varints.

use std::fmt;

use crate::error::Error;

/// The first eight bytes of every cache file.
pub const MAGIC: [u8; 8] = *b"LARDCACH";
/// The format version this crate writes and the only one it reads.
pub const FORMAT_VERSION: u32 = 1;
/// Length of the fixed header at offset 0.
pub const HEADER_LEN: usize = 512;
/// Longest cache name, in bytes of UTF-8.
pub const NAME_LEN_MAX: usize = 256;
/// Longest key, in bytes.
pub const KEY_LEN_MAX: usize = 64 * 1024;
/// The index section starts on a multiple of this (one cache line).
pub const INDEX_ALIGN: u64 = 64;

/// Header flag: the builder deduplicated repeated values.
pub const FLAG_DEDUP: u32 = 1;
const FLAGS_KNOWN: u32 = FLAG_DEDUP;

/// A value tag with this bit set is a reference to an identical value stored earlier.
pub const TAG_REF: u8 = 0x80;
/// Tags `0x40..=0x7f` are strings of at most 63 bytes whose length is the tag's low six bits,
/// saving the length byte on the most common kind of value.
pub const TAG_SHORT_STR: u8 = 0x40;
/// The length bits of a short-string tag.
pub const SHORT_STR_LEN_MASK: u8 = 0x3f;

/// Bytes per index bucket: one cache line.
pub const BUCKET_LEN: usize = 64;
/// Entries per bucket with 4-byte record offsets: 12 tag bytes, 4 reserved, 12 offsets.
pub const NARROW_LANES: usize = 12;
/// Entries per bucket with 8-byte record offsets: 7 tag bytes, 1 reserved, 7 offsets.
pub const WIDE_LANES: usize = 7;

// Header field offsets. Keep in step with docs/cache-format.md.
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_FLAGS: usize = 12;
const H_HEADER_LEN: usize = 16;
const H_OFFSET_WIDTH: usize = 20;
const H_CREATED: usize = 24;
const H_KEY_COUNT: usize = 32;
const H_VALUE_COUNT: usize = 40;
const H_DATA_OFFSET: usize = 48;
const H_DATA_LEN: usize = 56;
const H_INDEX_OFFSET: usize = 64;
const H_BUCKET_COUNT: usize = 72;
const H_HOME_BUCKET_COUNT: usize = 80;
const H_PROBE_MAX: usize = 88;
const H_FILE_LEN: usize = 96;
const H_RAW_KEY_BYTES: usize = 104;
const H_RAW_VALUE_BYTES: usize = 112;
const H_DEDUP_SAVED: usize = 120;
const H_DATA_XXH3: usize = 128;
const H_INDEX_XXH3: usize = 136;
const H_DISPLACED_KEYS: usize = 144;
const H_NAME_LEN: usize = 152;
const H_NAME: usize = 154;
/// The header checksum covers bytes `0..H_HEADER_XXH3`.
pub const H_HEADER_XXH3: usize = 504;

/// The type of a stored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum ValueType {
    /// Arbitrary bytes.
    Bytes = 1,
    /// UTF-8 text.
    Str = 2,
    /// A signed 64-bit integer.
    I64 = 3,
    /// A 64-bit float.
    F64 = 4,
    /// A boolean.
    Bool = 5,
    /// A list of 32-bit floats, read in place as `&[f32]`.
    F32List = 6,
    /// A list of 64-bit floats, read in place as `&[f64]`.
    F64List = 7,
    /// A list of UTF-8 strings.
    StrList = 8,
}

impl ValueType {
    /// Decodes a tag byte (without [`TAG_REF`]).
    pub fn from_tag(tag: u8) -> Option<ValueType> {
        Some(match tag {
            1 => ValueType::Bytes,
            2 => ValueType::Str,
            3 => ValueType::I64,
            4 => ValueType::F64,
            5 => ValueType::Bool,
            6 => ValueType::F32List,
            7 => ValueType::F64List,
            8 => ValueType::StrList,
            _ => return None,
        })
    }

    /// The lower-case name used in messages and by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Bytes => "bytes",
            ValueType::Str => "str",
            ValueType::I64 => "i64",
            ValueType::F64 => "f64",
            ValueType::Bool => "bool",
            ValueType::F32List => "list<f32>",
            ValueType::F64List => "list<f64>",
            ValueType::StrList => "list<str>",
        }
    }

    /// Where the tag byte must sit so that the payload lands aligned: `(modulus, residue)`.
    ///
    /// Fixing the tag's residue makes a value's encoding independent of where it is written,
    /// which is what lets the builder deduplicate values by comparing encoded bytes.
    pub(crate) fn tag_alignment(self) -> (u64, u64) {
        match self {
            ValueType::Bytes | ValueType::Str | ValueType::Bool => (1, 0),
            ValueType::I64 | ValueType::F64 => (8, 7),
            ValueType::F32List | ValueType::F64List | ValueType::StrList => (8, 0),
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The decoded fixed header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub flags: u32,
    /// Bytes per record offset in an index bucket: 4 (12 entries per bucket) or 8 (7).
    pub offset_width: u8,
    pub created_unix_ms: u64,
    pub key_count: u64,
    pub value_count: u64,
    pub data_offset: u64,
    pub data_len: u64,
    pub index_offset: u64,
    /// Buckets in the index, including overflow buckets past the last home bucket.
    pub bucket_count: u64,
    /// Buckets a hash is mapped onto (`home = hash * home_bucket_count >> 64`).
    pub home_bucket_count: u64,
    /// Keys stored in a bucket after their home bucket (a statistic).
    pub displaced_keys: u64,
    pub probe_max: u64,
    pub file_len: u64,
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub dedup_saved_bytes: u64,
    pub data_xxh3: u64,
    pub index_xxh3: u64,
    pub name: String,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

impl Header {
    /// Encodes the header, computing its checksum.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[H_MAGIC..H_MAGIC + 8].copy_from_slice(&MAGIC);
        b[H_VERSION..H_VERSION + 4].copy_from_slice(&self.version.to_le_bytes());
        b[H_FLAGS..H_FLAGS + 4].copy_from_slice(&self.flags.to_le_bytes());
        b[H_HEADER_LEN..H_HEADER_LEN + 4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[H_OFFSET_WIDTH] = self.offset_width;
        let fields = [
            (H_CREATED, self.created_unix_ms),
            (H_KEY_COUNT, self.key_count),
            (H_VALUE_COUNT, self.value_count),
            (H_DATA_OFFSET, self.data_offset),
            (H_DATA_LEN, self.data_len),
            (H_INDEX_OFFSET, self.index_offset),
            (H_BUCKET_COUNT, self.bucket_count),
            (H_HOME_BUCKET_COUNT, self.home_bucket_count),
            (H_DISPLACED_KEYS, self.displaced_keys),
            (H_PROBE_MAX, self.probe_max),
            (H_FILE_LEN, self.file_len),
            (H_RAW_KEY_BYTES, self.raw_key_bytes),
            (H_RAW_VALUE_BYTES, self.raw_value_bytes),
            (H_DEDUP_SAVED, self.dedup_saved_bytes),
            (H_DATA_XXH3, self.data_xxh3),
            (H_INDEX_XXH3, self.index_xxh3),
        ];
        for (at, v) in fields {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        let name = self.name.as_bytes();
        let name_len = name.len().min(NAME_LEN_MAX);
        b[H_NAME_LEN..H_NAME_LEN + 2].copy_from_slice(&(name_len as u16).to_le_bytes());
        b[H_NAME..H_NAME + name_len].copy_from_slice(&name[..name_len]);
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..H_HEADER_XXH3]);
        b[H_HEADER_XXH3..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes and validates a header against the file's actual length.
    ///
    /// Every section bound is checked here, so readers may index the sections it describes
    /// without further overflow checks on the section boundaries themselves.
    pub fn decode(file: &[u8]) -> Result<Header, Error> {
        let actual_bytes = file.len() as u64;
        if file.len() < 16 {
            if file.len() >= 8 && file[..8] != MAGIC {
                return Err(Error::NotACacheFile);
            }
            return Err(Error::Truncated {
                expected_bytes: HEADER_LEN as u64,
                actual_bytes,
            });
        }
        if file[H_MAGIC..H_MAGIC + 8] != MAGIC {
            return Err(Error::NotACacheFile);
        }
        // The version is checked before the checksum so that a newer file, whose header may
        // be laid out differently, is reported as such rather than as corrupt.
        let version = u32_at(file, H_VERSION);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if file.len() < HEADER_LEN {
            return Err(Error::Truncated {
                expected_bytes: HEADER_LEN as u64,
                actual_bytes,
            });
        }
        let b = &file[..HEADER_LEN];
        let stored = u64_at(b, H_HEADER_XXH3);
        let computed = xxhash_rust::xxh3::xxh3_64(&b[..H_HEADER_XXH3]);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                section: "header",
                stored,
                computed,
            });
        }
        let flags = u32_at(b, H_FLAGS);
        if flags & !FLAGS_KNOWN != 0 {
            return Err(Error::UnsupportedFlags {
                unknown: flags & !FLAGS_KNOWN,
            });
        }
        let bad = |what, at: usize| Err(Error::corrupt(what, at));
        if u32_at(b, H_HEADER_LEN) as usize != HEADER_LEN {
            return bad("header length", H_HEADER_LEN);
        }
        let name_len = u16::from_le_bytes([b[H_NAME_LEN], b[H_NAME_LEN + 1]]) as usize;
        if name_len > NAME_LEN_MAX {
            return bad("name length", H_NAME_LEN);
        }
        let Ok(name) = std::str::from_utf8(&b[H_NAME..H_NAME + name_len]) else {
            return bad("name (not UTF-8)", H_NAME);
        };
        let h = Header {
            version,
            flags,
            offset_width: b[H_OFFSET_WIDTH],
            created_unix_ms: u64_at(b, H_CREATED),
            key_count: u64_at(b, H_KEY_COUNT),
            value_count: u64_at(b, H_VALUE_COUNT),
            data_offset: u64_at(b, H_DATA_OFFSET),
            data_len: u64_at(b, H_DATA_LEN),
            index_offset: u64_at(b, H_INDEX_OFFSET),
            bucket_count: u64_at(b, H_BUCKET_COUNT),
            home_bucket_count: u64_at(b, H_HOME_BUCKET_COUNT),
            displaced_keys: u64_at(b, H_DISPLACED_KEYS),
            probe_max: u64_at(b, H_PROBE_MAX),
            file_len: u64_at(b, H_FILE_LEN),
            raw_key_bytes: u64_at(b, H_RAW_KEY_BYTES),
            raw_value_bytes: u64_at(b, H_RAW_VALUE_BYTES),
            dedup_saved_bytes: u64_at(b, H_DEDUP_SAVED),
            data_xxh3: u64_at(b, H_DATA_XXH3),
            index_xxh3: u64_at(b, H_INDEX_XXH3),
            name: name.to_owned(),
        };
        if h.file_len != actual_bytes {
            return Err(Error::Truncated {
                expected_bytes: h.file_len,
                actual_bytes,
            });
        }
        if h.offset_width != 4 && h.offset_width != 8 {
            return bad("offset width", H_OFFSET_WIDTH);
        }
        if h.data_offset != HEADER_LEN as u64 {
            return bad("data offset", H_DATA_OFFSET);
        }
        let data_end = h.data_offset.checked_add(h.data_len);
        match data_end {
            Some(end) if end <= h.index_offset && (h.offset_width == 8 || end <= 1u64 << 32) => {}
            _ => return bad("data length", H_DATA_LEN),
        }
        if h.index_offset % INDEX_ALIGN != 0 {
            return bad("index offset", H_INDEX_OFFSET);
        }
        let index_len = h.bucket_count.checked_mul(BUCKET_LEN as u64);
        match index_len.and_then(|l| l.checked_add(h.index_offset)) {
            Some(end) if end == h.file_len && h.bucket_count > 0 => {}
            _ => return bad("bucket count", H_BUCKET_COUNT),
        }
        if h.home_bucket_count == 0 || h.home_bucket_count > h.bucket_count {
            return bad("home bucket count", H_HOME_BUCKET_COUNT);
        }
        if h.key_count > h.bucket_count * h.lanes() as u64 {
            return bad("key count", H_KEY_COUNT);
        }
        // A file whose size fits in memory has counts that fit in usize; the checks above
        // bound every count by the file length.
        Ok(h)
    }

    pub fn index_len(&self) -> u64 {
        self.bucket_count * BUCKET_LEN as u64
    }

    /// Entries per bucket.
    pub fn lanes(&self) -> usize {
        if self.offset_width == 4 {
            NARROW_LANES
        } else {
            WIDE_LANES
        }
    }

    pub fn data_end(&self) -> u64 {
        self.data_offset + self.data_len
    }
}

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes [`put_varint`] writes for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Reads a varint at `pos`; returns the value and the position after it.
#[inline]
pub fn get_varint(b: &[u8], pos: usize) -> Result<(u64, usize), Error> {
    match b.get(pos) {
        Some(&byte) if byte < 0x80 => Ok((u64::from(byte), pos + 1)),
        _ => get_varint_slow(b, pos),
    }
}

#[cold]
fn get_varint_slow(b: &[u8], pos: usize) -> Result<(u64, usize), Error> {
    let mut v = 0u64;
    for i in 0..10 {
        let Some(&byte) = b.get(pos + i) else {
            return Err(Error::corrupt("varint", pos));
        };
        let part = u64::from(byte & 0x7f);
        if i == 9 && part > 1 {
            return Err(Error::corrupt("varint", pos));
        }
        v |= part << (7 * i);
        if byte < 0x80 {
            return Ok((v, pos + i + 1));
        }
    }
    Err(Error::corrupt("varint", pos))
}

/// Rounds `v` up to a multiple of `align` (a power of two).
#[inline]
pub fn align_up(v: usize, align: usize) -> usize {
    (v + align - 1) & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            version: FORMAT_VERSION,
            flags: FLAG_DEDUP,
            offset_width: 4,
            created_unix_ms: 1_700_000_000_000,
            key_count: 1,
            value_count: 1,
            data_offset: HEADER_LEN as u64,
            data_len: 10,
            index_offset: 576,
            bucket_count: 2,
            home_bucket_count: 2,
            displaced_keys: 0,
            probe_max: 0,
            file_len: 704,
            raw_key_bytes: 3,
            raw_value_bytes: 3,
            dedup_saved_bytes: 0,
            data_xxh3: 7,
            index_xxh3: 9,
            name: "sample".into(),
        }
    }

    fn file_for(h: &Header) -> Vec<u8> {
        let mut f = vec![0u8; h.file_len as usize];
        f[..HEADER_LEN].copy_from_slice(&h.encode());
        f
    }

    #[test]
    fn header_round_trips() {
        let h = sample();
        assert_eq!(Header::decode(&file_for(&h)).ok(), Some(h));
    }

    #[test]
    fn header_rejects_bad_fields() {
        type Case = (fn(&mut Header), &'static str);
        let cases: Vec<Case> = vec![
            (|h| h.offset_width = 3, "offset width"),
            (|h| h.data_len = 100, "data length"),
            (|h| h.index_offset = 577, "index offset"),
            (|h| h.bucket_count = 3, "bucket count"),
            (|h| h.home_bucket_count = 3, "home bucket count"),
            (|h| h.key_count = 25, "key count"),
        ];
        for (mutate, what) in cases {
            let mut h = sample();
            mutate(&mut h);
            match Header::decode(&file_for(&h)) {
                Err(Error::Corrupt { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn header_reports_version_before_checksum() {
        let mut f = file_for(&sample());
        f[H_VERSION] = 2;
        assert!(matches!(
            Header::decode(&f),
            Err(Error::UnsupportedVersion {
                found: 2,
                supported: 1
            })
        ));
        f[0] = b'X';
        assert!(matches!(Header::decode(&f), Err(Error::NotACacheFile)));
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, 65_536, u32::MAX as u64, u64::MAX] {
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(get_varint(&out, 0).ok(), Some((v, out.len())));
            assert!(get_varint(&out[..out.len() - 1], 0).is_err());
        }
        assert!(get_varint(&[0xff; 11], 0).is_err());
    }
}
