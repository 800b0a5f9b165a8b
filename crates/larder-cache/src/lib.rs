//! Immutable, memory-mapped, typed key-value cache files.
//!
//! A cache file is built once by a [`CacheBuilder`] (streaming; memory bounded by the index,
//! not the data), then opened by any number of processes with [`Cache::open`], which maps it
//! read-only so that every process shares one copy in the page cache. Lookups hash the key with
//! xxh3, compare a one-cache-line bucket of tag bytes in one SIMD step, and compare the key in
//! its record: about two cache misses, no lock, no allocation. Values are typed
//! ([`ValueType`]): bytes, string, i64, f64, bool and lists of f32, f64 and strings; numbers and
//! number lists are stored little-endian and aligned so they are read in place (`&[f64]`
//! borrowed from the mapping). A [`SwappingCache`] replaces an open cache by a newer file
//! without blocking readers.
//!
//! Every offset read from a file is bounds-checked: a truncated, corrupt or hostile file yields
//! an [`Error`], never a panic or undefined behaviour. [`Cache::verify`] checks all checksums.
//! The format is specified in `docs/cache-format.md`.
//!
//! It is not: a mutable store (rebuild and swap instead), a network service, or a general
//! database; it depends on no other larder crate.
//!
//! ```no_run
//! use larder_cache::{Cache, CacheBuilder, Value};
//! let mut b = CacheBuilder::new("ref.lcache")?.name("reference").dedup(true);
//! b.insert("user:1:score", Value::F64(0.75))?;
//! b.insert("user:1:tags", Value::StrList(&["a", "b"]))?;
//! let stats = b.finish()?;
//! let cache = Cache::open("ref.lcache")?;
//! assert_eq!(cache.get_f64("user:1:score")?, Some(0.75));
//! # Ok::<(), larder_cache::Error>(())
//! ```
#![deny(unsafe_code)]

mod builder;
mod error;
mod format;
mod index;
mod reader;
mod swap;
mod value;
mod view;
mod writer;

pub use builder::{BuildStats, CacheBuilder, DuplicatePolicy, Value};
pub use error::Error;
pub use format::{ValueType, FORMAT_VERSION, HEADER_LEN, KEY_LEN_MAX, NAME_LEN_MAX};
pub use reader::{Cache, CacheInfo, Iter, Layout};
pub use swap::{SwappingCache, Watcher};
pub use value::{StrList, ValueRef};
