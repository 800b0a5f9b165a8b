//! One connection to the master at a time: handshake, resync, then the stream, applied
//! through `exec::execute` on a connection flagged as the loader (as recovery replays the
//! log): no replies, no ACL check, not held by CLIENT PAUSE, allowed to write on a
//! read-only replica, and the only one that sees keys past their deadline.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use larder_commands::config::Param;
use larder_commands::script::Restore;
use larder_commands::state::ClientHandle;
use larder_commands::{ConnState, Server};
use larder_resp::{parse_request, Limits, Parsed, Protocol, ReplyBuf};

use super::prefetch;
use super::wire::{Framing, Payload, Wire, POLL};
use super::{Link, Phase};
use crate::repl::{meta, Master};
use crate::resp::recycle;

/// Follow the master until the link is stopped, reconnecting about once a second.
pub fn run(master: &Arc<Master>, server: &Arc<Server>, link: &Arc<Link>) {
    larder_engine::set_applies_master_stream(true);
    wait_for_recovery(server, link);
    while !link.stopped() {
        link.set_phase(server, Phase::Connecting);
        match session(master, server, link) {
            Ok(()) => {}
            Err(why) if link.stopped() => tracing::debug!(error = %why, "master link stopped"),
            Err(why) => tracing::warn!(
                master = %format!("{}:{}", link.host, link.port),
                error = %why,
                "master link down; retrying in a second"
            ),
        }
        link.client_id.store(0, Ordering::Relaxed);
        if server.gates.loading.swap(false, Ordering::Relaxed) {
            tracing::warn!("the master's file was not loaded whole; the next sync is a full one");
        }
        link.set_phase(server, Phase::Connect);
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until && !link.stopped() {
            std::thread::sleep(POLL);
        }
    }
}

/// This server's own data directory is loaded first, as Redis loads its files before it
/// connects to a master: a full resync's file must not load beside the replay of the log
/// (a key "appears twice", or the replay's keys outlive the master's FLUSHALL).
fn wait_for_recovery(server: &Server, link: &Link) {
    let loading = || server.persistence.get().is_some_and(|p| p.status().loading);
    while !link.stopped() && loading() {
        std::thread::sleep(POLL);
    }
}

/// The master's connection as CLIENT LIST shows it (flag `M`).
fn master_client(server: &Server, addr: String, laddr: String) -> Arc<ClientHandle> {
    // A fresh handle has no other owner.
    let mut h = match Arc::try_unwrap(ClientHandle::detached(server)) {
        Ok(h) => h,
        Err(shared) => return shared,
    };
    h.addr = addr;
    h.laddr = laddr;
    Arc::new(h)
}

