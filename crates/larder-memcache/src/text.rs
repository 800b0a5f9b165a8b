//! The memcached text protocol, server side: [`parse_text`] reads one classic or meta command
//! (storage commands with their data block) from the front of a buffer, following
//! memcached 1.6's `process_command_ascii` token by token, error text by error text.
//!
//! Lines end in `\n`, optionally preceded by `\r`; tokens are separated by spaces only (a tab
//! is part of a token, as in memcached). Data blocks are exactly `<bytes>` bytes followed by
//! `\r\n`.

use memchr::memchr;

use crate::error::{KeySpan, TextError, TextErrorKind};
use crate::meta::{self, MetaArithmetic, MetaDelete, MetaGet, MetaKey, MetaSet};
use crate::number::{parse_i32, parse_u32, parse_u64};
use crate::Limits;

/// An iterator over the space-separated tokens left on a command line: the keys of a get,
/// the arguments of `stats`. `Copy`, so it can be walked more than once. Two `Tokens` are
/// equal when they yield the same tokens.
#[derive(Clone, Copy)]
pub struct Tokens<'a> {
    rest: &'a [u8],
}

impl PartialEq for Tokens<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.eq_tokens(*other)
    }
}

impl std::fmt::Debug for Tokens<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.map(String::from_utf8_lossy))
            .finish()
    }
}

impl Eq for Tokens<'_> {}

/// The keys of a `get`, `gets`, `gat` or `gats`, already checked against the key rules.
pub type Keys<'a> = Tokens<'a>;

impl<'a> Tokens<'a> {
    pub(crate) fn new(rest: &'a [u8]) -> Self {
        Self { rest }
    }

    /// The unread part of the line, leading spaces removed.
    pub fn as_bytes(&self) -> &'a [u8] {
        let start = self
            .rest
            .iter()
            .position(|&b| b != b' ')
            .unwrap_or(self.rest.len());
        &self.rest[start..]
    }

    /// Whether no token is left.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    fn eq_tokens(self, other: Tokens<'_>) -> bool {
        Iterator::eq(self, other)
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.as_bytes();
        if rest.is_empty() {
            self.rest = rest;
            return None;
        }
        let end = memchr(b' ', rest).unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// How a storage command stores its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Store unconditionally.
    Set,
    /// Store only if the key holds no live item (else NOT_STORED).
    Add,
    /// Store only if the key holds a live item (else NOT_STORED).
    Replace,
    /// Add the data after the existing value, keeping flags and TTL (NOT_STORED if missing).
    Append,
    /// Add the data before the existing value, keeping flags and TTL (NOT_STORED if missing).
    Prepend,
    /// Store only if the item's CAS equals `compare_cas` (EXISTS if it differs, NOT_FOUND
    /// if there is no item).
    Cas,
}

/// A classic storage command with its data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Store<'a> {
    /// set, add, replace, append, prepend or cas.
    pub mode: StoreMode,
    /// The key.
    pub key: &'a [u8],
    /// Client flags, stored with the item (ignored by append/prepend).
    pub flags: u32,
    /// Exptime as memcached reads it: a 64-bit parse narrowed to 32 bits (ignored by
    /// append/prepend). See [`crate::resolve_exptime`].
    pub exptime: i64,
    /// The data block, without its `\r\n`.
    pub data: &'a [u8],
    /// The `<cas unique>` of a `cas` command; `None` for the others.
    pub compare_cas: Option<u64>,
    /// `noreply`: send nothing back, errors included.
    pub noreply: bool,
}

