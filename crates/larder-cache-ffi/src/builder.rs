//! Building: a streaming builder handle, typed inserts, finish or abort.

use std::ffi::c_char;

use ::larder_cache::{BuildStats, CacheBuilder, DuplicatePolicy, Value};

use crate::reader::{invalid, path_arg};
use crate::status::{boundary, bytes_arg, larder_status, write_out, Failure};

/// A build in progress. Opaque; use from one thread at a time.
pub struct larder_cache_builder {
    builder: CacheBuilder,
}

/// What [`larder_cache_builder_finish`] reports.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct larder_build_stats {
    /// Distinct keys in the file.
    pub key_count: u64,
    /// Inserts that repeated an earlier key (the last one won).
    pub duplicate_keys: u64,
    /// Values stored.
    pub value_count: u64,
    /// Inserts whose value was replaced by a reference to an identical earlier value.
    pub deduped_values: u64,
    /// Bytes dedup saved.
    pub dedup_saved_bytes: u64,
    /// Sum of key lengths inserted.
    pub raw_key_bytes: u64,
    /// Sum of value payload lengths inserted.
    pub raw_value_bytes: u64,
    /// Size of the finished file.
    pub file_bytes: u64,
    /// Wall time of the build in milliseconds.
    pub build_ms: u64,
}

impl From<BuildStats> for larder_build_stats {
    fn from(s: BuildStats) -> larder_build_stats {
        larder_build_stats {
            key_count: s.key_count,
            duplicate_keys: s.duplicate_keys,
            value_count: s.value_count,
            deduped_values: s.deduped_values,
            dedup_saved_bytes: s.dedup_saved_bytes,
            raw_key_bytes: s.raw_key_bytes,
            raw_value_bytes: s.raw_value_bytes,
            file_bytes: s.file_bytes,
            build_ms: s.build_ms,
        }
    }
}

/// Borrows the builder behind a handle.
///
/// # Safety
/// A non-null `b` must come from [`larder_cache_builder_new`] and not be finished or aborted.
unsafe fn builder_arg<'a>(b: *mut larder_cache_builder) -> Result<&'a mut CacheBuilder, Failure> {
    if b.is_null() {
        return Err(Failure::null("builder"));
    }
    // SAFETY: live handle by contract, used by one thread at a time.
    Ok(unsafe { &mut (*b).builder })
}

/// Starts a build that ends up at `path` (NUL-terminated). The file appears only when
/// [`larder_cache_builder_finish`] succeeds; until then it is a temporary file beside it.
///
/// # Safety
/// `path` must be a valid NUL-terminated string; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_new(
    path: *const c_char,
    out: *mut *mut larder_cache_builder,
) -> larder_status {
    boundary(|| {
        // SAFETY: null or NUL-terminated by the caller's contract.
        let path = unsafe { path_arg(path)? };
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let builder = CacheBuilder::new(path)?;
        let handle = Box::into_raw(Box::new(larder_cache_builder { builder }));
        // SAFETY: checked non-null above.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Sets the name stored in the header (UTF-8, at most 256 bytes).
///
/// # Safety
/// `builder` must be a live handle; `name` must point at `name_len` bytes (null if 0).
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_set_name(
    builder: *mut larder_cache_builder,
    name: *const u8,
    name_len: usize,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let b = unsafe { builder_arg(builder)? };
        // SAFETY: caller contract.
        let name = unsafe { bytes_arg(name, name_len, "name")? };
        let name = std::str::from_utf8(name).map_err(|_| invalid("name is not UTF-8"))?;
        b.set_name(name);
        Ok(())
    })
}

/// Stores repeated values once (call before the first insert).
///
/// # Safety
/// `builder` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_enable_dedup(
    builder: *mut larder_cache_builder,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        unsafe { builder_arg(builder)? }.set_dedup(true);
        Ok(())
    })
}

/// Makes finish fail with `LARDER_DUPLICATE_KEY` if a key was inserted twice (by default the
/// last insert wins).
///
/// # Safety
/// `builder` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_reject_duplicates(
    builder: *mut larder_cache_builder,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        unsafe { builder_arg(builder)? }.set_duplicates(DuplicatePolicy::Error);
        Ok(())
    })
}

/// Inserts a key with a value built by `value` from borrowed arguments.
///
/// # Safety
/// `builder` must be a live handle; `key` must point at `key_len` bytes (null if 0).
unsafe fn insert(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: impl FnOnce() -> Result<Value<'static>, Failure>,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let b = unsafe { builder_arg(builder)? };
        // SAFETY: caller contract.
        let key = unsafe { bytes_arg(key, key_len, "key")? };
        b.insert(key, value()?)?;
        Ok(())
    })
}

