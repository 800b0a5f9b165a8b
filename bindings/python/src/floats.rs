//! `FloatList`: a read-only, zero-copy view of a stored `list<f32>` or `list<f64>`.
//!
//! The view exports the buffer protocol over the bytes of the mapping itself, so
//! `numpy.frombuffer(v, dtype=numpy.float32)`, `numpy.asarray(v)` and `memoryview(v)` read the
//! numbers in place. It holds a reference to its [`PyCache`], which keeps the mapping alive for as
//! long as the view, or any buffer exported from it, exists.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr};

use pyo3::exceptions::{PyBufferError, PyIndexError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyIterator, PyList};

use crate::cache::PyCache;

/// Element type of a [`FloatList`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    F32,
    F64,
}

impl Kind {
    fn item_bytes(self) -> usize {
        match self {
            Kind::F32 => 4,
            Kind::F64 => 8,
        }
    }

    /// The `struct` module format character, as the buffer protocol wants it.
    fn format(self) -> &'static CStr {
        match self {
            Kind::F32 => c"f",
            Kind::F64 => c"d",
        }
    }

    fn typecode(self) -> &'static str {
        match self {
            Kind::F32 => "f",
            Kind::F64 => "d",
        }
    }
}

/// The numbers of a [`FloatList`], borrowed.
pub enum FloatSlice<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// A read-only list of floats stored in a cache file, viewed in place (no copy).
///
/// Supports the buffer protocol (`numpy.frombuffer`, `numpy.asarray`, `memoryview`), `len`,
/// indexing, iteration, `tolist()` and `==` (compares as `tolist()` does). `typecode` is `"f"`
/// for 32-bit and `"d"` for 64-bit floats, as in the `array` module.
#[pyclass(frozen, module = "larder_cache", name = "FloatList")]
pub struct FloatList {
    /// Keeps the mapping that `addr` points into alive.
    owner: Py<PyCache>,
    /// Address of the first element, inside `owner`'s mapping and aligned for `kind`.
    addr: usize,
    /// Number of elements.
    len: usize,
    kind: Kind,
    /// `[len]`, for `Py_buffer::shape` (which must outlive the export; `self` does).
    shape: [ffi::Py_ssize_t; 1],
    /// `[item bytes]`, for `Py_buffer::strides`.
    strides: [ffi::Py_ssize_t; 1],
}

impl FloatList {
    /// A view of `xs`.
    ///
    /// # Safety
    /// `xs` must be borrowed from the mapping of the cache inside `owner`.
    pub unsafe fn f32s(owner: &Bound<'_, PyCache>, xs: &[f32]) -> FloatList {
        FloatList::new(owner, xs.as_ptr() as usize, xs.len(), Kind::F32)
    }

    /// A view of `xs`.
    ///
    /// # Safety
    /// `xs` must be borrowed from the mapping of the cache inside `owner`.
    pub unsafe fn f64s(owner: &Bound<'_, PyCache>, xs: &[f64]) -> FloatList {
        FloatList::new(owner, xs.as_ptr() as usize, xs.len(), Kind::F64)
    }

    fn new(owner: &Bound<'_, PyCache>, addr: usize, len: usize, kind: Kind) -> FloatList {
        FloatList {
            owner: owner.clone().unbind(),
            addr,
            len,
            kind,
            // A slice is at most isize::MAX bytes long, so these cannot wrap.
            shape: [len as ffi::Py_ssize_t],
            strides: [kind.item_bytes() as ffi::Py_ssize_t],
        }
    }

    /// Element `i` (`i < len`) as f64.
    fn at(&self, i: usize) -> f64 {
        debug_assert!(i < self.len);
        match self.kind {
            Kind::F32 => f64::from(self.as_f32s()[i]),
            Kind::F64 => self.as_f64s()[i],
        }
    }

    fn as_f32s(&self) -> &[f32] {
        debug_assert!(self.kind == Kind::F32);
        // SAFETY: `addr` and `len` came from a `&[f32]` that the reader borrowed from the
        // mapping owned by `self.owner` (see `FloatList::f32s`). The cache is immutable and
        // `owner` keeps it, and so the mapping, alive while `self` exists; the mapping is
        // read-only, so nothing writes through it.
        unsafe { std::slice::from_raw_parts(self.addr as *const f32, self.len) }
    }

    fn as_f64s(&self) -> &[f64] {
        debug_assert!(self.kind == Kind::F64);
        // SAFETY: as in `as_f32s`, for a `&[f64]`.
        unsafe { std::slice::from_raw_parts(self.addr as *const f64, self.len) }
    }

    /// The numbers, borrowed.
    pub fn slice(&self) -> FloatSlice<'_> {
        match self.kind {
            Kind::F32 => FloatSlice::F32(self.as_f32s()),
            Kind::F64 => FloatSlice::F64(self.as_f64s()),
        }
    }

    fn list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self.kind {
            Kind::F32 => PyList::new(py, self.as_f32s().iter().map(|&x| f64::from(x))),
            Kind::F64 => PyList::new(py, self.as_f64s()),
        }
    }
}

#[pymethods]
impl FloatList {
    /// `"f"` (32-bit floats) or `"d"` (64-bit floats), as in the `array` module.
    #[getter]
    fn typecode(&self) -> &'static str {
        self.kind.typecode()
    }

    /// Bytes per element: 4 or 8.
    #[getter]
    fn itemsize(&self) -> usize {
        self.kind.item_bytes()
    }

    /// The cache the numbers live in.
    #[getter]
    fn cache(&self, py: Python<'_>) -> Py<PyCache> {
        self.owner.clone_ref(py)
    }

    /// The numbers, copied into a list of Python floats.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.list(py)
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyFloat>> {
        let i = if index < 0 {
            index.checked_add(self.len as isize)
        } else {
            Some(index)
        };
        match i {
            Some(i) if i >= 0 && (i as usize) < self.len => {
                Ok(PyFloat::new(py, self.at(i as usize)))
            }
            _ => Err(PyIndexError::new_err("FloatList index out of range")),
        }
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        self.list(py)?.try_iter()
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.list(py)?.eq(other)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "FloatList('{}', {})",
            self.kind.typecode(),
            self.list(py)?.repr()?
        ))
    }

    /// Exports the numbers in place, read-only, as a one-dimensional C-contiguous buffer.
    ///
    /// # Safety
    /// `view` must be a valid `Py_buffer` to fill, as CPython passes to `bf_getbuffer`.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("FloatList: NULL Py_buffer"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(
                "FloatList is read-only: its numbers live in a read-only file mapping",
            ));
        }
        let this = slf.get();
        let item_bytes = this.kind.item_bytes();
        // SAFETY: CPython hands `bf_getbuffer` a valid, writable `Py_buffer` (checked non-null
        // above). Every pointer stored in it stays valid until `PyBuffer_Release`, because the
        // buffer holds a strong reference to `slf` (`obj`), which owns `shape` and `strides` and
        // keeps the cache, and so the mapping behind `buf`, alive. `format` is static. The
        // consumer may not write through `buf`: we refused PyBUF_WRITABLE and set `readonly`.
        unsafe {
            (*view).buf = this.addr as *mut c_void;
            (*view).len = (this.len * item_bytes) as ffi::Py_ssize_t;
            (*view).readonly = 1;
            (*view).itemsize = item_bytes as ffi::Py_ssize_t;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                this.kind.format().as_ptr() as *mut c_char
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                this.shape.as_ptr() as *mut ffi::Py_ssize_t
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                this.strides.as_ptr() as *mut ffi::Py_ssize_t
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
            (*view).obj = slf.into_any().into_ptr();
        }
        Ok(())
    }
}
