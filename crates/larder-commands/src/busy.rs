//! Busy scripts: `busy-reply-threshold` (alias `lua-time-limit`), the `-BUSY` gate, SCRIPT KILL
//! / FUNCTION KILL and stopping scripts at shutdown.
//!
//! A script runs on its client's worker thread and may run in parallel with scripts on other
//! workers. Each running script holds a [`Running`] (a slot in [`Busy`]). Its count hook calls
//! [`Running::tick`]: once the script has run past the threshold the server is *busy*, as
//! Redis is: every client's command without the allow-busy flag gets `-BUSY` on every worker
//! ([`gate`], called by `exec::execute`), and the script's own worker keeps serving its other
//! connections from inside the hook, through the *pump* the network layer installs on the
//! thread ([`set_pump`]): Redis's `processEventsWhileBlocked`. A command served by the pump
//! cannot start another script (it gets `-BUSY`), and the pump is never re-entered.
//!
//! SCRIPT KILL and FUNCTION KILL ([`kill`]) concern the scripts past the threshold; a script
//! under it counts as still running its course, as it would in Redis, where the killer's
//! command is not even read before the script passes the threshold.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::Param;
use crate::error::Error;
use crate::exec::ConnState;
use crate::state::Server;
use crate::table::flags;

/// What a script runs as: an EVAL script or a function (FCALL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptKind {
    Eval,
    Function,
}

/// Why [`Running::tick`] ends a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SCRIPT KILL / FUNCTION KILL.
    Killed,
    /// The server is shutting down (SHUTDOWN NOSAVE while busy, or a signal).
    Shutdown,
}

/// Redis's refusal while an EVAL script is busy (also FUNCTION KILL's, and plain SHUTDOWN's).
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// Redis's refusal while a function is busy (also SCRIPT KILL's).
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
/// SCRIPT KILL / FUNCTION KILL with no busy script.
pub const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
/// SCRIPT KILL / FUNCTION KILL after the script wrote.
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands \
     against the dataset. You can either wait the script termination or kill the server in a \
     hard way using the SHUTDOWN NOSAVE command.";

// A slot's state word: a generation (each script that takes the slot gets a new one, so a
// kill aimed at a script that has ended cannot hit the next one) above these flags.
const TAKEN: u64 = 1;
const FUNCTION: u64 = 2;
const WROTE: u64 = 4;
const KILLED: u64 = 8;
/// Past `busy-reply-threshold`.
const PAST: u64 = 16;
const GEN_SHIFT: u32 = 8;

/// One running script's state, on a cache line of its own (its thread writes it on every
/// script start and end).
#[repr(align(64))]
#[derive(Default)]
struct Slot {
    word: AtomicU64,
    client_id: AtomicU64,
    /// When the script started (Unix ms), set once it passes the threshold.
    started_ms: AtomicU64,
    /// A function's name and the command that called it ([`Running::describe`]), for
    /// FUNCTION STATS; the buffers are reused from script to script.
    described: Mutex<(String, Vec<Vec<u8>>)>,
}

/// The scripts running now, server-wide (`server.busy`).
pub struct Busy {
    slots: Box<[Slot]>,
    /// Scripts past the threshold: the gate's one load while it is 0.
    past: AtomicUsize,
    /// Set when the server stops: scripts past the threshold end at their next tick.
    stopping: AtomicBool,
}

/// What the network layer installs on a worker thread ([`set_pump`]).
pub type Pump = Box<dyn FnMut(&Server)>;

thread_local! {
    /// The slot this thread took last, tried first next time.
    static HINT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The network layer's pump for this worker thread (see [`set_pump`]).
    static PUMP: RefCell<Option<Pump>> = const { RefCell::new(None) };
}

/// Install (or, with `None`, remove) the pump of this thread: a busy script's hook calls it
/// to serve the thread's other connections (read their requests, answer them, accept new
/// connections, read the thread's mailbox) without waiting. It must not touch the
/// connection running the script, and must lose none of its events.
pub fn set_pump(pump: Option<Pump>) {
    PUMP.with(|p| *p.borrow_mut() = pump);
}

