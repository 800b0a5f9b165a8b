//! The reader: open a cache file, look keys up, iterate, verify.
//!
//! A lookup hashes the key with xxh3, reads its home bucket (one cache line of tag bytes and
//! record offsets), and touches a record only when its tag matches; the record holds the key
//! and the value side by side, so a hit costs about two cache misses. No lookup takes a lock or
//! allocates: bytes, strings and lists are borrowed from the mapping. Decoding the value a
//! lookup found is `reader/decode.rs`'s.

mod decode;

use std::fs::File;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use self::decode::Payload;
use crate::error::Error;
use crate::format::{
    get_varint, Header, ValueType, BUCKET_LEN, FLAG_DEDUP, FORMAT_VERSION, HEADER_LEN,
    NARROW_LANES, WIDE_LANES,
};
use crate::index::{bucket_tag, home_bucket, lane_masks, lane_offset};
use crate::value::{StrList, ValueRef};
use crate::view::Mapping;

/// An open, memory-mapped cache file. Cheap to share between threads (`&Cache` is `Sync`).
pub struct Cache {
    map: Mapping,
    header: Header,
    path: PathBuf,
    /// `data_offset + data_len`, as usize: records and values must lie below it.
    data_end: usize,
    index_start: usize,
    index_end: usize,
}

/// Facts about a cache file, from its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheInfo {
    /// The user-given name.
    pub name: String,
    /// Format version of the file.
    pub format_version: u32,
    /// Build time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// Number of keys.
    pub key_count: u64,
    /// Number of values stored (less than `key_count` when dedup merged some).
    pub value_count: u64,
    /// Whether the builder deduplicated values.
    pub dedup: bool,
    /// Total file size.
    pub file_bytes: u64,
    /// Size of the record section.
    pub data_bytes: u64,
    /// Size of the hash index.
    pub index_bytes: u64,
    /// Number of 64-byte index buckets.
    pub bucket_count: u64,
    /// Bytes per record offset in the index (4, or 8 for files over 4 GiB).
    pub offset_width_bytes: u8,
    /// Keys stored past their home bucket (their lookups read a second cache line).
    pub displaced_keys: u64,
    /// Farthest any key sits from its home bucket, in buckets.
    pub probe_max: u64,
    /// Sum of key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value payload lengths as inserted (before dedup).
    pub raw_value_bytes: u64,
    /// Bytes that dedup saved.
    pub dedup_saved_bytes: u64,
}

/// Where the sections of an open file lie, as validated by [`Cache::open`]: for bindings that
/// read the mapping themselves instead of calling the lookup functions (the Go binding does, to
/// avoid a foreign call per lookup).
///
/// The open-time checks guarantee `data_end <= index_start < index_end == bytes.len()`,
/// `index_end - index_start` a multiple of 64 (the bucket length), `1 <= home_bucket_count <=`
/// the bucket count, and `offset_width` 4 or 8. A reader must still bounds-check every offset it
/// reads from the file, as this crate does: nothing past the header has been checked.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Layout<'a> {
    /// The whole mapped file; the offsets below are into it.
    pub bytes: &'a [u8],
    /// The format version (see [`crate::FORMAT_VERSION`]): the layout rules below are version 1's.
    pub format_version: u32,
    /// Bytes per record offset in an index bucket: 4 (12 lanes) or 8 (7 lanes).
    pub offset_width: u8,
    /// End of the record section: every record and value lies below it.
    pub data_end: u64,
    /// Start of the hash index (a multiple of 64).
    pub index_start: u64,
    /// End of the hash index.
    pub index_end: u64,
    /// Buckets a hash maps onto: `home = (hash * home_bucket_count) >> 64` (128-bit product).
    pub home_bucket_count: u64,
    /// Farthest any key sits past its home bucket, in buckets.
    pub probe_max: u64,
    /// Number of keys.
    pub key_count: u64,
}

