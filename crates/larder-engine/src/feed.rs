//! The change feed: one record for every change to the keyspace, made by the engine while the
//! changed shard is locked, whatever caused the change (a RESP command, a memcached request,
//! active or lazy expiry, eviction, a flush).
//!
//! Records are gathered per thread into a *group*: everything one command (or one transaction)
//! changed. A group is committed while every shard it touched is still locked: the feed takes
//! its ordering lock, gives the group the next sequence number and hands it to each consumer
//! in turn. Two writes to the same key are therefore committed in the order they ran (the
//! second waits for the first's shard lock, which is released only after the commit), and the
//! sequence numbers form one total order consistent with execution. A consumer sees a group
//! whole, after it committed, never a part of it.
//!
//! Who opens a group:
//! - a shard locked on its own ([`crate::Db::lock`]) commits its records when it is unlocked;
//! - [`Feed::group`] opens a group that spans several locks (a multi-key command, MULTI/EXEC):
//!   the caller locks every shard first, opens the group, runs, and drops the group before
//!   unlocking. Groups nest; the outermost one commits.
//!
//! Nothing is recorded while no consumer has asked for it ([`Feed::subscribe`]), so the write
//! path pays one relaxed atomic load per change when the feed is idle.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::entry::{Entry, Object};

mod argv;
pub use argv::{write_args, write_varint, Args, Argv};

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// Created or changed (value, deadline or both); `version` is the new version.
    Written,
    /// Removed by a command (DEL, a list emptied, RENAME's source, overwritten by MOVE...).
    Deleted,
    /// Removed because its deadline passed, found by a reader (lazy) or the expiry cycle.
    Expired,
    /// Removed by maxmemory eviction.
    Evicted,
    /// Every key of database `db` removed at once (FLUSHDB, FLUSHALL); `key` is empty.
    Flushed,
    /// Databases `db` and `other_db` swapped (SWAPDB); `key` is empty.
    Swapped,
    /// A Redis keyspace notification that the command that made the changes raised (an
    /// `event` name such as `lpush`, and its `class`); no data changed by itself.
    Notice,
    /// The command to replay for the data changes recorded before it in the group (in
    /// `argv`): the request as the client sent it, or what its handler said to record instead
    /// so that replay is deterministic (EXPIRE as PEXPIREAT, INCRBYFLOAT as SET ... KEEPTTL).
    /// Recorded for a consumer with [`Interest::COMMANDS`] (the append-only log, replication).
    Command,
}

impl ChangeKind {
    /// Whether the key is gone after this change.
    pub fn removes(self) -> bool {
        matches!(
            self,
            ChangeKind::Deleted | ChangeKind::Expired | ChangeKind::Evicted
        )
    }
}

/// A copy of a value, carried by a change when a consumer asked for values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    String(Vec<u8>),
    /// A list, head first.
    List(Vec<Vec<u8>>),
    /// A hash: each field with its value.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A set's members.
    Set(Vec<Vec<u8>>),
    /// A sorted set's members with their scores (as IEEE bits, so that `Value` is `Eq`),
    /// lowest first.
    ZSet(Vec<(Vec<u8>, u64)>),
}

impl Value {
    /// A copy of the entry's value.
    pub fn of(entry: &Entry) -> Value {
        match entry.object() {
            Some(Object::List(l)) => Value::List(l.iter().map(|e| e.to_vec()).collect()),
            Some(Object::Hash(h)) => {
                Value::Hash(h.pairs().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
            }
            Some(Object::Set(s)) => Value::Set(s.to_vecs()),
            Some(Object::ZSet(z)) => {
                Value::ZSet(z.scored().map(|(m, s)| (m.to_vec(), s.to_bits())).collect())
            }
            _ => Value::String(entry.string().unwrap_or_default().to_vec()),
        }
    }
}

/// One change to the keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub db: u32,
    pub key: Vec<u8>,
    /// The new version for `Written`; the removed entry's version for removals; 0 otherwise.
    pub version: u64,
    /// The new value (`Written`) or the removed one (removals), when a consumer asked for
    /// values ([`Interest::VALUES`]).
    pub value: Option<Value>,
    /// `Notice`: Redis's event name; `Swapped`: empty.
    pub event: &'static str,
    /// `Notice`: the notification class (a bit of [`crate::feed::class`]); `Swapped`: the
    /// other database.
    pub class: u32,
    /// `Command`: the request to replay, name first; empty otherwise.
    pub argv: Argv,
    /// `Written`: the entry's memcached client flags when the change was recorded. A
    /// `Command` a door recorded for a key's resulting state ([`Feed::command_now`]) carries
    /// that key in `key`, with its `version` and `flags`.
    pub flags: u32,
    /// Data changes: the entry's deadline, size, last access and memcached state when the
    /// change was recorded (the written entry, or the removed one); zero otherwise.
    pub entry: EntryMeta,
}

