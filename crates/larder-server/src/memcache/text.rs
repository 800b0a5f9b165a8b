//! Text and meta requests: each parsed [`TextRequest`] runs its engine operations and writes
//! memcached's answer with [`TextWriter`].

use larder_commands::state::bump;
use larder_engine::Db;
use larder_memcache::{
    Keys, MetaArithmetic, MetaDelete, MetaGet, MetaKey, MetaSet, MetaStatus, Store, StoreMode,
    TextErrorKind, TextReply, TextRequest, TextWriter, Tokens,
};

use larder_commands::ConnState;

use super::job::Job;
use super::stats::{self, VERSION};
use super::{admin, perm, slabs, watch, Ctx, Flow};
use crate::items::{
    self, Access, Arith, Counted, Deadline, Delete, DeleteOutcome, MetaGetOpts, Read, StoreOutcome,
};

/// Runs one request and appends its answer to `out`. A classic command with `noreply`
/// answers nothing, errors included (memcached 1.6). A request the connection's user may
/// not make is answered `CLIENT_ERROR NOPERM ...` ([`perm`]); a write on a replica
/// `SERVER_ERROR READONLY ... (master: host:port)`.
pub(super) fn execute(
    cx: &Ctx<'_>,
    conn: &ConnState,
    req: &TextRequest<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let start = out.len();
    let read_only = || {
        req.writes()
            .then(|| crate::repl::guard::read_only_refusal(cx.server))
            .flatten()
    };
    let flow = match perm::text(cx, conn, req) {
        Ok(()) => match read_only() {
            None => run(cx, req, &mut TextWriter::new(out)),
            Some(refusal) => {
                TextWriter::new(out).server_error(&refusal);
                Flow::Continue
            }
        },
        Err(e) => {
            TextWriter::new(out).client_error(e.message());
            Flow::Continue
        }
    };
    if req.noreply() {
        out.truncate(start);
    }
    flow
}

fn run(cx: &Ctx<'_>, req: &TextRequest<'_>, w: &mut TextWriter<'_>) -> Flow {
    match *req {
        TextRequest::Get { keys } => get(cx, keys, None, false, w),
        TextRequest::Gets { keys } => get(cx, keys, None, true, w),
        TextRequest::Gat { exptime, keys } => get(cx, keys, Some(exptime), false, w),
        TextRequest::Gats { exptime, keys } => get(cx, keys, Some(exptime), true, w),
        TextRequest::Store(ref s) => store(cx, s, w),
        TextRequest::Delete { key, .. } => {
            cx.watch_lookup(key);
            let hit = items::delete(cx.db(), key, cx.now_ms, &Delete::default())
                == DeleteOutcome::Deleted;
            count(cx, hit, |c| (&c.delete_hits, &c.delete_misses));
            cx.detail_delete(key);
            w.reply(if hit {
                TextReply::Deleted
            } else {
                TextReply::NotFound
            });
        }
        TextRequest::Incr { key, delta, .. } => incr_decr(cx, key, delta, true, w),
        TextRequest::Decr { key, delta, .. } => incr_decr(cx, key, delta, false, w),
        TextRequest::Touch { key, exptime, .. } => {
            cx.watch_lookup(key);
            bump(&cx.counters.cmd_touch, 1);
            let deadline = Deadline::from_exptime(exptime, cx.now_ms);
            let hit = items::touch(cx.db(), key, cx.now_ms, deadline).is_some();
            count(cx, hit, |c| (&c.touch_hits, &c.touch_misses));
            w.reply(if hit {
                TextReply::Touched
            } else {
                TextReply::NotFound
            });
        }
        TextRequest::FlushAll { delay, .. } => {
            bump(&cx.counters.cmd_flush, 1);
            cx.mc.flush.flush_all(&cx.server.keyspace, delay, cx.now_ms);
            w.reply(TextReply::Ok);
        }
        TextRequest::Verbosity { level, .. } => {
            cx.mc.set_verbosity(cx.server, level);
            w.reply(TextReply::Ok);
        }
        TextRequest::Version => w.version(VERSION),
        TextRequest::Quit => return Flow::Close,
        TextRequest::Stats { args } => stats_command(cx, args, w),
        TextRequest::MetaGet(ref mg) => meta_get(cx, mg, w),
        TextRequest::MetaSet(ref ms) => meta_set(cx, ms, w),
        TextRequest::MetaDelete(ref md) => meta_delete(cx, md, w),
        TextRequest::MetaArithmetic(ref ma) => meta_arithmetic(cx, ma, w),
        TextRequest::MetaNoop => {
            bump(&cx.counters.cmd_meta, 1);
            w.meta_noop();
        }
        TextRequest::Admin { command, args } => return admin::run(cx, command, args, w),
        TextRequest::MetaDebug { key } => {
            bump(&cx.counters.cmd_meta, 1);
            let bytes = meta_key(&key);
            let mut seen = None;
            let found = items::read(cx.db(), bytes.as_ref(), cx.now_ms, Access::Peek, |item| {
                seen = Some(meta_item(cx, item));
            });
            cx.watch_get(bytes.as_ref(), found, seen.map_or(0, |m| m.size));
            // The slab class and total size, as `lru_crawler metadump` shows them.
            let footprint = items::footprint(cx.db(), bytes.as_ref(), cx.now_ms);
            match (seen, footprint) {
                (Some(m), Some(total)) => {
                    w.meta_debug(&key, &m, slabs::class_of(total).0, total);
                }
                _ => w.meta_debug_miss(),
            }
        }
    }
    Flow::Continue
}

