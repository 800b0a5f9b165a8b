//! After a command ran: INFO commandstats and errorstats, error replies, and the slow log.
//! Apart from `exec.rs` because EXEC and scripts account for their commands here too.

use std::sync::atomic::Ordering;

use larder_resp::ReplyBuf;

use crate::config::Param;
use crate::error::Error;
use crate::state::{bump, Server, SlowEntry};
use crate::table::{flags, Resolved};

use super::ConnState;

/// Count a command that ran (INFO commandstats) and write its error reply, if any.
#[inline]
pub(crate) fn account(
    server: &Server,
    conn: &mut ConnState,
    out: &mut ReplyBuf,
    resolved: Resolved,
    result: crate::error::Result<()>,
    elapsed_us: u64,
) {
    let thread = &server.stats.threads[conn.worker];
    let stat = &thread.per_command[resolved.stat_index];
    bump(&stat.calls, 1);
    bump(&stat.usec, elapsed_us);
    crate::latency::record(server, conn.worker, resolved.stat_index, elapsed_us);
    bump(&thread.commands, 1);
    conn.handle
        .last_command
        .store(resolved.stat_index, Ordering::Relaxed);
    match result {
        Err(e) => {
            bump(&stat.failed_calls, 1);
            reply_error(server, conn, out, &e);
        }
        Ok(()) if resolved.spec.has(flags::WRITE) => bump(&thread.writes, 1),
        Ok(()) => {}
    }
}

/// Write an error reply and count it (INFO errorstats).
pub fn reply_error(server: &Server, conn: &ConnState, out: &mut ReplyBuf, e: &Error) {
    out.error(e.message());
    bump(&server.stats.threads[conn.worker].error_replies, 1);
    let mut errors = server.stats.errors.lock();
    if let Some(n) = errors.get_mut(e.code()) {
        *n += 1;
    } else if errors.len() < 128 {
        errors.insert(e.code().to_string(), 1);
    }
}

pub(super) fn slowlog_maybe(
    server: &Server,
    conn: &ConnState,
    argv: &[&[u8]],
    elapsed_us: u64,
    now_ms: u64,
) {
    let threshold = server.config.num(Param::SlowlogLogSlowerThan);
    if threshold < 0 || elapsed_us < threshold as u64 {
        return;
    }
    let max_len = server.config.num(Param::SlowlogMaxLen).max(0) as usize;
    // Secrets never reach the slow log (the same positions MONITOR redacts).
    let redacted = crate::monitor::redacted(argv);
    // Like Redis: at most 32 arguments, each cut at 128 bytes.
    let mut args: Vec<Vec<u8>> = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        if redacted.contains(&i) {
            args.push(b"(redacted)".to_vec());
            continue;
        }
        if i == 31 && argv.len() > 32 {
            args.push(format!("... ({} more arguments)", argv.len() - 31).into_bytes());
            break;
        }
        if a.len() > 128 {
            let mut v = a[..128].to_vec();
            v.extend_from_slice(format!("... ({} more bytes)", a.len() - 128).as_bytes());
            args.push(v);
        } else {
            args.push(a.to_vec());
        }
    }
    let name = conn.handle.names.lock().name.clone();
    let mut log = server.slowlog.lock();
    let id = log.next_id;
    log.next_id += 1;
    log.entries.push_front(SlowEntry {
        id,
        time_s: now_ms / 1000,
        duration_us: elapsed_us,
        argv: args,
        addr: conn.handle.addr.clone(),
        name,
    });
    log.entries.truncate(max_len);
}
