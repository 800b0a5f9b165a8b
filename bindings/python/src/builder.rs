//! `Builder`: writes a cache file, typing each value from its Python type.

use std::path::PathBuf;

use larder_cache::{BuildStats, CacheBuilder, DuplicatePolicy, Value};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use crate::convert::key_bytes;
use crate::error::{to_py_err, to_py_err_at};
use crate::floats::{FloatList, FloatSlice};

/// Builds a cache file at `path`.
///
/// Records stream to a temporary file beside `path`; `finish()` writes the index and header and
/// renames the file into place, so readers see the old file or the complete new one. Leaving a
/// `with` block finishes the build; an exception inside it aborts the build instead (the
/// temporary file is removed and `path` is left as it was).
#[pyclass(module = "larder_cache", name = "Builder")]
pub struct PyBuilder {
    /// `None` once finished or aborted.
    inner: Option<CacheBuilder>,
    path: PathBuf,
    stats: Option<Py<PyDict>>,
}

impl PyBuilder {
    fn builder(&mut self) -> PyResult<&mut CacheBuilder> {
        match self.inner.as_mut() {
            Some(b) => Ok(b),
            None => Err(PyValueError::new_err("the builder has already finished")),
        }
    }

    fn put(&mut self, key: &Bound<'_, PyAny>, value: Value<'_>) -> PyResult<()> {
        let key = key_bytes(key)?;
        self.builder()?.insert(key, value).map_err(to_py_err)
    }
}

#[pymethods]
impl PyBuilder {
    #[new]
    #[pyo3(signature = (path, name = None, dedup = false, *, duplicates = "last"))]
    fn py_new(
        path: PathBuf,
        name: Option<String>,
        dedup: bool,
        duplicates: &str,
    ) -> PyResult<PyBuilder> {
        let policy = match duplicates {
            "last" => DuplicatePolicy::LastWins,
            "error" => DuplicatePolicy::Error,
            other => {
                return Err(PyValueError::new_err(format!(
                    "duplicates must be \"last\" or \"error\", not {other:?}"
                )))
            }
        };
        let mut b = CacheBuilder::new(&path).map_err(|e| to_py_err_at(e, &path))?;
        if let Some(name) = name {
            b.set_name(name);
        }
        b.set_dedup(dedup);
        b.set_duplicates(policy);
        Ok(PyBuilder {
            inner: Some(b),
            path,
            stats: None,
        })
    }

