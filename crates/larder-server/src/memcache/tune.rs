//! `cache_memlimit`, `slabs` and `lru`: the memory limit and memcached's allocator tuning,
//! answered as memcached 1.6.18's `process_memlimit_command`, `process_slabs_command` and
//! `process_lru_command`.
//!
//! `cache_memlimit` sets `maxmemory` (as CONFIG SET does) and evicts down to it at once by
//! `maxmemory-policy`. larder has no slab allocator or segmented LRU: `slabs automove` and the
//! `lru` settings are recorded and shown by `stats settings` (they change nothing else), and
//! `slabs reassign` is refused with a `CLIENT_ERROR` that says why.

use larder_commands::config::Param;
use larder_memcache::{parse_i32, parse_u32, TextReply, TextWriter, Tokens};
use parking_lot::Mutex;

use super::{Ctx, Flow};

/// The settings the tuning commands record, with memcached 1.6.18's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tune {
    pub slab_automove: u32,
    pub slab_automove_ratio: f64,
    pub lru_segmented: bool,
    pub hot_lru_pct: u32,
    pub warm_lru_pct: u32,
    pub hot_max_factor: f64,
    pub warm_max_factor: f64,
    pub temp_lru: bool,
    pub temporary_ttl: i32,
}

impl Default for Tune {
    fn default() -> Self {
        Tune {
            slab_automove: 1,
            slab_automove_ratio: 0.8,
            lru_segmented: true,
            hot_lru_pct: 20,
            warm_lru_pct: 40,
            hot_max_factor: 0.2,
            warm_max_factor: 2.0,
            temp_lru: false,
            temporary_ttl: 61,
        }
    }
}

/// The recorded settings, shared by the door's connections.
#[derive(Default)]
pub struct Tuning(Mutex<Tune>);

impl Tuning {
    /// The settings now.
    pub fn get(&self) -> Tune {
        *self.0.lock()
    }

    fn update(&self, f: impl FnOnce(&mut Tune)) {
        f(&mut self.0.lock());
    }
}

/// memcached's `safe_strtod`.
fn parse_f64(tok: &[u8]) -> Option<f64> {
    std::str::from_utf8(tok).ok()?.parse().ok()
}

/// The words of a request and whether it ends in `noreply` (memcached's
/// `set_noreply_maybe`: the word stays among the arguments).
fn words<'a>(args: Tokens<'a>) -> (Vec<&'a [u8]>, bool) {
    let words: Vec<&[u8]> = args.take(24).collect();
    let noreply = words.last() == Some(&b"noreply".as_slice());
    (words, noreply)
}

/// Writes `line` unless the request asked for no reply.
fn answer(w: &mut TextWriter<'_>, noreply: bool, line: &[u8]) {
    if !noreply {
        w.raw(line);
    }
}

/// `cache_memlimit <megabytes> [noreply]`: `maxmemory` becomes that many MiB; what is over
/// the new limit is evicted now by `maxmemory-policy` (under `noeviction` nothing is, and
/// stores are refused until memory falls below the limit).
pub(super) fn cache_memlimit(cx: &Ctx<'_>, args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let (words, noreply) = words(args);
    if !(1..=2).contains(&words.len()) {
        w.reply(TextReply::Error);
        return Flow::Continue;
    }
    let line: &[u8] = match parse_u32(words[0]) {
        None => b"ERROR\r\n",
        Some(mb) if mb < 8 => b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n",
        Some(mb) if mb > 1_000_000_000 => {
            b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
        }
        Some(mb) => {
            let bytes = (u64::from(mb) << 20).to_string();
            match cx.server.config.set_many(&[("maxmemory", &bytes)]) {
                Ok(()) => {
                    evict_to_limit(cx);
                    b"OK\r\n"
                }
                Err(_) => b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
            }
        }
    };
    answer(w, noreply, line);
    Flow::Continue
}

