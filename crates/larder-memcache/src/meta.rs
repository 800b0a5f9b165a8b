//! The meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`): their flags and requests, parsed
//! as memcached 1.6's `_meta_flag_preparse` and `process_m*_command` do.
//!
//! Flags are single characters, some followed by a token (`T30`, `Oabc`). As in memcached,
//! every command accepts every known flag (an `ms` with `v` is not an error, the flag is
//! ignored), a flag is recognised by its first byte alone (`vv` is `v`), and a repeated
//! flag is an error. The `E` (explicit new CAS) and `x` (md: drop the value) flags of later
//! memcached releases are accepted too; 1.6.18 refuses them as invalid.

use crate::base64::{self, KeyBuf};
use crate::binary::CounterOp;
use crate::error::{TextError, TextErrorKind};
use crate::number::{parse_i32, parse_u32, parse_u64};
use crate::text::{data_block, key_ok, ItemHead, StoreMode, TextRequest, Tokens};
use crate::Limits;

/// Lines with this many tokens or more (command, key, datalen and flags) are refused
/// (memcached: `ntokens > MFLAG_MAX_OPT_LENGTH` with its terminal token counted).
const MAX_TOKENS: usize = 20;

/// Longest `O` token, the flag letter included (MFLAG_MAX_OPAQUE_LENGTH).
const OPAQUE_TOKEN_MAX: usize = 32;

/// The key of a meta command: as sent, or base64 when the `b` flag is present (already
/// checked to decode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaKey<'a> {
    raw: &'a [u8],
    base64: bool,
}

impl<'a> MetaKey<'a> {
    pub(crate) fn new(raw: &'a [u8], base64: bool) -> Self {
        Self { raw, base64 }
    }

    /// The key token as sent.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Whether the key was sent in base64 (`b` flag): the item's key is the decoded bytes,
    /// and returned keys are encoded again.
    pub fn is_base64(&self) -> bool {
        self.base64
    }

    /// The decoded key of a `b` request; `None` when the key was sent as is.
    pub fn decoded(&self) -> Option<KeyBuf> {
        if self.base64 {
            base64::decode_key(self.raw)
        } else {
            None
        }
    }

    /// Calls `f` with the key's bytes: decoded (on the stack) for `b` requests, borrowed
    /// otherwise.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self.decoded() {
            Some(buf) => f(buf.as_bytes()),
            None => f(self.raw),
        }
    }
}

/// The flags of a meta request, typed. Which ones a command honours is in `SEMANTICS.md`;
/// [`MetaFlags::tokens`] replays them in request order, which is the order of the return
/// flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaFlags<'a> {
    tokens: &'a [u8],
    /// `b`: the key is base64.
    pub base64_key: bool,
    /// `c`: return the CAS.
    pub return_cas: bool,
    /// `f`: return the client flags.
    pub return_flags: bool,
    /// `h`: return whether the item was fetched before (0/1).
    pub return_hit: bool,
    /// `k`: return the key.
    pub return_key: bool,
    /// `l`: return seconds since last access.
    pub return_last_access: bool,
    /// `s`: return the value size.
    pub return_size: bool,
    /// `t`: return the remaining TTL in seconds (-1 for none).
    pub return_ttl: bool,
    /// `v`: return the value (`VA` instead of `HD`).
    pub return_value: bool,
    /// `u`: do not bump the item in the LRU, nor mark it fetched or accessed.
    pub no_bump: bool,
    /// `q`: quiet, suppress the nominal answer (see `SEMANTICS.md`).
    pub quiet: bool,
    /// `I`: invalidate (md: mark stale; ms with a lower `C`: store as stale).
    pub invalidate: bool,
    /// `x` (md): drop the value but keep the item.
    pub remove_value: bool,
    /// `O<token>`: opaque, echoed back (at most 31 bytes; may be empty).
    pub opaque: Option<&'a [u8]>,
    /// `N<ttl>`: vivify on miss with this exptime.
    pub vivify_ttl: Option<i64>,
    /// `R<ttl>`: win the recache if the remaining TTL is below this.
    pub recache_ttl: Option<i64>,
    /// `T<ttl>`: new exptime.
    pub ttl: Option<i64>,
    /// `C<cas>`: compare CAS.
    pub compare_cas: Option<u64>,
    /// `E<cas>`: use this as the item's new CAS.
    pub new_cas: Option<u64>,
    /// `F<flags>`: client flags to store.
    pub client_flags: Option<u32>,
    /// `M<mode>`: the mode byte, checked by ms and ma.
    pub mode: Option<u8>,
    /// `D<delta>`: ma delta.
    pub delta: Option<u64>,
    /// `J<initial>`: ma initial value on vivify.
    pub initial: Option<u64>,
}

