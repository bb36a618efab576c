//! Many datagrams a system call for the UDP clients: the queries of one
//! burst go out by `sendmmsg`, the replies waiting come in by `recvmmsg`,
//! each with its kernel arrival stamp (stamp.rs).
//!
//! ```text
//!  client: queries opened in one pass ─► Outgoing (one buffer, the ends)
//!     ─► send_batch ─sendmmsg (connected socket)─► server
//!  socket readable ─► Incoming::recv ─recvmmsg (MSG_DONTWAIT)─► up to
//!     BATCH replies, each (bytes, stamp)
//! ```
//!
//! On loopback the load generator shares the CPUs with the server it
//! measures; a system call per datagram made it cost more CPU per query
//! than the server did (docs/load-tools.md).

use super::stamp;
use std::io;
use std::os::fd::RawFd;

/// Most datagrams one call sends or receives.
pub const BATCH: usize = 32;

/// Room for one reply (larger ones are cut, which matching does not mind:
/// it reads the header and the question).
const REPLY_ROOM: usize = 4096;

/// Queries to send, one after another in one buffer.
#[derive(Default)]
pub struct Outgoing {
    bytes: Vec<u8>,
    /// Where each datagram ends in `bytes`.
    ends: Vec<usize>,
}

impl Outgoing {
    /// Empties it for the next burst.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Appends `message` with its ID set to `id`.
    pub fn push(&mut self, message: &[u8], id: u16) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(message);
        self.bytes[at..at + 2].copy_from_slice(&id.to_be_bytes());
        self.ends.push(self.bytes.len());
    }

    /// Datagrams held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when none is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn datagram(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// Sends datagrams `from..` of `out` (at most [`BATCH`]) on the connected
/// socket `fd` without blocking; returns how many the kernel took.
pub fn send_batch(fd: RawFd, out: &Outgoing, from: usize) -> io::Result<usize> {
    let to = out.len().min(from + BATCH);
    let mut iovs: Vec<libc::iovec> = (from..to)
        .map(|i| {
            let d = out.datagram(i);
            libc::iovec {
                iov_base: d.as_ptr() as *mut libc::c_void,
                iov_len: d.len(),
            }
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            // SAFETY: a zeroed mmsghdr is a valid "no name, no control"
            // header; the iovec it points at lives in `iovs`.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: `msgs` describes buffers that outlive the call.
    let n = unsafe {
        libc::sendmmsg(
            fd,
            msgs.as_mut_ptr(),
            msgs.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Buffers for one `recvmmsg` of up to [`BATCH`] replies.
pub struct Incoming {
    buffers: Vec<u8>,
    lens: [usize; BATCH],
    stamps: [Option<u64>; BATCH],
}

impl Default for Incoming {
    fn default() -> Self {
        Incoming {
            buffers: vec![0; BATCH * REPLY_ROOM],
            lens: [0; BATCH],
            stamps: [None; BATCH],
        }
    }
}

impl Incoming {
    /// Reads the replies waiting on `fd` (at most [`BATCH`]) without
    /// blocking; returns how many ([`Incoming::reply`] gives each).
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let mut control = [[0u64; 8]; BATCH];
        let mut iovs: Vec<libc::iovec> = self
            .buffers
            .chunks_mut(REPLY_ROOM)
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .zip(control.iter_mut())
            .map(|(iov, c)| {
                // SAFETY: as in send_batch; the control buffer lives in
                // `control`.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = c.as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = std::mem::size_of_val(c) as _;
                m
            })
            .collect();
        // SAFETY: `msgs` describes buffers that outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        for (i, m) in msgs.iter().take(n).enumerate() {
            self.lens[i] = (m.msg_len as usize).min(REPLY_ROOM);
            self.stamps[i] = stamp::stamp_in(&m.msg_hdr);
        }
        Ok(n)
    }

    /// Reply `i` of the last [`Incoming::recv`]: its bytes and its
    /// arrival stamp (CLOCK_REALTIME ns), when the kernel gave one.
    pub fn reply(&self, i: usize) -> (&[u8], Option<u64>) {
        let start = i * REPLY_ROOM;
        (&self.buffers[start..start + self.lens[i]], self.stamps[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_burst_goes_out_in_one_call_and_comes_back_stamped() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        stamp::enable_rx_timestamps(rx.as_raw_fd()).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut out = Outgoing::default();
        for id in 0..40u16 {
            out.push(&[0, 0, 1, 2, 3, id as u8], id);
        }
        assert_eq!(send_batch(tx.as_raw_fd(), &out, 0).unwrap(), BATCH);
        assert_eq!(send_batch(tx.as_raw_fd(), &out, BATCH).unwrap(), 8);
        let mut incoming = Incoming::default();
        let mut got = Vec::new();
        while got.len() < 40 {
            let n = incoming.recv(rx.as_raw_fd()).unwrap();
            assert!(n > 0 && n <= BATCH);
            for i in 0..n {
                let (bytes, stamp) = incoming.reply(i);
                assert!(stamp.is_some(), "no stamp on datagram {i}");
                got.push(bytes.to_vec());
            }
        }
        for (id, bytes) in got.iter().enumerate() {
            let id = id as u16;
            assert_eq!(bytes, &[(id >> 8) as u8, id as u8, 1, 2, 3, id as u8]);
        }
        let e = incoming.recv(rx.as_raw_fd()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