/// Run this thread's pump once, unless it is running already (a pump never re-enters).
fn pump(server: &Server) {
    PUMP.with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            if let Some(f) = p.as_mut() {
                f(server);
            }
        }
    });
}

impl Busy {
    /// Room for `threads` scripts at once (one per worker thread, plus a few other threads).
    pub fn new(threads: usize) -> Busy {
        Busy {
            slots: (0..threads + 8).map(|_| Slot::default()).collect(),
            past: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        }
    }

    /// A script starts running on this thread, for client `client_id`, now.
    pub fn start(&self, kind: ScriptKind, client_id: u64) -> Running<'_> {
        self.start_at(kind, client_id, larder_engine::now_us())
    }

    /// A script starts running on this thread, for client `client_id`; its request started
    /// at `started_us` (Unix µs: the executor's clock read, so a run reads no clock of its
    /// own unless it runs long enough to tick).
    pub fn start_at(&self, kind: ScriptKind, client_id: u64, started_us: u64) -> Running<'_> {
        let kind_bit = match kind {
            ScriptKind::Eval => 0,
            ScriptKind::Function => FUNCTION,
        };
        let n = self.slots.len();
        let mut i = HINT.with(std::cell::Cell::get) % n;
        // One script per thread runs at a time and there is a slot per thread; should more
        // threads than slots run scripts at once, the extra ones wait for a slot.
        loop {
            let slot = &self.slots[i];
            let w = slot.word.load(Ordering::Relaxed);
            if w & TAKEN == 0 {
                let taken = ((w >> GEN_SHIFT).wrapping_add(1) << GEN_SHIFT) | TAKEN | kind_bit;
                if slot
                    .word
                    .compare_exchange(w, taken, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    slot.client_id.store(client_id, Ordering::Release);
                    HINT.with(|h| h.set(i));
                    return Running {
                        busy: self,
                        slot,
                        started_us,
                        clock: None,
                    };
                }
            }
            i = (i + 1) % n;
            if i == 0 {
                std::thread::yield_now();
            }
        }
    }

    /// Whether some script runs past the threshold now.
    #[inline]
    pub fn is_busy(&self) -> bool {
        self.past.load(Ordering::Relaxed) > 0
    }

    /// The server is stopping: every script past the threshold ends at its next tick (the
    /// network layer calls this before it waits for its workers).
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// The refusal for a command that may not run now: by the kind of the first script
    /// found past the threshold; `None` once there is none.
    pub fn busy_error(&self) -> Option<Error> {
        self.slots.iter().find_map(|s| {
            let w = s.word.load(Ordering::Acquire);
            let text = if w & FUNCTION != 0 {
                BUSY_FUNCTION
            } else {
                BUSY_EVAL
            };
            (w & (TAKEN | PAST) == TAKEN | PAST).then_some(Error::Static(text))
        })
    }

    /// The function past the threshold, for FUNCTION STATS: its name, the command that
    /// called it, and how long it has run (ms). `None` while no function is busy.
    pub fn running_function(&self) -> Option<(String, Vec<Vec<u8>>, u64)> {
        self.slots.iter().find_map(|s| {
            let busy_function = TAKEN | PAST | FUNCTION;
            if s.word.load(Ordering::Acquire) & busy_function != busy_function {
                return None;
            }
            let (name, argv) = s.described.lock().clone();
            let started = s.started_ms.load(Ordering::Acquire);
            Some((name, argv, larder_engine::now_ms().saturating_sub(started)))
        })
    }

    /// Whether `client_id` is running a script now (its own commands are never refused).
    fn runs_script(&self, client_id: u64) -> bool {
        self.slots.iter().any(|s| {
            s.word.load(Ordering::Acquire) & TAKEN != 0
                && s.client_id.load(Ordering::Relaxed) == client_id
        })
    }
}