impl<'a> MetaFlags<'a> {
    /// The flag tokens in request order.
    pub fn tokens(&self) -> Tokens<'a> {
        Tokens::new(self.tokens)
    }
}

/// `mg <key> <flags>*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaGet<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The flags.
    pub flags: MetaFlags<'a>,
}

/// The ms `M` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaSetMode {
    /// `MS` or no mode.
    Set,
    /// `ME`.
    Add,
    /// `MR`.
    Replace,
    /// `MA`.
    Append,
    /// `MP`.
    Prepend,
}

/// `ms <key> <datalen> <flags>*` with its data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaSet<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The data block, without its `\r\n`.
    pub data: &'a [u8],
    /// The mode.
    pub mode: MetaSetMode,
    /// The flags.
    pub flags: MetaFlags<'a>,
}

impl MetaSet<'_> {
    /// The store memcached performs: a `C` turns set and replace into a CAS store; add
    /// ignores `C`; append and prepend compare it themselves.
    pub fn store_mode(&self) -> StoreMode {
        match (self.mode, self.flags.compare_cas) {
            (MetaSetMode::Set | MetaSetMode::Replace, Some(_)) => StoreMode::Cas,
            (MetaSetMode::Set, None) => StoreMode::Set,
            (MetaSetMode::Replace, None) => StoreMode::Replace,
            (MetaSetMode::Add, _) => StoreMode::Add,
            (MetaSetMode::Append, _) => StoreMode::Append,
            (MetaSetMode::Prepend, _) => StoreMode::Prepend,
        }
    }
}

/// `md <key> <flags>*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaDelete<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The flags.
    pub flags: MetaFlags<'a>,
}

/// `ma <key> <flags>*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaArithmetic<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// `MI`/`M+` (default) or `MD`/`M-`.
    pub op: CounterOp,
    /// `D`, default 1.
    pub delta: u64,
    /// `J`, default 0: the value of an item vivified by `N`.
    pub initial: u64,
    /// The flags.
    pub flags: MetaFlags<'a>,
}

/// A flag problem: `Hard` stops at once, `Soft` lets later flags be read and is replaced by
/// later soft problems (memcached keeps the last error string it set).
enum FlagError {
    Hard(TextErrorKind),
    Soft(TextErrorKind),
}

