//! The memcached binary protocol, server side: the 24-byte header, opcodes, status codes and
//! [`parse_binary`], which validates one request packet the way memcached 1.6's
//! `dispatch_bin_command` does.
//!
//! ```text
//!  byte 0       1        2-3        4        5          6-7        8-11      12-15   16-23
//!  magic  opcode  key length  extras  data type  vbucket/status  body len  opaque   cas
//!  body = extras | key | value            (all integers big-endian)
//! ```

use crate::error::{BinaryError, BinaryErrorKind};
use crate::text::StoreMode;
use crate::Limits;

/// Length of a binary header.
pub const HEADER_LEN: usize = 24;
/// First byte of every request packet.
pub const REQUEST_MAGIC: u8 = 0x80;
/// First byte of every response packet.
pub const RESPONSE_MAGIC: u8 = 0x81;

/// A binary packet header, request or response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryHeader {
    /// [`REQUEST_MAGIC`] or [`RESPONSE_MAGIC`].
    pub magic: u8,
    /// The command; responses echo the request's, quiet variants included.
    pub opcode: u8,
    /// Length of the key, which follows the extras.
    pub key_len: u16,
    /// Length of the extras, which start the body.
    pub extras_len: u8,
    /// Reserved (0, raw bytes); ignored by memcached.
    pub data_type: u8,
    /// The vbucket id in requests (ignored by memcached), the [`Status`] in responses.
    pub vbucket_or_status: u16,
    /// Length of extras, key and value together.
    pub body_len: u32,
    /// Copied back unchanged in the response.
    pub opaque: u32,
    /// Compare-and-swap value in requests (0 = none), the item's CAS in responses.
    pub cas: u64,
}

impl BinaryHeader {
    /// Reads a header from its 24 bytes.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Self {
        Self {
            magic: b[0],
            opcode: b[1],
            key_len: u16::from_be_bytes([b[2], b[3]]),
            extras_len: b[4],
            data_type: b[5],
            vbucket_or_status: u16::from_be_bytes([b[6], b[7]]),
            body_len: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            opaque: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
            cas: u64::from_be_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]),
        }
    }

    /// How many bytes [`parse_binary`] needs before it answers this request, `buffered`
    /// bytes of it being there: a storage request's header, extras and key first (memcached
    /// judges the item's size by its key and client flags before it reads the value), then
    /// the whole packet.
    pub fn bytes_needed(&self, buffered: usize) -> usize {
        let head = HEADER_LEN + usize::from(self.extras_len) + usize::from(self.key_len);
        let whole = HEADER_LEN.saturating_add(usize::try_from(self.body_len).unwrap_or(usize::MAX));
        let storage = Opcode::from_u8(self.opcode).is_some_and(is_storage);
        if storage && buffered < head {
            head.min(whole)
        } else {
            whole
        }
    }

    /// The header's 24 bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.magic;
        b[1] = self.opcode;
        b[2..4].copy_from_slice(&self.key_len.to_be_bytes());
        b[4] = self.extras_len;
        b[5] = self.data_type;
        b[6..8].copy_from_slice(&self.vbucket_or_status.to_be_bytes());
        b[8..12].copy_from_slice(&self.body_len.to_be_bytes());
        b[12..16].copy_from_slice(&self.opaque.to_be_bytes());
        b[16..24].copy_from_slice(&self.cas.to_be_bytes());
        b
    }
}

/// A response status. The associated constants are the values of the binary protocol
/// specification and of memcached's `protocol_binary.h`; any other `u16` passes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(pub u16);

