//! Swapping: a cache that follows a path or a pointer file and moves to each newly published
//! file without blocking readers.
//!
//! The swapper never hands out borrowed views of its own: [`larder_cache_swapper_current`]
//! returns an ordinary [`larder_cache`] handle that shares the current mapping, so every getter
//! works on it, and a lookup that started on the old file finishes on it even after a refresh,
//! because the old mapping lives until its last handle is closed.

use std::ffi::c_char;

use ::larder_cache::SwappingCache;

use crate::reader::{handle_from_arc, larder_cache, path_arg};
use crate::status::{boundary, larder_status, write_out, Failure};

/// A cache that swaps to newer files. Opaque; share one between threads freely.
pub struct larder_cache_swapper {
    swap: SwappingCache,
}

// C callers share swapper and cache handles between threads; keep that sound if a field
// ever changes.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SwappingCache>();
    send_sync::<::larder_cache::Cache>();
};

/// Borrows the swapper behind a handle.
///
/// # Safety
/// A non-null `swapper` must come from [`larder_cache_watch_path`] or
/// [`larder_cache_watch_pointer`] and not be closed.
unsafe fn swapper_arg<'a>(
    swapper: *const larder_cache_swapper,
) -> Result<&'a SwappingCache, Failure> {
    if swapper.is_null() {
        return Err(Failure::null("swapper"));
    }
    // SAFETY: by the caller's contract the handle is live; it is only read through.
    Ok(unsafe { &(*swapper).swap })
}

/// Shared body of the two constructors.
///
/// # Safety
/// `path` must be null or a valid NUL-terminated string; `out` must be null or writable.
unsafe fn watch(
    path: *const c_char,
    out: *mut *mut larder_cache_swapper,
    open: fn(std::path::PathBuf) -> Result<SwappingCache, ::larder_cache::Error>,
) -> larder_status {
    boundary(|| {
        // SAFETY: null or NUL-terminated by the caller's contract.
        let path = unsafe { path_arg(path)? };
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let swap = open(path)?;
        let handle = Box::into_raw(Box::new(larder_cache_swapper { swap }));
        // SAFETY: `out` checked non-null above and writable by contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Opens the cache file at `path` and follows it: a refresh swaps to whatever file has since
/// been renamed onto `path` (the builder publishes that way). On success `*out` holds a
/// swapper to free with [`larder_cache_swapper_close`].
///
/// # Safety
/// `path` must be a valid NUL-terminated string; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_watch_path(
    path: *const c_char,
    out: *mut *mut larder_cache_swapper,
) -> larder_status {
    // SAFETY: forwarded caller contract.
    unsafe { watch(path, out, SwappingCache::watch_path) }
}

/// Opens the cache file named by the pointer file at `pointer_path` (a text file holding one
/// path; a relative path is relative to the pointer file's directory; surrounding whitespace is
/// ignored) and follows it: a refresh swaps when the pointer names another file or the named
/// file is replaced. Publish by writing a new pointer file beside it and renaming it over.
///
/// # Safety
/// `pointer_path` must be a valid NUL-terminated string; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_watch_pointer(
    pointer_path: *const c_char,
    out: *mut *mut larder_cache_swapper,
) -> larder_status {
    // SAFETY: forwarded caller contract.
    unsafe { watch(pointer_path, out, SwappingCache::watch_pointer) }
}

/// Checks the watched path or pointer file once and swaps if it designates a different file.
/// `*changed` (if `changed` is not null) is set to whether it swapped; false on any error. A new
/// file that fails to open (missing, corrupt, a bad pointer) leaves the current one in service
/// and returns its error. Handles taken before a swap keep reading the old file. Never blocks
/// lookups; concurrent refreshes are serialised.
///
/// # Safety
/// `swapper` must be a live swapper; `changed` must be null or writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_swapper_refresh(
    swapper: *const larder_cache_swapper,
    changed: *mut bool,
) -> larder_status {
    boundary(|| {
        if !changed.is_null() {
            // SAFETY: non-null and writable by the caller's contract.
            unsafe { write_out(changed, false, "changed")? };
        }
        // SAFETY: caller contract.
        let swap = unsafe { swapper_arg(swapper)? };
        let swapped = swap.refresh()?;
        if !changed.is_null() {
            // SAFETY: as above.
            unsafe { write_out(changed, swapped, "changed")? };
        }
        Ok(())
    })
}