/// What a data change's entry looked like, for consumers that describe items (memcached's
/// `watch` log lines) without copying values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryMeta {
    /// Deadline in Unix ms (0: none).
    pub expire_at_ms: u64,
    /// The string value's length (0 for other types).
    pub len: usize,
    /// LRU clock (seconds) of the last access.
    pub access: u32,
    /// The memcached state bits ([`Entry::mc_state`]).
    pub mc_state: u8,
    /// The memory the entry takes ([`Entry::memory_bytes`]).
    pub footprint: usize,
}

/// Redis's keyspace notification classes (`notify-keyspace-events` letters).
pub mod class {
    pub const GENERIC: u32 = 1 << 0; // g
    pub const STRING: u32 = 1 << 1; // $
    pub const LIST: u32 = 1 << 2; // l
    pub const SET: u32 = 1 << 3; // s
    pub const HASH: u32 = 1 << 4; // h
    pub const ZSET: u32 = 1 << 5; // z
    pub const EXPIRED: u32 = 1 << 6; // x
    pub const EVICTED: u32 = 1 << 7; // e
    pub const STREAM: u32 = 1 << 8; // t
    pub const KEY_MISS: u32 = 1 << 9; // m
    pub const MODULE: u32 = 1 << 10; // d
    pub const NEW: u32 = 1 << 11; // n
}

/// What a consumer wants recorded (a bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interest(pub u32);

impl Interest {
    /// Data changes (`Written`, removals, flushes).
    pub const CHANGES: Interest = Interest(1 << 0);
    /// Data changes with copies of the values.
    pub const VALUES: Interest = Interest(1 << 1);
    /// Keyspace notifications; which classes is [`Feed::set_notice_classes`]'s business.
    pub const NOTICES: Interest = Interest(1 << 2);
    /// Data changes, and after each command's changes the command to replay for them
    /// ([`ChangeKind::Command`]): what a log or a replica needs.
    pub const COMMANDS: Interest = Interest(1 << 3);
}

impl std::ops::BitOr for Interest {
    type Output = Interest;
    fn bitor(self, rhs: Interest) -> Interest {
        Interest(self.0 | rhs.0)
    }
}

/// A receiver of committed groups.
///
/// Called with the feed's ordering lock and the group's shard locks held, in sequence order,
/// so it must be quick and must never block on a client: a consumer appends to buffers and
/// wakes whoever reads them. Lossless consumers (a log, replication, blocked clients,
/// tracking invalidations) handle every group; lossy ones (pub/sub of values) may drop, and
/// must then tell their reader so.
pub trait Consumer: Send + Sync {
    /// A committed group, whole. `seq` increases by one per group across the keyspace.
    fn committed(&self, seq: u64, changes: &[Change]);

    /// [`Consumer::committed`], answering whether the consumer wants [`Consumer::settle`]
    /// called once the feed's locks are released (to change its interest, which it cannot
    /// do while the commit holds them).
    fn committed_then_settle(&self, seq: u64, changes: &[Change]) -> bool {
        self.committed(seq, changes);
        false
    }

    /// Runs after a commit for which [`Consumer::committed_then_settle`] answered true, on
    /// the committing thread, with the feed's locks released (the group's shard locks are
    /// still held).
    fn settle(&self) {}
}

struct Subscription {
    id: u64,
    interest: Interest,
    consumer: Arc<dyn Consumer>,
}

