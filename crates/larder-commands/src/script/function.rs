//! FUNCTION (LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL, HELP), FCALL and
//! FCALL_RO: libraries of named functions, kept in snapshots and the log.

use larder_engine::DbGuards;
use larder_script::shebang::{self, ScriptFlags};
use larder_script::vm::{Vm, VmOptions};

use super::eval::{prepare, split_keys, Mode};
use super::registry::{Clash, Function, Library, Restore};
use super::run::{self, Job, Target};
use crate::busy::ScriptKind;
use crate::config::Param;
use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::state::Server;

const NAME_RULES: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// Check a library's code and run its top level in a scratch interpreter: what it registers.
/// Errors are Redis's texts.
pub(crate) fn compile_library(vm: &mut Vm, code: &str) -> std::result::Result<Library, String> {
    let meta = shebang::library(code.as_bytes()).map_err(|e| format!("ERR {e}"))?;
    if !meta.engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{}' not found", meta.engine));
    }
    let name = meta.name.unwrap_or_default();
    if !shebang::valid_name(&name) {
        return Err(NAME_RULES.into());
    }
    let functions = vm.load_library(&name, code)?;
    Ok(Library {
        name,
        code: code.to_string(),
        functions: functions
            .into_iter()
            .map(|meta| Function {
                meta,
                width: Default::default(),
            })
            .collect(),
    })
}

/// A scratch interpreter for loading libraries, capped like the threads' ones.
pub(crate) fn scratch_vm(server: &Server) -> std::result::Result<Vm, String> {
    Vm::new(&VmOptions {
        memory_limit_bytes: server.config.num(Param::LuaMemoryLimit).max(0) as usize,
    })
    .map_err(|e| format!("ERR cannot start the Lua interpreter: {e}"))
}

/// Record a FUNCTION command that changed the libraries for replay (the log, replicas): it
/// changes no key, so the executor would not record it. Called while the libraries are
/// still locked for the change, so two threads' changes are logged in the order they
/// were made.
fn record(c: &Cmd<'_>) {
    let feed = c.server.keyspace.feed();
    if feed.records_commands() {
        let argv = larder_engine::Argv::new(c.args.argv());
        let _group = feed.group();
        feed.command_now(c.conn.db, argv, None);
    }
}

/// FUNCTION LOAD [REPLACE] function-code
pub(super) fn function_load(c: &mut Cmd<'_>) -> Result<()> {
    let mut rest = c.args.rest();
    let mut replace = false;
    while rest.len() > 1 {
        if rest[0].eq_ignore_ascii_case(b"replace") {
            replace = true;
            rest = &rest[1..];
            continue;
        }
        return Err(Error::Owned(format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(rest[0])
        )));
    }
    let [code] = rest else {
        return Err(Error::Static("ERR Function code is missing"));
    };
    let code = String::from_utf8_lossy(code).into_owned();
    // Redis's order: metadata, engine, name, an existing library, then the code.
    let meta = shebang::library(code.as_bytes()).map_err(|e| Error::Owned(format!("ERR {e}")))?;
    let exists = meta
        .name
        .as_deref()
        .is_some_and(|n| c.server.scripts.libraries().by_name.contains_key(n));
    if exists && !replace && meta.engine.eq_ignore_ascii_case("lua") {
        let name = meta.name.unwrap_or_default();
        if shebang::valid_name(&name) {
            return Err(Error::Owned(format!("ERR Library '{name}' already exists")));
        }
    }
    let mut vm = scratch_vm(c.server).map_err(Error::Owned)?;
    let lib = compile_library(&mut vm, &code).map_err(Error::Owned)?;
    let name = lib.name.clone();
    c.server
        .scripts
        .change_libraries(|libs| match libs.add(lib, replace) {
            Ok(()) => {
                record(c);
                (Ok(()), true)
            }
            Err(e) => (Err(e), false),
        })
        .map_err(|clash| {
            Error::Owned(match clash {
                Clash::Library(n) => format!("ERR Library '{n}' already exists"),
                Clash::Function(f) => format!("ERR Function {f} already exists"),
            })
        })?;
    c.out.bulk(name.as_bytes());
    Ok(())
}

/// FUNCTION DELETE library-name
pub(super) fn function_delete(c: &mut Cmd<'_>) -> Result<()> {
    let name = String::from_utf8_lossy(c.args.next_arg()?).into_owned();
    let found = c.server.scripts.change_libraries(|libs| {
        let found = libs.remove(&name);
        if found {
            record(c);
        }
        (found, found)
    });
    if !found {
        return Err(Error::Static("ERR Library not found"));
    }
    c.out.simple("OK");
    Ok(())
}

