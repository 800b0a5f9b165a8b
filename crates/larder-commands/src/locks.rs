//! How a command holds shards: the lock plan the executor takes before a handler runs, and
//! the guards handlers reach shards through ([`crate::exec::Cmd::shard_of`] and friends).
//!
//! Two ways to hold a shard:
//! - **planned**: before the handler runs, the executor locks every shard the command may
//!   touch, in one global order (database, then shard number), and opens one feed group. The
//!   handler borrows those shards; the group commits after the handler returns, while every
//!   shard is still locked, and then the locks are released. Multi-key commands, wide commands
//!   (FLUSHDB, SWAPDB, ...) and every command inside EXEC run this way, so their changes reach
//!   the feed as one group and no other client sees them half done.
//! - **on demand**: a single-key command outside a transaction locks its one shard when it
//!   asks for it; the shard's changes commit when the handler drops the guard (still locked).
//!
//! The plan comes from the command's key spec ([`Scope`]); a handler never asks for a shard
//! outside its plan (checked in debug builds; the command-table tests run every command).

use std::cell::{RefCell, RefMut};
use std::ops::{Deref, DerefMut};

use larder_engine::{Db, DbGuards, Keyspace, Shard, ShardRef, SHARDS_PER_DB};

use crate::table::KeySpec;

/// What a command may touch beyond its key arguments, so the executor can lock it first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The key arguments (from the key spec) in the selected database.
    Keys,
    /// Keys after a count: `argv[at]` says how many keys follow it (ZUNIONSTORE's, LMPOP's and
    /// EVAL's `numkeys`), plus the spec's own key positions (a destination).
    NumKeys { at: u8 },
    /// Every shard of the selected database, locked together (FLUSHDB).
    Db,
    /// Every shard of every database, locked together (FLUSHALL, SWAPDB).
    All,
    /// Every shard of the selected database, visited one at a time (KEYS, SCAN, DBSIZE,
    /// RANDOMKEY): planned only inside EXEC, where the visit must see the transaction's
    /// held shards; on its own such a command locks one shard at a time.
    WalkDb,
    /// The key arguments in the selected database and in another one named by an argument:
    /// `argv[at]` (MOVE), or the value after a `DB` option (COPY) when `at` is 0.
    OtherDb { at: u8 },
}

/// A set of `(db, shard)` pairs to lock, sorted and without duplicates once finished.
#[derive(Default, Debug)]
pub struct Plan {
    pub shards: Vec<(usize, usize)>,
    /// Every shard of every database: listing them is pointless.
    pub all: bool,
}

impl Plan {
    /// Add what a command with `spec` and `argv` (the whole request, name first) touches when
    /// `db` is selected.
    pub fn add(&mut self, spec: &KeySpec, argv: &[&[u8]], db: usize) {
        match spec.scope {
            Scope::All => self.all = true,
            Scope::Db | Scope::WalkDb => self.shards.extend((0..SHARDS_PER_DB).map(|s| (db, s))),
            Scope::OtherDb { at } => {
                let other = if at > 0 {
                    argv.get(usize::from(at)).copied()
                } else {
                    argv.iter()
                        .position(|a| a.eq_ignore_ascii_case(b"db"))
                        .and_then(|i| argv.get(i + 1).copied())
                };
                let other = other
                    .and_then(|a| std::str::from_utf8(a).ok())
                    .and_then(|a| a.parse::<usize>().ok());
                for key in spec.keys(argv) {
                    let shard = Db::route(key).0;
                    self.shards.push((db, shard));
                    if let Some(o) = other {
                        self.shards.push((o, shard));
                    }
                }
            }
            Scope::Keys => {
                for key in spec.keys(argv) {
                    self.shards.push((db, Db::route(key).0));
                }
            }
            Scope::NumKeys { at } => {
                for key in spec.keys(argv) {
                    self.shards.push((db, Db::route(key).0));
                }
                let at = usize::from(at);
                let n = argv
                    .get(at)
                    .and_then(|a| std::str::from_utf8(a).ok())
                    .and_then(|a| a.parse::<usize>().ok())
                    .unwrap_or(0);
                for key in argv.iter().skip(at + 1).take(n) {
                    self.shards.push((db, Db::route(key).0));
                }
            }
        }
    }

    /// Lock the plan in the global order. A database number past the last (an argument a
    /// handler will reject) is left out.
    pub fn lock<'k>(mut self, keyspace: &'k Keyspace) -> DbGuards<'k> {
        if self.all {
            self.shards = (0..keyspace.db_count())
                .flat_map(|d| (0..SHARDS_PER_DB).map(move |s| (d, s)))
                .collect();
        }
        self.shards.retain(|&(d, _)| d < keyspace.db_count());
        keyspace.lock_many(self.shards)
    }
}

/// The shards a planned command holds, lent to its handler one borrow at a time.
pub struct Held<'a> {
    /// Sorted by `(db, shard)`, as `lock_many` locked them.
    shards: Vec<((usize, usize), RefCell<&'a mut Shard>)>,
}

impl<'a> Held<'a> {
    /// Lend the shards of `guards` (which stay locked for as long as this lives).
    pub fn new(guards: &'a mut DbGuards<'_>) -> Held<'a> {
        let shards = guards
            .iter_keyed()
            .map(|(k, shard)| (k, RefCell::new(shard)))
            .collect();
        Held { shards }
    }

    /// The held shard `shard` of database `db`, if the plan has it.
    pub fn get(&self, db: usize, shard: usize) -> Option<RefMut<'_, &'a mut Shard>> {
        let i = self
            .shards
            .binary_search_by_key(&(db, shard), |(k, _)| *k)
            .ok()?;
        Some(self.shards[i].1.borrow_mut())
    }
}

/// A shard a handler is using: one it locked on demand, or one of its command's held ones.
pub enum ShardGuard<'a> {
    Own(ShardRef<'a>),
    Held(RefMut<'a, &'a mut Shard>),
}

impl Deref for ShardGuard<'_> {
    type Target = Shard;
    #[inline]
    fn deref(&self) -> &Shard {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Held(g) => g,
        }
    }
}

impl DerefMut for ShardGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Shard {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Held(g) => g,
        }
    }
}

/// The shards of a two-key command (RENAME, COPY, MOVE): one when both keys live in the same
/// shard.
pub enum Pair<'a> {
    Same(ShardGuard<'a>),
    Two {
        src: ShardGuard<'a>,
        dst: ShardGuard<'a>,
    },
}

impl Pair<'_> {
    pub fn src(&mut self) -> &mut Shard {
        match self {
            Pair::Same(s) => s,
            Pair::Two { src, .. } => src,
        }
    }

    pub fn dst(&mut self) -> &mut Shard {
        match self {
            Pair::Same(s) => s,
            Pair::Two { dst, .. } => dst,
        }
    }
}
