//! Delivering bytes to a connection from any thread: a client's outbox, and the mailbox of the
//! worker that owns the connection.
//!
//! A connection's output belongs to its worker. Another thread (a publisher on another worker,
//! the expiry thread announcing an expired key) appends to the client's [`Mail`] outbox
//! instead, and posts a wake-up to the worker's mailbox only when the outbox goes from empty to
//! non-empty, so a burst of messages costs one wake-up. The worker moves the outbox into the
//! connection's output when it handles the wake-up.
//!
//! Output limits (`client-output-buffer-limit`, Redis's classes and semantics) are checked
//! here, when bytes are posted: a client whose outbox plus unsent output passes its class's
//! hard limit, or stays past the soft limit for its seconds, is closed, logged and counted,
//! never skipped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Most capacity an empty outbox keeps between messages.
const OUTBOX_KEEP: usize = 64 * 1024;

/// The worker side of delivery: what the network layer gives each client.
pub trait Mailbox: Send + Sync {
    /// Ask the worker to move client `token`'s outbox (client id `id`) into its output.
    fn wake(&self, token: usize, id: u64);

    /// Ask the worker to run again the requests a CLIENT PAUSE held (the pause was lifted).
    fn resume(&self) {}

    /// Ask the worker to run client `token`'s blocked request again (client id `id`): a key
    /// it waits on was written, or CLIENT UNBLOCK ended its wait.
    fn unblock(&self, _token: usize, _id: u64) {}

    /// The log became durable further (or failed): run the replies held for it, if this
    /// worker holds any (`appendfsync always`).
    fn durable(&self) {}
}

/// Output limits of one client class: hard bytes, soft bytes, soft seconds (0 = none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    pub hard_bytes: u64,
    pub soft_bytes: u64,
    pub soft_seconds: u64,
}

/// Why a post was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The client is over its output limit: it is being closed.
    OverLimit,
    /// The client is already closing.
    Closed,
    /// Queuing the bytes would take the client past the budget given to
    /// [`Mail::post_within`]: nothing was queued, and the client stays.
    OverBudget,
}

#[derive(Default)]
struct Outbox {
    /// Queued bytes, oldest first, in chunks of about `CHUNK` bytes: a backlog of megabytes
    /// (a subscriber that stopped reading) never needs one large buffer regrown and copied,
    /// which stalled the worker for milliseconds at each doubling.
    chunks: VecDeque<Vec<u8>>,
    /// Bytes in `chunks`.
    len: usize,
    /// An emptied chunk kept for the next one.
    spare: Vec<u8>,
    /// When the client passed its soft limit (Unix ms; 0 = it is under it).
    soft_since_ms: u64,
    /// Set once the client was found over its limit: nothing more is queued.
    over: bool,
}

/// The size an outbox chunk is started with (a larger message makes a larger chunk).
const CHUNK: usize = 16 * 1024;

impl Outbox {
    /// Append what `write` writes, to the last chunk while it has room; returns the bytes
    /// written (all in the last chunk).
    fn write(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> usize {
        if self.chunks.back().is_none_or(|c| c.len() >= CHUNK) {
            let mut chunk = std::mem::take(&mut self.spare);
            chunk.reserve(CHUNK);
            self.chunks.push_back(chunk);
        }
        let Some(last) = self.chunks.back_mut() else {
            return 0;
        };
        let before = last.len();
        write(last);
        let added = last.len() - before;
        self.len += added;
        added
    }

    /// Take back the last `n` bytes written.
    fn unwrite(&mut self, n: usize) {
        if let Some(last) = self.chunks.back_mut() {
            last.truncate(last.len() - n.min(last.len()));
            self.len -= n.min(self.len);
        }
    }

    fn clear(&mut self) {
        self.chunks = VecDeque::new();
        self.len = 0;
    }

    /// [`Refused::OverLimit`] if the outbox plus `unsent` is past `limit` (hard, or soft for
    /// long enough): it is then marked over and emptied, and nothing more is queued.
    fn checked(&mut self, limit: Limit, unsent: usize, now_ms: u64) -> Result<(), Refused> {
        let total = (self.len + unsent) as u64;
        let hard = limit.hard_bytes > 0 && total >= limit.hard_bytes;
        let soft = limit.soft_bytes > 0 && total >= limit.soft_bytes;
        let soft_expired = if soft {
            if self.soft_since_ms == 0 {
                self.soft_since_ms = now_ms.max(1);
            }
            now_ms.saturating_sub(self.soft_since_ms) >= limit.soft_seconds * 1000
        } else {
            self.soft_since_ms = 0;
            false
        };
        if hard || soft_expired {
            self.over = true;
            self.clear();
            return Err(Refused::OverLimit);
        }
        Ok(())
    }
}

/// A client's outbox and the way to its worker.
pub struct Mail {
    outbox: Mutex<Outbox>,
    /// The outbox's length, stored under its lock whenever it changes, so the worker can see
    /// without the lock that there is nothing to move ([`Mail::move_ahead`]).
    queued: AtomicUsize,
    mailbox: Option<Arc<dyn Mailbox>>,
    token: usize,
}

impl Default for Mail {
    fn default() -> Self {
        Mail {
            outbox: Mutex::new(Outbox::default()),
            queued: AtomicUsize::new(0),
            mailbox: None,
            token: 0,
        }
    }
}

impl Mail {
    /// Mail for the connection at `token` of the worker behind `mailbox`.
    pub fn new(mailbox: Arc<dyn Mailbox>, token: usize) -> Mail {
        Mail {
            outbox: Mutex::new(Outbox::default()),
            queued: AtomicUsize::new(0),
            mailbox: Some(mailbox),
            token,
        }
    }