/// FUNCTION FLUSH [ASYNC|SYNC]
pub(super) fn function_flush(c: &mut Cmd<'_>) -> Result<()> {
    match c.args.rest() {
        [] => {}
        [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {}
        _ => {
            return Err(Error::Static(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
    }
    c.server.scripts.change_libraries(|libs| {
        *libs = Default::default();
        record(c);
        ((), true)
    });
    c.out.simple("OK");
    Ok(())
}

/// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
pub(super) fn function_list(c: &mut Cmd<'_>) -> Result<()> {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let argv = c.args.rest();
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i];
        if !with_code && a.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && a.eq_ignore_ascii_case(b"libraryname") {
            let Some(p) = argv.get(i + 1) else {
                return Err(Error::Static("ERR library name argument was not given"));
            };
            pattern = Some(p);
            i += 1;
        } else {
            return Err(Error::Owned(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    let libs = c.server.scripts.libraries();
    let shown: Vec<&Library> = libs
        .by_name
        .values()
        .filter(|l| {
            pattern.is_none_or(|p| larder_engine::glob::matches(p, l.name.as_bytes(), true))
        })
        .map(|l| &**l)
        .collect();
    let out = &mut *c.out;
    out.array(shown.len());
    for lib in shown {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.meta.name.as_bytes());
            out.bulk(b"description");
            match &f.meta.description {
                Some(d) => out.bulk(d.as_bytes()),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names: Vec<&str> = f.meta.flags.names().collect();
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(lib.code.as_bytes());
        }
    }
    Ok(())
}

/// FUNCTION DUMP
pub(super) fn function_dump(c: &mut Cmd<'_>) -> Result<()> {
    let codes = c.server.scripts.library_codes();
    let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
    c.out
        .bulk(&larder_persist::rdb::functions::dump_payload(&refs));
    Ok(())
}

/// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
pub(super) fn function_restore(c: &mut Cmd<'_>) -> Result<()> {
    let payload = c.args.next_arg()?;
    let policy =
        match c.args.rest() {
            [] => Restore::Append,
            [p] if p.eq_ignore_ascii_case(b"append") => Restore::Append,
            [p] if p.eq_ignore_ascii_case(b"replace") => Restore::Replace,
            [p] if p.eq_ignore_ascii_case(b"flush") => Restore::Flush,
            [_] => return Err(Error::Static(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
            _ => return Err(crate::server::subcommand_syntax_error(c, "FUNCTION")),
        };
    let codes = larder_persist::rdb::functions::parse_dump_payload(payload)
        .map_err(|e| Error::Owned(format!("ERR {e}")))?;
    c.server
        .scripts
        .restore_libraries_then(c.server, codes, policy, || record(c))
        .map_err(Error::Owned)?;
    c.out.simple("OK");
    Ok(())
}

/// FUNCTION STATS
pub(super) fn function_stats(c: &mut Cmd<'_>) -> Result<()> {
    let (libraries, functions) = {
        let libs = c.server.scripts.libraries();
        (libs.by_name.len(), libs.function_count())
    };
    let out = &mut *c.out;
    out.map(2);
    out.bulk(b"running_script");
    match c.server.busy.running_function() {
        None => out.null(),
        Some((name, command, duration_ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name.as_bytes());
            out.bulk(b"command");
            out.array(command.len());
            for a in &command {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(duration_ms as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libraries as i64);
    out.bulk(b"functions_count");
    out.int(functions as i64);
    Ok(())
}

/// FUNCTION KILL
pub(super) fn function_kill(c: &mut Cmd<'_>) -> Result<()> {
    crate::busy::kill(c.server, ScriptKind::Function)?;
    c.out.simple("OK");
    Ok(())
}

/// FUNCTION HELP
pub(super) fn function_help(c: &mut Cmd<'_>) -> Result<()> {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, LINES)
}

pub(super) fn fcall(c: &mut Cmd<'_>) -> Result<()> {
    fcall_generic(c, Mode::ReadWrite, None)
}

pub(super) fn fcall_ro(c: &mut Cmd<'_>) -> Result<()> {
    fcall_generic(c, Mode::ReadOnly, None)
}

/// FCALL and FCALL_RO; `lent`: the shards EXEC holds when queued in MULTI.
pub(super) fn fcall_generic(
    c: &mut Cmd<'_>,
    mode: Mode,
    lent: Option<&mut DbGuards<'_>>,
) -> Result<()> {
    let name = String::from_utf8_lossy(c.args.next_arg()?).into_owned();
    let numkeys = c.args.next_arg()?;
    let rest = c.args.rest();
    let (server, now_ms, argv) = (c.server, c.now_ms, c.args.argv());
    let (conn, out) = (&mut *c.conn, &mut *c.out);
    super::interp::with(server, |interp| {
        let Some(local) = interp.function(server, &name) else {
            return Err(Error::Static("ERR Function not found"));
        };
        let (keys, args) = split_keys(numkeys, rest, "ERR Bad number of keys provided")?;
        let f = &local.lib.functions[local.index];
        let flags = ScriptFlags(f.meta.flags.0 & !ScriptFlags::EVAL_COMPAT_MODE);
        let read_only = prepare(server, conn, flags, mode)?;
        let job = Job {
            argv,
            target: Target::Function { name: &f.meta.name },
            keys,
            args,
            flags,
            read_only,
            width: &local.width,
            shared_width: &f.width,
            hints: &local.hints,
            now_ms,
        };
        run::run(server, conn, out, &job, lent, interp)
    })?
}
