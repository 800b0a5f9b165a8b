//! memcached 1.6.18's log lines (`logger.c`'s `_logger_parse_*`), byte for byte: `ts=` with
//! unpadded microseconds, `gid=`, the event's fields, and a bare `\n` at the end.

use std::fmt::Write as _;

/// The longest key a line shows, as memcached's (`KEY_MAX_LENGTH`); a longer RESP key is
/// cut to it.
const KEY_SHOWN_MAX: usize = 250;

/// `key` url-encoded as memcached's `uriencode`, cut to [`KEY_SHOWN_MAX`] bytes first.
pub fn uriencode(key: &[u8], out: &mut String) {
    super::super::uriencode(&key[..key.len().min(KEY_SHOWN_MAX)], |b| {
        out.push(char::from(b));
    });
}

/// A line's common head: `ts=<sec>.<usec> gid=<n> ` (memcached prints the microseconds
/// with `%d`, without leading zeros).
fn head(out: &mut String, now_us: u64, gid: u64) {
    let _ = write!(
        out,
        "ts={}.{} gid={gid} ",
        now_us / 1_000_000,
        now_us % 1_000_000
    );
}

/// What a fetch found: memcached's `was_found` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    NotFound,
    Found,
    Expired,
}

/// `type=item_get`.
pub fn item_get(
    now_us: u64,
    gid: u64,
    key: &[u8],
    found: Fetch,
    clsid: usize,
    cfd: i64,
    size: usize,
) -> String {
    let mut s = String::with_capacity(96 + key.len());
    head(&mut s, now_us, gid);
    s.push_str("type=item_get key=");
    uriencode(key, &mut s);
    let status = match found {
        Fetch::NotFound => "not_found",
        Fetch::Found => "found",
        Fetch::Expired => "expired",
    };
    let _ = writeln!(s, " status={status} clsid={clsid} cfd={cfd} size={size}");
    s
}

/// The outcome of a store: memcached's `status_map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreStatus {
    NotStored,
    Stored,
    Exists,
    NotFound,
}

/// `type=item_store`. `cmd` is one of memcached's `cmd_map` names; `ttl` the seconds left.
#[allow(clippy::too_many_arguments)]
pub fn item_store(
    now_us: u64,
    gid: u64,
    key: &[u8],
    status: StoreStatus,
    cmd: &str,
    ttl: u32,
    clsid: usize,
    cfd: i64,
    size: usize,
) -> String {
    let mut s = String::with_capacity(128 + key.len());
    head(&mut s, now_us, gid);
    s.push_str("type=item_store key=");
    uriencode(key, &mut s);
    let status = match status {
        StoreStatus::NotStored => "not_stored",
        StoreStatus::Stored => "stored",
        StoreStatus::Exists => "exists",
        StoreStatus::NotFound => "not_found",
    };
    let _ = writeln!(
        s,
        " status={status} cmd={cmd} ttl={ttl} clsid={clsid} cfd={cfd} size={size}"
    );
    s
}

#[allow(clippy::too_many_arguments)]
/// `type=eviction`: `ttl` is -1 for an item without a deadline, `la` the seconds since its
/// last access.
pub fn eviction(
    now_us: u64,
    gid: u64,
    key: &[u8],
    fetched: bool,
    ttl: i64,
    la: u32,
    clsid: usize,
    size: usize,
) -> String {
    let mut s = String::with_capacity(112 + key.len());
    head(&mut s, now_us, gid);
    s.push_str("type=eviction key=");
    uriencode(key, &mut s);
    let fetch = if fetched { "yes" } else { "no" };
    let _ = writeln!(
        s,
        " fetch={fetch} ttl={ttl} la={la} clsid={clsid} size={size}"
    );
    s
}

/// The address and port of `addr` (`1.2.3.4:5`, `[::1]:5`); `unix` and 0 for anything else,
/// as memcached shows a Unix socket's peer.
fn endpoint(addr: &str) -> (&str, u16) {
    match addr.rsplit_once(':') {
        Some((ip, port)) => match port.parse() {
            Ok(port) => (ip.trim_start_matches('[').trim_end_matches(']'), port),
            Err(_) => ("unix", 0),
        },
        None => ("unix", 0),
    }
}

/// `type=conn_new`.
pub fn conn_new(now_us: u64, gid: u64, addr: &str, cfd: i64) -> String {
    let (rip, rport) = endpoint(addr);
    let mut s = String::with_capacity(112);
    head(&mut s, now_us, gid);
    let _ = writeln!(
        s,
        "type=conn_new rip={rip} rport={rport} transport=tcp cfd={cfd}"
    );
    s
}

/// `type=conn_close`, with `reason=normal`: the network layer does not tell the door why a
/// connection closed (memcached also says `error`, `idle_timeout` or `shutdown`).
pub fn conn_close(now_us: u64, gid: u64, addr: &str, cfd: i64) -> String {
    let (rip, rport) = endpoint(addr);
    let mut s = String::with_capacity(128);
    head(&mut s, now_us, gid);
    let _ = writeln!(
        s,
        "type=conn_close rip={rip} rport={rport} transport=tcp reason=normal cfd={cfd}"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of a real memcached 1.6.18 session (`watch fetchers mutations connevents`).
    #[test]
    fn lines_match_memcached() {
        let ts = 1_795_688_217_033_932;
        assert_eq!(
            item_get(ts, 3, b"a%20b", Fetch::NotFound, 0, 17, 0),
            "ts=1795688217.33932 gid=3 type=item_get key=a%2520b status=not_found clsid=0 \
             cfd=17 size=0\n"
        );
        assert_eq!(
            item_store(
                ts,
                4,
                "ék".as_bytes(),
                StoreStatus::Stored,
                "set",
                100,
                1,
                17,
                3
            ),
            "ts=1795688217.33932 gid=4 type=item_store key=%C3%A9k status=stored cmd=set \
             ttl=100 clsid=1 cfd=17 size=3\n"
        );
        assert_eq!(
            conn_new(ts, 2, "127.0.0.1:51686", 17),
            "ts=1795688217.33932 gid=2 type=conn_new rip=127.0.0.1 rport=51686 transport=tcp \
             cfd=17\n"
        );
        assert_eq!(
            conn_close(ts, 28, "[::1]:51686", 17),
            "ts=1795688217.33932 gid=28 type=conn_close rip=::1 rport=51686 transport=tcp \
             reason=normal cfd=17\n"
        );
        assert_eq!(
            eviction(ts, 9, b"k-._~", true, -1, 5, 0, 10),
            "ts=1795688217.33932 gid=9 type=eviction key=k-._~ fetch=yes ttl=-1 la=5 clsid=0 \
             size=10\n"
        );
    }

    #[test]
    fn long_keys_are_cut_at_memcacheds_key_limit() {
        let mut s = String::new();
        uriencode(&[b'x'; 300], &mut s);
        assert_eq!(s.len(), 250);
        s.clear();
        uriencode(b" \x00\xff", &mut s);
        assert_eq!(s, "%20%00%FF");
    }
}