fn session(master: &Arc<Master>, server: &Arc<Server>, link: &Arc<Link>) -> Result<(), String> {
    let timeout = Duration::from_secs(server.config.num(Param::ReplTimeout).max(1) as u64);
    let (sock, addr, laddr) = super::wire::connect(server, link, timeout)?;
    let client = master_client(server, addr.to_string(), laddr);
    let mut wire = Wire {
        sock,
        buf: Vec::new(),
        link,
        client: &client,
        timeout,
        last_read: Instant::now(),
    };
    link.set_phase(server, Phase::Handshake);
    handshake(server, &mut wire)?;
    let (replid, offset) = master.psync_args(link);
    wire.send(&[b"PSYNC", replid.as_bytes(), offset.as_bytes()])?;
    // A master may send newlines to keep the link alive before it answers.
    let reply = loop {
        let line = wire.line()?;
        if !line.is_empty() {
            break line;
        }
    };
    let mut conn = ConnState::new(server, Arc::clone(&client), 0);
    conn.loader = true;
    conn.authenticated = true;
    let words: Vec<&str> = reply.split(' ').collect();
    // Whether the master answered PSYNC with an error and was asked `SYNC` instead
    // (Redis's `CLIENT_PRE_PSYNC` master): its stream has no offsets to acknowledge.
    let mut pre_psync = false;
    match words.as_slice() {
        ["+FULLRESYNC", id, off] => {
            let off: u64 = off.parse().map_err(|_| format!("bad reply {reply}"))?;
            link.history_valid.store(false, Ordering::Release);
            link.sync_progress(-1, 0);
            link.set_phase(server, Phase::Sync);
            // The turn covers the load too: a link stopped meanwhile fails its next read,
            // and the next link's FLUSHALL comes after the last key this one loaded.
            let _turn = link.turn()?;
            let db = load(server, &mut wire, &mut conn)?;
            master.full_synced(server, link, id, off, db)?;
            conn.db = db as usize;
            link.history_valid.store(true, Ordering::Release);
            link.read_offset.store(off, Ordering::Relaxed);
            tracing::info!(
                replid = id,
                offset = off,
                "MASTER <-> REPLICA sync: finished with success"
            );
        }
        ["+CONTINUE"] | ["+CONTINUE", _] => {
            let _turn = link.turn()?;
            master.continued(server, link, words.get(1).copied())?;
            conn.db = master.state.lock().stream_db() as usize;
            link.read_offset
                .store(master.offset_now(), Ordering::Relaxed);
            tracing::info!("MASTER <-> REPLICA sync: master accepted a partial resynchronization");
        }
        ["+FULLRESYNC", ..] => return Err(format!("bad reply to PSYNC from master: {reply}")),
        // A transient state of the master (`PSYNC_TRY_LATER`): PSYNC again in a second.
        _ if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") => {
            tracing::info!(
                "Master is currently unable to PSYNC but should be in the future: {reply}"
            );
            return Err(format!("the master cannot PSYNC now: {reply}"));
        }
        // A master without PSYNC (`PSYNC_NOT_SUPPORTED`): its file and stream come after
        // SYNC with no replication id or offset, so this server starts a history of its
        // own and its next connection asks `PSYNC ? -1`, as Redis's replica does.
        _ => {
            if reply.starts_with("-ERR") {
                tracing::info!(
                    "Master does not support PSYNC or is in error state (reply: {reply})"
                );
            } else {
                tracing::warn!("Unexpected reply to PSYNC from master: {reply}");
            }
            tracing::info!("Retrying with SYNC...");
            link.history_valid.store(false, Ordering::Release);
            wire.send(&[b"SYNC"])?;
            link.sync_progress(-1, 0);
            link.set_phase(server, Phase::Sync);
            let _turn = link.turn()?;
            let db = load(server, &mut wire, &mut conn)?;
            master.full_synced(server, link, &crate::repl::random_hex(40), 0, db)?;
            conn.db = db as usize;
            link.read_offset.store(0, Ordering::Relaxed);
            pre_psync = true;
            tracing::info!("MASTER <-> REPLICA sync: finished with success (SYNC)");
        }
    }
    link.client_id.store(client.id, Ordering::Relaxed);
    server.clients.register(Arc::clone(&client));
    link.set_phase(server, Phase::Connected);
    let result = stream(master, server, &mut wire, &mut conn, pre_psync);
    server.clients.unregister(client.id);
    result
}

/// PING, AUTH, REPLCONF, with Redis's tolerance: an error to PING that only asks for
/// authentication is fine, an error to `capa` is ignored.
fn handshake(server: &Server, wire: &mut Wire<'_>) -> Result<(), String> {
    let pong = wire.call(&[b"PING"])?;
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("error reply to PING from master: '{pong}'"));
    }
    let pass = server.config.text(Param::Masterauth);
    if !pass.is_empty() {
        let user = server.config.text(Param::Masteruser);
        let reply = if user.is_empty() {
            wire.call(&[b"AUTH", pass.as_bytes()])?
        } else {
            wire.call(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?
        };
        if reply.starts_with('-') {
            return Err(format!("unable to AUTH to MASTER: {reply}"));
        }
    }
    let port = server.info.lock().tcp_port.to_string();
    let reply = wire.call(&[b"REPLCONF", b"listening-port", port.as_bytes()])?;
    if reply.starts_with('-') {
        tracing::info!(reply = %reply, "master did not accept REPLCONF listening-port");
    }
    // A Redis master ignores a capa it does not know (`replconfCommand`). `larder-meta2`
    // asks for the packed versions frames, `larder-meta` for the first form, which a larder
    // master before the packed ones sends (`meta.rs` reads both).
    let reply = wire.call(&[
        b"REPLCONF",
        b"capa",
        b"eof",
        b"capa",
        b"psync2",
        b"capa",
        b"larder-meta",
        b"capa",
        b"larder-meta2",
    ])?;
    if reply.starts_with('-') {
        tracing::info!(reply = %reply, "master does not understand REPLCONF capa");
    }
    Ok(())
}

