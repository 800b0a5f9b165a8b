//! `build --from redis://...`: copies keys from a Redis-protocol server over a minimal
//! blocking RESP client.

use std::io::{Read, Write};
use std::net::TcpStream;

use anyhow::{anyhow, bail, Context};
use larder_cache::CacheBuilder;

use super::input::{insert, Owned, Progress};

pub(super) struct RedisOptions {
    pub(super) pattern: Option<String>,
    pub(super) infer_ints: bool,
    pub(super) scan_count: u32,
}

/// A minimal blocking RESP client: pipelined commands over one TCP connection.
struct RespConn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
}

impl RespConn {
    /// Connects to `redis://[:password@]host:port[/db]`.
    fn connect(url: &str) -> anyhow::Result<RespConn> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| anyhow!("not a redis:// URL"))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((auth, rest)) => (Some(auth), rest),
            None => (None, rest),
        };
        let (addr, db) = match rest.split_once('/') {
            Some((addr, db)) if !db.is_empty() => (addr, Some(db)),
            Some((addr, _)) => (addr, None),
            None => (rest, None),
        };
        let addr = if addr.contains(':') {
            addr.to_owned()
        } else {
            format!("{addr}:6379")
        };
        let stream =
            TcpStream::connect(&addr).with_context(|| format!("cannot connect to {addr}"))?;
        stream.set_nodelay(true)?;
        let mut conn = RespConn {
            stream,
            buf: Vec::with_capacity(1 << 16),
            start: 0,
        };
        if let Some(auth) = auth {
            let (user, pass) = auth.split_once(':').unwrap_or(("", auth));
            let reply = if user.is_empty() {
                conn.call(&[b"AUTH", pass.as_bytes()])?
            } else {
                conn.call(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?
            };
            check(&reply, "AUTH")?;
        }
        if let Some(db) = db {
            check(&conn.call(&[b"SELECT", db.as_bytes()])?, "SELECT")?;
        }
        Ok(conn)
    }

    fn call(&mut self, args: &[&[u8]]) -> anyhow::Result<larder_resp::Frame> {
        let mut replies = self.pipeline(&[args.iter().map(|a| a.to_vec()).collect()])?;
        replies.pop().ok_or_else(|| anyhow!("no reply"))
    }

    /// Sends all commands, then reads one reply per command.
    fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> anyhow::Result<Vec<larder_resp::Frame>> {
        let mut out = Vec::new();
        for cmd in cmds {
            let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
            larder_resp::encode_command(&args, &mut out);
        }
        self.stream.write_all(&out)?;
        let mut replies = Vec::with_capacity(cmds.len());
        while replies.len() < cmds.len() {
            match larder_resp::decode(&self.buf[self.start..])
                .map_err(|e| anyhow!("malformed reply from server: {e:?}"))?
            {
                Some((frame, used)) => {
                    self.start += used;
                    replies.push(frame);
                }
                None => {
                    if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    let len = self.buf.len();
                    self.buf.resize(len + (1 << 16), 0);
                    let n = self.stream.read(&mut self.buf[len..])?;
                    self.buf.truncate(len + n);
                    if n == 0 {
                        bail!("server closed the connection");
                    }
                }
            }
        }
        Ok(replies)
    }
}

fn check(reply: &larder_resp::Frame, what: &str) -> anyhow::Result<()> {
    match reply {
        larder_resp::Frame::Error(e) => bail!("{what} failed: {e}"),
        _ => Ok(()),
    }
}

pub(super) fn redis_string(bytes: &[u8], infer_ints: bool) -> Owned {
    match std::str::from_utf8(bytes) {
        Ok(s) if infer_ints => match s.parse::<i64>() {
            // Only canonical integers: "007" or "+1" stay strings, so they read back the same.
            Ok(i) if i.to_string() == s => Owned::I64(i),
            _ => Owned::Str(s.to_owned()),
        },
        Ok(s) => Owned::Str(s.to_owned()),
        Err(_) => Owned::Bytes(bytes.to_vec()),
    }
}