/// The keyspace's change feed: where groups are ordered and handed to consumers.
pub struct Feed {
    /// Union of the consumers' interests (an `Interest` bit set), read on every change.
    wanted: AtomicU32,
    /// Keyspace notification classes that some consumer wants (`notify-keyspace-events`).
    notice_classes: AtomicU32,
    /// The ordering point: the last sequence number given and the consumers, under the one
    /// lock a commit takes.
    order: Mutex<Order>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Default for Feed {
    fn default() -> Self {
        Feed::new()
    }
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("wanted", &self.wanted.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Thread-local group under construction.
struct Pending {
    depth: u32,
    changes: Vec<Change>,
    /// How many of `changes` are data changes (not notices or commands).
    data: usize,
}

/// What the feed's ordering lock guards.
struct Order {
    /// The last sequence number given.
    seq: u64,
    subscriptions: Vec<Subscription>,
}

thread_local! {
    static PENDING: RefCell<Pending> = const {
        RefCell::new(Pending { depth: 0, changes: Vec::new(), data: 0 })
    };
}

impl Feed {
    pub fn new() -> Feed {
        Feed {
            wanted: AtomicU32::new(0),
            notice_classes: AtomicU32::new(0),
            order: Mutex::new(Order {
                seq: 0,
                subscriptions: Vec::new(),
            }),
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Add a consumer; returns its id for [`Feed::unsubscribe`].
    pub fn subscribe(&self, interest: Interest, consumer: Arc<dyn Consumer>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut order = self.order.lock();
        order.subscriptions.push(Subscription {
            id,
            interest,
            consumer,
        });
        self.recompute(&order.subscriptions);
        id
    }

    /// Change what consumer `id` wants.
    pub fn set_interest(&self, id: u64, interest: Interest) {
        let mut order = self.order.lock();
        if let Some(s) = order.subscriptions.iter_mut().find(|s| s.id == id) {
            s.interest = interest;
        }
        self.recompute(&order.subscriptions);
    }

    /// Remove consumer `id`.
    pub fn unsubscribe(&self, id: u64) {
        let mut order = self.order.lock();
        order.subscriptions.retain(|s| s.id != id);
        self.recompute(&order.subscriptions);
    }

    fn recompute(&self, subs: &[Subscription]) {
        let all = subs.iter().fold(0, |a, s| a | s.interest.0);
        self.wanted.store(all, Ordering::Relaxed);
    }

    /// The keyspace notification classes to record (0: none).
    pub fn set_notice_classes(&self, classes: u32) {
        self.notice_classes.store(classes, Ordering::Relaxed);
    }

    /// Whether data changes are recorded now.
    #[inline]
    pub fn records_changes(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
            & (Interest::CHANGES.0 | Interest::VALUES.0 | Interest::COMMANDS.0)
            != 0
    }

    /// Whether commands are recorded now (a consumer asked for [`Interest::COMMANDS`]).
    #[inline]
    pub fn records_commands(&self) -> bool {
        self.wanted.load(Ordering::Relaxed) & Interest::COMMANDS.0 != 0
    }

    /// Record the command to replay for the data changes this thread recorded since
    /// `since` (a [`data_changes`] count): nothing if there were none, as Redis propagates
    /// only commands that changed something.
    pub fn command(&self, db: usize, since: usize, argv: Argv) {
        if !self.records_commands() || data_changes() == since {
            return;
        }
        push(Change {
            kind: ChangeKind::Command,
            db: db as u32,
            key: Vec::new(),
            version: 0,
            value: None,
            event: "",
            class: 0,
            argv,
            flags: 0,
            entry: EntryMeta::default(),
        });
    }

    /// Record `argv` as the command to replay for the changes just recorded on this thread,
    /// for a door that runs no command of the table (memcached): call it under the shard
    /// lock, after the change, so it joins the change's group. `state` is the key the command
    /// leaves behind with its version and memcached flags (they follow the command in the
    /// log), when there is one.
    pub fn command_now(&self, db: usize, argv: Argv, state: Option<(&Entry, u32)>) {
        if self.records_commands() {
            let (key, version, flags) = match state {
                Some((e, flags)) => (e.key().to_vec(), e.version(), flags),
                None => (Vec::new(), 0, 0),
            };
            push(Change {
                kind: ChangeKind::Command,
                db: db as u32,
                key,
                version,
                value: None,
                event: "",
                class: 0,
                argv,
                flags,
                entry: EntryMeta::default(),
            });
        }
    }

    /// The sequence number of the last committed group. Read it with every shard locked
    /// (a snapshot's point) to know exactly which groups came before.
    pub fn last_seq(&self) -> u64 {
        self.order.lock().seq
    }

    /// Continue numbering after `seq` (recovery: the last group replayed from the log), so
    /// sequence numbers keep increasing across restarts.
    pub fn resume_after(&self, seq: u64) {
        let mut order = self.order.lock();
        order.seq = order.seq.max(seq);
    }

    /// Whether changes carry values now.
    #[inline]
    pub fn records_values(&self) -> bool {
        self.wanted.load(Ordering::Relaxed) & Interest::VALUES.0 != 0
    }

    /// Whether a notification of `class` would be recorded now.
    #[inline]
    pub fn wants_notice(&self, class: u32) -> bool {
        self.wanted.load(Ordering::Relaxed) & Interest::NOTICES.0 != 0
            && self.notice_classes.load(Ordering::Relaxed) & class != 0
    }

    /// Record a data change made under a shard lock (the engine calls this after checking
    /// [`Feed::records_changes`], so it stays out of the write path's inlined code).
    #[inline(never)]
    pub(crate) fn record(&self, kind: ChangeKind, db: u32, entry: &Entry) {
        if !self.records_changes() {
            return;
        }
        let value = self.records_values().then(|| Value::of(entry));
        push(Change {
            kind,
            db,
            key: entry.key().to_vec(),
            version: entry.version(),
            value,
            event: "",
            class: 0,
            argv: Argv::default(),
            flags: entry.flags,
            entry: EntryMeta {
                expire_at_ms: entry.expire_at_ms().unwrap_or(0),
                len: entry.string().map_or(0, <[u8]>::len),
                access: entry.access(),
                mc_state: entry.mc_state(),
                footprint: entry.memory_bytes(),
            },
        });
    }

    /// Record a whole-database change (flush, swap) made with every shard of the database(s)
    /// locked.
    pub(crate) fn record_db(&self, kind: ChangeKind, db: u32, other: u32) {
        if !self.records_changes() {
            return;
        }
        push(Change {
            kind,
            db,
            key: Vec::new(),
            version: 0,
            value: None,
            event: "",
            class: other,
            argv: Argv::default(),
            flags: 0,
            entry: EntryMeta::default(),
        });
    }

    /// Record a keyspace notification (`event` of `class` on `key`), if it is wanted. Call it
    /// while the key's shard is locked, after the change it announces, so it lands in that
    /// change's group.
    #[inline]
    pub fn notice(&self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        if self.wants_notice(class) {
            push_notice(class, event, db, key);
        }
    }

    /// Open a group spanning several shard locks: everything recorded on this thread until the
    /// returned scope is dropped commits as one group. Take every lock first and drop the
    /// scope before unlocking.
    pub fn group(&self) -> GroupScope<'_> {
        PENDING.with(|p| p.borrow_mut().depth += 1);
        GroupScope { feed: self }
    }

    /// A shard locked on its own is being unlocked: commit what it recorded, unless a group
    /// is open.
    #[inline]
    pub(crate) fn unlocked(&self) {
        // Nothing is recorded while no consumer wants anything: skip the thread-local.
        if self.wanted.load(Ordering::Relaxed) != 0 {
            self.commit_if_outermost();
        }
    }

    fn commit_if_outermost(&self) {
        let changes = PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if p.depth > 0 || p.changes.is_empty() {
                return None;
            }
            p.data = 0;
            Some(std::mem::take(&mut p.changes))
        });
        if let Some(changes) = changes {
            self.commit(changes);
        }
    }

    fn commit(&self, mut changes: Vec<Change>) {
        // Consumers to settle once the locks are released (rarely any: no allocation then).
        let mut settle: Vec<Arc<dyn Consumer>> = Vec::new();
        {
            let mut order = self.order.lock();
            order.seq += 1;
            let seq = order.seq;
            for s in order.subscriptions.iter() {
                let wants = s.interest.0
                    & (Interest::CHANGES.0 | Interest::VALUES.0 | Interest::COMMANDS.0)
                    != 0
                    || changes.iter().any(|c| c.kind == ChangeKind::Notice);
                if wants && s.consumer.committed_then_settle(seq, &changes) {
                    settle.push(Arc::clone(&s.consumer));
                }
            }
        }
        for c in &settle {
            c.settle();
        }
        // Hand the buffer back so the next group on this thread does not allocate.
        changes.clear();
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if p.changes.capacity() == 0 && changes.capacity() <= 1024 {
                p.changes = changes;
            }
        });
    }
}

