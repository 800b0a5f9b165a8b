//! larder's snapshot files: every key of every database at one point of the change feed's
//! order, written while writes continue (see `larder_engine::snapshot`), and loaded back.
//!
//! The format (`docs/snapshot-format.md` has the bytes): a header (magic `LARDSNAP`, format
//! version, number of databases, creation time, the feed sequence the snapshot is consistent
//! at), blocks of entry records each with its length, record count and CRC-64, and a trailer
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

/// The first bytes of every snapshot file.
pub const MAGIC: &[u8; 8] = b"LARDSNAP";
/// The format version this code writes, and the only one it reads.
pub const FORMAT_VERSION: u32 = 1;

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

/// Entries a capture step visits at most (one shard lock is held for each step).
const STEP_ENTRIES: usize = 256;

/// The writer the capture's two sources share: the walk and the write path's pre-images.
struct Sink<W: Write> {
    state: Mutex<SinkState<W>>,
}

struct SinkState<W: Write> {
    /// The output, until the header is written at the point.
    out: Option<W>,
    writer: Option<SnapshotWriter<W>>,
    /// The first error; nothing more is written after it.
    error: Option<SnapshotError>,
}

impl<W: Write> Sink<W> {
    fn with<R>(&self, f: impl FnOnce(&mut SinkState<W>) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn write(&self, db: u32, entry: &Entry) {
        self.with(|s| {
            if s.error.is_some() {
                return;
            }
            if let Some(w) = s.writer.as_mut() {
                if let Err(e) = w.entry_of(db, entry) {
                    s.error = Some(e);
                }
            }
        });
    }
}

impl<W: Write + Send> PreImage for Sink<W> {
    fn save(&self, db: u32, entry: &Entry) {
        self.write(db, entry);
    }
}

/// Write a snapshot of `keyspace` to `out` while writes continue: begin a capture (the write
/// path hands entries over before changing them), walk every shard, then write the trailer.
/// `at_point` runs at the snapshot's point with every shard held (the caller reads the feed
/// position there, and may rotate its log) and returns the feed sequence to store.
/// `progress` gets the number of entries written so far after each step. Extra memory is
/// what `out` buffers plus one block. Returns the output (flushed as far as the writer goes:
/// the caller syncs it) and what was written.
pub fn write_snapshot<W: Write + Send + 'static>(
    keyspace: &Keyspace,
    out: W,
    limits: &Limits,
    at_point: impl FnOnce(&mut DbGuards<'_>) -> u64,
    mut progress: impl FnMut(u64),
) -> Result<(W, SnapshotStats)> {
    let sink = Arc::new(Sink {
        state: Mutex::new(SinkState {
            out: Some(out),
            writer: None,
            error: None,
        }),
    });
    let databases = keyspace.db_count() as u32;
    let mut feed_seq = 0;
    let begin = {
        let sink = Arc::clone(&sink);
        let limits = *limits;
        let feed_seq = &mut feed_seq;
        move |guards: &mut DbGuards<'_>| {
            *feed_seq = at_point(guards);
            let meta = SnapshotMeta {
                created_ms: larder_engine::now_ms(),
                feed_seq: *feed_seq,
                databases,
            };
            sink.with(|s| {
                if let Some(out) = s.out.take() {
                    match SnapshotWriter::new(out, &meta, &limits) {
                        Ok(w) => s.writer = Some(w),
                        Err(e) => s.error = Some(e),
                    }
                }
            });
        }
    };
    let sink_dyn: Arc<dyn PreImage> = sink.clone();
    let mut capture = keyspace
        .begin_capture(sink_dyn, begin)
        .ok_or(SnapshotError::Busy)?;
    let mut visited = 0u64;
    while capture.step(STEP_ENTRIES, |db, e| {
        visited += 1;
        sink.write(db, e);
    }) {
        if sink.with(|s| s.error.is_some()) {
            break;
        }
        progress(visited + capture.saved());
    }
    let pre_images = capture.saved();
    drop(capture);
    let (writer, error) = sink.with(|s| (s.writer.take(), s.error.take()));
    if let Some(e) = error {
        return Err(e);
    }
    let Some(writer) = writer else {
        // `begin` always leaves a writer or an error.
        return Err(SnapshotError::Busy);
    };
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
/// A key present twice, or a database the keyspace lacks, is an error.
pub fn load_snapshot<R: Read>(
    r: R,
    keyspace: &Keyspace,
    limits: &Limits,
    now_ms: u64,
    mut progress: impl FnMut(u64, u64),
) -> Result<SnapshotMeta> {
    let mut reader = SnapshotReader::open(r, limits)?;
    let meta = *reader.meta();
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
    Ok(meta)
}
