//! Writing whole RDB files (version 10) as Redis 7.0.15 writes them, item by item, from a
//! point-in-time capture of a keyspace while writes continue: what a full resync sends a
//! replica, and a file a stock redis-server loads.
//!
//! [`RdbWriter`] is the file codec: the header and AUX fields ([`RdbWriter::new`]), function
//! libraries, keys (each after a SELECTDB when its database differs from the last one's, with
//! a RESIZEDB hint the first time a database is selected), then EOF and the CRC-64 of every
//! byte before it ([`RdbWriter::finish`]). [`write_rdb`] runs a capture
//! (`larder_engine::snapshot`) into a writer: the walk encodes a step's entries under the
//! shard's lock into a buffer of its own, the write path's pre-images go to another buffer,
//! and both reach `W` only outside any shard lock; the keyspace is never copied whole.
//!
//! A file for a larder replica (`REPLCONF capa larder-meta2`) also carries each key's version
//! and memcached flags: an AUX field [`META_AUX`] `"<version> <flags>"` right before the key
//! (before its EXPIRETIME_MS), which the loader applies to the next key. redis-server skips
//! AUX fields it does not know (`rdbLoadRioWithLoadingCtx`), so the file stays valid for it.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use larder_engine::snapshot::PreImage;
use larder_engine::{DbGuards, Entry, Keyspace, Limits};

use super::{
    OPCODE_AUX, OPCODE_EOF, OPCODE_EXPIRETIME_MS, OPCODE_FUNCTION2, OPCODE_RESIZEDB,
    OPCODE_SELECTDB,
};
use crate::rdb::crc64::crc64;
use crate::rdb::length::{put_len, put_string};
use crate::rdb::{write_value, ValueRef, RDB_VERSION};
use crate::snapshot::{Result, SnapshotError};

/// The AUX field that carries the next key's version and memcached flags.
pub const META_AUX: &[u8] = b"lm";

/// The Redis version the AUX fields name (the one whose format this is).
pub const REDIS_VER: &str = "7.0.15";

/// Entries one capture step visits (one shard lock held while they are encoded).
const STEP_ENTRIES: usize = 64;
/// Encoded bytes gathered before they are written out.
const FLUSH_BYTES: usize = 64 * 1024;

/// The replication fields of a file sent to a replica (`rdbSaveInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplInfo {
    /// The database the replication stream has selected at the file's point.
    pub stream_db: u32,
    /// The master's replication id.
    pub id: String,
    /// The replication offset at the file's point.
    pub offset: u64,
}

/// What the file says about its point, read there with every shard held.
#[derive(Clone, Debug, Default)]
pub struct PointInfo {
    /// Set for a replication transfer: `repl-stream-db`, `repl-id`, `repl-offset`.
    pub repl: Option<ReplInfo>,
    /// The function libraries' codes (written before the keys).
    pub libraries: Vec<String>,
    /// The server's memory use (`used-mem`).
    pub used_mem: u64,
}

/// Entries encoded for one database, in a byte buffer shared with other databases' runs.
#[derive(Default)]
struct Encoded {
    /// Each key preceded by its [`META_AUX`] field.
    meta: bool,
    bytes: Vec<u8>,
    /// (database, end offset in `bytes`) for each run of entries of one database.
    runs: Vec<(u32, usize)>,
    count: u64,
}

impl Encoded {
    fn with_meta(meta: bool) -> Encoded {
        Encoded {
            meta,
            ..Encoded::default()
        }
    }

    fn push(&mut self, db: u32, entry: &Entry, limits: &Limits) -> Result<()> {
        let start = self.bytes.len();
        if self.meta {
            encode_meta(&mut self.bytes, entry.version(), entry.flags());
        }
        if let Err(e) = encode_item(&mut self.bytes, entry, limits) {
            self.bytes.truncate(start);
            return Err(SnapshotError::Encode(e));
        }
        match self.runs.last_mut() {
            Some((d, end)) if *d == db => *end = self.bytes.len(),
            _ => self.runs.push((db, self.bytes.len())),
        }
        self.count += 1;
        Ok(())
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.runs.clear();
    }
}

