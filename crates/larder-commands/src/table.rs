//! The command table: name, arity, flags, key positions and handler for every command, and the
//! registry that finds a command by name.

use crate::exec::Cmd;
pub use crate::locks::Scope;

/// A command handler. It reads its arguments through `cmd.args`, runs shard-local engine
/// operations, and writes its reply to `cmd.out`. It must not write anything before returning
/// an `Err` (the executor writes the error reply).
pub type Handler = fn(&mut Cmd<'_>) -> crate::error::Result<()>;

/// Command flags, as COMMAND INFO reports them.
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MULTI: u32 = 1 << 14;
    pub const MOVABLE_KEYS: u32 = 1 << 15;
    pub const ALLOW_BUSY: u32 = 1 << 16;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    /// Refused while a replica loads its master's snapshot asynchronously, in Redis; larder
    /// has no such loading, so the flag only describes the command as Redis does.
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;

    /// Names in COMMAND INFO order.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
    ];
}

/// Redis's command groups (COMMAND DOCS `group`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Generic,
    String,
    List,
    Connection,
    Server,
    Keyspace,
    Transactions,
    Pubsub,
    Hash,
    Set,
    SortedSet,
    Bitmap,
    Hyperloglog,
    Geo,
    Stream,
    Scripting,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Generic | Group::Keyspace => "generic",
            Group::String => "string",
            Group::List => "list",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Transactions => "transactions",
            Group::Pubsub => "pubsub",
            Group::Hash => "hash",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Bitmap => "bitmap",
            Group::Hyperloglog => "hyperloglog",
            Group::Geo => "geo",
            Group::Stream => "stream",
            Group::Scripting => "scripting",
        }
    }

    /// ACL category of the group (COMMAND INFO).
    pub fn acl_category(self) -> &'static str {
        match self {
            Group::Generic | Group::Keyspace => "@keyspace",
            Group::String => "@string",
            Group::List => "@list",
            Group::Connection => "@connection",
            Group::Server => "@admin",
            Group::Transactions => "@transaction",
            Group::Pubsub => "@pubsub",
            Group::Hash => "@hash",
            Group::Set => "@set",
            Group::SortedSet => "@sortedset",
            Group::Bitmap => "@bitmap",
            Group::Hyperloglog => "@hyperloglog",
            Group::Geo => "@geo",
            Group::Stream => "@stream",
            Group::Scripting => "@scripting",
        }
    }
}

/// Where a command's keys are: positions in argv (1-based; `last` negative counts from the
/// end, -1 = last argument), and the step between keys. `first == 0` means no keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    pub first: i32,
    pub last: i32,
    pub step: i32,
    /// What the executor locks for the command (see `locks.rs`).
    pub scope: Scope,
}

impl KeySpec {
    pub const NONE: KeySpec = KeySpec {
        first: 0,
        last: 0,
        step: 0,
        scope: Scope::Keys,
    };
    pub const ONE: KeySpec = KeySpec {
        first: 1,
        last: 1,
        step: 1,
        scope: Scope::Keys,
    };
    pub const TWO: KeySpec = KeySpec {
        first: 1,
        last: 2,
        step: 1,
        scope: Scope::Keys,
    };
    pub const ALL: KeySpec = KeySpec {
        first: 1,
        last: -1,
        step: 1,
        scope: Scope::Keys,
    };
    pub const PAIRS: KeySpec = KeySpec {
        first: 1,
        last: -1,
        step: 2,
        scope: Scope::Keys,
    };

    /// This spec with another scope.
    pub const fn with_scope(self, scope: Scope) -> KeySpec {
        KeySpec { scope, ..self }
    }

    /// How many key arguments a request of `argc` arguments has under this spec (the key
    /// positions only; a `NumKeys` scope adds more).
    #[inline]
    pub fn key_count(&self, argc: usize) -> usize {
        if self.first <= 0 || argc <= self.first as usize {
            return 0;
        }
        let last = if self.last < 0 {
            argc as i32 + self.last
        } else {
            self.last.min(argc as i32 - 1)
        };
        if last < self.first {
            return 0;
        }
        ((last - self.first) / self.step.max(1) + 1) as usize
    }

    /// The key arguments of `argv` under this spec.
    pub fn keys<'a>(&self, argv: &[&'a [u8]]) -> Vec<&'a [u8]> {
        self.key_iter(argv).collect()
    }

    /// [`KeySpec::keys`] without collecting them.
    pub fn key_iter<'a, 'b>(&self, argv: &'b [&'a [u8]]) -> impl Iterator<Item = &'a [u8]> + 'b {
        let (first, last) = if self.first <= 0 || argv.len() <= self.first as usize {
            (1, 0)
        } else if self.last < 0 {
            (self.first, argv.len() as i32 + self.last)
        } else {
            (self.first, self.last.min(argv.len() as i32 - 1))
        };
        (first..=last)
            .step_by(self.step.max(1) as usize)
            .map(move |i| argv[i as usize])
    }
}