/// Borrows `count` elements at `ptr` (null allowed when empty).
///
/// # Safety
/// A non-null `ptr` must point at `count` initialised, aligned elements that outlive the call.
unsafe fn elems_arg<'a, T>(ptr: *const T, count: usize, what: &str) -> Result<&'a [T], Failure> {
    if ptr.is_null() {
        return if count == 0 {
            Ok(&[])
        } else {
            Err(Failure::null(what))
        };
    }
    if count
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(invalid("list is too long"));
    }
    if (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return Err(invalid("list pointer is misaligned"));
    }
    // SAFETY: non-null, aligned (checked), `count` elements by contract; size fits isize.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// Inserts a BYTES value.
///
/// # Safety
/// `builder` must be a live handle; `key`/`value` must point at `key_len`/`value_len` bytes
/// (null if 0).
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_bytes(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> larder_status {
    // SAFETY: caller contract; the borrowed value is used only during the call.
    unsafe {
        insert(builder, key, key_len, || {
            Ok(Value::Bytes(bytes_arg(value, value_len, "value")?))
        })
    }
}

/// Inserts a STR value; `value` must be UTF-8 (`LARDER_INVALID_ARGUMENT` otherwise).
///
/// # Safety
/// As for [`larder_cache_builder_insert_bytes`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_str(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> larder_status {
    // SAFETY: caller contract; the borrowed value is used only during the call.
    unsafe {
        insert(builder, key, key_len, || {
            let bytes = bytes_arg(value, value_len, "value")?;
            let s = std::str::from_utf8(bytes).map_err(|_| invalid("value is not UTF-8"))?;
            Ok(Value::Str(s))
        })
    }
}

/// Inserts an I64 value.
///
/// # Safety
/// `builder` must be a live handle; `key` must point at `key_len` bytes (null if 0).
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_i64(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: i64,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { insert(builder, key, key_len, || Ok(Value::I64(value))) }
}

/// Inserts a F64 value.
///
/// # Safety
/// As for [`larder_cache_builder_insert_i64`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_f64(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: f64,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { insert(builder, key, key_len, || Ok(Value::F64(value))) }
}

/// Inserts a BOOL value.
///
/// # Safety
/// As for [`larder_cache_builder_insert_i64`].
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_bool(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    value: bool,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe { insert(builder, key, key_len, || Ok(Value::Bool(value))) }
}

/// Inserts a F32_LIST value of `count` floats.
///
/// # Safety
/// `builder` must be a live handle; `key` must point at `key_len` bytes (null if 0); `values`
/// at `count` floats (null if 0).
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_f32_list(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    values: *const f32,
    count: usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe {
        insert(builder, key, key_len, || {
            Ok(Value::F32List(elems_arg(values, count, "values")?))
        })
    }
}

/// Inserts a F64_LIST value of `count` doubles.
///
/// # Safety
/// As for [`larder_cache_builder_insert_f32_list`], with doubles.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_f64_list(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    values: *const f64,
    count: usize,
) -> larder_status {
    // SAFETY: caller contract.
    unsafe {
        insert(builder, key, key_len, || {
            Ok(Value::F64List(elems_arg(values, count, "values")?))
        })
    }
}

/// Inserts a STR_LIST value: string `i` is `items[i]` of `lens[i]` bytes (UTF-8).
///
/// # Safety
/// `builder` must be a live handle; `key` must point at `key_len` bytes (null if 0); `items`
/// and `lens` at `count` elements each (null if 0), each `items[i]` at `lens[i]` bytes.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_insert_str_list(
    builder: *mut larder_cache_builder,
    key: *const u8,
    key_len: usize,
    items: *const *const u8,
    lens: *const usize,
    count: usize,
) -> larder_status {
    boundary(|| {
        // SAFETY: caller contract.
        let b = unsafe { builder_arg(builder)? };
        // SAFETY: caller contract.
        let key = unsafe { bytes_arg(key, key_len, "key")? };
        // SAFETY: caller contract.
        let (items, lens) = unsafe {
            (
                elems_arg(items, count, "items")?,
                elems_arg(lens, count, "lens")?,
            )
        };
        let mut strs = Vec::with_capacity(count);
        for (&p, &n) in items.iter().zip(lens) {
            // SAFETY: caller contract: items[i] points at lens[i] bytes.
            let bytes = unsafe { bytes_arg(p, n, "item")? };
            strs.push(std::str::from_utf8(bytes).map_err(|_| invalid("item is not UTF-8"))?);
        }
        b.insert(key, Value::StrList(&strs))?;
        Ok(())
    })
}