/// memcached's `_meta_flag_preparse`.
fn preparse<'a>(tokens: Tokens<'a>, key: &[u8]) -> Result<MetaFlags<'a>, TextErrorKind> {
    let mut f = MetaFlags {
        tokens: tokens.as_bytes(),
        ..MetaFlags::default()
    };
    let mut seen: u128 = 0;
    let mut soft: Option<TextErrorKind> = None;
    let mut failed = false;
    for tok in tokens {
        let o = tok[0];
        if o >= 127 || seen & (1u128 << o) != 0 {
            return Err(TextErrorKind::DuplicateFlag);
        }
        seen |= 1u128 << o;
        let arg = &tok[1..];
        let outcome: Result<(), FlagError> = (|| {
            let exptime = |arg| {
                parse_i32(arg)
                    .map(i64::from)
                    .ok_or(FlagError::Soft(TextErrorKind::BadToken))
            };
            let cas = |arg| parse_u64(arg).ok_or(FlagError::Soft(TextErrorKind::BadToken));
            match o {
                b'b' => {
                    if base64::decode_key(key).is_none() {
                        return Err(FlagError::Soft(TextErrorKind::KeyDecode));
                    }
                    f.base64_key = true;
                }
                b'N' => f.vivify_ttl = Some(exptime(arg)?),
                b'T' => f.ttl = Some(exptime(arg)?),
                b'R' => f.recache_ttl = Some(exptime(arg)?),
                b'l' => f.return_last_access = true,
                b'O' => f.opaque = Some(arg),
                b'P' | b'L' => {}
                b'k' => f.return_key = true,
                b's' => f.return_size = true,
                b't' => f.return_ttl = true,
                b'c' => f.return_cas = true,
                b'f' => f.return_flags = true,
                b'v' => f.return_value = true,
                b'h' => f.return_hit = true,
                b'u' => f.no_bump = true,
                b'q' => f.quiet = true,
                // memcached sets no error text for F, so the current one stands.
                b'F' => {
                    f.client_flags =
                        Some(parse_u32(arg).ok_or(FlagError::Soft(soft_or_format(soft)))?)
                }
                b'C' => f.compare_cas = Some(cas(arg)?),
                b'E' => f.new_cas = Some(cas(arg)?),
                b'M' => {
                    if tok.len() != 2 {
                        return Err(FlagError::Soft(TextErrorKind::ModeTokenLength));
                    }
                    f.mode = Some(tok[1]);
                }
                b'J' => {
                    f.initial = Some(
                        parse_u64(arg)
                            .ok_or(FlagError::Soft(TextErrorKind::InvalidInitialValue))?,
                    )
                }
                b'D' => {
                    f.delta = Some(
                        parse_u64(arg).ok_or(FlagError::Soft(TextErrorKind::InvalidDeltaValue))?,
                    )
                }
                b'I' => f.invalidate = true,
                b'x' => f.remove_value = true,
                _ => return Err(FlagError::Hard(TextErrorKind::InvalidFlag)),
            }
            Ok(())
        })();
        match outcome {
            Ok(()) => {}
            Err(FlagError::Hard(kind)) => return Err(kind),
            Err(FlagError::Soft(kind)) => {
                failed = true;
                soft = Some(kind);
            }
        }
    }
    if failed {
        return Err(soft_or_format(soft));
    }
    Ok(f)
}

fn soft_or_format(soft: Option<TextErrorKind>) -> TextErrorKind {
    soft.unwrap_or(TextErrorKind::BadCommandLineFormat)
}

/// The `O` check memcached makes while writing the answer (before any effect for md and ms;
/// after the lookup for mg and ma, which larder does not reproduce).
fn opaque_ok(flags: &MetaFlags<'_>) -> bool {
    flags.opaque.is_none_or(|o| o.len() < OPAQUE_TOKEN_MAX)
}