/// One parsed text or meta request. Keys and data are borrowed from the parsed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextRequest<'a> {
    /// `get <key>*` (and the ancient alias `bget`): `VALUE` lines for the hits, then `END`.
    Get {
        /// The keys, at least one.
        keys: Keys<'a>,
    },
    /// `gets <key>*`: as get, with each item's CAS.
    Gets {
        /// The keys, at least one.
        keys: Keys<'a>,
    },
    /// `gat <exptime> <key>*`: get and touch. No keys is allowed (just `END`).
    Gat {
        /// New exptime for every hit.
        exptime: i64,
        /// The keys, possibly none.
        keys: Keys<'a>,
    },
    /// `gats <exptime> <key>*`: get and touch, with CAS.
    Gats {
        /// New exptime for every hit.
        exptime: i64,
        /// The keys, possibly none.
        keys: Keys<'a>,
    },
    /// set, add, replace, append, prepend, cas.
    Store(Store<'a>),
    /// `delete <key> [0] [noreply]`: `DELETED` or `NOT_FOUND`.
    Delete {
        /// The key.
        key: &'a [u8],
        /// Answer nothing.
        noreply: bool,
    },
    /// `incr <key> <delta> [noreply]`: the new value, `NOT_FOUND`, or a non-numeric error.
    Incr {
        /// The key.
        key: &'a [u8],
        /// Amount to add, wrapping at 2^64.
        delta: u64,
        /// Answer nothing.
        noreply: bool,
    },
    /// `decr <key> <delta> [noreply]`: as incr, stopping at 0.
    Decr {
        /// The key.
        key: &'a [u8],
        /// Amount to subtract.
        delta: u64,
        /// Answer nothing.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`: `TOUCHED` or `NOT_FOUND`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New exptime.
        exptime: i64,
        /// Answer nothing.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`: `OK`.
    FlushAll {
        /// Delay as an exptime; 0 or negative means now.
        delay: i64,
        /// Answer nothing.
        noreply: bool,
    },
    /// `verbosity <level> [noreply]`: `OK`.
    Verbosity {
        /// The level (memcached caps it at 2).
        level: u32,
        /// Answer nothing.
        noreply: bool,
    },
    /// `version`: `VERSION <version>`.
    Version,
    /// `quit`: close the connection without answering.
    Quit,
    /// `stats [args]`: `STAT <name> <value>` lines and `END`.
    Stats {
        /// The arguments ("settings", "items", "slabs", "conns", "reset", "detail on", ...).
        args: Tokens<'a>,
    },
    /// `mg`.
    MetaGet(MetaGet<'a>),
    /// `ms` with its data block.
    MetaSet(MetaSet<'a>),
    /// `md`.
    MetaDelete(MetaDelete<'a>),
    /// `ma`.
    MetaArithmetic(MetaArithmetic<'a>),
    /// `mn`: answer `MN`, which also marks the end of a pipeline of quiet meta commands.
    MetaNoop,
    /// `me <key> [b]`: a human-readable dump of an item's metadata, or `EN`.
    MetaDebug {
        /// The key.
        key: MetaKey<'a>,
    },
    /// An operator's command (`lru_crawler`, `watch`, `cache_memlimit`, `slabs`, `lru`): the
    /// server parses its arguments, which differ per command and subcommand.
    Admin {
        /// Which command.
        command: AdminCommand,
        /// The words after the command's name.
        args: Tokens<'a>,
    },
}

/// The operators' commands, whose arguments the server reads ([`TextRequest::Admin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// `lru_crawler <subcommand> ...`: metadump, mgdump, crawl, enable, disable, sleep, tocrawl.
    LruCrawler,
    /// `watch [fetchers|mutations|evictions|connevents ...]`.
    Watch,
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit,
    /// `slabs automove <0|1|2>`, `slabs reassign <src> <dst>`.
    Slabs,
    /// `lru <tune|mode|temp_ttl> ...`.
    Lru,
}

impl TextRequest<'_> {
    /// Whether the request may change the keyspace (a TTL included), as Redis's `write`
    /// flag: what `CLIENT PAUSE WRITE` holds back. `mg` counts when it touches (`T`) or
    /// vivifies (`N`); plain reads, `stats`, `version` and the like do not.
    pub fn writes(&self) -> bool {
        match self {
            TextRequest::Get { .. }
            | TextRequest::Gets { .. }
            | TextRequest::Verbosity { .. }
            | TextRequest::Version
            | TextRequest::Quit
            | TextRequest::Stats { .. }
            | TextRequest::MetaNoop
            | TextRequest::MetaDebug { .. } => false,
            // Shrinking the memory limit evicts, but that is the server's doing, not a
            // client's write (memcached's `cache_memlimit` is not held back either).
            TextRequest::Admin { .. } => false,
            TextRequest::MetaGet(g) => g.flags.ttl.is_some() || g.flags.vivify_ttl.is_some(),
            TextRequest::Gat { .. }
            | TextRequest::Gats { .. }
            | TextRequest::Store(_)
            | TextRequest::Delete { .. }
            | TextRequest::Incr { .. }
            | TextRequest::Decr { .. }
            | TextRequest::Touch { .. }
            | TextRequest::FlushAll { .. }
            | TextRequest::MetaSet(_)
            | TextRequest::MetaDelete(_)
            | TextRequest::MetaArithmetic(_) => true,
        }
    }

    /// Whether a classic command asked for `noreply`. Meta commands have their own `q`
    /// rules, applied by [`crate::TextWriter`]; this is false for them.
    pub fn noreply(&self) -> bool {
        match self {
            TextRequest::Store(s) => s.noreply,
            TextRequest::Delete { noreply, .. }
            | TextRequest::Incr { noreply, .. }
            | TextRequest::Decr { noreply, .. }
            | TextRequest::Touch { noreply, .. }
            | TextRequest::FlushAll { noreply, .. }
            | TextRequest::Verbosity { noreply, .. } => *noreply,
            _ => false,
        }
    }
}

/// Whether a key is acceptable on the text protocol: not longer than the limit, and without
/// control characters (memcached checks only the length, and cuts a key at a NUL).
pub(crate) fn key_ok(key: &[u8], limits: &Limits) -> bool {
    key.len() <= limits.key_len_max && !key.iter().any(|&b| b < 0x20 || b == 0x7f)
}

/// Whether a line starts with `get ` or `gets ` after at most 100 spaces: memcached lets
/// those lines grow beyond the normal line limit. `None` while `line` is too short to tell
/// (only spaces so far, or a beginning of `gets `).
fn get_line_prefix(line: &[u8]) -> Option<bool> {
    let spaces = line.iter().take_while(|&&b| b == b' ').count();
    if spaces > 100 {
        return Some(false);
    }
    let rest = &line[spaces..];
    if rest.starts_with(b"get ") || rest.starts_with(b"gets ") {
        return Some(true);
    }
    if b"gets ".starts_with(rest) {
        return None;
    }
    Some(false)
}

/// The first tokens of a line (up to `N`) and the total count.
struct Args<'a, const N: usize> {
    toks: [&'a [u8]; N],
    count: usize,
}

impl<'a, const N: usize> Args<'a, N> {
    fn collect(tokens: Tokens<'a>) -> Self {
        let mut toks = [&b""[..]; N];
        let mut count = 0;
        for t in tokens {
            if count < N {
                toks[count] = t;
            }
            count += 1;
        }
        Self { toks, count }
    }

    /// memcached's `set_noreply_maybe`: the last token is `noreply`.
    fn noreply(&self) -> bool {
        self.count > 0 && self.count <= N && self.toks[self.count - 1] == b"noreply"
    }
}

/// Parses one text-protocol request (classic or meta) from the front of `buf`.
///
/// Returns `Ok(None)` while the command line, or a storage command's data block, is not
/// complete; then the request and the number of bytes it took. A request memcached refuses
/// comes back as a [`TextError`] holding the exact reply and the number of bytes to skip:
///
/// - errors in the command line skip the line only, as in memcached: after a malformed
///   `set` line its data block is read as the next command (and answered `ERROR`);
/// - an item over `item_size_max` ([`Limits::item_fits`]: header, key and value counted
///   as memcached counts them) answers `SERVER_ERROR object too large for cache` at once
///   and skips line, data and `\r\n` (memcached's "swallow"), whether or not they have
///   arrived; after a `set` or `ms` the key's current item must go too
///   ([`TextError::stale_key`]);
/// - a data block not followed by `\r\n` answers `CLIENT_ERROR bad data chunk` once the
///   block has arrived, and skips the line and `<bytes>` + 2 bytes, exactly what memcached
///   consumes (so a block one byte too long leaves its last byte and `\n` to be read as a
///   command);
/// - ms errors found after the data length (bad flags, bad mode, bad key) skip the data
///   too, as memcached does;
/// - a line over [`Limits::line_len_max`] (or [`Limits::get_line_len_max`] for get/gets),
///   or an HTTP request line, closes the connection without a reply.
///
/// Deliberate differences from memcached: keys with control characters are refused with
/// `CLIENT_ERROR bad command line format` (on a storage line, the data is skipped too);
/// base64 keys must be strictly valid; lines are judged by length alone, where memcached's
/// verdict depends on how the line was split into reads (it serves a line that arrives
/// whole in one read of its 16 KiB buffer, and closes once it holds more than 2048 bytes
/// without a newline: larder waits for 16 KiB).
pub fn parse_text<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(TextRequest<'a>, usize)>, TextError> {
    let longest = limits.line_len_max.max(limits.get_line_len_max);
    let scan_len = buf.len().min(longest);
    let Some(nl) = memchr(b'\n', &buf[..scan_len]) else {
        // The line, its '\n' still to come, is at least buf.len() + 1 bytes long.
        let over = |max: usize| buf.len() >= max;
        let too_long = over(limits.line_len_max)
            && match get_line_prefix(buf) {
                Some(true) => over(limits.get_line_len_max),
                Some(false) => true,
                None => false,
            };
        if too_long {
            return Err(TextError::new(TextErrorKind::LineTooLong, buf.len()));
        }
        return Ok(None);
    };
    let line_end = nl + 1;
    let mut line = &buf[..nl];
    if line.len() > 1 && line[line.len() - 1] == b'\r' {
        line = &line[..line.len() - 1];
    }
    if line_end > limits.line_len_max
        && (get_line_prefix(line) != Some(true) || line_end > limits.get_line_len_max)
    {
        return Err(TextError::new(TextErrorKind::LineTooLong, line_end));
    }

    let mut tokens = Tokens::new(line);
    let Some(cmd) = tokens.next() else {
        return Err(TextError::new(TextErrorKind::UnknownCommand, line_end));
    };
    let err = |kind| Err(TextError::new(kind, line_end));
    let done = |req| Ok(Some((req, line_end)));

    match cmd {
        b"get" | b"bget" | b"gets" | b"gat" | b"gats" => {
            if tokens.is_empty() {
                return err(TextErrorKind::UnknownCommand);
            }
            let mut keys = tokens;
            let mut exptime = 0;
            if cmd.starts_with(b"gat") {
                let tok = keys.next().unwrap_or_default();
                let Some(e) = parse_i32(tok) else {
                    return err(TextErrorKind::InvalidExptime);
                };
                exptime = i64::from(e);
            }
            let mut check = keys;
            if !check.all(|k| key_ok(k, limits)) {
                return err(TextErrorKind::BadCommandLineFormat);
            }
            done(match cmd {
                b"gets" => TextRequest::Gets { keys },
                b"gat" => TextRequest::Gat { exptime, keys },
                b"gats" => TextRequest::Gats { exptime, keys },
                _ => TextRequest::Get { keys },
            })
        }
        b"set" => storage(buf, line_end, tokens, StoreMode::Set, limits),
        b"add" => storage(buf, line_end, tokens, StoreMode::Add, limits),
        b"replace" => storage(buf, line_end, tokens, StoreMode::Replace, limits),
        b"append" => storage(buf, line_end, tokens, StoreMode::Append, limits),
        b"prepend" => storage(buf, line_end, tokens, StoreMode::Prepend, limits),
        b"cas" => storage(buf, line_end, tokens, StoreMode::Cas, limits),
        b"delete" => {
            let a = Args::<3>::collect(tokens);
            if !(1..=3).contains(&a.count) {
                return err(TextErrorKind::UnknownCommand);
            }
            let mut noreply = false;
            if a.count > 1 {
                let hold_is_zero = a.toks[1] == b"0";
                noreply = a.noreply();
                let valid = (a.count == 2 && (hold_is_zero || noreply))
                    || (a.count == 3 && hold_is_zero && noreply);
                if !valid {
                    return Err(TextError::noreply(
                        TextErrorKind::DeleteUsage,
                        line_end,
                        noreply,
                    ));
                }
            }
            let key = a.toks[0];
            if !key_ok(key, limits) {
                return Err(TextError::noreply(
                    TextErrorKind::BadCommandLineFormat,
                    line_end,
                    noreply,
                ));
            }
            done(TextRequest::Delete { key, noreply })
        }
        b"incr" | b"decr" | b"touch" => {
            let a = Args::<3>::collect(tokens);
            if !(2..=3).contains(&a.count) {
                return err(TextErrorKind::UnknownCommand);
            }
            let noreply = a.noreply();
            let fail = |kind| Err(TextError::noreply(kind, line_end, noreply));
            let key = a.toks[0];
            if !key_ok(key, limits) {
                return fail(TextErrorKind::BadCommandLineFormat);
            }
            if cmd == b"touch" {
                let Some(e) = parse_i32(a.toks[1]) else {
                    return fail(TextErrorKind::InvalidExptime);
                };
                return done(TextRequest::Touch {
                    key,
                    exptime: i64::from(e),
                    noreply,
                });
            }
            let Some(delta) = parse_u64(a.toks[1]) else {
                return fail(TextErrorKind::InvalidDeltaArgument);
            };
            done(if cmd == b"incr" {
                TextRequest::Incr {
                    key,
                    delta,
                    noreply,
                }
            } else {
                TextRequest::Decr {
                    key,
                    delta,
                    noreply,
                }
            })
        }
        b"flush_all" => {
            let a = Args::<2>::collect(tokens);
            if a.count > 2 {
                return err(TextErrorKind::UnknownCommand);
            }
            let noreply = a.noreply();
            let mut delay = 0;
            if a.count != usize::from(noreply) {
                let Some(d) = parse_i32(a.toks[0]) else {
                    return Err(TextError::noreply(
                        TextErrorKind::InvalidExptime,
                        line_end,
                        noreply,
                    ));
                };
                delay = i64::from(d);
            }
            done(TextRequest::FlushAll { delay, noreply })
        }
        b"verbosity" => {
            let a = Args::<2>::collect(tokens);
            if !(1..=2).contains(&a.count) {
                return err(TextErrorKind::UnknownCommand);
            }
            let noreply = a.noreply();
            let Some(level) = parse_u32(a.toks[0]) else {
                return Err(TextError::noreply(
                    TextErrorKind::BadCommandLineFormat,
                    line_end,
                    noreply,
                ));
            };
            done(TextRequest::Verbosity { level, noreply })
        }
        b"version" => done(TextRequest::Version),
        b"quit" => done(TextRequest::Quit),
        b"stats" => done(TextRequest::Stats { args: tokens }),
        b"lru_crawler" | b"watch" | b"cache_memlimit" | b"slabs" | b"lru" => {
            let command = match cmd {
                b"lru_crawler" => AdminCommand::LruCrawler,
                b"watch" => AdminCommand::Watch,
                b"cache_memlimit" => AdminCommand::CacheMemlimit,
                b"slabs" => AdminCommand::Slabs,
                _ => AdminCommand::Lru,
            };
            done(TextRequest::Admin {
                command,
                args: tokens,
            })
        }
        [b'm', c] => meta::parse(*c, buf, line_end, tokens, limits),
        _ => {
            // memcached's last resort, reached only by names outside its g/s/a/c/i/d/t
            // families: an HTTP request line closes the connection.
            let http = !matches!(cmd[0], b'g' | b's' | b'a' | b'c' | b'i' | b'd' | b't')
                && Tokens::new(line)
                    .last()
                    .is_some_and(|t| t.starts_with(b"HTTP/"));
            if http {
                return err(TextErrorKind::HttpRequest);
            }
            err(TextErrorKind::UnknownCommand)
        }
    }
}

/// set/add/replace/append/prepend/cas: the line (memcached's `process_update_command`),
/// then the data block.
fn storage<'a>(
    buf: &'a [u8],
    line_end: usize,
    tokens: Tokens<'a>,
    mode: StoreMode,
    limits: &Limits,
) -> Result<Option<(TextRequest<'a>, usize)>, TextError> {
    let a = Args::<6>::collect(tokens);
    let arity = if mode == StoreMode::Cas { 5..=6 } else { 4..=5 };
    if !arity.contains(&a.count) {
        return Err(TextError::new(TextErrorKind::UnknownCommand, line_end));
    }
    let noreply = a.noreply();
    let bad = |kind, skip| Err(TextError::noreply(kind, skip, noreply));
    let key = a.toks[0];
    if key.len() > limits.key_len_max {
        return bad(TextErrorKind::BadCommandLineFormat, line_end);
    }
    let (Some(flags), Some(exptime), Some(vlen)) = (
        parse_u32(a.toks[1]),
        parse_i32(a.toks[2]),
        parse_i32(a.toks[3]),
    ) else {
        return bad(TextErrorKind::BadCommandLineFormat, line_end);
    };
    let mut compare_cas = None;
    if mode == StoreMode::Cas {
        let Some(cas) = parse_u64(a.toks[4]) else {
            return bad(TextErrorKind::BadCommandLineFormat, line_end);
        };
        compare_cas = Some(cas);
    }
    if !(0..=i32::MAX - 2).contains(&vlen) {
        return bad(TextErrorKind::BadCommandLineFormat, line_end);
    }
    let item = ItemHead {
        key,
        key_len: key.len(),
        base64: false,
        flags,
        drops_stale: mode == StoreMode::Set,
    };
    let Some((data, total)) = data_block(buf, line_end, vlen, limits, noreply, &item)? else {
        return Ok(None);
    };
    Ok(Some((
        TextRequest::Store(Store {
            mode,
            key,
            flags,
            exptime: i64::from(exptime),
            data,
            compare_cas,
            noreply,
        }),
        total,
    )))
}

/// The item a storage command would store, as far as the size check and a refusal need it.
pub(crate) struct ItemHead<'a> {
    /// The key as sent, a part of the parsed buffer.
    pub(crate) key: &'a [u8],
    /// The key's length in the item: decoded, for a base64 meta key.
    pub(crate) key_len: usize,
    /// The key was sent in base64 (meta `b`).
    pub(crate) base64: bool,
    /// The client flags the item would carry.
    pub(crate) flags: u32,
    /// Whether refusing the item for its size deletes the key's current item, as
    /// memcached does for a text `set` and every `ms`.
    pub(crate) drops_stale: bool,
}

/// Where `part`, a subslice of `buf`, starts in it.
fn offset_in(buf: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize)
}

