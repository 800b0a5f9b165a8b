//! Encoding text and meta replies. [`TextWriter`] appends to the connection's output buffer;
//! the meta methods take the parsed request so that return flags come out in request order
//! and the `q` rules are applied in one place.

use crate::base64;
use crate::error::{TextError, TextErrorKind};
use crate::meta::{MetaArithmetic, MetaDelete, MetaFlags, MetaGet, MetaKey, MetaSet};
use crate::number::{digits_u64, push_i64, push_u64};

/// The fixed reply lines of the classic commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextReply {
    /// `STORED`
    Stored,
    /// `NOT_STORED`
    NotStored,
    /// `EXISTS`
    Exists,
    /// `NOT_FOUND`
    NotFound,
    /// `DELETED`
    Deleted,
    /// `TOUCHED`
    Touched,
    /// `OK` (flush_all, verbosity)
    Ok,
    /// `END` (end of a get or stats answer)
    End,
    /// `RESET` (stats reset)
    Reset,
    /// `ERROR`
    Error,
}

impl TextReply {
    /// The line with its `\r\n`.
    pub fn line(self) -> &'static [u8] {
        match self {
            TextReply::Stored => b"STORED\r\n",
            TextReply::NotStored => b"NOT_STORED\r\n",
            TextReply::Exists => b"EXISTS\r\n",
            TextReply::NotFound => b"NOT_FOUND\r\n",
            TextReply::Deleted => b"DELETED\r\n",
            TextReply::Touched => b"TOUCHED\r\n",
            TextReply::Ok => b"OK\r\n",
            TextReply::End => b"END\r\n",
            TextReply::Reset => b"RESET\r\n",
            TextReply::Error => b"ERROR\r\n",
        }
    }
}

/// The outcome code of a meta command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaStatus {
    /// `HD` (or `VA` when a value is returned): success.
    Success,
    /// `NS`: not stored (ms add/replace/append/prepend condition failed, ma vivify failed).
    NotStored,
    /// `EX`: CAS mismatch.
    Exists,
    /// `NF`: not found (md, ma, ms with `C` on a missing key).
    NotFound,
    /// `EN`: miss (mg).
    Miss,
}

impl MetaStatus {
    fn code(self) -> &'static [u8] {
        match self {
            MetaStatus::Success => b"HD",
            MetaStatus::NotStored => b"NS",
            MetaStatus::Exists => b"EX",
            MetaStatus::NotFound => b"NF",
            MetaStatus::Miss => b"EN",
        }
    }
}

/// What the engine knows about an item, for meta return flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaItem {
    /// Client flags (`f`).
    pub client_flags: u32,
    /// CAS (`c`).
    pub cas: u64,
    /// Value length (`s`, and the size of `VA`).
    pub size: usize,
    /// Remaining TTL in seconds, -1 when the item never expires (`t`).
    pub ttl_s: i64,
    /// Seconds since the last access, before this one (`l`).
    pub last_access_s: u64,
    /// Whether the item was fetched before this request (`h`).
    pub fetched: bool,
    /// Whether the item was stored with a base64 key (`ms ... b`): memcached remembers this
    /// and returns `k` encoded with ` b` even to a request without `b`.
    pub key_binary: bool,
}

/// The anti-stampede flags appended to an mg hit, in memcached's order Z, X, W.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recache {
    /// `W`: this client won the right to recache.
    pub won: bool,
    /// `X`: the item is stale (marked by `md I` or stored by `ms I` with an old CAS).
    pub stale: bool,
    /// `Z`: a win was already handed out for this item.
    pub win_sent: bool,
}

/// Appends text-protocol replies to an output buffer.
#[derive(Debug)]
pub struct TextWriter<'o> {
    out: &'o mut Vec<u8>,
}

