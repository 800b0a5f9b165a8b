//! COMMAND and its subcommands (INFO, COUNT, LIST, DOCS, GETKEYS, GETKEYSANDFLAGS, HELP): the
//! registry as Redis 7.0 describes it, with its flag order and ACL categories, and Redis's own
//! tips and key specs for the commands it has (`command_meta.rs`).

use std::borrow::Cow;

use larder_resp::ReplyBuf;

use super::{cmd, reply_help, HELP_SUMMARY};
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, KeySpec};

const INVALID_COMMAND: &str = "ERR Invalid command specified";
const INVALID_ARG_COUNT: &str = "ERR Invalid number of arguments specified for command";
const INVALID_ARGS: &str = "ERR Invalid arguments specified for command";
const NO_KEY_ARGS: &str = "ERR The command has no key arguments";

#[rustfmt::skip]
static COMMAND_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("help", 2, LOADING | STALE, KeySpec::NONE, HELP_SUMMARY, "5.0.0", command_help),
    cmd("info", -2, LOADING | STALE, KeySpec::NONE, "Get array of specific Redis command details, or all when no argument is given.", "2.8.13", command_info),
    cmd("count", 2, LOADING | STALE, KeySpec::NONE, "Get total number of Redis commands", "2.8.13", command_count),
    cmd("getkeys", -4, LOADING | STALE, KeySpec::NONE, "Extract keys given a full Redis command", "2.8.13", command_getkeys),
    cmd("getkeysandflags", -4, LOADING | STALE, KeySpec::NONE, "Extract keys and access flags given a full Redis command", "7.0.0", command_getkeysandflags),
    cmd("list", -2, LOADING | STALE, KeySpec::NONE, "Get an array of Redis command names", "7.0.0", command_list),
    cmd("docs", -2, LOADING | STALE, KeySpec::NONE, "Get array of specific Redis command documentation", "7.0.0", command_docs),
];

/// COMMAND [subcommand [arg ...]]
pub(super) fn command(c: &mut Cmd<'_>) -> Result<()> {
    let Some(name) = c.args.peek() else {
        return command_info(c);
    };
    let Some(sub) = COMMAND_SUBCOMMANDS
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
    else {
        return Err(error::unknown_subcommand(name, "command"));
    };
    if !sub.arity_ok(c.args.argv().len()) {
        return Err(error::wrong_arity(&format!("command|{}", sub.name)));
    }
    c.args.skip(1);
    (sub.handler)(c)
}

/// COMMAND HELP
fn command_help(c: &mut Cmd<'_>) -> Result<()> {
    reply_help(
        c,
        &[
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
            "HELP",
            "    Prints this help.",
        ],
    )
}

/// A command's subcommands, COMMAND's own included (the registry does not see those, as
/// COMMAND dispatches itself).
pub(super) fn subcommands_of(spec: &'static CommandSpec) -> &'static [CommandSpec] {
    if spec.subcommands.is_empty() && spec.name == "command" {
        COMMAND_SUBCOMMANDS
    } else {
        spec.subcommands
    }
}

/// A command or subcommand found by name.
#[derive(Clone, Copy)]
struct Found {
    spec: &'static CommandSpec,
    /// The container, for a subcommand.
    parent: Option<&'static CommandSpec>,
}

impl Found {
    /// `get`, `config|get`.
    fn full_name(&self) -> Cow<'static, str> {
        match self.parent {
            Some(p) => Cow::Owned(format!("{}|{}", p.name, self.spec.name)),
            None => Cow::Borrowed(self.spec.name),
        }
    }
}

/// Look up `get` or `config|get` (any case), as COMMAND INFO and DOCS name commands.
fn find_command(c: &Cmd<'_>, name: &[u8]) -> Option<Found> {
    match memchr::memchr(b'|', name) {
        Some(bar) => {
            let (_, parent) = c.server.registry.top(&name[..bar])?;
            let sub_name = &name[bar + 1..];
            let spec = subcommands_of(parent)
                .iter()
                .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub_name))?;
            Some(Found {
                spec,
                parent: Some(parent),
            })
        }
        None => c
            .server
            .registry
            .top(name)
            .map(|(_, spec)| Found { spec, parent: None }),
    }
}

