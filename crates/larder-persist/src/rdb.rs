//! Redis's RDB value serialization, version 10 (Redis 7.0): DUMP payloads now, snapshot
//! files later.
//!
//! A DUMP payload is `[object type: u8][value][RDB version: u16 LE][CRC-64: u64 LE]`, the
//! checksum ([`crc64::crc64`]) covering everything before it. [`value`] writes and reads the
//! value for each type; the encodings it builds on are one module each: lengths and strings
//! ([`length`]), [`lzf`], [`listpack`], [`ziplist`] and [`intset`]; sorted sets are
//! coded at the level of (member, score) pairs in [`zset`].

pub mod crc64;
pub mod file;
pub mod functions;
pub mod intset;
pub mod length;
pub mod listpack;
pub mod lzf;
pub mod stream;
mod value;
pub mod ziplist;
pub mod zipmap;
pub mod zset;

#[cfg(test)]
mod tests;

pub use length::Reader;
pub use value::{read_value, write_value};

use larder_engine::{Limits, Object};

/// The RDB format version larder writes, and the newest it reads (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// Why a payload could not be read (or a value written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The payload is shorter than its footer, comes from a newer RDB version, or fails its
    /// checksum.
    VersionOrChecksum,
    /// The bytes are not a well-formed value of a type larder holds.
    BadData,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Error::VersionOrChecksum => "DUMP payload version or checksum are wrong",
            Error::BadData => "Bad data format",
        })
    }
}

impl std::error::Error for Error {}

/// One element of a listpack or ziplist: bytes, or an integer stored as such.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl Elem<'_> {
    /// The element's bytes (an integer in decimal).
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Elem::Str(s) => s.to_vec(),
            Elem::Int(v) => v.to_string().into_bytes(),
        }
    }
}

/// A value to serialize: a string, or an engine object (a string object counts as a string).
#[derive(Clone, Copy, Debug)]
pub enum ValueRef<'a> {
    String(&'a [u8]),
    Object(&'a Object),
}

/// A value read back: strings are plain bytes, other types engine objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    String(Vec<u8>),
    Object(Object),
}

/// The DUMP payload of `value`. `limits` gives the list node size Redis would have split a
/// list at (`list-max-listpack-size`).
pub fn dump(value: ValueRef<'_>, limits: &Limits) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    write_value(&mut out, value, limits)?;
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Check a DUMP payload's footer as Redis's `verifyDumpPayload` does: at least ten bytes, a
/// version no newer than [`RDB_VERSION`], and a matching checksum.
pub fn verify(payload: &[u8]) -> Result<(), Error> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(Error::VersionOrChecksum);
    };
    let footer = &payload[body_len..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(Error::VersionOrChecksum);
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&footer[2..]);
    if crc64::crc64(0, &payload[..body_len + 2]) != u64::from_le_bytes(stored) {
        return Err(Error::VersionOrChecksum);
    }
    Ok(())
}

/// The value in DUMP payload `payload` (RESTORE), encoded as Redis 7.0 would load it under
/// `limits`. As in Redis, the value is read from the start of the payload and whatever
/// follows it is not looked at.
pub fn restore(payload: &[u8], limits: &Limits) -> Result<Value, Error> {
    verify(payload)?;
    read_value(&mut Reader::new(payload), limits)
}