    /// Adds `key` (str or bytes) with `value`, typed from its Python type:
    /// `bool` → bool, `int` → i64, `float` → f64, `str` → str, `bytes`/`bytearray` → bytes,
    /// a list or tuple of numbers → list<f64>, of `str` → list<str> (an empty one → list<str>),
    /// a `FloatList` or a 1-D float32/float64 buffer (numpy array) → list<f32>/list<f64>.
    fn insert(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = value.py();
        if let Ok(b) = value.cast::<PyBool>() {
            return self.put(key, Value::Bool(b.is_true()));
        }
        if let Ok(i) = value.cast::<PyInt>() {
            return self.put(key, Value::I64(i.extract()?));
        }
        if let Ok(f) = value.cast::<PyFloat>() {
            return self.put(key, Value::F64(f.value()));
        }
        if let Ok(s) = value.cast::<PyString>() {
            return self.put(key, Value::Str(s.to_str()?));
        }
        if let Ok(b) = value.cast::<PyBytes>() {
            return self.put(key, Value::Bytes(b.as_bytes()));
        }
        if let Ok(b) = value.cast::<PyByteArray>() {
            return self.put(key, Value::Bytes(&b.to_vec()));
        }
        if let Ok(fl) = value.cast::<FloatList>() {
            return match fl.get().slice() {
                FloatSlice::F32(xs) => self.put(key, Value::F32List(xs)),
                FloatSlice::F64(xs) => self.put(key, Value::F64List(xs)),
            };
        }
        if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            let items: Vec<Bound<'_, PyAny>> = value.try_iter()?.collect::<PyResult<_>>()?;
            return match items.first() {
                None => self.put(key, Value::StrList(&[])),
                Some(first) if first.is_instance_of::<PyString>() => {
                    let strs = str_items(&items)?;
                    self.put(key, Value::StrList(&strs))
                }
                Some(_) => {
                    let xs = items
                        .iter()
                        .map(|x| x.extract::<f64>().map_err(|_| mixed_list_error(x)))
                        .collect::<PyResult<Vec<f64>>>()?;
                    self.put(key, Value::F64List(&xs))
                }
            };
        }
        if let Ok(buf) = PyBuffer::<f64>::get(value) {
            let xs = one_dimensional(&buf)?.to_vec(py)?;
            return self.put(key, Value::F64List(&xs));
        }
        if let Ok(buf) = PyBuffer::<f32>::get(value) {
            let xs = one_dimensional(&buf)?.to_vec(py)?;
            return self.put(key, Value::F32List(&xs));
        }
        // Integer-like objects (numpy integers) through __index__, float-like through __float__.
        if value.hasattr("__index__")? {
            return self.put(key, Value::I64(value.extract()?));
        }
        if value.hasattr("__float__")? {
            return self.put(key, Value::F64(value.extract()?));
        }
        Err(PyTypeError::new_err(format!(
            "cannot store a value of type {}: use str, bytes, int, float, bool, a list of \
             numbers or of str, or a float32/float64 array",
            type_name(value)
        )))
    }

    /// Adds `key` with a list<f32>: any iterable of numbers, or a float32 buffer (read without
    /// a Python-level loop).
    fn insert_f32_list(
        &mut self,
        key: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let xs: Vec<f32> = match PyBuffer::<f32>::get(values) {
            Ok(buf) => one_dimensional(&buf)?.to_vec(values.py())?,
            Err(_) => numbers(values)?.into_iter().map(|x| x as f32).collect(),
        };
        self.put(key, Value::F32List(&xs))
    }

    /// Adds `key` with a list<f64>: any iterable of numbers, or a float64 buffer.
    fn insert_f64_list(
        &mut self,
        key: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let xs: Vec<f64> = match PyBuffer::<f64>::get(values) {
            Ok(buf) => one_dimensional(&buf)?.to_vec(values.py())?,
            Err(_) => numbers(values)?,
        };
        self.put(key, Value::F64List(&xs))
    }

    /// Adds `key` with a list<str>: any iterable of `str`.
    fn insert_str_list(
        &mut self,
        key: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let items: Vec<Bound<'_, PyAny>> = values.try_iter()?.collect::<PyResult<_>>()?;
        let strs = str_items(&items)?;
        self.put(key, Value::StrList(&strs))
    }

    /// Number of inserts so far.
    #[getter]
    fn inserted(&self) -> u64 {
        self.inner.as_ref().map_or(0, CacheBuilder::inserted)
    }

    /// The destination path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The dict `finish()` returned, or None before the build has finished.
    #[getter]
    fn stats(&self, py: Python<'_>) -> Option<Py<PyDict>> {
        self.stats.as_ref().map(|s| s.clone_ref(py))
    }

    /// Writes the index and header, syncs, and renames the file into place (releases the GIL).
    /// Returns the build statistics as a dict.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Some(b) = self.inner.take() else {
            return Err(PyValueError::new_err("the builder has already finished"));
        };
        let stats = py
            .detach(|| b.finish())
            .map_err(|e| to_py_err_at(e, &self.path))?;
        let d = stats_dict(py, &stats)?;
        self.stats = Some(d.clone().unbind());
        Ok(d)
    }

    /// Abandons the build: removes the temporary file and leaves `path` untouched.
    fn abort(&mut self) {
        self.inner = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Finishes the build, or aborts it if the block raised.
    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some() {
            self.abort();
        } else if self.inner.is_some() {
            self.finish(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.is_some() {
            "building"
        } else if self.stats.is_some() {
            "finished"
        } else {
            "aborted"
        };
        format!(
            "<larder_cache.Builder path={:?} inserted={} {state}>",
            self.path,
            self.inserted()
        )
    }
}

fn stats_dict<'py>(py: Python<'py>, s: &BuildStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("key_count", s.key_count)?;
    d.set_item("duplicate_keys", s.duplicate_keys)?;
    d.set_item("value_count", s.value_count)?;
    d.set_item("deduped_values", s.deduped_values)?;
    d.set_item("dedup_saved_bytes", s.dedup_saved_bytes)?;
    d.set_item("raw_key_bytes", s.raw_key_bytes)?;
    d.set_item("raw_value_bytes", s.raw_value_bytes)?;
    d.set_item("data_bytes", s.data_bytes)?;
    d.set_item("index_bytes", s.index_bytes)?;
    d.set_item("file_bytes", s.file_bytes)?;
    d.set_item("build_ms", s.build_ms)?;
    Ok(d)
}

/// The `&str`s of `items`, which must all be `str`.
fn str_items<'a>(items: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<&'a str>> {
    items
        .iter()
        .map(|x| match x.cast::<PyString>() {
            Ok(s) => s.to_str(),
            Err(_) => Err(mixed_list_error(x)),
        })
        .collect()
}

/// Any iterable of numbers as f64s.
fn numbers(values: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    values
        .try_iter()?
        .map(|x| {
            let x = x?;
            x.extract::<f64>().map_err(|_| mixed_list_error(&x))
        })
        .collect()
}

fn one_dimensional<T: pyo3::buffer::Element>(buf: &PyBuffer<T>) -> PyResult<&PyBuffer<T>> {
    if buf.dimensions() == 1 {
        Ok(buf)
    } else {
        Err(PyValueError::new_err(format!(
            "float arrays must be one-dimensional, not {}-dimensional",
            buf.dimensions()
        )))
    }
}

fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

#[cold]
fn mixed_list_error(item: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "list values hold only numbers or only str; found an element of type {}",
        type_name(item)
    ))
}
