//! The JNI library behind the Java binding `dev.larder:larder-cache` (package
//! `dev.larder.cache`), calling the `larder-cache` Rust API directly.
//!
//! Every `Java_dev_larder_cache_NativeLib_*` function is a static native method of the Java class
//! `dev.larder.cache.NativeLib`. Handles are pointers passed to Java as `long`s: `Box` pointers
//! for builders and swappers, `Arc::into_raw` pointers for caches (so that a cache handle taken
//! from a swapper shares its mapping; see [`into_cache_handle`]). The
//! per-lookup entry points ([`reader`]) make no JNI call at all on success: the Java side writes
//! the key into a per-thread direct buffer (the "scratch"), passes its address, and reads
//! fixed-size results and short values back from the same buffer. Objects (arrays, strings,
//! boxed numbers, buffers) are created only by the getters that return them.
//!
//! Every entry point runs inside [`boundary`], which catches panics and turns every error into a
//! pending Java exception, using classes and constructors looked up once in `JNI_OnLoad`.
//!
//! It is not: a second implementation of the format (all reading is `larder_cache::Cache`), nor
//! the C ABI (`crates/larder-cache-ffi`), which the other bindings use.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JMethodID, JObject, JStaticMethodID, JValue};
use jni::sys::{self, jint, JNI_ERR, JNI_VERSION_1_8};
use jni::{JNIEnv, JavaVM};

mod builder;
mod reader;
mod swap;

/// Classes and method IDs looked up once, when the library is loaded.
struct Classes {
    larder_exception: GlobalRef,
    corrupt: GlobalRef,
    unsupported_version: GlobalRef,
    type_mismatch: GlobalRef,
    /// `TypeMismatchException(String message, int expectedTag, int foundTag)`.
    type_mismatch_new: JMethodID,
    duplicate_key: GlobalRef,
    illegal_argument: GlobalRef,
    string: GlobalRef,
    long: GlobalRef,
    long_value_of: JStaticMethodID,
    double: GlobalRef,
    double_value_of: JStaticMethodID,
    boolean: GlobalRef,
    boolean_value_of: JStaticMethodID,
}

static CLASSES: OnceLock<Classes> = OnceLock::new();

fn classes() -> Option<&'static Classes> {
    CLASSES.get()
}

fn global_class(env: &mut JNIEnv, name: &str) -> jni::errors::Result<GlobalRef> {
    let class = env.find_class(name)?;
    env.new_global_ref(class)
}

fn load_classes(env: &mut JNIEnv) -> jni::errors::Result<Classes> {
    let type_mismatch = global_class(env, "dev/larder/cache/TypeMismatchException")?;
    let type_mismatch_new =
        env.get_method_id(&type_mismatch, "<init>", "(Ljava/lang/String;II)V")?;
    let long = global_class(env, "java/lang/Long")?;
    let long_value_of = env.get_static_method_id(&long, "valueOf", "(J)Ljava/lang/Long;")?;
    let double = global_class(env, "java/lang/Double")?;
    let double_value_of = env.get_static_method_id(&double, "valueOf", "(D)Ljava/lang/Double;")?;
    let boolean = global_class(env, "java/lang/Boolean")?;
    let boolean_value_of =
        env.get_static_method_id(&boolean, "valueOf", "(Z)Ljava/lang/Boolean;")?;
    Ok(Classes {
        larder_exception: global_class(env, "dev/larder/cache/LarderCacheException")?,
        corrupt: global_class(env, "dev/larder/cache/CorruptCacheException")?,
        unsupported_version: global_class(env, "dev/larder/cache/UnsupportedVersionException")?,
        type_mismatch,
        type_mismatch_new,
        duplicate_key: global_class(env, "dev/larder/cache/DuplicateKeyException")?,
        illegal_argument: global_class(env, "java/lang/IllegalArgumentException")?,
        string: global_class(env, "java/lang/String")?,
        long,
        long_value_of,
        double,
        double_value_of,
        boolean,
        boolean_value_of,
    })
}

