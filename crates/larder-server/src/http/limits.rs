//! Who may call the door and how much: bearer-token authentication (checked as AUTH checks
//! it), CORS, and per-address rate limits.
//!
//! - **Authentication**: with `requirepass` set, every request but the operations endpoints
//!   and the console page carries a token, `Authorization: Bearer <token>` or `?_token=` (for
//!   browsers' `EventSource`, which cannot send headers). The token is `<user>:<password>` or
//!   a password alone for `default`, checked by AUTH's own check, against the password in
//!   force for this very request: `CONFIG SET requirepass` applies to keep-alive connections
//!   at once.
//! - **CORS**: `http-cors-origins` lists the origins a browser page may call the door from
//!   (`*`: any); a page served by the door itself (the console) is always allowed. An allowed
//!   `Origin` is echoed in every response; a preflight (`OPTIONS` with
//!   `Access-Control-Request-Method`) is answered here, without a token. A request from a
//!   browser page whose origin is not allowed is refused with `403` before it runs, so a
//!   page cannot write to the door through a "simple" cross-origin request (one sent without
//!   a preflight) whose answer it could not even read.
//! - **Rate limit**: `http-rate-limit` requests per second per user logged in with a token
//!   (other than `default`), across its addresses, and per client address for the rest, a
//!   token bucket whose burst is one second's worth; beyond it, `429` with `Retry-After`.
//!   IPv6 clients are counted per /64, the block one host usually has.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::Arc;

use larder_commands::config::Param;
use larder_http::{Method, Query};
use parking_lot::Mutex;

use super::{Action, Cx};
use crate::acl_door::Admission;

/// The most body bytes of a request refused with `413` that are read and dropped before the
/// connection closes, so that a client that sends all its body before reading the answer sees
/// the `413` instead of a reset connection. A larger announced body closes at once.
pub const DISCARD_MAX: u64 = 64 << 20;

/// Response headers a browser script may read (CORS).
pub const EXPOSED_HEADERS: &str = "ETag, X-Larder-TTL-Ms, Retry-After";

/// Methods a preflight is told the door accepts.
const ALLOW_METHODS: &str = "GET, HEAD, PUT, POST, DELETE, OPTIONS";

/// Request headers a preflight is told the door accepts.
const ALLOW_HEADERS: &str =
    "Authorization, Content-Type, If-Match, If-None-Match, Upstash-Encoding, Last-Event-ID";

/// How long a browser may cache a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE_S: u32 = 600;

/// Shards of [`Rates`], so workers rarely wait for each other.
const RATE_SHARDS: usize = 16;

/// Addresses one shard tracks at most. Past it, addresses without a bucket of their own share
/// the shard's overflow bucket: memory stays bounded, and a flood from many addresses is
/// still limited as a whole.
const RATE_SHARD_ADDRESSES: usize = 4096;

/// A bucket untouched this long is full again, as good as forgotten.
const BUCKET_REFILL_MS: u64 = 1000;

/// Whose budget a request is counted against.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RateKey {
    /// A client address (an IPv6 one by its /64): requests without a user of their own.
    Addr(IpAddr),
    /// A user logged in with a token (other than `default`): its requests from every address.
    User(Arc<str>),
}

impl From<IpAddr> for RateKey {
    fn from(addr: IpAddr) -> RateKey {
        RateKey::Addr(rate_key(addr))
    }
}

/// Request budgets (`http-rate-limit`) per address or user: token buckets holding up to one
/// second's worth of requests.
pub struct Rates {
    shards: [Mutex<RateShard>; RATE_SHARDS],
}

impl Default for Rates {
    fn default() -> Rates {
        Rates {
            shards: std::array::from_fn(|_| Mutex::new(RateShard::default())),
        }
    }
}

#[derive(Default)]
struct RateShard {
    buckets: HashMap<RateKey, Bucket>,
    /// Shared by the addresses that find the shard full.
    overflow: Bucket,
    /// A full shard forgets its idle addresses no more often than this (Unix ms), so a flood
    /// does not scan it on every request.
    next_prune_ms: u64,
}

/// A token bucket, counted in thousandths of a request.
#[derive(Clone, Copy, Default)]
struct Bucket {
    milli: u64,
    /// When `milli` was last brought up to date (Unix ms); 0: never used (full).
    at_ms: u64,
}

