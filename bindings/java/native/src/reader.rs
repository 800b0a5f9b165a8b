//! Reader entry points: open, close, facts, verify and lookups.
//!
//! Lookup protocol (shared with `dev.larder.cache.Scratch`): the Java side writes the key into
//! its thread's scratch buffer at offset 0 and passes the buffer's address, the key's length
//! and the buffer's capacity. A lookup returns [`MISSING`] for an absent key; otherwise
//! fixed-size values (i64, f64, bool) are written little-endian at offset 0 and the call
//! returns 0, and byte or string values are copied to offset 0 when they fit in the capacity
//! and the call returns their length (a length over the capacity means "not copied"; the Java
//! side then asks `getLargeBytes`). On success no JNI function is called.

use std::ptr;

use jni::objects::{JByteBuffer, JObject, JObjectArray, JString};
use jni::signature::ReturnType;
use jni::sys::{self, jint, jlong, jobject, jvalue};
use jni::JNIEnv;
use larder_cache::{Cache, ValueRef};

use crate::Failure;
use crate::{boundary, classes, drop_cache_handle, handle_ref, into_cache_handle};
use crate::{java_len, java_string};

/// The return value of a lookup for an absent key.
const MISSING: jint = -1;

type Env = *mut sys::JNIEnv;

/// The cache and the key of a lookup.
///
/// # Safety
/// `handle` must be a live cache handle; `scratch` must point at `key_len` readable bytes that
/// nothing writes while the returned key is in use.
unsafe fn lookup<'a>(handle: jlong, scratch: jlong, key_len: jint) -> (&'a Cache, &'a [u8]) {
    // SAFETY: guaranteed by the caller; a negative length never comes from the Java side and
    // is read as empty.
    unsafe {
        let cache = handle_ref::<Cache>(handle);
        let len = usize::try_from(key_len).unwrap_or(0);
        let key = std::slice::from_raw_parts(scratch as usize as *const u8, len);
        (cache, key)
    }
}

/// Copies a byte value into the scratch buffer if it fits; returns its length or [`MISSING`].
///
/// # Safety
/// `scratch` must point at `capacity` writable bytes, and no key slice borrowed from it may be
/// in use.
unsafe fn copy_out(value: Option<&[u8]>, scratch: jlong, capacity: jint) -> Result<jint, Failure> {
    let Some(bytes) = value else {
        return Ok(MISSING);
    };
    let len = java_len(bytes.len())?;
    if len <= capacity {
        // SAFETY: `bytes` lies in the mapping, the scratch buffer in the Java heap's direct
        // memory, so they do not overlap; `len <= capacity`.
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), scratch as usize as *mut u8, bytes.len())
        };
    }
    Ok(len)
}

/// Writes a fixed-size value at the start of the scratch buffer; returns 0, or [`MISSING`].
///
/// # Safety
/// `scratch` must point at 8 writable bytes, and no key slice borrowed from it may be in use.
unsafe fn write_fixed<const N: usize>(value: Option<[u8; N]>, scratch: jlong) -> jint {
    match value {
        Some(bytes) => {
            // SAFETY: guaranteed by the caller (the scratch buffer is never under 8 bytes).
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), scratch as usize as *mut u8, N) };
            0
        }
        None => MISSING,
    }
}

pub(crate) fn env_of<'local>(raw: Env) -> Result<JNIEnv<'local>, Failure> {
    // SAFETY: `raw` is the JNIEnv the JVM passed to the running native method.
    Ok(unsafe { JNIEnv::from_raw(raw) }?)
}

fn into_raw_or_null(object: Option<JObject>) -> jobject {
    object.map_or(ptr::null_mut(), JObject::into_raw)
}

/// `static native long open(String path)`: opens and maps a cache file; returns its handle.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_open(
    raw: Env,
    _class: sys::jclass,
    path: sys::jstring,
) -> jlong {
    boundary(raw, 0, || {
        let mut env = env_of(raw)?;
        // SAFETY: `path` is a live local reference to a java.lang.String.
        let path = unsafe { JString::from_raw(path) };
        let path: String = env.get_string(&path)?.into();
        Ok(into_cache_handle(std::sync::Arc::new(Cache::open(path)?)))
    })
}

