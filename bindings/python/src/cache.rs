//! `Cache`: an open cache file, and its key/value iterators.
//!
//! Lookups run on the calling thread with the GIL held: a hit costs about 100 ns, far less than
//! releasing and re-acquiring the GIL. Only `verify`, which reads the whole file, releases it.

use std::path::PathBuf;
use std::sync::Arc;

use larder_cache::{Cache, Iter, ValueRef};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::convert::{key_bytes, key_to_py, str_list_to_py, value_to_py};
use crate::error::{to_py_err, to_py_err_at};
use crate::floats::FloatList;

/// An open, memory-mapped, read-only cache file.
///
/// Opening is O(1) (the header is checked; `verify()` checks everything). Keys are `str` or
/// `bytes`. Values come back as Python objects: `bytes`, `str`, `int`, `float`, `bool`,
/// `list[str]`, or a zero-copy `FloatList` for float lists. Any number of processes can open the
/// same file and share one copy of it in the page cache.
#[pyclass(frozen, module = "larder_cache", name = "Cache")]
pub struct PyCache {
    /// Shared with a `SwappingCache` when the object came from one, so that it keeps reading
    /// the file it was taken on after the swapper has moved on.
    inner: Arc<Cache>,
}

impl PyCache {
    /// Opens `path`.
    pub fn open(path: PathBuf) -> PyResult<PyCache> {
        match Cache::open(&path) {
            Ok(cache) => Ok(PyCache::from_shared(Arc::new(cache))),
            Err(e) => Err(to_py_err_at(e, &path)),
        }
    }

    /// A Python object over a cache that may also be held elsewhere.
    pub fn from_shared(inner: Arc<Cache>) -> PyCache {
        PyCache { inner }
    }

    /// The cache, to compare with a swapper's current one.
    pub fn shared(&self) -> &Arc<Cache> {
        &self.inner
    }
}

#[pymethods]
impl PyCache {
    #[new]
    fn py_new(path: PathBuf) -> PyResult<PyCache> {
        PyCache::open(path)
    }

