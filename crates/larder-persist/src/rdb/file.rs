//! Whole RDB files, as Redis writes `dump.rdb`: read as a stream, item by item.
//!
//! ```text
//! "REDIS" + 4 decimal digits (the version)
//! then, repeated:   AUX (0xfa) name value      strings
//!                   SELECTDB (0xfe) db         a length
//!                   RESIZEDB (0xfb) keys ttls  two lengths (size hints, ignored)
//!                   EXPIRETIME_MS (0xfc)       i64 LE, Unix ms, for the next key
//!                   EXPIRETIME (0xfd)          i32 LE, Unix seconds, for the next key
//!                   IDLE (0xf8) / FREQ (0xf9)  a length / a byte, for the next key (skipped)
//!                   AUX "lm" "<version> <flags>"  larder's, for the next key (see `write.rs`)
//!                   <value type> key value     see `value.rs`
//! EOF (0xff), then (version 5 and later) the CRC-64 of every byte before it, u64 LE;
//! 0 means the writer did not compute one (`rdbchecksum no`).
//! ```
//!
//! [`RdbReader`] reads any `Read` (it buffers it) without holding more than one value at a
//! time: it walks a value's layout from the stream into a buffer that grows only with the
//! bytes that arrive (a length field never sizes an allocation), then decodes the buffer
//! with [`read_value`]. Every error names the byte
//! offset where it was found. Module data is refused by name: larder has none. Function
//! libraries (FUNCTION2, and the FUNCTION of 7.0's release candidates) are collected as their
//! codes ([`RdbReader::functions`]) for the caller's registry. [`load_rdb`] inserts a file's
//! keys into a keyspace. [`write_rdb`] writes one from a point-in-time capture of a keyspace
//! (see `write.rs`).

mod empty;
mod load;
mod source;
#[cfg(test)]
mod tests;
mod write;

pub use load::{load_item, load_rdb, RdbStats};
pub use write::{
    encode_item, encode_meta, parse_meta, write_rdb, PointInfo, RdbWriter, ReplInfo, META_AUX,
    REDIS_VER,
};

use std::io::Read;

use larder_engine::Limits;

use super::functions::pre_ga_code;
use super::length::Reader;
use super::{read_value, Value, RDB_VERSION};
use source::Source;

pub const OPCODE_FUNCTION2: u8 = 245;
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;
pub const OPCODE_MODULE_AUX: u8 = 247;
pub const OPCODE_IDLE: u8 = 248;
pub const OPCODE_FREQ: u8 = 249;
pub const OPCODE_AUX: u8 = 250;
pub const OPCODE_RESIZEDB: u8 = 251;
pub const OPCODE_EXPIRETIME_MS: u8 = 252;
pub const OPCODE_EXPIRETIME: u8 = 253;
pub const OPCODE_SELECTDB: u8 = 254;
pub const OPCODE_EOF: u8 = 255;

/// The first RDB version whose files end with a checksum.
const FIRST_CHECKSUMMED_VERSION: u16 = 5;

/// One key read from a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdbItem {
    /// The database the key belongs to (the last SELECTDB, 0 before any).
    pub db: usize,
    pub key: Vec<u8>,
    pub value: Value,
    /// The key's deadline, Unix ms (an EXPIRETIME in seconds is converted; a negative
    /// time is 0).
    pub expire_at_ms: Option<u64>,
    /// Byte offset of the item's type byte in the file.
    pub offset: u64,
    /// The version and memcached flags a larder master sent with the key (its
    /// [`META_AUX`] field), if any.
    pub meta: Option<(u64, u32)>,
}

/// Why a file could not be read, and where.
#[derive(Debug)]
pub struct FileError {
    /// Byte offset in the file at which the problem was found.
    pub offset: u64,
    pub kind: ErrorKind,
}

