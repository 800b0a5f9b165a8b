//! Value events: pub/sub messages that carry the value a write left, or the value a removal
//! took away, on channels `__values@<db>__:<key>` (see `docs/events.md` for the format).
//!
//! A client subscribes with plain SUBSCRIBE or PSUBSCRIBE to a channel or pattern that starts
//! with `__values@`; those are ordinary pub/sub subscriptions (PUBSUB CHANNELS, NUMSUB, RESET
//! and disconnects treat them as any other), which [`crate::pubsub::PubSub`] also reports here.
//! Only such subscriptions get value events: `PSUBSCRIBE *` does not.
//!
//! [`Values`] is a lossy feed consumer. It asks the feed for values ([`Interest::VALUES`]) only
//! while at least one value subscription exists, so the write path records nothing for it
//! otherwise. At each commit it turns the group's `Written`, `Deleted`, `Expired` and `Evicted`
//! records into `set`, `del`, `expired` and `evicted` messages on the matching channels, and
//! `Flushed` / `Swapped` into one `flushdb` / `swapdb` message per value subscription of the
//! database, all in feed order, so a group's events go out together.
//!
//! Every subscription (one client's channel or pattern) numbers its messages 1, 2, 3...
//! A message is posted only if the client's pending output (outbox plus unsent bytes) stays
//! within `value-events-buffer-limit` ([`crate::mail::Mail::post_within`]); otherwise it is
//! skipped and counted, and the next message that fits is preceded by `<seq> dropped <N>` on
//! the same channel (taking a sequence number of its own). A client is never closed for its
//! value events.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use larder_engine::feed::Value;
use larder_engine::{glob, Change, ChangeKind, Consumer, Feed, Interest};
use parking_lot::Mutex;

use crate::mail::Refused;
use crate::state::ClientHandle;

/// What every value channel and pattern starts with.
pub const PREFIX: &[u8] = b"__values@";

/// Whether a channel or pattern subscription is a value subscription.
#[inline]
pub fn is_value_name(name: &[u8]) -> bool {
    name.starts_with(PREFIX)
}

/// `__values@<db>__:<key>`.
pub fn channel(db: u32, key: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(PREFIX.len() + 14 + key.len());
    c.extend_from_slice(PREFIX);
    c.extend_from_slice(db.to_string().as_bytes());
    c.extend_from_slice(b"__:");
    c.extend_from_slice(key);
    c
}

/// The database a channel names (`__values@<db>__:...`, `<db>` in canonical decimal).
fn channel_db(name: &[u8]) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let end = find(rest, b"__:")?;
    let digits = std::str::from_utf8(&rest[..end]).ok()?;
    let db: u32 = digits.parse().ok()?;
    (db.to_string() == digits).then_some(db)
}

