//! The queue's operations, each a short sequence of stream (and hash) commands run through
//! the executor ([`sub`]). Nothing here touches a shard: the streams hold the queue.

use larder_resp::Frame;

use super::names::{level_key, meta_key, pub_key, Token, GROUP, INDEX_KEY, LEVELS, RECLAIM};
use super::sub::{self, bytes, field, int, items, Entry, Ran};
use crate::error::{Error, Result};
use crate::exec::ConnState;
use crate::state::Server;

/// A put refused because the queue holds `QMAXLEN` messages.
pub const FULL: &str = "FULL the queue is full (QMAXLEN)";
/// A put refused because the queue is locked.
pub const LOCKED: &str = "LOCKED the queue is locked (QLOCK)";
/// A put that lost the race for the last places too many times in a row.
const BUSY: &str = "BUSY the queue changed under every try: try again";
/// The entry field that holds the message.
pub const PAYLOAD: &[u8] = b"payload";
/// The entry field that holds a message's deadline (Unix ms), when it has a TTL.
pub const EXPIRE_AT: &[u8] = b"expire_at";
/// The meta hash field of the visibility timeout.
pub const TIMEOUT_FIELD: &[u8] = b"timeout_ms";
/// The visibility timeout of a queue that sets none.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// How many times a put to a bounded queue retries after another write slipped in.
const PUT_TRIES: usize = 64;

/// A queue command's context: the server and the connection its steps run on.
pub struct Q<'a, 'c> {
    pub server: &'a Server,
    pub conn: &'c mut ConnState,
    pub name: &'c [u8],
    pub now_ms: u64,
}

/// A message handed to a worker.
pub struct Delivery {
    pub token: Token,
    pub payload: Vec<u8>,
    /// How many times it has been delivered, this time included.
    pub deliveries: i64,
}

/// What a get found.
pub enum Got {
    Message(Delivery),
    /// Nothing to deliver (and no wait, or the wait is over).
    Empty,
    /// Nothing yet: the client waits ([`crate::exec::Outcome::Blocked`]).
    Waiting,
}

impl Q<'_, '_> {
    fn run(&mut self, argv: &[&[u8]]) -> Frame {
        sub::reply(self.server, self.conn, argv)
    }

    /// Whether a level's stream (or anything else under its name) exists now. A queue
    /// command holds no shard lock of its own, so the look may lock the key's shard; a key
    /// made just after it is found by the next step that looks (the wait's XREAD).
    fn exists(&self, key: &[u8]) -> bool {
        self.server.keyspace.db(self.conn.db).exists_quietly(key)
    }

    /// Runs `argv`; a command error becomes this command's error.
    fn ok(&mut self, argv: &[&[u8]]) -> Result<Frame> {
        match self.run(argv) {
            Frame::Error(e) => Err(Error::Owned(e)),
            f => Ok(f),
        }
    }

    /// Records the queue's name in the index the reclaim timer is built from at start, and
    /// in the timer's registry.
    fn register(&mut self) -> Result<()> {
        let name = self.name.to_vec();
        self.ok(&[b"SADD", INDEX_KEY, &name])?;
        self.server.queues.add(self.conn.db, self.name);
        Ok(())
    }

    /// One setting of the queue's meta hash, as a number (0 when unset).
    fn setting(&mut self, name: &[u8]) -> Result<i64> {
        let meta = meta_key(self.name);
        Ok(int(&self.ok(&[b"HGET", &meta, name])?))
    }

    /// Sets one field of the meta hash.
    pub fn set(&mut self, name: &[u8], value: i64) -> Result<()> {
        self.register()?;
        let meta = meta_key(self.name);
        let v = value.to_string();
        self.ok(&[b"HSET", &meta, name, v.as_bytes()])?;
        if name == TIMEOUT_FIELD {
            // Messages handed out may be due sooner (or later) now.
            self.server.queues.look_now(self.conn.db, self.name);
        }
        Ok(())
    }