impl<'o> TextWriter<'o> {
    /// A writer appending to `out`.
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        Self { out }
    }

    /// A fixed reply line.
    pub fn reply(&mut self, reply: TextReply) {
        self.out.extend_from_slice(reply.line());
    }

    /// `END\r\n`.
    pub fn end(&mut self) {
        self.reply(TextReply::End);
    }

    /// Lines the caller formatted whole, each ending in `\r\n` (`stats detail dump`).
    pub fn raw(&mut self, lines: &[u8]) {
        self.out.extend_from_slice(lines);
    }

    /// `\r\n`, after a value written by the caller.
    pub fn crlf(&mut self) {
        self.out.extend_from_slice(b"\r\n");
    }

    /// One get hit: `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`. `cas` is `Some`
    /// for gets and gats.
    pub fn value(&mut self, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
        self.value_head(key, flags, data.len(), cas);
        self.out.extend_from_slice(data);
        self.crlf();
    }

    /// The `VALUE` line alone, for callers that send the data from elsewhere; the data and
    /// [`TextWriter::crlf`] must follow.
    pub fn value_head(&mut self, key: &[u8], flags: u32, len: usize, cas: Option<u64>) {
        self.out.extend_from_slice(b"VALUE ");
        self.out.extend_from_slice(key);
        self.out.push(b' ');
        push_u64(self.out, u64::from(flags));
        self.out.push(b' ');
        push_u64(self.out, len as u64);
        if let Some(cas) = cas {
            self.out.push(b' ');
            push_u64(self.out, cas);
        }
        self.crlf();
    }

    /// An incr/decr result.
    pub fn number(&mut self, value: u64) {
        push_u64(self.out, value);
        self.crlf();
    }

    /// `VERSION <version>`.
    pub fn version(&mut self, version: &str) {
        self.out.extend_from_slice(b"VERSION ");
        self.out.extend_from_slice(version.as_bytes());
        self.crlf();
    }

    /// `STAT <name> <value>`; [`TextWriter::end`] closes the list.
    pub fn stat(&mut self, name: &str, value: &[u8]) {
        self.out.extend_from_slice(b"STAT ");
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b' ');
        self.out.extend_from_slice(value);
        self.crlf();
    }

    /// `STAT <name> <number>`.
    pub fn stat_u64(&mut self, name: &str, value: u64) {
        let (digits, start) = digits_u64(value);
        self.stat(name, &digits[start..]);
    }

    /// The reply of a parse error (nothing when `noreply` silences it).
    pub fn error(&mut self, e: &TextError) {
        self.out.extend_from_slice(e.reply());
    }

    /// An error line, for errors found while serving (non-numeric value, out of memory).
    pub fn error_kind(&mut self, kind: TextErrorKind) {
        self.out.extend_from_slice(kind.line());
    }

    /// `CLIENT_ERROR <message>`.
    pub fn client_error(&mut self, message: &str) {
        self.out.extend_from_slice(b"CLIENT_ERROR ");
        self.out.extend_from_slice(message.as_bytes());
        self.crlf();
    }

    /// `SERVER_ERROR <message>`.
    pub fn server_error(&mut self, message: &str) {
        self.out.extend_from_slice(b"SERVER_ERROR ");
        self.out.extend_from_slice(message.as_bytes());
        self.crlf();
    }

    fn flag_char(&mut self, c: u8) {
        self.out.push(b' ');
        self.out.push(c);
    }

    fn flag_u64(&mut self, c: u8, v: u64) {
        self.flag_char(c);
        push_u64(self.out, v);
    }

    fn flag_opaque(&mut self, tok: &[u8]) {
        self.out.push(b' ');
        self.out.extend_from_slice(tok);
    }

    /// ` k<key>`, base64 with a trailing ` b` when the key is binary.
    fn flag_key(&mut self, key: &MetaKey<'_>, binary: bool) {
        self.flag_char(b'k');
        key.with_bytes(|bytes| {
            if binary {
                base64::encode_into(self.out, bytes);
            } else {
                self.out.extend_from_slice(bytes);
            }
        });
        if binary {
            self.flag_char(b'b');
        }
    }

    /// The `O` and `k` return flags, which every meta answer carries.
    fn opaque_and_key(&mut self, flags: &MetaFlags<'_>, key: &MetaKey<'_>, binary: bool) {
        for tok in flags.tokens() {
            match tok[0] {
                b'O' => self.flag_opaque(tok),
                b'k' => self.flag_key(key, binary),
                _ => {}
            }
        }
    }

    /// An mg hit. Writes `VA <size> <flags>\r\n<value>\r\n` when the request has `v`, else
    /// `HD <flags>\r\n`; return flags in request order, then Z, X, W. Hits are answered even
    /// with `q` (memcached 1.6). `value` is ignored without `v`.
    pub fn meta_get_hit(
        &mut self,
        req: &MetaGet<'_>,
        item: &MetaItem,
        value: &[u8],
        recache: Recache,
    ) {
        let item = MetaItem {
            size: value.len(),
            ..*item
        };
        self.meta_get_hit_head(req, &item, recache);
        if req.flags.return_value {
            self.out.extend_from_slice(value);
            self.crlf();
        }
    }

    /// The header line of an mg hit alone; with `v`, the caller sends `item.size` bytes of
    /// value and [`TextWriter::crlf`].
    pub fn meta_get_hit_head(&mut self, req: &MetaGet<'_>, item: &MetaItem, recache: Recache) {
        if req.flags.return_value {
            self.out.extend_from_slice(b"VA ");
            push_u64(self.out, item.size as u64);
        } else {
            self.out.extend_from_slice(b"HD");
        }
        for tok in req.flags.tokens() {
            match tok[0] {
                b's' => self.flag_u64(b's', item.size as u64),
                b't' => {
                    self.flag_char(b't');
                    push_i64(self.out, item.ttl_s);
                }
                b'c' => self.flag_u64(b'c', item.cas),
                b'f' => self.flag_u64(b'f', u64::from(item.client_flags)),
                b'l' => self.flag_u64(b'l', item.last_access_s),
                b'h' => self.flag_u64(b'h', u64::from(item.fetched)),
                b'O' => self.flag_opaque(tok),
                b'k' => self.flag_key(&req.key, item.key_binary),
                _ => {}
            }
        }
        if recache.win_sent {
            self.flag_char(b'Z');
        }
        if recache.stale {
            self.flag_char(b'X');
        }
        if recache.won {
            self.flag_char(b'W');
        }
        self.crlf();
    }

    /// An mg miss: `EN` with the `O` and `k` flags, or nothing with `q`.
    pub fn meta_get_miss(&mut self, req: &MetaGet<'_>) {
        if req.flags.quiet {
            return;
        }
        self.out.extend_from_slice(b"EN");
        self.opaque_and_key(&req.flags, &req.key, req.key.is_base64());
        self.crlf();
    }

    /// An ms answer: `HD`, `NS`, `EX` or `NF` with the `O`, `k` and `c` flags (`cas` is the
    /// new CAS on success; memcached sends 0 otherwise). With `q`, `HD` is not sent.
    pub fn meta_set(&mut self, req: &MetaSet<'_>, status: MetaStatus, cas: u64) {
        if req.flags.quiet && status == MetaStatus::Success {
            return;
        }
        self.out.extend_from_slice(status.code());
        for tok in req.flags.tokens() {
            match tok[0] {
                b'O' => self.flag_opaque(tok),
                b'k' => self.flag_key(&req.key, req.key.is_base64()),
                b'c' => self.flag_u64(b'c', cas),
                _ => {}
            }
        }
        self.crlf();
    }

    /// An md answer: `HD`, `NF` or `EX` with the `O` and `k` flags. With `q`, `HD` is not
    /// sent.
    pub fn meta_delete(&mut self, req: &MetaDelete<'_>, status: MetaStatus) {
        if req.flags.quiet && status == MetaStatus::Success {
            return;
        }
        self.out.extend_from_slice(status.code());
        self.opaque_and_key(&req.flags, &req.key, req.key.is_base64());
        self.crlf();
    }

    /// A successful ma: `HD` (or `VA <len>` and the number with `v`) with the `c`, `t`, `O`
    /// and `k` flags; `item` carries the new CAS and the TTL. With `q` nothing is sent, `VA`
    /// included (memcached 1.6).
    pub fn meta_arithmetic(&mut self, req: &MetaArithmetic<'_>, value: u64, item: &MetaItem) {
        if req.flags.quiet {
            return;
        }
        let (digits, start) = digits_u64(value);
        let digits = &digits[start..];
        let len = digits.len();
        if req.flags.return_value {
            self.out.extend_from_slice(b"VA ");
            push_u64(self.out, len as u64);
        } else {
            self.out.extend_from_slice(b"HD");
        }
        for tok in req.flags.tokens() {
            match tok[0] {
                b'c' => self.flag_u64(b'c', item.cas),
                b't' => {
                    self.flag_char(b't');
                    push_i64(self.out, item.ttl_s);
                }
                b'O' => self.flag_opaque(tok),
                b'k' => self.flag_key(&req.key, req.key.is_base64()),
                _ => {}
            }
        }
        self.crlf();
        if req.flags.return_value {
            self.out.extend_from_slice(digits);
            self.crlf();
        }
    }

    /// A failed ma: `NF`, `NS` or `EX` with the `O` and `k` flags; sent even with `q`.
    pub fn meta_arithmetic_failed(&mut self, req: &MetaArithmetic<'_>, status: MetaStatus) {
        self.out.extend_from_slice(status.code());
        self.opaque_and_key(&req.flags, &req.key, req.key.is_base64());
        self.crlf();
    }

    /// `MN\r\n`.
    pub fn meta_noop(&mut self) {
        self.out.extend_from_slice(b"MN\r\n");
    }

    /// An `me` hit, in memcached 1.6's format:
    /// `ME <key> exp=<exp> la=<la> cas=<cas> fetch=<yes|no> cls=<class> size=<total>`. As
    /// memcached prints it, `exp` is the remaining TTL negated (-1 when the item never
    /// expires); the key is base64 when the item's key is binary; `cls` is the item's slab
    /// class and `size` the whole item's size (the server's to judge).
    pub fn meta_debug(&mut self, key: &MetaKey<'_>, item: &MetaItem, class: usize, total: usize) {
        self.out.extend_from_slice(b"ME ");
        key.with_bytes(|bytes| {
            if item.key_binary {
                base64::encode_into(self.out, bytes);
            } else {
                self.out.extend_from_slice(bytes);
            }
        });
        self.out.extend_from_slice(b" exp=");
        push_i64(self.out, if item.ttl_s < 0 { -1 } else { -item.ttl_s });
        self.out.extend_from_slice(b" la=");
        push_u64(self.out, item.last_access_s);
        self.out.extend_from_slice(b" cas=");
        push_u64(self.out, item.cas);
        self.out.extend_from_slice(if item.fetched {
            b" fetch=yes"
        } else {
            b" fetch=no"
        });
        self.out.extend_from_slice(b" cls=");
        push_u64(self.out, class as u64);
        self.out.extend_from_slice(b" size=");
        push_u64(self.out, total as u64);
        self.crlf();
    }

    /// `EN\r\n`, the `me` miss.
    pub fn meta_debug_miss(&mut self) {
        self.out.extend_from_slice(b"EN\r\n");
    }
}

#[cfg(test)]
mod tests;
