//! Stores: set, add, replace, append, prepend and cas (and the meta `ms` modes over them),
//! with their conditions on what the key holds. Apart from `items.rs` because the store modes
//! and their CAS rules are a unit a reader checks against memcached's `do_store_item`.

use larder_engine::feed::class;
use larder_engine::{Db, Shard, SlotId};
use larder_memcache::{Limits, StoreMode};

use super::{lock, lookup, notify, notify_set, Deadline, Found, KEY_BINARY, STALE, WIN_SENT};

/// A store request, from any protocol.
#[derive(Clone, Copy, Debug)]
pub struct Store<'a> {
    /// How to store.
    pub mode: StoreMode,
    /// The value (or the part to append/prepend).
    pub data: &'a [u8],
    /// Client flags (ignored by append/prepend).
    pub flags: u32,
    /// The new deadline (ignored by append/prepend).
    pub deadline: Deadline,
    /// The CAS to compare: used by `Cas`, `Append` and `Prepend`.
    pub compare_cas: Option<u64>,
    /// meta `E`: the CAS the stored item gets instead of a fresh one.
    pub new_cas: Option<u64>,
    /// meta `I`: a CAS store with an older CAS stores the value as stale instead of failing.
    pub invalidate: bool,
    /// meta `b`: the key was sent in base64.
    pub binary_key: bool,
    /// memcached's `-I`: an append/prepend whose joined item would not fit under it
    /// ([`Limits::item_fits`]) is not stored.
    pub item_size_max: usize,
}

/// The outcome of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Stored; the item's new CAS (0 when the deadline had already passed and nothing is
    /// visible).
    Stored { cas: u64 },
    /// The mode's condition failed (add on a live item, replace/append/prepend on a missing
    /// one, an append past the size limit, or a create over another type).
    NotStored,
    /// The CAS differs.
    Exists,
    /// A CAS store on a missing item.
    NotFound,
}

/// Stores an item as memcached's `do_store_item` does.
pub fn store(db: &Db, key: &[u8], now_ms: u64, req: &Store<'_>) -> StoreOutcome {
    let (mut shard, hash) = lock(db, key);
    let found = lookup(&mut shard, key, hash, now_ms);
    let hit = match found {
        Found::Hit(slot) => Some(slot),
        _ => None,
    };
    match req.mode {
        StoreMode::Set => match found {
            Found::Hit(slot) | Found::OtherType(slot) => {
                replace(db, &mut shard, key, slot, now_ms, req)
            }
            Found::Miss { .. } => insert(db, &mut shard, key, hash, now_ms, req),
        },
        StoreMode::Add => match found {
            Found::Miss { .. } => insert(db, &mut shard, key, hash, now_ms, req),
            _ => StoreOutcome::NotStored,
        },
        StoreMode::Replace => match hit {
            Some(slot) => replace(db, &mut shard, key, slot, now_ms, req),
            None => StoreOutcome::NotStored,
        },
        StoreMode::Append | StoreMode::Prepend => {
            let Some(slot) = hit else {
                return StoreOutcome::NotStored;
            };
            let e = shard.entry(slot);
            if req.compare_cas.is_some_and(|c| c != e.version()) {
                return StoreOutcome::Exists;
            }
            // memcached allocates the joined item under the old item's flags; one over the
            // size limit is not stored.
            let len = e.string().map_or(0, <[u8]>::len);
            let limits = Limits {
                item_size_max: req.item_size_max,
                ..Limits::default()
            };
            if !limits.item_fits(key.len(), e.flags(), len.saturating_add(req.data.len())) {
                return StoreOutcome::NotStored;
            }
            let append = req.mode == StoreMode::Append;
            shard.update_string(slot, |v| {
                if append {
                    v.extend_from_slice(req.data);
                } else {
                    v.splice(0..0, req.data.iter().copied());
                }
            });
            shard.touch(slot, now_ms);
            // Prepend has no Redis counterpart; it raises APPEND's event.
            notify(db, class::STRING, "append", key);
            finish(&mut shard, slot, req, 0)
        }
        StoreMode::Cas => {
            let Some(slot) = hit else {
                return StoreOutcome::NotFound;
            };
            let e = shard.entry(slot);
            let cas = e.version();
            match req.compare_cas {
                Some(c) if c == cas => replace(db, &mut shard, key, slot, now_ms, req),
                Some(c) if req.invalidate && c < cas => {
                    // memcached stores the value but keeps the item's deadline and its
                    // win state, and marks it stale.
                    let keep = e.mc_state() & WIN_SENT;
                    shard.set_string(slot, req.data);
                    shard.set_flags(slot, req.flags);
                    shard.touch(slot, now_ms);
                    notify(db, class::STRING, "set", key);
                    finish(&mut shard, slot, req, keep | STALE)
                }
                _ => StoreOutcome::Exists,
            }
        }
    }
}

/// A new item under an absent key. One already expired stores nothing and raises nothing.
fn insert(
    db: &Db,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
    now_ms: u64,
    req: &Store<'_>,
) -> StoreOutcome {
    if req.deadline == Deadline::Expired {
        return StoreOutcome::Stored { cas: 0 };
    }
    let at = req.deadline.engine().unwrap_or(0);
    let slot = shard.insert_string(key, hash, req.data, at, now_ms);
    shard.set_flags(slot, req.flags);
    notify(db, class::NEW, "new", key);
    notify_set(db, key, req.deadline);
    finish(shard, slot, req, 0)
}

/// A new value, flags and deadline for a live key. One already expired removes the key and
/// raises `del`, as a past deadline does in EXPIRE or GETEX.
fn replace(
    db: &Db,
    shard: &mut Shard,
    key: &[u8],
    slot: SlotId,
    now_ms: u64,
    req: &Store<'_>,
) -> StoreOutcome {
    if req.deadline == Deadline::Expired {
        shard.remove(slot);
        notify(db, class::GENERIC, "del", key);
        return StoreOutcome::Stored { cas: 0 };
    }
    shard.set_string(slot, req.data);
    shard.set_flags(slot, req.flags);
    shard.touch(slot, now_ms);
    let at = req.deadline.engine();
    if shard.entry(slot).expire_at_ms() != at {
        shard.set_expire(slot, at);
    }
    notify_set(db, key, req.deadline);
    finish(shard, slot, req, 0)
}

/// The explicit CAS and the state bits of a stored item; returns its CAS.
fn finish(shard: &mut Shard, slot: SlotId, req: &Store<'_>, mut state: u8) -> StoreOutcome {
    if let Some(cas) = req.new_cas {
        shard.set_version(slot, cas);
    }
    if req.binary_key {
        state |= KEY_BINARY;
    }
    if state != 0 {
        shard.set_mc_state(slot, state);
    }
    StoreOutcome::Stored {
        cas: shard.entry(slot).version(),
    }
}