impl Cache {
    /// Opens and maps a cache file, validating its header and section bounds.
    ///
    /// This is O(1) in the file size: it checks the header checksum but not the data and index
    /// checksums; call [`Cache::verify`] for that. Lookups on a file that is corrupt beyond the
    /// header return [`Error::Corrupt`] rather than misbehaving.
    pub fn open(path: impl AsRef<Path>) -> Result<Cache, Error> {
        let path = path.as_ref();
        let file = File::open(path)?;
        let map = Mapping::map(&file)?;
        Cache::from_mapping(map, path.to_path_buf())
    }

    fn from_mapping(map: Mapping, path: PathBuf) -> Result<Cache, Error> {
        let bytes = map.bytes();
        let header = Header::decode(bytes)?;
        // decode() guarantees every section lies inside the file, which is in memory.
        let data_end = header.data_end() as usize;
        let index_start = header.index_offset as usize;
        let index_end = index_start + header.index_len() as usize;
        Ok(Cache {
            map,
            header,
            path,
            data_end,
            index_start,
            index_end,
        })
    }

    /// The validated section bounds and the mapped bytes, for bindings that read in place.
    pub fn layout(&self) -> Layout<'_> {
        let h = &self.header;
        Layout {
            bytes: self.bytes(),
            format_version: h.version,
            offset_width: h.offset_width,
            data_end: self.data_end as u64,
            index_start: self.index_start as u64,
            index_end: self.index_end as u64,
            home_bucket_count: h.home_bucket_count,
            probe_max: h.probe_max,
            key_count: h.key_count,
        }
    }

    /// The path the cache was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user-given name.
    pub fn name(&self) -> &str {
        &self.header.name
    }

    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.header.key_count
    }

    /// Whether the cache holds no keys.
    pub fn is_empty(&self) -> bool {
        self.header.key_count == 0
    }

    /// Facts from the header.
    pub fn info(&self) -> CacheInfo {
        let h = &self.header;
        CacheInfo {
            name: h.name.clone(),
            format_version: h.version,
            created_unix_ms: h.created_unix_ms,
            key_count: h.key_count,
            value_count: h.value_count,
            dedup: h.flags & FLAG_DEDUP != 0,
            file_bytes: h.file_len,
            data_bytes: h.data_len,
            index_bytes: h.index_len(),
            bucket_count: h.bucket_count,
            offset_width_bytes: h.offset_width,
            displaced_keys: h.displaced_keys,
            probe_max: h.probe_max,
            raw_key_bytes: h.raw_key_bytes,
            raw_value_bytes: h.raw_value_bytes,
            dedup_saved_bytes: h.dedup_saved_bytes,
        }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    /// The file up to the end of the record section: every record and value lies in it.
    #[inline]
    fn data(&self) -> &[u8] {
        &self.bytes()[..self.data_end]
    }

    /// Finds `key`; returns the file offset just past the key inside its record.
    ///
    /// The home bucket is one aligned cache line: its 16 tag bytes are compared with the key's
    /// tag in one vector compare, and the matching lane's offset sits in the same line. Only a
    /// key displaced by a full bucket needs the next line. The common case has no data-dependent
    /// branch that can mispredict, which matters: a mispredict discards the loads of the
    /// lookups the CPU was running ahead on.
    #[inline(always)]
    fn find(&self, key: &[u8]) -> Result<Option<usize>, Error> {
        let hash = xxh3_64(key);
        let h = &self.header;
        let home = home_bucket(hash, h.home_bucket_count) as usize;
        let index = &self.bytes()[self.index_start..self.index_end];
        if h.offset_width == 4 {
            self.probe::<false>(index, home, hash, key)
        } else {
            self.probe::<true>(index, home, hash, key)
        }
    }

    #[inline(always)]
    fn probe<const WIDE: bool>(
        &self,
        index: &[u8],
        home: usize,
        hash: u64,
        key: &[u8],
    ) -> Result<Option<usize>, Error> {
        let tag = bucket_tag(hash);
        let lane_mask: u32 = if WIDE {
            (1 << WIDE_LANES) - 1
        } else {
            (1 << NARROW_LANES) - 1
        };
        let mut bucket = home;
        loop {
            let start = bucket * BUCKET_LEN;
            let Some(line) = index.get(start..start + BUCKET_LEN) else {
                return Ok(None);
            };
            let (hits, empties) = lane_masks(line, tag);
            let mut hits = hits & lane_mask;
            while hits != 0 {
                let lane = hits.trailing_zeros() as usize;
                let offset = lane_offset::<WIDE>(line, lane);
                if let Some(p) = self.match_key(offset, key)? {
                    return Ok(Some(p));
                }
                hits &= hits - 1;
            }
            // A hostile probe_max cannot run past the index: `get` above ends the walk.
            if empties & lane_mask != 0 || bucket - home >= self.header.probe_max as usize {
                return Ok(None);
            }
            bucket += 1;
        }
    }

    /// Compares the key of the record at `offset` with `key`.
    #[inline(always)]
    fn match_key(&self, offset: u64, key: &[u8]) -> Result<Option<usize>, Error> {
        let data = self.data();
        let offset = offset as usize;
        let (key_len, key_start) = get_varint(data, offset)?;
        if key_len != key.len() as u64 {
            return Ok(None);
        }
        match data.get(key_start..key_start + key.len()) {
            Some(stored) if bytes_eq(stored, key) => Ok(Some(key_start + key.len())),
            Some(_) => Ok(None),
            None => Err(Error::corrupt("record key", offset)),
        }
    }

    /// Finds `key` and checks its type; returns the payload offset, `Ok(None)` when absent.
    ///
    /// The common case, a plain value right after the key, is checked inline; padding before
    /// aligned values, dedup references and mismatches take the out-of-line path, which keeps
    /// the hot loop short (every instruction counts when lookups overlap in the CPU).
    #[inline(always)]
    fn typed(&self, key: &[u8], expected: ValueType) -> Result<Option<Payload>, Error> {
        let Some(pos) = self.find(key)? else {
            return Ok(None);
        };
        if let Some(&tag) = self.data().get(pos) {
            if expected == ValueType::Str {
                if let Some(payload) = Payload::short_str(tag, pos) {
                    return Ok(Some(payload));
                }
            }
            if tag == expected as u8 {
                return Ok(Some(Payload::at(pos + 1)));
            }
        }
        self.typed_slow(pos, expected).map(Some)
    }

    #[inline(never)]
    fn typed_slow(&self, pos: usize, expected: ValueType) -> Result<Payload, Error> {
        let (found, payload) = self.value_at(pos)?;
        if found != expected {
            return Err(Error::TypeMismatch { expected, found });
        }
        Ok(payload)
    }

    /// Looks `key` up, whatever its type.
    #[inline]
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<ValueRef<'_>>, Error> {
        let Some(pos) = self.find(key.as_ref())? else {
            return Ok(None);
        };
        // Short strings, the most common value, skip the general decoder.
        if let Some(payload) = self
            .data()
            .get(pos)
            .and_then(|&t| Payload::short_str(t, pos))
        {
            return self.read_str(payload).map(|s| Some(ValueRef::Str(s)));
        }
        self.get_slow(pos).map(Some)
    }

    #[inline(never)]
    fn get_slow(&self, pos: usize) -> Result<ValueRef<'_>, Error> {
        let (ty, payload) = self.value_at(pos)?;
        self.decode(ty, payload)
    }

    /// The type stored for `key`.
    pub fn value_type(&self, key: impl AsRef<[u8]>) -> Result<Option<ValueType>, Error> {
        match self.find(key.as_ref())? {
            Some(pos) => Ok(Some(self.value_at(pos)?.0)),
            None => Ok(None),
        }
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool, Error> {
        Ok(self.find(key.as_ref())?.is_some())
    }

    /// A bytes value. Strings are bytes too, so this also reads [`ValueType::Str`] values.
    pub fn get_bytes(&self, key: impl AsRef<[u8]>) -> Result<Option<&[u8]>, Error> {
        let Some(pos) = self.find(key.as_ref())? else {
            return Ok(None);
        };
        match self.value_at(pos)? {
            (ValueType::Bytes | ValueType::Str, payload) => self.read_bytes(payload).map(Some),
            (found, _) => Err(Error::TypeMismatch {
                expected: ValueType::Bytes,
                found,
            }),
        }
    }

    /// A string value.
    #[inline]
    pub fn get_str(&self, key: impl AsRef<[u8]>) -> Result<Option<&str>, Error> {
        match self.typed(key.as_ref(), ValueType::Str)? {
            Some(p) => self.read_str(p).map(Some),
            None => Ok(None),
        }
    }

    /// An integer value.
    pub fn get_i64(&self, key: impl AsRef<[u8]>) -> Result<Option<i64>, Error> {
        match self.typed(key.as_ref(), ValueType::I64)? {
            Some(p) => Ok(Some(i64::from_le_bytes(self.read_8(p.pos)?))),
            None => Ok(None),
        }
    }

    /// A float value.
    pub fn get_f64(&self, key: impl AsRef<[u8]>) -> Result<Option<f64>, Error> {
        match self.typed(key.as_ref(), ValueType::F64)? {
            Some(p) => Ok(Some(f64::from_le_bytes(self.read_8(p.pos)?))),
            None => Ok(None),
        }
    }

    /// A boolean value.
    pub fn get_bool(&self, key: impl AsRef<[u8]>) -> Result<Option<bool>, Error> {
        match self.typed(key.as_ref(), ValueType::Bool)? {
            Some(p) => self.read_bool(p.pos).map(Some),
            None => Ok(None),
        }
    }

    /// A list of `f32`, borrowed from the mapping.
    pub fn get_f32_list(&self, key: impl AsRef<[u8]>) -> Result<Option<&[f32]>, Error> {
        match self.typed(key.as_ref(), ValueType::F32List)? {
            Some(p) => self.read_f32s(p.pos).map(Some),
            None => Ok(None),
        }
    }

    /// A list of `f64`, borrowed from the mapping.
    pub fn get_f64_list(&self, key: impl AsRef<[u8]>) -> Result<Option<&[f64]>, Error> {
        match self.typed(key.as_ref(), ValueType::F64List)? {
            Some(p) => self.read_f64s(p.pos).map(Some),
            None => Ok(None),
        }
    }

    /// A list of strings, borrowed from the mapping.
    pub fn get_str_list(&self, key: impl AsRef<[u8]>) -> Result<Option<StrList<'_>>, Error> {
        match self.typed(key.as_ref(), ValueType::StrList)? {
            Some(p) => self.read_str_list(p.pos).map(Some),
            None => Ok(None),
        }
    }

    /// Iterates over all entries in index order (effectively random, but stable for a file).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            cache: self,
            next: 0,
        }
    }

    /// The (tag, record offset) in lane `lane` of bucket `bucket`; tag 0 is an empty lane.
    fn lane(&self, bucket: usize, lane: usize) -> (u8, u64) {
        let index = &self.bytes()[self.index_start..self.index_end];
        let line = &index[bucket * BUCKET_LEN..bucket * BUCKET_LEN + BUCKET_LEN];
        let offset = if self.header.offset_width == 4 {
            lane_offset::<false>(line, lane)
        } else {
            lane_offset::<true>(line, lane)
        };
        (line[lane], offset)
    }

    fn entry_at(&self, offset: u64) -> Result<(&[u8], ValueRef<'_>), Error> {
        let data = self.data();
        let offset = offset as usize;
        if offset < HEADER_LEN {
            return Err(Error::corrupt("index entry offset", offset));
        }
        let (key_len, key_start) = get_varint(data, offset)?;
        let key_end = key_start
            .checked_add(key_len as usize)
            .filter(|&e| e <= data.len())
            .ok_or(Error::corrupt("record key", offset))?;
        let key = &data[key_start..key_end];
        let (ty, payload) = self.value_at(key_end)?;
        Ok((key, self.decode(ty, payload)?))
    }

    /// Checks every checksum and every record: that each index entry points at a record whose
    /// key a lookup finds at that entry and whose value decodes.
    ///
    /// O(file size). Returns the first problem found.
    pub fn verify(&self) -> Result<(), Error> {
        let h = &self.header;
        let bytes = self.bytes();
        let sections = [
            (
                "data",
                h.data_xxh3,
                &bytes[h.data_offset as usize..self.data_end],
            ),
            (
                "index",
                h.index_xxh3,
                &bytes[self.index_start..self.index_end],
            ),
        ];
        for (section, stored, data) in sections {
            let mut hasher = Xxh3::new();
            hasher.update(data);
            let computed = hasher.digest();
            if computed != stored {
                return Err(Error::ChecksumMismatch {
                    section,
                    stored,
                    computed,
                });
            }
        }
        let mut keys = 0u64;
        for bucket in 0..h.bucket_count as usize {
            for lane in 0..h.lanes() {
                let at = self.index_start + bucket * BUCKET_LEN + lane;
                let (tag, offset) = self.lane(bucket, lane);
                if tag == 0 {
                    if offset != 0 {
                        return Err(Error::corrupt("empty index lane", at));
                    }
                    continue;
                }
                keys += 1;
                let (key, value) = self.entry_at(offset)?;
                // The entry must be where a lookup for its key looks.
                let key_end = key.as_ptr() as usize - self.bytes().as_ptr() as usize + key.len();
                if tag != bucket_tag(xxh3_64(key)) || self.find(key)? != Some(key_end) {
                    return Err(Error::corrupt("index entry", at));
                }
                if let ValueRef::StrList(list) = value {
                    list.to_vec()?;
                }
            }
        }
        if keys != h.key_count {
            return Err(Error::corrupt("key count", 0));
        }
        Ok(())
    }

    /// The format version this reader reads.
    pub const FORMAT_VERSION: u32 = FORMAT_VERSION;
}