/// Evict until used memory is within `maxmemory`, or nothing more can be evicted.
fn evict_to_limit(cx: &Ctx<'_>) {
    let max = cx.server.config.num(Param::Maxmemory);
    let used = || match (cx.server.used_memory)() {
        0 => cx.server.keyspace.used_bytes(),
        hooked => hooked,
    };
    // Each call evicts a bounded batch; it answers true once nothing more can go.
    while max > 0 && used() as i64 > max {
        if crate::items::out_of_memory(cx.server, cx.now_ms) {
            break;
        }
    }
}

/// `slabs automove <0|1|2> | slabs automove ratio <r> | slabs reassign <src> <dst>`.
pub(super) fn slabs(cx: &Ctx<'_>, args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let (words, noreply) = words(args);
    match words.as_slice() {
        [b"reassign", src, dst] => {
            if parse_i32(src).is_none() || parse_i32(dst).is_none() {
                w.client_error("bad command line format");
            } else {
                w.client_error("slab reassignment not supported: larder has no slab pages");
            }
        }
        [b"automove", b"ratio"] => answer(w, noreply, b"ERROR\r\n"),
        [b"automove", b"ratio", ratio, ..] => match parse_f64(ratio) {
            Some(r) => {
                cx.mc.tune.update(|t| t.slab_automove_ratio = r);
                answer(w, noreply, b"OK\r\n");
            }
            None => answer(w, noreply, b"ERROR\r\n"),
        },
        [b"automove", level, ..] => {
            let line: &[u8] = match parse_u32(level) {
                None => b"CLIENT_ERROR bad command line format\r\n",
                Some(level @ 0..=2) => {
                    cx.mc.tune.update(|t| t.slab_automove = level);
                    b"OK\r\n"
                }
                Some(_) => b"ERROR\r\n",
            };
            answer(w, noreply, line);
        }
        _ => w.reply(TextReply::Error),
    }
    Flow::Continue
}

/// `lru tune <hot%> <warm%> <hot factor> <warm factor> | lru mode <flat|segmented> |
/// lru temp_ttl <seconds>`.
pub(super) fn lru(cx: &Ctx<'_>, args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let (words, noreply) = words(args);
    let line: &[u8] = match words.as_slice() {
        [b"tune", hot, warm, hot_factor, factor, ..] => {
            let parsed = (
                parse_u32(hot),
                parse_u32(warm),
                parse_f64(hot_factor),
                parse_f64(factor),
            );
            match parsed {
                (Some(hot), Some(warm), Some(hot_factor), Some(factor)) => {
                    if u64::from(hot) + u64::from(warm) > 80 {
                        b"ERROR hot and warm pcts must not exceed 80\r\n"
                    } else if factor <= 0.0 || hot_factor <= 0.0 {
                        b"ERROR hot/warm age factors must be greater than 0\r\n"
                    } else {
                        cx.mc.tune.update(|t| {
                            t.hot_lru_pct = hot;
                            t.warm_lru_pct = warm;
                            t.hot_max_factor = hot_factor;
                            t.warm_max_factor = factor;
                        });
                        b"OK\r\n"
                    }
                }
                _ => b"ERROR\r\n",
            }
        }
        [b"mode", mode, ..] => match *mode {
            b"flat" | b"segmented" => {
                cx.mc
                    .tune
                    .update(|t| t.lru_segmented = *mode == b"segmented");
                b"OK\r\n"
            }
            _ => b"ERROR\r\n",
        },
        [b"temp_ttl", ttl, ..] => match parse_i32(ttl) {
            Some(ttl) => {
                cx.mc.tune.update(|t| {
                    t.temp_lru = ttl >= 0;
                    if ttl >= 0 {
                        t.temporary_ttl = ttl;
                    }
                });
                b"OK\r\n"
            }
            None => b"ERROR\r\n",
        },
        _ => b"ERROR\r\n",
    };
    answer(w, noreply, line);
    Flow::Continue
}