impl Bucket {
    /// Takes one request out if there is one; otherwise the ms until there will be.
    fn take(&mut self, per_s: u64, now_ms: u64) -> Result<(), u64> {
        let cap = per_s.saturating_mul(1000);
        self.milli = if self.at_ms == 0 {
            cap
        } else {
            // `per_s` thousandths per ms.
            let refill = now_ms.saturating_sub(self.at_ms).saturating_mul(per_s);
            self.milli.saturating_add(refill).min(cap)
        };
        self.at_ms = now_ms.max(1);
        if self.milli >= 1000 {
            self.milli -= 1000;
            Ok(())
        } else {
            Err((1000 - self.milli).div_ceil(per_s))
        }
    }
}

impl Rates {
    /// Counts one request from `key` (an address or a user) against a budget of `per_s` a
    /// second. `Err`: over budget, with the whole seconds to wait (at least 1).
    pub fn check(&self, key: impl Into<RateKey>, per_s: u64, now_ms: u64) -> Result<(), u64> {
        let addr = key.into();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        addr.hash(&mut h);
        let mut shard = self.shards[h.finish() as usize % RATE_SHARDS].lock();
        let shard = &mut *shard;
        if shard.buckets.len() >= RATE_SHARD_ADDRESSES
            && now_ms >= shard.next_prune_ms
            && !shard.buckets.contains_key(&addr)
        {
            shard
                .buckets
                .retain(|_, b| now_ms.saturating_sub(b.at_ms) < BUCKET_REFILL_MS);
            shard.next_prune_ms = now_ms + BUCKET_REFILL_MS / 10;
        }
        let bucket = if shard.buckets.len() < RATE_SHARD_ADDRESSES {
            shard.buckets.entry(addr).or_default()
        } else {
            shard.buckets.get_mut(&addr).unwrap_or(&mut shard.overflow)
        };
        bucket
            .take(per_s, now_ms)
            .map_err(|wait_ms| wait_ms.div_ceil(1000).max(1))
    }

    /// Addresses with a bucket of their own.
    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        self.shards.iter().map(|s| s.lock().buckets.len()).sum()
    }
}

/// The address a budget belongs to: an IPv4 address, or an IPv6 address's /64.
fn rate_key(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
        v4 => v4,
    }
}

/// The IP address of a client address as CLIENT LIST shows it (`1.2.3.4:5`, `[::1]:5`).
fn client_ip(addr: &str) -> Option<IpAddr> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// The rate limit (`http-rate-limit`): a request of a user logged in with a token, other
/// than `default`, counts against that user's budget, shared by all its addresses; any other
/// (no token, a bare password, a refused token) against its address's. `Some`: answered
/// `429`.
pub fn rate(cx: &mut Cx<'_, '_>) -> Option<Action> {
    let per_s = cx.server.config.num(Param::HttpRateLimit).max(0) as u64;
    // A long poll run again after a wake-up is the same request, already counted.
    if per_s == 0 || cx.wait_until.is_some() {
        return None;
    }
    let key = if cx.state.authenticated && cx.authorized_token.is_some() {
        Some(&cx.state.user.name)
            .filter(|name| &***name != "default")
            .map(|name| RateKey::User(Arc::clone(name)))
    } else {
        None
    };
    let key = key.or_else(|| client_ip(&cx.state.handle.addr).map(RateKey::from))?;
    let wait_s = cx.shared.rates.check(key, per_s, cx.now_ms).err()?;
    Some(too_many(cx, wait_s))
}