/// Whether a value pattern can match channels of database `db`: the part between
/// `__values@` and the first `__:` matches the number; without a `__:`, the pattern must match
/// `<db>__:` (as `__values@*` does).
fn pattern_covers_db(pattern: &[u8], db: u32) -> bool {
    let Some(rest) = pattern.strip_prefix(PREFIX) else {
        return false;
    };
    match find(rest, b"__:") {
        Some(end) => glob::matches(&rest[..end], db.to_string().as_bytes(), false),
        None => glob::matches(rest, format!("{db}__:").as_bytes(), false),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One client's value subscription (a channel or a pattern).
struct Sub {
    client: Arc<ClientHandle>,
    /// The sequence number of the last message posted.
    seq: u64,
    /// Messages skipped since the last one posted.
    dropped: u64,
}

/// Subscriptions to one channel or one pattern.
struct Subs {
    /// The channel's database, or `None` for a pattern or a channel that names none.
    db: Option<u32>,
    subs: Vec<Sub>,
}

#[derive(Default)]
struct Registry {
    channels: HashMap<Vec<u8>, Subs>,
    patterns: HashMap<Vec<u8>, Subs>,
}

impl Registry {
    fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty()
    }
}

/// The value-events consumer (see the module documentation).
#[derive(Default)]
pub struct Values {
    registry: Mutex<Registry>,
    /// Held while a subscription changes and the feed's interest is set after it, so that
    /// the interest follows the last change. Never taken at commit (commits hold the feed's
    /// subscription list, which setting the interest writes).
    toggle: Mutex<()>,
    /// The feed and this consumer's subscription id, once installed.
    feed: OnceLock<(Weak<Feed>, u64)>,
    /// `value-events-buffer-limit` in bytes (0: none).
    budget: AtomicU64,
    /// Events posted (drop markers not counted) and events skipped for the budget, since
    /// the start (for INFO).
    sent: AtomicU64,
    dropped: AtomicU64,
}

impl Values {
    /// Subscribe to `feed`, asking for nothing until a value subscription exists.
    pub fn install(self: &Arc<Self>, feed: &Arc<Feed>) {
        let _toggle = self.toggle.lock();
        let id = feed.subscribe(Interest::default(), Arc::clone(self) as Arc<dyn Consumer>);
        let _ = self.feed.set((Arc::downgrade(feed), id));
        self.sync_interest();
    }

    /// Set `value-events-buffer-limit`.
    pub fn set_budget(&self, bytes: u64) {
        self.budget.store(bytes, Ordering::Relaxed);
    }

    /// Events posted (drop markers not counted) and events skipped for the budget, since the
    /// start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }

    /// A client subscribed to a value channel (`pattern` false) or pattern.
    pub fn add(&self, pattern: bool, name: &[u8], client: &Arc<ClientHandle>) {
        let _toggle = self.toggle.lock();
        {
            let mut reg = self.registry.lock();
            let map = if pattern {
                &mut reg.patterns
            } else {
                &mut reg.channels
            };
            let entry = map.entry(name.to_vec()).or_insert_with(|| Subs {
                db: if pattern { None } else { channel_db(name) },
                subs: Vec::new(),
            });
            if entry.subs.iter().all(|s| s.client.id != client.id) {
                entry.subs.push(Sub {
                    client: Arc::clone(client),
                    seq: 0,
                    dropped: 0,
                });
            }
        }
        self.sync_interest();
    }

    /// Client `id` unsubscribed from a value channel or pattern (or went away).
    pub fn remove(&self, pattern: bool, name: &[u8], id: u64) {
        let _toggle = self.toggle.lock();
        {
            let mut reg = self.registry.lock();
            let map = if pattern {
                &mut reg.patterns
            } else {
                &mut reg.channels
            };
            if let Some(entry) = map.get_mut(name) {
                entry.subs.retain(|s| s.client.id != id);
                if entry.subs.is_empty() {
                    map.remove(name);
                }
            }
        }
        self.sync_interest();
    }

    /// Ask the feed for values exactly while some value subscription exists. Call with
    /// `toggle` held and the registry unlocked.
    fn sync_interest(&self) {
        let Some((feed, id)) = self.feed.get() else {
            return;
        };
        let Some(feed) = feed.upgrade() else {
            return;
        };
        let wanted = !self.registry.lock().is_empty();
        let interest = if wanted {
            Interest::VALUES
        } else {
            Interest::default()
        };
        feed.set_interest(*id, interest);
    }

    /// Whether the feed is asked for values now (tests).
    pub fn active(&self) -> bool {
        self.feed
            .get()
            .and_then(|(f, _)| f.upgrade())
            .is_some_and(|f| f.records_values())
    }
}

/// One message to post: its event word, version and value, for one channel.
struct Event<'a> {
    event: &'a str,
    version: u64,
    /// The value's type word and its encoding; `None` for flushdb / swapdb.
    value: Option<(&'static str, &'a [u8])>,
}

/// A value's type word and its bytes in a message: a string as it is; a list or a set as a
/// RESP2 array of bulk strings; a hash as an array of field, value, field, value...; a
/// sorted set as an array of member, score, ... lowest score first, each score in its
/// shortest round-trip decimal form (`inf` and `-inf` for the infinities).
fn encode_value(value: &Value) -> (&'static str, Cow<'_, [u8]>) {
    fn array<'a>(n: usize, items: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(b'*');
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        for i in items {
            bulk_header(&mut out, i.len());
            out.extend_from_slice(i);
            out.extend_from_slice(b"\r\n");
        }
        out
    }
    match value {
        Value::String(s) => ("string", Cow::Borrowed(s)),
        Value::List(items) => (
            "list",
            Cow::Owned(array(items.len(), items.iter().map(|i| &i[..]))),
        ),
        Value::Set(items) => (
            "set",
            Cow::Owned(array(items.len(), items.iter().map(|i| &i[..]))),
        ),
        Value::Hash(pairs) => {
            let flat = pairs.iter().flat_map(|(f, v)| [&f[..], &v[..]]);
            ("hash", Cow::Owned(array(2 * pairs.len(), flat)))
        }
        Value::ZSet(pairs) => {
            let scores: Vec<Vec<u8>> = pairs
                .iter()
                .map(|(_, bits)| match f64::from_bits(*bits) {
                    s if s == f64::INFINITY => b"inf".to_vec(),
                    s if s == f64::NEG_INFINITY => b"-inf".to_vec(),
                    s => s.to_string().into_bytes(),
                })
                .collect();
            let flat = pairs
                .iter()
                .zip(&scores)
                .flat_map(|((m, _), s)| [&m[..], &s[..]]);
            ("zset", Cow::Owned(array(2 * pairs.len(), flat)))
        }
    }
}

