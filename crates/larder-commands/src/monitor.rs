//! MONITOR: every command any client runs, on any worker thread and through either door, as
//! Redis 7.0's `replicationFeedMonitors` shows it.
//!
//! A line is `+<unix seconds>.<micros> [<db> <addr>] "arg" "arg"...\r\n`, each argument quoted
//! as Redis's `sdscatrepr` quotes it, the same bytes in RESP2 and RESP3. What is shown follows
//! Redis's `call()`: a command is shown after it ran (a handler's error included), with the
//! database selected after it; a command rejected before running (unknown, arity, NOAUTH,
//! OOM, queued inside MULTI) is not; commands flagged `admin` (CONFIG, CLIENT LIST, MONITOR
//! itself...) or `skip_monitor` are never shown. Inside EXEC each command is shown as it runs,
//! then EXEC itself. The secrets of AUTH and of HELLO ... AUTH are shown as `"(redacted)"`.
//!
//! The memcached door has no Redis equivalent: its requests are shown in memcached's own
//! words, in database 0: a text or meta request as the words of its command line (`"set" "k"
//! "0" "0" "5"`, without the data block), a binary one as its opcode's name and its fields
//! (`"setq" "k" "0" "0" "5"`: key, flags, exptime, value length).
//!
//! Delivery goes through each monitor's outbox ([`crate::mail`]), so any thread can feed any
//! monitor; lines from one client arrive in the order it ran its commands. Monitors are of
//! the `normal` class of `client-output-buffer-limit`, as in Redis; since that class is
//! unlimited by default, a monitor whose unsent output passes [`FALLBACK_HARD_BYTES`] under
//! an unlimited normal class is closed (and counted in `client_output_buffer_limit_disconnections`)
//! rather than let grow without bound. While no client monitors, the only cost to a command
//! is one relaxed atomic load ([`Monitors::active`]).
//!
//! A monitor stays one until it closes or runs RESET (Redis 7.0). While monitoring it may not
//! run commands that read or write keys (Redis's "Replica can't interact with the keyspace",
//! monitors being replicas to Redis), CLIENT PAUSE does not hold it, and the idle `timeout`
//! does not close it.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::exec::{Cmd, ConnState};
use crate::mail::{Limit, Refused};
use crate::state::{ClientHandle, Server};
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// The hard output limit of a monitor when the `normal` class sets none (Redis's default):
/// the `pubsub` class's default hard limit.
pub const FALLBACK_HARD_BYTES: u64 = 32 << 20;

/// What the network layer shows for every memcached-door request: database 0.
const MEMCACHED_DB: usize = 0;

/// Every monitoring client.
#[derive(Default)]
pub struct Monitors {
    /// How many clients monitor: the hot path's one load.
    count: AtomicUsize,
    clients: RwLock<Vec<Arc<ClientHandle>>>,
    /// The output limit monitors are held to (the `normal` class, with a hard fallback).
    limit: RwLock<Limit>,
}

impl Monitors {
    /// Whether any client monitors (one relaxed load).
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Start sending lines to `client`.
    fn add(&self, client: &Arc<ClientHandle>) {
        let mut clients = self.clients.write();
        if clients.iter().all(|c| c.id != client.id) {
            clients.push(Arc::clone(client));
            self.count.store(clients.len(), Ordering::Relaxed);
        }
    }

    /// Stop sending lines to client `id` (it closed, or ran RESET). Returns whether it was a
    /// monitor.
    pub fn remove(&self, id: u64) -> bool {
        if !self.active() {
            return false;
        }
        let mut clients = self.clients.write();
        let before = clients.len();
        clients.retain(|c| c.id != id);
        self.count.store(clients.len(), Ordering::Relaxed);
        clients.len() != before
    }

    /// Whether client `id` monitors (CLIENT LIST's `O` flag, the idle timeout).
    pub fn contains(&self, id: u64) -> bool {
        self.active() && self.clients.read().iter().any(|c| c.id == id)
    }

