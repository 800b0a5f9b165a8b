//! The larder keyspace: databases split into lock-striped shards, the entries they hold, and
//! expiry.
//!
//! Main types: [`Keyspace`] (all databases), [`Db`] (one numbered database, a fixed set of
//! shards), [`Shard`] (one hash table with its entries, a slab of slots, and an expiry index),
//! [`Entry`] (one key with its metadata and value), and one module per collection type with
//! its compact and full encodings and the operations its commands need: [`List`], [`Hash`],
//! [`Set`], [`ZSet`] ([`Limits`] says when a value leaves its compact encoding).
//!
//! A command locks the shard (or shards, in ascending order) that own its keys, runs shard-local
//! operations, and unlocks. Shard operations do no I/O and know nothing of any protocol, so they
//! are tested without sockets.
//!
//! It is not: a network server, a protocol codec, or a command table (see `larder-commands`).
#![deny(unsafe_code)]

pub mod bitmap;
mod clock;
pub mod decimal;
pub mod encoding;
mod entry;
mod error;
mod evict;
pub mod feed;
pub mod geo;
pub mod glob;
pub mod hash;
pub mod hyperloglog;
mod index;
mod keyspace;
pub mod list;
pub mod replay;
pub mod set;
mod shard;
pub mod snapshot;
pub mod stream;
mod xorshift;
pub mod zset;

pub use clock::{command_us, lru_clock, now_ms, now_us};
pub use encoding::Limits;
pub use entry::{prefetch, Entry, Object, ObjectKind};
pub use error::EngineError;
pub use evict::{
    applies_master_stream, lfu_decayed, lfu_log_incr, set_applies_master_stream, EvictionPolicy,
    LFU_INIT_VAL,
};
pub use feed::{Argv, Change, ChangeKind, Consumer, EntryMeta, Feed, GroupScope, Interest, Value};
pub use hash::Hash;
pub use keyspace::{Db, DbGuards, Eviction, Keyspace, ScanFilter, ShardRef, SHARDS_PER_DB};
pub use list::{List, Place};
pub use set::Set;
pub use shard::{Access, KeyImage, RestoreValue, Restored, Shard, SlotId};
pub use zset::ZSet;
