//! The module's exceptions and the mapping from [`larder_cache::Error`] to them.
//!
//! | Rust error | Python exception |
//! |---|---|
//! | `Io` | `OSError` (the errno subclass: `FileNotFoundError`, `PermissionError`, ...) |
//! | `NotACacheFile`, `Truncated`, `ChecksumMismatch`, `Corrupt` | `CorruptFile(ValueError)` |
//! | `UnsupportedVersion`, `UnsupportedFlags` | `UnsupportedVersion(ValueError)` |
//! | `TypeMismatch` | `TypeMismatch(TypeError)` |
//! | `KeyTooLong`, `ValueTooLarge`, `NameTooLong`, `DuplicateKey` | `ValueError` |

use std::path::Path;

use larder_cache::Error;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::PyErr;

create_exception!(
    larder_cache,
    CorruptFile,
    PyValueError,
    "The file is not a larder cache file, is truncated, or fails a bounds or checksum check."
);
create_exception!(
    larder_cache,
    UnsupportedVersion,
    PyValueError,
    "The file was written by a newer format version (or with feature flags) this reader does \
     not understand. Rebuild the file or upgrade larder_cache."
);
create_exception!(
    larder_cache,
    TypeMismatch,
    PyTypeError,
    "A typed getter asked for a type other than the one stored for the key."
);

/// Converts a library error into the Python exception documented in the module docstring.
#[cold]
#[inline(never)]
pub fn to_py_err(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::Io(io) => io_error(io, None),
        Error::NotACacheFile
        | Error::Truncated { .. }
        | Error::ChecksumMismatch { .. }
        | Error::Corrupt { .. } => CorruptFile::new_err(message),
        Error::UnsupportedVersion { .. } | Error::UnsupportedFlags { .. } => {
            UnsupportedVersion::new_err(message)
        }
        Error::TypeMismatch { .. } => TypeMismatch::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// Like [`to_py_err`], naming `path` in an `OSError` (its `filename` attribute).
#[cold]
#[inline(never)]
pub fn to_py_err_at(e: Error, path: &Path) -> PyErr {
    match e {
        Error::Io(io) => io_error(io, Some(path)),
        other => to_py_err(other),
    }
}

/// `OSError(errno, strerror, filename)`, which Python turns into the errno's subclass.
fn io_error(io: std::io::Error, path: Option<&Path>) -> PyErr {
    let Some(errno) = io.raw_os_error() else {
        return PyOSError::new_err(io.to_string());
    };
    let strerror = io.to_string();
    match path {
        Some(p) => PyOSError::new_err((errno, strerror, p.as_os_str().to_os_string())),
        None => PyOSError::new_err((errno, strerror)),
    }
}
