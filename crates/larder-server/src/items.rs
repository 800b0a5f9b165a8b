//! Item operations: the engine operations behind every memcached command (text, meta and
//! binary) and the HTTP door's key API (`GET`/`PUT`/`DELETE /v1/kv/{key}`, whose ETag is the
//! item's CAS), so that neither door has a copy of string semantics of its own. Each one
//! locks the key's shard, does its work and unlocks; none does I/O or knows a wire format, so
//! they are tested here without sockets.
//!
//! The memcached view of the keyspace: a key holding a string is an item (its client flags
//! are the entry's flags, its CAS the entry's version); a key holding any other type is
//! invisible, answered as a miss, except that commands that would create the item over it
//! (add, binary incr/decr with an initial value, `ma N`, `mg N`) answer "not stored" rather
//! than destroy the other value, and `set` replaces it as RESP `SET` does. A store whose
//! exptime is already past succeeds and leaves the key absent.
//!
//! Every write raises the Redis keyspace notifications of its RESP equivalent, in database 0,
//! under the shard lock: a store `new` (when it created the key), `set`, and `expire` when it
//! gave a deadline; append/prepend `append`; incr/decr `incrby`; a delete `del`. A new deadline
//! raises what GETEX's would: `expire`, `persist` (exptime 0 on an item that had one), or `del`
//! when it is already past and removes the item. flush_all raises none, as FLUSHALL.
//!
//! For the append-only log and replicas, a write is recorded as its result, never as the
//! request (memcached's incr wraps, its relative exptimes drift): when an operation changed
//! its key, the shard records `SET key value [PXAT ms]` with the item's version and flags, or
//! `DEL key` (see [`Locked`]).
//!
//! This file holds what every operation shares: the item's view of an entry, deadlines, the
//! locked shard that records the change, lookup and notifications. The operations are one
//! file per family: `read.rs` (get, touch, meta get), `store.rs` (set and its modes),
//! `delete.rs` (delete, meta delete, flush_all) and `arith.rs` (incr/decr).

mod arith;
mod delete;
mod read;
mod store;

use larder_commands::config::Param;
use larder_commands::Server;
use larder_engine::feed::{self, class};
use larder_engine::{Db, Entry, Shard, ShardRef, SlotId};
use larder_memcache::{resolve_exptime, Expiry, MetaItem, RELATIVE_EXPTIME_MAX_S};

pub use self::arith::{arith, Arith, Counted};
pub use self::delete::{delete, flush, Delete, DeleteOutcome};
pub use self::read::{footprint, meta_get, read, touch, Access, MetaGetOpts, Read};
pub use self::store::{store, Store, StoreOutcome};

/// Item state bit: read since the last store (mg `h`, me `fetch=`).
pub const FETCHED: u8 = 1;
/// Item state bit: marked stale by `md I` or by `ms I` with an older CAS (mg `X`).
pub const STALE: u8 = 2;
/// Item state bit: an mg already won the right to recache it (mg `Z`).
pub const WIN_SENT: u8 = 4;
/// Item state bit: stored by `ms` with a base64 key (returned keys are base64 too).
pub const KEY_BINARY: u8 = 8;

/// When an item expires, in the engine's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Never expires.
    Never,
    /// Expires at this unix time in milliseconds (always after the `now` it was made at).
    AtMs(u64),
    /// Already expired: a store succeeds but leaves nothing visible.
    Expired,
}

impl Deadline {
    /// memcached's exptime rules ([`resolve_exptime`]): 0 never, negative already expired,
    /// up to 30 days relative, larger an absolute unix time. Relative times count from
    /// `now_ms` to the millisecond, so that a memcached TTL and a RESP `PTTL` agree.
    pub fn from_exptime(exptime: i64, now_ms: u64) -> Deadline {
        if (1..=RELATIVE_EXPTIME_MAX_S).contains(&exptime) {
            return Deadline::AtMs(now_ms + exptime.unsigned_abs() * 1000);
        }
        match resolve_exptime(exptime, now_ms / 1000) {
            Expiry::Never => Deadline::Never,
            Expiry::Expired => Deadline::Expired,
            Expiry::At { unix_s } => Deadline::AtMs(unix_s.saturating_mul(1000)),
        }
    }

    /// The engine deadline for a live item (`None`: no deadline); `None` for `Expired` too,
    /// which callers handle before storing.
    fn engine(self) -> Option<u64> {
        match self {
            Deadline::AtMs(at) => Some(at),
            Deadline::Never | Deadline::Expired => None,
        }
    }
}

/// Before a store, as the RESP door does before a command (`exec.rs`): over maxmemory,
/// evict by `maxmemory-policy` (at most 64 keys per request, so a large overshoot is worked
/// off over several requests). Returns true when memory is still over the limit and nothing
/// could be evicted (noeviction, or no candidate left): the store is refused.
pub fn out_of_memory(server: &Server, now_ms: u64) -> bool {
    const MAX_EVICT_PER_REQUEST: usize = 64;
    let max = server.config.num(Param::Maxmemory);
    if max <= 0 {
        return false;
    }
    let measure = || match (server.used_memory)() {
        0 => server.keyspace.used_bytes(),
        hooked => hooked,
    };
    let used = measure();
    if used as i64 <= max {
        return false;
    }
    let need = used - max as usize;
    let Some(policy) = larder_commands::config::eviction_policy(&server.config) else {
        return true;
    };
    let samples = server.config.num(Param::MaxmemorySamples).max(1) as usize;
    let e = server.keyspace.evict(
        policy,
        samples,
        now_ms,
        need,
        MAX_EVICT_PER_REQUEST,
        |_, _| {},
    );
    // Freed bytes are an estimate: when the candidates ran out first, measure again.
    e.exhausted && e.bytes < need && measure() as i64 > max
}