/// What the meta return flags show of an item.
fn meta_item(cx: &Ctx<'_>, item: &items::Item<'_>) -> larder_memcache::MetaItem {
    let mut m = item.meta(cx.now_ms);
    if cx.lfu {
        m.last_access_s = 0;
    }
    m
}

/// Bumps the hit or the miss counter that `pick` selects.
fn count(
    cx: &Ctx<'_>,
    hit: bool,
    pick: impl FnOnce(
        &stats::Counters,
    ) -> (&std::sync::atomic::AtomicU64, &std::sync::atomic::AtomicU64),
) {
    let (hits, misses) = pick(cx.counters);
    bump(if hit { hits } else { misses }, 1);
}

/// get, gets, gat, gats: a `VALUE` block per hit, in request order, then `END`.
fn get(cx: &Ctx<'_>, keys: Keys<'_>, exptime: Option<i64>, with_cas: bool, w: &mut TextWriter<'_>) {
    let access = match exptime {
        Some(e) => Access::FetchAndTouch(Deadline::from_exptime(e, cx.now_ms)),
        None => Access::Fetch,
    };
    let db = cx.db();
    let mut requested = 0;
    let mut rest = keys;
    for key in keys {
        if requested % Db::PREFETCH_BATCH as u64 == 0 {
            prefetch_ahead(db, rest);
        }
        rest.next();
        requested += 1;
        let mut size = 0;
        let found = items::read(db, key, cx.now_ms, access, |item| {
            size = item.value.len();
            w.value(key, item.flags, item.value, with_cas.then_some(item.cas));
        });
        cx.watch_get(key, found, size);
        if exptime.is_some() {
            count(cx, found.hit(), |c| (&c.touch_hits, &c.touch_misses));
        }
        cx.count_get(found.hit());
        cx.detail_get(key, found.hit());
        if found == Read::Expired {
            bump(&cx.counters.get_expired, 1);
        }
    }
    bump(&cx.counters.cmd_get, requested);
    if exptime.is_some() {
        bump(&cx.counters.cmd_touch, requested);
    }
    w.end();
}

