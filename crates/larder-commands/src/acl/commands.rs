//! The ACL command and its subcommands (Redis 7.0.15's `aclCommand`): SETUSER, GETUSER,
//! DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG, DRYRUN, LOAD, SAVE, HELP.

use std::io::Read;

use super::categories;
use super::file;
use super::rules::{flag, has_spaces, Selector};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        KeySpec::NONE,
        Group::Server,
        summary,
        since,
        handler,
    )
}

/// The framework runs a container's subcommands, never the container itself.
fn unreachable_container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static("ERR internal error"))
}

const ADMIN_CMD: u32 = ADMIN | NOSCRIPT | LOADING | STALE;
const PLAIN: u32 = NOSCRIPT | LOADING | STALE;

#[rustfmt::skip]
static ACL_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("cat", -2, PLAIN, "List the ACL categories or the commands inside a category", "6.0.0", acl_cat),
    cmd("deluser", -3, ADMIN_CMD, "Remove the specified ACL users and the associated rules", "6.0.0", acl_deluser),
    cmd("dryrun", -4, ADMIN_CMD, "Returns whether the user can execute the given command without executing the command.", "7.0.0", acl_dryrun),
    cmd("genpass", -2, PLAIN, "Generate a pseudorandom secure password to use for ACL users", "6.0.0", acl_genpass),
    cmd("getuser", 3, ADMIN_CMD, "Get the rules for a specific ACL user", "6.0.0", acl_getuser),
    cmd("list", 2, ADMIN_CMD, "List the current ACL rules in ACL config file format", "6.0.0", acl_list),
    cmd("load", 2, ADMIN_CMD, "Reload the ACLs from the configured ACL file", "6.0.0", acl_load),
    cmd("log", -2, ADMIN_CMD, "List latest events denied because of ACLs in place", "6.0.0", acl_log),
    cmd("save", 2, ADMIN_CMD, "Save the current ACL rules in the configured ACL file", "6.0.0", acl_save),
    cmd("setuser", -3, ADMIN_CMD, "Modify or create the rules for a specific ACL user", "6.0.0", acl_setuser),
    cmd("users", 2, ADMIN_CMD, "List the username of all the configured ACL rules", "6.0.0", acl_users),
    cmd("whoami", 2, PLAIN, "Return the name of the user associated to the current connection", "6.0.0", acl_whoami),
    cmd("help", 2, LOADING | STALE, "Show helpful text about the different subcommands", "6.0.0", acl_help),
];

/// The ACL family's table.
pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "acl",
    arity: -2,
    flags: 0,
    keys: KeySpec::NONE,
    group: Group::Server,
    summary: "A container for Access List Control commands ",
    since: "6.0.0",
    handler: unreachable_container,
    subcommands: ACL_SUBCOMMANDS,
}];

const GENPASS_MAX_BITS: i64 = 4096;