/// The [`META_AUX`] field of a key with `version` and memcached `flags`.
pub fn encode_meta(out: &mut Vec<u8>, version: u64, flags: u32) {
    out.push(OPCODE_AUX);
    put_string(out, META_AUX);
    put_string(out, format!("{version} {flags}").as_bytes());
}

/// Parse a [`META_AUX`] value: (version, flags).
pub fn parse_meta(value: &[u8]) -> Option<(u64, u32)> {
    let (v, f) = std::str::from_utf8(value).ok()?.split_once(' ')?;
    Some((v.parse().ok()?, f.parse().ok()?))
}

/// One key as Redis writes it: EXPIRETIME_MS and its deadline when it has one, then the value
/// type, the key and the value.
pub fn encode_item(
    out: &mut Vec<u8>,
    entry: &Entry,
    limits: &Limits,
) -> std::result::Result<(), crate::rdb::Error> {
    if let Some(at) = entry.expire_at_ms() {
        out.push(OPCODE_EXPIRETIME_MS);
        out.extend_from_slice(&at.to_le_bytes());
    }
    let value = match entry.object() {
        Some(o) => ValueRef::Object(o),
        None => ValueRef::String(entry.string().unwrap_or_default()),
    };
    // The type byte comes first, then the key: write the value after a placeholder.
    let type_at = out.len();
    out.push(0);
    put_string(out, entry.key());
    let value_at = out.len();
    write_value(out, value, limits)?;
    out[type_at] = out[value_at];
    out.remove(value_at);
    Ok(())
}

/// Writes one RDB file to `W` (see the module docs).
pub struct RdbWriter<W: Write> {
    out: W,
    crc: u64,
    bytes: u64,
    /// The database the last key was written in.
    db: Option<u32>,
    /// Databases selected so far (their RESIZEDB hint is written once).
    resized: Vec<bool>,
    /// (keys, keys with a deadline) per database: RESIZEDB's hints.
    sizes: Vec<(u64, u64)>,
}

