//! Keyspace notifications: `notify-keyspace-events`, and the feed consumer that turns the
//! engine's change records into `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`
//! pub/sub messages, as Redis does.
//!
//! Handlers record Redis's event for each change (`Cmd::notify`), the memcached door records
//! the event of the equivalent RESP command, and the engine's own `Expired` and `Evicted`
//! records become the `expired` and `evicted` events, whatever removed the key (a reader, the
//! expiry thread, eviction). The consumer runs at commit, in the feed's order, so the
//! messages of one command or transaction go out together and after it committed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use larder_engine::feed::class;
use larder_engine::{Change, ChangeKind, Consumer, Feed, Interest};

use crate::pubsub::PubSub;

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 16;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 17;
/// `A`: every class but `m` and `n`, as Redis's NOTIFY_ALL.
const ALL: u32 = class::GENERIC
    | class::STRING
    | class::LIST
    | class::SET
    | class::HASH
    | class::ZSET
    | class::EXPIRED
    | class::EVICTED
    | class::STREAM
    | class::MODULE;

/// Letters in the order Redis prints them (`keyspaceEventsFlagsToString`), after `A`.
const LETTERS: &[(char, u32)] = &[
    ('g', class::GENERIC),
    ('$', class::STRING),
    ('l', class::LIST),
    ('s', class::SET),
    ('h', class::HASH),
    ('z', class::ZSET),
    ('x', class::EXPIRED),
    ('e', class::EVICTED),
    ('t', class::STREAM),
    ('d', class::MODULE),
    ('n', class::NEW),
];

/// Parse `notify-keyspace-events` into its flags and the text CONFIG GET shows.
pub fn parse_classes(value: &str) -> Result<(i64, String), String> {
    let mut flags = 0u32;
    for ch in value.chars() {
        flags |= match ch {
            'A' => ALL,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => class::KEY_MISS,
            c => LETTERS
                .iter()
                .find(|(l, _)| *l == c)
                .map(|(_, f)| *f)
                .ok_or_else(|| {
                    "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()
                })?,
        };
    }
    Ok((i64::from(flags), format_classes(flags)))
}

/// Redis's canonical text for the flags.
fn format_classes(flags: u32) -> String {
    let mut s = String::new();
    // As Redis's `keyspaceEventsFlagsToString`, `A` hides `n` (the flag itself stays set).
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (l, f) in LETTERS {
            if flags & f != 0 {
                s.push(*l);
            }
        }
    }
    if flags & KEYSPACE != 0 {
        s.push('K');
    }
    if flags & KEYEVENT != 0 {
        s.push('E');
    }
    if flags & class::KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// The feed consumer that publishes keyspace notifications.
pub struct Notifier {
    pubsub: Arc<PubSub>,
    flags: AtomicU32,
}

impl Notifier {
    /// Subscribe a notifier to `feed`; returns it with its subscription id.
    pub fn install(feed: &Feed, pubsub: Arc<PubSub>) -> (Arc<Notifier>, u64) {
        let n = Arc::new(Notifier {
            pubsub,
            flags: AtomicU32::new(0),
        });
        let id = feed.subscribe(Interest::default(), n.clone());
        (n, id)
    }

    /// Apply `notify-keyspace-events` (flags from [`parse_classes`]): tell the feed what to
    /// record for this consumer.
    pub fn configure(&self, feed: &Feed, id: u64, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
        let publishing = flags & (KEYSPACE | KEYEVENT) != 0;
        let classes = if publishing { flags & 0xffff } else { 0 };
        feed.set_notice_classes(classes);
        let mut interest = Interest::default();
        if classes != 0 {
            interest = interest | Interest::NOTICES;
        }
        // Expired and evicted events come from the engine's own change records.
        if classes & (class::EXPIRED | class::EVICTED) != 0 {
            interest = interest | Interest::CHANGES;
        }
        feed.set_interest(id, interest);
    }

    fn publish(&self, flags: u32, db: u32, event: &str, key: &[u8]) {
        if flags & KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            self.pubsub.publish(&channel, event.as_bytes());
        }
        if flags & KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.pubsub.publish(channel.as_bytes(), key);
        }
    }
}

impl Consumer for Notifier {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & (KEYSPACE | KEYEVENT) == 0 {
            return;
        }
        for c in changes {
            let (class, event) = match c.kind {
                ChangeKind::Notice => (c.class, c.event),
                ChangeKind::Expired => (class::EXPIRED, "expired"),
                ChangeKind::Evicted => (class::EVICTED, "evicted"),
                _ => continue,
            };
            if flags & class != 0 {
                self.publish(flags, c.db, event, &c.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_and_print_like_redis() {
        let show = |v: &str| parse_classes(v).map(|(_, s)| s);
        assert_eq!(show("KEA").as_deref(), Ok("AKE"));
        assert_eq!(show("Elxn$m").as_deref(), Ok("$lxnEm"));
        assert_eq!(show("").as_deref(), Ok(""));
        assert_eq!(show("g$lshzxetdKE").as_deref(), Ok("AKE"));
        assert!(show("Kxyz")
            .expect_err("an error")
            .contains("Invalid event class"));
    }
}