/// Copies keys from a Redis-protocol server with SCAN, TYPE and GET/LRANGE/HGETALL, pipelined
/// per SCAN batch. Returns the counts of skipped keys by type.
pub(super) fn import_redis(
    url: &str,
    opts: &RedisOptions,
    builder: &mut CacheBuilder,
    progress: &mut Progress,
) -> anyhow::Result<Vec<(String, u64)>> {
    use larder_resp::Frame;
    let mut conn = RespConn::connect(url)?;
    let mut skipped: Vec<(String, u64)> = Vec::new();
    let mut cursor = b"0".to_vec();
    loop {
        let mut scan: Vec<&[u8]> = vec![b"SCAN", &cursor];
        if let Some(p) = &opts.pattern {
            scan.extend([b"MATCH".as_slice(), p.as_bytes()]);
        }
        let count = opts.scan_count.to_string();
        scan.extend([b"COUNT".as_slice(), count.as_bytes()]);
        let reply = conn.call(&scan)?;
        check(&reply, "SCAN")?;
        let Frame::Array(parts) = reply else {
            bail!("unexpected SCAN reply {reply:?}")
        };
        let (Some(next), Some(Frame::Array(keys))) = (parts.first(), parts.get(1)) else {
            bail!("unexpected SCAN reply shape");
        };
        let next = next
            .as_bytes()
            .ok_or_else(|| anyhow!("bad SCAN cursor"))?
            .to_vec();
        let keys: Vec<Vec<u8>> = keys
            .iter()
            .filter_map(|k| k.as_bytes().map(<[u8]>::to_vec))
            .collect();

        let types = conn.pipeline(
            &keys
                .iter()
                .map(|k| vec![b"TYPE".to_vec(), k.clone()])
                .collect::<Vec<_>>(),
        )?;
        let mut fetch = Vec::new();
        let mut fetched_keys = Vec::new();
        for (key, ty) in keys.into_iter().zip(types) {
            let ty = ty.as_str().unwrap_or("none").to_owned();
            let cmd: Vec<Vec<u8>> = match ty.as_str() {
                "string" => vec![b"GET".to_vec(), key.clone()],
                "list" => vec![
                    b"LRANGE".to_vec(),
                    key.clone(),
                    b"0".to_vec(),
                    b"-1".to_vec(),
                ],
                "hash" => vec![b"HGETALL".to_vec(), key.clone()],
                "none" => continue, // deleted since SCAN saw it
                other => {
                    match skipped.iter_mut().find(|(t, _)| t == other) {
                        Some((_, n)) => *n += 1,
                        None => skipped.push((other.to_owned(), 1)),
                    }
                    continue;
                }
            };
            fetch.push(cmd);
            fetched_keys.push((key, ty));
        }
        let values = conn.pipeline(&fetch)?;
        for ((key, ty), value) in fetched_keys.into_iter().zip(values) {
            check(&value, "read")?;
            match (ty.as_str(), value) {
                (_, Frame::Null) => {}
                ("string", v) => {
                    let bytes = v.as_bytes().ok_or_else(|| anyhow!("bad GET reply"))?;
                    insert(builder, &key, &redis_string(bytes, opts.infer_ints))?;
                    progress.tick(key.len() + bytes.len());
                }
                ("list", Frame::Array(items)) => {
                    let items = items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            anyhow!(
                                "list {:?} holds non-UTF-8 elements",
                                String::from_utf8_lossy(&key)
                            )
                        })?;
                    let size = items.iter().map(String::len).sum::<usize>();
                    insert(builder, &key, &Owned::StrList(items))?;
                    progress.tick(key.len() + size);
                }
                ("hash", Frame::Array(flat)) => {
                    for pair in flat.chunks(2) {
                        let (Some(f), Some(v)) = (
                            pair.first().and_then(Frame::as_bytes),
                            pair.get(1).and_then(Frame::as_bytes),
                        ) else {
                            bail!("bad HGETALL reply");
                        };
                        hash_field(builder, &key, f, v, opts.infer_ints, progress)?;
                    }
                }
                ("hash", Frame::Map(pairs)) => {
                    for (f, v) in &pairs {
                        let (Some(f), Some(v)) = (f.as_bytes(), v.as_bytes()) else {
                            bail!("bad HGETALL reply");
                        };
                        hash_field(builder, &key, f, v, opts.infer_ints, progress)?;
                    }
                }
                (ty, v) => bail!("unexpected reply for a {ty}: {v:?}"),
            }
        }
        cursor = next;
        if cursor == b"0" {
            return Ok(skipped);
        }
    }
}

fn hash_field(
    builder: &mut CacheBuilder,
    key: &[u8],
    field: &[u8],
    value: &[u8],
    infer_ints: bool,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let mut flat = Vec::with_capacity(key.len() + 1 + field.len());
    flat.extend_from_slice(key);
    flat.push(b'.');
    flat.extend_from_slice(field);
    insert(builder, &flat, &redis_string(value, infer_ints))?;
    progress.tick(flat.len() + value.len());
    Ok(())
}