/// An item as a command sees it, borrowed from its locked shard.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    /// The value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// CAS unique (the entry's version).
    pub cas: u64,
    /// Deadline in unix ms, 0 for none.
    pub expire_at_ms: u64,
    /// LRU clock (seconds) of the last access before this request.
    pub access_s: u32,
    /// State bits before this request ([`FETCHED`], [`STALE`], [`WIN_SENT`], [`KEY_BINARY`]).
    pub state: u8,
}

impl<'a> Item<'a> {
    fn of(e: &'a Entry) -> Item<'a> {
        Item {
            value: e.string().unwrap_or_default(),
            flags: e.flags(),
            cas: e.version(),
            expire_at_ms: e.expire_at_ms().unwrap_or(0),
            access_s: e.access(),
            state: e.mc_state(),
        }
    }

    /// Remaining TTL in whole seconds, rounded up; -1 when the item never expires.
    pub fn ttl_s(&self, now_ms: u64) -> i64 {
        ttl_s(self.expire_at_ms, now_ms)
    }

    /// What the meta return flags need.
    pub fn meta(&self, now_ms: u64) -> MetaItem {
        MetaItem {
            client_flags: self.flags,
            cas: self.cas,
            size: self.value.len(),
            ttl_s: self.ttl_s(now_ms),
            last_access_s: u64::from(
                larder_engine::lru_clock(now_ms).saturating_sub(self.access_s),
            ),
            fetched: self.state & FETCHED != 0,
            key_binary: self.state & KEY_BINARY != 0,
        }
    }
}

fn ttl_s(expire_at_ms: u64, now_ms: u64) -> i64 {
    if expire_at_ms == 0 {
        return -1;
    }
    let left_ms = expire_at_ms.saturating_sub(now_ms);
    i64::try_from(left_ms.div_ceil(1000)).unwrap_or(i64::MAX)
}

/// Raise keyspace notification `event` of `class` for `key` in database 0, the memcached
/// door's. Call it with the key's shard locked, after the change it announces.
#[inline]
fn notify(db: &Db, class: u32, event: &'static str, key: &[u8]) {
    db.feed().notice(class, event, 0, key);
}

/// The notification of a new deadline `deadline` given to `key`, whose deadline was
/// `before_ms` (0: none), as GETEX raises it: `expire`, `persist`, or `del` for a past one
/// (the caller removes the item).
fn notify_deadline(db: &Db, key: &[u8], before_ms: u64, deadline: Deadline) {
    match deadline {
        Deadline::AtMs(_) => notify(db, class::GENERIC, "expire", key),
        Deadline::Never if before_ms != 0 => notify(db, class::GENERIC, "persist", key),
        Deadline::Never => {}
        Deadline::Expired => notify(db, class::GENERIC, "del", key),
    }
}

/// The notifications of a string written whole with `deadline` (RESP SET's): `set`, then
/// `expire` when it has a deadline.
fn notify_set(db: &Db, key: &[u8], deadline: Deadline) {
    notify(db, class::STRING, "set", key);
    if let Deadline::AtMs(_) = deadline {
        notify(db, class::GENERIC, "expire", key);
    }
}

/// What a key holds, from the memcached door's point of view.
enum Found {
    /// A live string.
    Hit(SlotId),
    /// Nothing live; `expired` when an expired item was found (and removed) on the way.
    Miss { expired: bool },
    /// A live key of another type.
    OtherType(SlotId),
}

/// A key's shard, locked for one memcached operation. When the lock goes, if the operation
/// changed anything and the feed records commands, it records what replays the change: the
/// key's resulting value (`SET key value [PXAT ms]`, version and flags) or its removal.
struct Locked<'a> {
    shard: ShardRef<'a>,
    key: &'a [u8],
    hash: u64,
    since: usize,
}

fn lock<'a>(db: &'a Db, key: &'a [u8]) -> (Locked<'a>, u64) {
    let (shard, hash) = db.lock_key(key);
    let locked = Locked {
        shard,
        key,
        hash,
        since: feed::data_changes(),
    };
    (locked, hash)
}

impl std::ops::Deref for Locked<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        &self.shard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.shard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let shard = &*self.shard;
        if !shard.feed().records_commands() || feed::data_changes() == self.since {
            return;
        }
        match shard.find_raw(self.key, self.hash) {
            Some(slot) if shard.entry(slot).string().is_some() => shard.record_state(slot),
            // Only a string's changes are the door's; a collection left in place was not
            // touched by it (the changes were a lazy expiry's, logged on their own).
            Some(_) => {}
            None => shard.feed().command_now(
                shard.db_index(),
                larder_engine::Argv::new(&[b"DEL".as_slice(), self.key]),
                None,
            ),
        }
    }
}

/// Looks a key up, removing it if it has expired (lazy expiry, as `Shard::find` does).
fn lookup(shard: &mut Shard, key: &[u8], hash: u64, now_ms: u64) -> Found {
    let Some(slot) = shard.find_raw(key, hash) else {
        return Found::Miss { expired: false };
    };
    let e = shard.entry(slot);
    if e.is_expired(now_ms) {
        shard.remove(slot);
        return Found::Miss { expired: true };
    }
    if e.string().is_none() {
        return Found::OtherType(slot);
    }
    Found::Hit(slot)
}

#[cfg(test)]
mod tests;
