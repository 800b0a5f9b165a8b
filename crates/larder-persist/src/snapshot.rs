//! larder's snapshot files: every key of every database at one point of the change feed's
//! order, written while writes continue (see `larder_engine::snapshot`), and loaded back.
//!
//! The format (`docs/snapshot-format.md` has the bytes): a header (magic `LARDSNAP`, format
//! version, number of databases, creation time, the feed sequence the snapshot is consistent
//! at), in version 2 the function libraries' codes with their checksum, blocks of entry records each with its length, record count and CRC-64, and a trailer
//! (entry and block counts, and a digest chained over the header's and every block's
//! checksum). A record is a database number, a key, the value as [`rdb::write_value`] writes
//! it, the version, and the deadline and memcached flags when set. Records come in any order.
//!
//! [`SnapshotWriter`] and [`SnapshotReader`] are the file codec; [`write_snapshot`] runs a
//! capture of a keyspace into a writer, and [`load_snapshot`] restores a file into a keyspace.
//! The reader parses untrusted bytes: it never panics, allocates only as bytes arrive, and
//! every error names the byte offset it was found at.

mod reader;
mod writer;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex, PoisonError};

use larder_engine::snapshot::PreImage;
use larder_engine::{DbGuards, Entry, Keyspace, Limits, RestoreValue, Restored};

use crate::rdb::{self, Value};

pub use reader::SnapshotReader;
pub use writer::SnapshotWriter;
use writer::BLOCK_TARGET;

/// The first bytes of every snapshot file.
pub const MAGIC: &[u8; 8] = b"LARDSNAP";
/// The format version this code writes when the snapshot holds function libraries, and the
/// newest it reads.
pub const FORMAT_VERSION: u32 = 2;
/// The format version without function libraries: what this code writes when there are
/// none (version 2 is version 1 with a library section after the header).
pub const FIRST_FORMAT_VERSION: u32 = 1;

/// What a snapshot's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotMeta {
    /// When the snapshot was taken (Unix ms).
    pub created_ms: u64,
    /// The feed sequence the snapshot is consistent at: it holds every group up to and
    /// including this one, and none after.
    pub feed_seq: u64,
    /// The number of databases of the keyspace it was taken from.
    pub databases: u32,
}

/// One entry read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub db: u32,
    pub key: Vec<u8>,
    pub value: Value,
    /// Absolute deadline in Unix ms; 0 = none.
    pub expire_at_ms: u64,
    pub version: u64,
    /// memcached client flags.
    pub flags: u32,
}

/// Why a snapshot could not be written or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Reading or writing the underlying stream failed.
    Io(std::io::Error),
    /// The file does not start with [`MAGIC`].
    BadMagic,
    /// The file has a format version this code does not read.
    BadVersion(u32),
    /// The file ends at `offset` before its trailer.
    Truncated { offset: u64 },
    /// The bytes at `offset` are not what the format allows.
    Corrupt { offset: u64, what: &'static str },
    /// A record names database `db`, and the keyspace has only `have`.
    Database { offset: u64, db: u32, have: usize },
    /// A value could not be serialized.
    Encode(rdb::Error),
    /// Another capture of the keyspace is running.
    Busy,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Io(e) => write!(f, "snapshot I/O error: {e}"),
            SnapshotError::BadMagic => f.write_str("not a larder snapshot (bad magic)"),
            SnapshotError::BadVersion(v) => {
                write!(f, "snapshot format version {v} is not supported")
            }
            SnapshotError::Truncated { offset } => {
                write!(f, "snapshot truncated at byte {offset} (no trailer)")
            }
            SnapshotError::Corrupt { offset, what } => {
                write!(f, "snapshot corrupt at byte {offset}: {what}")
            }
            SnapshotError::Database { offset, db, have } => write!(
                f,
                "snapshot record at byte {offset} is in database {db}, but there are only {have}"
            ),
            SnapshotError::Encode(e) => write!(f, "cannot serialize a value: {e}"),
            SnapshotError::Busy => f.write_str("another snapshot is in progress"),
        }
    }
}

impl std::error::Error for SnapshotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for SnapshotError {
    fn from(e: std::io::Error) -> Self {
        SnapshotError::Io(e)
    }
}

pub type Result<T> = std::result::Result<T, SnapshotError>;

/// What [`write_snapshot`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Entries written.
    pub keys: u64,
    /// Of those, how many the write path handed over before changing them.
    pub pre_images: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The feed sequence stored in the header.
    pub feed_seq: u64,
}

/// Entries a capture step visits at most (one shard lock is held for each step, while they
/// are encoded into memory; nothing is written to the output under a shard lock).
const STEP_ENTRIES: usize = 64;

/// Where the write path's pre-images go: records encoded into a buffer that the walk writes
/// out between its steps. A writer holds the lock only while it encodes one entry.
struct PreImages {
    limits: Limits,
    compress: bool,
    buf: Mutex<PreBuf>,
}

#[derive(Default)]
struct PreBuf {
    records: Vec<u8>,
    count: u32,
    /// The first error; nothing more is encoded after it.
    error: Option<SnapshotError>,
}

impl PreImage for PreImages {
    fn save(&self, db: u32, entry: &Entry) {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if b.error.is_some() {
            return;
        }
        match writer::encode_entry(&mut b.records, db, entry, &self.limits, self.compress) {
            Ok(()) => b.count += 1,
            Err(e) => b.error = Some(e),
        }
    }
}