    /// How many clients monitor.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no client monitors.
    pub fn is_empty(&self) -> bool {
        !self.active()
    }

    /// Hold monitors to the `normal` class's limit `normal` (at startup and after CONFIG SET).
    pub fn set_limit(&self, normal: Limit) {
        let mut limit = normal;
        if limit.hard_bytes == 0 {
            limit.hard_bytes = FALLBACK_HARD_BYTES;
        }
        *self.limit.write() = limit;
    }

    /// The limit monitors are held to now.
    pub fn limit(&self) -> Limit {
        *self.limit.read()
    }

    /// Post one finished line to every monitor. A monitor over its limit is closed and
    /// counted, as a subscriber is.
    pub fn send(&self, line: &[u8]) {
        let limit = self.limit();
        let now_ms = larder_engine::now_ms();
        for c in self.clients.read().iter() {
            let unsent = c.output_buf_bytes.load(Ordering::Relaxed);
            match c.mail.post(c.id, limit, unsent, now_ms, |out| {
                out.extend_from_slice(line)
            }) {
                // `post` never answers OverBudget (only `post_within` does).
                Ok(()) | Err(Refused::Closed | Refused::OverBudget) => {}
                Err(Refused::OverLimit) => {
                    crate::mail::note_over_limit(&c.addr, c.id, "normal");
                    crate::state::kill_client(c);
                }
            }
        }
    }
}

/// Whether a command with these flags is ever shown (Redis: not `admin`, not `skip_monitor`).
#[inline]
pub fn shown(spec_flags: u32) -> bool {
    spec_flags & (ADMIN | SKIP_MONITOR) == 0
}

/// Show a RESP command that ran (`execute`, or one command inside EXEC) to every monitor, if
/// its flags allow. `now_us`: when it ended.
pub fn feed_command(server: &Server, conn: &ConnState, argv: &[&[u8]], flags: u32, now_us: u64) {
    if shown(flags) {
        send_redacted(server, now_us, conn.db, &conn.handle.addr, argv);
    }
}

/// Show a command a script ran, as Redis does: from client `lua`, in the script's database.
pub fn feed_script(server: &Server, db: usize, argv: &[&[u8]], flags: u32, now_us: u64) {
    if shown(flags) {
        send_redacted(server, now_us, db, "lua", argv);
    }
}

/// Show EVAL or FCALL (`skip_monitor` commands) before the commands of their script, as
/// Redis does.
pub fn feed_script_call(server: &Server, conn: &ConnState, argv: &[&[u8]], now_us: u64) {
    send_redacted(server, now_us, conn.db, &conn.handle.addr, argv);
}

/// Format `argv` as Redis's MONITOR line, secrets redacted, and send it to every monitor.
fn send_redacted(server: &Server, now_us: u64, db: usize, addr: &str, argv: &[&[u8]]) {
    let redacted = redacted(argv);
    let mut line = Vec::with_capacity(64 + argv.iter().map(|a| a.len() + 3).sum::<usize>());
    format_line(
        &mut line,
        now_us,
        db,
        addr,
        argv.iter().enumerate().map(|(i, a)| {
            if redacted.contains(&i) {
                &b"(redacted)"[..]
            } else {
                a
            }
        }),
    );
    server.monitors.send(&line);
}

/// Show a memcached-door request (its words, see the module's docs) from `addr`.
pub fn feed_memcached<'a>(
    server: &Server,
    addr: &str,
    words: impl IntoIterator<Item = &'a [u8]>,
    now_us: u64,
) {
    let mut line = Vec::with_capacity(96);
    format_line(&mut line, now_us, MEMCACHED_DB, addr, words);
    server.monitors.send(&line);
}

