//! A connection's pending output and the count of how much of it is written: [`Output`]'s
//! bytes and attachments, laid out for `writev` and advanced by partial writes ([`Sent`]).
//! Apart from `conn.rs` because it is pure bookkeeping over buffers, tested without a socket.

use std::io::IoSlice;

use larder_resp::Attachments;

/// Pieces of output one `writev` sends at most.
pub(super) const MAX_IOV: usize = 64;

/// A connection's pending output: bytes, and large values sent by reference from where they
/// are stored instead of being copied into the bytes (RESP's `ReplyBuf::bulk_shared`).
#[derive(Debug, Default)]
pub struct Output {
    pub bytes: Vec<u8>,
    /// Each goes out right before the byte of `bytes` at its position.
    pub attached: Attachments,
}

/// How much of an [`Output`] has been written.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// Bytes of `Output::bytes`.
    pub(super) bytes: usize,
    /// Attachments written whole; the next one sits at `bytes` once `att_written > 0`.
    pub(super) att_next: usize,
    /// Bytes written of the next attachment.
    att_written: usize,
    /// Bytes written of all attachments.
    att_done: usize,
}

impl Sent {
    /// All bytes written so far.
    pub(super) fn total(&self) -> usize {
        self.bytes + self.att_done
    }

    /// Bytes of `out` not written yet.
    pub(super) fn pending(&self, out: &Output) -> usize {
        (out.bytes.len() - self.bytes) + (out.attached.bytes() - self.att_done)
    }

    /// Fills `iov` with what of `out` is not written yet, in order; returns how many pieces.
    pub(super) fn gather<'a>(&self, out: &'a Output, iov: &mut [IoSlice<'a>; MAX_IOV]) -> usize {
        let mut k = 0;
        let mut pos = self.bytes;
        let mut i = self.att_next;
        while k + 2 <= MAX_IOV {
            let Some((at, data)) = out.attached.get(i) else {
                // Every attachment is in: the bytes after the last one.
                if pos < out.bytes.len() {
                    iov[k] = IoSlice::new(&out.bytes[pos..]);
                    k += 1;
                }
                break;
            };
            if at > pos {
                iov[k] = IoSlice::new(&out.bytes[pos..at]);
                k += 1;
                pos = at;
            }
            let skip = if i == self.att_next {
                self.att_written
            } else {
                0
            };
            if data.len() > skip {
                iov[k] = IoSlice::new(&data[skip..]);
                k += 1;
            }
            i += 1;
        }
        k
    }

    /// Counts `n` more bytes of `out` written (no more than are pending).
    pub(super) fn advance(&mut self, out: &Output, mut n: usize) {
        while n > 0 {
            match out.attached.get(self.att_next) {
                Some((at, data)) if at == self.bytes => {
                    let step = n.min(data.len() - self.att_written);
                    n -= step;
                    self.att_written += step;
                    self.att_done += step;
                    if self.att_written == data.len() {
                        self.att_next += 1;
                        self.att_written = 0;
                    }
                }
                Some((at, _)) => {
                    let step = n.min(at - self.bytes);
                    n -= step;
                    self.bytes += step;
                }
                None => {
                    debug_assert!(
                        n <= out.bytes.len() - self.bytes,
                        "more written than pending"
                    );
                    self.bytes = (self.bytes + n).min(out.bytes.len());
                    n = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Writing an output in pieces of any size, as `gather` lays them out and `advance`
    /// counts them, sends exactly its bytes with the attachments in place.
    #[test]
    fn output_is_sent_in_order_whatever_the_write_sizes() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..300 {
            let mut out = Output::default();
            for part in 0..next(150) {
                out.bytes.extend((0..next(5)).map(|b| (part + b) as u8));
                if next(2) == 0 {
                    let len = [0, 1, 7, 1000][next(4)];
                    let v = Arc::new((0..len).map(|b| (b * 31 + part) as u8).collect());
                    out.attached.push(out.bytes.len(), v);
                    out.bytes.extend_from_slice(b"\r\n");
                }
            }
            let want = out.attached.splice(&out.bytes);
            let mut sent = Sent::default();
            let mut wire = Vec::new();
            while sent.pending(&out) > 0 {
                let mut iov = [IoSlice::new(&[]); MAX_IOV];
                let k = sent.gather(&out, &mut iov);
                let limit = 1 + next(if round % 2 == 0 { 50 } else { 5000 });
                let mut n = 0;
                for piece in &iov[..k] {
                    let take = piece.len().min(limit - n);
                    wire.extend_from_slice(&piece[..take]);
                    n += take;
                    if n == limit {
                        break;
                    }
                }
                assert!(
                    n > 0,
                    "round {round}: nothing to write with {} pending",
                    sent.pending(&out)
                );
                sent.advance(&out, n);
            }
            assert_eq!(wire, want, "round {round}");
            assert_eq!(sent.total(), want.len());
        }
    }
}
