//! Pub/sub: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB SSUBSCRIBE SUNSUBSCRIBE
//! SPUBLISH, with Redis 7.0 semantics.
//!
//! The [`PubSub`] registry maps channels and patterns to subscribed clients. A publisher on any
//! thread encodes the message once per protocol and posts it into each subscriber's outbox
//! ([`crate::mail`]); the subscriber's worker writes it. Two messages from one publisher reach
//! every subscriber in the order they were published, since each publish posts to every
//! outbox before it returns. A connection's own subscriptions live in its
//! [`Subscriptions`]; in RESP2 a subscribed connection may only run the (un)subscribe
//! commands, PING, QUIT and RESET, as in Redis; in RESP3 messages are push frames interleaved
//! with replies.
//!
//! Channels and patterns that start with `__values@` are also value subscriptions: the
//! registry tells [`crate::values::Values`] about them, which posts value events to them.
//!
//! larder has one node, so the shard channels of SSUBSCRIBE and SPUBLISH are a registry of
//! their own with the same delivery.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use larder_engine::glob;
use parking_lot::RwLock;

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::mail::{Limit, Refused};
use crate::state::{ClientHandle, Server};
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

/// One client's subscriptions.
#[derive(Default, Debug)]
pub struct Subscriptions {
    pub channels: BTreeSet<Vec<u8>>,
    pub patterns: BTreeSet<Vec<u8>>,
    pub shard_channels: BTreeSet<Vec<u8>>,
}

impl Subscriptions {
    /// Channels plus patterns: the count Redis's (P)SUBSCRIBE replies carry.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Whether the connection is in subscribed mode.
    pub fn any(&self) -> bool {
        self.count() + self.shard_channels.len() > 0
    }
}

type Subscribers = HashMap<Vec<u8>, Vec<Arc<ClientHandle>>>;

/// Every subscription of every client.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    shard_channels: RwLock<Subscribers>,
    /// Output limit of the pubsub class (`client-output-buffer-limit`), kept parsed.
    limit: RwLock<Limit>,
    /// Value events: told about every `__values@` channel and pattern subscription.
    values: Arc<crate::values::Values>,
}

/// Which registry a (un)subscription is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

impl PubSub {
    fn registry(&self, kind: Kind) -> &RwLock<Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    /// Set the pubsub class's output limit.
    pub fn set_limit(&self, limit: Limit) {
        *self.limit.write() = limit;
    }

    /// The value-events consumer (`__values@` subscriptions).
    pub fn values(&self) -> &Arc<crate::values::Values> {
        &self.values
    }

    fn add(&self, kind: Kind, name: &[u8], client: &Arc<ClientHandle>) {
        self.registry(kind)
            .write()
            .entry(name.to_vec())
            .or_default()
            .push(Arc::clone(client));
        if kind != Kind::Shard && crate::values::is_value_name(name) {
            self.values.add(kind == Kind::Pattern, name, client);
        }
    }

    fn remove(&self, kind: Kind, name: &[u8], id: u64) {
        {
            let mut reg = self.registry(kind).write();
            if let Some(subs) = reg.get_mut(name) {
                subs.retain(|c| c.id != id);
                if subs.is_empty() {
                    reg.remove(name);
                }
            }
        }
        if kind != Kind::Shard && crate::values::is_value_name(name) {
            self.values.remove(kind == Kind::Pattern, name, id);
        }
    }

    /// Subscribe a client that runs no SUBSCRIBE command (the HTTP door's Server-Sent
    /// Events) to a channel or, with `pattern`, a pattern; the caller records it in the
    /// connection's [`Subscriptions`] so that [`PubSub::forget`] drops it.
    pub fn subscribe_client(&self, pattern: bool, name: &[u8], client: &Arc<ClientHandle>) {
        let kind = if pattern {
            Kind::Pattern
        } else {
            Kind::Channel
        };
        self.add(kind, name, client);
    }

    /// Close the connections of `user` subscribed to a channel or pattern the user may no
    /// longer use, after its rules changed (Redis 7.0's `ACLKillPubsubClientsIfNeeded`).
    pub fn disconnect_unpermitted(&self, user: &crate::acl::User) {
        for (kind, is_pattern) in [
            (Kind::Channel, false),
            (Kind::Pattern, true),
            (Kind::Shard, false),
        ] {
            for (name, clients) in self.registry(kind).read().iter() {
                if user.check_channel(name, is_pattern) {
                    continue;
                }
                for c in clients {
                    if **c.user.lock() == *user.name {
                        crate::state::kill_client(c);
                    }
                }
            }
        }
    }

