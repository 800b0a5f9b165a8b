//! `watch`: connections that receive a log line per event, as memcached 1.6.18's
//! (`logger.c`, `process_watch_command`).
//!
//! - `fetchers`: the memcached door's lookups (get, gets, gat, gats, mg, me, the binary gets,
//!   and the lookup a store makes first), from hooks in the door ([`Ctx::watch_get`],
//!   [`store`]) that cost one relaxed load while nobody watches.
//! - `mutations` and `evictions`: the change feed ([`larder_engine::Feed`]), so writes from
//!   every door and evictions of every cause show; the feed is subscribed only while some
//!   watcher wants them. Stores the memcached door refused (`not_stored`, `exists`,
//!   `not_found`) come from the door's hook, since they change nothing.
//! - `connevents`: the memcached door's accepts and closes.
//!
//! Each line is formatted once and posted to every watcher that wants it, into the watcher's
//! outbox ([`larder_commands::mail::Mail::post_within`]), within [`WATCHER_BUF`] bytes of
//! pending output. A line that does not fit is skipped and counted; the next line that fits
//! is preceded by `skipped=<n>`, as memcached tells a watcher that fell behind. The writer
//! never waits for a watcher.

mod line;

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use larder_commands::state::ClientHandle;
use larder_engine::{Change, ChangeKind, Consumer, Feed, Interest};
use larder_memcache::{StoreMode, TextReply, TextWriter, Tokens};
use parking_lot::Mutex;

use super::{slabs, Ctx, Flow};
use crate::items::{self, Access, Deadline, Read, StoreOutcome};
use line::{Fetch, StoreStatus};

/// memcached's event flags (`logger.h`).
const SYSEVENTS: u32 = 1 << 1;
const FETCHERS: u32 = 1 << 2;
const MUTATIONS: u32 = 1 << 3;
const CONNEVENTS: u32 = 1 << 5;
const EVICTIONS: u32 = 1 << 6;
const RAWCMDS: u32 = 1 << 9;
const PROXYREQS: u32 = 1 << 10;
const PROXYEVENTS: u32 = 1 << 11;
const PROXYUSER: u32 = 1 << 12;

/// memcached's `WATCHER_LIMIT`.
const WATCHER_LIMIT: usize = 20;

/// The most output a watcher may have pending (outbox plus unsent bytes) before lines are
/// skipped: memcached's `watcher_logbuf_size` (`LOGGER_WATCHER_BUF_SIZE`).
pub(super) const WATCHER_BUF: usize = 256 * 1024;

/// memcached's `worker_logbuf_size`, shown by `stats settings` (larder has no per-worker
/// log buffer: lines go straight to the watchers).
pub(super) const WORKER_BUF: usize = 64 * 1024;

/// The door's watchers and their counters.
#[derive(Default)]
pub struct Watch {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Union of the watchers' flags: what the hooks check.
    flags: AtomicU32,
    /// memcached's `logger_gid`: one number per event logged.
    gid: AtomicU64,
    /// The watchers. Taken by the feed's consumer with shard locks held: never subscribe or
    /// unsubscribe while holding it.
    watchers: Mutex<Vec<Watcher>>,
    /// The feed and this registry's subscription to it, while a watcher wants mutations or
    /// evictions. Never taken by the consumer.
    feed: Mutex<Option<(Arc<Feed>, u64)>>,
    /// `log_worker_written`: events logged while someone watched.
    written: AtomicU64,
    /// `log_watcher_skipped`.
    skipped: AtomicU64,
    /// `log_watcher_sent`.
    sent: AtomicU64,
}

struct Watcher {
    handle: Arc<ClientHandle>,
    flags: u32,
    /// Lines skipped since the last one sent.
    skipped: u64,
    /// Events numbered before this one are not shown (memcached's `min_gid`).
    min_gid: u64,
}

impl Watch {
    /// Whether some watcher wants events of `flag` (one relaxed load).
    #[inline]
    fn wants(&self, flag: u32) -> bool {
        self.inner.flags.load(Ordering::Relaxed) & flag != 0
    }

