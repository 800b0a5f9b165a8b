//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: scripts by body or by SHA1, and the cache.

use larder_engine::DbGuards;
use larder_script::shebang::{self, ScriptFlags};
use larder_script::vm::{script_hex, script_id_bytes, ScriptId};

use super::interp::Interp;
use super::run::{self, Job, Target};
use crate::busy::ScriptKind;
use crate::error::{Error, Result};
use crate::exec::{Cmd, ConnState};
use crate::state::Server;

pub(super) const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
pub(super) const TOO_MANY_KEYS: &str = "ERR Number of keys can't be greater than number of args";
pub(super) const NEGATIVE_KEYS: &str = "ERR Number of keys can't be negative";
pub(super) const RO_WITH_WRITE: &str =
    "ERR Can not execute a script with write flag using *_ro command.";
const OOM_FLAG: &str =
    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'";

/// The SHA1 of `body` in lower-case hex, as scripts are named.
pub(crate) fn sha1_hex(body: &[u8]) -> String {
    script_hex(&sha1_id(body))
}

/// The SHA1 of `body`, as the script maps key it.
fn sha1_id(body: &[u8]) -> ScriptId {
    use sha1::{Digest, Sha1};
    Sha1::digest(body).into()
}

pub(super) fn eval(c: &mut Cmd<'_>) -> Result<()> {
    eval_generic(c, By::Body, Mode::ReadWrite, None)
}

pub(super) fn evalsha(c: &mut Cmd<'_>) -> Result<()> {
    eval_generic(c, By::Sha, Mode::ReadWrite, None)
}

pub(super) fn eval_ro(c: &mut Cmd<'_>) -> Result<()> {
    eval_generic(c, By::Body, Mode::ReadOnly, None)
}

pub(super) fn evalsha_ro(c: &mut Cmd<'_>) -> Result<()> {
    eval_generic(c, By::Sha, Mode::ReadOnly, None)
}

/// How EVAL names its script.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum By {
    Body,
    Sha,
}

/// The `_RO` forms refuse scripts that may write.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    ReadWrite,
    ReadOnly,
}

/// A script's KEYS and ARGV.
pub(super) type KeysAndArgs<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

/// `numkeys` and the keys and arguments after it (Redis's checks and texts).
pub(super) fn split_keys<'a>(
    numkeys: &[u8],
    rest: &'a [&'a [u8]],
    not_integer: &'static str,
) -> Result<KeysAndArgs<'a>> {
    let n = crate::args::parse_i64(numkeys).ok_or(Error::Static(not_integer))?;
    if n > rest.len() as i64 {
        return Err(Error::Static(TOO_MANY_KEYS));
    }
    if n < 0 {
        return Err(Error::Static(NEGATIVE_KEYS));
    }
    Ok(rest.split_at(n as usize))
}

/// EVAL and friends; `lent`: the shards EXEC holds when the script is queued in MULTI.
pub(super) fn eval_generic(
    c: &mut Cmd<'_>,
    by: By,
    mode: Mode,
    lent: Option<&mut DbGuards<'_>>,
) -> Result<()> {
    let named = c.args.next_arg()?;
    let numkeys = c.args.next_arg()?;
    let rest = c.args.rest();
    let (keys, args) = split_keys(numkeys, rest, crate::error::NOT_INTEGER)?;
    // Text that is not a SHA1 names no script. EVALSHA's SHA1 is used as its 20 bytes: the
    // hex is written again only where a script is made or an error names it.
    let id = match by {
        By::Sha => script_id_bytes(named).ok_or(Error::Static(NOSCRIPT))?,
        By::Body => sha1_id(named),
    };
    let (server, now_ms, argv) = (c.server, c.now_ms, c.args.argv());
    let (conn, out) = (&mut *c.conn, &mut *c.out);
    super::interp::with(server, |interp| {
        let script = match (interp.script(server, &id), by) {
            (Some(s), _) => s,
            (None, By::Sha) => return Err(Error::Static(NOSCRIPT)),
            (None, By::Body) => {
                create(interp, server, &script_hex(&id), named)?;
                interp.script(server, &id).ok_or(Error::Static(NOSCRIPT))?
            }
        };
        let shared = &script.shared;
        let read_only = prepare(server, conn, shared.flags, mode)?;
        let job = Job {
            argv,
            target: Target::Script {
                id: &id,
                body: &shared.body,
            },
            keys,
            args,
            flags: shared.flags,
            read_only,
            width: &script.width,
            shared_width: &shared.width,
            hints: &script.hints,
            now_ms,
        };
        run::run(server, conn, out, &job, lent, interp)
    })?
}

/// Compile `body` on this thread and cache it as `sha` (EVAL of a new script, SCRIPT LOAD).
fn create(interp: &mut Interp, server: &Server, sha: &str, body: &[u8]) -> Result<()> {
    let flags = shebang::script_flags(body).map_err(|e| Error::Owned(format!("ERR {e}")))?;
    interp.vm.compile_script(sha, body).map_err(Error::Owned)?;
    server.scripts.insert(sha, body, flags);
    Ok(())
}

