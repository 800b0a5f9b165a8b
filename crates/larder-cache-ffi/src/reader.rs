//! Reading: open, close, lookups, info, verify.

use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::sync::Arc;

use ::larder_cache::{Cache, StrList, ValueRef, ValueType};

use crate::status::{boundary, bytes_arg, larder_status, write_out, Failure};
use crate::status::{LARDER_CORRUPT, LARDER_INVALID_ARGUMENT, LARDER_OUT_OF_RANGE};

/// An open cache file. Opaque; share one handle between threads freely (lookups take no lock).
/// Each handle keeps its file mapped until it is closed, also after a swapper it came from has
/// moved on to a newer file.
//
// A handle is the pointer `Arc::into_raw` returns for an `Arc<Cache>`: it points at the `Cache`
// itself, so a lookup costs one dereference, as a `Box<Cache>` would, and a handle from
// `larder_cache_swapper_current` shares the swapper's mapping and owns one strong count of it.
// This type is never instantiated; it only names the handle.
pub struct larder_cache {
    _opaque: [u8; 0],
}

/// Turns a shared cache into a handle owning one strong count, to free with
/// [`larder_cache_close`].
pub(crate) fn handle_from_arc(cache: Arc<Cache>) -> *mut larder_cache {
    Arc::into_raw(cache).cast_mut().cast()
}

/// The type of a value, as stored.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum larder_value_type {
    /// Arbitrary bytes.
    LARDER_TYPE_BYTES = 1,
    /// UTF-8 text (not NUL-terminated).
    LARDER_TYPE_STR = 2,
    /// Signed 64-bit integer.
    LARDER_TYPE_I64 = 3,
    /// 64-bit float.
    LARDER_TYPE_F64 = 4,
    /// Boolean.
    LARDER_TYPE_BOOL = 5,
    /// List of 32-bit floats.
    LARDER_TYPE_F32_LIST = 6,
    /// List of 64-bit floats.
    LARDER_TYPE_F64_LIST = 7,
    /// List of UTF-8 strings.
    LARDER_TYPE_STR_LIST = 8,
}

pub use larder_value_type::*;

/// A list of strings borrowed from the mapping. String `i` is the bytes of `text` from
/// `ends[i-1]` (0 for the first) to `ends[i]`; use [`larder_str_list_get`], which checks those
/// bounds and the UTF-8, rather than indexing by hand.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct larder_str_list {
    /// End offset of each string in `text`.
    pub ends: *const u32,
    /// Number of strings.
    pub count: usize,
    /// The strings' bytes, concatenated.
    pub text: *const u8,
    /// Length of `text`.
    pub text_len: usize,
}

impl larder_str_list {
    const EMPTY: larder_str_list = larder_str_list {
        ends: std::ptr::null(),
        count: 0,
        text: std::ptr::null(),
        text_len: 0,
    };
}

/// Any value, as filled in by [`larder_cache_get`]. Pointers borrow from the cache's mapping
/// and stay valid until the cache is closed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct larder_value {
    /// Which of the fields below hold the value.
    pub value_type: larder_value_type,
    /// BYTES and STR: the bytes; F32_LIST and F64_LIST: the elements (aligned). Else null.
    pub data: *const c_void,
    /// BYTES and STR: length in bytes; lists (all three kinds): number of elements.
    pub len: usize,
    /// I64: the value; BOOL: 0 or 1.
    pub i64_value: i64,
    /// F64: the value.
    pub f64_value: f64,
    /// STR_LIST: the list.
    pub str_list: larder_str_list,
}

/// Facts about an open cache. `name` borrows from the handle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct larder_info {
    /// The user-given name (UTF-8, not NUL-terminated).
    pub name: *const u8,
    /// Length of `name`.
    pub name_len: usize,
    /// Format version of the file.
    pub format_version: u32,
    /// 1 if the builder deduplicated values, else 0.
    pub dedup: u32,
    /// Build time, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// Number of keys.
    pub key_count: u64,
    /// Number of stored values (fewer than keys when dedup merged some).
    pub value_count: u64,
    /// Total file size.
    pub file_bytes: u64,
    /// Size of the record section.
    pub data_bytes: u64,
    /// Size of the index.
    pub index_bytes: u64,
    /// Sum of key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value payload lengths before dedup.
    pub raw_value_bytes: u64,
    /// Bytes dedup saved.
    pub dedup_saved_bytes: u64,
}