/// Write one monitor line: `+<secs>.<micros> [<db> <addr>] "arg" ...\r\n`.
pub fn format_line<'a>(
    out: &mut Vec<u8>,
    now_us: u64,
    db: usize,
    addr: &str,
    argv: impl IntoIterator<Item = &'a [u8]>,
) {
    let mut head = String::with_capacity(48);
    // Writing to a String cannot fail.
    let _ = write!(
        head,
        "+{}.{:06} [{} {}]",
        now_us / 1_000_000,
        now_us % 1_000_000,
        db,
        addr
    );
    out.extend_from_slice(head.as_bytes());
    for a in argv {
        out.push(b' ');
        repr(out, a);
    }
    out.extend_from_slice(b"\r\n");
}

/// Quote `arg` as Redis's `sdscatrepr`: in double quotes, `\\` and `"` escaped, `\n \r \t
/// \a \b` by name, other bytes outside printable ASCII as `\xhh`.
pub fn repr(out: &mut Vec<u8>, arg: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
        }
    }
    out.push(b'"');
}

/// Positions of the arguments that are secrets, shown as `(redacted)` by MONITOR and the
/// slow log: every argument of AUTH, and the username and password of each `AUTH username
/// password` in HELLO, found by walking HELLO's options as Redis's `helloCommand` does.
/// (Redis leaves an AUTH of more than two arguments, a syntax error, in clear; larder
/// redacts it all the same, and goes on past an option HELLO rejects.)
pub fn redacted(argv: &[&[u8]]) -> Vec<usize> {
    let Some(name) = argv.first() else {
        return Vec::new();
    };
    if name.eq_ignore_ascii_case(b"auth") {
        return (1..argv.len()).collect();
    }
    let mut out = Vec::new();
    if name.eq_ignore_ascii_case(b"hello") {
        let mut j = 2;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if argv[j].eq_ignore_ascii_case(b"auth") && more >= 2 {
                out.extend([j + 1, j + 2]);
                j += 3;
            } else if argv[j].eq_ignore_ascii_case(b"setname") && more >= 1 {
                j += 2;
            } else {
                j += 1;
            }
        }
    }
    out
}

/// The gate a monitoring connection passes before each command (`exec::execute` calls it
/// only for monitors): RESET ends monitoring before it runs, so the resetting client does not
/// see its own RESET (Redis's `clearClientConnectionState`); a command that reads or writes
/// keys is refused, as Redis refuses it to a replica.
pub fn gate(server: &Server, conn: &mut ConnState, full_name: &str, spec_flags: u32) -> Result<()> {
    if full_name == "reset" {
        stop(server, conn);
        return Ok(());
    }
    if spec_flags & (WRITE | READONLY | MAY_REPLICATE) != 0 {
        return Err(Error::Static(
            "ERR Replica can't interact with the keyspace",
        ));
    }
    Ok(())
}

/// End monitoring for a connection (RESET).
pub fn stop(server: &Server, conn: &mut ConnState) {
    if conn.monitor {
        conn.monitor = false;
        server.monitors.remove(conn.id);
    }
}

