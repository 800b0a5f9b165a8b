//! The work queue (hustmq's model) over streams: QPUT QGET QACK QLOCK QMAXLEN QTIMEOUT
//! QPURGE QSTATS QWORKERS QPUB QSUB. `docs/queue.md` is the user's guide.
//!
//! A queue is one stream per priority level with one consumer group, a hash of settings
//! and a stream for its publish window ([`names`]). Its commands hold no state and touch no
//! shard: each runs a short sequence of stream and hash commands through the executor
//! ([`sub`]), so the log, replicas and replay see those commands, as they would from a
//! client that ran them itself. They declare no keys (the keys are derived from the queue's
//! name; each command they run declares its own) and are refused inside MULTI (a queue
//! command runs its own steps, some of them transactions).
//!
//! Messages idle past the queue's visibility timeout are taken back by the server's
//! reclaim timer ([`timer`]) and handed to the next get.

mod names;
pub mod ops;
pub mod sub;
#[cfg(test)]
mod tests;
pub mod timer;

pub use names::{pub_key, Token, LEVELS};
pub use ops::{Delivery, Got, Q};
pub use timer::Timer;

use crate::args::parse_u64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// The default number of messages the publish window retains.
pub const WINDOW_DEFAULT: u64 = 1000;
const BAD_PRIORITY: &str = "ERR PRIORITY must be 0, 1 or 2";
const BAD_TOKEN: &str = "ERR invalid queue token";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags | NO_MULTI | NOSCRIPT,
        KeySpec::NONE,
        Group::Stream,
        summary,
        "7.0.0",
        handler,
    )
}

/// The queue family's table (larder's own commands).
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("qput", -3, MAY_REPLICATE | DENYOOM, "Add a message to a work queue", qput),
    cmd("qget", -3, MAY_REPLICATE, "Take the next message of a work queue for a worker", qget),
    cmd("qack", 3, MAY_REPLICATE, "Acknowledge a message taken from a work queue", qack),
    cmd("qlock", 3, MAY_REPLICATE, "Refuse (1) or accept again (0) puts to a work queue", qlock),
    cmd("qmaxlen", 3, MAY_REPLICATE, "Bound the messages a work queue holds (0: unbounded)", qmaxlen),
    cmd("qtimeout", 3, MAY_REPLICATE, "Set a work queue's visibility timeout in milliseconds", qtimeout),
    cmd("qpurge", -2, MAY_REPLICATE, "Remove every message of a work queue, or of one priority", qpurge),
    cmd("qstats", 2, 0, "Counts and settings of a work queue", qstats),
    cmd("qworkers", 2, 0, "The workers of a work queue and when each was last seen", qworkers),
    cmd("qpub", -3, MAY_REPLICATE | DENYOOM, "Publish a message to a work queue's retained window", qpub),
    cmd("qsub", -3, 0, "Read a work queue's retained window from an index", qsub),
];

fn queue<'a, 'c>(c: &'c mut Cmd<'a>, name: &'c [u8]) -> Q<'a, 'c> {
    Q {
        server: c.server,
        conn: c.conn,
        name,
        now_ms: c.now_ms,
    }
}

fn priority(arg: &[u8]) -> Result<usize> {
    parse_u64(arg)
        .filter(|&p| p < LEVELS as u64)
        .map(|p| p as usize)
        .ok_or(Error::Static(BAD_PRIORITY))
}

fn count(arg: &[u8]) -> Result<u64> {
    parse_u64(arg).ok_or(Error::Static(error::NOT_INTEGER))
}