/// Receive the file of a full resync into the emptied keyspace; the database the stream
/// continues in (`repl-stream-db`).
fn load(server: &Arc<Server>, wire: &mut Wire<'_>, conn: &mut ConnState) -> Result<u32, String> {
    // Newlines keep the link alive while a master prepares its file.
    let header = loop {
        let line = wire.line()?;
        if !line.is_empty() {
            break line;
        }
    };
    let framing = match header.strip_prefix("$EOF:") {
        Some(mark) if mark.len() == 40 => Framing::Mark(mark.as_bytes().to_vec()),
        Some(_) => return Err(format!("bad EOF mark from the master: {header}")),
        None => Framing::Length(
            header
                .strip_prefix('$')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("bad file header from the master: {header}"))?,
        ),
    };
    let total = match framing {
        Framing::Length(n) => n as i64,
        // Redis 7.0 shows 0 for a file of unknown size (and -1 before its header).
        Framing::Mark(_) => 0,
    };
    wire.link.sync_progress(total, 0);
    server.gates.loading.store(true, Ordering::Relaxed);
    let mut out = ReplyBuf::new(Protocol::Resp2);
    larder_commands::execute(server, conn, &[b"FLUSHALL", b"SYNC"], &mut out);
    let limits = larder_commands::config::limits(&server.config);
    let delay_us = server.config.num(Param::KeyLoadDelay).max(0) as u64;
    let mut payload = Payload {
        wire,
        framing,
        read: 0,
        done: false,
        delay_us,
    };
    // Keys past their deadline are kept (now = 0): the master's DEL removes them.
    let stats = larder_persist::rdb::file::load_rdb(
        &mut payload,
        &server.keyspace,
        &limits,
        0,
        // The payload reports the bytes it reads (Redis counts the socket's).
        |_, _| {},
    )
    .map_err(|e| format!("loading the master's file: {e}"))?;
    payload.drain()?;
    // The master's function libraries replace this server's, as Redis's replica clears its
    // own before loading (a library that does not load fails the sync, as it does Redis's).
    let libraries = stats.functions.len();
    server
        .scripts
        .restore_libraries(server, stats.functions, Restore::Flush)
        .map_err(|e| format!("loading the master's function libraries: {e}"))?;
    server.gates.loading.store(false, Ordering::Relaxed);
    let db = stats
        .aux
        .iter()
        .find(|(k, _)| k == b"repl-stream-db")
        .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0);
    tracing::info!(
        keys = stats.keys,
        bytes = stats.bytes,
        libraries,
        "MASTER <-> REPLICA sync: loaded the master's file"
    );
    Ok(db)
}

