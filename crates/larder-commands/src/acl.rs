//! Access control lists: users, their passwords and permissions, and the checks the executor
//! and every door make before a command runs (Redis 7.0 semantics).
//!
//! A [`User`] is immutable: ACL SETUSER builds a new one from a copy of the old rules and
//! swaps it in, and connections notice through [`Acl::generation`]. The rules themselves are in
//! `rules` (parsing, ACL LIST form), key patterns compile into `matcher`'s sets, categories and
//! the command ids rules use are in `categories`, ACL LOG in `log`, the ACL command in
//! `commands` and ACL files in `file`.

pub mod categories;
pub mod commands;
pub mod file;
pub mod keys;
pub mod log;
pub mod matcher;
pub mod rules;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::Error;
use crate::exec::ConnState;
use crate::state::{ClientHandle, Server};
use crate::table::{flags, Registry, Resolved};
use categories::CommandIndex;
use matcher::SelectorKeys;
use rules::{flag, Rules, Selector};

/// What a key is used for, as Redis derives it from a key spec's logical flags: ACCESS needs
/// read permission, INSERT/DELETE/UPDATE need write permission (`%R~`, `%W~`, `~`).
pub mod access {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
}

/// Every user, shared by all connections and doors.
pub struct Acl {
    index: CommandIndex,
    /// By name, in the byte order ACL LIST and ACL USERS show them.
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    default: RwLock<Arc<User>>,
    generation: AtomicU64,
    auth_required: AtomicBool,
    log: Mutex<log::Log>,
    /// `acllog-max-len`.
    log_max_len: AtomicUsize,
}