    /// `log_worker_dropped`, `log_worker_written`, `log_watcher_skipped`,
    /// `log_watcher_sent`, `log_watchers`, in memcached's order.
    pub fn stats(&self) -> [(&'static str, u64); 5] {
        let i = &self.inner;
        [
            ("log_worker_dropped", 0),
            ("log_worker_written", i.written.load(Ordering::Relaxed)),
            ("log_watcher_skipped", i.skipped.load(Ordering::Relaxed)),
            ("log_watcher_sent", i.sent.load(Ordering::Relaxed)),
            ("log_watchers", i.watchers.lock().len() as u64),
        ]
    }

    /// A memcached connection was accepted.
    pub fn conn_new(&self, handle: &ClientHandle) {
        if self.wants(CONNEVENTS) {
            self.inner.log(CONNEVENTS, |ts, gid| {
                line::conn_new(ts, gid, &handle.addr, handle.fd)
            });
        }
    }

    /// A memcached connection closed; a watcher stops watching.
    pub fn conn_close(&self, handle: &ClientHandle) {
        if self.inner.flags.load(Ordering::Relaxed) != 0 {
            self.remove(handle.id);
        }
        if self.wants(CONNEVENTS) {
            self.inner.log(CONNEVENTS, |ts, gid| {
                line::conn_close(ts, gid, &handle.addr, handle.fd)
            });
        }
    }
}

impl Inner {
    /// Number an event, format its line and post it to every watcher of `flag`.
    fn log(&self, flag: u32, format: impl FnOnce(u64, u64) -> String) {
        let gid = self.gid.fetch_add(1, Ordering::Relaxed) + 1;
        let text = format(larder_engine::now_us(), gid);
        self.written.fetch_add(1, Ordering::Relaxed);
        let mut watchers = self.watchers.lock();
        let mut closed = false;
        for w in watchers.iter_mut() {
            if w.flags & flag == 0 || gid < w.min_gid {
                continue;
            }
            let h = &w.handle;
            let unsent = h.output_buf_bytes.load(Ordering::Relaxed);
            let skipped = w.skipped;
            let posted = h.mail.post_within(h.id, WATCHER_BUF as u64, unsent, |out| {
                if skipped > 0 {
                    out.extend_from_slice(format!("skipped={skipped}\n").as_bytes());
                }
                out.extend_from_slice(text.as_bytes());
            });
            match posted {
                Ok(()) => {
                    w.skipped = 0;
                    self.sent.fetch_add(1, Ordering::Relaxed);
                }
                Err(larder_commands::mail::Refused::OverBudget) => {
                    w.skipped += 1;
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => closed = true,
            }
        }
        if closed {
            // A watcher being closed: stop posting to it. Its close ([`Watch::conn_close`])
            // gives up the feed subscription if nobody else needs it (this may run inside
            // the feed's consumer, which must not unsubscribe).
            watchers.retain(|w| !w.handle.mail.over_limit());
            self.refresh(&watchers);
        }
    }

    /// Recompute the flags the hooks check.
    fn refresh(&self, watchers: &[Watcher]) {
        let flags = watchers.iter().fold(0, |a, w| a | w.flags);
        self.flags.store(flags, Ordering::Relaxed);
    }
}

impl Watch {
    /// Stop watching for connection `id`.
    fn remove(&self, id: u64) {
        {
            let mut watchers = self.inner.watchers.lock();
            let before = watchers.len();
            watchers.retain(|w| w.handle.id != id);
            if watchers.len() == before {
                return;
            }
            self.inner.refresh(&watchers);
        }
        self.sync_feed(None);
    }

