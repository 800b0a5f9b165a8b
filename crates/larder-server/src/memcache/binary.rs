//! Binary-protocol requests: each parsed [`BinaryRequest`] runs its engine operations and
//! writes memcached's response packets with [`BinaryWriter`], which applies the quiet rules
//! (quiet opcodes answer errors only, and get hits).

use larder_commands::state::bump;
use larder_memcache::{BinaryCommand, BinaryRequest, BinaryWriter, Status, StoreMode};

use larder_commands::ConnState;

use super::stats::VERSION;
use super::{perm, watch, Ctx, Flow};
use crate::items::{
    self, Access, Arith, Counted, Deadline, Delete, DeleteOutcome, Read, StoreOutcome,
};

/// Runs one request and appends its response packets to `out`. A request the connection's
/// user may not make is answered status `0x0024` with the NOPERM text ([`perm`]); a write
/// on a replica status `0x0084` (internal error) with the READONLY text naming the master.
pub(super) fn execute(
    cx: &Ctx<'_>,
    conn: &ConnState,
    req: &BinaryRequest<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let mut w = BinaryWriter::new(out);
    if let Err(e) = perm::binary(cx, conn, &req.command) {
        w.with_value(req, Status::NO_ACCESS, e.message().as_bytes());
        return Flow::Continue;
    }
    if req.command.writes() {
        if let Some(refusal) = crate::repl::guard::read_only_refusal(cx.server) {
            w.with_value(req, Status::INTERNAL_ERROR, refusal.as_bytes());
            return Flow::Continue;
        }
    }
    let c = cx.counters;
    let db = cx.db();
    match req.command {
        BinaryCommand::Get { key } => {
            bump(&c.cmd_get, 1);
            let mut size = 0;
            let found = items::read(db, key, cx.now_ms, Access::Fetch, |item| {
                size = item.value.len();
                w.get_hit(req, item.flags, item.cas, item.value);
            });
            cx.watch_get(key, found, size);
            count_get(cx, found);
            cx.detail_get(key, found.hit());
            if !found.hit() {
                w.get_miss(req);
            }
        }
        BinaryCommand::GetAndTouch { key, exptime } | BinaryCommand::Touch { key, exptime } => {
            bump(&c.cmd_touch, 1);
            let gat = matches!(req.command, BinaryCommand::GetAndTouch { .. });
            if gat {
                bump(&c.cmd_get, 1);
            }
            let access = Access::FetchAndTouch(Deadline::from_exptime(exptime, cx.now_ms));
            // The writer leaves the value out of TOUCH responses.
            let mut size = 0;
            let found = items::read(db, key, cx.now_ms, access, |item| {
                size = item.value.len();
                w.get_hit(req, item.flags, item.cas, item.value);
            });
            cx.watch_get(key, found, size);
            bump(
                if found.hit() {
                    &c.touch_hits
                } else {
                    &c.touch_misses
                },
                1,
            );
            if gat {
                count_get(cx, found);
            }
            cx.detail_get(key, found.hit());
            if !found.hit() {
                w.get_miss(req);
            }
        }
        BinaryCommand::Store {
            mode,
            key,
            flags,
            exptime,
            value,
            compare_cas,
        } => {
            bump(&c.cmd_set, 1);
            cx.detail_set(key);
            if cx.out_of_memory() {
                bump(&c.store_no_memory, 1);
                w.status(req, Status::OUT_OF_MEMORY);
                return Flow::Continue;
            }
            let store = items::Store {
                mode,
                data: value,
                flags,
                deadline: Deadline::from_exptime(exptime, cx.now_ms),
                compare_cas,
                new_cas: None,
                invalidate: false,
                binary_key: false,
                item_size_max: cx.item_size_max,
            };
            let outcome = watch::store(cx, key, mode, store.deadline, value.len(), || {
                items::store(db, key, cx.now_ms, &store)
            });
            if let StoreOutcome::Stored { .. } = outcome {
                bump(&c.total_items, 1);
            }
            if mode == StoreMode::Cas {
                bump(
                    match outcome {
                        StoreOutcome::Stored { .. } => &c.cas_hits,
                        StoreOutcome::Exists => &c.cas_badval,
                        _ => &c.cas_misses,
                    },
                    1,
                );
            }
            match outcome {
                StoreOutcome::Stored { cas } => w.success(req, cas),
                StoreOutcome::NotStored => w.status(
                    req,
                    match mode {
                        StoreMode::Add => Status::KEY_EXISTS,
                        StoreMode::Replace => Status::KEY_NOT_FOUND,
                        _ => Status::NOT_STORED,
                    },
                ),
                StoreOutcome::Exists => w.status(req, Status::KEY_EXISTS),
                StoreOutcome::NotFound => w.status(req, Status::KEY_NOT_FOUND),
            }
        }
        BinaryCommand::Delete { key, compare_cas } => {
            let del = Delete {
                compare_cas,
                ..Delete::default()
            };
            let outcome = items::delete(db, key, cx.now_ms, &del);
            cx.detail_delete(key);
            bump(
                if outcome == DeleteOutcome::NotFound {
                    &c.delete_misses
                } else {
                    &c.delete_hits
                },
                1,
            );
            match outcome {
                DeleteOutcome::Deleted => w.success(req, 0),
                DeleteOutcome::NotFound => w.status(req, Status::KEY_NOT_FOUND),
                DeleteOutcome::Exists => w.status(req, Status::KEY_EXISTS),
            }
        }
        BinaryCommand::Counter {
            op,
            key,
            delta,
            initial,
            exptime,
            compare_cas,
        } => {
            let arith = Arith {
                op,
                delta,
                compare_cas,
                create: exptime.map(|e| (initial, Deadline::from_exptime(e, cx.now_ms))),
                ttl: None,
                new_cas: None,
            };
            let outcome = items::arith(db, key, cx.now_ms, &arith);
            let hit = matches!(
                outcome,
                Counted::Value { created: false, .. } | Counted::NonNumeric
            );
            let (hits, misses) = match op {
                larder_memcache::CounterOp::Incr => (&c.incr_hits, &c.incr_misses),
                larder_memcache::CounterOp::Decr => (&c.decr_hits, &c.decr_misses),
            };
            bump(if hit { hits } else { misses }, 1);
            match outcome {
                Counted::Value { value, cas, .. } => w.counter(req, value, cas),
                Counted::NotFound => w.status(req, Status::KEY_NOT_FOUND),
                Counted::Exists => w.status(req, Status::KEY_EXISTS),
                Counted::NonNumeric => w.status(req, Status::NON_NUMERIC),
                Counted::NotStored => w.status(req, Status::NOT_STORED),
            }
        }
        BinaryCommand::Quit => {
            w.success(req, 0);
            return Flow::Close;
        }
        BinaryCommand::Flush { delay } => {
            bump(&c.cmd_flush, 1);
            cx.mc.flush.flush_all(&cx.server.keyspace, delay, cx.now_ms);
            w.success(req, 0);
        }
        BinaryCommand::Noop => w.success(req, 0),
        BinaryCommand::Version => w.version(req, VERSION),
        BinaryCommand::Stat { group } => {
            let mut emit = |name: &str, value: &[u8]| w.stat(req, name, value);
            // memcached's `process_bin_stat`: reset, settings and detail are matched as
            // prefixes of the key, the other groups whole; conns is text only.
            if group.starts_with(b"reset") {
                cx.mc.stats.reset();
            } else if group.starts_with(b"settings") {
                super::text::stats_group(cx, b"settings", &mut emit);
            } else if let Some(sub) = group.strip_prefix(b"detail") {
                if sub.starts_with(b" dump") {
                    emit("detailed", &cx.mc.detail.dump());
                } else if sub.starts_with(b" on") || sub.starts_with(b" off") {
                    cx.mc.detail.set_enabled(sub.starts_with(b" on"));
                } else {
                    w.status(req, Status::KEY_NOT_FOUND);
                    return Flow::Continue;
                }
            } else if !super::text::stats_group(cx, group, &mut emit) {
                w.status(req, Status::KEY_NOT_FOUND);
                return Flow::Continue;
            }
            w.stat_end(req);
        }
        // Answered by `auth::sasl` before commands run.
        BinaryCommand::SaslListMechs | BinaryCommand::Sasl { .. } => {
            w.status(req, Status::UNKNOWN_COMMAND);
        }
    }
    Flow::Continue
}

fn count_get(cx: &Ctx<'_>, found: Read) {
    cx.count_get(found.hit());
    if found == Read::Expired {
        bump(&cx.counters.get_expired, 1);
    }
}