/// Checks that come before routing: CORS (the preflight answered, the origin checked and
/// remembered for the response). `Some`: the request is answered.
pub fn screen(cx: &mut Cx<'_, '_>) -> Option<Action> {
    let origin = cx.req.header("origin");
    let preflight = cx.req.method == Method::Options
        && cx.req.header("access-control-request-method").is_some();
    match origin {
        Some(origin) if origin_allowed(cx, origin) => {
            cx.origin = Some(origin);
            if preflight {
                let mut r = cx.start(204);
                r.header("Access-Control-Allow-Methods", ALLOW_METHODS)
                    .header("Access-Control-Allow-Headers", ALLOW_HEADERS)
                    .header_num("Access-Control-Max-Age", PREFLIGHT_MAX_AGE_S);
                r.body(None, b"");
                return Some(cx.done());
            }
        }
        Some(_) => return Some(cx.error(403, "origin not allowed (http-cors-origins)")),
        None if preflight => return Some(cx.error(403, "a preflight needs an Origin")),
        None => {
            // A browser names the site that made a request; one made by another site's page
            // without an Origin (an image, a link) may only reach what needs no token.
            let cross_site = matches!(
                cx.req.header("sec-fetch-site"),
                Some(b"cross-site" | b"same-site")
            );
            if cross_site && !open_path(cx.req.path) {
                return Some(cx.error(403, "cross-site request without an allowed Origin"));
            }
        }
    }
    None
}

/// Paths served without a token: operations endpoints and the console's page.
fn open_path(path: &str) -> bool {
    matches!(
        larder_http::path_segments(path).next(),
        Some("healthz" | "livez" | "readyz" | "metrics" | "ui")
    )
}

/// Whether a browser page of `origin` may call the door: it is listed in `http-cors-origins`
/// (or that lists `*`), or it is the door's own origin (the `Host` the request was sent to).
fn origin_allowed(cx: &Cx<'_, '_>, origin: &[u8]) -> bool {
    let same_origin = cx.req.header("host").is_some_and(|host| {
        [&b"http://"[..], b"https://"]
            .iter()
            .any(|scheme| origin.strip_prefix(*scheme) == Some(host))
    });
    same_origin
        || cx
            .server
            .config
            .text(Param::HttpCorsOrigins)
            .split_ascii_whitespace()
            .any(|o| o == "*" || o.as_bytes().eq_ignore_ascii_case(origin))
}