    /// Hold the feed subscription exactly while a watcher wants what comes from the feed
    /// (`feed`: where to subscribe, when not subscribed yet). Called without the watchers'
    /// lock.
    fn sync_feed(&self, feed: Option<&Arc<Feed>>) {
        let want = self.wants(MUTATIONS | EVICTIONS);
        let mut sub = self.inner.feed.lock();
        match (want, sub.as_ref(), feed) {
            (true, None, Some(feed)) => {
                let consumer = Arc::new(FeedWatcher(Arc::clone(&self.inner)));
                let id = feed.subscribe(Interest::CHANGES, consumer);
                *sub = Some((Arc::clone(feed), id));
            }
            (false, Some(_), _) => {
                if let Some((feed, id)) = sub.take() {
                    feed.unsubscribe(id);
                }
            }
            _ => {}
        }
    }
}

/// The feed's side: lines for data written (`item_store`) and keys evicted (`eviction`) in
/// database 0, the memcached door's.
struct FeedWatcher(Arc<Inner>);

/// What this thread is doing, for the lines of the writes it makes.
#[derive(Clone, Copy)]
enum Doing {
    /// Not running memcached requests: a write from another door (RESP, HTTP) shows as
    /// `cmd=set` with `cfd=-1`.
    Other,
    /// Running memcached requests: their writes show only when they are stores (memcached
    /// logs no line for touch, gat, incr or decr).
    Door,
    /// Running a memcached store: its `cmd=` name and the connection's file descriptor.
    Store(&'static str, i64),
}

thread_local! {
    static DOING: Cell<Doing> = const { Cell::new(Doing::Other) };
}

/// Marks this thread as running memcached requests until dropped ([`door`]).
pub(super) struct DoorScope(bool);

/// Marks this thread as running memcached requests while the returned scope lives, when
/// some watcher wants mutations (otherwise nothing to do).
pub(super) fn door(cx: &Ctx<'_>) -> DoorScope {
    let on = cx.mc.watch.wants(MUTATIONS);
    if on {
        DOING.set(Doing::Door);
    }
    DoorScope(on)
}

impl Drop for DoorScope {
    fn drop(&mut self) {
        if self.0 {
            DOING.set(Doing::Other);
        }
    }
}

impl Consumer for FeedWatcher {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let flags = self.0.flags.load(Ordering::Relaxed);
        for c in changes.iter().filter(|c| c.db == 0) {
            let now_ms = larder_engine::now_ms();
            let m = c.entry;
            match c.kind {
                ChangeKind::Written if flags & MUTATIONS != 0 => {
                    let (cmd, cfd) = match DOING.get() {
                        Doing::Other => ("set", -1),
                        Doing::Door => continue,
                        Doing::Store(cmd, cfd) => (cmd, cfd),
                    };
                    let ttl = ttl_left(m.expire_at_ms, now_ms);
                    self.0.log(MUTATIONS, |ts, gid| {
                        line::item_store(
                            ts,
                            gid,
                            &c.key,
                            StoreStatus::Stored,
                            cmd,
                            ttl,
                            slabs::class_of(m.footprint).0,
                            cfd,
                            m.len,
                        )
                    });
                }
                ChangeKind::Evicted if flags & EVICTIONS != 0 => {
                    let ttl = if m.expire_at_ms == 0 {
                        -1
                    } else {
                        i64::from(ttl_left(m.expire_at_ms, now_ms))
                    };
                    let la = larder_engine::lru_clock(now_ms).saturating_sub(m.access);
                    let fetched = m.mc_state & items::FETCHED != 0;
                    let clsid = slabs::class_of(m.footprint).0;
                    self.0.log(EVICTIONS, |ts, gid| {
                        line::eviction(ts, gid, &c.key, fetched, ttl, la, clsid, m.len)
                    });
                }
                _ => {}
            }
        }
    }
}

/// Whole seconds until `expire_at_ms` (0 for none or past), as memcached's `ttl=`.
fn ttl_left(expire_at_ms: u64, now_ms: u64) -> u32 {
    if expire_at_ms == 0 {
        return 0;
    }
    u32::try_from(expire_at_ms.saturating_sub(now_ms).div_ceil(1000)).unwrap_or(u32::MAX)
}

/// `watch [fetchers|mutations|evictions|connevents|...] [noreply]`: `OK`, then the lines.
/// With no argument, memcached watches fetchers. memcached's other streams (`rawcmds`,
/// `sysevents`, the proxy's) are accepted and never produce a line in larder.
pub(super) fn command(cx: &Ctx<'_>, args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let noreply = args.last() == Some(b"noreply".as_slice());
    let mut flags = 0;
    for arg in args {
        flags |= match arg {
            b"rawcmds" => RAWCMDS,
            b"evictions" => EVICTIONS,
            b"fetchers" => FETCHERS,
            b"mutations" => MUTATIONS,
            b"sysevents" => SYSEVENTS,
            b"connevents" => CONNEVENTS,
            b"proxyreqs" => PROXYREQS,
            b"proxyevents" => PROXYEVENTS,
            b"proxyuser" => PROXYUSER,
            _ => {
                if !noreply {
                    w.reply(TextReply::Error);
                }
                return Flow::Continue;
            }
        };
    }
    if args.is_empty() {
        flags = FETCHERS;
    }
    let Some(handle) = cx.mc.conns.lock().get(&cx.conn_id).cloned() else {
        w.raw(b"WATCHER_FAILED failed to add log watcher\r\n");
        return Flow::Continue;
    };
    let watch = &cx.mc.watch;
    {
        let inner = &watch.inner;
        let mut watchers = inner.watchers.lock();
        if watchers.len() >= WATCHER_LIMIT {
            w.raw(b"WATCHER_TOO_MANY log watcher limit reached\r\n");
            return Flow::Continue;
        }
        // memcached numbers the watcher's start too: its first line is the next number.
        let min_gid = inner.gid.fetch_add(1, Ordering::Relaxed) + 1;
        watchers.push(Watcher {
            handle,
            flags,
            skipped: 0,
            min_gid,
        });
        inner.refresh(&watchers);
    }
    watch.sync_feed(Some(cx.server.keyspace.feed()));
    w.reply(TextReply::Ok);
    Flow::Watch
}

/// Whether `watch` came after other requests whose answers are not written yet: memcached
/// refuses it then (`ERROR cannot pipeline other commands before watch`), and this writes
/// that answer.
pub(super) fn refused_after_pipeline(
    req: &larder_memcache::TextRequest<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let watch = matches!(
        req,
        larder_memcache::TextRequest::Admin {
            command: larder_memcache::AdminCommand::Watch,
            ..
        }
    );
    if watch && !out.is_empty() {
        out.extend_from_slice(b"ERROR cannot pipeline other commands before watch\r\n");
        return true;
    }
    false
}

impl Ctx<'_> {
    /// A fetch of `key` by the memcached door: `found`, with a value of `size` bytes.
    #[inline]
    pub(super) fn watch_get(&self, key: &[u8], found: Read, size: usize) {
        if self.mc.watch.wants(FETCHERS) {
            self.log_get(key, found, size);
        }
    }