    /// Drop every subscription of a client that is going away.
    pub fn forget(&self, subs: &Subscriptions, id: u64) {
        for c in &subs.channels {
            self.remove(Kind::Channel, c, id);
        }
        for p in &subs.patterns {
            self.remove(Kind::Pattern, p, id);
        }
        for c in &subs.shard_channels {
            self.remove(Kind::Shard, c, id);
        }
    }

    /// Publish `message` on `channel`: to its subscribers, then to the subscribers of every
    /// matching pattern. Returns how many clients it was posted to.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let limit = *self.limit.read();
        let now_ms = larder_engine::now_ms();
        let mut n = 0;
        let mut frames = Frames::default();
        if let Some(subs) = self.channels.read().get(channel) {
            for c in subs {
                let frame = frames.get(c, |p, out| encode(p, out, &[b"message", channel, message]));
                n += usize::from(post(c, limit, now_ms, frame));
            }
        }
        let patterns = self.patterns.read();
        for (pattern, subs) in patterns.iter() {
            if !glob::matches(pattern, channel, false) {
                continue;
            }
            let mut frames = Frames::default();
            for c in subs {
                let frame = frames.get(c, |p, out| {
                    encode(p, out, &[b"pmessage", pattern, channel, message]);
                });
                n += usize::from(post(c, limit, now_ms, frame));
            }
        }
        n
    }

    /// SPUBLISH: shard channel subscribers only.
    pub fn spublish(&self, channel: &[u8], message: &[u8]) -> usize {
        let limit = *self.limit.read();
        let now_ms = larder_engine::now_ms();
        let mut n = 0;
        let mut frames = Frames::default();
        if let Some(subs) = self.shard_channels.read().get(channel) {
            for c in subs {
                let frame =
                    frames.get(c, |p, out| encode(p, out, &[b"smessage", channel, message]));
                n += usize::from(post(c, limit, now_ms, frame));
            }
        }
        n
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS.
    fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = self
            .registry(kind)
            .read()
            .keys()
            .filter(|k| pattern.is_none_or(|p| glob::matches(p, k, false)))
            .cloned()
            .collect();
        v.sort();
        v
    }

    fn count_of(&self, kind: Kind, name: &[u8]) -> usize {
        self.registry(kind).read().get(name).map_or(0, Vec::len)
    }

    /// Channels, patterns and shard channels with subscribers (INFO stats).
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.channels.read().len(),
            self.patterns.read().len(),
            self.shard_channels.read().len(),
        )
    }

    /// PUBSUB NUMPAT: patterns with at least one subscriber.
    fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }
}

/// The `ClientHandle::resp` of a subscriber that takes its messages as Server-Sent Events
/// (the HTTP door): [`encode`] writes its frames with the encoder installed by
/// [`set_event_encoder`].
pub const PROTO_EVENTS: u8 = 0;

/// Writes a message for a [`PROTO_EVENTS`] subscriber: `parts` as [`encode`] gets them.
pub type EventEncoder = fn(&[&[u8]], &mut Vec<u8>);

static EVENT_ENCODER: OnceLock<EventEncoder> = OnceLock::new();

/// Install the encoder for [`PROTO_EVENTS`] subscribers (the first one installed stays).
pub fn set_event_encoder(encoder: EventEncoder) {
    let _ = EVENT_ENCODER.set(encoder);
}

/// A message encoded for RESP2, RESP3 and events, each at most once per publish.
#[derive(Default)]
struct Frames {
    resp2: Option<Vec<u8>>,
    resp3: Option<Vec<u8>>,
    events: Option<Vec<u8>>,
}

impl Frames {
    fn get(&mut self, client: &ClientHandle, make: impl Fn(u8, &mut Vec<u8>)) -> &[u8] {
        let proto = client.resp.load(Ordering::Relaxed);
        let slot = match proto {
            3 => &mut self.resp3,
            PROTO_EVENTS => &mut self.events,
            _ => &mut self.resp2,
        };
        slot.get_or_insert_with(|| {
            let mut v = Vec::new();
            make(proto, &mut v);
            v
        })
    }
}

/// Post an encoded frame to a client; true if it was queued. A client over its output limit
/// is closed.
fn post(client: &ClientHandle, limit: Limit, now_ms: u64, frame: &[u8]) -> bool {
    let unsent = client.output_buf_bytes.load(Ordering::Relaxed);
    match client.mail.post(client.id, limit, unsent, now_ms, |out| {
        out.extend_from_slice(frame)
    }) {
        Ok(()) => true,
        Err(Refused::OverLimit) => {
            crate::mail::note_over_limit(&client.addr, client.id, "pubsub");
            crate::state::kill_client(client);
            false
        }
        Err(Refused::Closed | Refused::OverBudget) => false,
    }
}