/// Where the sections of an open cache file lie in its mapping, as validated at open, for
/// bindings that look keys up by reading the mapping themselves (following
/// `docs/cache-format.md`) rather than calling [`larder_cache_get`] per lookup. Filled by
/// [`larder_cache_layout`]; `base` stays valid until the handle is closed.
///
/// Guaranteed by the open-time checks: `data_end <= index_start < index_end == len`,
/// `index_end - index_start` a multiple of 64, `1 <= home_bucket_count <=
/// (index_end - index_start) / 64`, and `offset_width` 4 or 8. Nothing past the header has been
/// checked: a reader must bounds-check every offset it reads from the file.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct larder_layout {
    /// The first byte of the mapped file (file offset 0). Read-only memory.
    pub base: *const u8,
    /// Length of the mapping: the file's length.
    pub len: usize,
    /// The file's format version; the rules above and in the format document are version 1's,
    /// so a reader must fall back to [`larder_cache_get`] for any other.
    pub format_version: u32,
    /// Bytes per record offset in an index bucket: 4 (12 lanes) or 8 (7 lanes).
    pub offset_width: u32,
    /// End of the record section (file offset): records and values lie below it.
    pub data_end: u64,
    /// Start of the hash index (file offset, a multiple of 64).
    pub index_start: u64,
    /// End of the hash index (file offset).
    pub index_end: u64,
    /// Buckets a hash maps onto: `home = (hash * home_bucket_count) >> 64`, 128-bit product.
    pub home_bucket_count: u64,
    /// Farthest any key sits past its home bucket, in buckets.
    pub probe_max: u64,
    /// Number of keys.
    pub key_count: u64,
}

/// Borrows the cache behind a handle.
///
/// # Safety
/// A non-null `cache` must come from [`larder_cache_open`] or
/// `larder_cache_swapper_current` and not be closed.
unsafe fn cache_arg<'a>(cache: *const larder_cache) -> Result<&'a Cache, Failure> {
    if cache.is_null() {
        return Err(Failure::null("cache"));
    }
    // SAFETY: by the caller's contract the handle is live, so it points at the `Cache` of an
    // `Arc` whose strong count the handle owns (see `handle_from_arc`); it is only read through.
    Ok(unsafe { &*cache.cast::<Cache>() })
}

/// Looks a key up with a typed getter, mapping `None` to `LARDER_NOT_FOUND`.
///
/// # Safety
/// As for [`cache_arg`] and [`bytes_arg`].
#[inline]
unsafe fn lookup<'a, T>(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    get: impl FnOnce(&'a Cache, &[u8]) -> Result<Option<T>, ::larder_cache::Error>,
) -> Result<T, Failure> {
    // SAFETY: forwarded caller contract.
    let cache = unsafe { cache_arg(cache)? };
    // SAFETY: forwarded caller contract.
    let key = unsafe { bytes_arg(key, key_len, "key")? };
    get(cache, key)?.ok_or(Failure::NOT_FOUND)
}

fn str_list(list: StrList<'_>) -> larder_str_list {
    let (ends, text) = list.raw_parts();
    larder_str_list {
        ends: ends.as_ptr(),
        count: ends.len(),
        text: text.as_ptr(),
        text_len: text.len(),
    }
}