    /// Runs `commands` in MULTI/EXEC: their replies, or `None` when EXEC found a watched key
    /// changed. A command refused as it is queued (OOM, say) discards the transaction, so the
    /// client's connection is never left inside MULTI.
    fn transaction(&mut self, commands: &[&[&[u8]]]) -> Result<Option<Vec<Frame>>> {
        self.ok(&[b"MULTI"])?;
        for argv in commands {
            if let Err(e) = self.ok(argv) {
                self.run(&[b"DISCARD"]);
                return Err(e);
            }
        }
        match self.ok(&[b"EXEC"])? {
            Frame::Array(replies) => Ok(Some(replies)),
            _ => Ok(None),
        }
    }

    /// Messages held at each level (ready and unacknowledged).
    fn lengths(&mut self) -> Result<[i64; LEVELS]> {
        let mut out = [0; LEVELS];
        for (p, n) in out.iter_mut().enumerate() {
            let key = level_key(self.name, p);
            *n = int(&self.ok(&[b"XLEN", &key])?);
        }
        Ok(out)
    }

    /// QPUT: checks the lock and the bound, then adds the message to its level's stream.
    /// With a bound the check and the add run as WATCH, then MULTI/EXEC, again while another
    /// write slips in between, so the bound holds exactly under concurrent puts.
    pub fn put(&mut self, priority: usize, ttl_ms: Option<u64>, payload: &[u8]) -> Result<Token> {
        self.register()?;
        let key = level_key(self.name, priority);
        let expire_at = ttl_ms.map(|t| self.now_ms.saturating_add(t).to_string());
        let mut add: Vec<&[u8]> = vec![b"XADD", &key, b"*", PAYLOAD, payload];
        if let Some(at) = &expire_at {
            add.extend([EXPIRE_AT, at.as_bytes()]);
        }
        let meta = meta_key(self.name);
        if self.setting(b"locked")? != 0 {
            return Err(Error::Static(LOCKED));
        }
        let maxlen = self.setting(b"maxlen")?;
        if maxlen <= 0 {
            let id = self.ok(&add)?;
            return token(priority, &id);
        }
        // The client's own WATCHes are set aside while the put uses the connection's.
        let watched = std::mem::take(&mut self.conn.watched);
        let r = self.bounded_put(priority, &meta, &add);
        self.conn.watched = watched;
        r
    }

    fn bounded_put(&mut self, priority: usize, meta: &[u8], add: &[&[u8]]) -> Result<Token> {
        let keys: Vec<Vec<u8>> = (0..LEVELS).map(|p| level_key(self.name, p)).collect();
        for _ in 0..PUT_TRIES {
            let mut watch: Vec<&[u8]> = vec![b"WATCH", meta];
            watch.extend(keys.iter().map(Vec::as_slice));
            self.ok(&watch)?;
            let locked = self.setting(b"locked")? != 0;
            let maxlen = match self.setting(b"maxlen")? {
                n if n > 0 => n,
                _ => i64::MAX,
            };
            let total: i64 = self.lengths()?.iter().sum();
            if locked || total >= maxlen {
                self.run(&[b"UNWATCH"]);
                return Err(Error::Static(if locked { LOCKED } else { FULL }));
            }
            match self.transaction(&[add])? {
                Some(replies) => {
                    return match replies.first() {
                        Some(Frame::Error(e)) => Err(Error::Owned(e.clone())),
                        Some(id) => token(priority, id),
                        None => Err(Error::Static("ERR the put gave no reply")),
                    };
                }
                // Another write to the queue came between the check and EXEC.
                None => continue,
            }
        }
        Err(Error::Static(BUSY))
    }

