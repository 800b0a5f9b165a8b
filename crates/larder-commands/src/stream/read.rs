//! XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
//!
//! Served at once when some stream has entries past its ID; otherwise, with BLOCK, the client
//! waits (see `blocking.rs`) and runs the request again when one of its keys is written. `$`
//! is resolved when the client first blocks and kept for its retries
//! (`ConnState::xread_ids`), as Redis remembers it; a retry with no COUNT reads at most
//! 1000 entries per stream (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`). A key deleted, or set
//! to another type, while the client waits leaves it waiting, as in Redis 7.0.

use larder_engine::stream::{Stream, StreamId};

use larder_resp::Protocol;

use crate::args::parse_i64;
use crate::blocking;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

use super::{read_stream, reply_range, stream_at, strict_id};

const UNBALANCED: &str =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
const GROUP_IN_XREAD: &str =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
const NOACK_IN_XREAD: &str =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
const GT_IN_XREAD: &str = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const TIMEOUT_OUT_OF_RANGE: &str = "ERR timeout is out of range";
/// Entries per stream a woken XREAD without COUNT reads.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// BLOCK's argument: whole milliseconds, as the absolute deadline (0: none).
pub(crate) fn block_deadline(arg: &[u8], now_ms: u64) -> Result<u64> {
    let ms = parse_i64(arg).ok_or(Error::Static(error::TIMEOUT_NOT_INTEGER))?;
    let ms = u64::try_from(ms).map_err(|_| Error::Static(TIMEOUT_NEGATIVE))?;
    if ms == 0 {
        return Ok(0);
    }
    if ms > i64::MAX as u64 - now_ms {
        return Err(Error::Static(TIMEOUT_OUT_OF_RANGE));
    }
    Ok(now_ms + ms)
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub(super) fn xread(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let mut deadline: Option<u64> = None;
    let mut count = 0usize;
    let mut streams_at = 0;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let o = argv[i];
        if o.eq_ignore_ascii_case(b"block") && more > 0 {
            i += 1;
            deadline = Some(block_deadline(argv[i], c.now_ms)?);
        } else if o.eq_ignore_ascii_case(b"count") && more > 0 {
            i += 1;
            let n = parse_i64(argv[i]).ok_or(Error::Static(error::NOT_INTEGER))?;
            count = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
        } else if o.eq_ignore_ascii_case(b"streams") && more > 0 {
            streams_at = i + 1;
            if (argv.len() - streams_at) % 2 != 0 {
                return Err(Error::Static(UNBALANCED));
            }
            break;
        } else if o.eq_ignore_ascii_case(b"group") && more >= 2 {
            return Err(Error::Static(GROUP_IN_XREAD));
        } else if o.eq_ignore_ascii_case(b"noack") {
            return Err(Error::Static(NOACK_IN_XREAD));
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(Error::Static(error::SYNTAX));
    }
    let n = (argv.len() - streams_at) / 2;
    let keys = &argv[streams_at..streams_at + n];
    let retrying = blocking::retrying(c);

    // Resolve the IDs, checking each key's type.
    let mut ids = Vec::with_capacity(n);
    for (k, (&key, &arg)) in keys.iter().zip(&argv[streams_at + n..]).enumerate() {
        let (mut shard, hash) = c.shard_of(key);
        let stream = match read_stream(c, &mut shard, key, hash) {
            Ok(slot) => slot.map(|slot| stream_at(&shard, slot)).transpose()?,
            // A blocked client's key set to another type: skipped, as Redis 7.0 does.
            Err(_) if retrying => None,
            Err(e) => return Err(e),
        };
        let id = if arg == b"$" {
            match c.conn.xread_ids.get(k) {
                Some(&id) if retrying => id,
                _ => stream.map_or(StreamId::MIN, Stream::last_id),
            }
        } else if arg == b">" {
            return Err(Error::Static(GT_IN_XREAD));
        } else {
            strict_id(arg, 0)?
        };
        ids.push(id);
    }

    // Serve what can be served now.
    if retrying && count == 0 {
        count = BLOCKED_DEFAULT_COUNT;
    }
    let mut ready = Vec::new();
    for (k, &key) in keys.iter().enumerate() {
        let (mut shard, hash) = c.shard_of(key);
        let Ok(Some(slot)) = read_stream(c, &mut shard, key, hash) else {
            continue;
        };
        let s = stream_at(&shard, slot)?;
        if s.last_live_id().is_some_and(|top| top > ids[k]) {
            ready.push(k);
        }
    }
    if !ready.is_empty() {
        blocking::done(c);
        let resp3 = c.out.proto == Protocol::Resp3;
        if resp3 {
            c.out.map(ready.len());
        } else {
            c.out.array(ready.len());
        }
        for &k in &ready {
            let key = keys[k];
            if !resp3 {
                c.out.array(2);
            }
            c.out.bulk(key);
            let (mut shard, hash) = c.shard_of(key);
            let start = ids[k].next().unwrap_or(StreamId::MAX);
            match shard.find(key, hash, c.now_ms) {
                Some(slot) => {
                    reply_range(
                        c.out,
                        stream_at(&shard, slot)?,
                        start,
                        StreamId::MAX,
                        count,
                        false,
                    );
                }
                None => c.out.array(0),
            }
        }
        return Ok(());
    }
    match deadline {
        Some(deadline) => {
            if !retrying {
                c.conn.xread_ids = ids;
            }
            blocking::wait(c, keys, deadline)
        }
        None => {
            c.out.null_array();
            Ok(())
        }
    }
}
