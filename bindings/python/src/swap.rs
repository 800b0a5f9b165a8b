//! `SwappingCache`: a cache that follows a path or a pointer file and moves to newly published
//! files on `refresh()`, without disturbing readers of the old one.
//!
//! The current file is kept as a `Cache` Python object, replaced on a swap: `current()` returns
//! it, and lookups through the swapper go through it, so a float list read through the swapper
//! keeps its file mapped like one read from a `Cache`. A `Cache` taken before a swap keeps
//! reading the old file (the mapping is shared, not copied) until it is dropped.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use larder_cache::SwappingCache;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::cache::PyCache;
use crate::error::{to_py_err, to_py_err_at};

/// A cache that swaps to a newer file when one is published, without blocking readers.
///
/// Lookups take no lock in Rust; the Python object of the current file sits behind a mutex
/// that is held only to copy a reference out or to replace it, never while the GIL is released
/// and never across anything that could run Python code.
#[pyclass(frozen, module = "larder_cache", name = "SwappingCache")]
pub struct PySwappingCache {
    swap: SwappingCache,
    /// The current file, as handed out by `current()`; always the one `swap` holds once a
    /// `refresh()` has returned.
    current: Mutex<Py<PyCache>>,
    /// The watched path or pointer file, for errors and `repr`.
    source: PathBuf,
    pointer: bool,
}

impl PySwappingCache {
    fn current_ref(&self) -> MutexGuard<'_, Py<PyCache>> {
        // A panic while the lock is held cannot leave the reference half-written.
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn current_bound<'py>(&self, py: Python<'py>) -> Bound<'py, PyCache> {
        self.current_ref().bind(py).clone()
    }

    fn error(&self, e: larder_cache::Error) -> PyErr {
        if self.pointer {
            // The failing file may be the pointer or the file it names; do not guess.
            to_py_err(e)
        } else {
            to_py_err_at(e, &self.source)
        }
    }
}

#[pymethods]
impl PySwappingCache {
    /// Watches `path` (a cache file replaced by renaming a new one onto it), or with
    /// `pointer=`, a pointer file naming the current cache file.
    #[new]
    #[pyo3(signature = (path = None, *, pointer = None))]
    fn py_new(
        py: Python<'_>,
        path: Option<PathBuf>,
        pointer: Option<PathBuf>,
    ) -> PyResult<PySwappingCache> {
        let (source, is_pointer) = match (path, pointer) {
            (Some(p), None) => (p, false),
            (None, Some(p)) => (p, true),
            _ => {
                return Err(PyTypeError::new_err(
                    "SwappingCache takes a path or pointer=, not both or neither",
                ))
            }
        };
        let opened = py.detach(|| {
            if is_pointer {
                SwappingCache::watch_pointer(&source)
            } else {
                SwappingCache::watch_path(&source)
            }
        });
        let swap = match opened {
            Ok(swap) => swap,
            Err(e) if is_pointer => return Err(to_py_err(e)),
            Err(e) => return Err(to_py_err_at(e, &source)),
        };
        let current = Py::new(py, PyCache::from_shared(swap.load_full()))?;
        Ok(PySwappingCache {
            swap,
            current: Mutex::new(current),
            source,
            pointer: is_pointer,
        })
    }

    /// Checks the watched path or pointer file once and swaps if it designates a different
    /// file; returns whether it swapped. A new file that fails to open leaves the current one in
    /// service and raises. Releases the GIL while it looks at the files.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        let swapped = py
            .detach(|| self.swap.refresh())
            .map_err(|e| self.error(e))?;
        // Allocated before locking: allocation may run the garbage collector, hence Python code,
        // hence let another thread take the GIL and wait for this lock.
        let latest = Py::new(py, PyCache::from_shared(self.swap.load_full()))?;
        let mut current = self.current_ref();
        // Only refresh() swaps, and each refresh loads after its own swap, so the refresh that
        // swapped last always finds its object newest here; an older one (a racing refresh's
        // swap came in between) is left for that refresh to publish.
        let newest = Arc::ptr_eq(latest.get().shared(), &self.swap.load());
        let stale = !Arc::ptr_eq(current.get().shared(), latest.get().shared());
        let unused = if newest && stale {
            std::mem::replace(&mut *current, latest)
        } else {
            latest
        };
        drop(current);
        // Dropped after unlocking, for the same reason as above.
        drop(unused);
        Ok(swapped)
    }

    /// The current file as a `Cache`. It keeps reading that file, whatever swaps happen later;
    /// call `current()` again after a swap for the new one.
    fn current(&self, py: Python<'_>) -> Py<PyCache> {
        self.current_ref().clone_ref(py)
    }

    /// `current().get(key, default)`.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        PyCache::get(&self.current_bound(key.py()), key, default)
    }

    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        PyCache::__getitem__(&self.current_bound(key.py()), key)
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.current_bound(key.py()).get().__contains__(key)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.current_bound(py).get().__len__()
    }

    /// The watched path, or the pointer file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.source.clone()
    }

    /// Whether `path` is a pointer file rather than the cache file itself.
    #[getter]
    fn is_pointer(&self) -> bool {
        self.pointer
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let current = self.current_bound(py);
        let cache = current.get().shared();
        let watched = if self.pointer { "pointer" } else { "path" };
        format!(
            "<larder_cache.SwappingCache {watched}={:?} current={:?} name={:?} keys={}>",
            self.source,
            cache.path(),
            cache.name(),
            cache.len()
        )
    }
}