impl Status {
    /// 0x0000 No error.
    pub const SUCCESS: Status = Status(0x0000);
    /// 0x0001 Key not found ("Not found").
    pub const KEY_NOT_FOUND: Status = Status(0x0001);
    /// 0x0002 Key exists ("Data exists for key.").
    pub const KEY_EXISTS: Status = Status(0x0002);
    /// 0x0003 Value too large ("Too large.").
    pub const VALUE_TOO_LARGE: Status = Status(0x0003);
    /// 0x0004 Invalid arguments.
    pub const INVALID_ARGUMENTS: Status = Status(0x0004);
    /// 0x0005 Item not stored ("Not stored.").
    pub const NOT_STORED: Status = Status(0x0005);
    /// 0x0006 Incr/Decr on a non-numeric value.
    pub const NON_NUMERIC: Status = Status(0x0006);
    /// 0x0007 The vbucket belongs to another server.
    pub const NOT_MY_VBUCKET: Status = Status(0x0007);
    /// 0x0008 Authentication error (specification).
    pub const AUTH_ERROR: Status = Status(0x0008);
    /// 0x0009 Authentication continue (specification).
    pub const AUTH_CONTINUE: Status = Status(0x0009);
    /// 0x0020 Authentication error, the value memcached actually sends.
    pub const AUTH_ERROR_MEMCACHED: Status = Status(0x0020);
    /// 0x0021 Authentication continue, the value memcached actually sends.
    pub const AUTH_CONTINUE_MEMCACHED: Status = Status(0x0021);
    /// 0x0024 No access (Couchbase's EACCESS): larder's answer to a request the
    /// connection's ACL user may not make, with the NOPERM text as the body.
    pub const NO_ACCESS: Status = Status(0x0024);
    /// 0x0081 Unknown command.
    pub const UNKNOWN_COMMAND: Status = Status(0x0081);
    /// 0x0082 Out of memory.
    pub const OUT_OF_MEMORY: Status = Status(0x0082);
    /// 0x0083 Not supported.
    pub const NOT_SUPPORTED: Status = Status(0x0083);
    /// 0x0084 Internal error.
    pub const INTERNAL_ERROR: Status = Status(0x0084);
    /// 0x0085 Busy.
    pub const BUSY: Status = Status(0x0085);
    /// 0x0086 Temporary failure.
    pub const TEMPORARY_FAILURE: Status = Status(0x0086);

    /// The body memcached sends with this status ("Not found", "Too large.", ...); empty
    /// for success.
    pub fn message(self) -> &'static str {
        crate::error::status_message(self)
    }
}