/// A script running on this thread; dropping it ends the script's busy state.
pub struct Running<'a> {
    busy: &'a Busy,
    slot: &'a Slot,
    /// When the request started (Unix µs).
    started_us: u64,
    /// From the first tick on: the monotonic clock then, and the time run before it.
    clock: Option<(Instant, Duration)>,
}

impl Running<'_> {
    /// A function's name and the command that called it (FCALL's argv), which FUNCTION STATS
    /// shows while the function is busy.
    pub fn describe(&self, name: &str, argv: &[&[u8]]) {
        let mut d = self.slot.described.lock();
        d.0.clear();
        d.0.push_str(name);
        d.1.truncate(argv.len());
        for (i, a) in argv.iter().enumerate() {
            match d.1.get_mut(i) {
                Some(v) => {
                    v.clear();
                    v.extend_from_slice(a);
                }
                None => d.1.push(a.to_vec()),
            }
        }
    }

    /// The script ran a write command: it can no longer be killed (`-UNKILLABLE`).
    pub fn wrote(&self) {
        self.slot.word.fetch_or(WROTE, Ordering::AcqRel);
    }

    /// How long the script has run: the wall clock up to its first tick (a step back counts
    /// as 0), the monotonic clock from there.
    fn elapsed(&mut self) -> Duration {
        match self.clock {
            Some((at, before)) => before + at.elapsed(),
            None => {
                let before =
                    Duration::from_micros(larder_engine::now_us().saturating_sub(self.started_us));
                self.clock = Some((Instant::now(), before));
                before
            }
        }
    }

    /// From the script's count hook. Past `busy-reply-threshold` the server is busy: every
    /// other client's command without ALLOW_BUSY gets `-BUSY`, and this thread's other
    /// connections are served meanwhile (the pump). Err when SCRIPT KILL / FUNCTION KILL or
    /// the server's shutdown ended the script.
    pub fn tick(&mut self, server: &Server) -> Result<(), Stop> {
        let w = self.slot.word.load(Ordering::Acquire);
        if w & KILLED != 0 {
            return Err(Stop::Killed);
        }
        if w & PAST == 0 {
            let elapsed_ms = self.elapsed().as_millis();
            if elapsed_ms < server.config.num(Param::BusyReplyThreshold).max(0) as u128 {
                return Ok(());
            }
            let started_ms = larder_engine::now_ms().saturating_sub(elapsed_ms as u64);
            self.slot.started_ms.store(started_ms, Ordering::Release);
            self.slot.word.fetch_or(PAST, Ordering::AcqRel);
            self.busy.past.fetch_add(1, Ordering::AcqRel);
            tracing::warn!(
                "Slow script detected: still in execution after {elapsed_ms} milliseconds. \
                 You can try killing the script using the {} command.",
                if w & FUNCTION != 0 {
                    "FUNCTION KILL"
                } else {
                    "SCRIPT KILL"
                }
            );
        }
        self.check()?;
        pump(server);
        self.check()
    }

    /// Err when the script was killed or the server is stopping.
    fn check(&self) -> Result<(), Stop> {
        if self.slot.word.load(Ordering::Acquire) & KILLED != 0 {
            Err(Stop::Killed)
        } else if self.busy.stopping.load(Ordering::Acquire) {
            Err(Stop::Shutdown)
        } else {
            Ok(())
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let w = self.slot.word.load(Ordering::Acquire);
        // Free the slot first, so nothing counts this script once it is no longer busy.
        self.slot
            .word
            .store(w & !((1 << GEN_SHIFT) - 1), Ordering::Release);
        if w & PAST != 0 {
            self.busy.past.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// SCRIPT KILL (`ScriptKind::Eval`) / FUNCTION KILL, as Redis's `scriptKill` answers them:
/// `NOTBUSY` when no script is past the threshold, `UNKILLABLE` when one of them wrote, the
/// wrong-kind `BUSY` text when none is of `kind`. Every killable script of `kind` past the
/// threshold is killed (also when another one answers `UNKILLABLE`); each ends at its next
/// tick with Redis's "killed" error.
pub fn kill(server: &Server, kind: ScriptKind) -> Result<(), Error> {
    let want = match kind {
        ScriptKind::Eval => 0,
        ScriptKind::Function => FUNCTION,
    };
    let (mut busy, mut wrote, mut killed) = (false, false, false);
    for slot in server.busy.slots.iter() {
        let mut w = slot.word.load(Ordering::Acquire);
        loop {
            if w & (TAKEN | PAST) != TAKEN | PAST {
                break;
            }
            busy = true;
            if w & WROTE != 0 {
                wrote = true;
                break;
            }
            if w & FUNCTION != want {
                break;
            }
            match slot
                .word
                .compare_exchange(w, w | KILLED, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    killed = true;
                    break;
                }
                // It wrote, or ended (and the slot may hold a new script): look again.
                Err(now) => w = now,
            }
        }
    }
    if !busy {
        Err(Error::Static(NOTBUSY))
    } else if wrote {
        Err(Error::Static(UNKILLABLE))
    } else if !killed {
        // Only scripts of the other kind are busy: Redis names the command that kills them.
        Err(Error::Static(match kind {
            ScriptKind::Eval => BUSY_FUNCTION,
            ScriptKind::Function => BUSY_EVAL,
        }))
    } else {
        Ok(())
    }
}

/// The `-BUSY` refusal `exec::execute` makes while a script is past the threshold: every
/// command without ALLOW_BUSY, except those of the client running the script. Of the
/// allow-busy commands, WATCH is refused too (it would wait for the busy script's shards,
/// which on the script's own thread never come free), and so are SHUTDOWN without NOSAVE
/// (after its syntax check, which comes first) and FUNCTION STATS while an EVAL script is
/// busy, as Redis refuses them.
#[inline]
pub fn gate(server: &Server, conn: &ConnState, spec_flags: u32, argv: &[&[u8]]) -> Option<Error> {
    if !server.busy.is_busy() {
        return None;
    }
    refuse(server, conn, spec_flags, argv)
}

#[inline(never)]
fn refuse(server: &Server, conn: &ConnState, spec_flags: u32, argv: &[&[u8]]) -> Option<Error> {
    let name = argv.first().copied().unwrap_or_default();
    let sub = argv.get(1).copied().unwrap_or_default();
    let refused_anyway = name.eq_ignore_ascii_case(b"watch")
        || (name.eq_ignore_ascii_case(b"shutdown") && shutdown_may_save(&argv[1..]))
        || (name.eq_ignore_ascii_case(b"function")
            && sub.eq_ignore_ascii_case(b"stats")
            && server.busy.busy_error() == Some(Error::Static(BUSY_EVAL)));
    let allowed = spec_flags & flags::ALLOW_BUSY != 0 && !refused_anyway;
    if allowed || conn.loader || server.busy.runs_script(conn.id) {
        return None;
    }
    server.busy.busy_error()
}

/// Redis's `rejectCommand` for a command the gate refused: a refused EXEC discards its
/// transaction (and the watched keys) and says why; any other command refused inside MULTI
/// makes EXEC fail.
pub fn reject(conn: &mut ConnState, full_name: &str, e: Error) -> Error {
    if full_name != "exec" {
        if let Some(m) = conn.multi.as_mut() {
            m.dirty = true;
        }
        return e;
    }
    conn.multi = None;
    conn.watched.clear();
    Error::Owned(format!(
        "EXECABORT Transaction discarded because of: {}",
        e.message()
    ))
}

/// Whether SHUTDOWN's arguments are a valid request that may save: neither NOSAVE nor ABORT
/// (which Redis answers while busy) nor a syntax error (which Redis answers first).
fn shutdown_may_save(args: &[&[u8]]) -> bool {
    let known = |a: &&[u8]| {
        [&b"save"[..], b"now", b"force"]
            .iter()
            .any(|k| a.eq_ignore_ascii_case(k))
    };
    args.iter().all(known)
}

#[cfg(test)]
#[path = "busy_tests.rs"]
mod tests;