/// Warms the caches for the next batch of a multi-get's keys (`Db::prefetch`), so that their
/// cache misses overlap instead of queueing one lookup after another.
fn prefetch_ahead(db: &Db, keys: Keys<'_>) {
    let mut ahead = [&[][..]; Db::PREFETCH_BATCH];
    let mut n = 0;
    for (slot, key) in ahead.iter_mut().zip(keys) {
        *slot = key;
        n += 1;
    }
    if n > 1 {
        db.prefetch(&ahead[..n]);
    }
}

/// set, add, replace, append, prepend, cas.
fn store(cx: &Ctx<'_>, s: &Store<'_>, w: &mut TextWriter<'_>) {
    bump(&cx.counters.cmd_set, 1);
    cx.detail_set(s.key);
    if cx.out_of_memory() {
        bump(&cx.counters.store_no_memory, 1);
        w.error_kind(TextErrorKind::OutOfMemory);
        return;
    }
    let req = items::Store {
        mode: s.mode,
        data: s.data,
        flags: s.flags,
        deadline: Deadline::from_exptime(s.exptime, cx.now_ms),
        compare_cas: s.compare_cas,
        new_cas: None,
        invalidate: false,
        binary_key: false,
        item_size_max: cx.item_size_max,
    };
    let outcome = watch::store(cx, s.key, s.mode, req.deadline, s.data.len(), || {
        items::store(cx.db(), s.key, cx.now_ms, &req)
    });
    count_store(cx, s.mode, outcome);
    w.reply(match outcome {
        StoreOutcome::Stored { .. } => TextReply::Stored,
        StoreOutcome::NotStored => TextReply::NotStored,
        StoreOutcome::Exists => TextReply::Exists,
        StoreOutcome::NotFound => TextReply::NotFound,
    });
}

/// The counters of a store: items stored, and memcached's cas hit/miss/badval.
fn count_store(cx: &Ctx<'_>, mode: StoreMode, outcome: StoreOutcome) {
    let c = cx.counters;
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
}

fn incr_decr(cx: &Ctx<'_>, key: &[u8], delta: u64, incr: bool, w: &mut TextWriter<'_>) {
    cx.watch_lookup(key);
    let req = Arith {
        op: if incr {
            larder_memcache::CounterOp::Incr
        } else {
            larder_memcache::CounterOp::Decr
        },
        delta,
        compare_cas: None,
        create: None,
        ttl: None,
        new_cas: None,
    };
    let outcome = items::arith(cx.db(), key, cx.now_ms, &req);
    let hit = matches!(outcome, Counted::Value { .. } | Counted::NonNumeric);
    if incr {
        count(cx, hit, |c| (&c.incr_hits, &c.incr_misses));
    } else {
        count(cx, hit, |c| (&c.decr_hits, &c.decr_misses));
    }
    match outcome {
        Counted::Value { value, .. } => w.number(value),
        Counted::NonNumeric => w.error_kind(TextErrorKind::NonNumericValue),
        // No CAS and no creation were asked for, so only a miss is left.
        Counted::NotFound | Counted::Exists | Counted::NotStored => {
            w.reply(TextReply::NotFound);
        }
    }
}

/// `stats [group]`.
fn stats_command(cx: &Ctx<'_>, mut args: Tokens<'_>, w: &mut TextWriter<'_>) {
    let mut emit = |name: &str, value: &[u8]| w.stat(name, value);
    match args.next() {
        None => {
            stats_group(cx, b"", &mut emit);
        }
        // Walks of database 0 over several turns (`job`), which write the answer.
        Some(b"items") => return cx.start_job(Job::Items(Box::default())),
        Some(b"slabs") => return cx.start_job(Job::Slabs(Box::default())),
        Some(group @ (b"settings" | b"sizes")) => {
            stats_group(cx, group, &mut emit);
        }
        Some(b"conns") => stats::conns(cx.mc, cx.conn_id, cx.now_ms, &mut emit),
        Some(b"reset") => {
            cx.mc.stats.reset();
            w.reply(TextReply::Reset);
            return;
        }
        Some(b"detail") => {
            match args.next() {
                Some(word @ (b"on" | b"off")) => {
                    cx.mc.detail.set_enabled(word == b"on");
                    w.reply(TextReply::Ok);
                }
                Some(b"dump") => w.raw(&cx.mc.detail.dump()),
                _ => w.client_error("usage: stats detail on|off|dump"),
            }
            return;
        }
        Some(_) => {
            w.reply(TextReply::Error);
            return;
        }
    }
    w.end();
}