/// `429` with `Retry-After`.
fn too_many(cx: &mut Cx<'_, '_>, wait_s: u64) -> Action {
    let body = serde_json::json!({
        "error": "too many requests from this address or user (http-rate-limit)"
    })
    .to_string();
    let mut r = cx.start(429);
    r.header_num("Retry-After", wait_s);
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

/// The token the request carries: `Authorization: Bearer <token>`, else `?_token=`.
fn token<'r>(cx: &Cx<'_, 'r>) -> Option<std::borrow::Cow<'r, [u8]>> {
    let header = cx.req.header("authorization").and_then(|v| {
        let (scheme, rest) = v.split_at_checked(7)?;
        scheme
            .eq_ignore_ascii_case(b"bearer ")
            .then(|| rest.trim_ascii())
    });
    match header {
        Some(t) => Some(std::borrow::Cow::Borrowed(t)),
        None => Query(cx.req.query).get("_token"),
    }
}

/// Whether the request may use data endpoints, and as which ACL user. Without a token the
/// request is the default user, admitted while that user needs no password. A token is
/// `<user>:<password>`, or a password alone for `default` (a token whose part before a colon
/// names no user is tried whole as `default`'s password), checked by `Acl::authenticate`; a
/// refused one is logged to ACL LOG and answered `401`. A keep-alive connection keeps the
/// user its token logged in as until the token or any ACL user changes.
pub fn authorized(cx: &mut Cx<'_, '_>) -> bool {
    let Some(token) = token(cx) else {
        *cx.authorized_token = None;
        cx.login.logout(cx.server, cx.state);
        return cx.login.admitted(cx.server, cx.state) == Admission::In;
    };
    let generation = cx.server.acl.generation();
    if cx
        .authorized_token
        .as_ref()
        .is_some_and(|(t, g)| *t == *token && *g == generation)
    {
        return cx.login.admitted(cx.server, cx.state) == Admission::In;
    }
    let acl = &cx.server.acl;
    let (name, pass) = match token.iter().position(|&b| b == b':') {
        Some(i) => (&token[..i], &token[i + 1..]),
        None => (&b"default"[..], &token[..]),
    };
    // A colon may be part of a bare password: the whole token is `default`'s when the part
    // before it names no user.
    let whole_is_password = pass.len() < token.len() && acl.user(name).is_none();
    let user = acl
        .authenticate(name, pass)
        .or_else(|| whole_is_password.then(|| acl.authenticate(b"default", &token))?);
    match user {
        Some(user) => {
            cx.login.enter(cx.server, cx.state, user);
            *cx.authorized_token = Some((token.to_vec(), generation));
            true
        }
        None => {
            larder_commands::acl::log_auth_failure(cx.server, &cx.state.handle, name, "HTTP");
            *cx.authorized_token = None;
            cx.login.logout(cx.server, cx.state);
            cx.state.authenticated = false;
            false
        }
    }
}

/// `401` with a bearer challenge: NOAUTH without a token, WRONGPASS (AUTH's error) with a
/// wrong one.
pub fn unauthorized(cx: &mut Cx<'_, '_>) -> Action {
    let message = if token(cx).is_some() {
        "WRONGPASS invalid username-password pair or user is disabled."
    } else {
        "NOAUTH Authentication required: send Authorization: Bearer <user>:<password>"
    };
    let body = serde_json::json!({ "error": message }).to_string();
    let mut r = cx.start(401);
    r.header("WWW-Authenticate", "Bearer realm=\"larder\"");
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn bucket_bursts_one_second_then_refills() {
        let rates = Rates::default();
        let a = ip("10.0.0.1");
        let t = 1_000_000;
        for _ in 0..5 {
            assert_eq!(rates.check(a, 5, t), Ok(()));
        }
        assert_eq!(rates.check(a, 5, t), Err(1));
        // 200 ms later one request's worth is back.
        assert_eq!(rates.check(a, 5, t + 199), Err(1));
        assert_eq!(rates.check(a, 5, t + 400), Ok(()));
        // Other addresses have budgets of their own.
        assert_eq!(rates.check(ip("10.0.0.2"), 5, t), Ok(()));
        // A slow rate says how long to wait.
        let slow: IpAddr = ip("10.0.0.3");
        assert_eq!(rates.check(slow, 1, t), Ok(()));
        assert_eq!(rates.check(slow, 1, t + 10), Err(1));
    }

    #[test]
    fn a_user_has_one_bucket_across_addresses() {
        let rates = Rates::default();
        let t = 2_000_000;
        let alice = || RateKey::User(Arc::from("alice"));
        assert_eq!(rates.check(alice(), 2, t), Ok(()));
        assert_eq!(rates.check(alice(), 2, t), Ok(()));
        assert_eq!(rates.check(alice(), 2, t), Err(1));
        // Another user and the addresses keep budgets of their own.
        assert_eq!(rates.check(RateKey::User(Arc::from("bob")), 2, t), Ok(()));
        assert_eq!(rates.check(ip("10.0.0.9"), 2, t), Ok(()));
    }

    #[test]
    fn many_addresses_stay_bounded() {
        let rates = Rates::default();
        let t = 5_000_000;
        for i in 0..100_000u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(i));
            let _ = rates.check(ip, 1, t);
        }
        assert!(rates.tracked() <= RATE_SHARDS * RATE_SHARD_ADDRESSES);
        // The overflow is limited as a whole.
        let over = (100_000..101_000u32)
            .filter(|&i| {
                rates
                    .check(IpAddr::V4(std::net::Ipv4Addr::from(i)), 1, t)
                    .is_err()
            })
            .count();
        assert!(over > 900, "{over}");
        // A second later the idle ones are forgotten and new addresses get buckets.
        let fresh = IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(rates.check(fresh, 1, t + 2000), Ok(()));
        assert_eq!(rates.check(fresh, 1, t + 2000), Err(1));
    }

    #[test]
    fn addresses() {
        assert_eq!(client_ip("1.2.3.4:5"), Some(ip("1.2.3.4")));
        assert_eq!(client_ip("[::1]:5"), Some(ip("::1")));
        assert_eq!(client_ip("garbage"), None);
        let a: IpAddr = ip("2001:db8::1");
        let b: IpAddr = ip("2001:db8::ffff:2");
        assert_eq!(rate_key(a), rate_key(b));
        assert_ne!(rate_key(a), rate_key(ip("2001:db8:0:1::1")));
        assert_eq!(rate_key(ip("::ffff:10.1.2.3")), ip("10.1.2.3"));
    }
}