impl Acl {
    /// The default user alone: `user default on nopass ~* &* +@all`, with commands named by
    /// `registry`'s ids.
    pub fn new(registry: &Registry) -> Acl {
        let index = CommandIndex::new(registry);
        let default = Arc::new(User::new("default", Rules::default_user(&index)));
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), default.clone());
        Acl {
            index,
            users: RwLock::new(users),
            default: RwLock::new(default),
            generation: AtomicU64::new(0),
            auth_required: AtomicBool::new(false),
            log: Mutex::new(log::Log::default()),
            log_max_len: AtomicUsize::new(128),
        }
    }

    /// Bumped by every change to any user (SETUSER, DELUSER, LOAD, `requirepass`). A
    /// connection compares it with the value its `Arc<User>` was fetched at, and fetches its
    /// user again by name when it differs (gone: the connection is closed).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether a connection that has not authenticated must (Redis's `authRequired`: the
    /// default user has no `nopass`, or is `off`).
    #[inline]
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    /// The commands rules name, by id.
    pub fn index(&self) -> &CommandIndex {
        &self.index
    }

    /// A user by name.
    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, ordered by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// The user new connections start as.
    pub fn default_user(&self) -> Arc<User> {
        self.default.read().clone()
    }

    /// AUTH / HELLO AUTH / SASL / bearer tokens: the user, when it exists, is `on`, and the
    /// password matches one of its passwords (or it is `nopass`). `None` answers WRONGPASS.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let user = self.user(name)?;
        if !user.enabled() {
            return None;
        }
        if user.nopass() {
            return Some(user);
        }
        let hash = rules::hash_password(pass);
        // Compare with every password, so that the time taken does not say which matched.
        let matched = user.rules.passwords.iter().fold(false, |m, p| {
            rules::hashes_equal(p.as_bytes(), hash.as_bytes()) | m
        });
        matched.then_some(user)
    }

    /// `requirepass`: the default user's only password (`resetpass >pass`), or `nopass` when
    /// empty.
    pub fn set_requirepass(&self, pass: &str) {
        let mut users = self.users.write();
        let mut r = self.default_user().rules.clone();
        let op = if pass.is_empty() {
            b"nopass".to_vec()
        } else {
            [b">", pass.as_bytes()].concat()
        };
        // `resetpass` and a password or `nopass` are always valid rules.
        let _ = r.apply(b"resetpass", &self.index);
        let _ = r.apply(&op, &self.index);
        self.install(&mut users, b"default", r);
    }

    /// Create or change a user with ACL SETUSER's rules, all or none (`ACLStringSetUser`).
    /// The error is the reply's text without `ERR `.
    pub fn set_user(&self, name: &[u8], ops: &[&[u8]]) -> Result<(), String> {
        let merged = rules::merge_selectors(ops).map_err(|i| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(ops[i])
            )
        })?;
        let mut users = self.users.write();
        let mut r = match users.get(name) {
            Some(u) => u.rules.clone(),
            None => Rules::new(&self.index),
        };
        for op in &merged {
            r.apply(op, &self.index).map_err(|e| {
                format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                )
            })?;
        }
        self.install(&mut users, name, r);
        Ok(())
    }

    /// Remove users (never `default`); how many existed.
    pub fn delete_users(&self, names: &[&[u8]]) -> usize {
        let mut users = self.users.write();
        let removed = names
            .iter()
            .filter(|n| **n != b"default" && users.remove(**n).is_some())
            .count();
        if removed > 0 {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        removed
    }

    /// Replace every user at once (ACL LOAD, startup): `default` keeps its place, reset to
    /// the default rules when `all` does not name it.
    pub fn replace_all(&self, all: Vec<(Vec<u8>, Rules)>) {
        let mut users = self.users.write();
        users.clear();
        let mut default = Rules::default_user(&self.index);
        for (name, r) in all {
            if name == b"default" {
                default = r;
            } else {
                users.insert(
                    name.clone(),
                    Arc::new(User::new(&String::from_utf8_lossy(&name), r)),
                );
            }
        }
        self.install(&mut users, b"default", default);
    }

    /// Put a user in place and tell connections.
    fn install(&self, users: &mut BTreeMap<Vec<u8>, Arc<User>>, name: &[u8], r: Rules) {
        let user = Arc::new(User::new(&String::from_utf8_lossy(name), r));
        if name == b"default" {
            self.auth_required
                .store(!user.nopass() || !user.enabled(), Ordering::Relaxed);
            *self.default.write() = user.clone();
        }
        users.insert(name.to_vec(), user);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Add an entry to ACL LOG (or bump the count of an equal recent one, as Redis).
    pub fn log(&self, entry: LogEntry) {
        let max = self.log_max_len.load(Ordering::Relaxed);
        self.log.lock().add(entry, larder_engine::now_ms(), max);
    }

    /// The newest `count` ACL LOG entries.
    pub fn log_entries(&self, count: usize) -> Vec<log::Entry> {
        self.log.lock().newest(count)
    }

    /// ACL LOG RESET.
    pub fn log_reset(&self) {
        self.log.lock().clear();
    }

    /// `acllog-max-len`.
    pub fn set_log_max_len(&self, len: usize) {
        self.log_max_len.store(len, Ordering::Relaxed);
    }
}

/// One user: flags, passwords (SHA-256), and its root selector plus any `(...)` selectors.
pub struct User {
    pub name: Arc<str>,
    rules: Rules,
    /// Each selector's key patterns compiled (`None` for `allkeys`), by selector.
    keys: Vec<Option<SelectorKeys>>,
    unrestricted: bool,
}

/// What a selector refused, ranked as Redis ranks them (`ACL_DENIED_*`), with the argument.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Refusal {
    Command = 1,
    Key = 2,
    Channel = 4,
}

impl User {
    pub fn new(name: &str, rules: Rules) -> User {
        let keys = rules
            .selectors
            .iter()
            .map(|s| (!s.allkeys).then(|| SelectorKeys::new(&s.patterns)))
            .collect();
        let root = &rules.selectors[0];
        let unrestricted =
            rules.selectors.len() == 1 && root.allcommands && root.allkeys && root.allchannels;
        User {
            name: Arc::from(name),
            rules,
            keys,
            unrestricted,
        }
    }