/// The stats groups both protocols print alike: the general stats (`group` empty),
/// `settings`, `items`, `slabs` and `sizes`. False for any other group.
pub(super) fn stats_group(cx: &Ctx<'_>, group: &[u8], emit: &mut dyn FnMut(&str, &[u8])) -> bool {
    match group {
        b"" => stats::general(cx.server, cx.mc, cx.now_ms, emit),
        b"settings" => stats::settings(cx.server, cx.mc, emit),
        // Walked whole here, one shard lock at a time (the text protocol's `stats items` and
        // `stats slabs` walk over several turns instead).
        b"items" | b"slabs" => {
            let mut t = slabs::Tally::default();
            t.walk(cx, usize::MAX);
            if group == b"slabs" {
                slabs::write_slabs(&t, emit);
            } else {
                let crawler = &cx.mc.crawler;
                slabs::write_items(&t, cx, &|id| crawler.class_reclaimed(id), emit);
            }
        }
        b"sizes" => slabs::write_sizes(emit),
        _ => return false,
    }
    true
}

/// A meta key's bytes: decoded when sent in base64.
// Kept on the stack for one request: boxing the decoded key would allocate.
#[allow(clippy::large_enum_variant)]
pub(super) enum KeyBytes<'a> {
    Raw(&'a [u8]),
    Decoded(larder_memcache::KeyBuf),
}

impl AsRef<[u8]> for KeyBytes<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            KeyBytes::Raw(b) => b,
            KeyBytes::Decoded(k) => k.as_bytes(),
        }
    }
}

pub(super) fn meta_key<'a>(key: &MetaKey<'a>) -> KeyBytes<'a> {
    match key.decoded() {
        Some(k) => KeyBytes::Decoded(k),
        None => KeyBytes::Raw(key.raw()),
    }
}

fn meta_get(cx: &Ctx<'_>, mg: &MetaGet<'_>, w: &mut TextWriter<'_>) {
    bump(&cx.counters.cmd_meta, 1);
    bump(&cx.counters.cmd_get, 1);
    let f = &mg.flags;
    let deadline = |e: i64| Deadline::from_exptime(e, cx.now_ms);
    let opts = MetaGetOpts {
        ttl: f.ttl.map(deadline),
        vivify: f.vivify_ttl.map(deadline),
        recache: f.recache_ttl.map(deadline),
        no_bump: f.no_bump,
    };
    let key = meta_key(&mg.key);
    let mut size = 0;
    let found = items::meta_get(cx.db(), key.as_ref(), cx.now_ms, opts, |item, recache| {
        size = item.value.len();
        w.meta_get_hit(mg, &meta_item(cx, item), item.value, recache);
    });
    cx.watch_get(key.as_ref(), found, size);
    cx.count_get(found.hit());
    if found == Read::Expired {
        bump(&cx.counters.get_expired, 1);
    }
    if f.ttl.is_some() {
        bump(&cx.counters.cmd_touch, 1);
        count(cx, found.hit(), |c| (&c.touch_hits, &c.touch_misses));
    }
    if !found.hit() {
        w.meta_get_miss(mg);
    }
}

