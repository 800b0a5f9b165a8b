//! The crate's error type.

use std::fmt;
use std::io;

use crate::format::ValueType;

/// Everything that can go wrong while building, opening or reading a cache file.
///
/// A corrupt or hostile file always surfaces as one of these variants; it never panics and never
/// reads outside the mapping.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call failed.
    Io(io::Error),
    /// The file does not start with the cache magic number.
    NotACacheFile,
    /// The file was written by a format version this reader does not understand.
    UnsupportedVersion {
        /// The version found in the file.
        found: u32,
        /// The newest version this reader understands.
        supported: u32,
    },
    /// The file uses optional features (header flags) this reader does not understand.
    UnsupportedFlags {
        /// The flag bits this reader does not know.
        unknown: u32,
    },
    /// The file is shorter or longer than its header says.
    Truncated {
        /// The length the header records.
        expected_bytes: u64,
        /// The length on disk.
        actual_bytes: u64,
    },
    /// A stored checksum does not match the bytes it covers.
    ChecksumMismatch {
        /// `"header"`, `"data"` or `"index"`.
        section: &'static str,
        /// The checksum stored in the header.
        stored: u64,
        /// The checksum of the bytes on disk.
        computed: u64,
    },
    /// A structure inside the file is out of bounds or malformed.
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// The file offset where it was being read.
        offset: u64,
    },
    /// A typed getter asked for a type other than the one stored for the key.
    TypeMismatch {
        /// The type the caller asked for.
        expected: ValueType,
        /// The type stored in the file.
        found: ValueType,
    },
    /// A key longer than [`crate::KEY_LEN_MAX`] bytes was inserted.
    KeyTooLong {
        /// The length of the rejected key.
        len: usize,
    },
    /// A value exceeds a per-value limit (a string list's text over 4 GiB).
    ValueTooLarge {
        /// The length of the rejected value in bytes.
        len: u64,
    },
    /// The cache name is longer than [`crate::NAME_LEN_MAX`] bytes.
    NameTooLong {
        /// The length of the rejected name.
        len: usize,
    },
    /// A key was inserted twice while the builder's policy is [`crate::DuplicatePolicy::Error`].
    DuplicateKey {
        /// The key, lossily converted to UTF-8 for the message.
        key: String,
    },
}

impl Error {
    pub(crate) fn corrupt(what: &'static str, offset: usize) -> Error {
        Error::Corrupt {
            what,
            offset: offset as u64,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "cache file I/O error: {e}"),
            Error::NotACacheFile => f.write_str("not a larder cache file (bad magic number)"),
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported cache file format version {found} (this reader supports version \
                 {supported}); rebuild the file or upgrade larder"
            ),
            Error::UnsupportedFlags { unknown } => {
                write!(
                    f,
                    "cache file uses unknown feature flags {unknown:#x}; upgrade larder"
                )
            }
            Error::Truncated {
                expected_bytes,
                actual_bytes,
            } => write!(
                f,
                "cache file is truncated or padded: header says {expected_bytes} bytes, file has \
                 {actual_bytes}"
            ),
            Error::ChecksumMismatch {
                section,
                stored,
                computed,
            } => write!(
                f,
                "cache file {section} checksum mismatch: stored {stored:#018x}, computed \
                 {computed:#018x}"
            ),
            Error::Corrupt { what, offset } => {
                write!(f, "corrupt cache file: bad {what} at offset {offset}")
            }
            Error::TypeMismatch { expected, found } => {
                write!(f, "type mismatch: asked for {expected}, key holds {found}")
            }
            Error::KeyTooLong { len } => {
                write!(
                    f,
                    "key of {len} bytes exceeds the limit of {} bytes",
                    crate::KEY_LEN_MAX
                )
            }
            Error::ValueTooLarge { len } => write!(f, "value of {len} bytes exceeds the limit"),
            Error::NameTooLong { len } => write!(
                f,
                "cache name of {len} bytes exceeds the limit of {} bytes",
                crate::NAME_LEN_MAX
            ),
            Error::DuplicateKey { key } => write!(f, "duplicate key {key:?}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = Error::UnsupportedVersion {
            found: 9,
            supported: 1,
        };
        assert!(e.to_string().contains("version 9"));
        let e = Error::TypeMismatch {
            expected: ValueType::I64,
            found: ValueType::Str,
        };
        assert_eq!(e.to_string(), "type mismatch: asked for i64, key holds str");
    }
}
