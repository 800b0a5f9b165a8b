//! `cache_memlimit`, `slabs` and `lru`: the memory limit and memcached's allocator tuning,
//! answered as memcached 1.6.18's `process_memlimit_command`, `process_slabs_command` and
//! `process_lru_command`.
//!
//! `cache_memlimit` sets `maxmemory` (as CONFIG SET does) and evicts down to it at once by
//! `maxmemory-policy`. larder has no slab allocator and no segmented LRU (it evicts by
//! `maxmemory-policy`): a request for what it does (`slabs automove 0`, `lru mode flat`,
//! `lru temp_ttl` below 0, which turns the temporary LRU off) answers `OK`, one for what it
//! does not (`slabs automove 1|2`, `slabs automove ratio`, `slabs reassign`, `lru tune`,
//! `lru mode segmented`, a `temp_ttl` of 0 or more) a `CLIENT_ERROR` that says why, after
//! memcached's own checks of the request's form. `stats settings` shows larder's values.

use larder_commands::config::Param;
use larder_memcache::{parse_i32, parse_u32, TextReply, TextWriter, Tokens};

use super::{Ctx, Flow};

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

/// Why larder refuses to move slab pages.
const NO_SLABS: &str = "not supported: larder has no slab pages";
/// Why larder refuses the segmented LRU's settings.
const NO_SEGMENTED_LRU: &str =
    "not supported: larder has no segmented LRU (it evicts by maxmemory-policy)";

/// `slabs automove <0|1|2> | slabs automove ratio <r> | slabs reassign <src> <dst>`.
pub(super) fn slabs(args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let (words, noreply) = words(args);
    match words.as_slice() {
        [b"reassign", src, dst] => {
            if parse_i32(src).is_none() || parse_i32(dst).is_none() {
                w.client_error("bad command line format");
            } else {
                w.client_error(&format!("slab reassignment {NO_SLABS}"));
            }
        }
        [b"automove", b"ratio"] => answer(w, noreply, b"ERROR\r\n"),
        [b"automove", b"ratio", ratio, ..] => match parse_f64(ratio) {
            Some(_) => w.client_error(&format!("slab automove {NO_SLABS}")),
            None => answer(w, noreply, b"ERROR\r\n"),
        },
        [b"automove", level, ..] => match parse_u32(level) {
            None => answer(w, noreply, b"CLIENT_ERROR bad command line format\r\n"),
            // Off: larder never moves pages.
            Some(0) => answer(w, noreply, b"OK\r\n"),
            Some(1..=2) => w.client_error(&format!("slab automove {NO_SLABS}")),
            Some(_) => answer(w, noreply, b"ERROR\r\n"),
        },
        _ => w.reply(TextReply::Error),
    }
    Flow::Continue
}

/// `lru tune <hot%> <warm%> <hot factor> <warm factor> | lru mode <flat|segmented> |
/// lru temp_ttl <seconds>`.
pub(super) fn lru(args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let (words, noreply) = words(args);
    let refused = |w: &mut TextWriter<'_>, what: &str| {
        w.client_error(&format!("{what} {NO_SEGMENTED_LRU}"));
    };
    match words.as_slice() {
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
                        answer(
                            w,
                            noreply,
                            b"ERROR hot and warm pcts must not exceed 80\r\n",
                        );
                    } else if factor <= 0.0 || hot_factor <= 0.0 {
                        answer(
                            w,
                            noreply,
                            b"ERROR hot/warm age factors must be greater than 0\r\n",
                        );
                    } else {
                        refused(w, "lru tuning");
                    }
                }
                _ => answer(w, noreply, b"ERROR\r\n"),
            }
        }
        [b"mode", b"flat", ..] => answer(w, noreply, b"OK\r\n"),
        [b"mode", b"segmented", ..] => refused(w, "lru mode segmented"),
        [b"temp_ttl", ttl, ..] => match parse_i32(ttl) {
            // Below 0 turns the temporary LRU off: larder has none.
            Some(ttl) if ttl < 0 => answer(w, noreply, b"OK\r\n"),
            Some(_) => refused(w, "temporary LRU"),
            None => answer(w, noreply, b"ERROR\r\n"),
        },
        _ => answer(w, noreply, b"ERROR\r\n"),
    }
    Flow::Continue
}
