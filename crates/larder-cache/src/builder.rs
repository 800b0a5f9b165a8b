//! The streaming builder.
//!
//! Records go to a temporary file in the destination's directory as they are inserted; memory
//! holds only a `(hash, offset)` pair per key (16 bytes; 32 while `finish` sorts them), plus,
//! with dedup, one entry per distinct value. `finish` sorts the pairs, streams the index out,
//! writes the header last, syncs, and renames the file into place, so a reader sees either the
//! old file or the whole new one.
//!
//! Duplicate keys: the last insert wins by default ([`DuplicatePolicy::LastWins`]); the earlier
//! record stays in the file as dead bytes and is counted in [`BuildStats::duplicate_keys`].
//! [`DuplicatePolicy::Error`] makes `finish` fail instead.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::error::Error;
use crate::format::{
    put_varint, varint_len, Header, ValueType, BUCKET_LEN, FLAG_DEDUP, FORMAT_VERSION, HEADER_LEN,
    INDEX_ALIGN, KEY_LEN_MAX, NAME_LEN_MAX, NARROW_LANES, SHORT_STR_LEN_MASK, TAG_REF,
    TAG_SHORT_STR, WIDE_LANES,
};
use crate::index::{bucket_tag, home_bucket};
use crate::view;
use crate::writer::{
    read_key, sort_by_home, sync_parent_dir, write_all_at, DataWriter, IndexWriter,
    WRITE_BUFFER_LEN,
};

/// Average bucket fill, in percent. At 75% of 12 lanes about 5% of keys spill into the next
/// bucket (a second cache line and a mispredicted branch) and the index costs 7.1 bytes per
/// key; at 85% it would be 14% of keys for 6.3 bytes.
const LOAD_PERCENT: u64 = 75;
/// Values whose encoding is shorter than this are never deduplicated: a reference would not
/// be smaller.
const DEDUP_MIN_LEN: usize = 8;

/// A value to insert.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value<'a> {
    /// Arbitrary bytes.
    Bytes(&'a [u8]),
    /// UTF-8 text.
    Str(&'a str),
    /// A signed 64-bit integer.
    I64(i64),
    /// A 64-bit float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A list of 32-bit floats.
    F32List(&'a [f32]),
    /// A list of 64-bit floats.
    F64List(&'a [f64]),
    /// A list of strings.
    StrList(&'a [&'a str]),
}

impl Value<'_> {
    /// The type this value is stored as.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Bytes(_) => ValueType::Bytes,
            Value::Str(_) => ValueType::Str,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
            Value::Bool(_) => ValueType::Bool,
            Value::F32List(_) => ValueType::F32List,
            Value::F64List(_) => ValueType::F64List,
            Value::StrList(_) => ValueType::StrList,
        }
    }
}

/// What `finish` does about a key inserted more than once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DuplicatePolicy {
    /// The last insert wins.
    #[default]
    LastWins,
    /// `finish` fails with [`Error::DuplicateKey`].
    Error,
}

/// What a build produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Distinct keys in the file.
    pub key_count: u64,
    /// Inserts that repeated an earlier key (dropped under [`DuplicatePolicy::LastWins`]).
    pub duplicate_keys: u64,
    /// Values stored (inserts minus those that dedup turned into references).
    pub value_count: u64,
    /// Inserts whose value was replaced by a reference to an identical earlier value.
    pub deduped_values: u64,
    /// Bytes dedup saved.
    pub dedup_saved_bytes: u64,
    /// Sum of inserted key lengths.
    pub raw_key_bytes: u64,
    /// Sum of inserted value payload lengths.
    pub raw_value_bytes: u64,
    /// Size of the record section.
    pub data_bytes: u64,
    /// Size of the index.
    pub index_bytes: u64,
    /// Size of the finished file.
    pub file_bytes: u64,
    /// Wall time from `new` to the end of `finish`.
    pub build_ms: u64,
}