/// Flags in the order Redis 7.0 lists them; `may_replicate` is hidden, as in Redis.
const FLAG_ORDER: &[(u32, &str)] = &[
    (WRITE, "write"),
    (READONLY, "readonly"),
    (DENYOOM, "denyoom"),
    (ADMIN, "admin"),
    (PUBSUB, "pubsub"),
    (NOSCRIPT, "noscript"),
    (BLOCKING, "blocking"),
    (LOADING, "loading"),
    (STALE, "stale"),
    (SKIP_MONITOR, "skip_monitor"),
    (SKIP_SLOWLOG, "skip_slowlog"),
    (FAST, "fast"),
    (NO_AUTH, "no_auth"),
    (NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (NO_ASYNC_LOADING, "no_async_loading"),
    (NO_MULTI, "no_multi"),
    (MOVABLE_KEYS, "movablekeys"),
    (ALLOW_BUSY, "allow_busy"),
];

/// What Redis 7.0's COMMAND says of a command beyond larder's table: its tips and key specs,
/// and its first/last/step key positions (which Redis derives from the key specs, so they
/// name SPUBLISH's shard channel, a key spec flagged `not_key`). Generated:
/// `super::command_meta`.
pub(super) struct Meta {
    pub name: &'static str,
    pub keys: (i64, i64, i64),
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpecMeta],
}

/// One key spec: where the search for the keys begins and how they are found from there.
pub(super) struct KeySpecMeta {
    pub notes: Option<&'static str>,
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

pub(super) enum Begin {
    Index(i64),
    /// The keyword, and where to start looking for it (negative: from the end).
    Keyword(&'static str, i64),
    Unknown,
}

pub(super) enum Find {
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

// The constructors `command_meta.rs` is written with.
pub(super) const fn entry(
    name: &'static str,
    keys: (i64, i64, i64),
    tips: &'static [&'static str],
    key_specs: &'static [KeySpecMeta],
) -> Meta {
    Meta {
        name,
        keys,
        tips,
        key_specs,
    }
}

pub(super) const fn spec(flags: &'static [&'static str], begin: Begin, find: Find) -> KeySpecMeta {
    KeySpecMeta {
        notes: None,
        flags,
        begin,
        find,
    }
}

pub(super) const fn noted(
    notes: &'static str,
    flags: &'static [&'static str],
    begin: Begin,
    find: Find,
) -> KeySpecMeta {
    KeySpecMeta {
        notes: Some(notes),
        flags,
        begin,
        find,
    }
}

pub(super) const fn index(i: i64) -> Begin {
    Begin::Index(i)
}

pub(super) const fn keyword(keyword: &'static str, startfrom: i64) -> Begin {
    Begin::Keyword(keyword, startfrom)
}

pub(super) const fn range(lastkey: i64, keystep: i64, limit: i64) -> Find {
    Find::Range {
        lastkey,
        keystep,
        limit,
    }
}

pub(super) const fn keynum(keynumidx: i64, firstkey: i64, keystep: i64) -> Find {
    Find::Keynum {
        keynumidx,
        firstkey,
        keystep,
    }
}

fn meta(full_name: &str) -> Option<&'static Meta> {
    let all = super::command_meta::META;
    all.binary_search_by(|m| m.name.cmp(full_name))
        .ok()
        .map(|i| &all[i])
}

/// The ACL categories of a command (`acl::categories`).
fn acl_categories(found: Found) -> Vec<&'static str> {
    crate::acl::categories::names(crate::acl::categories::mask(found.spec, found.parent))
}

/// Key spec flags of a command Redis does not have, derived from its command flags.
fn key_flags(spec: &CommandSpec) -> &'static [&'static str] {
    if spec.has(WRITE) {
        &["RW", "update"]
    } else if spec.has(READONLY) {
        &["RO", "access"]
    } else {
        &["RO"]
    }
}

/// A search of type "unknown": the type and an empty spec.
fn unknown(out: &mut ReplyBuf) {
    out.bulk(b"unknown");
    out.bulk(b"spec");
    out.map(0);
}

/// Redis's key specs, as its COMMAND writes them: a set of maps.
fn write_key_specs(out: &mut ReplyBuf, specs: &[KeySpecMeta]) {
    out.set(specs.len());
    for k in specs {
        out.map(3 + usize::from(k.notes.is_some()));
        if let Some(notes) = k.notes {
            out.bulk(b"notes");
            out.bulk(notes.as_bytes());
        }
        out.bulk(b"flags");
        out.set(k.flags.len());
        for f in k.flags {
            out.simple(f);
        }
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match k.begin {
            Begin::Index(index) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(index);
            }
            Begin::Keyword(keyword, startfrom) => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(keyword.as_bytes());
                out.bulk(b"startfrom");
                out.int(startfrom);
            }
            Begin::Unknown => unknown(out),
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        match k.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => find_spec(
                out,
                b"range",
                [
                    (b"lastkey", lastkey),
                    (b"keystep", keystep),
                    (b"limit", limit),
                ],
            ),
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => find_spec(
                out,
                b"keynum",
                [
                    (b"keynumidx", keynumidx),
                    (b"firstkey", firstkey),
                    (b"keystep", keystep),
                ],
            ),
            Find::Unknown => unknown(out),
        }
    }
}