    /// The rules the user was built from.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Allowed every command, key and channel with no selector needed (`+@all ~* &*`): the
    /// executor skips every other check for such a user.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted
    }

    /// Whether the user may run this command with these arguments (commands, keys with
    /// their access from `keys::keys`, channels from `keys::channels`; any selector
    /// suffices, as Redis's `ACLCheckAllUserCommandPerm`).
    pub fn check(&self, resolved: &Resolved, argv: &[&[u8]]) -> Result<(), Denied> {
        // The keys and channels are found into buffers kept per thread, so a check allocates
        // nothing (a nested check, none today, would get fresh ones).
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut found) => {
                found.keys_found = false;
                found.channels_found = false;
                self.check_with(resolved, argv, &mut found)
            }
            Err(_) => self.check_with(resolved, argv, &mut Found::new()),
        })
    }

    fn check_with(
        &self,
        resolved: &Resolved,
        argv: &[&[u8]],
        found: &mut Found,
    ) -> Result<(), Denied> {
        let mut worst = (Refusal::Command, 0);
        for (i, sel) in self.rules.selectors.iter().enumerate() {
            match self.check_selector(i, sel, resolved, argv, found) {
                None => return Ok(()),
                Some(r) if r > worst => worst = r,
                Some(_) => {}
            }
        }
        let arg = || argv.get(worst.1).map_or_else(Vec::new, |a| a.to_vec());
        Err(match worst.0 {
            Refusal::Command => Denied::Command,
            Refusal::Key => Denied::Key(arg()),
            Refusal::Channel => Denied::Channel(arg()),
        })
    }

    /// One selector's verdict (`ACLSelectorCheckCmd`). Keys and channels are found once, by
    /// the first selector that needs them.
    fn check_selector(
        &self,
        i: usize,
        sel: &Selector,
        resolved: &Resolved,
        argv: &[&[u8]],
        found: &mut Found,
    ) -> Option<(Refusal, usize)> {
        let id = resolved.stat_index;
        if !sel.allcommands && !resolved.spec.has(flags::NO_AUTH) && !sel.allowed(id) {
            // Allowed only with one of its allowed first arguments (`+select|0`).
            let first = argv.get(if resolved.is_sub { 2 } else { 1 });
            if argv.len() < 2 || !first.is_some_and(|a| sel.first_arg_allowed(id, a)) {
                return Some((Refusal::Command, 0));
            }
        }
        if let Some(compiled) = &self.keys[i] {
            if !found.keys_found {
                keys::keys(resolved, argv, &mut found.keys);
                found.keys_found = true;
            }
            for k in found.keys.iter() {
                if !argv
                    .get(k.index)
                    .is_some_and(|key| compiled.allows_memo(key, k.access, &mut found.memo))
                {
                    return Some((Refusal::Key, k.index));
                }
            }
        }
        // Only pub/sub commands name channels (`keys::channels`).
        if !sel.allchannels && resolved.spec.has(flags::PUBSUB) {
            if !found.channels_found {
                keys::channels(resolved, argv, &mut found.channels);
                found.channels_found = true;
            }
            for c in found.channels.iter() {
                if !argv
                    .get(c.index)
                    .is_some_and(|ch| channel_allowed(sel, ch, c.is_pattern))
                {
                    return Some((Refusal::Channel, c.index));
                }
            }
        }
        None
    }

    /// Whether any selector lets the user touch `key` for `access` (`access::READ|WRITE`):
    /// keys a command finds at run time (scripts' undeclared keys, SORT BY/GET patterns).
    pub fn check_key(&self, key: &[u8], access: u8) -> bool {
        self.keys
            .iter()
            .any(|k| k.as_ref().is_none_or(|k| k.allows(key, access)))
    }

    /// Whether the user may use `channel` (PUBLISH, SUBSCRIBE) or, with `is_pattern`, the
    /// pattern itself (PSUBSCRIBE: literal match against an allowed pattern, as Redis).
    pub fn check_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        self.rules
            .selectors
            .iter()
            .any(|s| channel_allowed(s, channel, is_pattern))
    }

    /// Whether a selector that allows this request may also read every key (Redis's
    /// `ACLUserCheckCmdWithUnrestrictedKeyAccess` for read access): what SORT's BY and GET
    /// patterns need, as they name keys no check saw.
    pub fn reads_every_key(&self, resolved: &Resolved, argv: &[&[u8]]) -> bool {
        if self.unrestricted {
            return true;
        }
        let mut found = Found::new();
        self.rules.selectors.iter().enumerate().any(|(i, sel)| {
            let reads_all = sel.allkeys
                || sel
                    .patterns
                    .iter()
                    .any(|(p, bits)| p == b"*" && bits & access::READ != 0);
            reads_all
                && self
                    .check_selector(i, sel, resolved, argv, &mut found)
                    .is_none()
        })
    }

    /// Whether some selector of the user has `allkeys` (`~*`, or `%RW~*`): the memcached
    /// door's operator commands that reveal every key need it, with `@admin`.
    pub fn all_keys(&self) -> bool {
        self.rules.selectors.iter().any(|s| {
            s.allkeys
                || s.patterns
                    .iter()
                    .any(|(p, bits)| p == b"*" && *bits == access::READ | access::WRITE)
        })
    }

    /// Whether the user needs no password (`nopass`).
    pub fn nopass(&self) -> bool {
        self.rules.has(flag::NOPASS)
    }

    /// Whether the user is `on`.
    pub fn enabled(&self) -> bool {
        self.rules.has(flag::ENABLED)
    }
}

