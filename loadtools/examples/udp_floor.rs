//! The kernel's UDP floor: the least any user-space DNS responder on the
//! kernel's UDP stack can do per query. It reads queries and answers each
//! with the query itself, QR and AA set and RCODE NOERROR: no parsing past
//! the 12-byte header, no lookup, no allocation in the loop. Whatever CPU it
//! spends per query is the kernel's receive and send path plus a few
//! hundred instructions; `bench/udp-floor` measures it beside mongodns and
//! PowerDNS to see how much of a server's budget is left to the server.
//!
//! ```text
//!  batched (default), one thread, one blocking socket:
//!    loop {
//!      recvmmsg(32 slots, MSG_WAITFORONE) ─► sleeps until one datagram is
//!                       queued, then takes every queued one (at most 32)
//!      each datagram of 12 bytes or more: QR=1 AA=1 RCODE=0, in place
//!      (shorter ones are dropped)
//!      sendmmsg(the replies, each to its sender) ─► again on a partial send
//!    }
//!  --single: loop { recv_from ─► flags ─► send_to }, one datagram per call
//! ```
//!
//! The batched mode makes the same calls per datagram as the mongodns
//! front end (`recvmmsg` of up to 32, one `sendmmsg` for the replies) but
//! blocks in `recvmmsg` instead of waiting on epoll; the code is its own.
//!
//! `cargo run --release -p loadtools --example udp_floor -- [--single] [--rcvbuf BYTES] ADDR`
//! (ADDR like `127.0.0.1:25500`; the receive buffer defaults to 1 MiB, as
//! mongodns asks for).

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// Datagrams per `recvmmsg`/`sendmmsg` call.
const BATCH: usize = 32;
/// Bytes per receive slot: a query longer than that is cut and answered
/// cut (queries here are far shorter).
const SLOT: usize = 4096;
/// Receive buffer asked for when `--rcvbuf` is not given (mongodns's default).
const DEFAULT_RCVBUF: usize = 1 << 20;
/// The DNS header's length.
const HEADER: usize = 12;

fn main() {
    if let Err(e) = run() {
        eprintln!("udp_floor: {e}");
        std::process::exit(1);
    }
}

/// Parses the command line, binds the socket and serves until killed.
fn run() -> Result<(), String> {
    let mut single = false;
    let mut rcvbuf = DEFAULT_RCVBUF;
    let mut addr = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--single" => single = true,
            "--rcvbuf" => {
                let v = args.next().ok_or("--rcvbuf needs a size in bytes")?;
                rcvbuf = v.parse().map_err(|_| format!("bad --rcvbuf {v}"))?;
            }
            _ if addr.is_none() && !arg.starts_with('-') => {
                addr = Some(
                    arg.parse::<SocketAddr>()
                        .map_err(|e| format!("bad address {arg}: {e}"))?,
                )
            }
            _ => {
                return Err(format!(
                    "unexpected argument {arg}; usage: udp_floor [--single] [--rcvbuf BYTES] ADDR"
                ))
            }
        }
    }
    let addr = addr.ok_or("usage: udp_floor [--single] [--rcvbuf BYTES] ADDR")?;
    let socket = bind(addr, rcvbuf).map_err(|e| format!("bind {addr}: {e}"))?;
    eprintln!(
        "udp_floor: answering on {addr} ({})",
        if single {
            "one datagram per call"
        } else {
            "recvmmsg/sendmmsg, 32 per call"
        }
    );
    let result = if single {
        serve_single(&socket)
    } else {
        serve_batched(socket.as_raw_fd())
    };
    result.map_err(|e| e.to_string())
}

/// A blocking UDP socket on `addr` with a receive buffer of `rcvbuf` bytes
/// (the kernel caps it at `net.core.rmem_max`).
fn bind(addr: SocketAddr, rcvbuf: usize) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(rcvbuf)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// Turns a query into its reply in place: QR and AA set, opcode and RD kept,
/// RA, Z, AD, CD cleared, RCODE NOERROR. `false` for a datagram too short
/// to hold a header (it gets no reply).
fn make_reply(datagram: &mut [u8]) -> bool {
    if datagram.len() < HEADER {
        return false;
    }
    datagram[2] = (datagram[2] & 0x79) | 0x84; // QR | opcode | AA | (TC cleared) | RD
    datagram[3] = 0; // RA=0 Z=0 AD=0 CD=0 RCODE=NOERROR
    true
}

