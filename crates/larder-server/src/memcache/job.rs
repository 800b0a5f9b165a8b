//! Requests that take longer than one turn: a crawler dump, and the `stats slabs` and
//! `stats items` walks. A handler starts one with [`super::Ctx::start_job`]; the session
//! then keeps the request unconsumed at the front of the input and runs the job a bounded
//! step per turn ([`Job::step`]), asking the connection to call again
//! ([`crate::conn::Processed::again`]) until it is done. Requests pipelined after it wait,
//! so its answer comes before theirs; output back pressure holds it like any answer (it is
//! not stepped while the client's output is at the high-water mark); a connection that
//! closes drops it.

use larder_memcache::TextWriter;

use super::crawler::Dump;
use super::slabs::{self, Tally};
use super::Ctx;

/// Entries a job looks at per turn.
pub const TURN_ENTRIES: usize = 4096;
/// Output a job writes per turn, at most (plus one batch's lines).
pub const TURN_BYTES: usize = 64 * 1024;

/// A request running over several turns.
pub(super) enum Job {
    /// `lru_crawler metadump|mgdump`.
    Dump(Dump),
    /// `stats slabs`.
    Slabs(Box<Tally>),
    /// `stats items`.
    Items(Box<Tally>),
}

impl Job {
    /// Runs one turn's share; returns true once the answer is complete in `out`.
    pub(super) fn step(&mut self, cx: &Ctx<'_>, out: &mut Vec<u8>, stop_at: usize) -> bool {
        let limit = stop_at.min(out.len().saturating_add(TURN_BYTES));
        match self {
            Job::Dump(d) => d.step(cx, out, TURN_ENTRIES, limit),
            Job::Slabs(t) => walk(cx, t, out, true),
            Job::Items(t) => walk(cx, t, out, false),
        }
    }
}

/// Walks on; once the walk is done, writes `stats slabs` (or `stats items`) and `END`.
fn walk(cx: &Ctx<'_>, t: &mut Tally, out: &mut Vec<u8>, slabs: bool) -> bool {
    if !t.walk(cx, TURN_ENTRIES) {
        return false;
    }
    let mut w = TextWriter::new(out);
    let mut emit = |name: &str, value: &[u8]| w.stat(name, value);
    if slabs {
        slabs::write_slabs(t, &mut emit);
    } else {
        let crawler = &cx.mc.crawler;
        slabs::write_items(t, cx, &|id| crawler.class_reclaimed(id), &mut emit);
    }
    w.end();
    true
}
