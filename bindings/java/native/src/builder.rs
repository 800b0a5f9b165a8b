//! Builder entry points: create, configure, insert, finish, abort.
//!
//! Inserts use the builder's own scratch buffer (a `LarderCacheBuilder` is used from one thread
//! at a time): the key at offset 0, then, for bytes and strings, the value right after it. On
//! success no JNI function is called, except by the list inserts, which copy the Java array.

use jni::objects::{JByteArray, JDoubleArray, JFloatArray, JIntArray, JString};
use jni::sys::{self, jboolean, jdouble, jint, jlong, jobject};
use jni::JNIEnv;
use larder_cache::{BuildStats, CacheBuilder, DuplicatePolicy, Value};

use crate::{boundary, into_handle, take_handle, Failure};

type Env = *mut sys::JNIEnv;

/// The builder behind a handle.
///
/// # Safety
/// `handle` must be a live builder handle that no other thread is using.
unsafe fn builder_mut<'a>(handle: jlong) -> &'a mut CacheBuilder {
    // SAFETY: guaranteed by the caller; the Java builder serialises its calls.
    unsafe { &mut *(handle as usize as *mut CacheBuilder) }
}

/// The key and the value bytes in a builder's scratch buffer.
///
/// # Safety
/// `scratch` must point at `key_len + value_len` readable bytes.
unsafe fn key_value<'a>(scratch: jlong, key_len: jint, value_len: jint) -> (&'a [u8], &'a [u8]) {
    let key_len = usize::try_from(key_len).unwrap_or(0);
    let value_len = usize::try_from(value_len).unwrap_or(0);
    // SAFETY: guaranteed by the caller.
    unsafe {
        let all = std::slice::from_raw_parts(scratch as usize as *const u8, key_len + value_len);
        all.split_at(key_len)
    }
}

fn env_of<'local>(raw: Env) -> Result<JNIEnv<'local>, Failure> {
    // SAFETY: `raw` is the JNIEnv the JVM passed to the running native method.
    Ok(unsafe { JNIEnv::from_raw(raw) }?)
}

/// `static native long builderNew(String path)`: starts a build; returns its handle.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderNew(
    raw: Env,
    _class: sys::jclass,
    path: sys::jstring,
) -> jlong {
    boundary(raw, 0, || {
        let mut env = env_of(raw)?;
        // SAFETY: `path` is a live local reference to a java.lang.String.
        let path = unsafe { JString::from_raw(path) };
        let path: String = env.get_string(&path)?.into();
        Ok(into_handle(CacheBuilder::new(path)?))
    })
}

/// `static native void builderName(long handle, String name)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderName(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    name: sys::jstring,
) {
    boundary(raw, (), || {
        let mut env = env_of(raw)?;
        // SAFETY: `name` is a live local reference to a java.lang.String.
        let name = unsafe { JString::from_raw(name) };
        let name: String = env.get_string(&name)?.into();
        if name.len() > larder_cache::NAME_LEN_MAX {
            return Err(larder_cache::Error::NameTooLong { len: name.len() }.into());
        }
        // SAFETY: the Java side passes only live builder handles, from one thread at a time.
        unsafe { builder_mut(handle) }.set_name(name);
        Ok(())
    })
}

/// `static native void builderDedup(long handle)`: stores repeated values once.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderDedup(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    // SAFETY: as in `builderName`.
    boundary(raw, (), || {
        unsafe { builder_mut(handle) }.set_dedup(true);
        Ok(())
    })
}

/// `static native void builderRejectDuplicates(long handle)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderRejectDuplicates(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    // SAFETY: as in `builderName`.
    boundary(raw, (), || {
        unsafe { builder_mut(handle) }.set_duplicates(DuplicatePolicy::Error);
        Ok(())
    })
}

/// `static native long builderCreatedUnixMs(long handle, long ms)`: overrides the creation
/// time in the header (for reproducible files). Consumes the handle and returns its
/// replacement.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderCreatedUnixMs(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    ms: jlong,
) -> jlong {
    boundary(raw, handle, || {
        if ms < 0 {
            return Err(Failure::Argument(format!("creation time {ms} is negative")));
        }
        // SAFETY: as in `builderFinish`; the Java side replaces its handle with the result.
        let builder = unsafe { take_handle::<CacheBuilder>(handle) };
        Ok(into_handle((*builder).created_unix_ms(ms as u64)))
    })
}

fn insert(handle: jlong, key: &[u8], value: Value<'_>) -> Result<(), Failure> {
    // SAFETY: the Java side passes only live builder handles, from one thread at a time.
    unsafe { builder_mut(handle) }.insert(key, value)?;
    Ok(())
}

/// `static native void putBytes(long handle, long scratch, int keyLen, int valueLen)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putBytes(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    value_len: jint,
) {
    boundary(raw, (), || {
        // SAFETY: the Java side wrote the key and the value into its scratch buffer.
        let (key, value) = unsafe { key_value(scratch, key_len, value_len) };
        insert(handle, key, Value::Bytes(value))
    })
}