/// ACL SETUSER username [rule ...]
fn acl_setuser(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.rest();
    let name = argv[0];
    if has_spaces(name) {
        return Err(Error::Static(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    c.server
        .acl
        .set_user(name, &argv[1..])
        .map_err(|e| Error::Owned(format!("ERR {e}")))?;
    // Subscribers of a channel the user may no longer use are disconnected, as Redis's
    // `ACLKillPubsubClientsIfNeeded` does.
    if let Some(user) = c.server.acl.user(name) {
        c.server.pubsub.disconnect_unpermitted(&user);
    }
    c.out.simple("OK");
    Ok(())
}

/// ACL DELUSER username [username ...]
fn acl_deluser(c: &mut Cmd<'_>) -> Result<()> {
    let names = c.args.rest();
    if names.iter().any(|n| *n == b"default") {
        return Err(Error::Static("ERR The 'default' user cannot be removed"));
    }
    let existing: Vec<&[u8]> = names
        .iter()
        .copied()
        .filter(|n| c.server.acl.user(n).is_some())
        .collect();
    let deleted = c.server.acl.delete_users(names);
    super::disconnect_users(c.server, &existing);
    c.out.int(deleted as i64);
    Ok(())
}

/// The commands, keys and channels of a selector (ACL GETUSER's `aclAddReplySelectorDescription`).
fn write_selector(c: &mut Cmd<'_>, s: &Selector) {
    let index = c.server.acl.index();
    c.out.bulk(b"commands");
    c.out.bulk(&s.describe_commands(index));
    c.out.bulk(b"keys");
    c.out.bulk(&s.describe_keys());
    c.out.bulk(b"channels");
    c.out.bulk(&s.describe_channels());
}

/// ACL GETUSER username
fn acl_getuser(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.args.next_arg()?;
    let Some(user) = c.server.acl.user(name) else {
        c.out.null();
        return Ok(());
    };
    let r = user.rules();
    c.out.map(6);
    c.out.bulk(b"flags");
    let names: Vec<&str> = flag::NAMES
        .iter()
        .filter(|(f, _)| r.has(*f))
        .map(|(_, n)| *n)
        .collect();
    c.out.set(names.len());
    for n in names {
        c.out.bulk(n.as_bytes());
    }
    c.out.bulk(b"passwords");
    c.out.array(r.passwords.len());
    for p in &r.passwords {
        c.out.bulk(p.as_bytes());
    }
    write_selector(c, &r.selectors[0]);
    c.out.bulk(b"selectors");
    c.out.array(r.selectors.len() - 1);
    for s in &r.selectors[1..] {
        c.out.map(3);
        write_selector(c, s);
    }
    Ok(())
}

/// ACL LIST
fn acl_list(c: &mut Cmd<'_>) -> Result<()> {
    let lines = file::describe_all(&c.server.acl);
    c.out.array(lines.len());
    for l in lines {
        c.out.bulk(&l);
    }
    Ok(())
}

/// ACL USERS
fn acl_users(c: &mut Cmd<'_>) -> Result<()> {
    let users = c.server.acl.users();
    c.out.array(users.len());
    for u in users {
        c.out.bulk(u.name.as_bytes());
    }
    Ok(())
}

/// ACL WHOAMI
fn acl_whoami(c: &mut Cmd<'_>) -> Result<()> {
    let name = c.conn.user.name.clone();
    c.out.bulk(name.as_bytes());
    Ok(())
}

/// ACL CAT [category]
fn acl_cat(c: &mut Cmd<'_>) -> Result<()> {
    let Some(name) = c.args.opt() else {
        c.out.array(categories::NAMES.len());
        for n in categories::NAMES {
            c.out.bulk(&n.as_bytes()[1..]);
        }
        return Ok(());
    };
    if c.args.remaining() > 0 {
        return Err(super_syntax_error(c));
    }
    let Some(mask) = categories::bit(name) else {
        let shown: Vec<u8> = name.iter().copied().take(128).collect();
        return Err(Error::Owned(format!(
            "ERR Unknown category '{}'",
            String::from_utf8_lossy(&shown)
        )));
    };
    let names: Vec<&str> = c.server.acl.index().in_category(mask).collect();
    c.out.array(names.len());
    for n in names {
        c.out.bulk(n.as_bytes());
    }
    Ok(())
}

/// Redis's answer to a subcommand with the wrong number of arguments for its form.
fn super_syntax_error(c: &Cmd<'_>) -> Error {
    crate::server::subcommand_syntax_error(c, "ACL")
}

/// ACL GENPASS [bits]: `bits` rounded up to whole hex digits of randomness from the OS.
fn acl_genpass(c: &mut Cmd<'_>) -> Result<()> {
    let bits = match c.args.opt() {
        None => 256,
        Some(b) => parse_i64(b).ok_or(Error::Static(error::NOT_INTEGER))?,
    };
    if c.args.remaining() > 0 {
        return Err(super_syntax_error(c));
    }
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(Error::Owned(format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to {GENPASS_MAX_BITS}"
        )));
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut random = vec![0u8; chars.div_ceil(2)];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut random))
        .map_err(|_| Error::Static("ERR could not read random bytes"))?;
    let mut hex = Vec::with_capacity(random.len() * 2);
    for b in random {
        hex.push(b"0123456789abcdef"[usize::from(b >> 4)]);
        hex.push(b"0123456789abcdef"[usize::from(b & 15)]);
    }
    hex.truncate(chars);
    c.out.bulk(&hex);
    Ok(())
}

