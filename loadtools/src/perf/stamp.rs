//! Kernel receive timestamps for the UDP clients.
//!
//! ```text
//!  socket ─SO_TIMESTAMPNS─► kernel stamps each datagram as it arrives
//!  recv_stamped ─recvmsg─► (bytes, arrival time in CLOCK_REALTIME ns)
//!  (batch.rs reads many at once with recvmmsg; stamp_in reads each stamp)
//!  query sent ─realtime_ns()─► latency = arrival − send, both on one clock
//! ```
//!
//! A client that is busy sending (a rate-limited burst, or simply its share
//! of a busy core) reads a reply some time after it arrived. Stamped in user
//! space, that wait would count as the server's latency; stamped by the
//! kernel, it does not. Where the kernel gives no stamp the caller falls
//! back to its own clock.

use std::io;
use std::os::fd::RawFd;

/// Asks the kernel to stamp every datagram received on `fd`.
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a pointer to a c_int of the
    // size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Nanoseconds since the epoch on CLOCK_REALTIME, the kernel stamps' clock.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reads one datagram without blocking: its length and, when the kernel
/// stamped it, its arrival time in CLOCK_REALTIME nanoseconds.
pub fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    // Room for one SCM_TIMESTAMPNS control message (u64s keep it aligned).
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed msghdr is a valid "no name, no control" header; the
    // fields set below point at live buffers of the lengths given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` describes buffers owned by this frame.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, stamp_in(&msg)))
}

/// The SCM_TIMESTAMPNS stamp among the control messages the kernel wrote
/// into `msg` (by `recvmsg` or `recvmmsg`), if any.
pub fn stamp_in(msg: &libc::msghdr) -> Option<u64> {
    let mut stamp = None;
    // SAFETY: walking the control messages the kernel wrote into the
    // buffer `msg` points at, with the libc macros that bound them by
    // `msg_controllen`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    stamp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn datagrams_carry_a_kernel_stamp_on_the_realtime_clock() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_rx_timestamps(rx.as_raw_fd()).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"hello", rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stamped(rx.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        let stamp = stamp.expect("the kernel stamps datagrams when asked");
        // The stamp is parsed from the control message, on the same clock
        // as `realtime_ns`. Whether a kernel stamps on arrival or on read
        // is its own business (both have been seen), and a VM's wall clock
        // may be stepped, so the bound is loose: a misparsed control
        // message gives zero or garbage, far outside it.
        let now = realtime_ns();
        assert!(
            stamp.abs_diff(now) < 60_000_000_000,
            "stamp {stamp} is not near the realtime clock {now}"
        );
        // Nothing waiting: WouldBlock, not a hang.
        let e = recv_stamped(rx.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
