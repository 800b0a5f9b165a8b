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

use larder_commands::config::Param;
use larder_commands::Server;
use larder_engine::feed::{self, class};
use larder_engine::{Db, Entry, Shard, ShardRef, SlotId};
use larder_memcache::{
    apply_delta, resolve_exptime, CounterOp, Expiry, Limits, MetaItem, Recache, StoreMode,
    RELATIVE_EXPTIME_MAX_S,
};

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
                vec![b"DEL".to_vec(), self.key.to_vec()],
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
            let (digits, start) = decimal(initial);
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
    let (digits, start) = decimal(value);
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

/// The decimal digits of `v`, right-aligned: `&buf[start..]`.
fn decimal(mut v: u64) -> ([u8; 20], usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return (buf, i);
        }
    }
}

/// Removes every key of the memcached database (flush_all).
pub fn flush(db: &Db) {
    drop(db.clear());
}

#[cfg(test)]
mod tests;
