//! [`SnapshotWriter`]: header, blocks of records, trailer.

use std::io::Write;

use larder_engine::{Entry, Limits};

use super::{Result, SnapshotError, SnapshotMeta, FIRST_FORMAT_VERSION, FORMAT_VERSION, MAGIC};
use crate::rdb::crc64::crc64;
use crate::rdb::length::{put_len, put_string};
use crate::rdb::{write_value, ValueRef};

/// A block is written once its records reach this many bytes (a record larger than that
/// makes a block of its own).
pub(super) const BLOCK_TARGET: usize = 64 * 1024;

/// Function-library section, block and trailer tags.
pub(super) const TAG_LIBRARIES: u8 = b'F';
pub(super) const TAG_BLOCK: u8 = b'B';
/// The library section's head: tag, length, checksum.
pub(super) const LIBRARIES_HEAD: usize = 17;
pub(super) const TAG_TRAILER: u8 = b'T';

/// Record meta bits: a deadline follows, flags follow.
pub(super) const META_DEADLINE: u8 = 1;
pub(super) const META_FLAGS: u8 = 2;

/// Writes a snapshot file: the header at [`SnapshotWriter::new`], records with
/// [`SnapshotWriter::entry`], the trailer at [`SnapshotWriter::finish`]. Records are
/// gathered into blocks of about [`BLOCK_TARGET`] bytes before they reach `W`.
pub struct SnapshotWriter<W: Write> {
    out: W,
    limits: Limits,
    /// The block being filled: its records.
    block: Vec<u8>,
    block_records: u32,
    entries: u64,
    blocks: u64,
    /// The digest chained over the header's and each block's checksum (see the format doc).
    digest: u64,
    bytes: u64,
}

/// One record's fields, borrowed.
struct Record<'a> {
    db: u32,
    key: &'a [u8],
    value: ValueRef<'a>,
    expire_at_ms: u64,
    version: u64,
    flags: u32,
}

fn value_of(entry: &Entry) -> ValueRef<'_> {
    match entry.object() {
        Some(o) => ValueRef::Object(o),
        None => ValueRef::String(entry.string().unwrap_or_default()),
    }
}

/// Append the record of `entry` (database `db`, as it is now) to `out`, for
/// [`SnapshotWriter::write_block`], its strings LZF-compressed or not. On an error nothing is
/// appended.
pub fn encode_entry(
    out: &mut Vec<u8>,
    db: u32,
    entry: &Entry,
    limits: &Limits,
    compress: bool,
) -> Result<()> {
    let record = Record {
        db,
        key: entry.key(),
        value: value_of(entry),
        expire_at_ms: entry.expire_at_ms().unwrap_or(0),
        version: entry.version(),
        flags: entry.flags(),
    };
    if compress {
        encode_record(out, &record, limits)
    } else {
        crate::rdb::length::without_compression(|| encode_record(out, &record, limits))
    }
}

fn encode_record(b: &mut Vec<u8>, r: &Record<'_>, limits: &Limits) -> Result<()> {
    let start = b.len();
    put_len(b, u64::from(r.db));
    let mut meta = 0;
    if r.expire_at_ms != 0 {
        meta |= META_DEADLINE;
    }
    if r.flags != 0 {
        meta |= META_FLAGS;
    }
    b.push(meta);
    put_string(b, r.key);
    if let Err(e) = write_value(b, r.value, limits) {
        b.truncate(start);
        return Err(SnapshotError::Encode(e));
    }
    b.extend_from_slice(&r.version.to_le_bytes());
    if r.expire_at_ms != 0 {
        b.extend_from_slice(&r.expire_at_ms.to_le_bytes());
    }
    if r.flags != 0 {
        b.extend_from_slice(&r.flags.to_le_bytes());
    }
    Ok(())
}

/// The library section: its 17-byte head (tag, length, checksum), then each code as an RDB
/// string (a length and the bytes).
fn libraries_section(libraries: &[String]) -> Vec<u8> {
    let mut section = vec![0u8; LIBRARIES_HEAD];
    for code in libraries {
        put_len(&mut section, code.len() as u64);
        section.extend_from_slice(code.as_bytes());
    }
    section[0] = TAG_LIBRARIES;
    let len = (section.len() - LIBRARIES_HEAD) as u64;
    section[1..9].copy_from_slice(&len.to_le_bytes());
    let crc = crc64(crc64(0, &section[..9]), &section[LIBRARIES_HEAD..]);
    section[9..17].copy_from_slice(&crc.to_le_bytes());
    section
}