/// `static native void close(long handle)`: frees the handle; the file is unmapped when its last
/// handle (or the swapper that holds it) lets go.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_close(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    boundary(raw, (), || {
        // SAFETY: the Java side passes each live handle to close exactly once; every cache
        // handle comes from `into_cache_handle` (here or in `swap.rs`).
        unsafe { drop_cache_handle(handle) };
        Ok(())
    })
}

/// `static native long size(long handle)`: number of keys.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_size(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jlong {
    // SAFETY: the Java side passes only live handles.
    boundary(raw, 0, || {
        Ok(unsafe { handle_ref::<Cache>(handle) }.len() as jlong)
    })
}

/// `static native String name(long handle)`: the name stored in the header.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_name(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let mut env = env_of(raw)?;
        // SAFETY: the Java side passes only live handles.
        let cache = unsafe { handle_ref::<Cache>(handle) };
        Ok(java_string(&mut env, cache.name())?.into_raw())
    })
}

/// `static native long[] info(long handle)`: the header's numbers, in the order that
/// `CacheInfo.fromNative` reads them.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_info(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let env = env_of(raw)?;
        // SAFETY: the Java side passes only live handles.
        let i = unsafe { handle_ref::<Cache>(handle) }.info();
        let numbers = [
            i64::from(i.format_version),
            i.created_unix_ms as i64,
            i.key_count as i64,
            i.value_count as i64,
            i64::from(i.dedup),
            i.file_bytes as i64,
            i.data_bytes as i64,
            i.index_bytes as i64,
            i.bucket_count as i64,
            i64::from(i.offset_width_bytes),
            i.displaced_keys as i64,
            i.probe_max as i64,
            i.raw_key_bytes as i64,
            i.raw_value_bytes as i64,
            i.dedup_saved_bytes as i64,
        ];
        let array = env.new_long_array(java_len(numbers.len())?)?;
        env.set_long_array_region(&array, 0, &numbers)?;
        Ok(array.into_raw())
    })
}

/// `static native void verify(long handle)`: checks every checksum and record.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_verify(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    boundary(raw, (), || {
        // SAFETY: the Java side passes only live handles.
        unsafe { handle_ref::<Cache>(handle) }.verify()?;
        Ok(())
    })
}

/// `static native long scratchAddress(ByteBuffer buffer)`: the address of a direct buffer.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_scratchAddress(
    raw: Env,
    _class: sys::jclass,
    buffer: jobject,
) -> jlong {
    boundary(raw, 0, || {
        let env = env_of(raw)?;
        // SAFETY: `buffer` is a live local reference to a direct ByteBuffer.
        let buffer = unsafe { JByteBuffer::from_raw(buffer) };
        Ok(env.get_direct_buffer_address(&buffer)? as usize as jlong)
    })
}

/// `static native int contains(long handle, long scratch, int keyLen)`: 1 or 0.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_contains(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jint {
    boundary(raw, 0, || {
        // SAFETY: see the module documentation; the Java side passes a live handle and its
        // scratch buffer holding the key.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        Ok(jint::from(cache.contains(key)?))
    })
}

/// `static native int valueType(long handle, long scratch, int keyLen)`: the type tag, or -1.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_valueType(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        Ok(cache
            .value_type(key)?
            .map_or(MISSING, |t| jint::from(t as u8)))
    })
}

/// `static native int getString(long handle, long scratch, int keyLen, int capacity)`: a
/// string's UTF-8 length (copied to the scratch buffer if it fits), or -1.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getString(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    capacity: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `contains`; the key is not used after the lookup, so the copy may
        // overwrite it.
        unsafe {
            let (cache, key) = lookup(handle, scratch, key_len);
            let value = cache.get_str(key)?;
            copy_out(value.map(str::as_bytes), scratch, capacity)
        }
    })
}

/// `static native int getBytes(long handle, long scratch, int keyLen, int capacity)`: as
/// `getString`, for bytes values (and string values, as their UTF-8 bytes).
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getBytes(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    capacity: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `getString`.
        unsafe {
            let (cache, key) = lookup(handle, scratch, key_len);
            let value = cache.get_bytes(key)?;
            copy_out(value, scratch, capacity)
        }
    })
}