/// An identity hasher for maps keyed by an xxh3 digest.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Builds a cache file. See the module documentation for the memory bound and the duplicate
/// key policy.
///
/// ```no_run
/// use larder_cache::{CacheBuilder, Value};
/// let mut b = CacheBuilder::new("prices.lcache")?.name("prices").dedup(true);
/// b.insert("apple", Value::F64(1.25))?;
/// let stats = b.finish()?;
/// # Ok::<(), larder_cache::Error>(())
/// ```
pub struct CacheBuilder {
    dest: PathBuf,
    temp: PathBuf,
    /// `None` once `finish` has renamed the file into place.
    writer: Option<DataWriter>,
    entries: Vec<(u64, u64)>,
    name: String,
    name_error: Option<usize>,
    dedup: Option<HashMap<u64, (u64, u32), BuildHasherDefault<DigestHasher>>>,
    duplicates: DuplicatePolicy,
    created_unix_ms: Option<u64>,
    scratch: Vec<u8>,
    stats: BuildStats,
    started: Instant,
}

impl CacheBuilder {
    /// Starts a build that will end up at `path`. The temporary file is created next to it.
    pub fn new(path: impl AsRef<Path>) -> Result<CacheBuilder, Error> {
        let dest = path.as_ref().to_path_buf();
        let file_name = dest
            .file_name()
            .ok_or_else(|| std::io::Error::other("cache path has no file name"))?
            .to_string_lossy()
            .into_owned();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let temp = dest.with_file_name(format!(
            ".{file_name}.tmp-{}-{}",
            std::process::id(),
            nanos % 1_000_000_000_000
        ));
        let mut file = OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .open(&temp)?;
        // The header is written last; until then the file starts with zeros, which no reader
        // accepts.
        file.write_all(&[0u8; HEADER_LEN])?;
        Ok(CacheBuilder {
            dest,
            temp,
            writer: Some(DataWriter {
                file,
                buf: Vec::with_capacity(WRITE_BUFFER_LEN + 64 * 1024),
                flushed: HEADER_LEN as u64,
                hasher: Xxh3::new(),
            }),
            entries: Vec::new(),
            name: String::new(),
            name_error: None,
            dedup: None,
            duplicates: DuplicatePolicy::LastWins,
            created_unix_ms: None,
            scratch: Vec::new(),
            stats: BuildStats::default(),
            started: Instant::now(),
        })
    }

    /// Sets the name stored in the header (at most [`NAME_LEN_MAX`] bytes; checked by
    /// `finish`).
    pub fn name(mut self, name: impl Into<String>) -> CacheBuilder {
        self.set_name(name);
        self
    }

