//! Replication as the command layer sees it: the master side of Redis 7.0's protocol
//! (REPLCONF, PSYNC, SYNC), ROLE, WAIT, and the numbers INFO replication and INFO stats show.
//!
//! The runtime (replication id and offset, the backlog, the stream of commands, full and
//! partial resyncs) lives in the binary (`larder-server/src/repl/`) and is reached through
//! [`Replication`], installed once at start ([`Server::replication`]). Without one (unit
//! tests) the server is a master that no replica ever attached to: ROLE and INFO show Redis's
//! idle values, WAIT answers 0 at once and PSYNC is refused.

use std::sync::Arc;

use crate::config::Param;
use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::state::ClientHandle;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};
use crate::Server;

/// One attached replica, as INFO replication and ROLE show it.
#[derive(Clone, Debug, Default)]
pub struct ReplicaStatus {
    pub ip: String,
    /// The port it said it listens on (REPLCONF listening-port), 0 if it did not.
    pub port: u16,
    /// Redis's state names: `wait_bgsave`, `send_bulk`, `online`.
    pub state: &'static str,
    /// The offset it last acknowledged.
    pub ack_offset: u64,
    /// Seconds since its last acknowledgement.
    pub lag_s: u64,
}

/// The master's replication state.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub replid: String,
    pub replid2: String,
    pub offset: u64,
    /// -1 while `replid2` is unset.
    pub second_offset: i64,
    pub backlog_active: bool,
    pub backlog_size: u64,
    pub backlog_first_byte_offset: u64,
    pub backlog_histlen: u64,
    pub replicas: Vec<ReplicaStatus>,
    /// Bytes queued for the replicas and not yet sent: their output buffers and the stream
    /// gathered while they receive a file (INFO's `mem_clients_slaves`).
    pub replica_output_bytes: u64,
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
}

/// A replica's link to its master, as INFO replication and ROLE show it.
#[derive(Clone, Debug, Default)]
pub struct LinkStatus {
    pub host: String,
    pub port: u16,
    /// ROLE's state: `connect`, `connecting`, `handshake`, `sync`, `connected`.
    pub state: &'static str,
    /// Seconds since the master last sent something; -1 without a link.
    pub last_io_s: i64,
    /// Seconds since the link went down; -1 if it was never up.
    pub down_since_s: i64,
    /// Bytes of the stream read, and processed (the replica's replication offset); -1
    /// for the processed offset while there is no link (ROLE's).
    pub read_offset: u64,
    pub offset: i64,
    /// During a full resync: the file's size (-1 until its header arrives, 0 for an
    /// EOF-marked file, as Redis 7.0), bytes read, seconds since the last read.
    pub sync_total_bytes: i64,
    pub sync_read_bytes: u64,
    pub sync_last_io_s: i64,
}

/// The error a write gets on a read-only replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// WAIT on a replica (Redis's text).
const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note \
     that since Redis 4.0 if a replica is configured to be writable (which is not the default) \
     writes to replicas are just local and are not propagated.";
/// The error a command without the STALE flag gets while the link is down and
/// `replica-serve-stale-data` is no.
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// The replica's refusals for a client other than the master's stream (the caller checked
/// that the server is a replica), in Redis's order: writes on a read-only replica, then
/// commands that would serve stale data.
pub(crate) fn replica_gate(server: &Server, spec_flags: u32) -> Option<Error> {
    use crate::config::Param;
    use std::sync::atomic::Ordering;
    if spec_flags & WRITE != 0 && server.config.num(Param::ReplicaReadOnly) != 0 {
        return Some(Error::Static(READONLY));
    }
    if spec_flags & STALE == 0
        && server.gates.master_link_down.load(Ordering::Relaxed)
        && server.config.num(Param::ReplicaServeStaleData) == 0
    {
        return Some(Error::Static(MASTERDOWN));
    }
    None
}

/// How a replica asked to synchronise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncRequest<'a> {
    /// PSYNC `replid` `offset` (`?` and -1 for a replica that has no data).
    Psync { replid: &'a [u8], offset: i64 },
    /// SYNC: an old replica, always a full resync without a reply line.
    Sync,
}

