//! Batched datagram I/O for Linux: `recvmmsg(2)` and `sendmmsg(2)`.
//!
//! ```text
//!  RecvBatch::recv(fd) ── one syscall ──► up to BATCH datagrams, each in its
//!                                         own slot with the sender's address
//!  SendBatch::push(reply, addr) … SendBatch::send(fd) ── one syscall ──►
//!                                         every queued reply (a partial send
//!                                         leaves the rest queued)
//! ```
//!
//! Each call comes non-blocking (`MSG_DONTWAIT`) and waiting (on a
//! blocking socket, for the UDP receive thread: `recvmmsg` sleeps until the
//! first datagram and takes what is queued with it, `sendmmsg` waits for
//! room). The `mmsghdr`/`iovec` arrays are
//! built on the stack for each call, so the batches hold no raw pointers and
//! can live in a task that moves between threads.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// Datagrams per system call.
pub const BATCH: usize = 32;

/// A socket address in the kernel's layout, with its length.
#[derive(Clone, Copy)]
pub struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl RawAddr {
    /// The kernel layout of `addr`.
    pub fn from_socket_addr(addr: SocketAddr) -> Self {
        // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let len = match addr {
            SocketAddr::V4(v4) => {
                // SAFETY: sockaddr_storage is large and aligned enough for
                // any sockaddr_* (that is its purpose).
                let sin = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in) };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = v4.port().to_be();
                sin.sin_addr = libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                };
                size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                // SAFETY: as above.
                let sin6 = unsafe { &mut *(&mut storage as *mut _ as *mut libc::sockaddr_in6) };
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_port = v6.port().to_be();
                sin6.sin6_flowinfo = v6.flowinfo();
                sin6.sin6_addr = libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                };
                sin6.sin6_scope_id = v6.scope_id();
                size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }

    /// The address as std knows it; `None` for a family other than IPv4/IPv6.
    pub fn to_socket_addr(&self) -> Option<SocketAddr> {
        match self.storage.ss_family as libc::c_int {
            libc::AF_INET if self.len as usize >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let sin = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in) };
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if self.len as usize >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let sin6 = unsafe { &*(&self.storage as *const _ as *const libc::sockaddr_in6) };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

/// Receive slots for one `recvmmsg` call: up to `BATCH` buffers of `slot`
/// bytes.
pub struct RecvBatch {
    slot: usize,
    batch: usize,
    bufs: Vec<u8>,
    addrs: Vec<RawAddr>,
    lens: Vec<usize>,
    truncated: Vec<bool>,
    count: usize,
}

impl RecvBatch {
    /// `batch` slots (at most [`BATCH`]) of `slot` bytes each (a datagram
    /// longer than that is marked truncated).
    pub fn new(slot: usize, batch: usize) -> Self {
        let batch = batch.clamp(1, BATCH);
        RecvBatch {
            slot,
            batch,
            bufs: vec![0u8; slot * batch],
            addrs: vec![RawAddr::from_socket_addr(SocketAddr::from(([0, 0, 0, 0], 0))); BATCH],
            lens: vec![0; BATCH],
            truncated: vec![false; BATCH],
            count: 0,
        }
    }

    /// Reads the datagrams waiting on `fd`, up to the batch size, without blocking:
    /// the count (`WouldBlock` when there is none).
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_DONTWAIT)
    }

    /// Like [`RecvBatch::recv`] on a blocking socket, but sleeps until one
    /// datagram is there (or the socket's receive timeout passes:
    /// `WouldBlock`), then takes it and every other one already queued
    /// (`MSG_WAITFORONE`): one system call per wake-up.
    pub fn recv_waiting(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_WAITFORONE)
    }

    fn recv_flags(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<usize> {
        self.count = 0;
        // SAFETY: iovec and mmsghdr are plain data; zero is a valid value.
        let mut iovs: [libc::iovec; BATCH] = unsafe { zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        let base = self.bufs.as_mut_ptr();
        for i in 0..self.batch {
            iovs[i] = libc::iovec {
                // SAFETY: slot i lies inside `bufs` (BATCH * slot bytes).
                iov_base: unsafe { base.add(i * self.slot) } as *mut libc::c_void,
                iov_len: self.slot,
            };
            let hdr = &mut hdrs[i].msg_hdr;
            hdr.msg_name = &mut self.addrs[i].storage as *mut _ as *mut libc::c_void;
            hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_iov = &mut iovs[i];
            hdr.msg_iovlen = 1;
        }
        // SAFETY: every header points at live buffers of the lengths given,
        // all of which outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                self.batch as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
            self.lens[i] = (hdr.msg_len as usize).min(self.slot);
            self.addrs[i].len = hdr.msg_hdr.msg_namelen;
            self.truncated[i] = hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        }
        self.count = n;
        Ok(n)
    }

    /// Most datagrams one call reads.
    pub fn capacity(&self) -> usize {
        self.batch
    }

    /// Datagrams read by the last [`RecvBatch::recv`].
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the last read found nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Datagram `i`: its bytes, its sender, and whether it was cut to the slot.
    pub fn get(&self, i: usize) -> (&[u8], &RawAddr, bool) {
        let start = i * self.slot;
        (
            &self.bufs[start..start + self.lens[i]],
            &self.addrs[i],
            self.truncated[i],
        )
    }
}