    /// Sets the name stored in the header, by reference.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
        self.name_error = (self.name.len() > NAME_LEN_MAX).then_some(self.name.len());
    }

    /// Turns on deduplication of repeated values. Call before the first insert.
    pub fn dedup(mut self, on: bool) -> CacheBuilder {
        self.set_dedup(on);
        self
    }

    /// Turns deduplication on or off, by reference. Call before the first insert.
    pub fn set_dedup(&mut self, on: bool) {
        self.dedup = on.then(HashMap::default);
    }

    /// Chooses what happens to repeated keys.
    pub fn duplicates(mut self, policy: DuplicatePolicy) -> CacheBuilder {
        self.duplicates = policy;
        self
    }

    /// Chooses what happens to repeated keys, by reference.
    pub fn set_duplicates(&mut self, policy: DuplicatePolicy) {
        self.duplicates = policy;
    }

    /// Overrides the creation time recorded in the header (for reproducible files).
    pub fn created_unix_ms(mut self, ms: u64) -> CacheBuilder {
        self.created_unix_ms = Some(ms);
        self
    }

    /// Number of inserts so far.
    pub fn inserted(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Bytes written so far (records, including the unflushed tail).
    pub fn bytes_written(&self) -> u64 {
        self.writer.as_ref().map_or(0, DataWriter::pos)
    }

    /// Adds a key. Keys are arbitrary bytes up to [`KEY_LEN_MAX`].
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: Value<'_>) -> Result<(), Error> {
        let key = key.as_ref();
        if key.len() > KEY_LEN_MAX {
            return Err(Error::KeyTooLong { len: key.len() });
        }
        let Some(w) = self.writer.as_mut() else {
            return Err(std::io::Error::other("builder already finished").into());
        };
        let record = w.pos();
        put_varint(&mut w.buf, key.len() as u64);
        w.buf.extend_from_slice(key);
        self.stats.raw_key_bytes += key.len() as u64;
        self.stats.raw_value_bytes += payload_len(&value);
        let ty = value.value_type();
        match self.dedup.as_mut() {
            None => {
                w.pad_to(ty.tag_alignment());
                let tag_pos = w.pos();
                encode_value(&value, tag_pos, &mut w.buf)?;
                self.stats.value_count += 1;
            }
            Some(seen) => {
                self.scratch.clear();
                let (_, residue) = ty.tag_alignment();
                encode_value(&value, residue, &mut self.scratch)?;
                let digest = xxh3_64(&self.scratch);
                let len = self.scratch.len();
                let earlier = match seen.get(&digest) {
                    Some(&(at, l)) if l as usize == len && w.equals(at, &self.scratch)? => Some(at),
                    _ => None,
                };
                match earlier {
                    Some(at) => {
                        w.buf.push(TAG_REF | ty as u8);
                        put_varint(&mut w.buf, at);
                        self.stats.deduped_values += 1;
                        self.stats.dedup_saved_bytes += (len - 1 - varint_len(at)) as u64;
                    }
                    None => {
                        w.pad_to(ty.tag_alignment());
                        let at = w.pos();
                        w.buf.extend_from_slice(&self.scratch);
                        if len >= DEDUP_MIN_LEN && u32::try_from(len).is_ok() {
                            seen.entry(digest).or_insert((at, len as u32));
                        }
                        self.stats.value_count += 1;
                    }
                }
            }
        }
        self.entries.push((xxh3_64(key), record));
        if w.buf.len() >= WRITE_BUFFER_LEN {
            w.flush()?;
        }
        Ok(())
    }

    /// Writes the index and header, syncs, and renames the file into place.
    pub fn finish(mut self) -> Result<BuildStats, Error> {
        if let Some(len) = self.name_error {
            return Err(Error::NameTooLong { len });
        }
        let Some(mut w) = self.writer.take() else {
            return Err(std::io::Error::other("builder already finished").into());
        };
        let result = self.finish_inner(&mut w);
        if result.is_err() {
            let _ = fs::remove_file(&self.temp);
        }
        result
    }

    fn finish_inner(&mut self, w: &mut DataWriter) -> Result<BuildStats, Error> {
        w.flush()?;
        let data_end = w.pos();
        let data_xxh3 = w.hasher.digest();

        // Buckets of 12 entries with 4-byte offsets while the records end below 4 GiB, else
        // 7 entries with 8-byte offsets; filled to LOAD_PERCENT on average. (Sized before
        // duplicates are dropped, which at worst leaves the index a little emptier.)
        let offset_width: u8 = if data_end <= u64::from(u32::MAX) {
            4
        } else {
            8
        };
        let lanes = if offset_width == 4 {
            NARROW_LANES
        } else {
            WIDE_LANES
        } as u64;
        let inserted = self.entries.len() as u64;
        let home_bucket_count = (inserted * 100).div_ceil(lanes * LOAD_PERCENT).max(1);

        let mut entries = sort_by_home(std::mem::take(&mut self.entries), home_bucket_count);
        self.drop_duplicates(w, &mut entries)?;
        let key_count = entries.len() as u64;

        // Entries are sorted by hash, so home buckets are non-decreasing and placement is one
        // sequential pass: each entry goes to the first bucket at or after its home with room.
        // Buckets are streamed to the file as they fill; only one is held in memory.
        let index_offset = data_end.div_ceil(INDEX_ALIGN) * INDEX_ALIGN;
        w.file
            .write_all(&[0u8; INDEX_ALIGN as usize][..(index_offset - data_end) as usize])?;
        let mut out = IndexWriter {
            file: &mut w.file,
            buf: std::mem::take(&mut w.buf),
            hasher: Xxh3::new(),
            buckets: 0,
        };
        let mut line = [0u8; BUCKET_LEN];
        let (mut current, mut fill) = (0u64, 0u64);
        let (mut probe_max, mut displaced_keys) = (0u64, 0u64);
        for &(hash, offset) in &entries {
            let home = home_bucket(hash, home_bucket_count);
            if home > current {
                out.push(&line)?;
                out.push_empty(home - current - 1)?;
                (line, current, fill) = ([0u8; BUCKET_LEN], home, 0);
            } else if fill == lanes {
                out.push(&line)?;
                (line, current, fill) = ([0u8; BUCKET_LEN], current + 1, 0);
            }
            line[fill as usize] = bucket_tag(hash);
            if offset_width == 4 {
                line[16 + 4 * fill as usize..][..4].copy_from_slice(&(offset as u32).to_le_bytes());
            } else {
                line[8 + 8 * fill as usize..][..8].copy_from_slice(&offset.to_le_bytes());
            }
            probe_max = probe_max.max(current - home);
            displaced_keys += u64::from(current > home);
            fill += 1;
        }
        drop(entries);
        out.push(&line)?;
        out.push_empty(home_bucket_count.saturating_sub(current + 1))?;
        let (bucket_count, index_xxh3) = out.finish()?;
        let file_len = index_offset + bucket_count * BUCKET_LEN as u64;

        let created_unix_ms = self.created_unix_ms.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)
        });
        let header = Header {
            version: FORMAT_VERSION,
            flags: if self.dedup.is_some() { FLAG_DEDUP } else { 0 },
            offset_width,
            created_unix_ms,
            key_count,
            value_count: self.stats.value_count,
            data_offset: HEADER_LEN as u64,
            data_len: data_end - HEADER_LEN as u64,
            index_offset,
            bucket_count,
            home_bucket_count,
            displaced_keys,
            probe_max,
            file_len,
            raw_key_bytes: self.stats.raw_key_bytes,
            raw_value_bytes: self.stats.raw_value_bytes,
            dedup_saved_bytes: self.stats.dedup_saved_bytes,
            data_xxh3,
            index_xxh3,
            name: self.name.clone(),
        };
        write_all_at(&w.file, &header.encode(), 0)?;
        w.file.sync_all()?;
        fs::rename(&self.temp, &self.dest)?;
        sync_parent_dir(&self.dest);

        self.stats.key_count = key_count;
        self.stats.data_bytes = header.data_len;
        self.stats.index_bytes = header.index_len();
        self.stats.file_bytes = file_len;
        self.stats.build_ms = self.started.elapsed().as_millis() as u64;
        Ok(self.stats.clone())
    }

    /// Removes repeated keys from hash-sorted entries according to the policy. Equal keys have
    /// equal hashes, so only runs of equal hashes need their keys read back.
    fn drop_duplicates(
        &mut self,
        w: &DataWriter,
        entries: &mut Vec<(u64, u64)>,
    ) -> Result<(), Error> {
        let mut dead = Vec::new();
        let mut i = 0;
        while i < entries.len() {
            let mut j = i + 1;
            while j < entries.len() && entries[j].0 == entries[i].0 {
                j += 1;
            }
            if j - i > 1 {
                // Within the run, entries are in insertion order (offsets ascend).
                let keys: Vec<Vec<u8>> = entries[i..j]
                    .iter()
                    .map(|&(_, off)| read_key(w, off))
                    .collect::<Result<_, _>>()?;
                for a in 0..keys.len() {
                    if keys[a + 1..].contains(&keys[a]) {
                        if self.duplicates == DuplicatePolicy::Error {
                            return Err(Error::DuplicateKey {
                                key: String::from_utf8_lossy(&keys[a]).into_owned(),
                            });
                        }
                        dead.push(i + a);
                    }
                }
            }
            i = j;
        }
        self.stats.duplicate_keys = dead.len() as u64;
        if !dead.is_empty() {
            let mut k = 0;
            let mut n = 0;
            entries.retain(|_| {
                let keep = dead.get(k) != Some(&n);
                if !keep {
                    k += 1;
                }
                n += 1;
                keep
            });
        }
        Ok(())
    }

    /// Stops the build and removes the temporary file.
    pub fn abort(mut self) {
        self.writer = None;
        let _ = fs::remove_file(&self.temp);
    }
}