    /// Wake the worker to run this client's blocked request again (see
    /// [`Mailbox::unblock`]); `id` is the client's id.
    pub fn unblock(&self, id: u64) {
        if let Some(m) = &self.mailbox {
            m.unblock(self.token, id);
        }
    }

    /// Append what `write` writes to the outbox, unless that would take the client past
    /// `limit` (counting `unsent`, the bytes its worker has not written yet); wake the worker
    /// if the outbox was empty.
    pub fn post(
        &self,
        id: u64,
        limit: Limit,
        unsent: usize,
        now_ms: u64,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), Refused> {
        self.queue(id, |o| {
            o.write(write);
            o.checked(limit, unsent, now_ms)
        })
    }

    /// [`Mail::post`] for bytes already in chunks (a replica's stream gathered during its
    /// full resync): they join the outbox as they are, without a copy.
    pub fn post_chunks(
        &self,
        id: u64,
        limit: Limit,
        unsent: usize,
        now_ms: u64,
        chunks: Vec<Vec<u8>>,
    ) -> Result<(), Refused> {
        self.queue(id, |o| {
            for chunk in chunks.into_iter().filter(|c| !c.is_empty()) {
                o.len += chunk.len();
                o.chunks.push_back(chunk);
            }
            o.checked(limit, unsent, now_ms)
        })
    }

    /// Append what `write` writes to the outbox only if the outbox plus `unsent` then holds at
    /// most `budget` bytes (0: no budget); otherwise queue nothing and answer
    /// [`Refused::OverBudget`]. For lossy deliveries (value events) that skip a message rather
    /// than close the client: this never marks the client over its limit. Wakes the worker if
    /// the outbox was empty.
    pub fn post_within(
        &self,
        id: u64,
        budget: u64,
        unsent: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), Refused> {
        self.queue(id, |o| {
            let added = o.write(write);
            if budget > 0 && (o.len + unsent) as u64 > budget {
                o.unwrite(added);
                return Err(Refused::OverBudget);
            }
            Ok(())
        })
    }

    /// Run `fill` on the outbox unless the client is closed; wake the worker if the outbox
    /// was empty and `fill` queued.
    fn queue(
        &self,
        id: u64,
        fill: impl FnOnce(&mut Outbox) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        let was_empty;
        {
            let mut o = self.outbox.lock();
            if o.over {
                return Err(Refused::Closed);
            }
            was_empty = o.len == 0;
            let filled = fill(&mut o);
            self.queued.store(o.len, Ordering::Release);
            filled?;
        }
        if was_empty {
            if let Some(m) = &self.mailbox {
                m.wake(self.token, id);
            }
        }
        Ok(())
    }

    /// Take everything queued (the worker, on a wake-up).
    pub fn take(&self) -> Vec<u8> {
        let mut o = self.outbox.lock();
        o.len = 0;
        self.queued.store(0, Ordering::Release);
        std::mem::take(&mut o.chunks)
            .into_iter()
            .flatten()
            .collect()
    }