    /// QGET: the next message for `worker`, from the highest level down; at each level,
    /// messages the timer reclaimed come before new ones. Expired messages are acknowledged,
    /// deleted and counted, never delivered. With `block_ms` (0: no limit), waits for a put
    /// when there is nothing (see [`Q::wait`]).
    ///
    /// A get that waits runs again each time it is woken and at its deadline (ARCHITECTURE
    /// "Blocked clients"). What must last from its first run to the next lives on the
    /// connection: the deadline in `ConnState::blocked`, fixed by the first run, while the
    /// client stays registered in its place in line. The lookup steps run with it set aside
    /// ([`sub::reply`]), so that none of them ends the wait.
    pub fn get(&mut self, worker: &[u8], auto_ack: bool, block_ms: Option<u64>) -> Result<Got> {
        let deadline = block_ms.map(|ms| match self.conn.blocked {
            // A run after a wake-up or at the deadline: the first run's deadline.
            Some(deadline) => deadline,
            None if ms == 0 => 0,
            None => self.now_ms.saturating_add(ms),
        });
        let r = self.get_or_wait(worker, auto_ack, deadline);
        if !matches!(r, Ok(Got::Waiting)) && self.conn.blocked.take().is_some() {
            // Served, or failed, while waiting: the client leaves the line (and if it had
            // been woken, the next client in line is woken in its place).
            self.server.blocking.unregister(self.conn.id);
        }
        r
    }

    fn get_or_wait(&mut self, worker: &[u8], auto_ack: bool, deadline: Option<u64>) -> Result<Got> {
        // A wait that new entries end goes round again; more than a few rounds means other
        // workers take every message first, and the answer is then the wait's timeout.
        for _ in 0..4 {
            for p in (0..LEVELS).rev() {
                if let Some(d) = self.take_from(p, worker, auto_ack)? {
                    return Ok(Got::Message(d));
                }
            }
            let Some(deadline) = deadline.filter(|_| !self.conn.in_exec) else {
                self.seen(worker);
                return Ok(Got::Empty);
            };
            match self.wait(worker, deadline)? {
                Some(got) => return Ok(got),
                None => continue,
            }
        }
        Ok(Got::Empty)
    }

    /// Waits for new entries on every level with one blocking XREAD, from each level's
    /// group's last delivered ID, until `deadline` (Unix ms; 0: no limit): it answers at once
    /// when something arrived since the look, or registers the client under the levels'
    /// keys while their shards are held, so no put can slip between the look and the wait
    /// (a client registered by an earlier run keeps its place). `None`: entries arrived,
    /// look again.
    fn wait(&mut self, worker: &[u8], deadline: u64) -> Result<Option<Got>> {
        let keys: Vec<Vec<u8>> = (0..LEVELS).rev().map(|p| level_key(self.name, p)).collect();
        let mut ids = Vec::with_capacity(LEVELS);
        for key in &keys {
            ids.push(self.last_delivered(key)?);
        }
        // XREAD waits until the connection's deadline, not its own BLOCK argument's; one
        // entry is enough to say that something arrived.
        let mut argv: Vec<&[u8]> = vec![b"XREAD", b"COUNT", b"1", b"BLOCK", b"0", b"STREAMS"];
        argv.extend(keys.iter().map(Vec::as_slice));
        argv.extend(ids.iter().map(Vec::as_slice));
        self.conn.blocked = Some(deadline);
        match sub::run(self.server, self.conn, &argv) {
            Ran::Blocked => {
                self.conn.block_now = true;
                Ok(Some(Got::Waiting))
            }
            Ran::Reply(Frame::Error(e)) => Err(Error::Owned(e)),
            // Entries arrived after the look: look again.
            Ran::Reply(f) if !items(&f).is_empty() => Ok(None),
            // The wait is over (a null, or nothing).
            Ran::Reply(_) => {
                self.seen(worker);
                Ok(Some(Got::Empty))
            }
        }
    }

    /// A worker that asked and got nothing is still listed by QWORKERS: XREADGROUP makes
    /// a consumer only when it delivers (as Redis 7.0 does), so one is made on the first
    /// level that has a group (XREADGROUP refreshes the seen time of one that exists).
    fn seen(&mut self, worker: &[u8]) {
        for p in (0..LEVELS).rev() {
            let key = level_key(self.name, p);
            if let Frame::Integer(_) =
                self.run(&[b"XGROUP", b"CREATECONSUMER", &key, GROUP, worker])
            {
                return;
            }
        }
    }