impl Drop for CacheBuilder {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Logical payload size of a value, for the raw-bytes statistics.
fn payload_len(v: &Value<'_>) -> u64 {
    match v {
        Value::Bytes(b) => b.len() as u64,
        Value::Str(s) => s.len() as u64,
        Value::I64(_) | Value::F64(_) => 8,
        Value::Bool(_) => 1,
        Value::F32List(l) => 4 * l.len() as u64,
        Value::F64List(l) => 8 * l.len() as u64,
        Value::StrList(l) => l.iter().map(|s| s.len() as u64).sum(),
    }
}

/// Encodes a value (tag first) given the file offset its tag lands on. The caller has placed
/// the tag at the residue [`ValueType::tag_alignment`] asks for, which makes the encoding
/// independent of `tag_pos` beyond that residue.
fn encode_value(v: &Value<'_>, tag_pos: u64, out: &mut Vec<u8>) -> Result<(), Error> {
    let base = out.len() as u64;
    let pad = |out: &mut Vec<u8>, align: u64| {
        let at = tag_pos + (out.len() as u64 - base);
        let n = (align - at % align) % align;
        out.resize(out.len() + n as usize, 0);
    };
    out.push(v.value_type() as u8);
    match v {
        Value::Bytes(b) => {
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::Str(s) if s.len() <= usize::from(SHORT_STR_LEN_MASK) => {
            // Replace the tag pushed above with the short form, which carries the length.
            if let Some(tag) = out.last_mut() {
                *tag = TAG_SHORT_STR | s.len() as u8;
            }
            out.extend_from_slice(s.as_bytes());
        }
        Value::Str(s) => {
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Value::I64(i) => out.extend_from_slice(&i.to_le_bytes()),
        Value::F64(f) => out.extend_from_slice(&f.to_le_bytes()),
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::F32List(l) => {
            put_varint(out, l.len() as u64);
            pad(out, 4);
            out.extend_from_slice(view::f32s_as_bytes(l));
        }
        Value::F64List(l) => {
            put_varint(out, l.len() as u64);
            pad(out, 8);
            out.extend_from_slice(view::f64s_as_bytes(l));
        }
        Value::StrList(l) => {
            let total: u64 = l.iter().map(|s| s.len() as u64).sum();
            if total > u64::from(u32::MAX) {
                return Err(Error::ValueTooLarge { len: total });
            }
            put_varint(out, l.len() as u64);
            pad(out, 4);
            let mut end = 0u32;
            for s in l.iter() {
                end += s.len() as u32;
                out.extend_from_slice(&end.to_le_bytes());
            }
            for s in l.iter() {
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Cache;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("larder-builder-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        dir.join(name)
    }

    #[test]
    fn last_insert_wins_by_default() {
        let path = temp("dups");
        let mut b = CacheBuilder::new(&path).expect("new");
        b.insert("k", Value::Str("first")).expect("insert");
        b.insert("other", Value::I64(1)).expect("insert");
        b.insert("k", Value::Str("second")).expect("insert");
        let stats = b.finish().expect("finish");
        assert_eq!((stats.key_count, stats.duplicate_keys), (2, 1));
        let c = Cache::open(&path).expect("open");
        assert_eq!(c.get_str("k").ok(), Some(Some("second")));
        c.verify().expect("verify");
    }

    #[test]
    fn duplicate_policy_error_fails_and_leaves_nothing() {
        let path = temp("dups-error");
        let mut b = CacheBuilder::new(&path)
            .expect("new")
            .duplicates(DuplicatePolicy::Error);
        b.insert("k", Value::I64(1)).expect("insert");
        b.insert("k", Value::I64(2)).expect("insert");
        assert!(matches!(b.finish(), Err(Error::DuplicateKey { .. })));
        assert!(!path.exists());
        let leftovers = fs::read_dir(path.parent().expect("dir"))
            .expect("read dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("dups-error"))
            .count();
        assert_eq!(leftovers, 0, "temp file removed");
    }

    #[test]
    fn dedup_stores_repeated_values_once() {
        let path = temp("dedup");
        let mut b = CacheBuilder::new(&path).expect("new").dedup(true);
        let long = "a value long enough to be worth sharing";
        for i in 0..100 {
            b.insert(format!("k{i}"), Value::Str(long)).expect("insert");
            b.insert(format!("f{i}"), Value::F64List(&[1.0, 2.0, 3.0]))
                .expect("insert");
        }
        let stats = b.finish().expect("finish");
        assert_eq!(stats.value_count, 2);
        assert_eq!(stats.deduped_values, 198);
        assert!(stats.dedup_saved_bytes > 99 * long.len() as u64);
        let c = Cache::open(&path).expect("open");
        assert_eq!(c.get_str("k57").ok(), Some(Some(long)));
        assert_eq!(c.get_f64_list("f99").ok(), Some(Some(&[1.0, 2.0, 3.0][..])));
        assert!(c.info().dedup);
        c.verify().expect("verify");
    }

    #[test]
    fn rejects_long_keys_and_names() {
        let path = temp("limits");
        let mut b = CacheBuilder::new(&path).expect("new");
        let key = vec![b'k'; KEY_LEN_MAX + 1];
        assert!(matches!(
            b.insert(&key, Value::Bool(true)),
            Err(Error::KeyTooLong { .. })
        ));
        b.insert(&key[..KEY_LEN_MAX], Value::Bool(true))
            .expect("max key");
        let b = b.name("n".repeat(NAME_LEN_MAX + 1));
        assert!(matches!(b.finish(), Err(Error::NameTooLong { .. })));
    }

    #[test]
    fn many_keys_round_trip_and_sort_is_ordered() {
        let path = temp("many");
        let mut b = CacheBuilder::new(&path).expect("new").name("many");
        for i in 0..20_000 {
            b.insert(format!("key_{i}"), Value::Str(&format!("val_{i}")))
                .expect("insert");
        }
        let stats = b.finish().expect("finish");
        assert_eq!(stats.key_count, 20_000);
        let c = Cache::open(&path).expect("open");
        for i in (0..20_000).step_by(7) {
            assert_eq!(
                c.get_str(format!("key_{i}")).ok(),
                Some(Some(&*format!("val_{i}")))
            );
        }
        assert_eq!(c.get_str("key_20000").ok(), Some(None));
        c.verify().expect("verify");

        // Includes repeated hashes, which must stay in offset order.
        let v: Vec<(u64, u64)> = (0..100_000u64)
            .map(|i| (xxh3_64(&(i % 90_000).to_le_bytes()), i))
            .collect();
        let mut want = v.clone();
        want.sort_unstable();
        for buckets in [1, 7, 10_000, 1 << 20] {
            assert_eq!(sort_by_home(v.clone(), buckets), want);
        }
    }

    #[test]
    fn dropped_builder_leaves_no_file() {
        let path = temp("dropped");
        let mut b = CacheBuilder::new(&path).expect("new");
        b.insert("k", Value::I64(1)).expect("insert");
        drop(b);
        assert!(!path.exists());
    }
}
