//! The master's socket as the link reads it: plain TCP, or a TLS session over it with
//! `tls-replication yes` ([`connect`]); replies line by line during the handshake, then the
//! file of a full resync (`$<len>` or between EOF marks) as a bounded reader, then the
//! stream. Every wait polls the link's stop flag and the master client's kill flag, and
//! gives up after `repl-timeout` without bytes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use larder_commands::config::Param;
use larder_commands::state::ClientHandle;
use larder_commands::Server;
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};

use super::Link;

/// How long one read waits before the link checks its flags (and sends its ACK).
pub const POLL: Duration = Duration::from_millis(100);
/// The longest reply line the handshake accepts.
const LINE_MAX: usize = 64 * 1024;
/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 * 1024;

/// The connection to the master.
pub enum Sock {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sock::Plain(s) => s.read(buf),
            Sock::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Plain(s) => s.write(buf),
            Sock::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sock::Plain(s) => s.flush(),
            Sock::Tls(s) => s.flush(),
        }
    }
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Connect to the link's master, reads polling every [`POLL`], writes bounded by
/// `timeout`; with `tls-replication yes`, complete a TLS handshake first (within `timeout`).
/// The socket, the master's address and the local one.
pub fn connect(
    server: &Server,
    link: &Link,
    timeout: Duration,
) -> Result<(Sock, SocketAddr, String), String> {
    let addr = (link.host.as_str(), link.port)
        .to_socket_addrs()
        .map_err(|e| format!("resolving the master: {e}"))?
        .next()
        .ok_or("the master's name resolves to nothing")?;
    let mut sock = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("connecting to the master: {e}"))?;
    sock.set_read_timeout(Some(POLL))
        .map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let _ = sock.set_nodelay(true);
    let laddr = sock.local_addr().map(|a| a.to_string()).unwrap_or_default();
    if server.config.num(Param::TlsReplication) == 0 {
        return Ok((Sock::Plain(sock), addr, laddr));
    }
    let config = crate::tls::build_client(&|p| server.config.text(p))
        .map_err(|e| format!("TLS settings for the link to the master: {e}"))?;
    // Only a placeholder: no SNI is sent and the name is not checked, as with Redis.
    let name = ServerName::try_from(link.host.clone())
        .unwrap_or_else(|_| ServerName::IpAddress(addr.ip().into()));
    let mut conn = ClientConnection::new(Arc::clone(&config), name)
        .map_err(|e| format!("TLS to the master: {e}"))?;
    let deadline = Instant::now() + timeout;
    while conn.is_handshaking() {
        match conn.complete_io(&mut sock) {
            Ok(_) => {}
            Err(e) if would_block(&e) && Instant::now() < deadline && !link.stopped() => {}
            Err(e) => return Err(format!("TLS handshake with the master failed: {e}")),
        }
    }
    Ok((
        Sock::Tls(Box::new(StreamOwned::new(conn, sock))),
        addr,
        laddr,
    ))
}

pub struct Wire<'a> {
    pub sock: Sock,
    /// Bytes read and not consumed yet.
    pub buf: Vec<u8>,
    pub link: &'a Link,
    pub client: &'a ClientHandle,
    pub timeout: Duration,
    /// When the master last sent bytes.
    pub last_read: Instant,
}

impl Wire<'_> {
    /// Why the link must end now, if it must.
    pub fn check(&self) -> Result<(), String> {
        if self.link.stopped() {
            return Err("the link was stopped".into());
        }
        if self
            .client
            .killed
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err("the master's connection was killed".into());
        }
        if self.last_read.elapsed() > self.timeout {
            return Err("timeout: no data from the master for repl-timeout".into());
        }
        Ok(())
    }

    /// Read what the socket has (waiting at most [`POLL`]); Ok(0) when nothing came.
    pub fn fill(&mut self) -> Result<usize, String> {
        self.check()?;
        let start = self.buf.len();
        self.buf.resize(start + READ_CHUNK, 0);
        let got = self.sock.read(&mut self.buf[start..]);
        self.buf.truncate(start + *got.as_ref().unwrap_or(&0));
        match got {
            Ok(0) => Err("the master closed the connection".into()),
            Ok(n) => {
                self.last_read = Instant::now();
                self.link.io();
                Ok(n)
            }
            Err(e) if would_block(&e) => Ok(0),
            Err(e) => Err(format!("reading from the master: {e}")),
        }
    }

    /// The next line (without its CRLF).
    pub fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let text = String::from_utf8_lossy(&line);
                return Ok(text.trim_end_matches(['\r', '\n']).to_string());
            }
            if self.buf.len() > LINE_MAX {
                return Err("the master sent a reply line too long".into());
            }
            self.fill()?;
        }
    }

    /// Send a command and read its one-line reply.
    pub fn call(&mut self, argv: &[&[u8]]) -> Result<String, String> {
        self.send(argv)?;
        self.line()
    }

    pub fn send(&mut self, argv: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        larder_resp::encode_command(argv, &mut out);
        self.sock
            .write_all(&out)
            .and_then(|()| self.sock.flush())
            .map_err(|e| format!("writing to the master: {e}"))
    }
}

/// How the file of a full resync ends.
pub enum Framing {
    /// `$<len>`: this many bytes are left.
    Length(u64),
    /// `$EOF:<mark>`: the file ends where the 40-byte mark appears.
    Mark(Vec<u8>),
}

/// The file of a full resync as a reader: it ends with the file, whatever the RDB reader
/// does, and reports progress. `delay_us` (`key-load-delay`, for tests) slows each read.
pub struct Payload<'w, 'a> {
    pub wire: &'w mut Wire<'a>,
    pub framing: Framing,
    pub read: u64,
    pub done: bool,
    pub delay_us: u64,
}

impl Payload<'_, '_> {
    /// Read and drop what is left of the file.
    pub fn drain(&mut self) -> Result<(), String> {
        let mut sink = [0u8; 16 * 1024];
        loop {
            match self.read(&mut sink) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    fn available(&mut self) -> Result<usize, String> {
        loop {
            let buf = &self.wire.buf;
            let n = match &self.framing {
                Framing::Length(left) => buf.len().min(*left as usize),
                Framing::Mark(mark) => {
                    if let Some(at) = buf.windows(mark.len()).position(|w| w == &mark[..]) {
                        if at == 0 {
                            self.wire.buf.drain(..mark.len());
                            self.done = true;
                            return Ok(0);
                        }
                        at
                    } else {
                        // The mark may begin in the last bytes: keep them back.
                        buf.len().saturating_sub(mark.len() - 1)
                    }
                }
            };
            if n > 0 {
                return Ok(n);
            }
            if let Framing::Length(0) = self.framing {
                self.done = true;
                return Ok(0);
            }
            self.wire.fill()?;
        }
    }
}

impl Read for Payload<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        let avail = self.available().map_err(std::io::Error::other)?;
        let mut n = avail.min(out.len());
        if self.delay_us > 0 {
            n = n.min(1024);
            std::thread::sleep(Duration::from_micros(self.delay_us));
        }
        out[..n].copy_from_slice(&self.wire.buf[..n]);
        self.wire.buf.drain(..n);
        if let Framing::Length(left) = &mut self.framing {
            *left -= n as u64;
        }
        self.read += n as u64;
        self.wire.link.sync_read(self.read);
        Ok(n)
    }
}
