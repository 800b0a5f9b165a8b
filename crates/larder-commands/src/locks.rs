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
//! outside its plan (checked in debug builds; `plan_tests` runs every command of the table).

use std::cell::{RefCell, RefMut};
use std::ops::{Deref, DerefMut};

use larder_engine::{Db, DbGuards, Shard, ShardRef, SHARDS_PER_DB};

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
    /// The key arguments, plus the argument after each option word in `words` (GEORADIUS's
    /// STORE and STOREDIST destinations, which sit among its options).
    AfterWords { words: &'static [&'static str] },
    /// A script's declared keys: `argv[at]` says how many follow it (EVAL's and FCALL's
    /// `numkeys`). A script locks its own shards (`script/run.rs`), so the executor plans
    /// nothing for it on its own; inside EXEC it plans every shard, because a script may
    /// reach keys it did not declare and a transaction cannot start again with more.
    Script { at: u8 },
    /// The keys after the first `STREAMS` word: the first half of the arguments that follow
    /// it (XREAD, XREADGROUP), which always run planned.
    Streams,
}

impl Scope {
    /// The arguments after an option word of an `AfterWords` scope, in `argv` (the whole
    /// request); none for the other scopes.
    pub fn option_keys<'a>(&self, argv: &[&'a [u8]]) -> Vec<&'a [u8]> {
        match self {
            Scope::AfterWords { words } => argv
                .windows(2)
                .filter(|w| {
                    words
                        .iter()
                        .any(|word| w[0].eq_ignore_ascii_case(word.as_bytes()))
                })
                .map(|w| w[1])
                .collect(),
            Scope::Streams => {
                let Some(at) = argv
                    .iter()
                    .skip(1)
                    .position(|a| a.eq_ignore_ascii_case(b"streams"))
                else {
                    return Vec::new();
                };
                let rest = &argv[at + 2..];
                rest[..rest.len() / 2].to_vec()
            }
            _ => Vec::new(),
        }
    }
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
            Scope::All | Scope::Script { .. } => self.all = true,
            Scope::Db | Scope::WalkDb => self.shards.extend((0..SHARDS_PER_DB).map(|s| (db, s))),
            Scope::OtherDb { at } => {
                let keys = spec.keys(argv);
                // `DB n` options come after the keys (a key may be named "db"); the handler
                // takes the last one, so every value that follows a `DB` there is planned.
                let others: Vec<usize> = if at > 0 {
                    argv.get(usize::from(at))
                        .and_then(|a| db_arg(a))
                        .into_iter()
                        .collect()
                } else {
                    let options = argv.get(1 + keys.len()..).unwrap_or_default();
                    options
                        .windows(2)
                        .filter(|w| w[0].eq_ignore_ascii_case(b"db"))
                        .filter_map(|w| db_arg(w[1]))
                        .collect()
                };
                for key in keys {
                    let shard = Db::route(key).0;
                    self.shards.push((db, shard));
                    self.shards.extend(others.iter().map(|&o| (o, shard)));
                }
            }
            Scope::Keys => {
                for key in spec.key_iter(argv) {
                    self.shards.push((db, Db::route(key).0));
                }
            }
            Scope::AfterWords { .. } | Scope::Streams => {
                for key in spec.key_iter(argv).chain(spec.scope.option_keys(argv)) {
                    self.shards.push((db, Db::route(key).0));
                }
            }
            Scope::NumKeys { at } => {
                for key in spec.key_iter(argv) {
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
}

/// A database index argument as SELECT, MOVE and COPY read it (a strict integer: no sign,
/// no leading zero), or `None` where they reject it. Not checked against the database count.
pub fn db_arg(arg: &[u8]) -> Option<usize> {
    crate::args::parse_i64(arg).and_then(|v| usize::try_from(v).ok())
}

/// The shards a planned command holds, lent to its handler one borrow at a time.
pub enum Held<'a> {
    /// Sorted by `(db, shard)`, as `lock_many` locked them.
    Many(Vec<((usize, usize), RefCell<&'a mut Shard>)>),
    /// The one shard of a single-key command (no allocation).
    One((usize, usize), RefCell<&'a mut Shard>),
}

impl<'a> Held<'a> {
    /// Lend the shards of `guards` (which stay locked for as long as this lives).
    pub fn new(guards: &'a mut DbGuards<'_>) -> Held<'a> {
        let shards = guards
            .iter_keyed()
            .map(|(k, shard)| (k, RefCell::new(shard)))
            .collect();
        Held::Many(shards)
    }

    /// Lend some locked shards, sorted by `(db, shard)` (`DbGuards::subset`).
    pub fn from_shards(shards: Vec<((usize, usize), &'a mut Shard)>) -> Held<'a> {
        Held::Many(
            shards
                .into_iter()
                .map(|(k, shard)| (k, RefCell::new(shard)))
                .collect(),
        )
    }

    /// Lend one locked shard, `shard` of database `db`.
    pub fn one(db: usize, shard: usize, locked: &'a mut Shard) -> Held<'a> {
        Held::One((db, shard), RefCell::new(locked))
    }

    /// Whether the plan holds shard `shard` of database `db`.
    pub fn contains(&self, db: usize, shard: usize) -> bool {
        match self {
            Held::One(k, _) => *k == (db, shard),
            Held::Many(shards) => shards
                .binary_search_by_key(&(db, shard), |(k, _)| *k)
                .is_ok(),
        }
    }

    /// The held shard `shard` of database `db`, if the plan has it.
    pub fn get(&self, db: usize, shard: usize) -> Option<RefMut<'_, &'a mut Shard>> {
        match self {
            Held::One(k, s) => (*k == (db, shard)).then(|| s.borrow_mut()),
            Held::Many(shards) => {
                let i = shards
                    .binary_search_by_key(&(db, shard), |(k, _)| *k)
                    .ok()?;
                Some(shards[i].1.borrow_mut())
            }
        }
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

#[cfg(test)]
mod tests {
    use larder_engine::Db;

    use super::Plan;
    use crate::testing::*;

    fn plan(argv: &[&str], db: usize) -> Vec<(usize, usize)> {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let resolved = crate::registry().resolve(&argv).expect("a known command");
        let mut p = Plan::default();
        p.add(&resolved.spec.keys, &argv, db);
        p.shards.sort_unstable();
        p.shards.dedup();
        p.shards
    }

    fn shard(key: &str) -> usize {
        Db::route(key.as_bytes()).0
    }

    /// COPY's `DB n` is read after its two keys, and every one is planned (the last wins): a
    /// key named "db" used to be taken for the option, leaving the destination database out
    /// of the plan, so the handler locked it on demand, out of the global order.
    #[test]
    fn copy_plans_the_db_options_after_its_keys() {
        let (db, x) = (shard("db"), shard("x"));
        let mut want = vec![(1, db), (1, x), (0, db), (0, x)];
        want.sort_unstable();
        want.dedup();
        assert_eq!(plan(&["COPY", "db", "x", "DB", "0"], 1), want);
        let mut want = vec![(0, shard("1")), (0, shard("y"))];
        for d in [1, 5] {
            want.extend([(d, shard("1")), (d, shard("y"))]);
        }
        want.sort_unstable();
        want.dedup();
        assert_eq!(
            plan(&["COPY", "1", "y", "DB", "1", "REPLACE", "DB", "5"], 0),
            want
        );
        // Values SELECT would reject are no database.
        assert_eq!(
            plan(&["COPY", "a", "b", "DB", "01"], 0),
            plan(&["COPY", "a", "b"], 0)
        );
        assert_eq!(
            plan(&["MOVE", "a", "+2"], 0),
            plan(&["COPY", "a", "a", "REPLACE"], 0)
        );
    }

    /// The same through the executor (a shard missing from the plan is a debug assertion).
    #[test]
    fn copy_with_keys_named_like_options() {
        let mut h = Harness::new();
        h.run(&["SELECT", "1"]);
        h.run(&["MSET", "db", "v", "1", "one"]);
        assert_eq!(h.run(&["COPY", "db", "x", "DB", "0"]), int(1));
        assert_eq!(h.run(&["COPY", "1", "db", "DB", "2"]), int(1));
        assert_eq!(h.run(&["COPY", "1", "y", "DB", "3", "DB", "4"]), int(1));
        h.run(&["SELECT", "0"]);
        assert_eq!(h.run(&["GET", "x"]), bulk("v"));
        h.run(&["SELECT", "2"]);
        assert_eq!(h.run(&["GET", "db"]), bulk("one"));
        h.run(&["SELECT", "4"]);
        assert_eq!(h.run(&["GET", "y"]), bulk("one"));
        assert_eq!(h.server.keyspace.db(3).len(), 0);
    }
}

#[cfg(test)]
mod plan_tests {
    use crate::testing::Harness;

    /// Requests that reach every handler's shard access: the realistic forms of the commands
    /// whose scope is more than their key arguments, then every command of the table with
    /// generic arguments.
    fn requests() -> Vec<Vec<String>> {
        let fixed: &[&str] = &[
            "SET k1 v",
            "RPUSH l1 a b",
            "MSET k1 a k2 b k3 c",
            "MGET k1 k2 k3",
            "MSETNX k4 a k5 b",
            "DEL k1 k2 nope",
            "EXISTS k1 k2",
            "TOUCH k1 k2",
            "RENAME k3 k6",
            "RENAMENX k6 k7",
            "COPY k7 k8",
            "COPY k7 k8 DB 2 REPLACE",
            "COPY db x DB 1",
            "MOVE k8 3",
            "LCS k7 k4",
            "KEYS *",
            "SCAN 0 COUNT 1000",
            "RANDOMKEY",
            "DBSIZE",
            "SWAPDB 0 1",
            "SWAPDB 1 0",
            "WATCH k1 k2",
            "UNWATCH",
            "FLUSHDB",
            "FLUSHALL",
        ];
        let mut all: Vec<Vec<String>> = fixed
            .iter()
            .map(|r| r.split(' ').map(String::from).collect())
            .collect();
        let registry = crate::registry();
        for (name, spec) in registry.all() {
            // Commands that end the connection, the process or the test's client state.
            if matches!(
                name.as_str(),
                "shutdown" | "quit" | "reset" | "client|kill" | "client|pause" | "client|reply"
            ) {
                continue;
            }
            let mut argv: Vec<String> = name.split('|').map(String::from).collect();
            let want = (spec.arity.unsigned_abs() as usize).max(argv.len() + 2);
            let mut i = 0;
            while argv.len() < want {
                argv.push(if i % 2 == 0 {
                    format!("k{i}")
                } else {
                    "1".into()
                });
                i += 1;
            }
            if spec.arity > 0 {
                argv.truncate(spec.arity as usize);
            }
            all.push(argv);
        }
        all
    }

    /// Every request runs alone and inside MULTI/EXEC without a handler asking for a shard
    /// outside its command's plan (a debug assertion in `Cmd::shard_at`), or a deadlock.
    #[test]
    fn every_command_stays_inside_its_plan() {
        let mut h = Harness::new();
        for argv in requests() {
            let args: Vec<&str> = argv.iter().map(String::as_str).collect();
            h.run_raw(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
            h.run(&["MULTI"]);
            h.run_raw(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
            h.run_raw(&[b"EXEC"]);
            h.conn.multi = None;
        }
    }
}