/// Opens a cache file. `path` is a NUL-terminated path (bytes on Unix, UTF-8 elsewhere).
/// On success `*out` holds a handle to free with [`larder_cache_close`].
///
/// # Safety
/// `path` must be a valid NUL-terminated string; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_open(
    path: *const c_char,
    out: *mut *mut larder_cache,
) -> larder_status {
    boundary(|| {
        // SAFETY: null or NUL-terminated by the caller's contract.
        let path = unsafe { path_arg(path)? };
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let handle = handle_from_arc(Arc::new(Cache::open(&path)?));
        // SAFETY: `out` checked non-null above and writable by contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// A path argument: null is refused; otherwise the NUL-terminated bytes (Unix) or UTF-8 text.
///
/// # Safety
/// `path` must be null or point to a NUL-terminated string.
pub(crate) unsafe fn path_arg(path: *const c_char) -> Result<PathBuf, Failure> {
    if path.is_null() {
        return Err(Failure::null("path"));
    }
    // SAFETY: non-null and NUL-terminated by this function's contract.
    let path = unsafe { CStr::from_ptr(path) };
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        path.to_str()
            .map(PathBuf::from)
            .map_err(|_| Failure::new(LARDER_INVALID_ARGUMENT, "path is not UTF-8"))
    }
}

/// Closes a cache handle. Values borrowed through it become invalid. The file is unmapped when
/// its last handle is closed (a swapper holds one on its current file). Null is a no-op.
///
/// # Safety
/// A non-null `cache` must come from [`larder_cache_open`] or
/// `larder_cache_swapper_current` and not be closed already.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_close(cache: *mut larder_cache) {
    if cache.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: created by `handle_from_arc` (Arc::into_raw of an Arc<Cache>); closed once by
        // contract, so this gives back the strong count the handle owned.
        drop(unsafe { Arc::from_raw(cache.cast_const().cast::<Cache>()) });
        Ok(())
    });
}

/// Number of keys.
///
/// # Safety
/// `cache` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_len(
    cache: *const larder_cache,
    out: *mut u64,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let cache = unsafe { cache_arg(cache)? };
        // SAFETY: caller contract.
        unsafe { write_out(out, cache.len(), "out") }
    })
}

/// `LARDER_OK` if the key is present, `LARDER_NOT_FOUND` if not.
///
/// # Safety
/// `cache` must be a live handle; `key` must point at `key_len` bytes (null if 0).
#[no_mangle]
pub unsafe extern "C" fn larder_cache_contains(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let found = unsafe { lookup(cache, key, key_len, |c, k| c.contains(k).map(Some))? };
        if found {
            Ok(())
        } else {
            Err(Failure::NOT_FOUND)
        }
    })
}

/// Looks a key up whatever its type and fills `*out`: one call per lookup for bindings.
///
/// # Safety
/// `cache` must be a live handle; `key` must point at `key_len` bytes (null if 0); `out` must
/// be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut larder_value,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let value = unsafe { lookup(cache, key, key_len, |c, k| c.get(k))? };
        let mut v = larder_value {
            value_type: LARDER_TYPE_BYTES,
            data: std::ptr::null(),
            len: 0,
            i64_value: 0,
            f64_value: 0.0,
            str_list: larder_str_list::EMPTY,
        };
        match value {
            ValueRef::Bytes(b) => (v.data, v.len) = (b.as_ptr().cast(), b.len()),
            ValueRef::Str(s) => {
                v.value_type = LARDER_TYPE_STR;
                (v.data, v.len) = (s.as_ptr().cast(), s.len());
            }
            ValueRef::I64(i) => (v.value_type, v.i64_value) = (LARDER_TYPE_I64, i),
            ValueRef::F64(f) => (v.value_type, v.f64_value) = (LARDER_TYPE_F64, f),
            ValueRef::Bool(b) => (v.value_type, v.i64_value) = (LARDER_TYPE_BOOL, i64::from(b)),
            ValueRef::F32List(l) => {
                v.value_type = LARDER_TYPE_F32_LIST;
                (v.data, v.len) = (l.as_ptr().cast(), l.len());
            }
            ValueRef::F64List(l) => {
                v.value_type = LARDER_TYPE_F64_LIST;
                (v.data, v.len) = (l.as_ptr().cast(), l.len());
            }
            ValueRef::StrList(l) => {
                v.value_type = LARDER_TYPE_STR_LIST;
                v.str_list = str_list(l);
                v.len = l.len();
            }
            _ => {
                return Err(Failure::new(
                    LARDER_CORRUPT,
                    "value type unknown to this binding",
                ))
            }
        }
        // SAFETY: caller contract.
        unsafe { write_out(out, v, "out") }
    })
}

