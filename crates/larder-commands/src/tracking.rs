//! Client-side caching: CLIENT TRACKING and its invalidation messages, with Redis 7.0's
//! semantics (`tracking.c`).
//!
//! A tracking client in the default mode has the keys of every read-only command it runs
//! remembered (in OPTIN mode only after CLIENT CACHING yes, for the next command; in OPTOUT
//! mode unless CLIENT CACHING no); the first change to such a key sends it one `invalidate`
//! message naming the key, and the key is forgotten until the client reads it again. As in
//! Redis, the table is keyed by key name alone, whatever the database. A client in BCAST mode
//! remembers nothing: every change to a key that starts with one of its prefixes (none: every
//! key) is sent to it, the keys of one committed group in one message per prefix. FLUSHDB,
//! FLUSHALL (and, unlike Redis 7.0, SWAPDB, which leaves caches of both databases stale) send
//! every tracking client one `invalidate` with a null instead of keys, and empty the table.
//!
//! Messages are RESP3 pushes (`>2 invalidate [keys]`) on the client's own connection, or go to
//! the client named by REDIRECT: a RESP3 one gets the same push, a RESP2 one in subscribed
//! mode a `message` on `__redis__:invalidate` whose payload is the array of keys. A RESP2
//! client without a redirection gets nothing. A redirection whose target went away answers
//! `tracking-redir-broken` (RESP3) instead, each time a message would have been sent.
//!
//! [`Tracking`] is a lossless feed consumer: it asks the feed for [`Interest::CHANGES`] only
//! while some client tracks, and at each commit turns `Written`, `Deleted`, `Expired`,
//! `Evicted`, `Flushed` and `Swapped` records into messages, whatever made them (a RESP
//! command, the memcached door, expiry, eviction). Each message goes into the receiving
//! client's outbox under its class's output limit (`pubsub` for a subscribed client,
//! `normal` otherwise); a client past it is closed and counted, never skipped. NOLOOP needs
//! the client that caused a group: the executor sets it on its thread ([`run`]) for tracking
//! clients, and the consumer, which runs on the committing thread, reads it.
//!
//! Keys are remembered while the command's shards are still locked ([`run`] locks a tracking
//! client's read as a planned command; EXEC holds its shards anyway), so a write on another
//! thread either commits before the read (and the read sees it) or after the key is in the
//! table (and invalidates it). The table holds at most `tracking-table-max-keys` keys (0: no
//! limit): past it, keys are invalidated (and forgotten) until it fits.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use larder_engine::{Change, ChangeKind, Consumer, Feed, Interest};
use larder_resp::ReplyBuf;
use parking_lot::Mutex;

use crate::exec::{self, ConnState};
use crate::locks::{Held, Plan, Scope};
use crate::mail::{Limit, Refused};
use crate::state::{ClientHandle, Server};
use crate::table::{flags, Resolved};

/// A client's tracking flags (Redis's `CLIENT_TRACKING_*`), in [`TrackingFlags`].
pub mod flag {
    /// Tracking is on.
    pub const ON: u32 = 1 << 0;
    pub const BCAST: u32 = 1 << 1;
    pub const OPTIN: u32 = 1 << 2;
    pub const OPTOUT: u32 = 1 << 3;
    pub const NOLOOP: u32 = 1 << 4;
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT) was given for the next command.
    pub const CACHING: u32 = 1 << 5;
    /// The redirection's target went away.
    pub const BROKEN_REDIR: u32 = 1 << 6;
    /// The client has pub/sub subscriptions (Redis's `CLIENT_PUBSUB`): a RESP2 redirection
    /// target gets messages on `__redis__:invalidate` only then.
    pub const SUBSCRIBED: u32 = 1 << 7;
}

/// The tracking state a connection shows to other threads (CLIENT LIST, the consumer).
#[derive(Default, Debug)]
pub struct TrackingFlags {
    flags: AtomicU32,
    /// REDIRECT's client id (0: none).
    redirect: AtomicU64,
}

impl TrackingFlags {
    /// Whether tracking is on (one relaxed load: the executor asks before every command).
    #[inline]
    pub fn on(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & flag::ON != 0
    }

