//! Scripting: EVAL and the script cache, FUNCTION libraries and FCALL, run by
//! `larder-script`'s interpreter (one per worker thread) with the executor's locks: see
//! `run.rs` for how a script holds its shards, and ARCHITECTURE.md "Scripts".

mod eval;
mod function;
mod interp;
mod registry;
mod run;
#[cfg(test)]
mod tests;

pub use registry::{Clash, Function, Libraries, Library, Restore, Script, Scripts};

use larder_engine::DbGuards;

use crate::args::Args;
use crate::error::Result;
use crate::exec::{Cmd, ConnState};
use crate::locks::Scope;
use crate::state::Server;
use crate::table::flags::*;
use crate::table::{CommandSpec, Group, KeySpec, Resolved};

use eval::{By, Mode};

/// Bytes this thread's interpreter uses (INFO `used_memory_lua` sums what it can see).
pub fn thread_lua_memory() -> usize {
    interp::used_memory()
}

/// The SHA1 of a script body as EVALSHA names it.
pub fn sha1_hex(body: &[u8]) -> String {
    eval::sha1_hex(body)
}

/// Run a script command queued in MULTI with the shards EXEC holds (all of them: a
/// script's `Scope::Script` plans every shard).
pub(crate) fn run_queued(
    server: &Server,
    conn: &mut ConnState,
    argv: &[&[u8]],
    out: &mut larder_resp::ReplyBuf,
    resolved: Resolved,
    now_ms: u64,
    guards: &mut DbGuards<'_>,
) -> Result<()> {
    let mut c = Cmd {
        server,
        conn,
        args: Args::new(argv),
        out,
        now_ms,
        resolved,
        held: None,
    };
    match resolved.full_name {
        "eval" => eval::eval_generic(&mut c, By::Body, Mode::ReadWrite, Some(guards)),
        "evalsha" => eval::eval_generic(&mut c, By::Sha, Mode::ReadWrite, Some(guards)),
        "eval_ro" => eval::eval_generic(&mut c, By::Body, Mode::ReadOnly, Some(guards)),
        "evalsha_ro" => eval::eval_generic(&mut c, By::Sha, Mode::ReadOnly, Some(guards)),
        "fcall" => function::fcall_generic(&mut c, Mode::ReadWrite, Some(guards)),
        _ => function::fcall_generic(&mut c, Mode::ReadOnly, Some(guards)),
    }
}

/// Whether a resolved command runs a script (EXEC lends such a command its shards).
pub(crate) fn runs_script(resolved: &Resolved) -> bool {
    matches!(resolved.spec.keys.scope, Scope::Script { .. })
}

const SCRIPT_KEYS: KeySpec = KeySpec::NONE.with_scope(Scope::Script { at: 2 });
const RUN: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MOVABLE_KEYS;

#[allow(clippy::too_many_arguments)]
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        Group::Scripting,
        summary,
        since,
        handler,
    )
}

fn unreachable_container(_: &mut Cmd<'_>) -> Result<()> {
    Err(crate::error::Error::Static("ERR unknown subcommand"))
}

/// The scripting family's table.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("eval", -3, RUN, SCRIPT_KEYS, "Execute a Lua script server side", "2.6.0", eval::eval),
    cmd("evalsha", -3, RUN, SCRIPT_KEYS, "Execute a Lua script server side", "2.6.0", eval::evalsha),
    cmd("eval_ro", -3, RUN | READONLY, SCRIPT_KEYS, "Execute a read-only Lua script server side", "7.0.0", eval::eval_ro),
    cmd("evalsha_ro", -3, RUN | READONLY, SCRIPT_KEYS, "Execute a read-only Lua script server side", "7.0.0", eval::evalsha_ro),
    cmd("fcall", -3, RUN, SCRIPT_KEYS, "Invoke a function", "7.0.0", function::fcall),
    cmd("fcall_ro", -3, RUN | READONLY, SCRIPT_KEYS, "Invoke a read-only function", "7.0.0", function::fcall_ro),
    CommandSpec {
        name: "script",
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: Group::Scripting,
        summary: "A container for Lua scripts management commands",
        since: "2.6.0",
        handler: unreachable_container,
        subcommands: SCRIPT_SUBCOMMANDS,
    },
    CommandSpec {
        name: "function",
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: Group::Scripting,
        summary: "A container for function commands",
        since: "7.0.0",
        handler: unreachable_container,
        subcommands: FUNCTION_SUBCOMMANDS,
    },
];

#[rustfmt::skip]
static SCRIPT_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("debug", 3, NOSCRIPT, KeySpec::NONE, "Set the debug mode for executed scripts.", "3.2.0", eval::script_debug),
    cmd("exists", -3, NOSCRIPT, KeySpec::NONE, "Check existence of scripts in the script cache.", "2.6.0", eval::script_exists),
    cmd("flush", -2, NOSCRIPT, KeySpec::NONE, "Remove all the scripts from the script cache.", "2.6.0", eval::script_flush),
    cmd("help", 2, LOADING | STALE, KeySpec::NONE, "Show helpful text about the different subcommands", "5.0.0", eval::script_help),
    cmd("kill", 2, NOSCRIPT | ALLOW_BUSY, KeySpec::NONE, "Kill the script currently in execution.", "2.6.0", eval::script_kill),
    cmd("load", 3, NOSCRIPT | STALE, KeySpec::NONE, "Load the specified Lua script into the script cache.", "2.6.0", eval::script_load),
];

#[rustfmt::skip]
static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("delete", 3, WRITE | NOSCRIPT, KeySpec::NONE, "Delete a function by name", "7.0.0", function::function_delete),
    cmd("dump", 2, NOSCRIPT, KeySpec::NONE, "Dump all functions into a serialized binary payload", "7.0.0", function::function_dump),
    cmd("flush", -2, WRITE | NOSCRIPT, KeySpec::NONE, "Deleting all functions", "7.0.0", function::function_flush),
    cmd("help", 2, LOADING | STALE, KeySpec::NONE, "Show helpful text about the different subcommands", "7.0.0", function::function_help),
    cmd("kill", 2, NOSCRIPT | ALLOW_BUSY, KeySpec::NONE, "Kill the function currently in execution.", "7.0.0", function::function_kill),
    cmd("list", -2, NOSCRIPT, KeySpec::NONE, "List information about all the functions", "7.0.0", function::function_list),
    cmd("load", -3, WRITE | DENYOOM | NOSCRIPT, KeySpec::NONE, "Create a function with the given arguments (name, code, description)", "7.0.0", function::function_load),
    cmd("restore", -3, WRITE | DENYOOM | NOSCRIPT, KeySpec::NONE, "Restore all the functions on the given payload", "7.0.0", function::function_restore),
    cmd("stats", 2, NOSCRIPT | ALLOW_BUSY, KeySpec::NONE, "Return information about the function currently running (name, description, duration)", "7.0.0", function::function_stats),
];