impl<W: Write> RdbWriter<W> {
    /// Write the header and the AUX fields of `info` (taken at Unix time `ctime_s`).
    /// `sizes` gives each database's key counts for its RESIZEDB hint.
    pub fn new(
        out: W,
        info: &PointInfo,
        ctime_s: u64,
        sizes: Vec<(u64, u64)>,
    ) -> Result<RdbWriter<W>> {
        let mut w = RdbWriter {
            out,
            crc: 0,
            bytes: 0,
            db: None,
            resized: vec![false; sizes.len()],
            sizes,
        };
        let mut head = format!("REDIS{RDB_VERSION:04}").into_bytes();
        let mut aux = |name: &str, value: &[u8]| {
            head.push(OPCODE_AUX);
            put_string(&mut head, name.as_bytes());
            put_string(&mut head, value);
        };
        aux("redis-ver", REDIS_VER.as_bytes());
        aux("redis-bits", b"64");
        aux("ctime", ctime_s.to_string().as_bytes());
        aux("used-mem", info.used_mem.to_string().as_bytes());
        if let Some(repl) = &info.repl {
            aux("repl-stream-db", repl.stream_db.to_string().as_bytes());
            aux("repl-id", repl.id.as_bytes());
            aux("repl-offset", repl.offset.to_string().as_bytes());
        }
        aux("aof-base", b"0");
        for code in &info.libraries {
            head.push(OPCODE_FUNCTION2);
            put_string(&mut head, code.as_bytes());
        }
        w.write(&head)?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.crc = crc64(self.crc, bytes);
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Make `db` the database of the next keys: SELECTDB (and the first time RESIZEDB) when
    /// it is not already.
    fn select(&mut self, db: u32) -> Result<()> {
        if self.db == Some(db) {
            return Ok(());
        }
        self.db = Some(db);
        let mut op = vec![OPCODE_SELECTDB];
        put_len(&mut op, u64::from(db));
        if let Some(done) = self.resized.get_mut(db as usize) {
            if !*done {
                *done = true;
                let (keys, volatile) = self.sizes[db as usize];
                op.push(OPCODE_RESIZEDB);
                put_len(&mut op, keys);
                put_len(&mut op, volatile);
            }
        }
        self.write(&op)
    }

    /// Write one key of database `db`.
    pub fn entry(&mut self, db: u32, entry: &Entry, limits: &Limits) -> Result<()> {
        let mut e = Encoded::default();
        e.push(db, entry, limits)?;
        self.encoded(&e)
    }

    fn encoded(&mut self, e: &Encoded) -> Result<()> {
        let mut start = 0;
        for &(db, end) in &e.runs {
            self.select(db)?;
            self.write(&e.bytes[start..end])?;
            start = end;
        }
        Ok(())
    }

    /// Write EOF and the checksum; returns the output and the bytes written.
    pub fn finish(mut self) -> Result<(W, u64)> {
        self.write(&[OPCODE_EOF])?;
        let crc = self.crc.to_le_bytes();
        self.out.write_all(&crc)?;
        self.out.flush()?;
        Ok((self.out, self.bytes + 8))
    }
}

/// Where the write path's pre-images go during [`write_rdb`].
struct PreImages {
    limits: Limits,
    buf: Mutex<(Encoded, Option<SnapshotError>)>,
}

impl PreImage for PreImages {
    fn save(&self, db: u32, entry: &Entry) {
        let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if b.1.is_none() {
            if let Err(e) = b.0.push(db, entry, &self.limits) {
                b.1 = Some(e);
            }
        }
    }
}

impl PreImages {
    /// Write what was saved so far to `w`, once it is at least `min` bytes.
    fn drain<W: Write>(&self, w: &mut RdbWriter<W>, min: usize) -> Result<u64> {
        let taken = {
            let mut b = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(e) = b.1.take() {
                return Err(e);
            }
            if b.0.bytes.len() < min || b.0.count == 0 {
                return Ok(0);
            }
            let meta = b.0.meta;
            std::mem::replace(&mut b.0, Encoded::with_meta(meta))
        };
        w.encoded(&taken)?;
        Ok(taken.count)
    }
}

/// Write an RDB file of `keyspace` to `out` while writes continue. `at_point` runs at the
/// file's point with every shard held and returns what the header says (a replication
/// transfer reads its offset there). With `meta` each key is preceded by its version and
/// flags ([`META_AUX`]). Returns the output and (keys, bytes) written.
pub fn write_rdb<W: Write>(
    keyspace: &Keyspace,
    out: W,
    limits: &Limits,
    meta: bool,
    at_point: impl FnOnce(&mut DbGuards<'_>) -> PointInfo,
) -> Result<(W, u64, u64)> {
    let sizes = (0..keyspace.db_count())
        .map(|d| {
            let db = keyspace.db(d);
            (db.len() as u64, db.volatile_len() as u64)
        })
        .collect();
    let pre = Arc::new(PreImages {
        limits: *limits,
        buf: Mutex::new((Encoded::with_meta(meta), None)),
    });
    let mut info = PointInfo::default();
    let mut ctime_s = 0;
    let sink: Arc<dyn PreImage> = pre.clone();
    let mut capture = keyspace
        .begin_capture(sink, |guards| {
            info = at_point(guards);
            ctime_s = larder_engine::now_ms() / 1000;
        })
        .ok_or(SnapshotError::Busy)?;
    let mut w = RdbWriter::new(out, &info, ctime_s, sizes)?;
    let mut walked = Encoded::with_meta(meta);
    let mut error = None;
    let mut keys = 0;
    loop {
        let more = capture.step(STEP_ENTRIES, |db, e| {
            if error.is_none() {
                error = walked.push(db, e, limits).err();
            }
        });
        if let Some(e) = error.take() {
            return Err(e);
        }
        if walked.bytes.len() >= FLUSH_BYTES || !more {
            w.encoded(&walked)?;
            keys += std::mem::take(&mut walked.count);
            walked.clear();
        }
        keys += pre.drain(&mut w, if more { FLUSH_BYTES } else { 0 })?;
        if !more {
            break;
        }
    }
    drop(capture);
    // Pre-images saved after the walk's last look (the capture ends with it).
    keys += pre.drain(&mut w, 0)?;
    let (out, bytes) = w.finish()?;
    Ok((out, keys, bytes))
}

#[cfg(test)]
mod tests;
