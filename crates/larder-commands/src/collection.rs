//! What every collection family (lists, hashes, sets, sorted sets) does the same way: find a
//! key as its type (WRONGTYPE otherwise), change the value in place, and delete the key when a
//! command leaves the collection empty, raising Redis's events in Redis's order.

use larder_engine::feed::class;
use larder_engine::{Hash, List, Object, Set, Shard, SlotId, ZSet};

use crate::error::{self, Error, Result};
use crate::exec::Cmd;

/// A collection type as its `Object` variant holds it.
pub(crate) trait Collection {
    /// The keyspace-notification class of its events.
    const CLASS: u32;
    fn of(o: &Object) -> Option<&Self>;
    fn of_mut(o: &mut Object) -> Option<&mut Self>;
    fn is_empty(&self) -> bool;
}

macro_rules! collection {
    ($t:ty, $variant:ident, $class:expr) => {
        impl Collection for $t {
            const CLASS: u32 = $class;
            fn of(o: &Object) -> Option<&Self> {
                match o {
                    Object::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_mut(o: &mut Object) -> Option<&mut Self> {
                match o {
                    Object::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn is_empty(&self) -> bool {
                <$t>::is_empty(self)
            }
        }
    };
}

collection!(List, List, class::LIST);
collection!(Hash, Hash, class::HASH);
collection!(Set, Set, class::SET);
collection!(ZSet, ZSet, class::ZSET);

/// The collection held in `slot`, or WRONGTYPE.
pub(crate) fn at<T: Collection>(shard: &Shard, slot: SlotId) -> Result<&T> {
    shard
        .entry(slot)
        .object()
        .and_then(T::of)
        .ok_or(Error::Static(error::WRONGTYPE))
}

/// Find `key` for a write: `None` when absent, WRONGTYPE when it holds another type.
pub(crate) fn find<T: Collection>(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) => at::<T>(shard, slot).map(|_| Some(slot)),
        None => Ok(None),
    }
}

/// [`find`] for a read: counts a keyspace hit or miss as Redis's `lookupKeyRead` does
/// (before the type check).
pub(crate) fn read<T: Collection>(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<SlotId>> {
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    c.hit(found.is_some());
    match found {
        Some(slot) => at::<T>(shard, slot).map(|_| Some(slot)),
        None => Ok(None),
    }
}

/// [`read`], then the collection itself: `None` when the key is absent.
pub(crate) fn read_value<'s, T: Collection>(
    c: &Cmd<'_>,
    shard: &'s mut Shard,
    key: &[u8],
    hash: u64,
) -> Result<Option<&'s T>> {
    match read::<T>(c, shard, key, hash)? {
        Some(slot) => at::<T>(shard, slot).map(Some),
        None => Ok(None),
    }
}

/// A read of `key` as a `T` through `f` (a keyspace hit or miss counted), or `missing` when
/// the key is absent: the shape of LLEN, SCARD, SISMEMBER, ZCARD, ZSCORE and their kin.
pub(crate) fn read_with<T: Collection, R>(
    c: &Cmd<'_>,
    key: &[u8],
    missing: R,
    f: impl FnOnce(&T) -> R,
) -> Result<R> {
    let (mut shard, hash) = c.shard_of(key);
    match read::<T>(c, &mut shard, key, hash)? {
        Some(slot) => Ok(f(at::<T>(&shard, slot)?)),
        None => Ok(missing),
    }
}

/// Change the collection in `slot` through `f` (a write: new version, memory re-accounted).
/// The caller then [`settle`]s the key.
pub(crate) fn update<T: Collection, R>(
    shard: &mut Shard,
    slot: SlotId,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R> {
    at::<T>(shard, slot)?;
    shard
        .object_mut(slot, |o| T::of_mut(o).map(f))
        .ok_or(Error::Static(error::WRONGTYPE))
}

/// After a write to the collection at `slot`: raise the command's `event` (none when it
/// changed nothing), then delete the key if the collection is left empty, raising `del`.
pub(crate) fn settle<T: Collection>(
    c: &Cmd<'_>,
    shard: &mut Shard,
    key: &[u8],
    slot: SlotId,
    event: Option<&'static str>,
) {
    if let Some(event) = event {
        c.notify(T::CLASS, event, key);
    }
    let emptied = shard
        .entry(slot)
        .object()
        .and_then(T::of)
        .is_some_and(|v| v.is_empty());
    if emptied {
        shard.remove(slot);
        c.notify(class::GENERIC, "del", key);
    }
}

/// A store command's empty result (SINTERSTORE, ZUNIONSTORE, BITOP, SORT ... STORE, ...):
/// delete `key`, raising `del`, if it is there at all, even past its deadline, as Redis's
/// `dbDelete` does (it does not look at the deadline, so a key that just expired goes as a
/// `del`, not an `expired`).
pub(crate) fn delete_destination(c: &Cmd<'_>, shard: &mut Shard, key: &[u8], hash: u64) {
    if let Some(slot) = shard.find_raw(key, hash) {
        shard.remove(slot);
        c.notify(class::GENERIC, "del", key);
    }
}