/// A `find_keys` search's type and its spec of integer fields.
fn find_spec(out: &mut ReplyBuf, kind: &[u8], fields: [(&[u8], i64); 3]) {
    out.bulk(kind);
    out.bulk(b"spec");
    out.map(fields.len());
    for (name, value) in fields {
        out.bulk(name);
        out.int(value);
    }
}

/// One COMMAND INFO entry: name, arity, flags, first key, last key, step, ACL categories,
/// tips, key specs, subcommands (Redis 7.0's shape: flags, categories, tips and key specs
/// are sets; subcommands an array, or an empty set when there are none).
fn write_command_info(c: &mut Cmd<'_>, found: Found) {
    let spec = found.spec;
    let full = found.full_name();
    let out = &mut *c.out;
    out.array(10);
    out.bulk(full.as_bytes());
    out.int(i64::from(spec.arity));
    let flag_names: Vec<&str> = FLAG_ORDER
        .iter()
        .filter(|(f, _)| spec.has(*f))
        .map(|(_, n)| *n)
        .collect();
    out.set(flag_names.len());
    for n in flag_names {
        out.simple(n);
    }
    let redis = meta(&full);
    let (first, last, step) = match redis {
        Some(m) => m.keys,
        None => (
            i64::from(spec.keys.first),
            i64::from(spec.keys.last),
            i64::from(spec.keys.step),
        ),
    };
    out.int(first);
    out.int(last);
    out.int(step);
    let cats = acl_categories(found);
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    let tips = redis.map_or(&[][..], |m| m.tips);
    out.set(tips.len());
    for t in tips {
        out.bulk(t.as_bytes());
    }
    if let Some(m) = redis {
        write_key_specs(out, m.key_specs);
    } else if spec.keys.first > 0 {
        // A command Redis does not have: one range spec from its table's key positions.
        let k = spec.keys;
        let derived = KeySpecMeta {
            notes: None,
            flags: key_flags(spec),
            begin: index(i64::from(k.first)),
            find: range(
                i64::from(if k.last < 0 { k.last } else { k.last - k.first }),
                i64::from(k.step),
                0,
            ),
        };
        write_key_specs(out, std::slice::from_ref(&derived));
    } else {
        out.set(0);
    }
    let subs = if found.parent.is_none() {
        subcommands_of(spec)
    } else {
        &[]
    };
    if subs.is_empty() {
        c.out.set(0);
    } else {
        c.out.array(subs.len());
        for s in subs {
            write_command_info(
                c,
                Found {
                    spec: s,
                    parent: Some(spec),
                },
            );
        }
    }
}

/// COMMAND, COMMAND INFO [name ...]
fn command_info(c: &mut Cmd<'_>) -> Result<()> {
    let names = c.args.rest();
    if names.is_empty() {
        let all = c.server.registry.commands();
        c.out.array(all.len());
        for &spec in all {
            write_command_info(c, Found { spec, parent: None });
        }
        return Ok(());
    }
    c.out.array(names.len());
    for name in names {
        match find_command(c, name) {
            Some(found) => write_command_info(c, found),
            None => c.out.null(),
        }
    }
    Ok(())
}

/// COMMAND COUNT
fn command_count(c: &mut Cmd<'_>) -> Result<()> {
    c.out.int(c.server.registry.commands().len() as i64);
    Ok(())
}

/// One COMMAND DOCS entry (a map): summary, since, group, and subcommands for containers.
fn write_command_docs(c: &mut Cmd<'_>, found: Found) {
    let spec = found.spec;
    let subs = if found.parent.is_none() {
        subcommands_of(spec)
    } else {
        &[]
    };
    let group = found.parent.unwrap_or(spec).group.name();
    c.out.map(3 + usize::from(!subs.is_empty()));
    c.out.bulk(b"summary");
    c.out.bulk(spec.summary.as_bytes());
    c.out.bulk(b"since");
    c.out.bulk(spec.since.as_bytes());
    c.out.bulk(b"group");
    c.out.bulk(group.as_bytes());
    if !subs.is_empty() {
        c.out.bulk(b"subcommands");
        c.out.map(subs.len());
        for s in subs {
            let sub = Found {
                spec: s,
                parent: Some(spec),
            };
            c.out.bulk(sub.full_name().as_bytes());
            write_command_docs(c, sub);
        }
    }
}

/// COMMAND DOCS [name ...]: a map from name to docs; unknown names are left out.
fn command_docs(c: &mut Cmd<'_>) -> Result<()> {
    let names = c.args.rest();
    let found: Vec<Found> = if names.is_empty() {
        c.server
            .registry
            .commands()
            .iter()
            .map(|&spec| Found { spec, parent: None })
            .collect()
    } else {
        names.iter().filter_map(|n| find_command(c, n)).collect()
    };
    c.out.map(found.len());
    for f in found {
        c.out.bulk(f.full_name().as_bytes());
        write_command_docs(c, f);
    }
    Ok(())
}