    /// Every flag.
    #[inline]
    pub fn get(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    fn set(&self, bits: u32) {
        self.flags.fetch_or(bits, Ordering::Relaxed);
    }

    fn clear(&self, bits: u32) {
        self.flags.fetch_and(!bits, Ordering::Relaxed);
    }

    /// REDIRECT's client id (0: none).
    pub fn redirect(&self) -> u64 {
        self.redirect.load(Ordering::Relaxed)
    }

    /// Whether the client has any pub/sub subscription (pub/sub keeps this up to date).
    pub fn set_subscribed(&self, subscribed: bool) {
        if subscribed {
            self.set(flag::SUBSCRIBED);
        } else {
            self.clear(flag::SUBSCRIBED);
        }
    }

    /// CLIENT CACHING yes|no: for the next command (or transaction).
    pub fn set_caching(&self) {
        self.set(flag::CACHING);
    }
}

/// The executor's way to run a command that passed its checks.
pub type RunFn =
    fn(&Server, &mut ConnState, &[&[u8]], &mut ReplyBuf, Resolved, u64) -> crate::error::Result<()>;

thread_local! {
    /// The tracking client whose command runs on this thread (0: none): NOLOOP's "itself".
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Run a command of a tracking client (the executor calls this instead of `run` when the
/// connection tracks): mark the client as this thread's current one, run a read with keys
/// planned and remember its keys before its shards unlock, and after the command drop
/// CLIENT CACHING's one-command flag, as Redis's `resetClient`.
#[inline(never)]
pub fn run(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
    run: RunFn,
) -> crate::error::Result<()> {
    CURRENT.with(|c| c.set(conn.id));
    let result = if remembers(&conn.handle, resolved) && resolved.spec.keys.first > 0 {
        let mut plan = Plan::default();
        plan.add(&resolved.spec.keys, argv, conn.db);
        let mut guards = exec::lock_plan(plan, &server.keyspace);
        let group = server.keyspace.feed().group();
        let r = {
            let held = Held::new(&mut guards);
            exec::call(server, conn, argv, out, resolved, now_ms, Some(&held))
        };
        remember(server, conn, argv, resolved);
        drop(group);
        drop(guards);
        r
    } else {
        run(server, conn, argv, out, resolved, now_ms)
    };
    CURRENT.with(|c| c.set(0));
    if conn.multi.is_none() && !resolved.full_name.starts_with("client|") {
        conn.handle.tracking.clear(flag::CACHING);
    }
    result
}

/// Whether a command run now by this client has its keys remembered: a read-only command
/// (not pub/sub) of a client tracking in the default mode, OPTIN after CLIENT CACHING yes,
/// OPTOUT unless CLIENT CACHING no.
#[inline]
fn remembers(handle: &ClientHandle, resolved: Resolved) -> bool {
    let f = handle.tracking.get();
    let spec = resolved.spec;
    if f & flag::ON == 0 || f & flag::BCAST != 0 {
        return false;
    }
    if !spec.has(flags::READONLY) || spec.has(flags::PUBSUB) {
        return false;
    }
    let caching = f & flag::CACHING != 0;
    !((f & flag::OPTIN != 0 && !caching) || (f & flag::OPTOUT != 0 && caching))
}

/// Remember the keys of a read the client just ran, if it tracks them; call it while the
/// command's shards are still locked (planned, or inside EXEC).
pub fn remember(server: &Server, conn: &ConnState, argv: &[&[u8]], resolved: Resolved) {
    if !remembers(&conn.handle, resolved) {
        return;
    }
    let spec = &resolved.spec.keys;
    let mut keys = spec.keys(argv);
    if let Scope::NumKeys { at } | Scope::Script { at } = spec.scope {
        let at = usize::from(at);
        let n = argv
            .get(at)
            .and_then(|a| std::str::from_utf8(a).ok())
            .and_then(|a| a.parse::<usize>().ok())
            .unwrap_or(0);
        keys.extend(argv.iter().skip(at + 1).take(n));
    }
    if !keys.is_empty() {
        server.tracking.remember(&conn.handle, &keys);
    }
}

/// One tracking client, as the consumer knows it.
struct Tracker {
    handle: Arc<ClientHandle>,
    /// Tells this tracking session's entries in the table from those of an earlier one
    /// (CLIENT TRACKING off forgets the keys; the table drops them lazily).
    session: u64,
    /// The redirection's target while it is connected.
    target: Option<Arc<ClientHandle>>,
    /// BCAST prefixes.
    prefixes: BTreeSet<Vec<u8>>,
}

#[derive(Default)]
struct Inner {
    clients: HashMap<u64, Tracker>,
    /// Key → the (client id, session) pairs that read it.
    table: HashMap<Vec<u8>, Vec<(u64, u64)>>,
    /// Pairs in the table (INFO `tracking_total_items`).
    items: u64,
    /// BCAST prefix → client ids.
    prefixes: BTreeMap<Vec<u8>, Vec<u64>>,
    next_session: u64,
}

/// The tracking consumer (see the module documentation).
#[derive(Default)]
pub struct Tracking {
    inner: Mutex<Inner>,
    /// Held while a client turns tracking on or off and the feed's interest is set after it.
    /// Never taken at commit.
    toggle: Mutex<()>,
    feed: OnceLock<(Weak<Feed>, u64)>,
    /// Tracking clients (INFO `tracking_clients`).
    count: AtomicUsize,
    /// `client-output-buffer-limit`'s normal and pubsub classes.
    limits: Mutex<[Limit; 2]>,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicU64,
}

/// What an invalidation message carries.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Keys(&'a [&'a [u8]]),
    /// Everything (a flush): a null.
    All,
}

impl Tracking {
    /// Subscribe to `feed`, asking for nothing until a client tracks.
    pub fn install(self: &Arc<Self>, feed: &Arc<Feed>) {
        let _toggle = self.toggle.lock();
        let id = feed.subscribe(Interest::default(), Arc::clone(self) as Arc<dyn Consumer>);
        let _ = self.feed.set((Arc::downgrade(feed), id));
        self.sync_interest();
    }

    /// Apply `client-output-buffer-limit` (the normal and pubsub classes) and
    /// `tracking-table-max-keys`.
    pub fn configure(&self, normal: Limit, pubsub: Limit, max_keys: u64) {
        *self.limits.lock() = [normal, pubsub];
        self.max_keys.store(max_keys, Ordering::Relaxed);
        if max_keys > 0 {
            let mut inner = self.inner.lock();
            self.limit_keys(&mut inner, max_keys as usize);
        }
    }

    /// Ask the feed for changes exactly while some client tracks. Call with `toggle` held.
    fn sync_interest(&self) {
        let Some((feed, id)) = self.feed.get() else {
            return;
        };
        let Some(feed) = feed.upgrade() else {
            return;
        };
        let interest = if self.count.load(Ordering::Relaxed) > 0 {
            Interest::CHANGES
        } else {
            Interest::default()
        };
        feed.set_interest(*id, interest);
    }

    /// Whether the feed is asked for changes for tracking now (tests).
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
            && self
                .feed
                .get()
                .and_then(|(f, _)| f.upgrade())
                .is_some_and(|f| f.records_changes())
    }

    /// INFO: tracking clients, keys in the table, (client, key) items, BCAST prefixes.
    pub fn info(&self) -> (usize, usize, u64, usize) {
        let inner = self.inner.lock();
        (
            self.count.load(Ordering::Relaxed),
            inner.table.len(),
            inner.items,
            inner.prefixes.len(),
        )
    }

    /// The BCAST prefixes of client `id`, in order (CLIENT TRACKINGINFO).
    pub fn prefixes_of(&self, id: u64) -> Vec<Vec<u8>> {
        self.inner
            .lock()
            .clients
            .get(&id)
            .map(|t| t.prefixes.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// CLIENT TRACKING on (options checked): turn tracking on for `handle`, or change its
    /// options, as Redis's `enableTracking`. `options` are [`flag`] bits; `target` is the
    /// client `redirect` names, looked up by the caller (checked again after registering).
    pub fn enable(
        &self,
        handle: &Arc<ClientHandle>,
        redirect: u64,
        target: Option<Arc<ClientHandle>>,
        options: u32,
        prefixes: &[&[u8]],
    ) {
        let _toggle = self.toggle.lock();
        {
            let mut inner = self.inner.lock();
            let Inner {
                clients,
                prefixes: table,
                next_session,
                ..
            } = &mut *inner;
            let t = clients.entry(handle.id).or_insert_with(|| {
                *next_session += 1;
                self.count.fetch_add(1, Ordering::Relaxed);
                Tracker {
                    handle: Arc::clone(handle),
                    session: *next_session,
                    target: None,
                    prefixes: BTreeSet::new(),
                }
            });
            t.target = target.filter(|t| !t.killed.load(Ordering::Acquire));
            let f = &handle.tracking;
            f.clear(flag::BROKEN_REDIR | flag::BCAST | flag::OPTIN | flag::OPTOUT | flag::NOLOOP);
            f.redirect.store(redirect, Ordering::Relaxed);
            if options & flag::BCAST != 0 {
                f.set(flag::BCAST);
                let empty: &[u8] = b"";
                let wanted = if prefixes.is_empty() {
                    std::slice::from_ref(&empty)
                } else {
                    prefixes
                };
                for p in wanted {
                    if t.prefixes.insert(p.to_vec()) {
                        table.entry(p.to_vec()).or_default().push(handle.id);
                    }
                }
            }
            f.set(flag::ON | (options & (flag::OPTIN | flag::OPTOUT | flag::NOLOOP)));
        }
        self.sync_interest();
    }

    /// The redirection target `id` is gone if the registry no longer has it: call after
    /// [`Tracking::enable`] (a target that closed while tracking was being enabled).
    pub fn target_gone(&self, client: u64, target: u64) {
        let mut inner = self.inner.lock();
        if let Some(t) = inner.clients.get_mut(&client) {
            if t.target.as_ref().is_some_and(|h| h.id == target) {
                t.target = None;
            }
        }
    }

    /// CLIENT TRACKING off (and RESET, and a disconnect): forget the client's keys and
    /// prefixes and clear its flags, as Redis's `disableTracking`.
    pub fn disable(&self, handle: &ClientHandle) {
        let _toggle = self.toggle.lock();
        {
            let mut inner = self.inner.lock();
            if let Some(t) = inner.clients.remove(&handle.id) {
                self.count.fetch_sub(1, Ordering::Relaxed);
                for p in &t.prefixes {
                    if let Some(ids) = inner.prefixes.get_mut(p) {
                        ids.retain(|&i| i != handle.id);
                        if ids.is_empty() {
                            inner.prefixes.remove(p);
                        }
                    }
                }
            }
        }
        handle.tracking.clear(
            flag::ON
                | flag::BROKEN_REDIR
                | flag::BCAST
                | flag::OPTIN
                | flag::OPTOUT
                | flag::CACHING
                | flag::NOLOOP,
        );
        self.sync_interest();
    }

    /// A client disconnected: stop its tracking, and break redirections to it.
    pub fn client_closed(&self, handle: &ClientHandle) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if handle.tracking.on() {
            self.disable(handle);
        }
        let mut inner = self.inner.lock();
        for t in inner.clients.values_mut() {
            if t.target.as_ref().is_some_and(|h| h.id == handle.id) {
                t.target = None;
            }
        }
    }

    /// Remember that `handle` read `keys` (see [`remember`]).
    fn remember(&self, handle: &ClientHandle, keys: &[&[u8]]) {
        let mut inner = self.inner.lock();
        let Some(session) = inner.clients.get(&handle.id).map(|t| t.session) else {
            return;
        };
        for key in keys {
            let added = match inner.table.get_mut(*key) {
                Some(ids) => match ids.iter_mut().find(|(i, _)| *i == handle.id) {
                    Some(entry) => {
                        entry.1 = session;
                        false
                    }
                    None => {
                        ids.push((handle.id, session));
                        true
                    }
                },
                None => {
                    inner.table.insert(key.to_vec(), vec![(handle.id, session)]);
                    true
                }
            };
            inner.items += u64::from(added);
        }
        let max = self.max_keys.load(Ordering::Relaxed) as usize;
        if max > 0 && inner.table.len() > max {
            self.limit_keys(&mut inner, max);
        }
    }

    /// Invalidate (and forget) keys until the table holds at most `max`, as Redis's
    /// `trackingLimitUsedSlots` (which walks to random keys; here, the hash table's order).
    fn limit_keys(&self, inner: &mut Inner, max: usize) {
        let now_ms = larder_engine::now_ms();
        while inner.table.len() > max {
            let Some(key) = inner.table.keys().next().cloned() else {
                break;
            };
            self.invalidate_key(inner, &key, 0, now_ms);
        }
    }

    /// Send an invalidation of `key` to every client that read it and still tracks it (not
    /// to `current` if it asked for NOLOOP), and forget the key.
    fn invalidate_key(&self, inner: &mut Inner, key: &[u8], current: u64, now_ms: u64) {
        let Some(ids) = inner.table.remove(key) else {
            return;
        };
        inner.items -= ids.len() as u64;
        for (id, session) in ids {
            let Some(t) = inner.clients.get(&id) else {
                continue;
            };
            let f = t.handle.tracking.get();
            if t.session != session || f & flag::BCAST != 0 {
                continue;
            }
            if f & flag::NOLOOP != 0 && id == current {
                continue;
            }
            self.send(t, Payload::Keys(&[key]), now_ms);
        }
    }

    /// Send one message to a tracking client (or its redirection), as Redis's
    /// `sendTrackingMessage`.
    fn send(&self, t: &Tracker, payload: Payload<'_>, now_ms: u64) {
        let client = &t.handle;
        let redirect = client.tracking.redirect();
        let (dest, redirected) = if redirect != 0 {
            match t
                .target
                .as_ref()
                .filter(|h| !h.killed.load(Ordering::Acquire))
            {
                Some(target) => (target, true),
                None => {
                    client.tracking.set(flag::BROKEN_REDIR);
                    if client.resp.load(Ordering::Relaxed) == 3 {
                        let mut frame = b">2\r\n$21\r\ntracking-redir-broken\r\n:".to_vec();
                        frame.extend_from_slice(redirect.to_string().as_bytes());
                        frame.extend_from_slice(b"\r\n");
                        self.post(client, &frame, now_ms);
                    }
                    return;
                }
            }
        } else {
            (client, false)
        };
        let mut frame = Vec::with_capacity(64);
        if dest.resp.load(Ordering::Relaxed) == 3 {
            frame.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
        } else if redirected && dest.tracking.get() & flag::SUBSCRIBED != 0 {
            frame.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
        } else {
            // RESP2 without a redirection: nowhere to say it.
            return;
        }
        match payload {
            Payload::Keys(keys) => {
                frame.push(b'*');
                frame.extend_from_slice(keys.len().to_string().as_bytes());
                frame.extend_from_slice(b"\r\n");
                for k in keys {
                    frame.push(b'$');
                    frame.extend_from_slice(k.len().to_string().as_bytes());
                    frame.extend_from_slice(b"\r\n");
                    frame.extend_from_slice(k);
                    frame.extend_from_slice(b"\r\n");
                }
            }
            // Redis writes the null of the tracking client's protocol, wherever it goes.
            Payload::All => frame.extend_from_slice(if client.resp.load(Ordering::Relaxed) == 3 {
                b"_\r\n"
            } else {
                b"$-1\r\n"
            }),
        }
        self.post(dest, &frame, now_ms);
    }

    /// Queue a frame in a client's outbox under its class's limit; close it past the limit.
    fn post(&self, client: &ClientHandle, frame: &[u8], now_ms: u64) {
        let subscribed = client.tracking.get() & flag::SUBSCRIBED != 0;
        let limit = self.limits.lock()[usize::from(subscribed)];
        let unsent = client.output_buf_bytes.load(Ordering::Relaxed);
        match client.mail.post(client.id, limit, unsent, now_ms, |out| {
            out.extend_from_slice(frame)
        }) {
            Ok(()) | Err(Refused::Closed | Refused::OverBudget) => {}
            Err(Refused::OverLimit) => {
                let class = if subscribed { "pubsub" } else { "normal" };
                crate::mail::note_over_limit(&client.addr, client.id, class);
                crate::state::kill_client(client);
            }
        }
    }
}

impl Consumer for Tracking {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let current = CURRENT.with(|c| c.get());
        let now_ms = larder_engine::now_ms();
        let mut inner = self.inner.lock();
        // BCAST: prefix → the group's keys under it, each with the client that changed it last.
        let mut bcast: BTreeMap<Vec<u8>, BTreeMap<&[u8], u64>> = BTreeMap::new();
        let mut flushed = false;
        for c in changes {
            match c.kind {
                ChangeKind::Written
                | ChangeKind::Deleted
                | ChangeKind::Expired
                | ChangeKind::Evicted => {
                    flushed = false;
                    for p in inner.prefixes.keys() {
                        if c.key.starts_with(p) {
                            let slot = bcast.entry(p.clone()).or_default();
                            slot.insert(&c.key, current);
                        }
                    }
                    self.invalidate_key(&mut inner, &c.key, current, now_ms);
                }
                ChangeKind::Flushed | ChangeKind::Swapped => {
                    // FLUSHALL records a flush per database: one message for the lot.
                    if !flushed {
                        for t in inner.clients.values() {
                            self.send(t, Payload::All, now_ms);
                        }
                        flushed = true;
                    }
                    inner.table.clear();
                    inner.items = 0;
                }
                ChangeKind::Notice | ChangeKind::Command => {}
            }
        }
        for (prefix, keys) in bcast {
            let Some(ids) = inner.prefixes.get(&prefix) else {
                continue;
            };
            let all: Vec<&[u8]> = keys.keys().copied().collect();
            for id in ids {
                let Some(t) = inner.clients.get(id) else {
                    continue;
                };
                if t.handle.tracking.get() & flag::NOLOOP != 0 {
                    let own: Vec<&[u8]> = keys
                        .iter()
                        .filter(|(_, &by)| by != *id)
                        .map(|(k, _)| *k)
                        .collect();
                    if !own.is_empty() {
                        self.send(t, Payload::Keys(&own), now_ms);
                    }
                } else {
                    self.send(t, Payload::Keys(&all), now_ms);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "tracking_tests.rs"]
mod tests;
