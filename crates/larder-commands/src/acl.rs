//! Access control lists: users, their passwords and permissions, and the checks the executor
//! and every door make before a command runs (Redis 7.0 semantics).
//!
//! CONTRACT SKELETON (issue 15): the public API below is what the executor, the memcached and
//! HTTP doors and the ACL commands use. The acl-core helper fills in the bodies; the
//! signatures change only by agreement (see /work/briefs/acl-contract.md).

pub mod keys;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::Error;
use crate::exec::ConnState;
use crate::state::{ClientHandle, Server};
use crate::table::Resolved;

/// What a key is used for, as Redis derives it from a key spec's logical flags: ACCESS needs
/// read permission, INSERT/DELETE/UPDATE need write permission (`%R~`, `%W~`, `~`).
pub mod access {
    pub const READ: u8 = 1;
    pub const WRITE: u8 = 2;
}

/// Every user, shared by all connections and doors.
pub struct Acl {
    users: RwLock<hashbrown::HashMap<Vec<u8>, Arc<User>>>,
    default: RwLock<Arc<User>>,
    generation: AtomicU64,
    auth_required: AtomicBool,
    /// Skeleton only: the default user's one password.
    requirepass: RwLock<String>,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    /// The default user alone: `user default on nopass ~* &* +@all`.
    pub fn new() -> Acl {
        let default = Arc::new(User {
            name: Arc::from("default"),
        });
        let mut users = hashbrown::HashMap::new();
        users.insert(b"default".to_vec(), default.clone());
        Acl {
            users: RwLock::new(users),
            default: RwLock::new(default),
            generation: AtomicU64::new(0),
            auth_required: AtomicBool::new(false),
            requirepass: RwLock::new(String::new()),
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

    /// A user by name.
    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// The user new connections start as.
    pub fn default_user(&self) -> Arc<User> {
        self.default.read().clone()
    }

    /// AUTH / HELLO AUTH / SASL / bearer tokens: the user, when it exists, is `on`, and the
    /// password matches one of its passwords (or it is `nopass`). `None` answers WRONGPASS.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let required = self.requirepass.read();
        if !required.is_empty() && required.as_bytes() != pass {
            return None;
        }
        self.user(name)
    }

    /// `requirepass`: the default user's only password (`resetpass >pass`), or `nopass` when
    /// empty.
    pub fn set_requirepass(&self, pass: &str) {
        *self.requirepass.write() = pass.to_string();
        self.auth_required
            .store(!pass.is_empty(), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Add an entry to ACL LOG (or bump the count of an equal recent one, as Redis).
    pub fn log(&self, entry: LogEntry) {
        let _ = entry;
    }
}

/// One user: flags, passwords (SHA-256), and its root selector plus any `(...)` selectors.
pub struct User {
    pub name: Arc<str>,
}

impl User {
    /// Allowed every command, key and channel with no selector needed (`+@all ~* &*`): the
    /// executor skips every other check for such a user.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        true
    }

    /// Whether the user may run this command with these arguments (commands, keys with
    /// their access from `keys::keys`, channels from `keys::channels`; any selector
    /// suffices, as Redis's `ACLCheckAllUserCommandPerm`).
    pub fn check(&self, resolved: &Resolved, argv: &[&[u8]]) -> Result<(), Denied> {
        let _ = (resolved, argv);
        Ok(())
    }

    /// Whether any selector lets the user touch `key` for `access` (`access::READ|WRITE`):
    /// keys a command finds at run time (scripts' undeclared keys, SORT BY/GET patterns).
    pub fn check_key(&self, key: &[u8], access: u8) -> bool {
        let _ = (key, access);
        true
    }

    /// Whether the user may use `channel` (PUBLISH, SUBSCRIBE) or, with `is_pattern`, the
    /// pattern itself (PSUBSCRIBE: literal match against an allowed pattern, as Redis).
    pub fn check_channel(&self, channel: &[u8], is_pattern: bool) -> bool {
        let _ = (channel, is_pattern);
        true
    }

    /// Whether some selector of the user has `allkeys` (`~*`): the memcached door's
    /// operator commands that reveal every key need it, with `@admin`.
    pub fn all_keys(&self) -> bool {
        true
    }

    /// Whether the user needs no password (`nopass`).
    pub fn nopass(&self) -> bool {
        true
    }

    /// Whether the user is `on`.
    pub fn enabled(&self) -> bool {
        true
    }
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
    let _ = (server, conn, denied, full_name, context);
}

/// Log a failed login (`AUTH`, `HELLO`, SASL, HTTP token) to ACL LOG.
pub fn log_auth_failure(server: &Server, handle: &ClientHandle, username: &[u8], object: &str) {
    let _ = (server, handle, username, object);
}

/// Close every connection authenticated as one of `names` (ACL DELUSER, ACL LOAD), as Redis
/// does.
pub fn disconnect_users(server: &Server, names: &[&[u8]]) {
    let _ = (server, names);
}