/// Finishes the build: writes the index and header, syncs, and renames the file into place.
/// Always consumes `builder` (also on failure, when the temporary file is removed). `out` may
/// be null.
///
/// # Safety
/// `builder` must be a live handle, not used afterwards; a non-null `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_finish(
    builder: *mut larder_cache_builder,
    out: *mut larder_build_stats,
) -> larder_status {
    boundary(|| {
        if builder.is_null() {
            return Err(Failure::null("builder"));
        }
        // SAFETY: created by Box::into_raw in larder_cache_builder_new; consumed once.
        let b = unsafe { Box::from_raw(builder) };
        let stats = b.builder.finish()?;
        if !out.is_null() {
            // SAFETY: non-null and writable by contract.
            unsafe { write_out(out, stats.into(), "out")? };
        }
        Ok(())
    })
}

/// Abandons a build and removes its temporary file. Null is a no-op.
///
/// # Safety
/// A non-null `builder` must be a live handle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn larder_cache_builder_abort(builder: *mut larder_cache_builder) {
    if builder.is_null() {
        return;
    }
    let _ = boundary(|| {
        // SAFETY: created by Box::into_raw in larder_cache_builder_new; consumed once.
        let b = unsafe { Box::from_raw(builder) };
        b.builder.abort();
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::*;
    use crate::status::larder_status::*;
    use std::ffi::CString;

    #[test]
    fn round_trip_through_the_c_abi() {
        let dir = std::env::temp_dir().join(format!("larder-ffi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = CString::new(dir.join("rt.lcache").to_str().expect("utf8")).expect("cstr");
        let mut b = std::ptr::null_mut();
        // SAFETY: valid C string and out pointer; handles are used as documented.
        unsafe {
            assert_eq!(larder_cache_builder_new(path.as_ptr(), &mut b), LARDER_OK);
            assert_eq!(
                larder_cache_builder_insert_i64(b, b"n".as_ptr(), 1, 7),
                LARDER_OK
            );
            let floats = [1.5f64, 2.5];
            assert_eq!(
                larder_cache_builder_insert_f64_list(b, b"v".as_ptr(), 1, floats.as_ptr(), 2),
                LARDER_OK
            );
            let items = [b"x".as_ptr(), b"yz".as_ptr()];
            let lens = [1usize, 2];
            assert_eq!(
                larder_cache_builder_insert_str_list(
                    b,
                    b"l".as_ptr(),
                    1,
                    items.as_ptr(),
                    lens.as_ptr(),
                    2
                ),
                LARDER_OK
            );
            let mut stats = larder_build_stats::default();
            assert_eq!(larder_cache_builder_finish(b, &mut stats), LARDER_OK);
            assert_eq!(stats.key_count, 3);

            let mut c = std::ptr::null_mut();
            assert_eq!(larder_cache_open(path.as_ptr(), &mut c), LARDER_OK);
            let mut n = 0i64;
            assert_eq!(larder_cache_get_i64(c, b"n".as_ptr(), 1, &mut n), LARDER_OK);
            assert_eq!(n, 7);
            let mut v = std::mem::MaybeUninit::<larder_value>::uninit();
            assert_eq!(
                larder_cache_get(c, b"v".as_ptr(), 1, v.as_mut_ptr()),
                LARDER_OK
            );
            let v = v.assume_init();
            assert_eq!(v.value_type, LARDER_TYPE_F64_LIST);
            assert_eq!(
                std::slice::from_raw_parts(v.data.cast::<f64>(), v.len),
                &floats
            );
            let mut list = std::mem::MaybeUninit::<larder_str_list>::uninit();
            assert_eq!(
                larder_cache_get_str_list(c, b"l".as_ptr(), 1, list.as_mut_ptr()),
                LARDER_OK
            );
            let list = list.assume_init();
            let (mut p, mut len) = (std::ptr::null(), 0usize);
            assert_eq!(larder_str_list_get(&list, 1, &mut p, &mut len), LARDER_OK);
            assert_eq!(std::slice::from_raw_parts(p, len), b"yz");
            assert_eq!(
                larder_cache_get_i64(c, b"l".as_ptr(), 1, &mut n),
                LARDER_TYPE_MISMATCH
            );
            assert_eq!(
                larder_cache_get_i64(c, b"zz".as_ptr(), 2, &mut n),
                LARDER_NOT_FOUND
            );
            assert_eq!(
                larder_cache_get_i64(c, std::ptr::null(), 2, &mut n),
                LARDER_NULL_ARGUMENT
            );
            assert_eq!(larder_cache_verify(c), LARDER_OK);
            larder_cache_close(c);
        }
    }
}