/// Caches the classes and method IDs that errors and boxed values need.
///
/// # Safety
/// Called by the JVM with its `JavaVM` pointer when `System.load` loads this library.
///
/// `FindClass` here resolves through the class loader of `NativeLib`, which called
/// `System.load`, so the binding's exception classes are found even under an application
/// class loader.
#[no_mangle]
pub unsafe extern "system" fn JNI_OnLoad(vm: *mut sys::JavaVM, _reserved: *mut c_void) -> jint {
    let loaded = catch_unwind(|| {
        // SAFETY: the JVM passes a valid JavaVM pointer to JNI_OnLoad.
        let vm = unsafe { JavaVM::from_raw(vm) }.ok()?;
        let mut env = vm.get_env().ok()?;
        let classes = load_classes(&mut env).ok()?;
        let _ = CLASSES.set(classes);
        Some(())
    });
    match loaded {
        Ok(Some(())) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}

/// Why an entry point failed; [`boundary`] turns it into a Java exception.
pub(crate) enum Failure {
    /// An error from the cache library.
    Cache(larder_cache::Error),
    /// A bad argument that the Java side did not catch (an `IllegalArgumentException`).
    Argument(String),
    /// A limit of the Java side: an array over 2^31 elements (a `LarderCacheException`).
    Limit(String),
    /// A JNI call failed; it has left an exception pending (out of memory, usually).
    Jni(jni::errors::Error),
}

impl From<larder_cache::Error> for Failure {
    fn from(e: larder_cache::Error) -> Failure {
        Failure::Cache(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Failure {
        Failure::Jni(e)
    }
}

/// Runs an entry point's body: catches panics and turns failures into Java exceptions, in which
/// case `on_error` is returned (the Java side never sees it: the exception propagates first).
///
/// `raw_env` is only turned into a `JNIEnv` wrapper when something fails.
pub(crate) fn boundary<T>(
    raw_env: *mut sys::JNIEnv,
    on_error: T,
    body: impl FnOnce() -> Result<T, Failure>,
) -> T {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => return v,
        Ok(Err(failure)) => failure,
        Err(panic) => Failure::Limit(format!(
            "bug: larder native code panicked: {}",
            panic_message(panic.as_ref())
        )),
    };
    // Throwing must not unwind into the JVM either.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `raw_env` is the JNIEnv the JVM passed to the running native method.
        if let Ok(mut env) = unsafe { JNIEnv::from_raw(raw_env) } {
            throw(&mut env, failure);
        }
    }));
    on_error
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

fn throw(env: &mut JNIEnv, failure: Failure) {
    if env.exception_check().unwrap_or(true) {
        // A JNI call failed and its exception (say, OutOfMemoryError) is already pending.
        return;
    }
    let Some(c) = classes() else {
        let _ = env.throw_new(
            "java/lang/IllegalStateException",
            "larder JNI_OnLoad failed",
        );
        return;
    };
    use larder_cache::Error as E;
    let (class, message) = match failure {
        Failure::Cache(E::TypeMismatch { expected, found }) => {
            let message = E::TypeMismatch { expected, found }.to_string();
            throw_type_mismatch(env, c, &message, expected as u8, found as u8);
            return;
        }
        Failure::Cache(e) => {
            let class = match &e {
                E::NotACacheFile
                | E::Truncated { .. }
                | E::ChecksumMismatch { .. }
                | E::Corrupt { .. } => &c.corrupt,
                E::UnsupportedVersion { .. } | E::UnsupportedFlags { .. } => &c.unsupported_version,
                E::KeyTooLong { .. } | E::ValueTooLarge { .. } | E::NameTooLong { .. } => {
                    &c.illegal_argument
                }
                E::DuplicateKey { .. } => &c.duplicate_key,
                _ => &c.larder_exception,
            };
            (class, e.to_string())
        }
        Failure::Argument(message) => (&c.illegal_argument, message),
        Failure::Limit(message) => (&c.larder_exception, message),
        Failure::Jni(e) => (&c.larder_exception, format!("JNI call failed: {e}")),
    };
    let _ = env.throw_new(class, message);
}