macro_rules! opcodes {
    ($($(#[$doc:meta])* $name:ident = $value:literal,)*) => {
        /// A binary opcode served by memcached 1.6, the SASL ones included. Verbosity (0x1b) and the range opcodes are not served.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode {
            $($(#[$doc])* $name = $value,)*
        }

        impl Opcode {
            /// The opcode for a byte, if memcached knows it.
            pub fn from_u8(b: u8) -> Option<Opcode> {
                match b {
                    $($value => Some(Opcode::$name),)*
                    _ => None,
                }
            }
        }
    };
}

opcodes! {
    /// 0x00
    Get = 0x00,
    /// 0x01
    Set = 0x01,
    /// 0x02
    Add = 0x02,
    /// 0x03
    Replace = 0x03,
    /// 0x04
    Delete = 0x04,
    /// 0x05
    Increment = 0x05,
    /// 0x06
    Decrement = 0x06,
    /// 0x07
    Quit = 0x07,
    /// 0x08
    Flush = 0x08,
    /// 0x09
    GetQ = 0x09,
    /// 0x0a
    Noop = 0x0a,
    /// 0x0b
    Version = 0x0b,
    /// 0x0c
    GetK = 0x0c,
    /// 0x0d
    GetKQ = 0x0d,
    /// 0x0e
    Append = 0x0e,
    /// 0x0f
    Prepend = 0x0f,
    /// 0x10
    Stat = 0x10,
    /// 0x11
    SetQ = 0x11,
    /// 0x12
    AddQ = 0x12,
    /// 0x13
    ReplaceQ = 0x13,
    /// 0x14
    DeleteQ = 0x14,
    /// 0x15
    IncrementQ = 0x15,
    /// 0x16
    DecrementQ = 0x16,
    /// 0x17
    QuitQ = 0x17,
    /// 0x18
    FlushQ = 0x18,
    /// 0x19
    AppendQ = 0x19,
    /// 0x1a
    PrependQ = 0x1a,
    /// 0x1c
    Touch = 0x1c,
    /// 0x1d
    Gat = 0x1d,
    /// 0x1e
    GatQ = 0x1e,
    /// 0x20
    SaslListMechs = 0x20,
    /// 0x21
    SaslAuth = 0x21,
    /// 0x22
    SaslStep = 0x22,
    /// 0x23
    GatK = 0x23,
    /// 0x24
    GatKQ = 0x24,
}

impl Opcode {
    /// Quiet opcodes: a get miss gets no response, a successful mutation gets no response.
    /// Errors are always answered.
    pub fn is_quiet(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            GetQ | GetKQ
                | SetQ
                | AddQ
                | ReplaceQ
                | DeleteQ
                | IncrementQ
                | DecrementQ
                | QuitQ
                | FlushQ
                | AppendQ
                | PrependQ
                | GatQ
                | GatKQ
        )
    }

    /// Get variants whose responses carry the key (GETK, GETKQ, GATK, GATKQ).
    pub fn returns_key(self) -> bool {
        matches!(
            self,
            Opcode::GetK | Opcode::GetKQ | Opcode::GatK | Opcode::GatKQ
        )
    }
}

/// Increment or decrement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterOp {
    /// Add the delta, wrapping at 2^64.
    Incr,
    /// Subtract the delta, stopping at 0.
    Decr,
}

/// The typed body of a binary request. Exptimes are the 32-bit unsigned extras widened to
/// `i64`, ready for [`crate::resolve_exptime`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryCommand<'a> {
    /// GET, GETQ, GETK, GETKQ.
    Get {
        /// The key.
        key: &'a [u8],
    },
    /// TOUCH: set a new exptime; the response carries the flags but no value.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New exptime.
        exptime: i64,
    },
    /// GAT, GATQ, GATK, GATKQ: get and set a new exptime.
    GetAndTouch {
        /// The key.
        key: &'a [u8],
        /// New exptime.
        exptime: i64,
    },
    /// SET, ADD, REPLACE, APPEND, PREPEND and their quiet variants. memcached turns SET,
    /// ADD and REPLACE with a non-zero header CAS into a CAS store ([`StoreMode::Cas`]);
    /// APPEND and PREPEND keep their mode and compare the CAS.
    Store {
        /// How to store.
        mode: StoreMode,
        /// The key.
        key: &'a [u8],
        /// Client flags (0 for append/prepend, which keep the old ones).
        flags: u32,
        /// Exptime (0 for append/prepend, which keep the old one).
        exptime: i64,
        /// The value.
        value: &'a [u8],
        /// The header CAS, when non-zero.
        compare_cas: Option<u64>,
    },
    /// DELETE, DELETEQ.
    Delete {
        /// The key.
        key: &'a [u8],
        /// The header CAS, when non-zero: delete only a matching item (else KEY_EXISTS).
        compare_cas: Option<u64>,
    },
    /// INCREMENT, DECREMENT and their quiet variants.
    Counter {
        /// Increment or decrement.
        op: CounterOp,
        /// The key.
        key: &'a [u8],
        /// Amount to add or subtract.
        delta: u64,
        /// Value stored when the key is missing and `exptime` is `Some`.
        initial: u64,
        /// Exptime for a created item; `None` (0xffffffff on the wire) means a miss answers
        /// KEY_NOT_FOUND instead of creating.
        exptime: Option<i64>,
        /// The header CAS, when non-zero.
        compare_cas: Option<u64>,
    },
    /// QUIT, QUITQ: answer (QUIT only), then close.
    Quit,
    /// FLUSH, FLUSHQ.
    Flush {
        /// Delay as an exptime (0 = now).
        delay: i64,
    },
    /// NOOP: answer, which also flushes the quiet responses before it.
    Noop,
    /// VERSION.
    Version,
    /// STAT with an optional group name in the key ("settings", "items", ...).
    Stat {
        /// The group; empty for the general statistics.
        group: &'a [u8],
    },
    /// SASL LIST MECHS: the mechanisms, space-separated, as the value.
    SaslListMechs,
    /// SASL AUTH (`step: false`) starts an exchange with a mechanism; SASL STEP continues
    /// it. For PLAIN the data is `authzid\0user\0password`.
    Sasl {
        /// SASL STEP rather than SASL AUTH.
        step: bool,
        /// The mechanism's name (the key).
        mechanism: &'a [u8],
        /// The client's response (the value).
        data: &'a [u8],
    },
}

