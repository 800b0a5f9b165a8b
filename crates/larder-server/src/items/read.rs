//! Reads: get and its variants (gat, touch, `me`), the meta get with its vivify and recache
//! rules, and the footprint peek. Apart from `items.rs` as one of the operation families over
//! its shared lock and lookup; the meta get's win and stale rules are most of it.

use larder_engine::feed::class;
use larder_engine::{Db, Shard, SlotId};
use larder_memcache::Recache;

use super::{
    lock, lookup, notify, notify_deadline, Deadline, Found, Item, FETCHED, STALE, WIN_SENT,
};

/// The outcome of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The item was there (and was passed to the callback).
    Hit,
    /// No item.
    Miss,
    /// No item: it had expired and was removed by this lookup.
    Expired,
}

impl Read {
    /// Whether the item was there.
    pub fn hit(self) -> bool {
        self == Read::Hit
    }
}

impl From<Found> for Read {
    fn from(f: Found) -> Read {
        match f {
            Found::Miss { expired: true } => Read::Expired,
            _ => Read::Miss,
        }
    }
}

/// Side effects of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A plain fetch: record the access and mark the item fetched (get, gets, binary GET).
    Fetch,
    /// A fetch that also sets a new deadline without changing the CAS (gat, gats, GAT,
    /// TOUCH, touch). An `Expired` deadline removes the item after the callback saw it.
    FetchAndTouch(Deadline),
    /// No side effects at all (`me`).
    Peek,
}

/// Reads `key` and calls `f` with the item on a hit. The callback runs under the shard lock,
/// so it can copy the value straight to the output buffer.
pub fn read(db: &Db, key: &[u8], now_ms: u64, access: Access, f: impl FnOnce(&Item<'_>)) -> Read {
    let (mut shard, hash) = lock(db, key);
    let slot = match lookup(&mut shard, key, hash, now_ms) {
        Found::Hit(slot) => slot,
        other => return other.into(),
    };
    let before = Item::of(shard.entry(slot));
    let (access_s, state, before_ms) = (before.access_s, before.state, before.expire_at_ms);
    let mut remove = false;
    let mut touched = None;
    match access {
        Access::Peek => {}
        Access::Fetch => bump(&mut shard, slot, now_ms),
        Access::FetchAndTouch(deadline) => {
            bump(&mut shard, slot, now_ms);
            match deadline {
                Deadline::Expired => remove = true,
                d => shard.set_expire_keep_version(slot, d.engine()),
            }
            touched = Some(deadline);
        }
    }
    f(&Item {
        access_s,
        state,
        ..Item::of(shard.entry(slot))
    });
    if remove {
        shard.remove(slot);
    }
    if let Some(deadline) = touched {
        notify_deadline(db, key, before_ms, deadline);
    }
    Read::Hit
}

/// The memory an item takes (`Entry::memory_bytes`: what its slab class is judged on), or
/// None when the key holds no live item. A peek: nothing about the item changes.
pub fn footprint(db: &Db, key: &[u8], now_ms: u64) -> Option<usize> {
    let (mut shard, hash) = lock(db, key);
    match lookup(&mut shard, key, hash, now_ms) {
        Found::Hit(slot) => Some(shard.entry(slot).memory_bytes()),
        _ => None,
    }
}

/// Records an access: the LRU clock and the fetched bit.
fn bump(shard: &mut Shard, slot: SlotId, now_ms: u64) {
    shard.touch(slot, now_ms);
    let state = shard.entry(slot).mc_state();
    if state & FETCHED == 0 {
        shard.set_mc_state(slot, state | FETCHED);
    }
}

/// Sets a new deadline without changing the CAS (touch, binary TOUCH). Returns the item's
/// flags and CAS, or `None` on a miss.
pub fn touch(db: &Db, key: &[u8], now_ms: u64, deadline: Deadline) -> Option<(u32, u64)> {
    let mut out = None;
    read(db, key, now_ms, Access::FetchAndTouch(deadline), |item| {
        out = Some((item.flags, item.cas));
    });
    out
}

/// The options of a meta get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaGetOpts {
    /// `T`: a new deadline (the CAS stays).
    pub ttl: Option<Deadline>,
    /// `N`: on a miss, create an empty item with this deadline and hand the win to the client.
    pub vivify: Option<Deadline>,
    /// `R`: win the recache when the item expires before this deadline.
    pub recache: Option<Deadline>,
    /// `u`: no access recorded, not marked fetched.
    pub no_bump: bool,
}

/// A meta get: the lookup, vivify on miss, the recache decision (see the crate's
/// `SEMANTICS.md`), `T`, and the access. Calls `f` with the item (state and access time as
/// they were before this request, deadline after `T`) and the recache flags on a hit.
pub fn meta_get(
    db: &Db,
    key: &[u8],
    now_ms: u64,
    opts: MetaGetOpts,
    f: impl FnOnce(&Item<'_>, Recache),
) -> Read {
    let (mut shard, hash) = lock(db, key);
    let (slot, created) = match lookup(&mut shard, key, hash, now_ms) {
        Found::Hit(slot) => (slot, false),
        Found::Miss { expired } => match opts.vivify {
            Some(deadline) => {
                // An already expired vivify deadline still creates the item, due at once,
                // as memcached does; the next lookup finds it expired.
                let at = match deadline {
                    Deadline::Expired => now_ms,
                    d => d.engine().unwrap_or(0),
                };
                let slot = shard.insert_string(key, hash, b"", at, now_ms);
                notify(db, class::NEW, "new", key);
                notify(db, class::STRING, "set", key);
                if at != 0 {
                    notify(db, class::GENERIC, "expire", key);
                }
                (slot, true)
            }
            None => return Found::Miss { expired }.into(),
        },
        other @ Found::OtherType(_) => return other.into(),
    };
    let before = Item::of(shard.entry(slot));
    let (access_s, state, before_ms) = (before.access_s, before.state, before.expire_at_ms);
    let win_sent = state & WIN_SENT != 0;
    let stale = state & STALE != 0;
    let mut won = created;
    if let (false, false, Some(r)) = (created, win_sent, opts.recache) {
        let at = before_ms;
        won = at != 0 && r.engine().is_some_and(|limit| at < limit);
    }
    if win_sent {
        won = false;
    } else if stale {
        won = true;
    }
    let mut new_state = state;
    if won {
        new_state |= WIN_SENT;
    }
    let mut remove = false;
    if let Some(deadline) = opts.ttl {
        match deadline {
            Deadline::Expired => remove = true,
            d => shard.set_expire_keep_version(slot, d.engine()),
        }
    }
    if !opts.no_bump {
        shard.touch(slot, now_ms);
        new_state |= FETCHED;
    }
    if new_state != state {
        shard.set_mc_state(slot, new_state);
    }
    f(
        &Item {
            access_s,
            state,
            ..Item::of(shard.entry(slot))
        },
        Recache {
            won,
            stale,
            win_sent,
        },
    );
    if remove {
        shard.remove(slot);
    }
    if let Some(deadline) = opts.ttl {
        notify_deadline(db, key, before_ms, deadline);
    }
    Read::Hit
}
