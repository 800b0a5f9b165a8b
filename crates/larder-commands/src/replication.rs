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
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
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
    /// WAIT blocks `client` until acknowledgements reach `offset`: wake it at each one, and
    /// ask the replicas for theirs (REPLCONF GETACK).
    fn wait_acks(&self, client: &Arc<ClientHandle>, offset: u64);
    /// The offset client `id` waits for, if it is waiting; it waits no more.
    fn stop_waiting(&self, id: u64) -> Option<u64>;
    /// Client `id` closed.
    fn client_closed(&self, id: u64);
    /// The master this server replicates (REPLICAOF host port), when it is a replica.
    // FIXME(issue 17): the replica role is being built; until then a server is a master.
    fn master(&self) -> Option<(String, u16)> {
        None
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
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "role:master\r\nconnected_slaves:{}\r\n",
        s.replicas.len()
    );
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

#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("replconf", -1, ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        KeySpec::NONE, Group::Server,
        "An internal command for configuring the replication stream", "3.0.0", replconf),
    CommandSpec::new("psync", -3, ADMIN | NOSCRIPT | NO_MULTI, KeySpec::NONE, Group::Server,
        "Internal command used for replication", "2.8.0", psync),
    CommandSpec::new("sync", 1, ADMIN | NOSCRIPT | NO_MULTI, KeySpec::NONE, Group::Server,
        "Internal command used for replication", "1.0.0", sync),
    CommandSpec::new("role", 1, NOSCRIPT | LOADING | STALE | FAST, KeySpec::NONE, Group::Server,
        "Return the role of the instance in the context of replication", "2.8.12", role),
    CommandSpec::new("wait", 3, NOSCRIPT, KeySpec::NONE, Group::Connection,
        "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        "3.0.0", wait),
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

/// ROLE for a master: `master`, the offset, and each replica's ip, port and offset.
fn role(c: &mut Cmd<'_>) -> Result<()> {
    c.args.finish()?;
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
    let acked = r.acked(target);
    let over = deadline != 0 && c.now_ms >= deadline;
    if acked as i64 >= want || over || c.conn.in_exec {
        c.out.int(acked as i64);
        return Ok(());
    }
    r.wait_acks(&c.conn.handle, target);
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