/// `static native void putString(long handle, long scratch, int keyLen, int valueLen)`: the
/// value's bytes must be UTF-8 (Java's encoder always produces it).
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putString(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    value_len: jint,
) {
    boundary(raw, (), || {
        // SAFETY: as in `putBytes`.
        let (key, value) = unsafe { key_value(scratch, key_len, value_len) };
        let value = std::str::from_utf8(value)
            .map_err(|_| Failure::Argument("string value is not UTF-8".into()))?;
        insert(handle, key, Value::Str(value))
    })
}

/// `static native void putLong(long handle, long scratch, int keyLen, long value)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putLong(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    value: jlong,
) {
    boundary(raw, (), || {
        // SAFETY: the Java side wrote the key into its scratch buffer.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::I64(value))
    })
}

/// `static native void putDouble(long handle, long scratch, int keyLen, double value)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putDouble(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    value: jdouble,
) {
    boundary(raw, (), || {
        // SAFETY: as in `putLong`.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::F64(value))
    })
}

/// `static native void putBoolean(long handle, long scratch, int keyLen, boolean value)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putBoolean(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    value: jboolean,
) {
    boundary(raw, (), || {
        // SAFETY: as in `putLong`.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::Bool(value != 0))
    })
}

/// `static native void putFloatArray(long handle, long scratch, int keyLen, float[] values)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putFloatArray(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    values: jobject,
) {
    boundary(raw, (), || {
        let env = env_of(raw)?;
        // SAFETY: `values` is a live local reference to a float[].
        let values = unsafe { JFloatArray::from_raw(values) };
        let mut copy = vec![0f32; usize::try_from(env.get_array_length(&values)?).unwrap_or(0)];
        env.get_float_array_region(&values, 0, &mut copy)?;
        // SAFETY: as in `putLong`.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::F32List(&copy))
    })
}

/// `static native void putDoubleArray(long handle, long scratch, int keyLen, double[] values)`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putDoubleArray(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    values: jobject,
) {
    boundary(raw, (), || {
        let env = env_of(raw)?;
        // SAFETY: `values` is a live local reference to a double[].
        let values = unsafe { JDoubleArray::from_raw(values) };
        let mut copy = vec![0f64; usize::try_from(env.get_array_length(&values)?).unwrap_or(0)];
        env.get_double_array_region(&values, 0, &mut copy)?;
        // SAFETY: as in `putLong`.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::F64List(&copy))
    })
}

/// `static native void putStringList(long handle, long scratch, int keyLen, byte[] text,
/// int[] ends)`: string `i` is `text[ends[i-1]..ends[i]]` (UTF-8).
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_putStringList(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    text: jobject,
    ends: jobject,
) {
    boundary(raw, (), || {
        let env = env_of(raw)?;
        // SAFETY: `text` and `ends` are live local references to a byte[] and an int[].
        let (text, ends) = unsafe { (JByteArray::from_raw(text), JIntArray::from_raw(ends)) };
        let text = env.convert_byte_array(&text)?;
        let mut end_offsets = vec![0; usize::try_from(env.get_array_length(&ends)?).unwrap_or(0)];
        env.get_int_array_region(&ends, 0, &mut end_offsets)?;
        let mut items = Vec::with_capacity(end_offsets.len());
        let mut start = 0usize;
        for end in end_offsets {
            let end = usize::try_from(end).unwrap_or(usize::MAX);
            let item = text
                .get(start..end)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| Failure::Argument("malformed string list".into()))?;
            items.push(item);
            start = end;
        }
        // SAFETY: as in `putLong`.
        let (key, _) = unsafe { key_value(scratch, key_len, 0) };
        insert(handle, key, Value::StrList(&items))
    })
}

fn stats_numbers(s: &BuildStats) -> [i64; 11] {
    [
        s.key_count as i64,
        s.duplicate_keys as i64,
        s.value_count as i64,
        s.deduped_values as i64,
        s.dedup_saved_bytes as i64,
        s.raw_key_bytes as i64,
        s.raw_value_bytes as i64,
        s.data_bytes as i64,
        s.index_bytes as i64,
        s.file_bytes as i64,
        s.build_ms as i64,
    ]
}

/// `static native long[] builderFinish(long handle)`: writes the index and header, syncs and
/// renames the file into place; returns the numbers `BuildStats.fromNative` reads. Always frees
/// the handle (on failure the temporary file is removed).
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderFinish(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jobject {
    boundary(raw, std::ptr::null_mut(), || {
        // SAFETY: the Java side passes each live builder handle to finish or abort once.
        let builder = unsafe { take_handle::<CacheBuilder>(handle) };
        let stats = builder.finish()?;
        let env = env_of(raw)?;
        let numbers = stats_numbers(&stats);
        let array = env.new_long_array(numbers.len() as jint)?;
        env.set_long_array_region(&array, 0, &numbers)?;
        Ok(array.into_raw())
    })
}

/// `static native void builderAbort(long handle)`: removes the temporary file and frees the
/// handle.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_builderAbort(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    boundary(raw, (), || {
        // SAFETY: as in `builderFinish`.
        unsafe { take_handle::<CacheBuilder>(handle) }.abort();
        Ok(())
    })
}
