//! The reclaim timer: a server thread ([`run`]) that takes back messages delivered longer
//! ago than their queue's visibility timeout and not acknowledged, so the next get hands
//! them to another worker.
//!
//! It keeps a registry ([`Timer`], `Server::queues`) of the queues that have messages, each
//! with when the timer should next look at it; with none, the thread sleeps until a queue
//! command adds one. The registry is built at start, after the data loaded, from each
//! database's `queue:index`; a put, a get that hands a message out, a publish and a setting
//! add their queue, and QTIMEOUT asks for a look at once (its deadlines changed).
//!
//! A look reads the queue's timeout and its levels' pending entries straight from the
//! keyspace: an internal read, not a command, so it shows in neither MONITOR nor the command
//! statistics. Only a level that has something due gets a command: XAUTOCLAIM through the
//! executor (it moves the messages to the `(reclaimed)` consumer), so that write is logged,
//! replicated and replayed like any other, and shows where writes show. The next look is
//! when the earliest pending entry becomes due, and at the latest one timeout from now: a
//! message delivered after this look (by a raw XREADGROUP too) cannot be due before then.
//! A queue whose level streams are all gone leaves the registry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::Thread;

use larder_engine::stream::{Stream, StreamId};
use larder_engine::Object;
use parking_lot::Mutex;

use super::names::{level_key, meta_key, GROUP, INDEX_KEY, LEVELS, RECLAIM};
use super::ops::{DEFAULT_TIMEOUT_MS, Q, TIMEOUT_FIELD};
use crate::exec::ConnState;
use crate::state::Server;

/// XAUTOCLAIM calls per level per look (100 messages each); more waits for the next look,
/// which comes at once.
const CLAIMS_PER_LOOK: usize = 10;

/// The queues the reclaim timer looks after.
#[derive(Default)]
pub struct Timer {
    /// Database → queue name → when to look at it next (Unix ms).
    queues: Mutex<HashMap<usize, HashMap<Vec<u8>, u64>>>,
    /// When the timer thread plans to wake (Unix ms; `u64::MAX`: when told). Written under
    /// `queues`' lock, so a look asked for in between is never missed.
    wake_at: AtomicU64,
    thread: Mutex<Option<Thread>>,
}

impl Timer {
    /// Queue `name` of database `db` may have messages: the timer looks after it (at once,
    /// if it did not already).
    pub fn add(&self, db: usize, name: &[u8]) {
        self.schedule(db, name, false);
    }

    /// The queue's deadlines changed (its timeout): the timer looks at it at once.
    pub fn look_now(&self, db: usize, name: &[u8]) {
        self.schedule(db, name, true);
    }

    fn schedule(&self, db: usize, name: &[u8], now: bool) {
        let mut queues = self.queues.lock();
        let names = queues.entry(db).or_default();
        match names.get_mut(name) {
            Some(at) if now => *at = 0,
            Some(_) => return,
            None => {
                names.insert(name.to_vec(), 0);
            }
        }
        if self.wake_at.load(Ordering::Relaxed) > 0 {
            self.wake_at.store(0, Ordering::Relaxed);
            if let Some(t) = &*self.thread.lock() {
                t.unpark();
            }
        }
    }

    /// How many queues it looks after.
    pub fn len(&self) -> usize {
        self.queues.lock().values().map(HashMap::len).sum()
    }

    /// Whether it looks after no queue.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queues due at `now_ms`, each marked as being looked at (`u64::MAX`).
    fn take_due(&self, now_ms: u64) -> Vec<(usize, Vec<u8>)> {
        let mut due = Vec::new();
        for (&db, names) in self.queues.lock().iter_mut() {
            for (name, at) in names.iter_mut().filter(|(_, at)| **at <= now_ms) {
                *at = u64::MAX;
                due.push((db, name.clone()));
            }
        }
        due
    }

    /// A look ended: the next is at `next` (`None`: the queue leaves the registry), or
    /// sooner if one was asked for meanwhile.
    fn looked(&self, db: usize, name: &[u8], next: Option<u64>) {
        let mut queues = self.queues.lock();
        let Some(names) = queues.get_mut(&db) else {
            return;
        };
        match (names.get_mut(name), next) {
            (Some(at), Some(next)) => *at = (*at).min(next),
            // Gone, unless a look was asked for meanwhile.
            (Some(&mut u64::MAX), None) => {
                names.remove(name);
            }
            _ => {}
        }
    }