    /// Move queued chunks, oldest first, to the end of `out` until it holds at least `max`
    /// bytes or the outbox is empty (the worker, when the connection's output is empty).
    /// The first chunk moved into an empty `out` is swapped in, not copied. Returns whether
    /// anything moved. An empty outbox costs one atomic load, not the lock: a post that
    /// lands meanwhile wakes the worker, which looks again.
    #[inline]
    pub fn move_into(&self, out: &mut Vec<u8>, max: usize) -> bool {
        if self.queued.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.move_queued(out, max)
    }

    fn move_queued(&self, out: &mut Vec<u8>, max: usize) -> bool {
        let mut o = self.outbox.lock();
        let mut moved = false;
        while out.len() < max {
            let Some(mut chunk) = o.chunks.pop_front() else {
                break;
            };
            o.len -= chunk.len();
            moved |= !chunk.is_empty();
            if out.is_empty() {
                std::mem::swap(out, &mut chunk);
            } else {
                out.extend_from_slice(&chunk);
            }
            chunk.clear();
            if chunk.capacity() <= OUTBOX_KEEP && o.spare.capacity() < chunk.capacity() {
                o.spare = chunk;
            }
        }
        self.queued.store(o.len, Ordering::Release);
        moved
    }

    /// Before the worker runs requests it has just read: move what is queued, up to `max`
    /// bytes more in `out`, to the end of `out`, ahead of the replies those requests will
    /// add. Whatever another thread posted before the client sent them (a notification of a
    /// write the client saw acknowledged on another connection) then reaches the client
    /// before their replies, as with a single-threaded Redis. Costs one atomic load when
    /// nothing is queued; returns whether anything moved.
    #[inline]
    pub fn move_ahead(&self, out: &mut Vec<u8>, max: usize) -> bool {
        self.move_into(out, out.len().saturating_add(max))
    }

    /// Bytes queued and not yet taken.
    pub fn queued(&self) -> usize {
        self.outbox.lock().len
    }

    /// Whether the client went over its output limit.
    pub fn over_limit(&self) -> bool {
        self.outbox.lock().over
    }
}

/// Clients closed for passing an output limit (INFO stats).
pub static OUTPUT_LIMIT_DISCONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// Count and log a client closed for its output limit.
pub fn note_over_limit(addr: &str, id: u64, class: &str) {
    OUTPUT_LIMIT_DISCONNECTIONS.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        client = %addr,
        id,
        class,
        "client closed for overcoming of output buffer limits"
    );
}