/// The part of [`Feed::notice`] that runs only when notifications are wanted.
#[inline(never)]
fn push_notice(class: u32, event: &'static str, db: usize, key: &[u8]) {
    push(Change {
        kind: ChangeKind::Notice,
        db: db as u32,
        key: key.to_vec(),
        version: 0,
        value: None,
        event,
        class,
        argv: Argv::default(),
        flags: 0,
        entry: EntryMeta::default(),
    });
}

/// How many data changes (not notices or commands) this thread has recorded in its open
/// group so far.
pub fn data_changes() -> usize {
    PENDING.with(|p| p.borrow().data)
}

/// Where this thread's open group stands now, for [`rollback`].
pub fn mark() -> usize {
    PENDING.with(|p| p.borrow().changes.len())
}

/// Drop what this thread recorded in its open group since `mark`, except removals of keys
/// past their deadline or evicted: they happened whatever becomes of the rest. For a script
/// run that is abandoned before its group commits, after its keys were put back.
pub fn rollback(mark: usize) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let mut kept = 0;
        let mut i = mark;
        while i < p.changes.len() {
            let kind = p.changes[i].kind;
            if matches!(kind, ChangeKind::Expired | ChangeKind::Evicted) {
                p.changes.swap(mark + kept, i);
                kept += 1;
            } else if !matches!(kind, ChangeKind::Notice | ChangeKind::Command) {
                p.data -= 1;
            }
            i += 1;
        }
        p.changes.truncate(mark + kept);
    });
}