/// The replication runtime, as commands reach it.
pub trait Replication: Send + Sync {
    fn status(&self) -> Status;
    /// Post the stream bytes this turn's writes fed to the online replicas: a worker calls
    /// it once per turn, before it sends the turn's replies (Redis's `beforeSleep`).
    fn flush_stream(&self) {}
    /// REPLCONF `option` `value` other than ACK and GETACK, from `client`.
    fn replconf(
        &self,
        client: &Arc<ClientHandle>,
        option: &[u8],
        value: &[u8],
    ) -> std::result::Result<(), String>;
    /// REPLCONF ACK: replica `id` has processed the stream up to `offset`.
    fn ack(&self, id: u64, offset: u64);
    /// PSYNC or SYNC from `client`: from now on everything the connection receives (the
    /// resync's reply, the RDB file, the stream) comes through its outbox.
    fn sync(
        &self,
        client: &Arc<ClientHandle>,
        req: SyncRequest<'_>,
    ) -> std::result::Result<(), String>;
    /// Whether client `id` is an attached replica (CLIENT LIST's `S` flag).
    fn is_replica(&self, id: u64) -> bool;
    /// The replication offset now.
    fn offset(&self) -> u64;
    /// How many replicas acknowledged `offset` or beyond.
    fn acked(&self, offset: u64) -> usize;
    /// WAIT blocks `client` until acknowledgements reach `offset`: wake it at each one that
    /// reaches it, and ask the replicas for theirs (REPLCONF GETACK); None. Unless `want`
    /// replicas already acknowledged it (counted under the lock acknowledgements take, so
    /// none that lands between WAIT's first count and this call is missed): then nothing
    /// waits, and that count is returned.
    fn wait_acks(&self, client: &Arc<ClientHandle>, offset: u64, want: usize) -> Option<usize>;
    /// The offset client `id` waits for, if it is waiting; it waits no more.
    fn stop_waiting(&self, id: u64) -> Option<u64>;
    /// How many clients WAIT now (counted in INFO `blocked_clients`, as Redis counts them).
    fn waiting(&self) -> usize;
    /// Client `id` closed.
    fn client_closed(&self, id: u64);
    /// The master this server replicates (REPLICAOF host port), when it is a replica.
    fn master(&self) -> Option<(String, u16)> {
        None
    }
    /// REPLICAOF: follow `host` `port`, or (None) become a master; the caller answers
    /// `Already connected` when the master is the same.
    fn replicaof(&self, _target: Option<(&str, u16)>) -> std::result::Result<(), String> {
        Err("ERR replication is not running on this server".into())
    }
    /// The link to the master, when this server is a replica.
    fn link(&self) -> Option<LinkStatus> {
        None
    }
    /// Whether client `id` is the master's stream (CLIENT LIST's `M` flag).
    fn is_master_link(&self, _id: u64) -> bool {
        false
    }
}

/// The master this server replicates, when it is a replica: what the doors name when they
/// refuse a write, and what the read-only gate checks.
pub fn master_of(server: &Server) -> Option<(String, u16)> {
    server.replication.get().and_then(|r| r.master())
}

/// Whether a write may run as far as `min-replicas-to-write` is concerned (Redis's
/// `checkGoodReplicasStatus`): always on a replica or with either parameter 0; otherwise
/// when the runtime's last count of good replicas reaches it.
pub fn enough_good_replicas(server: &Server) -> bool {
    use std::sync::atomic::Ordering;
    let to_write = server.config.num(Param::MinReplicasToWrite);
    to_write <= 0
        || server.config.num(Param::MinReplicasMaxLag) <= 0
        || server.gates.good_replicas.load(Ordering::Relaxed) >= to_write as u64
        || master_of(server).is_some()
}

/// The runtime's status, or the idle one.
pub fn status(server: &Server) -> Status {
    match server.replication.get() {
        Some(r) => r.status(),
        None => Status {
            replid: idle_replid(&server.run_id),
            replid2: "0".repeat(40),
            second_offset: -1,
            backlog_size: 1 << 20,
            ..Status::default()
        },
    }
}

/// A 40-hex-digit replication id for a server without a runtime, fixed for its life and
/// distinct from its run id.
fn idle_replid(run_id: &str) -> String {
    let seed = run_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }) | 1;
    let a = crate::state::xorshift(seed);
    let b = crate::state::xorshift(a);
    let c = crate::state::xorshift(b);
    format!("{a:016x}{b:016x}{:08x}", c as u32)
}

