//! Python binding for larder's cache files: the `larder_cache` extension module.
//!
//! A thin PyO3 layer over the `larder-cache` crate's Rust API (not its C ABI): [`PyCache`]
//! (`larder_cache.Cache`, opened with `larder_cache.open`) reads a file, [`PyBuilder`]
//! (`larder_cache.Builder`) writes one, [`PySwappingCache`] (`larder_cache.SwappingCache`)
//! follows a path or a pointer file to newly published files, and [`FloatList`] exposes a
//! stored float list to numpy through the buffer protocol without copying it. Errors map onto `OSError` and the module's
//! `CorruptFile`, `UnsupportedVersion` and `TypeMismatch` exceptions (see `error.rs`).
//!
//! It is not: a second implementation of the format (every byte is read by `larder-cache`), nor
//! a mutable store. The Python-facing documentation is `larder_cache.pyi` and the README beside
//! this crate.
//!
//! Unsafe code is confined to the buffer export and the views of the mapping that it and the
//! iterators need (`floats.rs`, `cache.rs`); each block states why it is sound.
#![deny(unsafe_code)]

mod builder;
mod cache;
mod convert;
mod error;
mod floats;
mod swap;

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::builder::PyBuilder;
use crate::cache::{CacheIter, PyCache};
use crate::error::{CorruptFile, TypeMismatch, UnsupportedVersion};
use crate::floats::FloatList;
use crate::swap::PySwappingCache;

/// Opens the cache file at `path` (str or os.PathLike) and maps it read-only.
#[pyfunction]
fn open(path: PathBuf) -> PyResult<PyCache> {
    PyCache::open(path)
}

/// Immutable, memory-mapped, typed key-value cache files.
#[pymodule(name = "larder_cache")]
fn larder_cache_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<PyCache>()?;
    m.add_class::<PyBuilder>()?;
    m.add_class::<PySwappingCache>()?;
    m.add_class::<FloatList>()?;
    m.add_class::<CacheIter>()?;
    m.add("CorruptFile", py.get_type::<CorruptFile>())?;
    m.add("UnsupportedVersion", py.get_type::<UnsupportedVersion>())?;
    m.add("TypeMismatch", py.get_type::<TypeMismatch>())?;
    m.add("FORMAT_VERSION", larder_cache::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