/// QPUT queue [PRIORITY p] [TTL ms] payload: the message's token.
fn qput(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let (mut prio, mut ttl_ms) = (0, None);
    while c.args.remaining() > 1 {
        if c.args.eat("PRIORITY") {
            prio = priority(c.args.next_arg()?)?;
        } else if c.args.eat("TTL") {
            ttl_ms = Some(count(c.args.next_arg()?)?.max(1));
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let payload = c.args.next_arg()?;
    let token = queue(c, name).put(prio, ttl_ms, payload)?;
    c.out.bulk(&token.to_bytes());
    Ok(())
}

/// QGET queue worker [AUTOACK] [BLOCK ms]: `[token, payload, priority, deliveries]`, or
/// null when there is nothing (at once, or when the wait ends).
fn qget(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let worker = c.args.next_arg()?;
    let (mut auto_ack, mut block_ms) = (false, None);
    while c.args.remaining() > 0 {
        if c.args.eat("AUTOACK") {
            auto_ack = true;
        } else if c.args.eat("BLOCK") {
            block_ms = Some(count(c.args.next_arg()?)?);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    match queue(c, name).get(worker, auto_ack, block_ms)? {
        Got::Message(d) => {
            c.out.array(4);
            c.out.bulk(&d.token.to_bytes());
            c.out.bulk(&d.payload);
            c.out.int(d.token.priority as i64);
            c.out.int(d.deliveries);
        }
        Got::Empty => c.out.null_array(),
        // The executor answers nothing now and runs the request again when woken.
        Got::Waiting => {}
    }
    Ok(())
}

/// QACK queue token: 1 when the message was waiting for it, else 0.
fn qack(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let token = Token::parse(c.args.next_arg()?).ok_or(Error::Static(BAD_TOKEN))?;
    let n = queue(c, name).ack(&token)?;
    c.out.int(n);
    Ok(())
}

/// Sets one numeric setting: `QLOCK q 0|1`, `QMAXLEN q n`, `QTIMEOUT q ms`.
fn setting(c: &mut Cmd<'_>, field: &[u8], max: u64) -> Result<()> {
    let name = c.args.next_arg()?;
    let v = count(c.args.next_arg()?)?;
    if v > max {
        return Err(Error::Static(error::NOT_INTEGER));
    }
    queue(c, name).set(field, v as i64)?;
    c.out.simple("OK");
    Ok(())
}

fn qlock(c: &mut Cmd<'_>) -> Result<()> {
    setting(c, b"locked", 1)
}

fn qmaxlen(c: &mut Cmd<'_>) -> Result<()> {
    setting(c, b"maxlen", i64::MAX as u64)
}

fn qtimeout(c: &mut Cmd<'_>) -> Result<()> {
    setting(c, ops::TIMEOUT_FIELD, i64::MAX as u64)
}

/// QPURGE queue [PRIORITY p]: how many messages were removed.
fn qpurge(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let level = if c.args.eat("PRIORITY") {
        Some(priority(c.args.next_arg()?)?)
    } else {
        None
    };
    c.args.finish()?;
    let n = queue(c, name).purge(level)?;
    c.out.int(n);
    Ok(())
}

/// QSTATS queue: a map of counts and settings.
fn qstats(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let stats = queue(c, name).stats()?;
    c.out.map(stats.len());
    for (k, v) in stats {
        c.out.bulk(k.as_bytes());
        c.out.int(v);
    }
    Ok(())
}

/// QWORKERS queue: `[worker, last seen (Unix ms), unacknowledged]` per worker.
fn qworkers(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let workers = queue(c, name).workers()?;
    c.out.array(workers.len());
    for (w, seen_ms, pending) in workers {
        c.out.array(3);
        c.out.bulk(&w);
        c.out.int(seen_ms as i64);
        c.out.int(pending);
    }
    Ok(())
}

/// QPUB queue [WINDOW n] payload: the message's index in the window.
fn qpub(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let mut window = WINDOW_DEFAULT;
    while c.args.remaining() > 1 {
        if c.args.eat("WINDOW") {
            window = count(c.args.next_arg()?)?.max(1);
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let payload = c.args.next_arg()?;
    let idx = queue(c, name).publish(window, payload)?;
    c.out.int(idx);
    Ok(())
}

/// QSUB queue index [COUNT n]: `[index, payload]` for each retained message from `index`.
fn qsub(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let from = count(c.args.next_arg()?)?;
    let mut n = 100;
    if c.args.eat("COUNT") {
        n = count(c.args.next_arg()?)?.max(1);
    }
    c.args.finish()?;
    let msgs = queue(c, name).read_window(from, n)?;
    c.out.array(msgs.len());
    for (idx, payload) in msgs {
        c.out.array(2);
        c.out.int(idx as i64);
        c.out.bulk(&payload);
    }
    Ok(())
}