impl BinaryCommand<'_> {
    /// Whether the request may change the keyspace (a TTL included), as Redis's `write`
    /// flag: what `CLIENT PAUSE WRITE` holds back.
    pub fn writes(&self) -> bool {
        match self {
            BinaryCommand::Get { .. }
            | BinaryCommand::Quit
            | BinaryCommand::Noop
            | BinaryCommand::Version
            | BinaryCommand::Stat { .. }
            | BinaryCommand::SaslListMechs
            | BinaryCommand::Sasl { .. } => false,
            BinaryCommand::Touch { .. }
            | BinaryCommand::GetAndTouch { .. }
            | BinaryCommand::Store { .. }
            | BinaryCommand::Delete { .. }
            | BinaryCommand::Counter { .. }
            | BinaryCommand::Flush { .. } => true,
        }
    }
}

/// One parsed binary request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryRequest<'a> {
    /// The opcode as sent (quiet variants kept); echoed in responses.
    pub opcode: Opcode,
    /// Echoed in responses.
    pub opaque: u32,
    /// The header CAS as sent.
    pub cas: u64,
    /// What to do.
    pub command: BinaryCommand<'a>,
}

impl BinaryRequest<'_> {
    /// See [`Opcode::is_quiet`].
    pub fn is_quiet(&self) -> bool {
        self.opcode.is_quiet()
    }
}

fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Whether extras, key and body lengths are acceptable for the opcode (memcached's
/// `dispatch_bin_command` table).
fn lengths_valid(op: Opcode, extras: usize, key: usize, body: usize) -> bool {
    use Opcode::*;
    match op {
        Version | Noop | Quit | QuitQ | SaslListMechs => extras == 0 && key == 0 && body == 0,
        Flush | FlushQ => key == 0 && body == extras && (extras == 0 || extras == 4),
        Set | SetQ | Add | AddQ | Replace | ReplaceQ => extras == 8 && key != 0 && body >= key + 8,
        Get | GetQ | GetK | GetKQ => extras == 0 && body == key && key > 0,
        Delete | DeleteQ => key > 0 && extras == 0 && body == key,
        Increment | IncrementQ | Decrement | DecrementQ => {
            key > 0 && extras == 20 && body == key + extras
        }
        Append | AppendQ | Prepend | PrependQ => key > 0 && extras == 0,
        Stat => extras == 0,
        SaslAuth | SaslStep => extras == 0 && key != 0,
        Touch | Gat | GatQ | GatK | GatKQ => extras == 4 && key != 0,
    }
}

fn is_storage(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Set | SetQ | Add | AddQ | Replace | ReplaceQ | Append | AppendQ | Prepend | PrependQ
    )
}

