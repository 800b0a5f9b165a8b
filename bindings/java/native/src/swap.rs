//! Swapper entry points: watch a path or a pointer file, refresh, hand out the current cache.
//!
//! A swapper handle is a `Box<SwappingCache>`. `swapperCurrent` returns an ordinary cache handle
//! (see `into_cache_handle`) holding a strong count of the current mapping, so the Java
//! `LarderCache` made from it reads that file until it is closed, whatever swaps follow.

use jni::objects::JString;
use jni::sys::{self, jboolean, jlong};
use larder_cache::SwappingCache;

use crate::reader::env_of;
use crate::{boundary, handle_ref, into_cache_handle, into_handle, take_handle};

type Env = *mut sys::JNIEnv;

/// Opens a swapper with `open` on the path in the Java string `path`.
fn watch(
    raw: Env,
    path: sys::jstring,
    open: fn(String) -> Result<SwappingCache, larder_cache::Error>,
) -> jlong {
    boundary(raw, 0, || {
        let mut env = env_of(raw)?;
        // SAFETY: `path` is a live local reference to a java.lang.String.
        let path = unsafe { JString::from_raw(path) };
        let path: String = env.get_string(&path)?.into();
        Ok(into_handle(open(path)?))
    })
}

/// `static native long watchPath(String path)`: a swapper following a path that new files are
/// renamed onto.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_watchPath(
    raw: Env,
    _class: sys::jclass,
    path: sys::jstring,
) -> jlong {
    watch(raw, path, SwappingCache::watch_path)
}

/// `static native long watchPointer(String pointerPath)`: a swapper following a pointer file.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_watchPointer(
    raw: Env,
    _class: sys::jclass,
    pointer_path: sys::jstring,
) -> jlong {
    watch(raw, pointer_path, SwappingCache::watch_pointer)
}

/// `static native boolean swapperRefresh(long handle)`: checks once; whether it swapped.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_swapperRefresh(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jboolean {
    boundary(raw, sys::JNI_FALSE, || {
        // SAFETY: the Java side passes only live swapper handles.
        let swapped = unsafe { handle_ref::<SwappingCache>(handle) }.refresh()?;
        Ok(jboolean::from(swapped))
    })
}

/// `static native long swapperCurrent(long handle)`: a new cache handle on the current file.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_swapperCurrent(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) -> jlong {
    boundary(raw, 0, || {
        // SAFETY: the Java side passes only live swapper handles.
        let swap = unsafe { handle_ref::<SwappingCache>(handle) };
        Ok(into_cache_handle(swap.load_full()))
    })
}

/// `static native void swapperClose(long handle)`: frees the swapper; cache handles taken from
/// it stay valid.
#[no_mangle]
pub extern "system" fn Java_dev_larder_cache_NativeLib_swapperClose(
    raw: Env,
    _class: sys::jclass,
    handle: jlong,
) {
    boundary(raw, (), || {
        // SAFETY: the Java side passes each live swapper handle to close exactly once.
        drop(unsafe { take_handle::<SwappingCache>(handle) });
        Ok(())
    })
}