/// Replies queued for one `sendmmsg` call.
pub struct SendBatch {
    replies: Vec<Vec<u8>>,
    addrs: Vec<RawAddr>,
    count: usize,
}

impl Default for SendBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBatch {
    /// An empty batch with room for `BATCH` replies (buffers kept between
    /// batches, so steady state allocates nothing).
    pub fn new() -> Self {
        SendBatch {
            replies: (0..BATCH).map(|_| Vec::with_capacity(4096)).collect(),
            addrs: vec![RawAddr::from_socket_addr(SocketAddr::from(([0, 0, 0, 0], 0))); BATCH],
            count: 0,
        }
    }

    /// The buffer the next reply is written into (cleared); commit it with
    /// [`SendBatch::commit`]. `None` when the batch is full.
    pub fn next_buffer(&mut self) -> Option<&mut Vec<u8>> {
        let buf = self.replies.get_mut(self.count)?;
        buf.clear();
        Some(buf)
    }

    /// Queues the buffer last given by [`SendBatch::next_buffer`] for `to`.
    pub fn commit(&mut self, to: &RawAddr) {
        if self.count < BATCH {
            self.addrs[self.count] = *to;
            self.count += 1;
        }
    }

    /// Replies queued and not yet sent.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Reply `i` and its destination.
    pub fn get(&self, i: usize) -> (&[u8], &RawAddr) {
        (&self.replies[i], &self.addrs[i])
    }

    /// Sends replies `from..len()` without blocking: how many the kernel
    /// took (`WouldBlock` when its buffer is full; any other error concerns
    /// reply `from`, whose destination the caller should skip).
    pub fn send(&mut self, fd: RawFd, from: usize) -> io::Result<usize> {
        self.send_flags(fd, from, libc::MSG_DONTWAIT)
    }

    /// Like [`SendBatch::send`], but on a blocking socket waits for room in
    /// its buffer (for a thread of its own, never a runtime's).
    pub fn send_waiting(&mut self, fd: RawFd, from: usize) -> io::Result<usize> {
        self.send_flags(fd, from, 0)
    }

    fn send_flags(&mut self, fd: RawFd, from: usize, flags: libc::c_int) -> io::Result<usize> {
        let n = self.count.saturating_sub(from);
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: plain data; zero is valid.
        let mut iovs: [libc::iovec; BATCH] = unsafe { zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        for k in 0..n {
            let i = from + k;
            iovs[k] = libc::iovec {
                iov_base: self.replies[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: self.replies[i].len(),
            };
            let hdr = &mut hdrs[k].msg_hdr;
            hdr.msg_name = &mut self.addrs[i].storage as *mut _ as *mut libc::c_void;
            hdr.msg_namelen = self.addrs[i].len;
            hdr.msg_iov = &mut iovs[k];
            hdr.msg_iovlen = 1;
        }
        // SAFETY: every header points at live buffers of the lengths given.
        let sent = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), n as libc::c_uint, flags) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sent as usize)
    }

    /// Forgets every queued reply (the buffers are kept).
    pub fn clear(&mut self) {
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn addresses_round_trip_through_the_kernel_layout() {
        for addr in [
            "192.0.2.7:53".parse::<SocketAddr>().unwrap(),
            "[2001:db8::1]:5353".parse().unwrap(),
            SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 9, 7, 3)),
        ] {
            assert_eq!(RawAddr::from_socket_addr(addr).to_socket_addr(), Some(addr));
        }
    }

    #[test]
    fn a_batch_reads_and_answers_several_datagrams_in_one_call() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server.set_nonblocking(true).unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = server.local_addr().unwrap();
        let mut batch = RecvBatch::new(16, BATCH);
        let err = batch.recv(server.as_raw_fd()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        for i in 0..5u8 {
            client.send_to(&[i; 3], to).unwrap();
        }
        client.send_to(&[9u8; 40], to).unwrap(); // longer than a slot
        let n = batch.recv(server.as_raw_fd()).unwrap();
        assert_eq!(n, 6);
        let mut replies = SendBatch::new();
        for i in 0..n {
            let (bytes, from, truncated) = batch.get(i);
            assert_eq!(from.to_socket_addr(), Some(client.local_addr().unwrap()));
            assert_eq!(truncated, i == 5);
            if i < 5 {
                assert_eq!(bytes, &[i as u8; 3]);
            } else {
                assert_eq!(bytes.len(), 16);
            }
            let buf = replies.next_buffer().unwrap();
            buf.extend_from_slice(&[i as u8 + 100; 2]);
            replies.commit(from);
        }
        assert_eq!(replies.send(server.as_raw_fd(), 0).unwrap(), 6);
        let mut got = [0u8; 8];
        for i in 0..6u8 {
            let (len, from) = client.recv_from(&mut got).unwrap();
            assert_eq!(from, to);
            assert_eq!(&got[..len], &[i + 100; 2]);
        }
    }
}