fn throw_type_mismatch(env: &mut JNIEnv, c: &Classes, message: &str, expected: u8, found: u8) {
    let result = (|| -> jni::errors::Result<()> {
        let message = env.new_string(message)?;
        let class: &JClass = c.type_mismatch.as_obj().into();
        // SAFETY: the constructor ID was looked up on this class with this signature.
        let exception = unsafe {
            env.new_object_unchecked(
                class,
                c.type_mismatch_new,
                &[
                    JValue::Object(&message).as_jni(),
                    JValue::Int(jint::from(expected)).as_jni(),
                    JValue::Int(jint::from(found)).as_jni(),
                ],
            )
        }?;
        env.throw(jni::objects::JThrowable::from(exception))
    })();
    if result.is_err() && !env.exception_check().unwrap_or(true) {
        let _ = env.throw_new(&c.larder_exception, message);
    }
}

/// The pointer behind a handle the Java side holds.
///
/// # Safety
/// `handle` must come from `Box::into_raw` of a `T` (or, for a `Cache`, from
/// [`into_cache_handle`]) that has not been freed.
pub(crate) unsafe fn handle_ref<'a, T>(handle: sys::jlong) -> &'a T {
    // SAFETY: guaranteed by the caller.
    unsafe { &*(handle as usize as *const T) }
}

/// Boxes `value` for the Java side.
pub(crate) fn into_handle<T>(value: T) -> sys::jlong {
    Box::into_raw(Box::new(value)) as usize as sys::jlong
}

/// Reclaims a boxed handle.
///
/// # Safety
/// `handle` must come from [`into_handle`] with the same `T` and not be used afterwards.
pub(crate) unsafe fn take_handle<T>(handle: sys::jlong) -> Box<T> {
    // SAFETY: guaranteed by the caller.
    unsafe { Box::from_raw(handle as usize as *mut T) }
}

/// Hands a shared cache to the Java side as a handle owning one strong count. The handle points
/// at the `Cache` itself, so [`handle_ref::<Cache>`] reads it with one dereference, as it would
/// a `Box<Cache>`.
pub(crate) fn into_cache_handle(cache: std::sync::Arc<larder_cache::Cache>) -> sys::jlong {
    std::sync::Arc::into_raw(cache) as usize as sys::jlong
}

/// Gives back the strong count a cache handle owns.
///
/// # Safety
/// `handle` must come from [`into_cache_handle`] and not be used afterwards.
pub(crate) unsafe fn drop_cache_handle(handle: sys::jlong) {
    // SAFETY: guaranteed by the caller: `Arc::into_raw` of an `Arc<Cache>`, released once.
    drop(unsafe { std::sync::Arc::from_raw(handle as usize as *const larder_cache::Cache) });
}

/// A Java `String` from UTF-8 text, through UTF-16 (`NewStringUTF` wants modified UTF-8,
/// which differs for NUL and for characters outside the BMP).
pub(crate) fn java_string<'local>(
    env: &mut JNIEnv<'local>,
    text: &str,
) -> Result<JObject<'local>, Failure> {
    let utf16: Vec<u16> = text.encode_utf16().collect();
    let len = java_len(utf16.len())?;
    let raw = env.get_native_interface();
    // SAFETY: `raw` is this thread's JNIEnv, whose function table the JVM fills in completely;
    // `utf16` holds `len` UTF-16 units.
    let string = unsafe {
        match (**raw).NewString {
            Some(new_string) => new_string(raw, utf16.as_ptr(), len),
            None => std::ptr::null_mut(),
        }
    };
    if string.is_null() {
        return Err(Failure::Jni(jni::errors::Error::JavaException));
    }
    // SAFETY: a fresh local reference returned by NewString.
    Ok(unsafe { JObject::from_raw(string) })
}

/// A length as a Java array length or string length.
pub(crate) fn java_len(len: usize) -> Result<sys::jsize, Failure> {
    sys::jsize::try_from(len)
        .map_err(|_| Failure::Limit(format!("value of {len} elements is too large for Java")))
}