/// One command (or subcommand) in the table.
pub struct CommandSpec {
    /// Lower-case name; for a subcommand, just the subcommand ("kill").
    pub name: &'static str,
    /// Redis convention: N = exactly N arguments including the name, -N = at least N.
    pub arity: i32,
    pub flags: u32,
    pub keys: KeySpec,
    pub group: Group,
    /// One-line summary (COMMAND DOCS).
    pub summary: &'static str,
    /// First Redis version with the command (COMMAND DOCS `since`).
    pub since: &'static str,
    pub handler: Handler,
    /// Subcommands of a container command (CLIENT, CONFIG, ...). A container's own handler
    /// is not called.
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    /// A command without subcommands (the families' table helpers build on this).
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u32,
        keys: KeySpec,
        group: Group,
        summary: &'static str,
        since: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags,
            keys,
            group,
            summary,
            since,
            handler,
            subcommands: &[],
        }
    }

    /// Whether `argc` arguments satisfy the arity.
    #[inline]
    pub fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= (-self.arity) as usize
        }
    }

    #[inline]
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Find a subcommand by name (case-insensitive).
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        self.subcommands
            .iter()
            .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
    }
}

/// A command found for a request: the spec that runs, and its index in the stats table.
#[derive(Clone, Copy)]
pub struct Resolved {
    pub spec: &'static CommandSpec,
    pub stat_index: usize,
    /// "get", or "client|kill" for subcommands.
    pub full_name: &'static str,
    /// Whether `spec` is a subcommand (its handler's arguments start after argv[1]).
    pub is_sub: bool,
}

/// An ASCII name of at most 16 bytes lower-cased into two little-endian words, zero-padded
/// (so equal words mean equal names only for names of equal length); `None` for a longer
/// name or one with a byte of 0x80 or more, which no command name has.
fn name_words(name: &[u8]) -> Option<[u64; 2]> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if name.len() > 16 {
        return None;
    }
    // Byte by byte rather than a copy into a buffer: names are a few bytes, and the copy
    // of a length not known at compile time is a call to `memcpy`.
    let mut words = [0u64; 2];
    for (i, &b) in name.iter().enumerate() {
        words[i / 8] |= u64::from(b) << (8 * (i % 8));
    }
    let lower = |x: u64| {
        // With every byte below 0x80, adding up to 0x7f to each cannot carry into the
        // next: `x + (0x80 - c) * ONES` has a byte's high bit set where it is >= c.
        let at_least = |c: u64| x.wrapping_add((0x80 - c) * ONES) & HIGH;
        let upper = at_least(u64::from(b'A')) & !at_least(u64::from(b'Z') + 1);
        x | (upper >> 2)
    };
    if (words[0] | words[1]) & HIGH != 0 {
        return None;
    }
    Some(words.map(lower))
}

/// A bit index (0..32) for the first byte of a non-empty name, the same for both cases of a
/// letter.
fn first_letter(name: &[u8]) -> u32 {
    u32::from(name[0] | 0x20) & 31
}

