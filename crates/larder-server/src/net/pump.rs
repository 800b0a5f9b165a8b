//! The pump: a worker's turn taken from inside a busy script's hook (Redis's
//! `processEventsWhileBlocked`), installed with `larder_commands::busy::set_pump`.
//!
//! While a script runs past `busy-reply-threshold`, its worker's other RESP connections are
//! still read and answered: their commands meet the `-BUSY` gate (or are the few allowed:
//! SCRIPT KILL, SHUTDOWN NOSAVE, AUTH...), so none of them can start a script or wait for a
//! shard the script holds. What the pump does not serve it leaves to the worker's loop, which
//! runs it as soon as the script ends: the connection running the script (its `RefCell` is
//! borrowed by the loop, so the pump cannot touch it), the memcached and HTTP doors (their
//! requests reach shards without the gate), and requests held by a pause or a blocking
//! command (Redis too serves those only after the script). Readiness taken from the poll for
//! those goes on the worker's `deferred` list, with whether the peer closed, since
//! edge-triggered polling will not report it again; letters go on its `letters` list.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use larder_commands::Server;
use mio::Events;

use super::worker::Worker;
use super::{DoorHandler, Letter, WAKER};
use crate::conn::Handler;

pub(super) struct Pump {
    worker: Rc<Worker>,
    /// Its own read buffer: the loop's is in use by the connection running the script.
    scratch: Vec<u8>,
    events: Events,
    touched: Vec<usize>,
}

impl Pump {
    pub(super) fn new(worker: Rc<Worker>) -> Pump {
        Pump {
            worker,
            scratch: Vec::new(),
            events: Events::with_capacity(256),
            touched: Vec::new(),
        }
    }

    /// One turn without waiting: ready connections, those with input left, the mailbox.
    pub(super) fn turn(&mut self, server: &Server) {
        let w = Rc::clone(&self.worker);
        {
            let Ok(mut st) = w.st.try_borrow_mut() else {
                return;
            };
            if st
                .poll
                .poll(&mut self.events, Some(Duration::ZERO))
                .is_err()
            {
                return;
            }
        }
        // The log offset the script's own replies wait for, if it committed anything: the
        // connections served here must not take it (they commit nothing: refused, or
        // commands that write nothing).
        let committed = larder_commands::persistence::take_committed();
        let now_ms = larder_engine::now_ms();
        self.touched.clear();
        // New readiness, the rest of the loop's batch (its events will not come again), and
        // connections with input left.
        let ready: Vec<(usize, bool)> = {
            let st = &mut *w.st.borrow_mut();
            let retry = std::mem::take(&mut st.retry)
                .into_iter()
                .map(|t| (t, false));
            self.events
                .iter()
                .filter(|ev| ev.token() != WAKER)
                .map(|ev| (ev.token().0, ev.is_read_closed()))
                .chain(st.batch.drain(..))
                .chain(retry)
                .collect()
        };
        for (t, read_closed) in ready {
            self.serve(server, t, read_closed, now_ms);
        }
        // Always: the loop may have taken the waker's event in the poll that started the
        // script, and will not read the mailbox before the script ends.
        self.read_letters(now_ms);
        while super::take_posted_here() {
            self.read_letters(now_ms);
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        for &t in &self.touched {
            w.settle(t);
        }
        if let Some(end) = committed {
            larder_commands::persistence::note_committed(end);
        }
    }

    /// Run connection `t` if the pump may; otherwise leave it to the loop.
    fn serve(&mut self, server: &Server, t: usize, read_closed: bool, now_ms: u64) {
        let w = &self.worker;
        let Some(shared) = w.conn(t) else {
            return;
        };
        let served = match shared.try_borrow_mut() {
            Ok(mut c)
                if matches!(c.handler, DoorHandler::Resp(_)) && c.paused_until_ms.is_none() =>
            {
                c.read_closed |= read_closed;
                c.on_ready(server, &mut self.scratch, now_ms);
                true
            }
            _ => false,
        };
        if served {
            self.touched.push(t);
        } else {
            w.st.borrow_mut().deferred.push((t, read_closed));
        }
    }

    /// The mailbox: new connections are accepted, outboxes delivered, replies held for the
    /// log released; a letter for a connection the pump does not serve waits for the loop.
    fn read_letters(&mut self, now_ms: u64) {
        let w = Rc::clone(&self.worker);
        w.link.woken.store(false, Ordering::Release);
        while let Ok(letter) = w.rx.try_recv() {
            match letter {
                Letter::Connect(stream, addr, door, tls) => {
                    w.accept(stream, addr, door, tls.as_deref(), now_ms)
                }
                Letter::Wake { token, id } => {
                    let Some(shared) = w.conn(token) else {
                        continue;
                    };
                    let Ok(mut c) = shared.try_borrow_mut() else {
                        // The script's own client: its turn ends with a flush, which takes
                        // its outbox too.
                        w.st.borrow_mut().deferred.push((token, false));
                        continue;
                    };
                    if c.handler.handle().id == id {
                        c.deliver_mail(&w.server);
                        self.touched.push(token);
                    }
                }
                Letter::Durable => w.release_held(&mut self.touched),
                letter @ (Letter::Resume | Letter::Unblock { .. }) => {
                    w.st.borrow_mut().letters.push(letter)
                }
            }
        }
    }
}