/// Whether `conn`'s writes are refused because this server is a read-only replica (the
/// master's stream is obeyed).
pub(super) fn read_only_replica(server: &Server, conn: &ConnState) -> bool {
    !conn.loader
        && server
            .gates
            .replica
            .load(std::sync::atomic::Ordering::Relaxed)
        && server.config.num(crate::config::Param::ReplicaReadOnly) != 0
}

/// Whether this server is a replica whose link is down with `replica-serve-stale-data no`
/// (the master's stream is obeyed).
pub(super) fn running_stale(server: &Server, conn: &ConnState) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    !conn.loader
        && server.gates.replica.load(Relaxed)
        && server.gates.master_link_down.load(Relaxed)
        && server
            .config
            .num(crate::config::Param::ReplicaServeStaleData)
            == 0
}

/// Redis's checks before a script runs (`scriptPrepareForRun`, and `processCommand`'s for a
/// script that may write); whether it runs read-only.
pub(super) fn prepare(
    server: &Server,
    conn: &ConnState,
    flags: ScriptFlags,
    mode: Mode,
) -> Result<bool> {
    let ro = mode == Mode::ReadOnly;
    let masterdown = || Err(Error::Static(crate::replication::MASTERDOWN));
    if flags.has(ScriptFlags::EVAL_COMPAT_MODE) {
        if running_stale(server, conn) {
            return masterdown();
        }
        return Ok(ro);
    }
    let writes = !flags.has(ScriptFlags::NO_WRITES);
    if writes {
        // EVAL is refused while loading already: only the disk-error refusal can apply.
        if let Some(e) = crate::exec::persistence_gate(server, crate::table::flags::WRITE) {
            return Err(e);
        }
        if read_only_replica(server, conn) {
            return Err(Error::Static(crate::replication::READONLY));
        }
    }
    // Redis's `processCommand` refuses a script without `allow-stale` as it refuses a
    // command without the `stale` flag, after the write checks.
    if !flags.has(ScriptFlags::ALLOW_STALE) && running_stale(server, conn) {
        return masterdown();
    }
    if writes && ro {
        return Err(Error::Static(RO_WITH_WRITE));
    }
    if !flags.has(ScriptFlags::ALLOW_OOM)
        && !flags.has(ScriptFlags::NO_WRITES)
        && crate::exec::over_maxmemory(server)
    {
        return Err(Error::Static(OOM_FLAG));
    }
    Ok(ro || flags.has(ScriptFlags::NO_WRITES))
}

/// SCRIPT LOAD script
pub(super) fn script_load(c: &mut Cmd<'_>) -> Result<()> {
    let body = c.args.next_arg()?;
    let sha = sha1_hex(body);
    if !c.server.scripts.exists(&sha) {
        super::interp::with(c.server, |i| create(i, c.server, &sha, body))??;
    }
    c.out.bulk(sha.as_bytes());
    Ok(())
}

/// SCRIPT EXISTS sha1 [sha1 ...]
pub(super) fn script_exists(c: &mut Cmd<'_>) -> Result<()> {
    let shas = c.args.rest();
    c.out.array(shas.len());
    for sha in shas {
        // Hex in either case names the same script; anything else names none.
        let exists = std::str::from_utf8(sha).is_ok_and(|s| c.server.scripts.exists(s));
        c.out.int(i64::from(exists));
    }
    Ok(())
}

/// SCRIPT FLUSH [ASYNC|SYNC]
pub(super) fn script_flush(c: &mut Cmd<'_>) -> Result<()> {
    match c.args.rest() {
        [] => {}
        [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {}
        _ => {
            return Err(Error::Static(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ))
        }
    }
    c.server.scripts.flush();
    c.out.simple("OK");
    Ok(())
}

/// SCRIPT KILL
pub(super) fn script_kill(c: &mut Cmd<'_>) -> Result<()> {
    crate::busy::kill(c.server, ScriptKind::Eval)?;
    c.out.simple("OK");
    Ok(())
}

/// SCRIPT DEBUG YES|SYNC|NO: larder has no Lua debugger; NO (debugging off) is its state.
pub(super) fn script_debug(c: &mut Cmd<'_>) -> Result<()> {
    let mode = c.args.next_arg()?;
    if mode.eq_ignore_ascii_case(b"no") {
        c.out.simple("OK");
        return Ok(());
    }
    if mode.eq_ignore_ascii_case(b"yes") || mode.eq_ignore_ascii_case(b"sync") {
        return Err(Error::Static(
            "ERR SCRIPT DEBUG YES|SYNC is not supported: larder has no Lua debugger",
        ));
    }
    Err(Error::Static("ERR Use SCRIPT DEBUG YES/SYNC/NO"))
}

/// SCRIPT HELP
pub(super) fn script_help(c: &mut Cmd<'_>) -> Result<()> {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed (larder supports NO only).",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, LINES)
}