    /// The value stored for `key`, or `default` (None) when the key is absent.
    #[pyo3(signature = (key, default = None))]
    pub(crate) fn get<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match slf.get().inner.get(key_bytes(key)?) {
            Ok(Some(value)) => value_to_py(slf, value),
            Ok(None) => Ok(default.unwrap_or_else(|| slf.py().None().into_bound(slf.py()))),
            Err(e) => Err(to_py_err(e)),
        }
    }

    pub(crate) fn __getitem__<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match slf.get().inner.get(key_bytes(key)?) {
            Ok(Some(value)) => value_to_py(slf, value),
            Ok(None) => Err(PyKeyError::new_err(key.clone().unbind())),
            Err(e) => Err(to_py_err(e)),
        }
    }

    pub(crate) fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.inner.contains(key_bytes(key)?).map_err(to_py_err)
    }

    pub(crate) fn __len__(&self) -> usize {
        // The header's key count is bounded by the file size, which fits in memory.
        usize::try_from(self.inner.len()).unwrap_or(usize::MAX)
    }

    fn __iter__(slf: &Bound<'_, Self>) -> CacheIter {
        CacheIter::new(slf, IterMode::Keys)
    }

    /// Iterates over the keys, in index order (stable for a file, otherwise arbitrary).
    /// A key is `str` when it is valid UTF-8, else `bytes`.
    fn keys(slf: &Bound<'_, Self>) -> CacheIter {
        CacheIter::new(slf, IterMode::Keys)
    }

    /// Iterates over the values, in the order of `keys()`.
    fn values(slf: &Bound<'_, Self>) -> CacheIter {
        CacheIter::new(slf, IterMode::Values)
    }

    /// Iterates over `(key, value)` pairs, in the order of `keys()`.
    fn items(slf: &Bound<'_, Self>) -> CacheIter {
        CacheIter::new(slf, IterMode::Items)
    }

    /// A `str` value; `TypeMismatch` if the key holds another type.
    fn get_str<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        match self.inner.get_str(key_bytes(key)?) {
            Ok(v) => Ok(v.map(|s| PyString::new(py, s))),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// A `bytes` value. A `str` value is returned as its UTF-8 bytes.
    fn get_bytes<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self.inner.get_bytes(key_bytes(key)?) {
            Ok(v) => Ok(v.map(|b| PyBytes::new(py, b))),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// An `int` (i64) value.
    fn get_int(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
        self.inner.get_i64(key_bytes(key)?).map_err(to_py_err)
    }

    /// A `float` (f64) value.
    fn get_float(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        self.inner.get_f64(key_bytes(key)?).map_err(to_py_err)
    }

    /// A `bool` value.
    fn get_bool(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        self.inner.get_bool(key_bytes(key)?).map_err(to_py_err)
    }

    /// A `list<f32>` value as a zero-copy `FloatList` (typecode `"f"`).
    #[allow(unsafe_code)]
    fn get_f32_list(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Option<FloatList>> {
        match slf.get().inner.get_f32_list(key_bytes(key)?) {
            // SAFETY: `xs` was just read from `slf`'s cache.
            Ok(v) => Ok(v.map(|xs| unsafe { FloatList::f32s(slf, xs) })),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// A `list<f64>` value as a zero-copy `FloatList` (typecode `"d"`).
    #[allow(unsafe_code)]
    fn get_f64_list(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Option<FloatList>> {
        match slf.get().inner.get_f64_list(key_bytes(key)?) {
            // SAFETY: `xs` was just read from `slf`'s cache.
            Ok(v) => Ok(v.map(|xs| unsafe { FloatList::f64s(slf, xs) })),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// A `list<str>` value as a `list` of `str`.
    fn get_str_list<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, pyo3::types::PyList>>> {
        match self.inner.get_str_list(key_bytes(key)?) {
            Ok(Some(list)) => str_list_to_py(py, list).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// The stored type of `key` (`"bytes"`, `"str"`, `"i64"`, `"f64"`, `"bool"`,
    /// `"list<f32>"`, `"list<f64>"`, `"list<str>"`), or None when absent.
    fn value_type(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
        match self.inner.value_type(key_bytes(key)?) {
            Ok(t) => Ok(t.map(|t| t.to_string())),
            Err(e) => Err(to_py_err(e)),
        }
    }

    /// Facts from the file's header, as a dict.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let i = self.inner.info();
        let d = PyDict::new(py);
        d.set_item("path", self.inner.path())?;
        d.set_item("name", &i.name)?;
        d.set_item("format_version", i.format_version)?;
        d.set_item("created_unix_ms", i.created_unix_ms)?;
        d.set_item("key_count", i.key_count)?;
        d.set_item("value_count", i.value_count)?;
        d.set_item("dedup", i.dedup)?;
        d.set_item("file_bytes", i.file_bytes)?;
        d.set_item("data_bytes", i.data_bytes)?;
        d.set_item("index_bytes", i.index_bytes)?;
        d.set_item("bucket_count", i.bucket_count)?;
        d.set_item("offset_width_bytes", i.offset_width_bytes)?;
        d.set_item("displaced_keys", i.displaced_keys)?;
        d.set_item("probe_max", i.probe_max)?;
        d.set_item("raw_key_bytes", i.raw_key_bytes)?;
        d.set_item("raw_value_bytes", i.raw_value_bytes)?;
        d.set_item("dedup_saved_bytes", i.dedup_saved_bytes)?;
        Ok(d)
    }

    /// Checks every checksum and every index entry (O(file size); releases the GIL).
    /// Raises `CorruptFile` on the first problem.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.verify()).map_err(to_py_err)
    }

    /// The path the cache was opened from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// The name given at build time.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Pickles as its path: unpickling (in another process, say) opens and maps the file anew.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, pyo3::types::PyType>, (PathBuf,)) {
        (slf.get_type(), (slf.get().inner.path().to_path_buf(),))
    }

    fn __repr__(&self) -> String {
        format!(
            "<larder_cache.Cache name={:?} path={:?} keys={}>",
            self.inner.name(),
            self.inner.path(),
            self.inner.len()
        )
    }
}

#[derive(Clone, Copy)]
enum IterMode {
    Keys,
    Values,
    Items,
}

/// An iterator over a cache's keys, values or items.
#[pyclass(module = "larder_cache", name = "CacheIterator")]
pub struct CacheIter {
    /// Borrows the `Cache` inside `owner`. Declared first so that it is dropped first.
    iter: Iter<'static>,
    owner: Py<PyCache>,
    mode: IterMode,
}

impl CacheIter {
    #[allow(unsafe_code)]
    fn new(owner: &Bound<'_, PyCache>, mode: IterMode) -> CacheIter {
        let cache: *const Cache = Arc::as_ptr(&owner.get().inner);
        // SAFETY: the `Cache` lives in an `Arc` held by the Python object `owner`, which is
        // frozen (the `Arc` is never replaced) and freed only when its last reference goes. The iterator stores
        // a strong reference to it in `owner` and drops `iter` before that reference (field
        // order), so the borrow never outlives the `Cache`. `'static` is never exposed: values
        // borrowed through `iter` are converted to Python objects (or to a `FloatList`, which
        // holds its own reference) before `__next__` returns.
        let cache: &'static Cache = unsafe { &*cache };
        CacheIter {
            iter: cache.iter(),
            owner: owner.clone().unbind(),
            mode,
        }
    }
}

#[pymethods]
impl CacheIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let this = &mut *slf;
        let Some(entry) = this.iter.next() else {
            return Ok(None);
        };
        let (key, value): (&[u8], ValueRef<'_>) = entry.map_err(to_py_err)?;
        let owner = this.owner.bind(py);
        Ok(Some(match this.mode {
            IterMode::Keys => key_to_py(py, key),
            IterMode::Values => value_to_py(owner, value)?,
            IterMode::Items => (key_to_py(py, key), value_to_py(owner, value)?)
                .into_pyobject(py)?
                .into_any(),
        }))
    }
}
