//! The write guards outside the command executor's own checks.
//!
//! - **On a replica**, the memcached and HTTP doors refuse writes with
//!   [`read_only_refusal`]'s text, which names the master (RESP clients get Redis's
//!   `-READONLY` from the executor).
//! - **On a master**, `min-replicas-to-write` / `min-replicas-max-lag`: the count of good
//!   replicas (online, last acknowledgement at most max-lag seconds old, Redis's
//!   `repl_good_slaves_count`) that the write gate reads
//!   (`larder_commands::replication::enough_good_replicas`).
//!
//! The count is refreshed as Redis refreshes it: by the once-a-second timer, when a replica
//! goes online or leaves, and when CONFIG SET changes either parameter. Between refreshes a
//! replica that stops acknowledging still counts, for at most a second.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use larder_commands::config::{ApplyHook, Param};
use larder_commands::replication::master_of;
use larder_commands::Server;

use super::{Master, Phase, Replica};

/// How many of `replicas` are good at `now_ms` under a max lag of `max_lag_s` seconds.
/// A replica's lag is counted in whole seconds, as Redis's `unixtime - repl_ack_time`.
pub(super) fn good(replicas: &[Replica], max_lag_s: i64, now_ms: u64) -> u64 {
    let now_s = now_ms / 1000;
    replicas
        .iter()
        .filter(|r| r.phase == Phase::Online)
        .filter(|r| i128::from(now_s.saturating_sub(r.ack_ms / 1000)) <= i128::from(max_lag_s))
        .count() as u64
}

/// Store the count for the write gate and INFO.
pub(super) fn refresh(server: &Server, replicas: &[Replica]) {
    let max_lag_s = server.config.num(Param::MinReplicasMaxLag);
    let n = good(replicas, max_lag_s, larder_engine::now_ms());
    server.gates.good_replicas.store(n, Ordering::Relaxed);
}

/// CONFIG SET of either parameter counts again with the new max lag before the new values
/// apply (Redis's `updateGoodSlaves`).
pub(super) fn install_hook(server: &Server, master: &Arc<Master>) {
    let weak: Weak<Master> = Arc::downgrade(master);
    server.config.add_hook(ApplyHook {
        params: &[Param::MinReplicasToWrite, Param::MinReplicasMaxLag],
        apply: Box::new(move |value| {
            let Some(m) = weak.upgrade() else {
                return Ok(());
            };
            let Some(server) = m.server() else {
                return Ok(());
            };
            let max_lag_s = value(Param::MinReplicasMaxLag).parse::<i64>().unwrap_or(0);
            let st = m.state.lock();
            let n = good(&st.replicas, max_lag_s, larder_engine::now_ms());
            server.gates.good_replicas.store(n, Ordering::Relaxed);
            Ok(())
        }),
    });
}

/// What the memcached and HTTP doors answer a write with while this server replicates a
/// master with `replica-read-only yes`: Redis's READONLY text with the master's address, so
/// that a client knows where writes go. `None` on a master or a writable replica.
pub(crate) fn read_only_refusal(server: &Server) -> Option<String> {
    if server.config.num(Param::ReplicaReadOnly) == 0 {
        return None;
    }
    let (host, port) = master_of(server)?;
    Some(format!(
        "READONLY You can't write against a read only replica (master: {host}:{port})"
    ))
}

/// A replication runtime that only says "this server replicates `host:port`", for the
/// doors' unit tests (the replica role is tested against real processes).
#[cfg(test)]
pub(crate) struct ReplicaOf(pub &'static str, pub u16);

#[cfg(test)]
impl larder_commands::replication::Replication for ReplicaOf {
    fn status(&self) -> larder_commands::replication::Status {
        larder_commands::replication::Status::default()
    }
    fn replconf(
        &self,
        _: &Arc<larder_commands::state::ClientHandle>,
        _: &[u8],
        _: &[u8],
    ) -> Result<(), String> {
        Ok(())
    }
    fn ack(&self, _: u64, _: u64) {}
    fn sync(
        &self,
        _: &Arc<larder_commands::state::ClientHandle>,
        _: larder_commands::replication::SyncRequest<'_>,
    ) -> Result<(), String> {
        Err("ERR a replica of a replica is not part of this test".into())
    }
    fn is_replica(&self, _: u64) -> bool {
        false
    }
    fn offset(&self) -> u64 {
        0
    }
    fn acked(&self, _: u64) -> usize {
        0
    }
    fn wait_acks(
        &self,
        _: &Arc<larder_commands::state::ClientHandle>,
        _: u64,
        _: usize,
    ) -> Option<usize> {
        None
    }
    fn waiting(&self) -> usize {
        0
    }
    fn stop_waiting(&self, _: u64) -> Option<u64> {
        None
    }
    fn client_closed(&self, _: u64) {}
    fn master(&self) -> Option<(String, u16)> {
        Some((self.0.to_string(), self.1))
    }
}
