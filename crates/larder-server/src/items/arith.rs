//! Counters: incr and decr from every protocol (text, binary with its initial value, meta
//! `ma`), stored back as decimal digits. Apart from `items.rs` as one of the operation
//! families over its shared lock and lookup.

use larder_engine::decimal::digits_before;
use larder_engine::feed::class;
use larder_engine::Db;
use larder_memcache::{apply_delta, CounterOp};

use super::{lock, lookup, notify, notify_deadline, ttl_s, Deadline, Found};

/// An incr/decr request, from any protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arith {
    /// Increment (wrapping at 2^64) or decrement (stopping at 0).
    pub op: CounterOp,
    /// The amount.
    pub delta: u64,
    /// Apply only to an item with this CAS.
    pub compare_cas: Option<u64>,
    /// On a miss, create the item with this value and deadline (binary with an exptime
    /// other than 0xffffffff, meta `N`) instead of answering not found.
    pub create: Option<(u64, Deadline)>,
    /// meta `T`: a new deadline on success.
    pub ttl: Option<Deadline>,
    /// meta `E`: the CAS the item gets.
    pub new_cas: Option<u64>,
}

/// The outcome of an incr/decr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// The new value, the item's CAS and remaining TTL (-1: none).
    Value {
        /// The new value.
        value: u64,
        /// The item's new CAS.
        cas: u64,
        /// Remaining TTL in seconds.
        ttl_s: i64,
        /// Whether the item was created with the initial value.
        created: bool,
    },
    /// No item, and no creation asked for.
    NotFound,
    /// The CAS differs.
    Exists,
    /// The value is not a decimal 64-bit unsigned number.
    NonNumeric,
    /// Creation asked for, but the key holds another type.
    NotStored,
}

/// Increments or decrements a decimal item as memcached's `do_add_delta` does: the new value
/// is stored as its decimal digits, flags and deadline are kept, the CAS changes.
pub fn arith(db: &Db, key: &[u8], now_ms: u64, req: &Arith) -> Counted {
    let (mut shard, hash) = lock(db, key);
    let slot = match lookup(&mut shard, key, hash, now_ms) {
        Found::Hit(slot) => slot,
        Found::Miss { .. } => {
            let Some((initial, deadline)) = req.create else {
                return Counted::NotFound;
            };
            let mut digits = [0u8; 20];
            let start = digits_before(&mut digits, 20, initial);
            if deadline == Deadline::Expired {
                return Counted::Value {
                    value: initial,
                    cas: 0,
                    ttl_s: -1,
                    created: true,
                };
            }
            let at = deadline.engine().unwrap_or(0);
            let slot = shard.insert_string(key, hash, &digits[start..], at, now_ms);
            if let Some(cas) = req.new_cas {
                shard.set_version(slot, cas);
            }
            // Like INCRBY on a missing key, then EXPIRE when the item got a deadline.
            notify(db, class::NEW, "new", key);
            notify(db, class::STRING, "incrby", key);
            if at != 0 {
                notify(db, class::GENERIC, "expire", key);
            }
            let e = shard.entry(slot);
            return Counted::Value {
                value: initial,
                cas: e.version(),
                ttl_s: ttl_s(e.expire_at_ms().unwrap_or(0), now_ms),
                created: true,
            };
        }
        Found::OtherType(_) => {
            return if req.create.is_some() {
                Counted::NotStored
            } else {
                Counted::NotFound
            };
        }
    };
    let e = shard.entry(slot);
    if req.compare_cas.is_some_and(|c| c != e.version()) {
        return Counted::Exists;
    }
    let Ok(value) = apply_delta(e.string().unwrap_or_default(), req.op, req.delta) else {
        return Counted::NonNumeric;
    };
    let mut digits = [0u8; 20];
    let start = digits_before(&mut digits, 20, value);
    let before_ms = e.expire_at_ms().unwrap_or(0);
    shard.set_string(slot, &digits[start..]);
    shard.touch(slot, now_ms);
    // memcached's decr raises INCRBY's event too, as RESP DECR does.
    notify(db, class::STRING, "incrby", key);
    if let Some(d) = req.ttl {
        notify_deadline(db, key, before_ms, d);
    }
    match req.ttl {
        Some(Deadline::Expired) => {
            let cas = shard.remove(slot).version();
            return Counted::Value {
                value,
                cas,
                ttl_s: -1,
                created: false,
            };
        }
        Some(d) => shard.set_expire_keep_version(slot, d.engine()),
        None => {}
    }
    if let Some(cas) = req.new_cas {
        shard.set_version(slot, cas);
    }
    let e = shard.entry(slot);
    Counted::Value {
        value,
        cas: e.version(),
        ttl_s: ttl_s(e.expire_at_ms().unwrap_or(0), now_ms),
        created: false,
    }
}