/// Apply the stream until the link ends; ACK the offset every second (every [`POLL`]
/// in the stream's first second, see [`EARLY_ACKS`]) and on GETACK. A
/// `pre_psync` master (one that was sent SYNC) gets no periodic ACK, only the answer to a
/// GETACK, with Redis's count of the stream's bytes from -1 (`master_initial_offset`).
fn stream(
    master: &Master,
    server: &Arc<Server>,
    wire: &mut Wire<'_>,
    conn: &mut ConnState,
    pre_psync: bool,
) -> Result<(), String> {
    let limits = Limits {
        proto_max_bulk_len: server.config.num(Param::ProtoMaxBulkLen).max(1) as u64,
        ..Limits::default()
    };
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let mut last_ack = Instant::now();
    let began = last_ack;
    let mut need = 1usize;
    let mut offset = master.offset_now();
    // Where the unparsed bytes start in `wire.buf`: consumed commands are dropped from the
    // buffer only before it is filled again, not one by one (each would move the rest).
    let mut pos = 0usize;
    // Where the commands whose keys were prefetched end (`prefetch::ahead`).
    let mut prefetched = 0usize;
    // The commands of one read chain their clock reads, as a pipeline's do (`batching`);
    // the chain starts again after each wait for more bytes.
    conn.batching = true;
    // The argument vectors of one command, kept (empty) for the next.
    let (mut spare_argv, mut spare_args): (Vec<Cow<'static, [u8]>>, Vec<&'static [u8]>) =
        (Vec::new(), Vec::new());
    if !pre_psync {
        ack(wire, offset as i64)?;
    }
    let link: &Link = wire.link;
    // The link's turn (see `Link::turn`), held while the commands already read are applied
    // and released while it waits for more.
    let mut turn = None;
    loop {
        if !pre_psync {
            // One clock read per command for both periods.
            let now = Instant::now();
            let period = if now - began < EARLY_ACKS {
                POLL
            } else {
                Duration::from_secs(1)
            };
            if now - last_ack >= period {
                ack(wire, offset as i64)?;
                last_ack = now;
            }
        }
        if wire.buf.len() - pos < need {
            turn = None;
            conn.clock_us = None;
            wire.buf.drain(..pos);
            prefetched = prefetched.saturating_sub(pos);
            pos = 0;
            let n = wire.fill()?;
            wire.link.read_offset.fetch_add(n as u64, Ordering::Relaxed);
            if wire.buf.len() < need {
                continue;
            }
        }
        if turn.is_none() {
            turn = Some(link.turn()?);
        } else if link.stopped() {
            // REPLICAOF elsewhere or NO ONE: not one more command from this master.
            return Err("the link was stopped".into());
        }
        if pos >= prefetched {
            prefetched = pos + prefetch::ahead(server.keyspace.db(conn.db), &wire.buf[pos..]);
        }
        let mut argv = recycle(std::mem::take(&mut spare_argv));
        let consumed = match parse_request(&wire.buf[pos..], &limits, &mut argv) {
            Ok(Parsed::Complete { consumed }) => consumed,
            Ok(Parsed::Incomplete { min_total }) => {
                need = min_total;
                spare_argv = recycle(argv);
                continue;
            }
            Err(e) => return Err(format!("protocol error from the master: {}", e.message())),
        };
        need = 1;
        let mut args = recycle(std::mem::take(&mut spare_args));
        args.extend(argv.iter().map(|a| a.as_ref()));
        if meta::is_frame(&args) {
            // Beside the stream: not counted in the offset, not executed.
            let entries =
                meta::parse(&args).ok_or("a malformed LARDER.META frame from the master")?;
            meta::apply(server, &entries);
            drop(entries);
            (spare_args, spare_argv) = (recycle(args), recycle(argv));
            master.proxy_meta(&wire.buf[pos..pos + consumed]);
            let _ = wire
                .link
                .read_offset
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |o| {
                    Some(o.saturating_sub(consumed as u64))
                });
            pos += consumed;
            continue;
        }
        let getack = args.len() >= 2
            && args[0].eq_ignore_ascii_case(b"REPLCONF")
            && args[1].eq_ignore_ascii_case(b"GETACK");
        master.stage(&wire.buf[pos..pos + consumed]);
        if !args.is_empty() && !getack {
            out.truncate(0);
            larder_commands::execute(server, conn, &args, &mut out);
        }
        (spare_args, spare_argv) = (recycle(args), recycle(argv));
        if getack {
            // The acknowledged offset is the one before the GETACK, as Redis's.
            ack(wire, offset as i64 - i64::from(pre_psync))?;
            last_ack = Instant::now();
        }
        offset = master.applied(conn.db as u32, conn.multi.is_some());
        pos += consumed;
    }
}

/// For this long after a full resync's file (or a partial resync's reply) the replica ACKs
/// every [`POLL`] instead of every second. A redis-server master starts a diskless
/// replica's stream at an ACK that finds the replica online, which it marks once it has seen
/// its fork child finish: the ACK sent right after the file can come before that, and the
/// stream (and a WAIT's GETACK in it) then waited a second for the next one.
const EARLY_ACKS: Duration = Duration::from_secs(1);

fn ack(wire: &mut Wire<'_>, offset: i64) -> Result<(), String> {
    wire.send(&[b"REPLCONF", b"ACK", offset.to_string().as_bytes()])
}