impl<W: Write> SnapshotWriter<W> {
    /// Write the header for `meta` (format version 1: no function libraries); `limits`
    /// gives the list node size values are cut at (as DUMP's).
    pub fn new(out: W, meta: &SnapshotMeta, limits: &Limits) -> Result<SnapshotWriter<W>> {
        SnapshotWriter::with_libraries(out, meta, limits, &[])
    }

    /// Write the header for `meta` and the function libraries' codes `libraries`: format
    /// version 2 with its library section, or version 1 when there is no library (a file
    /// every reader reads).
    pub fn with_libraries(
        mut out: W,
        meta: &SnapshotMeta,
        limits: &Limits,
        libraries: &[String],
    ) -> Result<SnapshotWriter<W>> {
        let version = if libraries.is_empty() {
            FIRST_FORMAT_VERSION
        } else {
            FORMAT_VERSION
        };
        let mut header = Vec::with_capacity(40);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&version.to_le_bytes());
        header.extend_from_slice(&meta.databases.to_le_bytes());
        header.extend_from_slice(&meta.created_ms.to_le_bytes());
        header.extend_from_slice(&meta.feed_seq.to_le_bytes());
        let crc = crc64(0, &header);
        header.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&header)?;
        let mut digest = crc64(0, &crc.to_le_bytes());
        let mut bytes = header.len() as u64;
        if !libraries.is_empty() {
            let section = libraries_section(libraries);
            out.write_all(&section)?;
            digest = crc64(digest, &section[9..LIBRARIES_HEAD]);
            bytes += section.len() as u64;
        }
        Ok(SnapshotWriter {
            out,
            limits: *limits,
            block: Vec::new(),
            block_records: 0,
            entries: 0,
            blocks: 0,
            digest,
            bytes,
        })
    }

    /// Add one entry: database `db`, `key`, `value`, the deadline (0 = none), version and
    /// memcached flags.
    pub fn entry(
        &mut self,
        db: u32,
        key: &[u8],
        value: ValueRef<'_>,
        expire_at_ms: u64,
        version: u64,
        flags: u32,
    ) -> Result<()> {
        let record = Record {
            db,
            key,
            value,
            expire_at_ms,
            version,
            flags,
        };
        encode_record(&mut self.block, &record, &self.limits)?;
        self.block_records += 1;
        self.entries += 1;
        if self.block.len() >= BLOCK_TARGET || self.block_records == u32::MAX {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Add `entry` of database `db` as it is now.
    pub fn entry_of(&mut self, db: u32, entry: &Entry) -> Result<()> {
        let (key, value) = (entry.key(), value_of(entry));
        let (at, version, flags) = (
            entry.expire_at_ms().unwrap_or(0),
            entry.version(),
            entry.flags(),
        );
        self.entry(db, key, value, at, version, flags)
    }

    /// Write `records`, `count` records encoded by [`encode_entry`] elsewhere (a capture
    /// encodes under shard locks, into buffers of its own, and writes outside them), as one
    /// block of their own after whatever this writer gathered.
    pub fn write_block(&mut self, records: &[u8], count: u32) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        self.flush_block()?;
        self.entries += u64::from(count);
        self.emit(records, count)
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.block_records == 0 {
            return Ok(());
        }
        let block = std::mem::take(&mut self.block);
        let r = self.emit(&block, self.block_records);
        self.block = block;
        self.block.clear();
        self.block_records = 0;
        r
    }

    /// Write one block of `count` records: its head (tag, count, length, checksum), then
    /// the records.
    fn emit(&mut self, records: &[u8], count: u32) -> Result<()> {
        let mut head = [0u8; 21];
        head[0] = TAG_BLOCK;
        head[1..5].copy_from_slice(&count.to_le_bytes());
        head[5..13].copy_from_slice(&(records.len() as u64).to_le_bytes());
        let crc = crc64(crc64(0, &head[..13]), records);
        head[13..21].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(records)?;
        self.digest = crc64(self.digest, &crc.to_le_bytes());
        self.bytes += (head.len() + records.len()) as u64;
        self.blocks += 1;
        Ok(())
    }

    /// Write the last block and the trailer, flush, and return the output with the number
    /// of bytes written.
    pub fn finish(mut self) -> Result<(W, u64)> {
        self.flush_block()?;
        let mut trailer = [0u8; 25];
        trailer[0] = TAG_TRAILER;
        trailer[1..9].copy_from_slice(&self.entries.to_le_bytes());
        trailer[9..17].copy_from_slice(&self.blocks.to_le_bytes());
        let digest = crc64(self.digest, &trailer[..17]);
        trailer[17..25].copy_from_slice(&digest.to_le_bytes());
        self.out.write_all(&trailer)?;
        self.out.flush()?;
        Ok((self.out, self.bytes + trailer.len() as u64))
    }
}
