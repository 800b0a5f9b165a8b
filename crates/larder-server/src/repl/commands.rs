//! What the replication commands ask of the runtime: [`Replication`] for [`Master`]
//! (INFO's status, REPLCONF, PSYNC/SYNC, WAIT's acknowledgements, REPLICAOF, the turn's
//! stream posts).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_commands::config::Param;
use larder_commands::replication::{LinkStatus, ReplicaStatus, Replication, Status, SyncRequest};
use larder_commands::state::ClientHandle;

use super::backlog::Backlog;
use super::stream::encode_command;
use super::{disconnect_replicas, guard, ip_of, replica, transfer, Master, Phase, Proxy, State};

impl Replication for Master {
    fn flush_stream(&self) {
        if self.dirty.take() {
            self.state.lock().flush_unposted();
        }
    }

    fn status(&self) -> Status {
        let now = larder_engine::now_ms();
        let st = self.state.lock();
        Status {
            replid: st.replid.clone(),
            replid2: st.replid2.clone(),
            offset: st.offset,
            second_offset: st.second_offset,
            backlog_active: st.backlog.is_some(),
            backlog_size: st.backlog.as_ref().map_or_else(
                || {
                    self.server()
                        .map_or(1 << 20, |s| s.config.num(Param::ReplBacklogSize) as u64)
                },
                |b| b.size() as u64,
            ),
            backlog_first_byte_offset: st.backlog.as_ref().map_or(0, Backlog::first_byte_offset),
            backlog_histlen: st.backlog.as_ref().map_or(0, Backlog::histlen),
            replicas: st
                .replicas
                .iter()
                .map(|r| ReplicaStatus {
                    ip: r
                        .ip
                        .clone()
                        .unwrap_or_else(|| ip_of(&r.handle.addr).to_string()),
                    port: r.port,
                    state: match r.phase {
                        Phase::Transfer => "send_bulk",
                        Phase::AwaitAck | Phase::Online => "online",
                    },
                    ack_offset: r.ack_offset,
                    lag_s: now.saturating_sub(r.ack_ms) / 1000,
                })
                .collect(),
            replica_output_bytes: st
                .replicas
                .iter()
                .map(|r| (r.handle.output_bytes() + r.pending.len()) as u64)
                .sum(),
            sync_full: self.sync_full.load(Ordering::Relaxed),
            sync_partial_ok: self.sync_partial_ok.load(Ordering::Relaxed),
            sync_partial_err: self.sync_partial_err.load(Ordering::Relaxed),
        }
    }

    fn replconf(
        &self,
        client: &Arc<ClientHandle>,
        option: &[u8],
        value: &[u8],
    ) -> Result<(), String> {
        let mut hs = self.handshakes.lock();
        let h = hs.entry(client.id).or_default();
        match option.to_ascii_lowercase().as_slice() {
            b"listening-port" => {
                h.port = larder_commands::args::parse_u64(value)
                    .and_then(|p| u16::try_from(p).ok())
                    .ok_or("ERR value is not an integer or out of range")?;
            }
            b"capa" => {
                h.eof |= value.eq_ignore_ascii_case(b"eof");
                h.psync2 |= value.eq_ignore_ascii_case(b"psync2");
                // The packed frames (`meta.rs`); a replica that knows only the first form
                // (`larder-meta`) is sent none, as a redis-server replica.
                h.meta |= value.eq_ignore_ascii_case(b"larder-meta2");
            }
            b"ip-address" => {
                // Redis's NET_HOST_STR_LEN bound.
                if value.len() >= 256 {
                    return Err(format!(
                        "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        value.len()
                    ));
                }
                h.ip = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"rdb-only" | b"rdb-filter-only" => {}
            _ => {
                return Err(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(option)
                ))
            }
        }
        Ok(())
    }

    fn ack(&self, id: u64, offset: u64) {
        let mut st = self.state.lock();
        let Some(r) = st.replicas.iter_mut().find(|r| r.handle.id == id) else {
            return;
        };
        let before = r.ack_offset;
        r.ack_offset = r.ack_offset.max(offset);
        r.ack_ms = larder_engine::now_ms();
        let after = r.ack_offset;
        if r.phase == Phase::AwaitAck {
            self.put_online(&mut st, id);
        }
        // Wake a WAIT only when this acknowledgement reaches its offset, so that the GETACK
        // its retry sends does not wake it again and again.
        for (h, target) in &st.waiters {
            if before < *target && after >= *target {
                h.mail.unblock(h.id);
            }
        }
    }