/// All commands, by lower-case name.
pub struct Registry {
    /// hashbrown's default hasher (foldhash): this lookup runs once per command, and std's
    /// SipHash showed in a pipelined GET's profile.
    by_name: hashbrown::HashMap<&'static [u8], usize>,
    top: Vec<&'static CommandSpec>,
    /// Every command and subcommand with its full name; index = stats index.
    all: Vec<(String, &'static CommandSpec)>,
    /// Stats index of the first subcommand of each top-level command (or of itself).
    sub_base: Vec<usize>,
    full_names: Vec<&'static str>,
    /// Each top-level name as [`name_words`] has it (`None` past 16 bytes), for the hinted
    /// compare.
    words: Vec<Option<[u64; 2]>>,
    /// The blocking commands' names, and a bit per name length and per first letter among
    /// them, for [`Registry::may_block`].
    blocking: Vec<&'static [u8]>,
    blocking_lens: u32,
    blocking_firsts: u32,
}

impl Registry {
    /// Build from the families' tables.
    ///
    /// # Panics
    /// On a duplicate name: a broken invariant of the tables, caught by tests.
    pub fn new(tables: &[&'static [CommandSpec]]) -> Registry {
        let mut r = Registry {
            by_name: hashbrown::HashMap::new(),
            top: Vec::new(),
            all: Vec::new(),
            sub_base: Vec::new(),
            full_names: Vec::new(),
            words: Vec::new(),
            blocking: Vec::new(),
            blocking_lens: 0,
            blocking_firsts: 0,
        };
        for table in tables {
            for spec in table.iter() {
                let idx = r.top.len();
                assert!(
                    r.by_name.insert(spec.name.as_bytes(), idx).is_none(),
                    "dup {}",
                    spec.name
                );
                r.top.push(spec);
                r.words.push(name_words(spec.name.as_bytes()));
                if spec.has(flags::BLOCKING) {
                    let name = spec.name.as_bytes();
                    r.blocking.push(name);
                    r.blocking_lens |= 1 << name.len();
                    r.blocking_firsts |= 1 << first_letter(name);
                }
                r.sub_base.push(r.all.len());
                if spec.subcommands.is_empty() {
                    r.all.push((spec.name.to_string(), spec));
                } else {
                    for sub in spec.subcommands {
                        r.all.push((format!("{}|{}", spec.name, sub.name), sub));
                    }
                }
            }
        }
        // Leak the names once so that `Resolved` can hand out &'static str without allocating
        // per command.
        r.full_names = r
            .all
            .iter()
            .map(|(n, _)| &*Box::leak(n.clone().into_boxed_str()))
            .collect();
        r
    }

    /// Whether a request named `name` (any case) is a command that may block (BLPOP, XREAD,
    /// ...): a few instructions for the names of other lengths or first letters, as a
    /// pipeline's look-ahead asks this of every request.
    #[inline]
    pub fn may_block(&self, name: &[u8]) -> bool {
        if name.len() >= 32
            || self.blocking_lens & (1 << name.len()) == 0
            || self.blocking_firsts & (1 << first_letter(name)) == 0
        {
            return false;
        }
        self.blocking.iter().any(|b| b.eq_ignore_ascii_case(name))
    }

    /// Look up a top-level command by name (any case), without allocating.
    #[inline]
    pub fn top(&self, name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
        self.top_hinted(name, usize::MAX)
    }

    /// [`Registry::top`], trying the command at index `hint` first: a connection passes the
    /// one it ran last, since pipelines mostly repeat a command, and a case-insensitive
    /// compare of a few bytes is cheaper than hashing the lowered name.
    #[inline]
    pub fn top_hinted(&self, name: &[u8], hint: usize) -> Option<(usize, &'static CommandSpec)> {
        if let Some(&spec) = self.top.get(hint) {
            let same = match self.words[hint] {
                Some(words) => name.len() == spec.name.len() && name_words(name) == Some(words),
                None => spec.name.as_bytes().eq_ignore_ascii_case(name),
            };
            if same {
                return Some((hint, spec));
            }
        }
        let mut buf = [0u8; 32];
        if name.len() > buf.len() {
            return None;
        }
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        let &idx = self.by_name.get(&*lower)?;
        Some((idx, self.top[idx]))
    }

    /// Resolve argv to the spec that runs: the command, or its subcommand. Errors are the
    /// unknown-command / unknown-subcommand / arity replies.
    pub fn resolve(&self, argv: &[&[u8]]) -> Result<Resolved, crate::error::Error> {
        let mut no_hint = usize::MAX;
        self.resolve_hinted(argv, &mut no_hint)
    }

    /// [`Registry::resolve`] with the hint of [`Registry::top_hinted`], which it updates to
    /// the command found.
    pub fn resolve_hinted(
        &self,
        argv: &[&[u8]],
        hint: &mut usize,
    ) -> Result<Resolved, crate::error::Error> {
        let Some((idx, spec)) = self.top_hinted(argv[0], *hint) else {
            return Err(crate::error::unknown_command(argv));
        };
        *hint = idx;
        if spec.subcommands.is_empty() {
            let stat_index = self.sub_base[idx];
            if !spec.arity_ok(argv.len()) {
                return Err(crate::error::wrong_arity(spec.name));
            }
            return Ok(Resolved {
                spec,
                stat_index,
                full_name: self.full_names[stat_index],
                is_sub: false,
            });
        }
        if argv.len() < 2 {
            return Err(crate::error::wrong_arity(spec.name));
        }
        let Some(pos) = spec
            .subcommands
            .iter()
            .position(|s| s.name.as_bytes().eq_ignore_ascii_case(argv[1]))
        else {
            return Err(crate::error::unknown_subcommand(argv[1], spec.name));
        };
        let sub = &spec.subcommands[pos];
        let stat_index = self.sub_base[idx] + pos;
        if !sub.arity_ok(argv.len()) {
            return Err(crate::error::wrong_arity(self.full_names[stat_index]));
        }
        Ok(Resolved {
            spec: sub,
            stat_index,
            full_name: self.full_names[stat_index],
            is_sub: true,
        })
    }

    /// Stats index of a top-level command (its first subcommand for containers).
    pub fn stat_base(&self, top_index: usize) -> usize {
        self.sub_base[top_index]
    }

    /// Top-level commands in table order.
    pub fn commands(&self) -> &[&'static CommandSpec] {
        &self.top
    }

    /// Every command and subcommand with its full name, in stats-index order.
    pub fn all(&self) -> &[(String, &'static CommandSpec)] {
        &self.all
    }
}
