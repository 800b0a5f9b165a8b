//! Deletes: delete, meta `md` with invalidate (`I`) and empty (`x`), and flush_all. Apart
//! from `items.rs` as one of the operation families over its shared lock and lookup.

use larder_engine::feed::class;
use larder_engine::Db;

use super::{lock, lookup, notify, notify_deadline, Deadline, Found, STALE, WIN_SENT};

/// The outcome of a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Removed (or, for `md I`/`md x`, invalidated or emptied).
    Deleted,
    /// No item.
    NotFound,
    /// The CAS differs.
    Exists,
}

/// The options of a delete; `Default` is a plain delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delete {
    /// Delete only an item with this CAS (binary header CAS, meta `C`).
    pub compare_cas: Option<u64>,
    /// meta `I`: keep the item, mark it stale, give it a new CAS.
    pub invalidate: bool,
    /// meta `T` (with `I` only): a new deadline.
    pub ttl: Option<Deadline>,
    /// meta `x`: keep the item, drop its value.
    pub remove_value: bool,
    /// meta `E`: the CAS an invalidated or emptied item gets.
    pub new_cas: Option<u64>,
}

/// Deletes, invalidates or empties an item.
pub fn delete(db: &Db, key: &[u8], now_ms: u64, req: &Delete) -> DeleteOutcome {
    let (mut shard, hash) = lock(db, key);
    let Found::Hit(slot) = lookup(&mut shard, key, hash, now_ms) else {
        return DeleteOutcome::NotFound;
    };
    let e = shard.entry(slot);
    if req.compare_cas.is_some_and(|c| c != e.version()) {
        return DeleteOutcome::Exists;
    }
    let state = e.mc_state();
    if req.invalidate {
        // A new version with everything else kept: re-setting the deadline is a write.
        // Invalidation itself has no Redis counterpart; only a new deadline is announced.
        let at = e.expire_at_ms();
        shard.set_expire(slot, at);
        match req.ttl {
            Some(Deadline::Expired) => {
                shard.remove(slot);
                notify(db, class::GENERIC, "del", key);
                return DeleteOutcome::Deleted;
            }
            Some(d) => {
                shard.set_expire_keep_version(slot, d.engine());
                notify_deadline(db, key, at.unwrap_or(0), d);
            }
            None => {}
        }
        if let Some(cas) = req.new_cas {
            shard.set_version(slot, cas);
        }
        shard.set_mc_state(slot, (state & !WIN_SENT) | STALE);
    } else if req.remove_value {
        // Like SET key "" KEEPTTL.
        shard.set_string(slot, b"");
        if let Some(cas) = req.new_cas {
            shard.set_version(slot, cas);
        }
        notify(db, class::STRING, "set", key);
    } else {
        shard.remove(slot);
        notify(db, class::GENERIC, "del", key);
    }
    DeleteOutcome::Deleted
}

/// Removes every key of the memcached database (flush_all).
pub fn flush(db: &Db) {
    drop(db.clear());
}
