//! The watch registry: a lossy change-feed consumer that turns changes into SSE events for
//! watchers, remembers recent events for `Last-Event-ID`, wakes long polls, and sends
//! heartbeats to every open stream.
//!
//! It asks the feed for changes ([`Interest::CHANGES`], or [`Interest::VALUES`] while a
//! watcher wants values) while a watcher or a long poll exists, and for [`LINGER_MS`] after
//! the last one left, so that a client that reconnects resumes without a gap. Then it asks
//! for nothing and stops numbering changes; the next activation starts a new stretch, and a
//! `Last-Event-ID` from before it is answered with `resync`.
//!
//! Every change it sees while recording gets the next id (one sequence for every watcher).
//! Ids start at the registry's creation time in ms × 1000, so an id a client kept from an
//! earlier run of the server is older than any of this run's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use larder_commands::config::Param;
use larder_commands::mail::Refused;
use larder_commands::state::ClientHandle;
use larder_commands::Server;
use larder_engine::{Change, ChangeKind, Consumer, Feed, Interest};
use parking_lot::Mutex;

use super::sse::{self, Resync};

/// How long the feed is still watched after the last watcher or long poll left.
pub const LINGER_MS: u64 = 60_000;
/// The history kept for `Last-Event-ID`: at most this many events...
const RING_EVENTS: usize = 10_000;
/// ... and at most this many bytes of their text.
const RING_BYTES: usize = 8 << 20;
/// How often the heartbeat thread looks at the streams.
const TICK: Duration = Duration::from_millis(200);

/// An event type, as `event:` names it and `events=` filters it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Set,
    Del,
    Expired,
    Evicted,
    Flush,
    Swap,
}

impl Kind {
    /// Every kind, as a bit set.
    pub const ALL: u8 = 0b11_1111;

    pub fn bit(self) -> u8 {
        1 << self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Set => "set",
            Kind::Del => "del",
            Kind::Expired => "expired",
            Kind::Evicted => "evicted",
            Kind::Flush => "flush",
            Kind::Swap => "swap",
        }
    }

    pub fn parse(word: &str) -> Option<Kind> {
        [
            Kind::Set,
            Kind::Del,
            Kind::Expired,
            Kind::Evicted,
            Kind::Flush,
            Kind::Swap,
        ]
        .into_iter()
        .find(|k| k.name() == word)
    }

    fn of(kind: ChangeKind) -> Option<Kind> {
        Some(match kind {
            ChangeKind::Written => Kind::Set,
            ChangeKind::Deleted => Kind::Del,
            ChangeKind::Expired => Kind::Expired,
            ChangeKind::Evicted => Kind::Evicted,
            ChangeKind::Flushed => Kind::Flush,
            ChangeKind::Swapped => Kind::Swap,
            ChangeKind::Notice | ChangeKind::Command => return None,
        })
    }
}

/// One change, as every watcher may get it.
struct Event {
    id: u64,
    kind: Kind,
    db: u32,
    /// `swap`: the other database.
    other: Option<u32>,
    key: Vec<u8>,
    /// The event's text without the value.
    plain: Vec<u8>,
    /// With the value: a `set` whose value was recorded.
    valued: Option<Vec<u8>>,
}

impl Event {
    fn bytes(&self) -> usize {
        self.key.len() + self.plain.len() + self.valued.as_ref().map_or(0, Vec::len)
    }

    /// The text for a watcher, `None` when it wants the value and it was not recorded.
    fn text(&self, values: bool) -> Option<&[u8]> {
        match (&self.valued, values && self.kind == Kind::Set) {
            (Some(v), true) => Some(v),
            (None, true) => None,
            (_, false) => Some(&self.plain),
        }
    }
}

/// What a watcher asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub db: u32,
    /// Exact keys; with `prefixes`, none of either means every key.
    pub keys: Vec<Vec<u8>>,
    pub prefixes: Vec<Vec<u8>>,
    /// [`Kind`] bits.
    pub kinds: u8,
    /// Include values in `set` events.
    pub values: bool,
}

impl Filter {
    /// Whether the event concerns the watcher: a key event of its database and keys, or a
    /// flush or swap of its database (whatever its keys).
    fn matches(&self, ev: &Event) -> bool {
        if self.kinds & ev.kind.bit() == 0 {
            return false;
        }
        match ev.kind {
            Kind::Flush => ev.db == self.db,
            Kind::Swap => ev.db == self.db || ev.other == Some(self.db),
            _ => {
                ev.db == self.db
                    && ((self.keys.is_empty() && self.prefixes.is_empty())
                        || self.keys.contains(&ev.key)
                        || self.prefixes.iter().any(|p| ev.key.starts_with(p)))
            }
        }
    }
}