/// ACL LOG [count | RESET]
fn acl_log(c: &mut Cmd<'_>) -> Result<()> {
    let mut count = 10;
    if let Some(arg) = c.args.opt() {
        if c.args.remaining() > 0 {
            return Err(super_syntax_error(c));
        }
        if arg.eq_ignore_ascii_case(b"reset") {
            c.server.acl.log_reset();
            c.out.simple("OK");
            return Ok(());
        }
        count = parse_i64(arg).ok_or(Error::Static(error::NOT_INTEGER))?;
    }
    let entries = c.server.acl.log_entries(count.max(0) as usize);
    let now_ms = larder_engine::now_ms();
    c.out.array(entries.len());
    for e in entries {
        c.out.map(7);
        c.out.bulk(b"count");
        c.out.int(e.count as i64);
        c.out.bulk(b"reason");
        c.out.bulk(e.reason_name().as_bytes());
        c.out.bulk(b"context");
        c.out.bulk(e.context_name().as_bytes());
        c.out.bulk(b"object");
        c.out.bulk(&e.object);
        c.out.bulk(b"username");
        c.out.bulk(&e.username);
        c.out.bulk(b"age-seconds");
        c.out
            .double(now_ms.saturating_sub(e.ctime_ms) as f64 / 1000.0);
        c.out.bulk(b"client-info");
        c.out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

/// ACL DRYRUN username command [arg ...]
fn acl_dryrun(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.rest();
    let (name, request) = (argv[0], &argv[1..]);
    let Some(user) = c.server.acl.user(name) else {
        return Err(Error::Owned(format!(
            "ERR User '{}' not found",
            String::from_utf8_lossy(name)
        )));
    };
    let not_found = || {
        Error::Owned(format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(request[0])
        ))
    };
    let registry = &c.server.registry;
    let (_, spec) = registry.top(request[0]).ok_or_else(not_found)?;
    // A container alone is looked up as itself, so its arity decides (Redis's lookupCommand).
    if !spec.subcommands.is_empty() {
        if request.len() == 1 {
            return Err(error::wrong_arity(spec.name));
        }
        spec.subcommand(request[1]).ok_or_else(not_found)?;
    }
    let resolved = registry.resolve(request)?;
    let reply = match user.check(&resolved, request) {
        Ok(()) => {
            c.out.simple("OK");
            return Ok(());
        }
        Err(super::Denied::Command) => format!(
            "This user has no permissions to run the '{}' command",
            resolved.full_name
        ),
        Err(super::Denied::Key(k)) => format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(&k)
        ),
        Err(super::Denied::Channel(ch)) => format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(&ch)
        ),
    };
    c.out.bulk(reply.as_bytes());
    Ok(())
}

/// ACL LOAD
fn acl_load(c: &mut Cmd<'_>) -> Result<()> {
    if c.server
        .config
        .text(crate::config::Param::Aclfile)
        .is_empty()
    {
        return Err(Error::Static(file::NO_ACL_FILE));
    }
    file::load(c.server).map_err(|e| Error::Owned(format!("ERR {e}")))?;
    c.out.simple("OK");
    Ok(())
}

/// ACL SAVE
fn acl_save(c: &mut Cmd<'_>) -> Result<()> {
    if c.server
        .config
        .text(crate::config::Param::Aclfile)
        .is_empty()
    {
        return Err(Error::Static(file::NO_ACL_FILE));
    }
    if let Err(e) = file::save(c.server) {
        tracing::warn!("ACL SAVE: {e}");
        return Err(Error::Static(file::SAVE_FAILED));
    }
    c.out.simple("OK");
    Ok(())
}

/// ACL HELP
fn acl_help(c: &mut Cmd<'_>) -> Result<()> {
    crate::server::reply_help(
        c,
        &[
            "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
            "HELP",
            "    Prints this help.",
        ],
    )
}