#[inline]
fn push(change: Change) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if !matches!(change.kind, ChangeKind::Notice | ChangeKind::Command) {
            p.data += 1;
        }
        p.changes.push(change);
    });
}

/// An open group (see [`Feed::group`]); dropping the outermost one commits it.
pub struct GroupScope<'a> {
    feed: &'a Feed,
}

impl Drop for GroupScope<'_> {
    fn drop(&mut self) {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            p.depth = p.depth.saturating_sub(1);
        });
        self.feed.commit_if_outermost();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    pub(crate) struct Collect(pub Mutex<Vec<(u64, Vec<Change>)>>);

    impl Consumer for Collect {
        fn committed(&self, seq: u64, changes: &[Change]) {
            self.0.lock().push((seq, changes.to_vec()));
        }
    }

    #[test]
    fn idle_feed_records_nothing_and_groups_nest() {
        let feed = Arc::new(Feed::new());
        let e = Entry::new_string(b"k", b"v");
        feed.record(ChangeKind::Written, 0, &e);
        feed.unlocked();
        let c = Arc::new(Collect::default());
        let id = feed.subscribe(Interest::CHANGES, c.clone());
        {
            let _outer = feed.group();
            {
                let _inner = feed.group();
                feed.record(ChangeKind::Written, 0, &e);
            }
            feed.unlocked();
            assert!(c.0.lock().is_empty(), "committed inside an open group");
            feed.record(ChangeKind::Deleted, 1, &e);
        }
        let got = c.0.lock().clone();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 1);
        let kinds: Vec<_> = got[0].1.iter().map(|c| (c.kind, c.db)).collect();
        assert_eq!(
            kinds,
            vec![(ChangeKind::Written, 0), (ChangeKind::Deleted, 1)]
        );
        assert!(got[0].1[0].value.is_none());
        feed.unsubscribe(id);
        feed.record(ChangeKind::Written, 0, &e);
        feed.unlocked();
        assert_eq!(c.0.lock().len(), 1);
    }

    #[test]
    fn rollback_keeps_expirations_and_drops_the_rest() {
        let feed = Arc::new(Feed::new());
        let c = Arc::new(Collect::default());
        feed.subscribe(Interest::CHANGES, c.clone());
        let e = Entry::new_string(b"k", b"v");
        {
            let _group = feed.group();
            feed.record(ChangeKind::Written, 0, &e);
            let mark = mark();
            let before = data_changes();
            feed.record(ChangeKind::Written, 1, &e);
            feed.record(ChangeKind::Expired, 2, &e);
            feed.record(ChangeKind::Deleted, 3, &e);
            feed.record(ChangeKind::Evicted, 4, &e);
            rollback(mark);
            assert_eq!(data_changes(), before + 2);
        }
        let got = c.0.lock().clone();
        let kinds: Vec<_> = got[0].1.iter().map(|c| (c.kind, c.db)).collect();
        assert_eq!(
            kinds,
            vec![
                (ChangeKind::Written, 0),
                (ChangeKind::Expired, 2),
                (ChangeKind::Evicted, 4)
            ]
        );
    }

    #[test]
    fn notices_only_for_wanted_classes() {
        let feed = Arc::new(Feed::new());
        let c = Arc::new(Collect::default());
        feed.subscribe(Interest::NOTICES, c.clone());
        feed.notice(class::LIST, "lpush", 0, b"k");
        feed.unlocked();
        assert!(c.0.lock().is_empty());
        feed.set_notice_classes(class::LIST);
        feed.notice(class::STRING, "set", 0, b"k");
        feed.notice(class::LIST, "lpush", 0, b"k");
        feed.unlocked();
        let got = c.0.lock().clone();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1.len(), 1);
        assert_eq!(got[0].1[0].event, "lpush");
    }
}
