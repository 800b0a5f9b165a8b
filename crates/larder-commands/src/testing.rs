//! Socket-free command tests: `Harness::new().run(&["SET", "k", "v"])`.

use std::sync::Arc;

use larder_engine::feed::{class, Change, ChangeKind, Consumer, Feed, Interest};
use larder_resp::{Frame, Protocol, ReplyBuf};
use parking_lot::Mutex;

use crate::config::Config;
use crate::exec::{execute, ConnState, Outcome};
use crate::state::{ClientHandle, Server};

/// A handle for a client that has no socket ([`ClientHandle::detached`]).
pub fn detached_handle(server: &Server) -> Arc<ClientHandle> {
    ClientHandle::detached(server)
}

/// One server and one connection to it, without sockets.
pub struct Harness {
    pub server: Arc<Server>,
    pub conn: ConnState,
    pub out: ReplyBuf,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    /// A server with default configuration.
    pub fn new() -> Harness {
        Harness::with_config(Config::new())
    }

    /// A server with the given configuration.
    pub fn with_config(config: Config) -> Harness {
        let server = Arc::new(Server::new(config, 1));
        Harness::connect(server)
    }

    /// Another connection to the same server.
    pub fn connect(server: Arc<Server>) -> Harness {
        let handle = detached_handle(&server);
        server.clients.register(Arc::clone(&handle));
        let conn = ConnState::new(&server, handle, 0);
        Harness {
            server,
            conn,
            out: ReplyBuf::new(Protocol::Resp2),
        }
    }

    /// Run a command and decode its reply. Panics if the command produced no reply or more
    /// than one (use [`Harness::run_raw`] for those).
    pub fn run(&mut self, argv: &[&str]) -> Frame {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        self.run_bytes(&argv)
    }

    /// Like [`Harness::run`] with binary arguments.
    pub fn run_bytes(&mut self, argv: &[&[u8]]) -> Frame {
        let raw = self.run_raw(argv);
        match larder_resp::decode(&raw) {
            Ok(Some((frame, used))) if used == raw.len() => frame,
            other => panic!(
                "bad reply {:?}: {:?}",
                String::from_utf8_lossy(&raw),
                other.map(|o| o.map(|(f, _)| f))
            ),
        }
    }

    /// Run a command and return the raw reply bytes.
    pub fn run_raw(&mut self, argv: &[&[u8]]) -> Vec<u8> {
        self.out.truncate(0);
        let outcome = execute(&self.server, &mut self.conn, argv, &mut self.out);
        if let Outcome::Blocked { .. } = outcome {
            // A command that would block answers nothing here; the client stops waiting.
            self.conn.blocked = None;
            self.server.blocking.unregister(self.conn.id);
            return Vec::new();
        }
        assert_eq!(outcome, Outcome::Continue);
        self.out.take_bytes()
    }

    /// Run each request (space-separated words) alone, then inside MULTI/EXEC. A handler that
    /// asks for a shard outside its command's lock plan trips a debug assertion, and one that
    /// deadlocks hangs the test: every multi-key command's realistic forms belong here (the
    /// table-wide sweep in `locks::plan_tests` only passes generic arguments).
    pub fn check_plans(&mut self, requests: &[&str]) {
        for r in requests {
            let argv: Vec<&[u8]> = r.split(' ').map(str::as_bytes).collect();
            self.run_raw(&argv);
            self.run(&["MULTI"]);
            self.run_raw(&argv);
            self.run_raw(&[b"EXEC"]);
            self.conn.multi = None;
        }
    }
}

/// Shorthands for expected frames.
pub fn ok() -> Frame {
    Frame::Simple("OK".into())
}

pub fn bulk(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

pub fn err(s: &str) -> Frame {
    Frame::Error(s.into())
}

pub fn int(v: i64) -> Frame {
    Frame::Integer(v)
}

/// A change-feed consumer that keeps the keyspace notifications commands raise, for tests of
/// what a command announces. [`Notices::take`] writes each as `c:event@db:key`, with `c` the
/// class's `notify-keyspace-events` letter.
#[derive(Default)]
pub struct Notices(Mutex<Vec<Change>>);

impl Consumer for Notices {
    fn committed(&self, _seq: u64, changes: &[Change]) {
        let notices = changes.iter().filter(|c| c.kind == ChangeKind::Notice);
        self.0.lock().extend(notices.cloned());
    }
}

impl Notices {
    /// Subscribe a new collector to `feed`, with every notification class turned on.
    pub fn subscribe(feed: &Feed) -> Arc<Notices> {
        let notices = Arc::new(Notices::default());
        feed.set_notice_classes(u32::MAX);
        feed.subscribe(Interest::NOTICES, notices.clone());
        notices
    }

    /// The notifications collected since the last call, oldest first.
    pub fn take(&self) -> Vec<String> {
        let letter = |c: u32| match c {
            class::GENERIC => "g",
            class::STRING => "$",
            class::LIST => "l",
            class::SET => "s",
            class::HASH => "h",
            class::ZSET => "z",
            class::EXPIRED => "x",
            class::EVICTED => "e",
            class::STREAM => "t",
            class::KEY_MISS => "m",
            class::MODULE => "d",
            class::NEW => "n",
            _ => "?",
        };
        std::mem::take(&mut *self.0.lock())
            .iter()
            .map(|c| {
                let key = String::from_utf8_lossy(&c.key);
                format!("{}:{}@{}:{key}", letter(c.class), c.event, c.db)
            })
            .collect()
    }
}

/// Lock the shard of `key` in database 0 directly, for tests that set an entry up by hand.
pub fn shard_for<'a>(server: &'a Server, key: &[u8]) -> (larder_engine::ShardRef<'a>, u64) {
    shard_in(server, 0, key)
}

/// [`shard_for`] in database `db`.
pub fn shard_in<'a>(
    server: &'a Server,
    db: usize,
    key: &[u8],
) -> (larder_engine::ShardRef<'a>, u64) {
    server.keyspace.db(db).lock_key(key)
}