/// The stored type of a key.
///
/// # Safety
/// As for [`larder_cache_get`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_value_type(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut larder_value_type,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let ty = unsafe { lookup(cache, key, key_len, |c, k| c.value_type(k))? };
        let ty = match ty {
            ValueType::Bytes => LARDER_TYPE_BYTES,
            ValueType::Str => LARDER_TYPE_STR,
            ValueType::I64 => LARDER_TYPE_I64,
            ValueType::F64 => LARDER_TYPE_F64,
            ValueType::Bool => LARDER_TYPE_BOOL,
            ValueType::F32List => LARDER_TYPE_F32_LIST,
            ValueType::F64List => LARDER_TYPE_F64_LIST,
            ValueType::StrList => LARDER_TYPE_STR_LIST,
            _ => {
                return Err(Failure::new(
                    LARDER_CORRUPT,
                    "value type unknown to this binding",
                ))
            }
        };
        // SAFETY: caller contract.
        unsafe { write_out(out, ty, "out") }
    })
}

/// Shared body of the getters that return a pointer and a length borrowed from the mapping.
///
/// # Safety
/// As for [`lookup`]; `out` and `out_len` must be writable.
#[inline]
unsafe fn slice_get<'a, T: 'a, V: AsRef<[T]> + 'a>(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut *const T,
    out_len: *mut usize,
    get: impl FnOnce(&'a Cache, &[u8]) -> Result<Option<V>, ::larder_cache::Error>,
) -> larder_status {
    boundary(|| {
        if out.is_null() || out_len.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: caller contract.
        let v = unsafe { lookup(cache, key, key_len, get)? };
        let v: &[T] = v.as_ref();
        // SAFETY: both checked non-null above, writable by contract.
        unsafe {
            write_out(out, v.as_ptr(), "out")?;
            write_out(out_len, v.len(), "out_len")
        }
    })
}

/// Shared body of the getters for fixed-size values.
///
/// # Safety
/// As for [`lookup`]; `out` must be writable.
#[inline]
unsafe fn scalar_get<'a, T>(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut T,
    get: impl FnOnce(&'a Cache, &[u8]) -> Result<Option<T>, ::larder_cache::Error>,
) -> larder_status {
    boundary(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: caller contract.
        let v = unsafe { lookup(cache, key, key_len, get)? };
        // SAFETY: checked non-null above, writable by contract.
        unsafe { write_out(out, v, "out") }
    })
}

/// A BYTES (or STR) value: `*out` points at `*out_len` bytes in the mapping.
///
/// # Safety
/// `cache` must be a live handle; `key` must point at `key_len` bytes (null if 0); `out` and
/// `out_len` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_bytes(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut *const u8,
    out_len: *mut usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { slice_get(cache, key, key_len, out, out_len, |c, k| c.get_bytes(k)) }
}

/// A STR value (validated UTF-8, not NUL-terminated): `*out` points at `*out_len` bytes.
///
/// # Safety
/// As for [`larder_cache_get_bytes`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_str(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut *const u8,
    out_len: *mut usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { slice_get(cache, key, key_len, out, out_len, |c, k| c.get_str(k)) }
}

/// A F32_LIST value: `*out` points at `*out_len` aligned floats in the mapping.
///
/// # Safety
/// As for [`larder_cache_get_bytes`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_f32_list(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut *const f32,
    out_len: *mut usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { slice_get(cache, key, key_len, out, out_len, |c, k| c.get_f32_list(k)) }
}

/// A F64_LIST value: `*out` points at `*out_len` aligned doubles in the mapping.
///
/// # Safety
/// As for [`larder_cache_get_bytes`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_f64_list(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut *const f64,
    out_len: *mut usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { slice_get(cache, key, key_len, out, out_len, |c, k| c.get_f64_list(k)) }
}

/// An I64 value.
///
/// # Safety
/// `cache` must be a live handle; `key` must point at `key_len` bytes (null if 0); `out` must
/// be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_i64(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut i64,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { scalar_get(cache, key, key_len, out, |c, k| c.get_i64(k)) }
}

/// A F64 value.
///
/// # Safety
/// As for [`larder_cache_get_i64`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_f64(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut f64,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { scalar_get(cache, key, key_len, out, |c, k| c.get_f64(k)) }
}

/// A BOOL value.
///
/// # Safety
/// As for [`larder_cache_get_i64`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_bool(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut bool,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { scalar_get(cache, key, key_len, out, |c, k| c.get_bool(k)) }
}