    /// The earliest look (`u64::MAX`: none), published as the planned wake-up.
    pub(super) fn plan(&self) -> u64 {
        let queues = self.queues.lock();
        let next = queues
            .values()
            .flat_map(HashMap::values)
            .copied()
            .min()
            .unwrap_or(u64::MAX);
        self.wake_at.store(next, Ordering::Relaxed);
        next
    }
}

/// The timer thread's body, on `conn` (a connection of its own), until `stopping`: waits for
/// the data to load, builds the registry from `queue:index`, then looks at each queue when
/// it is due and sleeps until the next is (unparked by [`Timer::add`] or to stop).
pub fn run(server: &Server, conn: &mut ConnState, stopping: &dyn Fn() -> bool) {
    *server.queues.thread.lock() = Some(std::thread::current());
    while server.gates.loading.load(Ordering::Relaxed) {
        if stopping() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    rebuild(server);
    while !stopping() {
        pass(server, conn, larder_engine::now_ms());
        let next = server.queues.plan();
        let now = larder_engine::now_ms();
        match next {
            u64::MAX => std::thread::park(),
            at if at > now => std::thread::park_timeout(std::time::Duration::from_millis(at - now)),
            _ => {}
        }
    }
}

/// Adds every queue of every database's `queue:index` to the registry.
pub fn rebuild(server: &Server) {
    for db in 0..server.keyspace.db_count() {
        let names = server.keyspace.db(db).peek(INDEX_KEY, |o| match o {
            Some(Object::Set(s)) => Some(s.to_vecs()),
            _ => None,
        });
        let Some(names) = names else {
            continue;
        };
        for name in names {
            server.queues.add(db, &name);
        }
    }
}

/// Looks at every queue due at `now_ms`; the number of messages reclaimed.
pub fn pass(server: &Server, conn: &mut ConnState, now_ms: u64) -> i64 {
    let mut n = 0;
    for (db, name) in server.queues.take_due(now_ms) {
        let (reclaimed, next) = look(server, conn, db, &name, now_ms);
        n += reclaimed;
        server.queues.looked(db, &name, next);
    }
    conn.db = 0;
    n
}

/// What a look at one queue found: messages reclaimed, and when to look next (`None`: the
/// queue has no level stream left).
fn look(
    server: &Server,
    conn: &mut ConnState,
    db: usize,
    name: &[u8],
    now: u64,
) -> (i64, Option<u64>) {
    let timeout = read_timeout(server, db, name);
    let mut next = now.saturating_add(timeout);
    let mut due = Vec::new();
    let mut any = false;
    for p in 0..LEVELS {
        let key = level_key(name, p);
        let level = server.keyspace.db(db).peek(&key, |o| match o {
            Some(Object::Stream(s)) => Some(earliest_deadline(s, timeout)),
            _ => None,
        });
        let Some(deadline) = level else {
            continue;
        };
        any = true;
        match deadline {
            Some(at) if at <= now => due.push(p),
            Some(at) => next = next.min(at),
            None => {}
        }
    }
    if !any {
        return (0, None);
    }
    let mut n = 0;
    conn.db = db;
    let mut q = Q {
        server,
        conn,
        name,
        now_ms: now,
    };
    for p in due {
        let (claimed, finished) = q.reclaim(p, timeout, CLAIMS_PER_LOOK);
        n += claimed;
        if !finished {
            next = now;
        }
    }
    (n, Some(next))
}

/// The earliest time (Unix ms) an entry delivered to a worker of the level's group becomes
/// due; `None` when none is pending with a worker.
fn earliest_deadline(s: &Stream, timeout: u64) -> Option<u64> {
    let group = s.groups.as_ref()?.get(GROUP)?;
    group
        .pending_range(StreamId::MIN, StreamId::MAX)
        .filter(|(_, nack)| nack.consumer() != RECLAIM)
        .map(|(_, nack)| nack.delivery_time_ms.saturating_add(timeout))
        .min()
}

/// The queue's visibility timeout, read from its meta hash.
fn read_timeout(server: &Server, db: usize, name: &[u8]) -> u64 {
    let set = server.keyspace.db(db).peek(&meta_key(name), |o| match o {
        Some(Object::Hash(h)) => h.get(TIMEOUT_FIELD).and_then(crate::args::parse_u64),
        _ => None,
    });
    set.filter(|&ms| ms > 0).unwrap_or(DEFAULT_TIMEOUT_MS)
}