/// Sets `*out` to a new handle on the current file, to use with every `larder_cache_*` getter
/// and to free with `larder_cache_close`. The handle and the pointers its getters return stay
/// valid (on that file) until it is closed, whatever refreshes happen meanwhile; take a new one
/// after a refresh to read the new file. Costs one atomic increment; no lock. Handles from
/// separate calls on an unchanged file may compare equal (they share the mapping); each
/// successful call must still be matched by one `larder_cache_close`.
///
/// # Safety
/// `swapper` must be a live swapper; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_swapper_current(
    swapper: *const larder_cache_swapper,
    out: *mut *mut larder_cache,
) -> larder_status {
    boundary(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: caller contract.
        let swap = unsafe { swapper_arg(swapper)? };
        let handle = handle_from_arc(swap.load_full());
        // SAFETY: `out` checked non-null above and writable by contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Frees a swapper. Handles taken from it with [`larder_cache_swapper_current`] stay valid
/// until closed themselves. Null is a no-op.
///
/// # Safety
/// A non-null `swapper` must come from [`larder_cache_watch_path`] or
/// [`larder_cache_watch_pointer`], not be closed already, and not be in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_swapper_close(swapper: *mut larder_cache_swapper) {
    if swapper.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: created by Box::into_raw in `watch`; closed once by contract.
        drop(unsafe { Box::from_raw(swapper) });
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::*;
    use crate::reader::*;
    use crate::status::larder_status::*;
    use std::ffi::CString;
    use std::path::Path;

    fn build(path: &Path, value: i64) {
        let c = CString::new(path.to_str().expect("utf8")).expect("cstr");
        let mut b = std::ptr::null_mut();
        // SAFETY: valid C string and out pointer; the builder is finished once.
        unsafe {
            assert_eq!(larder_cache_builder_new(c.as_ptr(), &mut b), LARDER_OK);
            assert_eq!(
                larder_cache_builder_insert_i64(b, b"k".as_ptr(), 1, value),
                LARDER_OK
            );
            assert_eq!(
                larder_cache_builder_finish(b, std::ptr::null_mut()),
                LARDER_OK
            );
        }
    }

    fn get(cache: *const larder_cache) -> i64 {
        let mut v = 0;
        // SAFETY: a live handle, a valid key and out pointer.
        let status = unsafe { larder_cache_get_i64(cache, b"k".as_ptr(), 1, &mut v) };
        assert_eq!(status, LARDER_OK);
        v
    }

    #[test]
    fn old_handles_outlive_a_swap_and_the_swapper() {
        let dir = std::env::temp_dir().join(format!("larder-ffi-swap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let live = dir.join("live.lcache");
        build(&live, 1);
        let path = CString::new(live.to_str().expect("utf8")).expect("cstr");
        let mut sw = std::ptr::null_mut();
        let (mut old, mut new) = (std::ptr::null_mut(), std::ptr::null_mut());
        let mut changed = true;
        // SAFETY: valid C strings and out pointers; every handle is closed once.
        unsafe {
            assert_eq!(larder_cache_watch_path(path.as_ptr(), &mut sw), LARDER_OK);
            assert_eq!(larder_cache_swapper_current(sw, &mut old), LARDER_OK);
            assert_eq!(larder_cache_swapper_refresh(sw, &mut changed), LARDER_OK);
            assert!(!changed);
            build(&live, 2);
            assert_eq!(larder_cache_swapper_refresh(sw, &mut changed), LARDER_OK);
            assert!(changed);
            assert_eq!(larder_cache_swapper_current(sw, &mut new), LARDER_OK);
            larder_cache_swapper_close(sw);
            assert_eq!(get(old), 1);
            assert_eq!(get(new), 2);
            larder_cache_close(old);
            larder_cache_close(new);
            assert_eq!(
                larder_cache_swapper_refresh(std::ptr::null(), &mut changed),
                LARDER_NULL_ARGUMENT
            );
            assert_eq!(
                larder_cache_swapper_current(std::ptr::null(), &mut old),
                LARDER_NULL_ARGUMENT
            );
            assert_eq!(
                larder_cache_watch_pointer(std::ptr::null(), &mut sw),
                LARDER_NULL_ARGUMENT
            );
            larder_cache_swapper_close(std::ptr::null_mut());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
