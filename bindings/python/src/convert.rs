//! Conversions between Python objects and cache keys and values.
//!
//! Keys are `str` (looked up by their UTF-8 bytes) or `bytes`. Reading a key borrows the bytes
//! inside the Python object: CPython keeps a compact ASCII string's characters, which are its
//! UTF-8, inline, so a lookup by `str` copies nothing.

use larder_cache::ValueRef;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyList, PyString};

use crate::cache::PyCache;
use crate::error::to_py_err;
use crate::floats::FloatList;

/// The bytes of a key: a `str` (its UTF-8) or `bytes`, borrowed from the object.
#[inline(always)]
pub fn key_bytes<'a>(key: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    // Exact `str` first: a pointer compare, and the common case.
    if let Ok(s) = key.cast_exact::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    if let Ok(b) = key.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    if let Ok(s) = key.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    Err(key_type_error(key))
}

#[cold]
#[inline(never)]
fn key_type_error(key: &Bound<'_, PyAny>) -> PyErr {
    let name = key
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    PyTypeError::new_err(format!("cache keys are str or bytes, not {name}"))
}

/// A key read from the file: `str` when it is UTF-8 (the usual case), else `bytes`.
pub fn key_to_py<'py>(py: Python<'py>, key: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(key) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, key).into_any(),
    }
}

/// A stored value as a Python object. Float lists become [`FloatList`] views over the mapping
/// that keep `owner` alive; everything else is converted (copied) into a Python object.
///
/// `value` must have been read from the cache inside `owner` (every caller passes the result
/// of a lookup on `owner`).
#[inline(always)]
#[allow(unsafe_code)]
pub fn value_to_py<'py>(
    owner: &Bound<'py, PyCache>,
    value: ValueRef<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = owner.py();
    Ok(match value {
        ValueRef::Str(s) => PyString::new(py, s).into_any(),
        ValueRef::Bytes(b) => PyBytes::new(py, b).into_any(),
        ValueRef::I64(i) => i.into_pyobject(py)?.into_any(),
        ValueRef::F64(f) => PyFloat::new(py, f).into_any(),
        ValueRef::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        // SAFETY (both): callers pass a `value` read from `owner`'s cache.
        ValueRef::F32List(xs) => Bound::new(py, unsafe { FloatList::f32s(owner, xs) })?.into_any(),
        ValueRef::F64List(xs) => Bound::new(py, unsafe { FloatList::f64s(owner, xs) })?.into_any(),
        ValueRef::StrList(list) => str_list_to_py(py, list)?.into_any(),
        other => {
            return Err(PyTypeError::new_err(format!(
                "value of type {} is not supported by this binding",
                other.value_type()
            )))
        }
    })
}

/// A string list as a Python `list` of `str`.
pub fn str_list_to_py<'py>(
    py: Python<'py>,
    list: larder_cache::StrList<'_>,
) -> PyResult<Bound<'py, PyList>> {
    let mut items = Vec::with_capacity(list.len());
    for s in list.iter() {
        items.push(PyString::new(py, s.map_err(to_py_err)?));
    }
    PyList::new(py, items)
}