/// Redis's `ACLCheckChannelAgainstList` for one selector: a channel glob-matches an allowed
/// pattern; a PSUBSCRIBE pattern must equal one.
fn channel_allowed(sel: &Selector, channel: &[u8], is_pattern: bool) -> bool {
    sel.allchannels
        || sel.channels.iter().any(|p| {
            if is_pattern {
                p == channel
            } else {
                larder_engine::glob::matches(p, channel, false)
            }
        })
}

/// The keys and channels of the request being checked (`User::check`).
struct Found {
    /// The last prefix pattern that accepted a key on this thread.
    memo: matcher::Memo,
    keys: Vec<keys::KeyRef>,
    keys_found: bool,
    channels: Vec<keys::ChannelRef>,
    channels_found: bool,
}

impl Found {
    const fn new() -> Found {
        Found {
            memo: matcher::Memo::EMPTY,
            keys: Vec::new(),
            keys_found: false,
            channels: Vec::new(),
            channels_found: false,
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Found> = const { std::cell::RefCell::new(Found::new()) };
}

/// Why a command was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The first key refused.
    Key(Vec<u8>),
    /// The first channel refused.
    Channel(Vec<u8>),
}

impl Denied {
    /// The NOPERM error the client gets (Redis 7.0.15's text, byte for byte).
    pub fn error(&self, full_name: &str) -> Error {
        match self {
            Denied::Command => Error::Owned(format!(
                "NOPERM this user has no permissions to run the '{full_name}' command"
            )),
            Denied::Key(_) => Error::Static(
                "NOPERM this user has no permissions to access one of the keys used as arguments",
            ),
            Denied::Channel(_) => Error::Static(
                "NOPERM this user has no permissions to access one of the channels used as arguments",
            ),
        }
    }
}

/// Where a denied command was running (ACL LOG `context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

/// ACL LOG `reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

/// One ACL LOG event before it is merged with equal recent ones.
pub struct LogEntry {
    pub reason: Reason,
    pub context: Context,
    /// The command's full name, the key, the channel, or "AUTH"/"HELLO" for a failed login.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// The client's CLIENT LIST line.
    pub client_info: String,
}

/// Log a refused command to ACL LOG.
pub fn log_denied(
    server: &Server,
    conn: &ConnState,
    denied: &Denied,
    full_name: &str,
    context: Context,
) {
    let (reason, object) = match denied {
        Denied::Command => (Reason::Command, full_name.as_bytes().to_vec()),
        Denied::Key(k) => (Reason::Key, k.clone()),
        Denied::Channel(c) => (Reason::Channel, c.clone()),
    };
    server.acl.log(LogEntry {
        reason,
        context,
        object,
        username: conn.user.name.as_bytes().to_vec(),
        client_info: crate::connection::client_list_line(
            server,
            &conn.handle,
            larder_engine::now_ms(),
        ),
    });
}

/// Log a failed login (`AUTH`, `HELLO`, SASL, HTTP token) to ACL LOG.
pub fn log_auth_failure(server: &Server, handle: &ClientHandle, username: &[u8], object: &str) {
    server.acl.log(LogEntry {
        reason: Reason::Auth,
        context: Context::Toplevel,
        object: object.as_bytes().to_vec(),
        username: username.to_vec(),
        client_info: crate::connection::client_list_line(server, handle, larder_engine::now_ms()),
    });
}

/// Close every connection authenticated as one of `names` (ACL DELUSER, ACL LOAD), as Redis
/// does.
pub fn disconnect_users(server: &Server, names: &[&[u8]]) {
    for h in server.clients.snapshot() {
        let user = h.user.lock().clone();
        if names.contains(&user.as_bytes()) {
            crate::state::kill_client(&h);
        }
    }
}