/// INFO replication, as Redis 7.0.15 prints it for a master.
pub fn info_section(server: &Server, out: &mut String) {
    use std::fmt::Write as _;
    let s = status(server);
    let link = server.replication.get().and_then(|r| r.link());
    // Writing to a String cannot fail.
    match &link {
        None => out.push_str("role:master\r\n"),
        Some(l) => replica_info(server, l, out),
    }
    let _ = write!(out, "connected_slaves:{}\r\n", s.replicas.len());
    if server.config.num(Param::MinReplicasToWrite) > 0
        && server.config.num(Param::MinReplicasMaxLag) > 0
    {
        let good = server
            .gates
            .good_replicas
            .load(std::sync::atomic::Ordering::Relaxed);
        let _ = write!(out, "min_slaves_good_slaves:{good}\r\n");
    }
    for (i, r) in s.replicas.iter().enumerate() {
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip, r.port, r.state, r.ack_offset, r.lag_s
        );
    }
    let _ = write!(
        out,
        "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\n\
         master_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\n\
         repl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        s.replid,
        s.replid2,
        s.offset,
        s.second_offset,
        u8::from(s.backlog_active),
        s.backlog_size,
        s.backlog_first_byte_offset,
        s.backlog_histlen
    );
}

/// INFO replication's lines for a replica, as Redis 7.0.15 prints them.
fn replica_info(server: &Server, l: &LinkStatus, out: &mut String) {
    use std::fmt::Write as _;
    let up = l.state == "connected";
    let _ = write!(
        out,
        "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
         master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\n\
         slave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
        l.host,
        l.port,
        if up { "up" } else { "down" },
        l.last_io_s,
        u8::from(l.state == "sync"),
        l.read_offset,
        l.offset.max(0),
    );
    if l.state == "sync" {
        let total = l.sync_total_bytes;
        let read = l.sync_read_bytes as i64;
        // Redis divides by any size but 0 (-1 before the header gives -0.00).
        let perc = if total != 0 {
            read as f64 / total as f64 * 100.0
        } else {
            0.0
        };
        let _ = write!(
            out,
            "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{read}\r\n\
             master_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\n\
             master_sync_last_io_seconds_ago:{}\r\n",
            total - read,
            l.sync_last_io_s
        );
    }
    if !up {
        let _ = write!(out, "master_link_down_since_seconds:{}\r\n", l.down_since_s);
    }
    // `replica-priority` and `replica-announced` are read by name: they belong to the
    // Sentinel-facing parameters.
    let param = |name: &str, default: i64| {
        crate::config::lookup(name).map_or(default, |d| server.config.num(d.param))
    };
    let _ = write!(
        out,
        "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
        param("replica-priority", 100),
        server.config.num(crate::config::Param::ReplicaReadOnly),
        param("replica-announced", 1),
    );
}

#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("replconf", -1, ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        KeySpec::NONE, Group::Server,
        "An internal command for configuring the replication stream", "3.0.0", replconf),
    CommandSpec::new("psync", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, KeySpec::NONE, Group::Server,
        "Internal command used for replication", "2.8.0", psync),
    CommandSpec::new("sync", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, KeySpec::NONE, Group::Server,
        "Internal command used for replication", "1.0.0", sync),
    CommandSpec::new("role", 1, NOSCRIPT | LOADING | STALE | FAST, KeySpec::NONE, Group::Server,
        "Return the role of the instance in the context of replication", "2.8.12", role),
    CommandSpec::new("wait", 3, NOSCRIPT, KeySpec::NONE, Group::Connection,
        "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        "3.0.0", wait),
    CommandSpec::new("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, KeySpec::NONE, Group::Server,
        "Make the server a replica of another instance, or promote it as master.", "5.0.0",
        replicaof),
    CommandSpec::new("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, KeySpec::NONE, Group::Server,
        "Make the server a replica of another instance, or promote it as master.", "1.0.0",
        replicaof),
];

fn runtime<'a>(c: &Cmd<'a>) -> Option<&'a dyn Replication> {
    c.server.replication.get().map(|r| &**r)
}