    #[inline(never)]
    fn log_get(&self, key: &[u8], found: Read, size: usize) {
        let cfd = self.fd();
        let found = match found {
            Read::Hit => Fetch::Found,
            Read::Miss => Fetch::NotFound,
            Read::Expired => Fetch::Expired,
        };
        // memcached names the class of a found item (0 for a miss).
        let clsid = match found {
            Fetch::Found => {
                items::footprint(self.db(), key, self.now_ms).map_or(0, |f| slabs::class_of(f).0)
            }
            _ => 0,
        };
        self.mc.watch.inner.log(FETCHERS, |ts, gid| {
            line::item_get(ts, gid, key, found, clsid, cfd, size)
        });
    }

    /// The lookup memcached makes before a store, delete, incr, decr or touch, logged for
    /// watchers of fetchers (a look at the item, made only while someone watches).
    #[inline]
    pub(super) fn watch_lookup(&self, key: &[u8]) {
        if self.mc.watch.wants(FETCHERS) {
            let mut len = 0;
            let found = items::read(self.db(), key, self.now_ms, Access::Peek, |item| {
                len = item.value.len();
            });
            self.log_get(key, found, len);
        }
    }

    /// This connection's file descriptor (memcached's `cfd=`).
    fn fd(&self) -> i64 {
        self.mc.conns.lock().get(&self.conn_id).map_or(-1, |h| h.fd)
    }
}

/// Runs a memcached door store of `key` (`run`), logging for watchers as memcached does: the
/// lookup of the current item (`fetchers`), and the outcome (`mutations`: a stored item's
/// line comes from the feed, a refused store's from here, with the requested `deadline`
/// and the value's `size`).
pub(super) fn store(
    cx: &Ctx<'_>,
    key: &[u8],
    mode: StoreMode,
    deadline: Deadline,
    size: usize,
    run: impl FnOnce() -> StoreOutcome,
) -> StoreOutcome {
    let watch = &cx.mc.watch;
    if !watch.wants(FETCHERS | MUTATIONS) {
        return run();
    }
    cx.watch_lookup(key);
    let cmd = match mode {
        StoreMode::Add => "add",
        StoreMode::Set => "set",
        StoreMode::Replace => "replace",
        StoreMode::Append => "append",
        StoreMode::Prepend => "prepend",
        StoreMode::Cas => "cas",
    };
    let cfd = cx.fd();
    let before = DOING.replace(Doing::Store(cmd, cfd));
    let outcome = run();
    DOING.set(before);
    let status = match outcome {
        StoreOutcome::Stored { .. } => return outcome,
        StoreOutcome::NotStored => StoreStatus::NotStored,
        StoreOutcome::Exists => StoreStatus::Exists,
        StoreOutcome::NotFound => StoreStatus::NotFound,
    };
    if watch.wants(MUTATIONS) {
        let ttl = match deadline {
            Deadline::AtMs(ms) => ttl_left(ms, cx.now_ms),
            Deadline::Never | Deadline::Expired => 0,
        };
        watch.inner.log(MUTATIONS, |ts, gid| {
            line::item_store(ts, gid, key, status, cmd, ttl, 0, cfd, size)
        });
    }
    outcome
}