/// One datagram per system call: `recv_from`, then `send_to`.
fn serve_single(socket: &UdpSocket) -> io::Result<()> {
    let mut buf = [0u8; SLOT];
    loop {
        let (len, peer) = match socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if make_reply(&mut buf[..len]) {
            // A failed send (say, an ICMP error queued by an earlier one)
            // loses that reply only.
            let _ = socket.send_to(&buf[..len], peer);
        }
    }
}

/// Up to [`BATCH`] datagrams per `recvmmsg`, their replies in one `sendmmsg`.
/// The buffers, addresses and headers are allocated once; the headers point
/// into them and are reset before each call.
fn serve_batched(fd: RawFd) -> io::Result<()> {
    let mut bufs = vec![[0u8; SLOT]; BATCH];
    // SAFETY (all `zeroed` here): sockaddr_storage, iovec and mmsghdr are
    // plain C data for which all-zero bytes are a valid value.
    let mut addrs: Vec<libc::sockaddr_storage> = vec![unsafe { zeroed() }; BATCH];
    let mut recv_iovs: Vec<libc::iovec> = vec![unsafe { zeroed() }; BATCH];
    let mut recv_hdrs: Vec<libc::mmsghdr> = vec![unsafe { zeroed() }; BATCH];
    let mut send_iovs: Vec<libc::iovec> = vec![unsafe { zeroed() }; BATCH];
    let mut send_hdrs: Vec<libc::mmsghdr> = vec![unsafe { zeroed() }; BATCH];
    loop {
        for i in 0..BATCH {
            recv_iovs[i] = libc::iovec {
                iov_base: bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: SLOT,
            };
            let hdr = &mut recv_hdrs[i].msg_hdr;
            hdr.msg_name = &mut addrs[i] as *mut _ as *mut libc::c_void;
            hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr.msg_iov = &mut recv_iovs[i];
            hdr.msg_iovlen = 1;
        }
        // MSG_WAITFORONE: block for the first datagram only, then take what
        // is already queued (without it a blocking call waits for all 32).
        // SAFETY: every header points at live buffers of the lengths given,
        // all of which outlive the call.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                recv_hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let mut replies = 0;
        for i in 0..got as usize {
            let len = recv_hdrs[i].msg_len as usize;
            if !make_reply(&mut bufs[i][..len]) {
                continue;
            }
            send_iovs[replies] = libc::iovec {
                iov_base: bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: len,
            };
            let hdr = &mut send_hdrs[replies].msg_hdr;
            hdr.msg_name = &mut addrs[i] as *mut _ as *mut libc::c_void;
            hdr.msg_namelen = recv_hdrs[i].msg_hdr.msg_namelen;
            hdr.msg_iov = &mut send_iovs[replies];
            hdr.msg_iovlen = 1;
            replies += 1;
        }
        send_all(fd, &mut send_hdrs[..replies]);
    }
}

/// Sends every reply in `hdrs`, calling `sendmmsg` again after a partial
/// send; a reply the kernel refuses is skipped (lost, as over UDP).
fn send_all(fd: RawFd, hdrs: &mut [libc::mmsghdr]) {
    let mut done = 0;
    while done < hdrs.len() {
        // SAFETY: the headers from `done` on point at live buffers and
        // addresses that outlive the call.
        let sent = unsafe {
            libc::sendmmsg(
                fd,
                hdrs[done..].as_mut_ptr(),
                (hdrs.len() - done) as libc::c_uint,
                0,
            )
        };
        if sent > 0 {
            done += sent as usize;
        } else if sent < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        } else {
            done += 1; // the first unsent reply failed: drop it, send the rest
        }
    }
}

#[cfg(test)]
mod tests {
    use super::make_reply;

    #[test]
    fn reply_flags() {
        // id 0xabcd, RD and CD set, one question.
        let mut q = [0xab, 0xcd, 0x01, 0x10, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        assert!(make_reply(&mut q));
        assert_eq!(q[..4], [0xab, 0xcd, 0x85, 0x00]);
        assert!(!make_reply(&mut [0u8; 11]));
    }
}