/// What went wrong (see [`FileError`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the underlying file failed.
    Io(std::io::Error),
    /// The file ends before the EOF opcode and checksum.
    Truncated,
    /// The file does not start with `REDIS` and four digits.
    NotRdb,
    /// An RDB version larder does not read (0, or newer than [`RDB_VERSION`]).
    Version(u16),
    /// A malformed length, string or database number outside a value.
    BadData(&'static str),
    /// A byte that is neither an opcode nor a value type.
    UnknownType(u8),
    /// A value that does not decode (or does not fit the limits' rules) for this key.
    BadValue { key: Vec<u8>, rdb_type: u8 },
    /// Data of a kind larder does not hold: module values and aux data.
    /// `key` is the key it belongs to, for a value.
    Unsupported {
        what: &'static str,
        code: u8,
        key: Option<Vec<u8>>,
    },
    /// The stored checksum is not that of the file's bytes.
    Checksum { stored: u64, computed: u64 },
    /// A key in a database the keyspace does not have.
    DbOutOfRange { db: usize, databases: usize },
    /// The same key twice in one database.
    DuplicateKey { db: usize, key: Vec<u8> },
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RDB file, offset {}: ", self.offset)?;
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "read failed: {e}"),
            ErrorKind::Truncated => f.write_str("file ends early (truncated)"),
            ErrorKind::NotRdb => f.write_str("not an RDB file (no REDIS signature)"),
            ErrorKind::Version(v) => write!(
                f,
                "RDB version {v} cannot be read (larder reads versions 1 to {RDB_VERSION})"
            ),
            ErrorKind::BadData(what) => write!(f, "bad data: {what}"),
            ErrorKind::UnknownType(t) => write!(f, "unknown opcode or value type {t}"),
            ErrorKind::BadValue { key, rdb_type } => write!(
                f,
                "bad value of type {rdb_type} for key '{}'",
                key.escape_ascii()
            ),
            ErrorKind::Unsupported { what, code, key } => {
                write!(f, "unsupported: {what} ({code})")?;
                if let Some(key) = key {
                    write!(f, " for key '{}'", key.escape_ascii())?;
                }
                f.write_str(", which larder does not hold")
            }
            ErrorKind::Checksum { stored, computed } => write!(
                f,
                "wrong checksum: stored {stored:#018x}, computed {computed:#018x}"
            ),
            ErrorKind::DbOutOfRange { db, databases } => write!(
                f,
                "key in database {db}, but there are only {databases} databases"
            ),
            ErrorKind::DuplicateKey { db, key } => write!(
                f,
                "key '{}' appears twice in database {db}",
                key.escape_ascii()
            ),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// What a value type byte means to larder.
enum TypeClass {
    /// Readable by [`read_value`].
    Value,
    Unsupported(&'static str),
    Unknown,
}

fn classify(t: u8) -> TypeClass {
    match t {
        0..=5 | 9..=19 => TypeClass::Value,
        6 | 7 => TypeClass::Unsupported("module value type"),
        _ => TypeClass::Unknown,
    }
}

/// A streaming reader of one RDB file. Iterate it (or call [`RdbReader::next_item`]) for
/// the keys; AUX fields are collected as they pass ([`RdbReader::aux`]). After the last key
/// it reads the EOF opcode and checks the checksum; bytes after the checksum are not read.
/// After an error it yields nothing more.
pub struct RdbReader<R: Read> {
    src: Source<R>,
    limits: Limits,
    version: u16,
    aux: Vec<(Vec<u8>, Vec<u8>)>,
    functions: Vec<String>,
    db: usize,
    done: bool,
    empty_skipped: u64,
}

impl<R: Read> RdbReader<R> {
    /// Read the header of `r`. Values are loaded with the encodings `limits` give them, as
    /// Redis converts on load.
    pub fn new(r: R, limits: Limits) -> Result<RdbReader<R>, FileError> {
        let mut src = Source::new(r);
        let header: [u8; 9] = src.array()?;
        if &header[..5] != b"REDIS" || !header[5..].iter().all(u8::is_ascii_digit) {
            return Err(FileError {
                offset: 0,
                kind: ErrorKind::NotRdb,
            });
        }
        let version = header[5..]
            .iter()
            .fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
        if version == 0 || version > RDB_VERSION {
            return Err(FileError {
                offset: 5,
                kind: ErrorKind::Version(version),
            });
        }
        Ok(RdbReader {
            src,
            limits,
            version,
            aux: Vec::new(),
            functions: Vec::new(),
            db: 0,
            done: false,
            empty_skipped: 0,
        })
    }

    /// The file's RDB version.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The AUX fields read so far (name, value), in file order: `redis-ver`, `ctime`,
    /// `used-mem`, `aof-base`, ... Complete once the reader has returned its last item.
    pub fn aux(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.aux
    }

    /// The function libraries' codes read so far, in file order (Redis writes them before
    /// the keys).
    pub fn functions(&self) -> &[String] {
        &self.functions
    }

    /// Bytes read from the file so far.
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// Keys skipped because their value was an empty collection (Redis skips them too).
    pub fn empty_skipped(&self) -> u64 {
        self.empty_skipped
    }

    /// The next key, or `None` after the EOF opcode and a good checksum.
    pub fn next_item(&mut self) -> Result<Option<RdbItem>, FileError> {
        if self.done {
            return Ok(None);
        }
        let r = self.read_item();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }

    fn err<T>(&self, offset: u64, kind: ErrorKind) -> Result<T, FileError> {
        Err(self.error(offset, kind))
    }

    fn error(&self, offset: u64, kind: ErrorKind) -> FileError {
        FileError { offset, kind }
    }