/// The data block of a storage command whose line ends at `line_end`: checks the key's
/// characters and the item's size (skipping the block on refusal), waits for the block, and
/// checks its `\r\n`. Returns the data and the request's total length.
pub(crate) fn data_block<'a>(
    buf: &'a [u8],
    line_end: usize,
    vlen: i32,
    limits: &Limits,
    noreply: bool,
    item: &ItemHead<'_>,
) -> Result<Option<(&'a [u8], usize)>, TextError> {
    let vlen = usize::try_from(vlen).unwrap_or(0);
    let data_end = line_end + vlen;
    let total = data_end + 2;
    if !key_ok(item.key, limits) {
        return Err(TextError::noreply(
            TextErrorKind::BadCommandLineFormat,
            total,
            noreply,
        ));
    }
    if !limits.item_fits(item.key_len, item.flags, vlen) {
        let stale = item.drops_stale.then(|| KeySpan {
            start: offset_in(buf, item.key),
            len: item.key.len(),
            base64: item.base64,
        });
        return Err(
            TextError::noreply(TextErrorKind::ObjectTooLarge, total, noreply).with_stale(stale),
        );
    }
    if buf.len() < total {
        return Ok(None);
    }
    if &buf[data_end..total] != b"\r\n" {
        return Err(TextError::noreply(
            TextErrorKind::BadDataChunk,
            total,
            noreply,
        ));
    }
    Ok(Some((&buf[line_end..data_end], total)))
}

#[cfg(test)]
pub(crate) mod tests;