/// `static native byte[] getLargeBytes(long handle, long scratch, int keyLen, int tag)`: a
/// value too long for the scratch buffer, as a new array: `tag` 2 reads a string, 1 bytes.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getLargeBytes(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
    tag: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let value = if tag == jint::from(larder_cache::ValueType::Str as u8) {
            cache.get_str(key)?.map(str::as_bytes)
        } else {
            cache.get_bytes(key)?
        };
        let array = match value {
            Some(bytes) => {
                java_len(bytes.len())?;
                Some(JObject::from(env.byte_array_from_slice(bytes)?))
            }
            None => None,
        };
        Ok(into_raw_or_null(array))
    })
}

/// `static native int getLong(long handle, long scratch, int keyLen)`: 0 with the value in the
/// scratch buffer, or -1.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getLong(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `getString`.
        unsafe {
            let (cache, key) = lookup(handle, scratch, key_len);
            let value = cache.get_i64(key)?;
            Ok(write_fixed(value.map(i64::to_le_bytes), scratch))
        }
    })
}

/// `static native int getDouble(long handle, long scratch, int keyLen)`: as `getLong`.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getDouble(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `getString`.
        unsafe {
            let (cache, key) = lookup(handle, scratch, key_len);
            let value = cache.get_f64(key)?;
            Ok(write_fixed(value.map(f64::to_le_bytes), scratch))
        }
    })
}

/// `static native int getBoolean(long handle, long scratch, int keyLen)`: as `getLong`, the
/// value as one byte (0 or 1).
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getBoolean(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jint {
    boundary(raw, MISSING, || {
        // SAFETY: as in `getString`.
        unsafe {
            let (cache, key) = lookup(handle, scratch, key_len);
            let value = cache.get_bool(key)?;
            Ok(write_fixed(value.map(|b| [u8::from(b)]), scratch))
        }
    })
}

/// `static native float[] getFloatArray(long handle, long scratch, int keyLen)`: a copy, or
/// null.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getFloatArray(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let array = match cache.get_f32_list(key)? {
            Some(values) => {
                let array = env.new_float_array(java_len(values.len())?)?;
                env.set_float_array_region(&array, 0, values)?;
                Some(JObject::from(array))
            }
            None => None,
        };
        Ok(into_raw_or_null(array))
    })
}

/// `static native double[] getDoubleArray(long handle, long scratch, int keyLen)`: a copy, or
/// null.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getDoubleArray(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let array = match cache.get_f64_list(key)? {
            Some(values) => {
                let array = env.new_double_array(java_len(values.len())?)?;
                env.set_double_array_region(&array, 0, values)?;
                Some(JObject::from(array))
            }
            None => None,
        };
        Ok(into_raw_or_null(array))
    })
}

/// A direct `ByteBuffer` over `len_bytes` bytes of the mapping at `data`.
fn mapped_buffer<'local>(
    env: &mut JNIEnv<'local>,
    data: *const u8,
    len_bytes: usize,
) -> Result<JObject<'local>, Failure> {
    java_len(len_bytes)?;
    // SAFETY: `data` points at `len_bytes` bytes of the read-only mapping (never null: an empty
    // slice's pointer is dangling but non-null). The Java side wraps the buffer read-only
    // before handing it out, and documents that it is valid until the cache is closed.
    let buffer = unsafe { env.new_direct_byte_buffer(data as *mut u8, len_bytes) }?;
    Ok(buffer.into())
}

/// `static native ByteBuffer getFloatBuffer(long handle, long scratch, int keyLen)`: a direct
/// buffer over a `list<f32>` in the mapping, or null.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getFloatBuffer(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let mut env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let buffer = match cache.get_f32_list(key)? {
            Some(v) => Some(mapped_buffer(
                &mut env,
                v.as_ptr().cast(),
                std::mem::size_of_val(v),
            )?),
            None => None,
        };
        Ok(into_raw_or_null(buffer))
    })
}

/// `static native ByteBuffer getDoubleBuffer(long handle, long scratch, int keyLen)`: a direct
/// buffer over a `list<f64>` in the mapping, or null.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getDoubleBuffer(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let mut env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let buffer = match cache.get_f64_list(key)? {
            Some(v) => Some(mapped_buffer(
                &mut env,
                v.as_ptr().cast(),
                std::mem::size_of_val(v),
            )?),
            None => None,
        };
        Ok(into_raw_or_null(buffer))
    })
}