/// Where a new watcher starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// From now on.
    Fresh,
    /// After this `Last-Event-ID`.
    After(u64),
    /// A `Last-Event-ID` that is no id: resync, then from now on.
    Unknown,
}

struct Watcher {
    handle: Arc<ClientHandle>,
    filter: Filter,
    /// Events not sent since the last one that was.
    missed: u64,
}

impl Watcher {
    /// Posts the event, preceded by a `resync` if events were missed; a post over the budget
    /// is skipped and counted.
    fn deliver(&mut self, ev: &Event, budget: u64) {
        let h = &self.handle;
        let text = ev.text(self.filter.values).unwrap_or(&ev.plain);
        let missed = self.missed;
        let unsent = h.output_buf_bytes.load(Ordering::Relaxed);
        match h.mail.post_within(h.id, budget, unsent, |out| {
            if missed > 0 {
                sse::resync(out, Resync::Behind { missed });
            }
            out.extend_from_slice(text);
        }) {
            Ok(()) => self.missed = 0,
            Err(Refused::OverBudget) => self.missed += 1,
            // Closing: nothing more to tell it.
            Err(Refused::Closed | Refused::OverLimit) => {}
        }
    }
}

/// An open stream, for heartbeats and the cap.
struct Stream {
    handle: Arc<ClientHandle>,
    every_ms: u64,
    next_ms: u64,
}

#[derive(Default)]
struct State {
    /// Changes are numbered and delivered (the feed is asked for them).
    recording: bool,
    last_id: u64,
    /// The oldest `Last-Event-ID` the ring can resume after without a gap.
    resume_from: u64,
    ring: VecDeque<Event>,
    ring_bytes: usize,
    watchers: HashMap<u64, Watcher>,
    /// `(db, key)` → the clients whose long poll waits on it.
    polls: HashMap<(u32, Vec<u8>), Vec<Arc<ClientHandle>>>,
    /// Client id → the key its long poll waits on.
    polling: HashMap<u64, (u32, Vec<u8>)>,
    /// When the last watcher or long poll left (0: one exists, or none ever did).
    idle_since_ms: u64,
}

impl State {
    fn push_ring(&mut self, ev: Event) {
        self.ring_bytes += ev.bytes();
        self.ring.push_back(ev);
        while self.ring.len() > RING_EVENTS || self.ring_bytes > RING_BYTES {
            let Some(old) = self.ring.pop_front() else {
                break;
            };
            self.ring_bytes -= old.bytes();
            self.resume_from = self.resume_from.max(old.id);
        }
    }

    /// Wakes the long polls the event concerns; they register again if they still wait.
    fn wake_polls(&mut self, ev: &Event) {
        if self.polls.is_empty() {
            return;
        }
        let woken: Vec<Arc<ClientHandle>> = match ev.kind {
            Kind::Flush | Kind::Swap => {
                let dbs = [Some(ev.db), ev.other];
                let keys: Vec<(u32, Vec<u8>)> = self
                    .polls
                    .keys()
                    .filter(|(db, _)| dbs.contains(&Some(*db)))
                    .cloned()
                    .collect();
                keys.iter()
                    .filter_map(|k| self.polls.remove(k))
                    .flatten()
                    .collect()
            }
            _ => self
                .polls
                .remove(&(ev.db, ev.key.clone()))
                .unwrap_or_default(),
        };
        for h in woken {
            self.polling.remove(&h.id);
            h.mail.unblock(h.id);
        }
    }

    /// The events after `after` that `filter` matches, or `None` when the history cannot
    /// give all of them.
    fn replay(&self, after: u64, filter: &Filter) -> Option<Vec<u8>> {
        if !self.recording || after < self.resume_from || after > self.last_id {
            return None;
        }
        let mut out = Vec::new();
        for ev in self.ring.iter().filter(|e| e.id > after) {
            if filter.matches(ev) {
                out.extend_from_slice(ev.text(filter.values)?);
            }
        }
        Some(out)
    }
}

