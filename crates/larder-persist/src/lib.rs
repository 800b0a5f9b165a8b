//! Persistence formats: the Redis RDB value serialization (DUMP/RESTORE payloads, and later
//! snapshots), with the append-only log and recovery to come.
//!
//! Main items: [`rdb::dump`] writes one value as Redis 7.0's DUMP does (object type byte,
//! value, RDB version 10, CRC-64), and [`rdb::restore`] reads such a payload back into a
//! larder value, accepting every encoding a Redis 7.0 server loads (listpacks, ziplists,
//! intsets, LZF-compressed strings, the older list and sorted-set forms). The value codec is
//! also exposed on its own ([`rdb::write_value`], [`rdb::read_value`]) for whole-file
//! snapshots. [`rdb::functions`] is the FUNCTION DUMP / RESTORE payload.
//!
//! [`snapshot`] is larder's own snapshot file (`docs/snapshot-format.md`): written from a
//! fork-less point-in-time capture of a live keyspace ([`snapshot::write_snapshot`]) and
//! loaded back with versions, deadlines, memcached flags and the function libraries' codes
//! ([`snapshot::load_snapshot`]).
//!
//! The reader parses untrusted bytes: it never panics and never allocates more than the input
//! can justify (every length is checked against the bytes that remain before anything is
//! reserved).
//!
//! It is not: a network layer or a command table (see `larder-commands`), nor a store of its
//! own (values are `larder-engine` types).
#![forbid(unsafe_code)]

pub mod log;
pub mod rdb;
pub mod snapshot;