/// Parses one binary request from the front of `buf`.
///
/// Returns `Ok(None)` until the whole packet is buffered, then the request and the number
/// of bytes it took (24 + body length). Refusals that memcached decides from the header
/// (bad magic, bad lengths, unknown opcode) are returned as soon as the header is there, and
/// an item too large to store ([`Limits::item_fits`]) as soon as its extras and key are,
/// without waiting for the value; their `skip` may exceed `buf.len()`.
///
/// Unlike memcached, a refused unknown opcode skips exactly its packet (memcached skips the
/// body length again after the key, eating the next request), and STAT or TOUCH packets
/// with trailing value bytes are consumed whole (memcached reads the extra bytes as the
/// next header).
pub fn parse_binary<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<Option<(BinaryRequest<'a>, usize)>, BinaryError> {
    if let Some(&magic) = buf.first() {
        if magic != REQUEST_MAGIC {
            return Err(BinaryError {
                kind: BinaryErrorKind::BadMagic,
                opcode: buf.get(1).copied().unwrap_or(0),
                opaque: 0,
                skip: buf.len(),
                stale: None,
            });
        }
    }
    let Some(head) = buf.first_chunk::<HEADER_LEN>() else {
        return Ok(None);
    };
    let h = BinaryHeader::parse(head);
    let extras_len = usize::from(h.extras_len);
    let key_len = usize::from(h.key_len);
    let body_len = usize::try_from(h.body_len).unwrap_or(usize::MAX);
    let total = HEADER_LEN.saturating_add(body_len);
    let fail = |kind| {
        Err(BinaryError {
            kind,
            opcode: h.opcode,
            opaque: h.opaque,
            skip: total,
            stale: None,
        })
    };

    if key_len + extras_len > body_len {
        return fail(BinaryErrorKind::BadLengths);
    }
    if key_len > limits.key_len_max {
        return fail(BinaryErrorKind::InvalidArguments);
    }
    let Some(op) = Opcode::from_u8(h.opcode) else {
        return fail(BinaryErrorKind::UnknownCommand);
    };
    if !lengths_valid(op, extras_len, key_len, body_len) {
        return fail(BinaryErrorKind::InvalidArguments);
    }
    let value_len = body_len - key_len - extras_len;
    if is_storage(op) {
        // memcached reads extras and key, then sizes the item with its flags (append and
        // prepend store none).
        let key_end = HEADER_LEN + extras_len + key_len;
        let Some(head) = buf.get(HEADER_LEN..key_end) else {
            return Ok(None);
        };
        let flags = if extras_len >= 4 { be_u32(head) } else { 0 };
        if !limits.item_fits(key_len, flags, value_len) {
            // memcached serves SETQ as SET: both drop the item they would have replaced.
            let set = matches!(op, Opcode::Set | Opcode::SetQ);
            let stale = set.then_some((HEADER_LEN + extras_len, key_len));
            return Err(BinaryError {
                kind: BinaryErrorKind::TooLarge,
                opcode: h.opcode,
                opaque: h.opaque,
                skip: total,
                stale,
            });
        }
    }
    if body_len > limits.binary_body_max {
        return fail(BinaryErrorKind::TooLarge);
    }
    if buf.len() < total {
        return Ok(None);
    }

    let body = &buf[HEADER_LEN..total];
    let (extras, rest) = body.split_at(extras_len);
    let (key, value) = rest.split_at(key_len);
    let compare_cas = (h.cas != 0).then_some(h.cas);
    use Opcode::*;
    let command = match op {
        Get | GetQ | GetK | GetKQ => BinaryCommand::Get { key },
        Touch => BinaryCommand::Touch {
            key,
            exptime: i64::from(be_u32(extras)),
        },
        Gat | GatQ | GatK | GatKQ => BinaryCommand::GetAndTouch {
            key,
            exptime: i64::from(be_u32(extras)),
        },
        Set | SetQ | Add | AddQ | Replace | ReplaceQ => {
            let mode = match (op, compare_cas) {
                (_, Some(_)) => StoreMode::Cas,
                (Set | SetQ, None) => StoreMode::Set,
                (Add | AddQ, None) => StoreMode::Add,
                _ => StoreMode::Replace,
            };
            BinaryCommand::Store {
                mode,
                key,
                flags: be_u32(extras),
                exptime: i64::from(be_u32(&extras[4..])),
                value,
                compare_cas,
            }
        }
        Append | AppendQ | Prepend | PrependQ => BinaryCommand::Store {
            mode: if matches!(op, Append | AppendQ) {
                StoreMode::Append
            } else {
                StoreMode::Prepend
            },
            key,
            flags: 0,
            exptime: 0,
            value,
            compare_cas,
        },
        Delete | DeleteQ => BinaryCommand::Delete { key, compare_cas },
        Increment | IncrementQ | Decrement | DecrementQ => {
            let expiration = be_u32(&extras[16..]);
            BinaryCommand::Counter {
                op: if matches!(op, Increment | IncrementQ) {
                    CounterOp::Incr
                } else {
                    CounterOp::Decr
                },
                key,
                delta: be_u64(extras),
                initial: be_u64(&extras[8..]),
                exptime: (expiration != u32::MAX).then_some(i64::from(expiration)),
                compare_cas,
            }
        }
        Quit | QuitQ => BinaryCommand::Quit,
        Flush | FlushQ => BinaryCommand::Flush {
            delay: if extras.is_empty() {
                0
            } else {
                i64::from(be_u32(extras))
            },
        },
        Noop => BinaryCommand::Noop,
        Version => BinaryCommand::Version,
        Stat => BinaryCommand::Stat { group: key },
        SaslListMechs => BinaryCommand::SaslListMechs,
        SaslAuth | SaslStep => BinaryCommand::Sasl {
            step: op == SaslStep,
            mechanism: key,
            data: value,
        },
    };
    Ok(Some((
        BinaryRequest {
            opcode: op,
            opaque: h.opaque,
            cas: h.cas,
            command,
        },
        total,
    )))
}

#[cfg(test)]
mod tests;