/// The registry's shared part: the feed consumer and what the heartbeat thread reads.
#[derive(Default)]
pub struct Inner {
    state: Mutex<State>,
    streams: Mutex<HashMap<u64, Stream>>,
    /// Held while the feed's interest is changed, so that it follows the last change. Never
    /// taken at commit (a commit holds the feed's consumer list, which setting the interest
    /// writes), and never taken with `state` held.
    toggle: Mutex<()>,
    feed: OnceLock<(Weak<Feed>, u64)>,
    /// `http-sse-buffer-limit`, refreshed by the heartbeat thread and each new stream.
    budget: AtomicU64,
}

impl Inner {
    /// A registry subscribed to the server's feed (asking for nothing yet), with its
    /// heartbeat thread.
    pub fn install(server: &Arc<Server>) -> Arc<Inner> {
        let inner = Arc::new(Inner::default());
        {
            let mut st = inner.state.lock();
            st.last_id = larder_engine::now_ms().saturating_mul(1000);
            st.resume_from = st.last_id + 1;
        }
        inner.refresh_budget(server);
        let feed = server.keyspace.feed();
        let id = feed.subscribe(Interest::default(), Arc::clone(&inner) as Arc<dyn Consumer>);
        let _ = inner.feed.set((Arc::downgrade(feed), id));
        let (weak, server) = (Arc::downgrade(&inner), Arc::downgrade(server));
        let spawned = std::thread::Builder::new()
            .name("http-watch".into())
            .spawn(move || heartbeats(&weak, &server));
        if let Err(e) = spawned {
            tracing::warn!("no heartbeat thread for Server-Sent Events: {e}");
        }
        inner
    }

    pub fn refresh_budget(&self, server: &Server) {
        let limit = server.config.num(Param::HttpSseBufferLimit).max(0) as u64;
        self.budget.store(limit, Ordering::Relaxed);
    }

    /// Sets the feed's interest from who watches; `joining` is a watcher about to register
    /// (whether it wants values), or a long poll (`Some(false)`).
    fn sync(&self, now_ms: u64, joining: Option<bool>) {
        let _toggle = self.toggle.lock();
        let (interest, turn_on) = {
            let mut st = self.state.lock();
            let busy = joining.is_some() || !st.watchers.is_empty() || !st.polls.is_empty();
            if busy {
                st.idle_since_ms = 0;
            } else if st.recording && st.idle_since_ms == 0 {
                st.idle_since_ms = now_ms.max(1);
            }
            let on = busy || (st.recording && now_ms.saturating_sub(st.idle_since_ms) < LINGER_MS);
            if !on {
                st.recording = false;
            }
            let values = joining == Some(true) || st.watchers.values().any(|w| w.filter.values);
            let interest = match (on, values) {
                (false, _) => Interest::default(),
                (true, false) => Interest::CHANGES,
                (true, true) => Interest::VALUES,
            };
            (interest, on && !st.recording)
        };
        if let Some((feed, id)) = self.feed.get() {
            if let Some(feed) = feed.upgrade() {
                feed.set_interest(*id, interest);
            }
        }
        if turn_on {
            // Changes committed from here on are all seen: a new stretch of ids begins.
            let mut st = self.state.lock();
            st.recording = true;
            st.resume_from = st.last_id + 1;
        }
    }

    /// Opens a stream (a watch or a subscription) for heartbeats; false when `cap` streams
    /// are open already.
    pub fn open_stream(&self, handle: &Arc<ClientHandle>, every_ms: u64, cap: usize) -> bool {
        let mut streams = self.streams.lock();
        if streams.len() >= cap {
            return false;
        }
        streams.insert(
            handle.id,
            Stream {
                handle: Arc::clone(handle),
                every_ms,
                next_ms: larder_engine::now_ms() + every_ms,
            },
        );
        true
    }

    /// Registers a watcher; writes to `out` (after the response head) what it missed since
    /// `resume`, or a `resync` when that cannot be told.
    pub fn join(
        &self,
        handle: &Arc<ClientHandle>,
        filter: Filter,
        resume: Resume,
        out: &mut Vec<u8>,
    ) {
        self.sync(larder_engine::now_ms(), Some(filter.values));
        let mut st = self.state.lock();
        match resume {
            Resume::Fresh => {}
            Resume::After(id) => match st.replay(id, &filter) {
                Some(events) => out.extend_from_slice(&events),
                None => sse::resync(out, Resync::History),
            },
            Resume::Unknown => sse::resync(out, Resync::History),
        }
        st.watchers.insert(
            handle.id,
            Watcher {
                handle: Arc::clone(handle),
                filter,
                missed: 0,
            },
        );
    }

