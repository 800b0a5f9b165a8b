//! Status codes, the last-error message, and the panic boundary shared by every entry point.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ::larder_cache::Error;

/// The result of every fallible call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum larder_status {
    /// Success.
    LARDER_OK = 0,
    /// The key is absent (not an error; no message is set).
    LARDER_NOT_FOUND = 1,
    /// The key holds a different type than the getter asked for.
    LARDER_TYPE_MISMATCH = 2,
    /// A required pointer argument was null.
    LARDER_NULL_ARGUMENT = 3,
    /// An argument was out of range or malformed (a key over 64 KiB, a path that is not
    /// UTF-8 where one is required, a name too long).
    LARDER_INVALID_ARGUMENT = 4,
    /// An operating-system call failed.
    LARDER_IO_ERROR = 5,
    /// The file is corrupt, truncated, or not a cache file.
    LARDER_CORRUPT = 6,
    /// The file's format version (or feature flags) is newer than this library.
    LARDER_UNSUPPORTED_VERSION = 7,
    /// An index past the end of a list.
    LARDER_OUT_OF_RANGE = 8,
    /// A key was inserted twice and the builder rejects duplicates.
    LARDER_DUPLICATE_KEY = 9,
    /// A bug: Rust code panicked. The message says where.
    LARDER_PANIC = 10,
}

pub use larder_status::*;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `msg` as this thread's last error.
pub(crate) fn set_error(msg: impl Into<Vec<u8>>) {
    let mut bytes = msg.into();
    bytes.retain(|&b| b != 0);
    let msg = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

/// The message of the last failed call on this thread (NUL-terminated UTF-8), or "" if none.
///
/// The pointer stays valid until the next failing call on the same thread. Lookups that
/// return `LARDER_NOT_FOUND` do not set a message. Callers on runtimes that move work between
/// threads (Go) should read it from the same OS thread as the failed call.
#[no_mangle]
pub extern "C" fn larder_last_error_message() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// An error on the Rust side of the boundary: a status and, except for `NOT_FOUND`, a message.
pub(crate) struct Failure {
    status: larder_status,
    message: Option<String>,
}

impl Failure {
    pub(crate) fn new(status: larder_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: Some(message.into()),
        }
    }

    pub(crate) fn null(what: &str) -> Failure {
        Failure::new(LARDER_NULL_ARGUMENT, format!("{what} is null"))
    }

    pub(crate) const NOT_FOUND: Failure = Failure {
        status: LARDER_NOT_FOUND,
        message: None,
    };
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let status = match &e {
            Error::Io(_) => LARDER_IO_ERROR,
            Error::UnsupportedVersion { .. } | Error::UnsupportedFlags { .. } => {
                LARDER_UNSUPPORTED_VERSION
            }
            Error::TypeMismatch { .. } => LARDER_TYPE_MISMATCH,
            Error::KeyTooLong { .. } | Error::ValueTooLarge { .. } | Error::NameTooLong { .. } => {
                LARDER_INVALID_ARGUMENT
            }
            Error::DuplicateKey { .. } => LARDER_DUPLICATE_KEY,
            _ => LARDER_CORRUPT,
        };
        Failure {
            status,
            message: Some(e.to_string()),
        }
    }
}

/// Runs `f` inside a panic boundary and turns its outcome into a status.
#[inline]
pub(crate) fn boundary(f: impl FnOnce() -> Result<(), Failure>) -> larder_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => LARDER_OK,
        Ok(Err(failure)) => {
            if let Some(msg) = failure.message {
                set_error(msg);
            }
            failure.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            set_error(format!("internal error (panic): {what}"));
            LARDER_PANIC
        }
    }
}

/// Borrows `len` bytes at `ptr`; a null pointer is allowed only for an empty slice.
///
/// # Safety
/// A non-null `ptr` must point at `len` readable bytes that stay valid for `'a`.
pub(crate) unsafe fn bytes_arg<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Failure::null(what))
        };
    }
    if len > isize::MAX as usize {
        return Err(Failure::new(
            LARDER_INVALID_ARGUMENT,
            format!("{what} length is too large"),
        ));
    }
    // SAFETY: non-null and `len` readable bytes by the caller's contract; `len` fits isize.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Writes `value` through `out`, failing on null.
///
/// # Safety
/// A non-null `out` must be valid for writing a `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null and writable by the caller's contract; `write` does not read or drop the
    // old (possibly uninitialised) value.
    unsafe { out.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn boundary_maps_outcomes() {
        assert_eq!(boundary(|| Ok(())), LARDER_OK);
        assert_eq!(boundary(|| Err(Failure::NOT_FOUND)), LARDER_NOT_FOUND);
        assert_eq!(boundary(|| Err(Failure::null("key"))), LARDER_NULL_ARGUMENT);
        // SAFETY: the returned pointer is a valid C string until the next failing call.
        let msg = unsafe { CStr::from_ptr(larder_last_error_message()) };
        assert_eq!(msg.to_str().ok(), Some("key is null"));
        let status = boundary(|| panic!("boom"));
        assert_eq!(status, LARDER_PANIC);
        // SAFETY: as above.
        let msg = unsafe { CStr::from_ptr(larder_last_error_message()) };
        assert!(msg.to_string_lossy().contains("boom"));
    }

    #[test]
    fn errors_map_to_statuses() {
        let f = Failure::from(Error::UnsupportedVersion {
            found: 2,
            supported: 1,
        });
        assert_eq!(f.status, LARDER_UNSUPPORTED_VERSION);
        let f = Failure::from(Error::NotACacheFile);
        assert_eq!(f.status, LARDER_CORRUPT);
    }
}
