//! The memcached door's protocol half of a connection: the per-connection registration and
//! counters around a [`Session`]. The I/O rules are [`crate::conn::Conn`]'s.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_commands::state::{bump, ClientHandle};
use larder_commands::{ConnState, Server};
use larder_memcache::{Protocol, HEADER_LEN};

use super::session::Session;
use super::{limits, Ctx, McShared};
use crate::conn::{Close, Handler, Output, Processed, READS_PER_TURN, READ_CHUNK};

/// One memcached client connection's protocol state.
pub struct McHandler {
    /// What CLIENT LIST shows and CLIENT KILL marks.
    handle: Arc<ClientHandle>,
    worker: usize,
    mc: Arc<McShared>,
    session: Session,
    /// The ACL user the connection runs as, made at its first request (see
    /// [`crate::acl_door`]).
    conn: Option<ConnState>,
}

impl McHandler {
    /// A new connection served by worker `worker`; listed in `stats conns` until dropped.
    pub fn new(handle: Arc<ClientHandle>, worker: usize, mc: Arc<McShared>) -> McHandler {
        mc.conns.lock().insert(handle.id, Arc::clone(&handle));
        mc.total_connections.fetch_add(1, Ordering::Relaxed);
        mc.watch.conn_new(&handle);
        McHandler {
            handle,
            worker,
            mc,
            session: Session::default(),
            conn: None,
        }
    }
}

// FIXME: storage commands' data blocks could be read into a buffer of their own too
// (`Handler::big_arg`), as RESP's large arguments are.
impl Handler for McHandler {
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Output,
        stop_at: usize,
    ) -> Processed {
        let cx = Ctx::new(
            server,
            &self.mc,
            self.worker,
            self.handle.id,
            &self.handle.addr,
        );
        let first = self.session.protocol.is_none();
        let conn = self
            .conn
            .get_or_insert_with(|| door_conn(server, &self.handle, self.worker));
        let (used, close) = self.session.run(&cx, conn, buf, &mut out.bytes, stop_at);
        if first {
            if let Some(p) = self.session.protocol {
                self.handle.names.lock().lib_name = match p {
                    Protocol::Text => "memcached-text".into(),
                    Protocol::Binary => "memcached-binary".into(),
                };
            }
        }
        Processed {
            used,
            close: close.then_some(Close::AfterReply),
            paused_until_ms: self.session.paused_until_ms,
            blocked: false,
            again: self.session.again,
        }
    }

    fn min_total(&self) -> usize {
        self.session.min_total
    }

    fn handle(&self) -> &ClientHandle {
        &self.handle
    }

    /// The most a partial request can hold: a get line or a storage line with its value,
    /// plus the reads of one turn. Unreachable through the codec's own limits; a guard, not
    /// a protocol rule.
    fn input_limit(&self, server: &Server) -> usize {
        let limits = limits(server);
        limits
            .get_line_len_max
            .max(limits.item_size_max + limits.line_len_max + 2)
            .max(limits.binary_body_max + HEADER_LEN)
            + READ_CHUNK * (READS_PER_TURN + 1)
    }

    fn count_io(&self, read: usize, written: usize) {
        let stats = self.mc.stats.thread(self.worker);
        if read > 0 {
            bump(&stats.bytes_read, read as u64);
        }
        if written > 0 {
            bump(&stats.bytes_written, written as u64);
        }
    }

    fn yielded(&self) {
        bump(&self.mc.stats.thread(self.worker).conn_yields, 1);
    }

    fn durability_error(&self, reason: &str) -> Vec<u8> {
        format!("SERVER_ERROR writing to the append-only log failed: {reason}\r\n").into_bytes()
    }
}

/// The command state a memcached connection keeps for its ACL user: the default user.
pub(super) fn door_conn(server: &Server, handle: &Arc<ClientHandle>, worker: usize) -> ConnState {
    ConnState::new(server, Arc::clone(handle), worker)
}

impl Drop for McHandler {
    fn drop(&mut self) {
        self.mc.conns.lock().remove(&self.handle.id);
        self.mc.watch.conn_close(&self.handle);
    }
}