/// Parses a meta command whose name is `m` + `c`; `tokens` follows the name.
pub(crate) fn parse<'a>(
    c: u8,
    buf: &'a [u8],
    line_end: usize,
    tokens: Tokens<'a>,
    limits: &Limits,
) -> Result<Option<(TextRequest<'a>, usize)>, TextError> {
    let err = |kind| Err(TextError::new(kind, line_end));
    let done = |req| Ok(Some((req, line_end)));
    let mut rest = tokens;
    match c {
        b'n' => return done(TextRequest::MetaNoop),
        b'e' => {
            let Some(raw) = rest.next() else {
                return err(TextErrorKind::BadCommandLineFormat);
            };
            if !key_ok(raw, limits) {
                return err(TextErrorKind::BadCommandLineFormat);
            }
            let base64 = rest.next() == Some(b"b");
            if base64 && base64::decode_key(raw).is_none() {
                return err(TextErrorKind::BadCommandLineFormat);
            }
            return done(TextRequest::MetaDebug {
                key: MetaKey { raw, base64 },
            });
        }
        b'g' | b's' | b'd' | b'a' => {}
        _ => return err(TextErrorKind::UnknownCommand),
    }

    let Some(raw) = rest.next() else {
        return err(TextErrorKind::UnknownCommand);
    };
    if raw.len() > limits.key_len_max {
        return err(TextErrorKind::BadCommandLineFormat);
    }
    let count = 1 + tokens.count();
    if c == b's' {
        return meta_set(buf, line_end, raw, rest, count, limits);
    }
    if count >= MAX_TOKENS {
        return err(if c == b'g' {
            TextErrorKind::MetaGetFlagsTooLong
        } else {
            TextErrorKind::MetaFlagsTooLong
        });
    }
    let flags = match preparse(rest, raw) {
        Ok(f) => f,
        Err(_) if c != b'g' => return err(TextErrorKind::InvalidOrDuplicateFlag),
        Err(kind) => return err(kind),
    };
    let key = MetaKey {
        raw,
        base64: flags.base64_key,
    };
    let op = if c == b'a' {
        match flags.mode {
            None | Some(b'I' | b'+') => CounterOp::Incr,
            Some(b'D' | b'-') => CounterOp::Decr,
            Some(_) => return err(TextErrorKind::InvalidMetaArithmeticMode),
        }
    } else {
        CounterOp::Incr
    };
    if !opaque_ok(&flags) {
        return err(TextErrorKind::OpaqueTooLong);
    }
    if !key_ok(raw, limits) {
        return err(TextErrorKind::BadCommandLineFormat);
    }
    done(match c {
        b'g' => TextRequest::MetaGet(MetaGet { key, flags }),
        b'd' => TextRequest::MetaDelete(MetaDelete { key, flags }),
        _ => TextRequest::MetaArithmetic(MetaArithmetic {
            key,
            op,
            delta: flags.delta.unwrap_or(1),
            initial: flags.initial.unwrap_or(0),
            flags,
        }),
    })
}

/// `ms`: memcached's `process_mset_command`. Errors before the data length is known skip the
/// line only; later ones skip the data block too.
fn meta_set<'a>(
    buf: &'a [u8],
    line_end: usize,
    raw: &'a [u8],
    mut rest: Tokens<'a>,
    count: usize,
    limits: &Limits,
) -> Result<Option<(TextRequest<'a>, usize)>, TextError> {
    let err = |kind| Err(TextError::new(kind, line_end));
    let Some(datalen) = rest.next() else {
        return err(TextErrorKind::BadCommandLineFormat);
    };
    if count >= MAX_TOKENS {
        return err(TextErrorKind::MetaFlagsTooLong);
    }
    let Some(vlen) = parse_i32(datalen).filter(|&v| (0..=i32::MAX - 2).contains(&v)) else {
        return err(TextErrorKind::BadCommandLineFormat);
    };
    let total = line_end + usize::try_from(vlen).unwrap_or(0) + 2;
    let swallow = |kind| Err(TextError::new(kind, total));
    let flags = match preparse(rest, raw) {
        Ok(f) => f,
        Err(kind) => return swallow(kind),
    };
    // memcached notes a long opaque, then checks the mode, and reports the mode first.
    let mode = match flags.mode {
        None | Some(b'S') => MetaSetMode::Set,
        Some(b'E') => MetaSetMode::Add,
        Some(b'A') => MetaSetMode::Append,
        Some(b'P') => MetaSetMode::Prepend,
        Some(b'R') => MetaSetMode::Replace,
        Some(_) => return swallow(TextErrorKind::InvalidMetaSetMode),
    };
    if !opaque_ok(&flags) {
        return swallow(TextErrorKind::OpaqueTooLong);
    }
    // Meta commands answer every error, q or not.
    let key = MetaKey {
        raw,
        base64: flags.base64_key,
    };
    let item = ItemHead {
        key: raw,
        key_len: key.with_bytes(<[u8]>::len),
        base64: flags.base64_key,
        flags: flags.client_flags.unwrap_or(0),
        drops_stale: true,
    };
    let Some((data, total)) = data_block(buf, line_end, vlen, limits, false, &item)? else {
        return Ok(None);
    };
    Ok(Some((
        TextRequest::MetaSet(MetaSet {
            key,
            data,
            mode,
            flags,
        }),
        total,
    )))
}

#[cfg(test)]
mod tests;