    /// The group's last delivered ID on a level (`0-0` when there is no stream or group).
    fn last_delivered(&mut self, key: &[u8]) -> Result<Vec<u8>> {
        if !self.exists(key) {
            return Ok(b"0-0".to_vec());
        }
        let groups = match self.run(&[b"XINFO", b"GROUPS", key]) {
            Frame::Error(_) => return Ok(b"0-0".to_vec()),
            f => f,
        };
        Ok(items(&groups)
            .iter()
            .find(|g| field(g, "name").and_then(bytes) == Some(GROUP))
            .and_then(|g| field(g, "last-delivered-id").and_then(bytes))
            .unwrap_or(b"0-0")
            .to_vec())
    }

    /// The next deliverable message of level `p` for `worker`, if any.
    fn take_from(&mut self, p: usize, worker: &[u8], auto_ack: bool) -> Result<Option<Delivery>> {
        let key = level_key(self.name, p);
        if !self.exists(&key) {
            // A level never put to (most queues use one): nothing to take, and no steps
            // (XPENDING, XGROUP CREATE) that could only fail.
            return Ok(None);
        }
        loop {
            let Some((entry, deliveries)) = self.next_entry(&key, worker)? else {
                return Ok(None);
            };
            let expired = entry
                .get(EXPIRE_AT)
                .and_then(crate::args::parse_u64)
                .is_some_and(|at| at <= self.now_ms);
            if expired {
                self.finish(&key, &entry.id)?;
                let meta = meta_key(self.name);
                self.ok(&[b"HINCRBY", &meta, b"expired", b"1"])?;
                continue;
            }
            if auto_ack {
                self.finish(&key, &entry.id)?;
            } else {
                // A message that waits for its acknowledgement: the timer looks after it.
                self.server.queues.add(self.conn.db, self.name);
            }
            return Ok(Some(Delivery {
                token: Token {
                    priority: p,
                    id: entry.id.clone(),
                },
                payload: entry.get(PAYLOAD).unwrap_or_default().to_vec(),
                deliveries,
            }));
        }
    }

    /// The next entry of a level for `worker`: one the timer reclaimed (claimed now, its
    /// delivery count up by one), else a new one (`>`). The group is created on first use.
    fn next_entry(&mut self, key: &[u8], worker: &[u8]) -> Result<Option<(Entry, i64)>> {
        loop {
            let pending = self.run(&[b"XPENDING", key, GROUP, b"-", b"+", b"1", RECLAIM]);
            if let Frame::Error(e) = &pending {
                if !e.starts_with("NOGROUP") {
                    return Err(Error::Owned(e.clone()));
                }
                // No stream (nothing to get) or no group yet (made now, from the start).
                let made = self.run(&[b"XGROUP", b"CREATE", key, GROUP, b"0"]);
                match made {
                    Frame::Error(e) if e.starts_with("BUSYGROUP") => continue,
                    Frame::Error(_) => return Ok(None),
                    _ => continue,
                }
            }
            let Some(first) = items(&pending).first() else {
                break;
            };
            let Some(id) = items(first).first().and_then(bytes).map(<[u8]>::to_vec) else {
                break;
            };
            let count = items(first).get(3).map_or(0, int);
            let claimed = self.ok(&[b"XCLAIM", key, GROUP, worker, b"0", &id])?;
            if let Some(entry) = items(&claimed).first().and_then(Entry::of) {
                return Ok(Some((entry, count + 1)));
            }
            // Deleted meanwhile (XCLAIM dropped it from the pending list): look again.
        }
        let read = self.ok(&[
            b"XREADGROUP",
            b"GROUP",
            GROUP,
            worker,
            b"COUNT",
            b"1",
            b"STREAMS",
            key,
            b">",
        ])?;
        let entry = items(&read)
            .first()
            .and_then(|stream| items(stream).get(1))
            .and_then(|entries| items(entries).first())
            .and_then(Entry::of);
        Ok(entry.map(|e| (e, 1)))
    }

    /// Acknowledges and deletes an entry: a handled message leaves the queue.
    fn finish(&mut self, key: &[u8], id: &[u8]) -> Result<i64> {
        let acked = int(&self.ok(&[b"XACK", key, GROUP, id])?);
        if acked > 0 {
            self.ok(&[b"XDEL", key, id])?;
        }
        Ok(acked)
    }

