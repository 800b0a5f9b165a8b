//! `flush_all` with a delay: a deadline after which every item stored before it is gone.
//!
//! memcached implements the delay lazily: items whose last store is older than the deadline
//! are treated as missing once it has passed. larder removes them at the deadline instead:
//! the memcached database is cleared by whichever comes first, the timer thread waking at
//! the deadline or a memcached request served after it. Items stored after the command but
//! before the deadline are removed too, as in memcached; items stored after the deadline
//! stay. A later `flush_all` replaces a pending one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use larder_engine::Keyspace;
use parking_lot::Mutex;

use crate::items::{self, Deadline};

/// No flush pending.
const NONE: u64 = u64::MAX;

/// The pending delayed flush, if any.
pub struct FlushTimer {
    /// Unix ms at which the pending flush happens; [`NONE`] when there is none.
    at_ms: AtomicU64,
    /// The timer thread, to wake when a new deadline is set.
    thread: Mutex<Option<std::thread::Thread>>,
}

impl Default for FlushTimer {
    fn default() -> Self {
        FlushTimer {
            at_ms: AtomicU64::new(NONE),
            thread: Mutex::new(None),
        }
    }
}

impl FlushTimer {
    /// `flush_all <delay>`: flush now (`delay <= 0`, or an absolute time already past), or
    /// schedule the flush for the deadline, replacing any pending one.
    pub fn flush_all(&self, keyspace: &Keyspace, delay: i64, now_ms: u64) {
        let deadline = if delay <= 0 {
            Deadline::Expired
        } else {
            Deadline::from_exptime(delay, now_ms)
        };
        match deadline {
            Deadline::AtMs(at) if at > now_ms => {
                self.at_ms.store(at, Ordering::Release);
                if let Some(t) = self.thread.lock().as_ref() {
                    t.unpark();
                }
            }
            _ => {
                self.at_ms.store(NONE, Ordering::Release);
                items::flush(keyspace.db(0));
            }
        }
    }

    /// Runs a pending flush whose deadline has passed. One atomic load when none is due.
    pub fn run_due(&self, keyspace: &Keyspace, now_ms: u64) {
        let at = self.at_ms.load(Ordering::Acquire);
        if at <= now_ms
            && self
                .at_ms
                .compare_exchange(at, NONE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            items::flush(keyspace.db(0));
        }
    }

    /// The deadline of the pending flush, if any.
    pub fn pending_ms(&self) -> Option<u64> {
        let at = self.at_ms.load(Ordering::Acquire);
        (at != NONE).then_some(at)
    }

    /// The timer: runs on its own thread until `stop` returns true, sleeping until the
    /// pending deadline (woken early by [`FlushTimer::flush_all`] and at shutdown).
    pub fn run(&self, keyspace: &Keyspace, stop: impl Fn() -> bool) {
        *self.thread.lock() = Some(std::thread::current());
        while !stop() {
            let now = larder_engine::now_ms();
            self.run_due(keyspace, now);
            let sleep_ms = match self.pending_ms() {
                Some(at) => at.saturating_sub(now).clamp(1, 1000),
                None => 1000,
            };
            std::thread::park_timeout(Duration::from_millis(sleep_ms));
        }
        *self.thread.lock() = None;
    }

    /// Wakes the timer thread (at shutdown, after `stop` turned true).
    pub fn wake(&self) {
        if let Some(t) = self.thread.lock().as_ref() {
            t.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{store, Store};
    use larder_memcache::StoreMode;

    const NOW: u64 = 1_700_000_000_000;

    fn put(ks: &Keyspace, key: &[u8], now_ms: u64) {
        let req = Store {
            mode: StoreMode::Set,
            data: b"v",
            flags: 0,
            deadline: Deadline::Never,
            compare_cas: None,
            new_cas: None,
            invalidate: false,
            binary_key: false,
            item_size_max: 1 << 20,
        };
        store(ks.db(0), key, now_ms, &req);
    }

    #[test]
    fn immediate_flush() {
        let ks = Keyspace::new(1);
        let t = FlushTimer::default();
        put(&ks, b"a", NOW);
        t.flush_all(&ks, 0, NOW);
        assert_eq!(ks.db(0).len(), 0);
        put(&ks, b"b", NOW);
        t.flush_all(&ks, -5, NOW);
        assert_eq!(ks.db(0).len(), 0);
        assert_eq!(t.pending_ms(), None);
    }

    #[test]
    fn delayed_flush_takes_items_stored_before_the_deadline() {
        let ks = Keyspace::new(1);
        let t = FlushTimer::default();
        put(&ks, b"a", NOW);
        t.flush_all(&ks, 2, NOW);
        assert_eq!(t.pending_ms(), Some(NOW + 2000));
        put(&ks, b"b", NOW + 1000);
        t.run_due(&ks, NOW + 1999);
        assert_eq!(ks.db(0).len(), 2);
        t.run_due(&ks, NOW + 2000);
        assert_eq!(ks.db(0).len(), 0);
        put(&ks, b"c", NOW + 2001);
        t.run_due(&ks, NOW + 5000);
        assert_eq!(ks.db(0).len(), 1);
    }

    #[test]
    fn a_later_flush_replaces_a_pending_one() {
        let ks = Keyspace::new(1);
        let t = FlushTimer::default();
        t.flush_all(&ks, 10, NOW);
        t.flush_all(&ks, 0, NOW);
        assert_eq!(t.pending_ms(), None);
        // An absolute time in the past flushes at once.
        put(&ks, b"a", NOW);
        t.flush_all(&ks, 2_592_001, NOW);
        assert_eq!(ks.db(0).len(), 0);
    }
}