/// Encode a pub/sub frame: an array in RESP2, a push in RESP3, of bulk strings; for an
/// events subscriber, what the installed encoder writes.
pub fn encode(proto: u8, out: &mut Vec<u8>, parts: &[&[u8]]) {
    if proto == PROTO_EVENTS {
        if let Some(encoder) = EVENT_ENCODER.get() {
            encoder(parts, out);
        }
        return;
    }
    out.push(if proto == 3 { b'>' } else { b'*' });
    out.extend_from_slice(parts.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for p in parts {
        out.push(b'$');
        out.extend_from_slice(p.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
}

/// A (un)subscribe confirmation: `[word, name or nil, count]`, a push in RESP3.
fn confirm(c: &mut Cmd<'_>, word: &[u8], name: Option<&[u8]>, count: usize) {
    c.out.push(3);
    c.out.bulk(word);
    match name {
        Some(n) => c.out.bulk(n),
        None => c.out.null(),
    }
    c.out.int(count as i64);
}

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
        Group::Pubsub,
        summary,
        since,
        handler,
    )
}

const fn sub(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    cmd(
        name,
        arity,
        PUBSUB | LOADING | STALE,
        summary,
        "2.8.0",
        handler,
    )
}

/// PUBSUB's subcommands.
#[rustfmt::skip]
static PUBSUB_SUBCOMMANDS: &[CommandSpec] = &[
    sub("channels", -2, "List active channels", pubsub_channels),
    sub("numsub", -2, "Get the count of subscribers for channels", pubsub_numsub),
    sub("numpat", 2, "Get the count of unique patterns pattern subscriptions", pubsub_numpat),
    sub("shardchannels", -2, "List active shard channels", pubsub_shardchannels),
    sub("shardnumsub", -2, "Get the count of subscribers for shard channels", pubsub_shardnumsub),
    cmd("help", 2, LOADING | STALE, "Show helpful text about the different subcommands", "6.2.0", pubsub_help),
];

/// The pub/sub family's table (Redis 7.0's COMMAND INFO).
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("subscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, "Listen for messages published to the given channels", "2.0.0", subscribe),
    cmd("unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, "Stop listening for messages posted to the given channels", "2.0.0", unsubscribe),
    cmd("psubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, "Listen for messages published to channels matching the given patterns", "2.0.0", psubscribe),
    cmd("punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, "Stop listening for messages posted to channels matching the given patterns", "2.0.0", punsubscribe),
    cmd("publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, "Post a message to a channel", "2.0.0", publish),
    cmd("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE, "Listen for messages published to the given shard channels", "7.0.0", ssubscribe),
    cmd("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE, "Stop listening for messages posted to the given shard channels", "7.0.0", sunsubscribe),
    cmd("spublish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, "Post a message to a shard channel", "7.0.0", spublish),
    CommandSpec {
        name: "pubsub",
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: Group::Pubsub,
        summary: "A container for Pub/Sub commands",
        since: "2.8.0",
        handler: pubsub_container,
        subcommands: PUBSUB_SUBCOMMANDS,
    },
];

fn pubsub_container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static(error::SYNTAX))
}

/// Commands a RESP2 connection may run while it has subscriptions.
pub fn allowed_when_subscribed(full_name: &str) -> bool {
    matches!(
        full_name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

fn subscribe_generic(c: &mut Cmd<'_>, kind: Kind) -> Result<()> {
    let server: &Server = c.server;
    for name in c.args.rest() {
        let set = match kind {
            Kind::Channel => &mut c.conn.subs.channels,
            Kind::Pattern => &mut c.conn.subs.patterns,
            Kind::Shard => &mut c.conn.subs.shard_channels,
        };
        if set.insert(name.to_vec()) {
            server.pubsub.add(kind, name, &c.conn.handle);
        }
        let count = match kind {
            Kind::Shard => c.conn.subs.shard_channels.len(),
            _ => c.conn.subs.count(),
        };
        confirm(c, kind.subscribe_word(), Some(name), count);
    }
    c.conn.handle.tracking.set_subscribed(c.conn.subs.any());
    Ok(())
}

fn unsubscribe_generic(c: &mut Cmd<'_>, kind: Kind) -> Result<()> {
    let server: &Server = c.server;
    let names: Vec<Vec<u8>> = if c.args.remaining() == 0 {
        let set = match kind {
            Kind::Channel => &c.conn.subs.channels,
            Kind::Pattern => &c.conn.subs.patterns,
            Kind::Shard => &c.conn.subs.shard_channels,
        };
        set.iter().cloned().collect()
    } else {
        c.args.rest().iter().map(|a| a.to_vec()).collect()
    };
    if names.is_empty() {
        let count = match kind {
            Kind::Shard => c.conn.subs.shard_channels.len(),
            _ => c.conn.subs.count(),
        };
        confirm(c, kind.unsubscribe_word(), None, count);
        return Ok(());
    }
    for name in names {
        let set = match kind {
            Kind::Channel => &mut c.conn.subs.channels,
            Kind::Pattern => &mut c.conn.subs.patterns,
            Kind::Shard => &mut c.conn.subs.shard_channels,
        };
        if set.remove(&name) {
            server.pubsub.remove(kind, &name, c.conn.id);
        }
        let count = match kind {
            Kind::Shard => c.conn.subs.shard_channels.len(),
            _ => c.conn.subs.count(),
        };
        confirm(c, kind.unsubscribe_word(), Some(&name), count);
    }
    c.conn.handle.tracking.set_subscribed(c.conn.subs.any());
    Ok(())
}

/// SUBSCRIBE channel [channel ...]
fn subscribe(c: &mut Cmd<'_>) -> Result<()> {
    subscribe_generic(c, Kind::Channel)
}

/// UNSUBSCRIBE [channel ...]
fn unsubscribe(c: &mut Cmd<'_>) -> Result<()> {
    unsubscribe_generic(c, Kind::Channel)
}

/// PSUBSCRIBE pattern [pattern ...]
fn psubscribe(c: &mut Cmd<'_>) -> Result<()> {
    subscribe_generic(c, Kind::Pattern)
}

/// PUNSUBSCRIBE [pattern ...]
fn punsubscribe(c: &mut Cmd<'_>) -> Result<()> {
    unsubscribe_generic(c, Kind::Pattern)
}

/// SSUBSCRIBE shardchannel [shardchannel ...]
fn ssubscribe(c: &mut Cmd<'_>) -> Result<()> {
    subscribe_generic(c, Kind::Shard)
}

/// SUNSUBSCRIBE [shardchannel ...]
fn sunsubscribe(c: &mut Cmd<'_>) -> Result<()> {
    unsubscribe_generic(c, Kind::Shard)
}

/// PUBLISH channel message
fn publish(c: &mut Cmd<'_>) -> Result<()> {
    let channel = c.args.next_arg()?;
    let message = c.args.next_arg()?;
    let n = c.server.pubsub.publish(channel, message);
    c.out.int(n as i64);
    Ok(())
}

/// SPUBLISH shardchannel message
fn spublish(c: &mut Cmd<'_>) -> Result<()> {
    let channel = c.args.next_arg()?;
    let message = c.args.next_arg()?;
    let n = c.server.pubsub.spublish(channel, message);
    c.out.int(n as i64);
    Ok(())
}

fn names_reply(c: &mut Cmd<'_>, kind: Kind) -> Result<()> {
    // At most one pattern; more is Redis's unknown-subcommand error.
    if c.args.remaining() > 1 {
        return Err(crate::server::subcommand_syntax_error(c, "PUBSUB"));
    }
    let pattern = c.args.opt();
    let names = c.server.pubsub.names(kind, pattern);
    c.out.array(names.len());
    for n in &names {
        c.out.bulk(n);
    }
    Ok(())
}

fn counts_reply(c: &mut Cmd<'_>, kind: Kind) -> Result<()> {
    let names = c.args.rest();
    // A flat array of name, count pairs in both protocols, as Redis 7.0's.
    c.out.array(names.len() * 2);
    for n in names {
        c.out.bulk(n);
        c.out.int(c.server.pubsub.count_of(kind, n) as i64);
    }
    Ok(())
}

/// PUBSUB CHANNELS [pattern]
fn pubsub_channels(c: &mut Cmd<'_>) -> Result<()> {
    names_reply(c, Kind::Channel)
}

/// PUBSUB SHARDCHANNELS [pattern]
fn pubsub_shardchannels(c: &mut Cmd<'_>) -> Result<()> {
    names_reply(c, Kind::Shard)
}

/// PUBSUB NUMSUB [channel ...]
fn pubsub_numsub(c: &mut Cmd<'_>) -> Result<()> {
    counts_reply(c, Kind::Channel)
}

/// PUBSUB SHARDNUMSUB [shardchannel ...]
fn pubsub_shardnumsub(c: &mut Cmd<'_>) -> Result<()> {
    counts_reply(c, Kind::Shard)
}

/// PUBSUB NUMPAT
fn pubsub_numpat(c: &mut Cmd<'_>) -> Result<()> {
    c.out.int(c.server.pubsub.pattern_count() as i64);
    Ok(())
}

/// PUBSUB HELP
fn pubsub_help(c: &mut Cmd<'_>) -> Result<()> {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, LINES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_arrays_in_resp2_and_pushes_in_resp3() {
        let mut v = Vec::new();
        encode(2, &mut v, &[b"message", b"ch", b"hi"]);
        assert_eq!(v, b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
        v.clear();
        encode(3, &mut v, &[b"message", b"ch", b""]);
        assert_eq!(v, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n");
    }
}