fn meta_set(cx: &Ctx<'_>, ms: &MetaSet<'_>, w: &mut TextWriter<'_>) {
    bump(&cx.counters.cmd_meta, 1);
    bump(&cx.counters.cmd_set, 1);
    if cx.out_of_memory() {
        bump(&cx.counters.store_no_memory, 1);
        w.error_kind(TextErrorKind::OutOfMemory);
        return;
    }
    let f = &ms.flags;
    let mode = ms.store_mode();
    let req = items::Store {
        mode,
        data: ms.data,
        flags: f.client_flags.unwrap_or(0),
        deadline: Deadline::from_exptime(f.ttl.unwrap_or(0), cx.now_ms),
        compare_cas: f.compare_cas,
        new_cas: f.new_cas,
        invalidate: f.invalidate,
        binary_key: f.base64_key,
        item_size_max: cx.item_size_max,
    };
    let key = meta_key(&ms.key);
    let outcome = watch::store(cx, key.as_ref(), mode, req.deadline, ms.data.len(), || {
        items::store(cx.db(), key.as_ref(), cx.now_ms, &req)
    });
    count_store(cx, mode, outcome);
    let (status, cas) = match outcome {
        StoreOutcome::Stored { cas } => (MetaStatus::Success, cas),
        StoreOutcome::NotStored => (MetaStatus::NotStored, 0),
        StoreOutcome::Exists => (MetaStatus::Exists, 0),
        StoreOutcome::NotFound => (MetaStatus::NotFound, 0),
    };
    w.meta_set(ms, status, cas);
}

fn meta_delete(cx: &Ctx<'_>, md: &MetaDelete<'_>, w: &mut TextWriter<'_>) {
    bump(&cx.counters.cmd_meta, 1);
    let f = &md.flags;
    let req = Delete {
        compare_cas: f.compare_cas,
        invalidate: f.invalidate,
        // memcached applies T only when invalidating.
        ttl: f
            .ttl
            .filter(|_| f.invalidate)
            .map(|e| Deadline::from_exptime(e, cx.now_ms)),
        remove_value: f.remove_value,
        new_cas: f.new_cas,
    };
    let key = meta_key(&md.key);
    let outcome = items::delete(cx.db(), key.as_ref(), cx.now_ms, &req);
    count(cx, outcome != DeleteOutcome::NotFound, |c| {
        (&c.delete_hits, &c.delete_misses)
    });
    w.meta_delete(
        md,
        match outcome {
            DeleteOutcome::Deleted => MetaStatus::Success,
            DeleteOutcome::NotFound => MetaStatus::NotFound,
            DeleteOutcome::Exists => MetaStatus::Exists,
        },
    );
}

fn meta_arithmetic(cx: &Ctx<'_>, ma: &MetaArithmetic<'_>, w: &mut TextWriter<'_>) {
    bump(&cx.counters.cmd_meta, 1);
    let f = &ma.flags;
    let deadline = |e: i64| Deadline::from_exptime(e, cx.now_ms);
    let req = Arith {
        op: ma.op,
        delta: ma.delta,
        compare_cas: f.compare_cas,
        create: f.vivify_ttl.map(|e| (ma.initial, deadline(e))),
        ttl: f.ttl.map(deadline),
        new_cas: f.new_cas,
    };
    let key = meta_key(&ma.key);
    let outcome = items::arith(cx.db(), key.as_ref(), cx.now_ms, &req);
    let hit = matches!(outcome, Counted::Value { created: false, .. });
    match ma.op {
        larder_memcache::CounterOp::Incr => count(cx, hit, |c| (&c.incr_hits, &c.incr_misses)),
        larder_memcache::CounterOp::Decr => count(cx, hit, |c| (&c.decr_hits, &c.decr_misses)),
    }
    match outcome {
        Counted::Value {
            value, cas, ttl_s, ..
        } => {
            let item = larder_memcache::MetaItem {
                cas,
                ttl_s,
                ..Default::default()
            };
            w.meta_arithmetic(ma, value, &item);
        }
        Counted::NotFound => w.meta_arithmetic_failed(ma, MetaStatus::NotFound),
        Counted::Exists => w.meta_arithmetic_failed(ma, MetaStatus::Exists),
        Counted::NotStored => w.meta_arithmetic_failed(ma, MetaStatus::NotStored),
        Counted::NonNumeric => w.error_kind(TextErrorKind::NonNumericValue),
    }
}