/// COMMAND LIST's filter.
enum ListFilter<'a> {
    All,
    Module,
    AclCategory(String),
    Pattern(&'a [u8]),
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
fn command_list(c: &mut Cmd<'_>) -> Result<()> {
    let filter = match c.args.rest() {
        [] => ListFilter::All,
        [filterby, kind, value] if filterby.eq_ignore_ascii_case(b"filterby") => {
            match kind.to_ascii_lowercase().as_slice() {
                b"module" => ListFilter::Module,
                b"aclcat" => ListFilter::AclCategory(format!(
                    "@{}",
                    String::from_utf8_lossy(value).to_ascii_lowercase()
                )),
                b"pattern" => ListFilter::Pattern(value),
                _ => return Err(Error::Static(error::SYNTAX)),
            }
        }
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    let keep = |f: Found, full: &str| match &filter {
        ListFilter::All => true,
        // larder loads no modules.
        ListFilter::Module => false,
        ListFilter::AclCategory(cat) => acl_categories(f).iter().any(|c| c == cat),
        ListFilter::Pattern(p) => larder_engine::glob::matches(p, full.as_bytes(), true),
    };
    let mut names: Vec<Cow<'static, str>> = Vec::new();
    for &spec in c.server.registry.commands() {
        let top = Found { spec, parent: None };
        if keep(top, spec.name) {
            names.push(Cow::Borrowed(spec.name));
        }
        for s in subcommands_of(spec) {
            let sub = Found {
                spec: s,
                parent: Some(spec),
            };
            let full = sub.full_name();
            if keep(sub, &full) {
                names.push(full);
            }
        }
    }
    c.out.array(names.len());
    for n in names {
        c.out.bulk(n.as_bytes());
    }
    Ok(())
}

/// The command a GETKEYS argument list names and the keys it would touch.
fn keys_of<'a>(c: &Cmd<'_>, argv: &[&'a [u8]]) -> Result<(Found, Vec<&'a [u8]>)> {
    let Some(&name) = argv.first() else {
        return Err(Error::Static(INVALID_COMMAND));
    };
    let (_, top) = c
        .server
        .registry
        .top(name)
        .ok_or(Error::Static(INVALID_COMMAND))?;
    let subs = subcommands_of(top);
    let found = if subs.is_empty() {
        Found {
            spec: top,
            parent: None,
        }
    } else {
        let sub_name = argv.get(1).ok_or(Error::Static(INVALID_COMMAND))?;
        let spec = subs
            .iter()
            .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub_name))
            .ok_or(Error::Static(INVALID_COMMAND))?;
        Found {
            spec,
            parent: Some(top),
        }
    };
    let spec = found.spec;
    if spec.keys.first <= 0 && !spec.has(MOVABLE_KEYS) {
        return Err(Error::Static(NO_KEY_ARGS));
    }
    if !spec.arity_ok(argv.len()) {
        return Err(Error::Static(INVALID_ARG_COUNT));
    }
    let mut keys = spec.keys.keys(argv);
    keys.extend(spec.keys.scope.option_keys(argv));
    if let crate::locks::Scope::NumKeys { at } | crate::locks::Scope::Script { at } =
        spec.keys.scope
    {
        // The keys after a `numkeys` argument (ZUNIONSTORE's, LMPOP's, SINTERCARD's).
        let at = usize::from(at);
        let n = argv
            .get(at)
            .and_then(|a| crate::args::parse_i64(a))
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0 && at + n < argv.len())
            .ok_or(Error::Static(INVALID_ARGS))?;
        keys.extend_from_slice(&argv[at + 1..=at + n]);
    }
    if keys.is_empty() && !spec.has(NO_MANDATORY_KEYS) {
        return Err(Error::Static(INVALID_ARGS));
    }
    Ok((found, keys))
}

/// COMMAND GETKEYS command [arg ...]
fn command_getkeys(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.rest();
    let (_, keys) = keys_of(c, argv)?;
    c.out.array(keys.len());
    for k in keys {
        c.out.bulk(k);
    }
    Ok(())
}

/// COMMAND GETKEYSANDFLAGS command [arg ...]: the keys with the flags of Redis 7.0.15's key
/// specs (`acl::keys`, what ACL checks them with).
fn command_getkeysandflags(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.rest();
    keys_of(c, argv)?;
    let resolved = c.server.registry.resolve(argv)?;
    let mut keys = Vec::new();
    crate::acl::keys::keys_with_flags(&resolved, argv, &mut keys);
    c.out.array(keys.len());
    for (index, key_flags) in keys {
        c.out.array(2);
        c.out.bulk(argv[index]);
        let names = crate::acl::keys::flags::NAMES
            .iter()
            .filter(|(f, _)| key_flags & f != 0);
        c.out.set(names.clone().count());
        for (_, name) in names {
            c.out.simple(name);
        }
    }
    Ok(())
}
