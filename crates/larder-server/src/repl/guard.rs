//! `min-replicas-to-write` / `min-replicas-max-lag` on a master: the count of good replicas
//! (online, last acknowledgement at most max-lag seconds old, Redis's
//! `repl_good_slaves_count`) that the write gate reads
//! (`larder_commands::replication::enough_good_replicas`).
//!
//! The count is refreshed as Redis refreshes it: by the once-a-second timer, when a replica
//! goes online or leaves, and when CONFIG SET changes either parameter. Between refreshes a
//! replica that stops acknowledging still counts, for at most a second.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use larder_commands::config::{ApplyHook, Param};
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