/// Append a bulk string header (`$<len>\r\n`).
fn bulk_header(out: &mut Vec<u8>, len: usize) {
    out.push(b'$');
    out.extend_from_slice(len.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Append one pub/sub frame (`message` on a channel, `pmessage` for a pattern) whose payload
/// is `head`, then `\n` and `body` if there is a body.
fn frame(
    out: &mut Vec<u8>,
    proto: u8,
    pattern: Option<&[u8]>,
    channel: &[u8],
    head: &[u8],
    body: Option<&[u8]>,
) {
    let (word, parts): (&[u8], usize) = match pattern {
        Some(_) => (b"pmessage", 4),
        None => (b"message", 3),
    };
    out.push(if proto == 3 { b'>' } else { b'*' });
    out.extend_from_slice(parts.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for p in [Some(word), pattern, Some(channel)].into_iter().flatten() {
        bulk_header(out, p.len());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    let len = head.len() + body.map_or(0, |b| b.len() + 1);
    bulk_header(out, len);
    out.extend_from_slice(head);
    if let Some(b) = body {
        out.push(b'\n');
        out.extend_from_slice(b);
    }
    out.extend_from_slice(b"\r\n");
}

impl Values {
    /// Post `event` to one subscription, preceded by its drop marker if it skipped messages;
    /// skip it (and count it) if that would pass the budget.
    fn deliver(&self, sub: &mut Sub, pattern: Option<&[u8]>, channel: &[u8], event: &Event<'_>) {
        let client = &sub.client;
        let proto = client.resp.load(Ordering::Relaxed);
        let unsent = client.output_buf_bytes.load(Ordering::Relaxed);
        let budget = self.budget.load(Ordering::Relaxed);
        let (seq, dropped) = (sub.seq, sub.dropped);
        let mut next = seq;
        let posted = client.mail.post_within(client.id, budget, unsent, |out| {
            if dropped > 0 {
                next += 1;
                let head = format!("{next} dropped {dropped}");
                frame(out, proto, pattern, channel, head.as_bytes(), None);
            }
            next += 1;
            let head = match event.value {
                Some((ty, _)) => format!("{next} {} {} {ty}", event.event, event.version),
                None => format!("{next} {} {}", event.event, event.version),
            };
            frame(
                out,
                proto,
                pattern,
                channel,
                head.as_bytes(),
                event.value.map(|(_, b)| b),
            );
        });
        match posted {
            Ok(()) => {
                sub.seq = next;
                sub.dropped = 0;
                self.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(Refused::OverBudget) => {
                sub.dropped += 1;
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // Closing for another reason: nothing more to tell it.
            Err(Refused::Closed | Refused::OverLimit) => {}
        }
    }

    /// A key's event: to the channel's subscribers, then to each matching pattern's.
    fn key_event(&self, reg: &mut Registry, db: u32, key: &[u8], event: &Event<'_>) {
        let channel = channel(db, key);
        if let Some(entry) = reg.channels.get_mut(&channel) {
            for sub in &mut entry.subs {
                self.deliver(sub, None, &channel, event);
            }
        }
        for (pattern, entry) in reg.patterns.iter_mut() {
            if glob::matches(pattern, &channel, false) {
                for sub in &mut entry.subs {
                    self.deliver(sub, Some(pattern), &channel, event);
                }
            }
        }
    }

    /// A whole database's event (flushdb, swapdb): once to every value subscription of `db`.
    /// A channel subscriber gets it on its channel; a pattern subscriber as a `pmessage` on
    /// the channel `__values@<db>__:` (the database's prefix, with an empty key).
    fn db_event(&self, reg: &mut Registry, db: u32, event: &Event<'_>) {
        for (channel, entry) in reg.channels.iter_mut() {
            if entry.db == Some(db) {
                for sub in &mut entry.subs {
                    self.deliver(sub, None, channel, event);
                }
            }
        }
        let channel = channel(db, b"");
        for (pattern, entry) in reg.patterns.iter_mut() {
            if pattern_covers_db(pattern, db) {
                for sub in &mut entry.subs {
                    self.deliver(sub, Some(pattern), &channel, event);
                }
            }
        }
    }
}

impl Consumer for Values {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let mut reg = self.registry.lock();
        if reg.is_empty() {
            return;
        }
        for c in changes {
            let word = match c.kind {
                ChangeKind::Written => "set",
                ChangeKind::Deleted => "del",
                ChangeKind::Expired => "expired",
                ChangeKind::Evicted => "evicted",
                ChangeKind::Flushed => {
                    let event = Event {
                        event: "flushdb",
                        version: 0,
                        value: None,
                    };
                    self.db_event(&mut reg, c.db, &event);
                    continue;
                }
                ChangeKind::Swapped => {
                    let event = Event {
                        event: "swapdb",
                        version: 0,
                        value: None,
                    };
                    self.db_event(&mut reg, c.db, &event);
                    self.db_event(&mut reg, c.class, &event);
                    continue;
                }
                ChangeKind::Notice | ChangeKind::Command => continue,
            };
            // A change recorded before values were asked for (a write racing the first
            // value subscription) has none to carry: skip it.
            let Some(value) = &c.value else {
                continue;
            };
            // A collection is never seen empty: the write that empties one is followed by
            // its deletion in the same group; send only the `del`.
            let empty = match value {
                Value::String(_) => false,
                Value::List(v) | Value::Set(v) => v.is_empty(),
                Value::Hash(v) => v.is_empty(),
                Value::ZSet(v) => v.is_empty(),
            };
            if c.kind == ChangeKind::Written && empty {
                continue;
            }
            let (ty, body) = encode_value(value);
            let event = Event {
                event: word,
                version: c.version,
                value: Some((ty, &body)),
            };
            self.key_event(&mut reg, c.db, &c.key, &event);
        }
    }
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