/// A STR_LIST value; read its strings with [`larder_str_list_get`].
///
/// # Safety
/// `cache` must be a live handle; `key` must point at `key_len` bytes (null if 0); `out` must
/// be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_get_str_list(
    cache: *const larder_cache,
    key: *const u8,
    key_len: usize,
    out: *mut larder_str_list,
) -> larder_status {
    boundary(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: caller contract.
        let list = unsafe { lookup(cache, key, key_len, |c, k| c.get_str_list(k))? };
        // SAFETY: checked non-null above.
        unsafe { write_out(out, str_list(list), "out") }
    })
}

/// String `index` of a list: `*out` points at `*out_len` bytes of validated UTF-8.
/// `LARDER_OUT_OF_RANGE` past the end, `LARDER_CORRUPT` if the file's offsets are bad.
///
/// # Safety
/// `list` must have been filled by this library from a cache that is still open; `out` and
/// `out_len` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_str_list_get(
    list: *const larder_str_list,
    index: usize,
    out: *mut *const u8,
    out_len: *mut usize,
) -> larder_status {
    boundary(|| {
        if list.is_null() {
            return Err(Failure::null("list"));
        }
        if out.is_null() || out_len.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: non-null; filled by this library by contract.
        let list = unsafe { *list };
        if index >= list.count {
            return Err(Failure::new(
                LARDER_OUT_OF_RANGE,
                format!("index {index} past the end of a list of {}", list.count),
            ));
        }
        if list.ends.is_null() || (list.text.is_null() && list.text_len > 0) {
            return Err(Failure::null("list contents"));
        }
        // SAFETY: the list was produced by `str_list` from slices of a live mapping, so
        // `ends` has `count` elements and `text` has `text_len` bytes.
        let (ends, text) = unsafe {
            (
                std::slice::from_raw_parts(list.ends, list.count),
                bytes_arg(list.text, list.text_len, "text")?,
            )
        };
        let s = StrList::from_raw_parts(ends, text)
            .get(index)?
            .ok_or(Failure::new(LARDER_OUT_OF_RANGE, "index past the end"))?;
        // SAFETY: checked non-null above.
        unsafe {
            write_out(out, s.as_ptr(), "out")?;
            write_out(out_len, s.len(), "out_len")
        }
    })
}

/// Fills `*out` with facts about the cache.
///
/// # Safety
/// `cache` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_info(
    cache: *const larder_cache,
    out: *mut larder_info,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let cache = unsafe { cache_arg(cache)? };
        let i = cache.info();
        let name = cache.name();
        let info = larder_info {
            name: name.as_ptr(),
            name_len: name.len(),
            format_version: i.format_version,
            dedup: u32::from(i.dedup),
            created_unix_ms: i.created_unix_ms,
            key_count: i.key_count,
            value_count: i.value_count,
            file_bytes: i.file_bytes,
            data_bytes: i.data_bytes,
            index_bytes: i.index_bytes,
            raw_key_bytes: i.raw_key_bytes,
            raw_value_bytes: i.raw_value_bytes,
            dedup_saved_bytes: i.dedup_saved_bytes,
        };
        // SAFETY: caller contract.
        unsafe { write_out(out, info, "out") }
    })
}

/// Fills `*out` with the cache's mapping and section bounds (see [`larder_layout`]).
///
/// # Safety
/// `cache` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_layout(
    cache: *const larder_cache,
    out: *mut larder_layout,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let cache = unsafe { cache_arg(cache)? };
        let l = cache.layout();
        let layout = larder_layout {
            base: l.bytes.as_ptr(),
            len: l.bytes.len(),
            format_version: l.format_version,
            offset_width: u32::from(l.offset_width),
            data_end: l.data_end,
            index_start: l.index_start,
            index_end: l.index_end,
            home_bucket_count: l.home_bucket_count,
            probe_max: l.probe_max,
            key_count: l.key_count,
        };
        // SAFETY: caller contract.
        unsafe { write_out(out, layout, "out") }
    })
}

/// Checks every checksum and record. `LARDER_OK` or `LARDER_CORRUPT` with a message.
///
/// # Safety
/// `cache` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_verify(cache: *const larder_cache) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let cache = unsafe { cache_arg(cache)? };
        cache.verify()?;
        Ok(())
    })
}

/// Rejects paths the builder cannot use, for the builder module.
pub(crate) fn invalid(msg: &str) -> Failure {
    Failure::new(LARDER_INVALID_ARGUMENT, msg)
}