/// REPLCONF: options come in pairs; ACK has no reply; GETACK is for replicas (a master has
/// nothing to acknowledge and ignores it, as Redis does).
fn replconf(c: &mut Cmd<'_>) -> Result<()> {
    if c.args.remaining() % 2 != 0 {
        return Err(Error::Static(crate::error::SYNTAX));
    }
    // ACK and GETACK have no reply (nothing is written for them).
    let mut silent = false;
    while c.args.remaining() > 0 {
        let option = c.args.next_arg()?;
        let value = c.args.next_arg()?;
        if option.eq_ignore_ascii_case(b"ack") || option.eq_ignore_ascii_case(b"fack") {
            if option.eq_ignore_ascii_case(b"ack") {
                if let (Some(r), Some(offset)) = (runtime(c), crate::args::parse_u64(value)) {
                    r.ack(c.conn.id, offset);
                }
            }
            silent = true;
            continue;
        }
        if option.eq_ignore_ascii_case(b"getack") {
            silent = true;
            continue;
        }
        let Some(r) = runtime(c) else {
            continue;
        };
        r.replconf(&c.conn.handle, option, value)
            .map_err(Error::Owned)?;
    }
    if !silent {
        c.out.simple("OK");
    }
    Ok(())
}

fn psync(c: &mut Cmd<'_>) -> Result<()> {
    let replid = c.args.next_arg()?;
    let offset = c.args.i64()?;
    c.args.finish()?;
    start_sync(c, SyncRequest::Psync { replid, offset })
}

fn sync(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
    start_sync(c, SyncRequest::Sync)
}

fn start_sync(c: &mut Cmd<'_>, req: SyncRequest<'_>) -> Result<()> {
    if c.conn.multi.is_some() || c.conn.in_exec {
        return Err(Error::Static(
            "ERR Command is not allowed inside a transaction",
        ));
    }
    let r = runtime(c).ok_or(Error::Static(
        "ERR replication is not running on this server",
    ))?;
    if r.is_replica(c.conn.id) {
        // A replica that asks again is ignored, as Redis does.
        return Ok(());
    }
    // The resync's reply goes through the outbox, ahead of the file: nothing is written
    // here.
    r.sync(&c.conn.handle, req).map_err(Error::Owned)
}