/// `client-output-buffer-limit`: `class hard soft seconds` triples for the classes `normal`,
/// `replica` (`slave`) and `pubsub`, parsed into (numeric form unused, the text CONFIG GET
/// shows). Missing classes keep Redis's defaults.
pub fn parse_output_limits(value: &str) -> Result<[Limit; 3], String> {
    let mut limits = DEFAULT_LIMITS;
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() % 4 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    for chunk in words.chunks(4) {
        let class = match chunk[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = crate::config::parse_memory(chunk[1]);
        let soft = crate::config::parse_memory(chunk[2]);
        let secs = chunk[3].parse::<i64>().ok();
        let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        if hard < 0 || soft < 0 || secs < 0 {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        }
        limits[class] = Limit {
            hard_bytes: hard as u64,
            soft_bytes: soft as u64,
            soft_seconds: secs as u64,
        };
    }
    Ok(limits)
}

/// Redis's defaults: normal unlimited, replica 256mb 64mb 60, pubsub 32mb 8mb 60.
pub const DEFAULT_LIMITS: [Limit; 3] = [
    Limit {
        hard_bytes: 0,
        soft_bytes: 0,
        soft_seconds: 0,
    },
    Limit {
        hard_bytes: 256 << 20,
        soft_bytes: 64 << 20,
        soft_seconds: 60,
    },
    Limit {
        hard_bytes: 32 << 20,
        soft_bytes: 8 << 20,
        soft_seconds: 60,
    },
];

/// The text CONFIG GET shows for parsed limits (Redis's: classes in order, bytes as numbers).
pub fn format_output_limits(limits: &[Limit; 3]) -> String {
    let names = ["normal", "slave", "pubsub"];
    names
        .iter()
        .zip(limits)
        .map(|(n, l)| format!("{n} {} {} {}", l.hard_bytes, l.soft_bytes, l.soft_seconds))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(std::sync::atomic::AtomicUsize);
    impl Mailbox for Count {
        fn wake(&self, _: usize, _: u64) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn one_wake_per_burst_and_limits_close() {
        let count = Arc::new(Count(Default::default()));
        let mail = Mail::new(count.clone(), 7);
        let limit = Limit {
            hard_bytes: 100,
            soft_bytes: 50,
            soft_seconds: 1,
        };
        for _ in 0..3 {
            mail.post(1, limit, 0, 1000, |b| b.extend_from_slice(b"0123456789"))
                .expect("under the limits");
        }
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        assert_eq!(mail.take().len(), 30);
        mail.post(1, limit, 0, 1000, |b| b.push(b'x'))
            .expect("posted");
        assert_eq!(count.0.load(Ordering::Relaxed), 2);
        // Past the soft limit: allowed for a second, then closed.
        mail.post(1, limit, 60, 2000, |b| b.push(b'x'))
            .expect("soft, in time");
        assert_eq!(
            mail.post(1, limit, 60, 3001, |b| b.push(b'x')),
            Err(Refused::OverLimit)
        );
        assert_eq!(mail.post(1, limit, 0, 3002, |_| {}), Err(Refused::Closed));
        // The hard limit closes at once.
        let mail = Mail::default();
        assert_eq!(
            mail.post(1, limit, 95, 0, |b| b.extend_from_slice(b"0123456789")),
            Err(Refused::OverLimit)
        );
    }

    #[test]
    fn chunks_move_in_whole_with_one_wake_and_the_limit() {
        let count = Arc::new(Count(Default::default()));
        let mail = Mail::new(count.clone(), 5);
        let limit = Limit {
            hard_bytes: 100,
            soft_bytes: 0,
            soft_seconds: 0,
        };
        mail.post(1, limit, 0, 1000, |b| b.extend_from_slice(b"head"))
            .expect("under the limit");
        let chunks = vec![b"0123456789".to_vec(), Vec::new(), b"abc".to_vec()];
        mail.post_chunks(1, limit, 0, 1000, chunks)
            .expect("under the limit");
        assert_eq!(mail.queued(), 17);
        assert_eq!(
            count.0.load(Ordering::Relaxed),
            1,
            "the outbox was not empty"
        );
        assert_eq!(mail.take(), b"head0123456789abc");
        assert_eq!(
            mail.post_chunks(1, limit, 90, 1000, vec![vec![b'x'; 20]]),
            Err(Refused::OverLimit)
        );
        assert_eq!(mail.queued(), 0);
    }

    #[test]
    fn posts_within_a_budget_skip_and_never_close() {
        let count = Arc::new(Count(Default::default()));
        let mail = Mail::new(count.clone(), 3);
        mail.post_within(1, 10, 0, |b| b.extend_from_slice(b"01234"))
            .expect("fits");
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        // 5 queued + 2 unsent + 4 new > 10: refused, nothing queued.
        assert_eq!(
            mail.post_within(1, 10, 2, |b| b.extend_from_slice(b"abcd")),
            Err(Refused::OverBudget)
        );
        assert_eq!(mail.queued(), 5);
        assert!(!mail.over_limit());
        mail.post_within(1, 10, 1, |b| b.extend_from_slice(b"abcd"))
            .expect("exactly at the budget");
        assert_eq!(mail.take(), b"01234abcd");
        // No budget: anything goes; an empty outbox wakes the worker again.
        mail.post_within(1, 0, 1 << 40, |b| b.push(b'x'))
            .expect("no budget");
        assert_eq!(count.0.load(Ordering::Relaxed), 2);
        // A client closed for its output limit takes nothing more.
        let limit = Limit {
            hard_bytes: 4,
            ..Limit::default()
        };
        assert_eq!(
            mail.post(1, limit, 10, 0, |b| b.push(b'y')),
            Err(Refused::OverLimit)
        );
        assert_eq!(
            mail.post_within(1, 0, 0, |b| b.push(b'z')),
            Err(Refused::Closed)
        );
    }

    #[test]
    fn output_limits_parse_like_redis() {
        let l = parse_output_limits("pubsub 1mb 512kb 10").expect("valid");
        assert_eq!(
            format_output_limits(&l),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"
        );
        assert!(parse_output_limits("foo 1 2 3")
            .expect_err("an error")
            .contains("Invalid client class"));
        assert!(parse_output_limits("pubsub 1 2").is_err());
    }
}

#[cfg(test)]
mod move_tests {
    use super::*;

    /// Moving into an empty output swaps buffers (no copy, and the outbox keeps the output's
    /// old allocation); into a non-empty one it appends. Either way the outbox ends empty.
    #[test]
    fn move_into_swaps_or_appends() {
        let mail = Mail::default();
        let limit = Limit::default();
        mail.post(1, limit, 0, 0, |b| b.extend_from_slice(b"abc"))
            .expect("posted");
        let mut out = Vec::with_capacity(128);
        assert!(mail.move_into(&mut out, usize::MAX));
        assert_eq!(out, b"abc");
        assert_eq!(mail.queued(), 0);
        mail.post(1, limit, 0, 0, |b| b.extend_from_slice(b"de"))
            .expect("posted");
        assert!(mail.move_into(&mut out, usize::MAX));
        assert_eq!(out, b"abcde");
        assert!(!mail.move_into(&mut out, usize::MAX));
        assert_eq!(mail.queued(), 0);
    }

    #[test]
    fn move_ahead_appends_what_is_queued_up_to_a_batch() {
        let mail = Mail::default();
        let limit = Limit::default();
        let mut out = b"older reply|".to_vec();
        assert!(!mail.move_ahead(&mut out, 1024), "nothing queued");
        mail.post(1, limit, 0, 0, |b| b.extend_from_slice(b"message|"))
            .expect("posted");
        assert!(mail.move_ahead(&mut out, 1024));
        assert_eq!(out, b"older reply|message|");
        assert_eq!(mail.queued(), 0);
        assert!(!mail.move_ahead(&mut out, 1024));
        // Past the batch, the rest stays queued, in order.
        for i in 0..3 {
            mail.post(1, limit, 0, 0, |b| b.extend_from_slice(&[b'a' + i; CHUNK]))
                .expect("posted");
        }
        let before = out.len();
        assert!(mail.move_ahead(&mut out, CHUNK));
        assert_eq!(out.len(), before + CHUNK);
        assert!(out[before..].iter().all(|&c| c == b'a'));
        assert_eq!(mail.queued(), 2 * CHUNK);
        // A post refused by the limit leaves the count as it was.
        let tight = Limit {
            hard_bytes: 1,
            ..Limit::default()
        };
        assert!(mail.post(1, tight, 0, 0, |b| b.push(b'x')).is_err());
        assert_eq!(mail.queued(), 0, "over the limit: emptied and closed");
        assert!(!mail.move_ahead(&mut out, usize::MAX));
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    /// A backlog is kept in chunks, moved out a batch at a time in order, and a budgeted post
    /// that does not fit leaves no trace.
    #[test]
    fn backlog_is_chunked_and_moves_in_order() {
        let mail = Mail::default();
        let limit = Limit::default();
        let mut all = Vec::new();
        for i in 0..1000u32 {
            let msg = format!("message {i:04} ").repeat(8);
            all.extend_from_slice(msg.as_bytes());
            mail.post(1, limit, 0, 0, |b| b.extend_from_slice(msg.as_bytes()))
                .expect("no limit");
        }
        assert_eq!(mail.queued(), all.len());
        assert!(mail.outbox.lock().chunks.len() > 1);
        assert!(mail
            .outbox
            .lock()
            .chunks
            .iter()
            .all(|c| c.len() < 2 * CHUNK));
        let mut got = Vec::new();
        let mut out = Vec::new();
        while mail.move_into(&mut out, 4096) {
            assert!(out.len() < 4096 + 2 * CHUNK);
            got.extend_from_slice(&out);
            out.clear();
        }
        assert_eq!(got, all);
        assert_eq!(mail.queued(), 0);
        mail.post(1, limit, 0, 0, |b| b.extend_from_slice(b"kept"))
            .expect("no limit");
        assert_eq!(
            mail.post_within(1, 10, 0, |b| b.extend_from_slice(b"too long")),
            Err(Refused::OverBudget)
        );
        assert_eq!(mail.take(), b"kept");
    }
}