    /// QACK: 1 when the token's message was waiting for its acknowledgement, else 0.
    pub fn ack(&mut self, token: &Token) -> Result<i64> {
        let key = level_key(self.name, token.priority);
        match self.run(&[b"XACK", &key, GROUP, &token.id]) {
            Frame::Integer(1) => {
                self.ok(&[b"XDEL", &key, &token.id])?;
                Ok(1)
            }
            Frame::Error(e) if !e.starts_with("NOGROUP") => Err(Error::Owned(e)),
            _ => Ok(0),
        }
    }

    /// QPURGE: removes every message of the queue (or of one level): the level's stream
    /// goes, its group with it. The number of messages removed.
    pub fn purge(&mut self, level: Option<usize>) -> Result<i64> {
        let mut removed = 0;
        for p in 0..LEVELS {
            if level.is_some_and(|l| l != p) {
                continue;
            }
            let key = level_key(self.name, p);
            removed += int(&self.ok(&[b"XLEN", &key])?);
            self.ok(&[b"DEL", &key])?;
        }
        Ok(removed)
    }

    /// QSTATS: `(name, value)` pairs.
    pub fn stats(&mut self) -> Result<Vec<(String, i64)>> {
        let lengths = self.lengths()?;
        let mut out = Vec::new();
        let mut unacked_total = 0;
        let mut ready_total = 0;
        for (p, len) in lengths.iter().enumerate() {
            let key = level_key(self.name, p);
            let pending = match self.run(&[b"XPENDING", &key, GROUP]) {
                Frame::Error(_) => 0,
                f => items(&f).first().map_or(0, int),
            };
            out.push((format!("ready_p{p}"), len - pending));
            ready_total += len - pending;
            unacked_total += pending;
        }
        out.push(("ready".into(), ready_total));
        out.push(("unacked".into(), unacked_total));
        for name in ["expired", "maxlen", "locked"] {
            let v = self.setting(name.as_bytes())?;
            out.push((name.into(), v));
        }
        let timeout = self.timeout_ms()?;
        out.push(("timeout_ms".into(), timeout as i64));
        Ok(out)
    }

    /// The visibility timeout in ms.
    pub fn timeout_ms(&mut self) -> Result<u64> {
        Ok(match self.setting(TIMEOUT_FIELD)? {
            n if n > 0 => n as u64,
            _ => DEFAULT_TIMEOUT_MS,
        })
    }

    /// QWORKERS: each worker that asked for messages, with when it last did (Unix ms) and
    /// how many messages it holds unacknowledged; most recent first.
    pub fn workers(&mut self) -> Result<Vec<(Vec<u8>, u64, i64)>> {
        let mut seen: Vec<(Vec<u8>, u64, i64)> = Vec::new();
        for p in 0..LEVELS {
            let key = level_key(self.name, p);
            let consumers = match self.run(&[b"XINFO", b"CONSUMERS", &key, GROUP]) {
                Frame::Error(_) => continue,
                f => f,
            };
            for c in items(&consumers) {
                let Some(name) = field(c, "name").and_then(bytes) else {
                    continue;
                };
                if name == RECLAIM {
                    continue;
                }
                let idle = field(c, "idle").map_or(0, int).max(0) as u64;
                let at = self.now_ms.saturating_sub(idle);
                let pending = field(c, "pending").map_or(0, int);
                match seen.iter_mut().find(|(n, _, _)| n == name) {
                    Some(w) => {
                        w.1 = w.1.max(at);
                        w.2 += pending;
                    }
                    None => seen.push((name.to_vec(), at, pending)),
                }
            }
        }
        seen.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(seen)
    }

