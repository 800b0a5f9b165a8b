//! One TLS connection's record layer: ciphertext from the socket in, plaintext out, and the
//! reverse. Generic over the socket, and built on rustls and `std` alone, so that the fuzz
//! target (`fuzz/fuzz_targets/tls_accept.rs`) drives it from memory.

use std::io::{self, BufRead, IoSlice, Read, Write};
use std::sync::Arc;

use rustls::{ServerConfig, ServerConnection};

/// The most ciphertext a client may send before its handshake completes: a ClientHello and
/// a certificate chain fit many times over, and a peer that streams bytes without ever
/// finishing is cut off here rather than at the handshake timeout.
pub const HANDSHAKE_BYTES_MAX: usize = 128 * 1024;

/// A server-side TLS session.
pub struct TlsSession {
    conn: ServerConnection,
    /// Ciphertext bytes read while the handshake was under way.
    handshake_bytes: usize,
    /// The peer closed the socket or sent close_notify: no more plaintext will come.
    eof: bool,
    /// The poller saw the peer's FIN: read until EOF rather than trust a short read to mean
    /// the socket is drained (`Conn::read_closed`).
    pub peer_closed: bool,
}

/// An error that ends the session: a bad handshake, a bad record, too many handshake bytes.
fn fatal(why: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

impl TlsSession {
    /// A session that will handshake with `config`.
    pub fn new(config: Arc<ServerConfig>) -> Result<TlsSession, rustls::Error> {
        Ok(TlsSession {
            conn: ServerConnection::new(config)?,
            handshake_bytes: 0,
            eof: false,
            peer_closed: false,
        })
    }

    /// Whether the handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Whether ciphertext waits for the socket to take it.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Reads up to `dst.len()` bytes of plaintext into `dst`; see [`TlsSession::read_with`].
    pub fn read<S: Read + Write>(&mut self, sock: &mut S, dst: &mut [u8]) -> io::Result<usize> {
        let mut at = 0;
        let want = dst.len();
        self.read_with(sock, want, |chunk| {
            dst[at..at + chunk.len()].copy_from_slice(chunk);
            at += chunk.len();
        })
    }

    /// Appends up to `want` bytes of plaintext to `buf`; see [`TlsSession::read_with`].
    pub fn read_appending<S: Read + Write>(
        &mut self,
        sock: &mut S,
        buf: &mut Vec<u8>,
        want: usize,
    ) -> io::Result<usize> {
        self.read_with(sock, want, |chunk| buf.extend_from_slice(chunk))
    }

    /// Hands `put` up to `want` bytes of plaintext, reading and decrypting records from
    /// `sock` as needed (and answering the handshake on it). As a socket's `read`: `Ok(0)`
    /// once the peer has closed; `WouldBlock` when nothing is ready. Fewer than `want` bytes
    /// means the socket is drained (it would block, or the peer closed): a caller under
    /// edge-triggered polling may wait for the next event then.
    pub fn read_with<S: Read + Write>(
        &mut self,
        sock: &mut S,
        want: usize,
        mut put: impl FnMut(&[u8]),
    ) -> io::Result<usize> {
        let mut got = 0;
        // Set once a read from the socket returned less than it asked for: the socket is
        // drained, so another read would only return `WouldBlock` (one wasted system call
        // per request).
        let mut drained = false;
        loop {
            // Plaintext already decrypted goes first: rustls refuses more ciphertext while
            // it holds too much of it.
            while got < want {
                let mut reader = self.conn.reader();
                match reader.fill_buf() {
                    Ok([]) => {
                        self.eof = true;
                        break;
                    }
                    Ok(chunk) => {
                        let take = chunk.len().min(want - got);
                        put(&chunk[..take]);
                        reader.consume(take);
                        got += take;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // The peer closed without close_notify.
                    Err(_) => {
                        self.eof = true;
                        break;
                    }
                }
            }
            if got == want || self.eof {
                return Ok(got);
            }
            if drained {
                return if got > 0 {
                    Ok(got)
                } else {
                    Err(io::ErrorKind::WouldBlock.into())
                };
            }
            let mut probe = Probe {
                sock: &mut *sock,
                short: false,
            };
            let read = self.conn.read_tls(&mut probe);
            drained = probe.short && !self.peer_closed;
            match read {
                Ok(0) => {
                    self.eof = true;
                    continue;
                }
                Ok(n) if self.conn.is_handshaking() => {
                    self.handshake_bytes += n;
                    if self.handshake_bytes > HANDSHAKE_BYTES_MAX {
                        return Err(fatal("TLS handshake too long"));
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return if got > 0 { Ok(got) } else { Err(e) };
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Err(e) = self.conn.process_new_packets() {
                // The alert rustls queued for the peer, if the socket takes it.
                let _ = self.flush(sock);
                return Err(fatal(e));
            }
            // The handshake's answer, if this record asked for one.
            self.flush(sock)?;
        }
    }

    /// Encrypts what it can of `iov` and writes it to `sock`; returns the plaintext bytes
    /// taken. Nothing new is taken while earlier ciphertext waits for the socket (then
    /// `WouldBlock`), so the caller's output is the only backlog that grows; never `Ok(0)`
    /// for a non-empty `iov`.
    pub fn write_vectored<S: Read + Write>(
        &mut self,
        sock: &mut S,
        iov: &[IoSlice<'_>],
    ) -> io::Result<usize> {
        if !self.flush(sock)? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.conn.writer().write_vectored(iov)?;
        self.flush(sock)?;
        if n == 0 && iov.iter().any(|s| !s.is_empty()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Writes pending ciphertext to `sock`: `Ok(true)` once none is left, `Ok(false)` when the
    /// socket is full.
    pub fn flush<S: Read + Write>(&mut self, sock: &mut S) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// A socket that remembers whether its last read returned fewer bytes than asked for.
struct Probe<'a, S> {
    sock: &'a mut S,
    short: bool,
}

impl<S: Read> Read for Probe<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}