    fn read_item(&mut self) -> Result<Option<RdbItem>, FileError> {
        let mut expire_at_ms = None;
        let mut meta = None;
        loop {
            let at = self.src.offset();
            let op = self.src.byte()?;
            match op {
                OPCODE_EOF => {
                    self.finish()?;
                    return Ok(None);
                }
                OPCODE_SELECTDB => {
                    let db = self.src.length()?;
                    let Ok(db) = usize::try_from(db) else {
                        return self.err(at, ErrorKind::BadData("database number"));
                    };
                    self.db = db;
                }
                OPCODE_RESIZEDB => {
                    self.src.length()?;
                    self.src.length()?;
                }
                // Signed, as Redis reads them: a time before 1970 is a deadline long past.
                OPCODE_EXPIRETIME_MS => {
                    let ms = i64::from_le_bytes(self.src.array()?);
                    expire_at_ms = Some(u64::try_from(ms).unwrap_or(0));
                }
                OPCODE_EXPIRETIME => {
                    let secs = i32::from_le_bytes(self.src.array()?);
                    expire_at_ms = Some(u64::try_from(secs).map_or(0, |s| s * 1000));
                }
                OPCODE_IDLE => {
                    self.src.length()?;
                }
                OPCODE_FREQ => {
                    self.src.byte()?;
                }
                OPCODE_AUX => {
                    let name = self.src.string()?;
                    let value = self.src.string()?;
                    if name == META_AUX {
                        meta = Some(
                            parse_meta(&value)
                                .ok_or_else(|| self.error(at, ErrorKind::BadData("lm field")))?,
                        );
                    } else {
                        self.aux.push((name, value));
                    }
                }
                OPCODE_MODULE_AUX => {
                    return self.err(
                        at,
                        ErrorKind::Unsupported {
                            what: "module aux data",
                            code: op,
                            key: None,
                        },
                    )
                }
                OPCODE_FUNCTION2 => {
                    let code = self.src.string()?;
                    self.function(at, code)?;
                }
                OPCODE_FUNCTION_PRE_GA => {
                    let name = self.src.string()?;
                    let engine = self.src.string()?;
                    if self.src.length()? != 0 {
                        self.src.string()?;
                    }
                    let blob = self.src.string()?;
                    self.function(at, pre_ga_code(&name, &engine, &blob))?;
                }
                t => match classify(t) {
                    TypeClass::Unknown => return self.err(at, ErrorKind::UnknownType(t)),
                    TypeClass::Unsupported(what) => {
                        let key = self.src.string()?;
                        return self.err(
                            at,
                            ErrorKind::Unsupported {
                                what,
                                code: t,
                                key: Some(key),
                            },
                        );
                    }
                    TypeClass::Value => {
                        let key = self.src.string()?;
                        match self.value(t, &key, at)? {
                            Some(value) => {
                                return Ok(Some(RdbItem {
                                    db: self.db,
                                    key,
                                    value,
                                    expire_at_ms,
                                    offset: at,
                                    meta,
                                }))
                            }
                            None => {
                                self.empty_skipped += 1;
                                expire_at_ms = None;
                                meta = None;
                            }
                        }
                    }
                },
            }
        }
    }

    /// Keep a library's code (read at offset `at`).
    fn function(&mut self, at: u64, code: Vec<u8>) -> Result<(), FileError> {
        match String::from_utf8(code) {
            Ok(code) => {
                self.functions.push(code);
                Ok(())
            }
            Err(_) => self.err(at, ErrorKind::BadData("function library code is not UTF-8")),
        }
    }

    /// Read a value of type `t` (its type byte is read already); `None` for an empty
    /// collection, which Redis skips.
    fn value(&mut self, t: u8, key: &[u8], at: u64) -> Result<Option<Value>, FileError> {
        self.src.begin_copy(t);
        let copied = self.src.skim_value(t);
        let buf = self.src.end_copy();
        copied?;
        let mut r = Reader::new(buf);
        match read_value(&mut r, &self.limits) {
            Ok(v) if r.remaining() == 0 => Ok(Some(v)),
            Err(_) if empty::is_empty(buf) => Ok(None),
            _ => self.err(
                at,
                ErrorKind::BadValue {
                    key: key.to_vec(),
                    rdb_type: t,
                },
            ),
        }
    }

    /// After EOF: check the checksum (version 5 and later).
    fn finish(&mut self) -> Result<(), FileError> {
        if self.version < FIRST_CHECKSUMMED_VERSION {
            return Ok(());
        }
        let computed = self.src.crc();
        let at = self.src.offset();
        let stored = u64::from_le_bytes(self.src.array()?);
        if stored != 0 && stored != computed {
            return self.err(at, ErrorKind::Checksum { stored, computed });
        }
        Ok(())
    }
}

impl<R: Read> Iterator for RdbReader<R> {
    type Item = Result<RdbItem, FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}