/// A `String[]` holding a `list<str>`.
fn string_array<'local>(
    env: &mut JNIEnv<'local>,
    list: larder_cache::StrList<'_>,
) -> Result<JObject<'local>, Failure> {
    let c = classes().ok_or_else(|| Failure::Limit("larder JNI_OnLoad failed".into()))?;
    let array: JObjectArray =
        env.new_object_array(java_len(list.len())?, &c.string, JObject::null())?;
    for (i, item) in list.iter().enumerate() {
        let item = java_string(env, item?)?;
        env.set_object_array_element(&array, java_len(i)?, &item)?;
        // Keep the local reference table small for long lists.
        env.delete_local_ref(item)?;
    }
    Ok(array.into())
}

/// `static native String[] getStringList(long handle, long scratch, int keyLen)`: a copy, or
/// null.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_getStringList(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let mut env = env_of(raw)?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let array = match cache.get_str_list(key)? {
            Some(list) => Some(string_array(&mut env, list)?),
            None => None,
        };
        Ok(into_raw_or_null(array))
    })
}

/// Calls a static `valueOf` to box a primitive.
fn boxed<'local>(
    env: &mut JNIEnv<'local>,
    class: &jni::objects::GlobalRef,
    value_of: jni::objects::JStaticMethodID,
    arg: jvalue,
) -> Result<JObject<'local>, Failure> {
    let class: &jni::objects::JClass = class.as_obj().into();
    // SAFETY: `value_of` was looked up on `class` with a signature taking one argument of
    // `arg`'s type and returning an object.
    let value =
        unsafe { env.call_static_method_unchecked(class, value_of, ReturnType::Object, &[arg]) }?;
    Ok(value.l()?)
}

/// `static native Object get(long handle, long scratch, int keyLen)`: the value as `byte[]`,
/// `String`, `Long`, `Double`, `Boolean`, `float[]`, `double[]` or `String[]`; null if absent.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_get(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
    scratch: jlong,
    key_len: jint,
) -> jobject {
    boundary(raw, ptr::null_mut(), || {
        let mut env = env_of(raw)?;
        let c = classes().ok_or_else(|| Failure::Limit("larder JNI_OnLoad failed".into()))?;
        // SAFETY: as in `contains`.
        let (cache, key) = unsafe { lookup(handle, scratch, key_len) };
        let Some(value) = cache.get(key)? else {
            return Ok(ptr::null_mut());
        };
        let object = match value {
            ValueRef::Bytes(b) => {
                java_len(b.len())?;
                env.byte_array_from_slice(b)?.into()
            }
            ValueRef::Str(s) => java_string(&mut env, s)?,
            ValueRef::I64(v) => boxed(&mut env, &c.long, c.long_value_of, jvalue { j: v })?,
            ValueRef::F64(v) => boxed(&mut env, &c.double, c.double_value_of, jvalue { d: v })?,
            ValueRef::Bool(v) => boxed(
                &mut env,
                &c.boolean,
                c.boolean_value_of,
                jvalue { z: u8::from(v) },
            )?,
            ValueRef::F32List(v) => {
                let array = env.new_float_array(java_len(v.len())?)?;
                env.set_float_array_region(&array, 0, v)?;
                array.into()
            }
            ValueRef::F64List(v) => {
                let array = env.new_double_array(java_len(v.len())?)?;
                env.set_double_array_region(&array, 0, v)?;
                array.into()
            }
            ValueRef::StrList(list) => string_array(&mut env, list)?,
            other => {
                return Err(Failure::Limit(format!(
                    "value type {} is not supported by this binding",
                    other.value_type()
                )))
            }
        };
        Ok(object.into_raw())
    })
}

/// `static native void panicForTest(String message)`: panics inside the boundary, so that a
/// test can check that a Rust panic becomes a Java exception and the JVM carries on.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_panicForTest(
    raw: Env,
    _class: sys::jclass,
    message: sys::jstring,
) {
    boundary(raw, (), || {
        let mut env = env_of(raw)?;
        // SAFETY: `message` is a live local reference to a java.lang.String.
        let message = unsafe { JString::from_raw(message) };
        let message: String = env.get_string(&message)?.into();
        panic!("{message}");
    })
}