/// REPLICAOF (and SLAVEOF) host port, or NO ONE, with Redis 7.0.15's replies.
fn replicaof(c: &mut Cmd<'_>) -> Result<()> {
    let host = c.args.next_arg()?;
    let port = c.args.next_arg()?;
    c.args.finish()?;
    let r = runtime(c).ok_or(Error::Static(
        "ERR replication is not running on this server",
    ))?;
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        if r.master().is_some() {
            r.replicaof(None).map_err(Error::Owned)?;
        }
        c.out.simple("OK");
        return Ok(());
    }
    if r.is_replica(c.conn.id) {
        return Err(Error::Static(
            "ERR Command is not valid when client is a replica.",
        ));
    }
    let port = crate::args::parse_i64(port)
        .and_then(|p| u16::try_from(p).ok())
        .ok_or(Error::Static("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(host).into_owned();
    if r.master()
        .is_some_and(|(h, p)| h.eq_ignore_ascii_case(&host) && p == port)
    {
        c.out.simple("OK Already connected to specified master");
        return Ok(());
    }
    r.replicaof(Some((&host, port))).map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

/// ROLE: for a master `master`, the offset, and each replica's ip, port and offset; for a
/// replica `slave`, its master's host and port, the link's state and the offset (-1 while
/// not connected).
fn role(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
    if let Some(l) = c.server.replication.get().and_then(|r| r.link()) {
        c.out.array(5);
        c.out.bulk(b"slave");
        c.out.bulk(l.host.as_bytes());
        c.out.int(i64::from(l.port));
        c.out.bulk(l.state.as_bytes());
        c.out
            .int(if l.state == "connected" { l.offset } else { -1 });
        return Ok(());
    }
    let s = status(c.server);
    c.out.array(3);
    c.out.bulk(b"master");
    c.out.int(s.offset as i64);
    c.out.array(s.replicas.len());
    for r in &s.replicas {
        c.out.array(3);
        c.out.bulk(r.ip.as_bytes());
        c.out.bulk(r.port.to_string().as_bytes());
        c.out.bulk(r.ack_offset.to_string().as_bytes());
    }
    Ok(())
}

/// WAIT numreplicas timeout: the number of replicas that acknowledged the replication
/// offset as it was when WAIT first ran (which covers every write this client made), once
/// at least `numreplicas` did or at the timeout (0: none).
fn wait(c: &mut Cmd<'_>) -> Result<()> {
    if c.server
        .gates
        .replica
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return Err(Error::Static(WAIT_ON_REPLICA));
    }
    let want = c.args.i64()?;
    let timeout_ms = c.args.i64()?;
    c.args.finish()?;
    if timeout_ms < 0 {
        return Err(Error::Static("ERR timeout is negative"));
    }
    let Some(r) = runtime(c) else {
        c.out.int(0);
        return Ok(());
    };
    let id = c.conn.id;
    let retry = c.conn.blocked.take();
    let target = match retry {
        Some(_) => r.stop_waiting(id).unwrap_or_else(|| r.offset()),
        None => r.offset(),
    };
    let deadline = retry.unwrap_or(match timeout_ms {
        0 => 0,
        ms => c.now_ms.saturating_add(ms as u64),
    });
    let over = deadline != 0 && c.now_ms >= deadline;
    if over || c.conn.in_exec {
        c.out.int(r.acked(target) as i64);
        return Ok(());
    }
    // Counts, and blocks only when too few acknowledged.
    if let Some(acked) = r.wait_acks(&c.conn.handle, target, want.max(0) as usize) {
        c.out.int(acked as i64);
        return Ok(());
    }
    c.conn.blocked = Some(deadline);
    c.conn.block_now = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    use larder_resp::Frame;

    use crate::testing::*;

    #[test]
    fn without_a_runtime_the_server_is_an_idle_master() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["ROLE"]),
            Frame::Array(vec![bulk("master"), int(0), Frame::Array(vec![])])
        );
        assert_eq!(h.run(&["WAIT", "1", "0"]), int(0));
        assert_eq!(h.run(&["WAIT", "1", "-1"]), err("ERR timeout is negative"));
        assert_eq!(h.run(&["REPLCONF", "listening-port", "6380"]), ok());
        assert_eq!(
            h.run(&["REPLCONF", "listening-port"]),
            err("ERR syntax error")
        );
        // ACK has no reply.
        assert_eq!(h.run_raw(&[b"REPLCONF", b"ACK", b"10"]), b"");
        assert_eq!(
            h.run(&["PSYNC", "?", "-1"]),
            err("ERR replication is not running on this server")
        );
        assert_eq!(
            h.run(&["REPLICAOF", "127.0.0.1", "6380"]),
            err("ERR replication is not running on this server")
        );
        assert_eq!(
            h.run(&["SLAVEOF", "no", "one"]),
            err("ERR replication is not running on this server")
        );
        assert_eq!(
            h.run(&["REPLICAOF", "no"]),
            err("ERR wrong number of arguments for 'replicaof' command")
        );
        let Frame::Bulk(text) = h.run(&["INFO", "replication"]) else {
            panic!("INFO answers a bulk string");
        };
        let text = String::from_utf8_lossy(&text).into_owned();
        for line in [
            "role:master",
            "connected_slaves:0",
            "master_repl_offset:0",
            "second_repl_offset:-1",
            "repl_backlog_active:0",
            "repl_backlog_size:1048576",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn min_replicas_to_write_refuses_writes_without_enough_good_replicas() {
        use std::sync::atomic::Ordering;
        let mut h = Harness::new();
        let info = |h: &mut Harness| match h.run(&["INFO", "replication"]) {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO answered {other:?}"),
        };
        assert!(!info(&mut h).contains("min_slaves_good_slaves"));
        assert_eq!(h.run(&["CONFIG", "SET", "min-slaves-to-write", "1"]), ok());
        assert_eq!(
            h.run(&["CONFIG", "GET", "min-replicas-to-write"]),
            Frame::Array(vec![bulk("min-replicas-to-write"), bulk("1")])
        );
        let refused = err("NOREPLICAS Not enough good replicas to write.");
        assert_eq!(h.run(&["SET", "k", "v"]), refused);
        // Reads still run; so does a write refused inside MULTI, which then aborts EXEC.
        assert_eq!(h.run(&["GET", "k"]), Frame::Null);
        assert!(info(&mut h).contains("min_slaves_good_slaves:0\r\n"));
        assert_eq!(h.run(&["MULTI"]), ok());
        assert_eq!(h.run(&["SET", "k", "v"]), refused);
        assert_eq!(
            h.run(&["EXEC"]),
            err("EXECABORT Transaction discarded because of previous errors.")
        );
        h.server.gates.good_replicas.store(1, Ordering::Relaxed);
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
        assert!(info(&mut h).contains("min_slaves_good_slaves:1\r\n"));
        // Either parameter at 0 turns the check off.
        h.server.gates.good_replicas.store(0, Ordering::Relaxed);
        assert_eq!(h.run(&["CONFIG", "SET", "min-slaves-max-lag", "0"]), ok());
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
        assert!(!info(&mut h).contains("min_slaves_good_slaves"));
    }
}