impl PreImages {
    /// Everything encoded so far, taken out, once it is at least `min` bytes.
    fn take(&self, min: usize) -> Result<(Vec<u8>, u32)> {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = b.error.take() {
            return Err(e);
        }
        if b.records.len() < min {
            return Ok((Vec::new(), 0));
        }
        let count = std::mem::take(&mut b.count);
        Ok((std::mem::take(&mut b.records), count))
    }
}

/// Write a snapshot of `keyspace` to `out` while writes continue: begin a capture (the write
/// path hands entries over before changing them), walk every shard, then write the trailer.
/// `at_point` runs at the snapshot's point with every shard held (the caller reads the feed
/// position there, and may rotate its log) and returns the feed sequence to store and the
/// function libraries' codes at that point (written before the keys; with none, the file is
/// format version 1).
/// `compress`: LZF on strings, as Redis's `rdbcompression`. `progress` gets the number of
/// entries written so far after each step. The walk encodes
/// each step's entries under the shard's lock into a buffer of its own and writes to `out`
/// only after the lock is released, so no client waits on the disk; extra memory is that
/// buffer, the pre-images not yet written out (both written every [`BLOCK_TARGET`] bytes)
/// and what `out` buffers. Returns the output (flushed as far as the writer goes: the caller
/// syncs it) and what was written.
pub fn write_snapshot<W: Write>(
    keyspace: &Keyspace,
    out: W,
    limits: &Limits,
    compress: bool,
    at_point: impl FnOnce(&mut DbGuards<'_>) -> (u64, Vec<String>),
    mut progress: impl FnMut(u64),
) -> Result<(W, SnapshotStats)> {
    let pre = Arc::new(PreImages {
        limits: *limits,
        compress,
        buf: Mutex::new(PreBuf::default()),
    });
    let databases = keyspace.db_count() as u32;
    let mut feed_seq = 0;
    let mut libraries = Vec::new();
    let mut created_ms = 0;
    let sink: Arc<dyn PreImage> = pre.clone();
    let mut capture = keyspace
        .begin_capture(sink, |guards: &mut DbGuards<'_>| {
            (feed_seq, libraries) = at_point(guards);
            created_ms = larder_engine::now_ms();
        })
        .ok_or(SnapshotError::Busy)?;
    let meta = SnapshotMeta {
        created_ms,
        feed_seq,
        databases,
    };
    let mut writer = SnapshotWriter::with_libraries(out, &meta, limits, &libraries)?;
    let mut walked: Vec<u8> = Vec::with_capacity(2 * BLOCK_TARGET);
    let mut walked_count = 0u32;
    let mut error = None;
    loop {
        let more = capture.step(STEP_ENTRIES, |db, e| {
            if error.is_none() {
                match writer::encode_entry(&mut walked, db, e, limits, compress) {
                    Ok(()) => walked_count += 1,
                    Err(err) => error = Some(err),
                }
            }
        });
        if let Some(e) = error.take() {
            return Err(e);
        }
        if walked.len() >= BLOCK_TARGET || !more {
            writer.write_block(&walked, walked_count)?;
            walked.clear();
            walked_count = 0;
        }
        let (pre_images, n) = pre.take(if more { BLOCK_TARGET } else { 0 })?;
        writer.write_block(&pre_images, n)?;
        progress(writer.entries());
        if !more {
            break;
        }
    }
    let pre_images = capture.saved();
    drop(capture);
    // Pre-images saved after the walk's last look (the capture ends with it).
    let (rest, n) = pre.take(0)?;
    writer.write_block(&rest, n)?;
    let keys = writer.entries();
    progress(keys);
    let (out, bytes) = writer.finish()?;
    Ok((
        out,
        SnapshotStats {
            keys,
            pre_images,
            bytes,
            feed_seq,
        },
    ))
}

/// Restore the snapshot in `r` into `keyspace` (which should be empty): every entry with
/// its version, deadline and flags; entries whose deadline is at or before `now_ms` are
/// skipped. `progress` gets the entries and bytes read so far every few thousand entries.
/// A key present twice, or a database the keyspace lacks, is an error. Returns the header
/// and the function libraries' codes (for the caller's registry).
pub fn load_snapshot<R: Read>(
    r: R,
    keyspace: &Keyspace,
    limits: &Limits,
    now_ms: u64,
    mut progress: impl FnMut(u64, u64),
) -> Result<(SnapshotMeta, Vec<String>)> {
    let mut reader = SnapshotReader::open(r, limits)?;
    let meta = *reader.meta();
    let libraries = reader.take_libraries();
    let mut keys = 0u64;
    while let Some(record) = reader.next() {
        let offset = reader.record_offset();
        let rec = record?;
        if rec.db as usize >= keyspace.db_count() {
            return Err(SnapshotError::Database {
                offset,
                db: rec.db,
                have: keyspace.db_count(),
            });
        }
        let restore = |value| {
            keyspace.restore(
                rec.db as usize,
                &rec.key,
                value,
                rec.expire_at_ms,
                rec.version,
                rec.flags,
                now_ms,
            )
        };
        let restored = match rec.value {
            Value::String(ref s) => restore(RestoreValue::String(s)),
            Value::Object(o) => restore(RestoreValue::Object(o)),
        };
        if restored == Restored::Exists {
            return Err(SnapshotError::Corrupt {
                offset,
                what: "a key appears twice",
            });
        }
        keys += 1;
        if keys % 4096 == 0 {
            progress(keys, reader.offset());
        }
    }
    progress(keys, reader.offset());
    Ok((meta, libraries))
}
