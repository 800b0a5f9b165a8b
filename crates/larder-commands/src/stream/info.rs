//! XINFO STREAM key [FULL [COUNT count]] | HELP, and the container that holds the groups'
//! XINFO GROUPS and XINFO CONSUMERS (in `groups/info.rs`).

use larder_engine::stream::StreamId;

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

use super::{groups, read_stream, reply_entry, reply_id, reply_range, stream_at};

/// The key of an XINFO subcommand: argv[2].
pub(crate) const SUB_KEY: KeySpec = KeySpec {
    first: 2,
    last: 2,
    step: 1,
    scope: Scope::Keys,
};

#[rustfmt::skip]
static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("consumers", 4, READONLY, SUB_KEY, Group::Stream, "List the consumers in a consumer group", "5.0.0", groups::xinfo_consumers),
    CommandSpec::new("groups", 3, READONLY, SUB_KEY, Group::Stream, "List the consumer groups of a stream", "5.0.0", groups::xinfo_groups),
    CommandSpec::new("stream", -3, READONLY, SUB_KEY, Group::Stream, "Get information about a stream", "5.0.0", xinfo_stream),
    CommandSpec::new("help", 2, LOADING | STALE, KeySpec::NONE, Group::Stream, "Show helpful text about the different subcommands", "5.0.0", help),
];

pub(super) const XINFO: CommandSpec = CommandSpec {
    name: "xinfo",
    arity: -2,
    flags: 0,
    keys: KeySpec::NONE,
    group: Group::Stream,
    summary: "A container for stream introspection commands",
    since: "5.0.0",
    handler: container,
    subcommands: SUBCOMMANDS,
};

fn container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static("ERR unknown subcommand. Try XINFO HELP."))
}

/// XINFO HELP
fn help(c: &mut Cmd<'_>) -> Result<()> {
    crate::server::reply_help(
        c,
        &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Print this help.",
        ],
    )
}

/// XINFO STREAM key [FULL [COUNT count]]
fn xinfo_stream(c: &mut Cmd<'_>) -> Result<()> {
    let argv = c.args.argv();
    let key = argv[2];
    let opts = &argv[3..];
    let full = !opts.is_empty();
    let mut count = 10usize;
    if full {
        let syntax = || crate::server::subcommand_syntax_error(c, "XINFO");
        if (opts.len() != 1 && opts.len() != 3) || !opts[0].eq_ignore_ascii_case(b"full") {
            return Err(syntax());
        }
        if opts.len() == 3 {
            if !opts[1].eq_ignore_ascii_case(b"count") {
                return Err(syntax());
            }
            let n = parse_i64(opts[2]).ok_or(Error::Static(error::NOT_INTEGER))?;
            count = usize::try_from(n).unwrap_or(10);
        }
    }
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_stream(c, &mut shard, key, hash)? else {
        return Err(Error::Static(error::NO_SUCH_KEY));
    };
    let s = stream_at(&shard, slot)?;
    let out = &mut *c.out;
    out.map(if full { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    // Redis counts its radix tree's inner nodes, which larder does not have: the stream's
    // node count stands in.
    out.int(s.node_count() as i64);
    out.bulk(b"last-generated-id");
    reply_id(out, s.last_id());
    out.bulk(b"max-deleted-entry-id");
    reply_id(out, s.max_deleted_id());
    out.bulk(b"entries-added");
    out.int(s.entries_added() as i64);
    out.bulk(b"recorded-first-entry-id");
    reply_id(out, s.first_id());
    if full {
        out.bulk(b"entries");
        reply_range(out, s, StreamId::MIN, StreamId::MAX, count, false);
        out.bulk(b"groups");
        groups::reply_full_groups(out, s, count);
    } else {
        out.bulk(b"groups");
        out.int(s.groups.as_ref().map_or(0, |g| g.len()) as i64);
        for (name, last) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            out.bulk(name);
            match s.edge(last) {
                Some((id, fields)) => reply_entry(out, id, fields),
                None => out.null(),
            }
        }
    }
    Ok(())
}