/// Byte-slice equality with an inline path for keys of 4 to 16 bytes (two overlapping word
/// compares instead of a call to `memcmp`).
#[inline(always)]
fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn word8(s: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    }
    fn word4(s: &[u8], at: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_ne_bytes(w)
    }
    if (8..=16).contains(&n) {
        (word8(a, 0) ^ word8(b, 0)) | (word8(a, n - 8) ^ word8(b, n - 8)) == 0
    } else if (4..8).contains(&n) {
        (word4(a, 0) ^ word4(b, 0)) | (word4(a, n - 4) ^ word4(b, n - 4)) == 0
    } else {
        a == b
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.path)
            .field("name", &self.header.name)
            .field("key_count", &self.header.key_count)
            .finish()
    }
}

/// Iterator over `(key, value)` pairs; yields an error for a corrupt record and goes on.
pub struct Iter<'a> {
    cache: &'a Cache,
    /// Bucket * lanes + lane of the next lane to look at.
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<(&'a [u8], ValueRef<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let lanes = self.cache.header.lanes();
        let total = self.cache.header.bucket_count as usize * lanes;
        while self.next < total {
            let (tag, offset) = self.cache.lane(self.next / lanes, self.next % lanes);
            self.next += 1;
            if tag != 0 {
                return Some(self.cache.entry_at(offset));
            }
        }
        None
    }
}

impl<'a> IntoIterator for &'a Cache {
    type Item = Result<(&'a [u8], ValueRef<'a>), Error>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests;
