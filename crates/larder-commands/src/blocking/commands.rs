//! The blocking commands' table and handlers: BLPOP BRPOP. Each tries to serve from the first
//! of its keys that can, and otherwise waits ([`super::wait`]).

use larder_engine::feed::class;
use larder_engine::{Object, Shard, SlotId};

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// Keys from the first argument to the one before the timeout.
const KEYS_BEFORE_TIMEOUT: KeySpec = KeySpec {
    first: 1,
    last: -2,
    step: 1,
    scope: crate::locks::Scope::Keys,
};

/// The family's table. Arity, flags and key positions are Redis 7.0's.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("blpop", -3, WRITE | NOSCRIPT | BLOCKING, KEYS_BEFORE_TIMEOUT, Group::List,
        "Remove and get the first element in a list, or block until one is available", "2.0.0", blpop),
    CommandSpec::new("brpop", -3, WRITE | NOSCRIPT | BLOCKING, KEYS_BEFORE_TIMEOUT, Group::List,
        "Remove and get the last element in a list, or block until one is available", "2.0.0", brpop),
];

/// Which end of a list a pop takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// BLPOP key [key ...] timeout
fn blpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Head)
}

/// BRPOP key [key ...] timeout
fn brpop(c: &mut Cmd<'_>) -> Result<()> {
    pop(c, End::Tail)
}

/// The list at `slot`: `Ok(None)` when it holds another type and the client is woken to try
/// again (Redis 7.0 keeps waiting), WRONGTYPE on the first try.
fn list_at(c: &Cmd<'_>, shard: &Shard, slot: SlotId) -> Result<bool> {
    match shard.entry(slot).object() {
        Some(Object::List(_)) => Ok(true),
        _ if super::retrying(c) => Ok(false),
        _ => Err(Error::Static(error::WRONGTYPE)),
    }
}

fn pop(c: &mut Cmd<'_>, end: End) -> Result<()> {
    let argv = c.args.rest();
    let (keys, timeout) = argv.split_at(argv.len() - 1);
    let deadline = super::deadline_ms(timeout[0], c.now_ms)?;
    for &key in keys {
        let (mut shard, hash) = c.shard_of(key);
        let Some(slot) = shard.find_touch(key, hash, c.now_ms, c.access()) else {
            continue;
        };
        if !list_at(c, &shard, slot)? {
            continue;
        }
        super::done(c);
        let popped = shard.object_mut(slot, |o| match o {
            Object::List(l) => match end {
                End::Head => l.pop_front(),
                End::Tail => l.pop_back(),
            },
            _ => None,
        });
        // Stored lists are never empty, so a list pops an element.
        let Some(element) = popped else {
            return Err(Error::Static(error::WRONGTYPE));
        };
        let (event, replay): (&str, &[u8]) = match end {
            End::Head => ("lpop", b"LPOP"),
            End::Tail => ("rpop", b"RPOP"),
        };
        c.notify(class::LIST, event, key);
        if matches!(shard.entry(slot).object(), Some(Object::List(l)) if l.is_empty()) {
            shard.remove(slot);
            c.notify(class::GENERIC, "del", key);
        }
        drop(shard);
        c.propagate(&[replay, key]);
        c.out.array(2);
        c.out.bulk(key);
        c.out.bulk(&element);
        return Ok(());
    }
    super::wait(c, keys, deadline)
}