    /// Registers a long poll on `(db, key)` (again, after a wake-up); call before looking at
    /// the key, so a change after the look wakes it.
    pub fn add_poll(&self, handle: &Arc<ClientHandle>, db: u32, key: &[u8]) {
        self.sync(larder_engine::now_ms(), Some(false));
        let mut st = self.state.lock();
        let slot = (db, key.to_vec());
        if st.polling.get(&handle.id) == Some(&slot) {
            return;
        }
        if let Some(old) = st.polling.insert(handle.id, slot.clone()) {
            remove_from(&mut st.polls, &old, handle.id);
        }
        st.polls.entry(slot).or_default().push(Arc::clone(handle));
    }

    /// The client's long poll ended.
    pub fn remove_poll(&self, id: u64) {
        {
            let mut st = self.state.lock();
            if let Some(slot) = st.polling.remove(&id) {
                remove_from(&mut st.polls, &slot, id);
            }
        }
        self.sync(larder_engine::now_ms(), None);
    }

    /// The client is gone: it leaves every list.
    pub fn leave(&self, id: u64) {
        self.streams.lock().remove(&id);
        {
            let mut st = self.state.lock();
            st.watchers.remove(&id);
            if let Some(slot) = st.polling.remove(&id) {
                remove_from(&mut st.polls, &slot, id);
            }
        }
        self.sync(larder_engine::now_ms(), None);
    }

    /// Heartbeats that are due, and the end of a linger.
    pub fn tick(&self, now_ms: u64) {
        let budget = self.budget.load(Ordering::Relaxed);
        for s in self.streams.lock().values_mut() {
            if s.next_ms <= now_ms {
                s.next_ms = now_ms + s.every_ms;
                let h = &s.handle;
                let unsent = h.output_buf_bytes.load(Ordering::Relaxed);
                // A stream over its budget is stalled: it learns of that by the resync.
                let _ = h
                    .mail
                    .post_within(h.id, budget, unsent, |out| out.extend_from_slice(sse::PING));
            }
        }
        self.sync(now_ms, None);
    }

    /// Whether the feed is asked for changes now (tests).
    #[cfg(test)]
    pub fn recording(&self) -> bool {
        self.state.lock().recording
    }
}

fn remove_from(
    polls: &mut HashMap<(u32, Vec<u8>), Vec<Arc<ClientHandle>>>,
    slot: &(u32, Vec<u8>),
    id: u64,
) {
    if let Some(v) = polls.get_mut(slot) {
        v.retain(|h| h.id != id);
        if v.is_empty() {
            polls.remove(slot);
        }
    }
}

/// The heartbeat thread: runs while the registry and the server exist.
fn heartbeats(inner: &Weak<Inner>, server: &Weak<Server>) {
    loop {
        std::thread::sleep(TICK);
        let (Some(inner), Some(server)) = (inner.upgrade(), server.upgrade()) else {
            return;
        };
        inner.refresh_budget(&server);
        drop(server);
        inner.tick(larder_engine::now_ms());
    }
}

impl Consumer for Inner {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        if !st.recording {
            return;
        }
        let budget = self.budget.load(Ordering::Relaxed);
        for c in changes {
            let Some(kind) = Kind::of(c.kind) else {
                continue;
            };
            st.last_id += 1;
            let id = st.last_id;
            let ev = match kind {
                Kind::Flush => Event {
                    id,
                    kind,
                    db: c.db,
                    other: None,
                    key: Vec::new(),
                    plain: sse::db_change(id, kind.name(), c.db, None),
                    valued: None,
                },
                Kind::Swap => Event {
                    id,
                    kind,
                    db: c.db,
                    other: Some(c.class),
                    key: Vec::new(),
                    plain: sse::db_change(id, kind.name(), c.db, Some(c.class)),
                    valued: None,
                },
                _ => {
                    let value = if kind == Kind::Set {
                        c.value.as_ref()
                    } else {
                        None
                    };
                    let (plain, valued) =
                        sse::change(id, kind.name(), c.db, &c.key, c.version, value);
                    Event {
                        id,
                        kind,
                        db: c.db,
                        other: None,
                        key: c.key.clone(),
                        plain,
                        valued,
                    }
                }
            };
            st.wake_polls(&ev);
            for w in st.watchers.values_mut() {
                if w.filter.matches(&ev) {
                    w.deliver(&ev, budget);
                }
            }
            st.push_ring(ev);
        }
    }
}
