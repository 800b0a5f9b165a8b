//! ACL LOG: refused commands, keys, channels and failed logins, newest first, equal events
//! within a minute merged into one entry with a count (Redis 7.0.15's `addACLLogEntry`).

use std::collections::VecDeque;

use super::{Context, LogEntry, Reason};

/// Events closer than this merge into one entry.
const GROUPING_MS: u64 = 60_000;
/// How many recent entries a new event is compared with.
const SCAN: usize = 10;

/// One ACL LOG entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When it last happened (Unix ms).
    pub ctime_ms: u64,
    pub client_info: String,
}

impl Entry {
    pub fn reason_name(&self) -> &'static str {
        match self.reason {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }

    pub fn context_name(&self) -> &'static str {
        match self.context {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// The log, newest first.
#[derive(Default)]
pub struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    /// Record an event at `now_ms`, keeping at most `max_len` entries.
    pub fn add(&mut self, e: LogEntry, now_ms: u64, max_len: usize) {
        let found = self.entries.iter().take(SCAN).position(|old| {
            old.reason == e.reason
                && old.context == e.context
                && old.ctime_ms.abs_diff(now_ms) <= GROUPING_MS
                && old.object == e.object
                && old.username == e.username
        });
        if let Some(mut old) = found.and_then(|i| self.entries.remove(i)) {
            old.client_info = e.client_info;
            old.ctime_ms = now_ms;
            old.count += 1;
            self.entries.push_front(old);
            return;
        }
        self.entries.push_front(Entry {
            count: 1,
            reason: e.reason,
            context: e.context,
            object: e.object,
            username: e.username,
            ctime_ms: now_ms,
            client_info: e.client_info,
        });
        self.entries.truncate(max_len);
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        self.entries.iter().take(count).cloned().collect()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(object: &str) -> LogEntry {
        LogEntry {
            reason: Reason::Command,
            context: Context::Toplevel,
            object: object.as_bytes().to_vec(),
            username: b"u".to_vec(),
            client_info: "id=1".into(),
        }
    }

    #[test]
    fn equal_events_within_a_minute_merge() {
        let mut log = Log::default();
        log.add(event("get"), 1_000, 128);
        log.add(event("set"), 2_000, 128);
        log.add(event("get"), 3_000, 128);
        let e = log.newest(10);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].object.as_slice(), e[0].count), (&b"get"[..], 2));
        log.add(event("get"), 3_000 + GROUPING_MS + 1, 128);
        assert_eq!(log.newest(10).len(), 3);
        log.add(event("x"), 0, 2);
        assert_eq!(log.newest(10).len(), 2);
        log.clear();
        assert!(log.newest(10).is_empty());
    }
}