    fn sync(&self, client: &Arc<ClientHandle>, req: SyncRequest<'_>) -> Result<(), String> {
        let Some(server) = self.server() else {
            return Err("ERR the server is shutting down".into());
        };
        let Some(me) = self.me.upgrade() else {
            return Err("ERR the server is shutting down".into());
        };
        if self.link.lock().as_ref().is_some_and(|l| !l.connected()) {
            return Err("NOMASTERLINK Can't SYNC while not connected with my master".into());
        }
        let (mut eof, meta) = self
            .handshakes
            .lock()
            .get(&client.id)
            .map_or((false, false), |h| (h.eof, h.meta));
        match req {
            SyncRequest::Psync { replid, offset } => {
                if self.partial(client, replid, offset) {
                    self.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(replica = %client.addr, offset, "partial resynchronization accepted");
                    return Ok(());
                }
                if replid != b"?" {
                    self.sync_partial_err.fetch_add(1, Ordering::Relaxed);
                }
            }
            SyncRequest::Sync => eof = false,
        }
        // `repl-diskless-sync no`: the file is built on disk first, as Redis's disk-backed
        // transfer, whatever the replica can take.
        eof &= server.config.num(Param::ReplDisklessSync) != 0;
        self.sync_full.fetch_add(1, Ordering::Relaxed);
        self.ensure_backlog(&server, &mut self.state.lock());
        transfer::start(
            me,
            server,
            client.clone(),
            transfer::Mode {
                eof,
                reply: matches!(req, SyncRequest::Psync { .. }),
                meta,
            },
        )
        .map_err(|e| format!("ERR {e}"))
    }

    fn is_replica(&self, id: u64) -> bool {
        self.state.lock().replicas.iter().any(|r| r.handle.id == id)
    }

    fn offset(&self) -> u64 {
        self.state.lock().offset
    }

    fn acked(&self, offset: u64) -> usize {
        acked(&self.state.lock(), offset)
    }

    fn wait_acks(&self, client: &Arc<ClientHandle>, offset: u64, want: usize) -> Option<usize> {
        let mut st = self.state.lock();
        st.waiters.retain(|(h, _)| h.id != client.id);
        let acked = acked(&st, offset);
        if acked >= want {
            return Some(acked);
        }
        st.waiters.push((Arc::clone(client), offset));
        // Every attached replica is asked, as Redis feeds its GETACK: one still loading its
        // file, or waiting for its first ACK to come online, gets it behind the stream it
        // has not yet been sent, and answers once it has applied that.
        if st.proxy.is_none() && !st.replicas.is_empty() {
            let mut getack = Vec::new();
            encode_command(&mut getack, &[&b"REPLCONF"[..], b"GETACK", b"*"]);
            st.feed(&getack);
            self.fed(&mut st);
        }
        None
    }

    fn waiting(&self) -> usize {
        self.state.lock().waiters.len()
    }

    fn stop_waiting(&self, id: u64) -> Option<u64> {
        let mut st = self.state.lock();
        let i = st.waiters.iter().position(|(h, _)| h.id == id)?;
        Some(st.waiters.remove(i).1)
    }

    fn master(&self) -> Option<(String, u16)> {
        self.link
            .lock()
            .as_ref()
            .map(|l| (l.host().to_string(), l.port()))
    }

    fn replicaof(&self, target: Option<(&str, u16)>) -> Result<(), String> {
        let server = self.server().ok_or("ERR the server is shutting down")?;
        let me = self.me.upgrade().ok_or("ERR the server is shutting down")?;
        let mut link = self.link.lock();
        if let Some(old) = link.take() {
            old.stop();
            let mut stopped = self.stopped_links.lock();
            stopped.retain(|l| !l.ended());
            stopped.push(old);
        }
        match target {
            Some((host, port)) => {
                server.gates.master_link_down.store(true, Ordering::Relaxed);
                server.gates.replica.store(true, Ordering::Relaxed);
                server.keyspace.set_follows_master(true);
                {
                    let mut st = self.state.lock();
                    st.proxy.get_or_insert_with(Proxy::default);
                    // Its replicas resync with it once it knows its master's history.
                    disconnect_replicas(&mut st);
                }
                tracing::info!(host, port, "connecting to a master (REPLICAOF)");
                let stopped = self.stopped_links.lock().clone();
                *link = Some(
                    replica::start(me, server, host, port, stopped)
                        .map_err(|e| format!("ERR {e}"))?,
                );
            }
            None => {
                self.promote();
                server.keyspace.set_follows_master(false);
                server.gates.replica.store(false, Ordering::Relaxed);
                server
                    .gates
                    .master_link_down
                    .store(false, Ordering::Relaxed);
                tracing::info!("MASTER MODE enabled (REPLICAOF NO ONE)");
            }
        }
        Ok(())
    }

    fn link(&self) -> Option<LinkStatus> {
        let link = self.link.lock().clone()?;
        Some(link.status(self.state.lock().offset))
    }

    fn is_master_link(&self, id: u64) -> bool {
        self.link
            .lock()
            .as_ref()
            .is_some_and(|l| l.client_id() == id)
    }

    fn client_closed(&self, id: u64) {
        self.handshakes.lock().remove(&id);
        let mut st = self.state.lock();
        st.waiters.retain(|(h, _)| h.id != id);
        let before = st.replicas.len();
        st.replicas.retain(|r| r.handle.id != id);
        if before != st.replicas.len() {
            if st.replicas.is_empty() {
                st.alone_since_ms = larder_engine::now_ms();
            }
            if let Some(server) = self.server() {
                guard::refresh(&server, &st.replicas);
            }
        }
    }
}

/// How many online replicas acknowledged `offset` or beyond.
fn acked(st: &State, offset: u64) -> usize {
    st.replicas
        .iter()
        .filter(|r| r.phase == Phase::Online && r.ack_offset >= offset)
        .count()
}
