//! Function libraries in RDB form: the FUNCTION DUMP / FUNCTION RESTORE payload, as Redis
//! 7.0 writes and reads it (`functionDumpCommand`, `functionRestoreCommand`,
//! `rdbSaveFunctions` and `rdbFunctionLoad`).
//!
//! ```text
//! repeated:  FUNCTION2 (245)  the library's code, an RDB string (plain, integer or LZF)
//!   or (7.0 release candidates): FUNCTION (246)  name, engine, has-description (a length),
//!            [description], code: RDB strings, read as "#!<engine> name=<name>\n<code>"
//! then the RDB version (u16 LE, 10 for 7.0) and the CRC-64 of every byte before it (u64 LE)
//! ```
//!
//! [`dump_payload`] writes one, [`parse_dump_payload`] reads one back into the libraries'
//! codes (the caller's registry compiles them). The reader takes untrusted bytes: it never
//! panics and never allocates more than the payload holds.

use super::file::{OPCODE_FUNCTION2, OPCODE_FUNCTION_PRE_GA};
use super::length::{put_string, Reader};
use super::{crc64, verify, RDB_VERSION};

/// Why a FUNCTION RESTORE payload could not be read. Its `Display` is Redis 7.0's error
/// text for it, without the "ERR " the reply starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FunctionsError {
    /// Shorter than its footer, from a newer RDB version, or failing its checksum.
    VersionOrChecksum,
    /// An item of the payload is not a function library.
    NotAFunction,
    /// A library's code (or, in the pre-GA form, one of its fields) does not read:
    /// `what` says which, in Redis's words.
    Load(&'static str),
    /// A library's code is not UTF-8 (larder's registry holds code as text; Redis would
    /// hand the bytes to Lua).
    NotUtf8,
}

impl std::fmt::Display for FunctionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FunctionsError::VersionOrChecksum => "DUMP payload version or checksum are wrong",
            FunctionsError::NotAFunction => "given type is not a function",
            FunctionsError::Load(what) => what,
            FunctionsError::NotUtf8 => "library code is not valid UTF-8",
        })
    }
}

impl std::error::Error for FunctionsError {}

const LOAD_PAYLOAD: &str = "Failed loading library payload";
const LOAD_NAME: &str = "Failed loading library name";
const LOAD_ENGINE: &str = "Failed loading engine name";
const LOAD_DESC_FLAG: &str = "Failed loading library description indicator";
const LOAD_DESC: &str = "Failed loading library description";
const LOAD_BLOB: &str = "Failed loading library blob";

/// The FUNCTION DUMP payload of libraries `codes`, in that order: byte for byte what Redis
/// 7.0 writes for them when its libraries iterate in that order (codes over 20 bytes are
/// LZF-compressed when that saves at least four bytes, as `rdbcompression yes` does).
pub fn dump_payload(codes: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        put_string(&mut out, code.as_bytes());
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The libraries' codes in FUNCTION RESTORE payload `bytes`, in payload order.
///
/// As Redis does, items are read while more than the footer's ten bytes remain, and an
/// item's string may run into the footer (Redis reads the payload as one buffer); the caller
/// then fails to compile such a code, as Redis does.
pub fn parse_dump_payload(bytes: &[u8]) -> Result<Vec<String>, FunctionsError> {
    verify(bytes).map_err(|_| FunctionsError::VersionOrChecksum)?;
    let mut r = Reader::new(bytes);
    let mut codes = Vec::new();
    while r.remaining() > 10 {
        let opcode = r.u8().map_err(|_| FunctionsError::NotAFunction)?;
        let code = read_library(&mut r, opcode)?;
        codes.push(String::from_utf8(code).map_err(|_| FunctionsError::NotUtf8)?);
    }
    Ok(codes)
}

/// One library after its opcode byte (`opcode`, FUNCTION2 or the pre-GA FUNCTION): its code.
pub fn read_library(r: &mut Reader<'_>, opcode: u8) -> Result<Vec<u8>, FunctionsError> {
    let string = |r: &mut Reader<'_>, what| r.string().map_err(|_| FunctionsError::Load(what));
    match opcode {
        OPCODE_FUNCTION2 => string(r, LOAD_PAYLOAD),
        OPCODE_FUNCTION_PRE_GA => {
            let name = string(r, LOAD_NAME)?;
            let engine = string(r, LOAD_ENGINE)?;
            let has_desc = r
                .length()
                .map_err(|_| FunctionsError::Load(LOAD_DESC_FLAG))?;
            if has_desc != 0 {
                string(r, LOAD_DESC)?;
            }
            let blob = string(r, LOAD_BLOB)?;
            Ok(pre_ga_code(&name, &engine, &blob))
        }
        _ => Err(FunctionsError::NotAFunction),
    }
}

/// The code a 7.0 release candidate's library (name, engine and code stored apart) stands
/// for: `#!<engine> name=<name>\n<code>`, as Redis rebuilds it (the description is dropped).
pub fn pre_ga_code(name: &[u8], engine: &[u8], blob: &[u8]) -> Vec<u8> {
    let mut code = Vec::with_capacity(engine.len() + name.len() + blob.len() + 9);
    code.extend_from_slice(b"#!");
    code.extend_from_slice(engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(name);
    code.push(b'\n');
    code.extend_from_slice(blob);
    code
}

#[cfg(test)]
mod tests;