/// MONITOR: +OK, then a line for every command run from now on. A monitor that runs MONITOR
/// again gets no reply, as in Redis.
fn monitor(c: &mut Cmd<'_>) -> Result<()> {
    // Inside EXEC (the only way MONITOR runs with shards held): Redis's CLIENT_DENY_BLOCKING.
    if c.held.is_some() {
        return Err(Error::Static(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if c.conn.monitor {
        return Ok(());
    }
    c.conn.monitor = true;
    c.server.monitors.add(&c.conn.handle);
    c.out.simple("OK");
    Ok(())
}

/// The MONITOR command (Redis 7.0's COMMAND INFO).
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "monitor",
        arity: 1,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        keys: KeySpec::NONE,
        group: Group::Server,
        summary: "Listen for all requests received by the server in real time",
        since: "1.0.0",
        handler: monitor,
        subcommands: &[],
    },
];

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::*;

    fn line(argv: &[&[u8]]) -> String {
        let mut out = Vec::new();
        format_line(
            &mut out,
            1_700_000_000_000_042,
            3,
            "127.0.0.1:5000",
            argv.iter().copied(),
        );
        String::from_utf8(out).expect("ASCII")
    }

    #[test]
    fn lines_are_formatted_and_quoted_like_redis() {
        assert_eq!(
            line(&[b"SET", b"k", b"v"]),
            "+1700000000.000042 [3 127.0.0.1:5000] \"SET\" \"k\" \"v\"\r\n"
        );
        // sdscatrepr: \" \\ \n \r \t \a \b by name, the rest of non-printables in hex.
        assert_eq!(
            line(&[b"a\"b\\c\n\r\t\x07\x08\x01\xff \x7f~", b""]),
            "+1700000000.000042 [3 127.0.0.1:5000] \"a\\\"b\\\\c\\n\\r\\t\\a\\b\\x01\\xff \\x7f~\" \"\"\r\n"
        );
        assert_eq!(line(&[]), "+1700000000.000042 [3 127.0.0.1:5000]\r\n");
    }

    #[test]
    fn secrets_are_redacted() {
        let r = |a: &[&str]| redacted(&a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        assert_eq!(r(&["AUTH", "pw"]), vec![1]);
        assert_eq!(r(&["auth", "u", "pw"]), vec![1, 2]);
        assert_eq!(
            r(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]),
            vec![3, 4]
        );
        // SETNAME's value is not an option, even when it reads "auth".
        assert_eq!(
            r(&["HELLO", "2", "SETNAME", "auth", "AUTH", "u", "p"]),
            vec![5, 6]
        );
        // Too few arguments for AUTH: nothing to hide (Redis shows it too).
        assert_eq!(r(&["HELLO", "3", "AUTH", "u"]), Vec::<usize>::new());
        assert_eq!(r(&["SET", "auth", "x"]), Vec::<usize>::new());
        assert_eq!(r(&[]), Vec::<usize>::new());
    }

    /// The lines queued in a harness client's outbox.
    fn mail(h: &Harness) -> String {
        String::from_utf8(h.conn.handle.mail.take()).expect("ASCII lines")
    }

    /// The argument part of each line (after `] `).
    fn commands(text: &str) -> Vec<String> {
        text.split("\r\n")
            .filter(|l| !l.is_empty())
            .map(|l| {
                assert!(l.starts_with('+'), "{l}");
                l.split_once("] ").map_or("", |(_, rest)| rest).to_string()
            })
            .collect()
    }

    #[test]
    fn monitor_sees_other_clients_commands() {
        let mut m = Harness::new();
        let mut c = Harness::connect(Arc::clone(&m.server));
        assert!(!m.server.monitors.active());
        assert_eq!(m.run_raw(&[b"MONITOR"]), b"+OK\r\n");
        assert!(m.server.monitors.active());
        assert!(m.server.monitors.contains(m.conn.id));
        // Again: no reply, still one monitor.
        assert_eq!(m.run_raw(&[b"MONITOR"]), b"");
        assert_eq!(m.server.monitors.len(), 1);
        c.run(&["SET", "k", "a b\n"]);
        c.run(&["AUTH", "secret"]);
        c.run(&["HELLO", "2", "AUTH", "default", "secret"]);
        c.run(&["CONFIG", "SET", "maxmemory", "0"]);
        c.run(&["SELECT", "2"]);
        c.run(&["GET", "k"]);
        c.run(&["NOSUCH"]);
        let text = mail(&m);
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            commands(&text),
            [
                r#""SET" "k" "a b\n""#,
                r#""AUTH" "(redacted)""#,
                r#""HELLO" "2" "AUTH" "(redacted)" "(redacted)""#,
                r#""SELECT" "2""#,
                r#""GET" "k""#,
            ]
        );
        let first = text.lines().next().expect("a line");
        let addr = &c.conn.handle.addr;
        assert!(first.contains(&format!(" [0 {addr}] ")), "{first}");
        let last = text.lines().last().expect("a line");
        assert!(last.contains(&format!(" [2 {addr}] ")), "{last}");
    }

    #[test]
    fn exec_shows_its_commands_then_itself() {
        let mut m = Harness::new();
        let mut c = Harness::connect(Arc::clone(&m.server));
        m.run_raw(&[b"MONITOR"]);
        c.run(&["MULTI"]);
        c.run(&["SET", "a", "1"]);
        c.run(&["INCR", "a"]);
        c.run(&["CONFIG", "GET", "maxmemory"]);
        c.run(&["EXEC"]);
        assert_eq!(
            commands(&mail(&m)),
            [
                r#""MULTI""#,
                r#""SET" "a" "1""#,
                r#""INCR" "a""#,
                r#""EXEC""#
            ]
        );
        // MONITOR inside EXEC is refused.
        c.run(&["MULTI"]);
        c.run(&["MONITOR"]);
        let out = c.run_raw(&[b"EXEC"]);
        assert!(
            String::from_utf8_lossy(&out)
                .contains("MONITOR isn't allowed for DENY BLOCKING client"),
            "{out:?}"
        );
        assert!(!c.conn.monitor);
    }

    #[test]
    fn monitors_see_their_own_commands_but_not_keys_and_reset_ends_it() {
        let mut m = Harness::new();
        m.run_raw(&[b"MONITOR"]);
        assert_eq!(m.run_raw(&[b"PING"]), b"+PONG\r\n");
        assert_eq!(
            m.run_raw(&[b"GET", b"k"]),
            b"-ERR Replica can't interact with the keyspace\r\n"
        );
        assert_eq!(commands(&mail(&m)), [r#""PING""#]);
        assert_eq!(m.run_raw(&[b"RESET"]), b"+RESET\r\n");
        assert!(!m.conn.monitor);
        assert!(!m.server.monitors.active());
        m.run(&["PING"]);
        assert_eq!(mail(&m), "");
        assert_eq!(m.run_raw(&[b"GET", b"k"]), b"$-1\r\n");
    }

    #[test]
    fn closing_removes_a_monitor() {
        let mut m = Harness::new();
        m.run_raw(&[b"MONITOR"]);
        m.server.client_closed(m.conn.id, None);
        assert!(!m.server.monitors.active());
    }

    #[test]
    fn a_monitor_that_does_not_read_is_closed_at_its_limit() {
        let mut m = Harness::new();
        let mut c = Harness::connect(Arc::clone(&m.server));
        assert_eq!(
            c.run(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1kb 0 0"
            ]),
            ok()
        );
        m.run_raw(&[b"MONITOR"]);
        let before = crate::mail::OUTPUT_LIMIT_DISCONNECTIONS.load(Ordering::Relaxed);
        let value = "x".repeat(100);
        for _ in 0..20 {
            c.run(&["SET", "k", &value]);
        }
        assert!(m.conn.handle.mail.over_limit());
        assert!(m.conn.handle.killed.load(Ordering::Acquire));
        assert!(crate::mail::OUTPUT_LIMIT_DISCONNECTIONS.load(Ordering::Relaxed) > before);
        // The default (unlimited) normal class still bounds monitors.
        c.run(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0",
        ]);
        assert_eq!(m.server.monitors.limit().hard_bytes, FALLBACK_HARD_BYTES);
    }

    #[test]
    fn memcached_requests_are_shown_in_db_0() {
        let mut m = Harness::new();
        m.run_raw(&[b"MONITOR"]);
        feed_memcached(
            &m.server,
            "10.0.0.1:7",
            [&b"set"[..], b"k", b"0", b"0", b"5"],
            1_000_000,
        );
        assert_eq!(
            mail(&m),
            "+1.000000 [0 10.0.0.1:7] \"set\" \"k\" \"0\" \"0\" \"5\"\r\n"
        );
    }
}