    /// The timer's step on level `p`: entries delivered longer ago than `timeout_ms` and not
    /// acknowledged go to the reclaim consumer (XAUTOCLAIM, run through the executor), from
    /// which the next get takes them first. At most `calls` XAUTOCLAIMs of 100: the number
    /// reclaimed, and whether the level was finished.
    pub fn reclaim(&mut self, p: usize, timeout_ms: u64, calls: usize) -> (i64, bool) {
        let idle = timeout_ms.to_string();
        let key = level_key(self.name, p);
        let mut cursor = b"0-0".to_vec();
        let mut n = 0;
        for _ in 0..calls {
            let r = match self.run(&[
                b"XAUTOCLAIM",
                &key,
                GROUP,
                RECLAIM,
                idle.as_bytes(),
                &cursor,
                b"COUNT",
                b"100",
                b"JUSTID",
            ]) {
                Frame::Error(_) => return (n, true),
                f => f,
            };
            let parts = items(&r);
            n += parts.get(1).map_or(0, |ids| items(ids).len() as i64);
            match parts.first().and_then(bytes) {
                Some(next) if next != b"0-0" => cursor = next.to_vec(),
                _ => return (n, true),
            }
        }
        (n, false)
    }

    /// QPUB: appends to the retained window (the last `window` messages) and returns the
    /// message's index: 1 for the first, then one more each time. The index is the entry's
    /// ID (`<index>-0`). The add and a PUBLISH of `<index> <payload>` to the channel named
    /// as the window's key run as one transaction (WATCH, MULTI/EXEC, again if another
    /// publish came between), so a reader that takes the window's shard lock sees either
    /// both or neither: the HTTP door's event stream reads the window and subscribes under
    /// that lock, and gets every message once.
    pub fn publish(&mut self, window: u64, payload: &[u8]) -> Result<i64> {
        self.register()?;
        // The client's own WATCHes are set aside while the publish uses the connection's.
        let watched = std::mem::take(&mut self.conn.watched);
        let r = self.watched_publish(window, payload);
        self.conn.watched = watched;
        r
    }

    fn watched_publish(&mut self, window: u64, payload: &[u8]) -> Result<i64> {
        let key = pub_key(self.name);
        let w = window.to_string();
        for _ in 0..PUT_TRIES {
            self.ok(&[b"WATCH", &key])?;
            let last = self.ok(&[b"XREVRANGE", &key, b"+", b"-", b"COUNT", b"1"])?;
            let idx = items(&last)
                .first()
                .and_then(Entry::of)
                .and_then(|e| index_of(&e.id))
                .map_or(1, |i| i + 1);
            let id = format!("{idx}-0");
            let mut message = format!("{idx} ").into_bytes();
            message.extend_from_slice(payload);
            let add: &[&[u8]] = &[
                b"XADD",
                &key,
                b"MAXLEN",
                w.as_bytes(),
                id.as_bytes(),
                PAYLOAD,
                payload,
            ];
            match self.transaction(&[add, &[b"PUBLISH", &key, &message]])? {
                Some(replies) => {
                    return match replies.first() {
                        Some(Frame::Error(e)) => Err(Error::Owned(e.clone())),
                        _ => Ok(idx as i64),
                    };
                }
                // Another publish took the index between the look and EXEC.
                None => continue,
            }
        }
        Err(Error::Static(BUSY))
    }

    /// QSUB: retained messages from index `from` on, at most `count`: `(index, payload)`.
    pub fn read_window(&mut self, from: u64, count: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let key = pub_key(self.name);
        let start = format!("{}-0", from.max(1));
        let c = count.to_string();
        let r = self.ok(&[
            b"XRANGE",
            &key,
            start.as_bytes(),
            b"+",
            b"COUNT",
            c.as_bytes(),
        ])?;
        Ok(items(&r)
            .iter()
            .filter_map(Entry::of)
            .filter_map(|e| Some((index_of(&e.id)?, e.get(PAYLOAD)?.to_vec())))
            .collect())
    }
}

/// The window index of a publish entry's ID (`<index>-0`).
fn index_of(id: &[u8]) -> Option<u64> {
    let ms = id.split(|&b| b == b'-').next()?;
    crate::args::parse_u64(ms)
}

/// The token of an entry XADD added at `priority`.
fn token(priority: usize, id: &Frame) -> Result<Token> {
    match bytes(id) {
        Some(id) => Ok(Token {
            priority,
            id: id.to_vec(),
        }),
        None => Err(Error::Static("ERR the put gave no ID")),
    }
}
