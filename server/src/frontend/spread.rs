//! How the kernel shares a port's datagrams among the workers' sockets.
//!
//! ```text
//!  bind_udp ─► N sockets in one SO_REUSEPORT group
//!     UdpSpread::Flows   ─► the kernel's hash of (source, destination):
//!                           one client socket always lands on one worker
//!     UdpSpread::Packets ─► spread(sockets): a classic-BPF program on the
//!                           group, `random % N` per datagram
//! ```
//!
//! With the kernel's hash, a few busy clients (resolvers behind one
//! address, a load balancer, three dnsperf processes) can land mostly on
//! one worker: its queue is twice as long as its neighbour's, and those
//! clients get half the replies a second while a core sits partly idle.
//! DNS over UDP has no order to keep between datagrams, so spreading each
//! one at random keeps every worker equally busy whoever is asking.

use std::io;
use std::os::fd::AsRawFd;

/// How datagrams arriving on one address are shared among its sockets.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum UdpSpread {
    /// Each datagram to a worker at random (a BPF program on the group).
    Packets,
    /// The kernel's flow hash: one client socket, one worker.
    Flows,
}

/// Applies `how` to the sockets of one address (a group of one needs
/// nothing). A kernel that refuses the program keeps its own hash, with a
/// warning: the server serves either way.
pub fn share<S: AsRawFd>(sockets: &[S], how: UdpSpread) {
    if how == UdpSpread::Flows || sockets.len() < 2 {
        return;
    }
    if let Err(e) = spread(&sockets[0], sockets.len()) {
        tracing::warn!(error = %e, "cannot spread UDP datagrams among the workers; the kernel's flow hash stays");
    }
}

#[cfg(target_os = "linux")]
/// `SO_ATTACH_REUSEPORT_CBPF`, from asm-generic/socket.h (x86-64 and
/// arm64 use it; MIPS, SPARC and PA-RISC number it otherwise).
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// Attaches "pick socket `random % count`" to the SO_REUSEPORT group of
/// `socket` (every socket bound to its address by this process). An index
/// the group does not have falls back to the kernel's hash, so a group
/// smaller than `count` still gets every datagram.
#[cfg(target_os = "linux")]
pub fn spread(socket: &impl AsRawFd, count: usize) -> io::Result<()> {
    let count = u32::try_from(count).unwrap_or(u32::MAX).max(1);
    let mut program = random_index_program(count);
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: setsockopt with a sock_fprog whose filter points into
    // `program`, alive for the call; the kernel copies the program.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_CBPF,
            &fprog as *const libc::sock_fprog as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere there is no such program: the kernel's own sharing stays.
#[cfg(not(target_os = "linux"))]
pub fn spread(_socket: &impl AsRawFd, _count: usize) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// The program: A = a random 32-bit number (ancillary load); A %= count;
/// return A (the index of the socket in the group).
#[cfg(target_os = "linux")]
fn random_index_program(count: u32) -> [libc::sock_filter; 3] {
    let random = (libc::SKF_AD_OFF + libc::SKF_AD_RANDOM) as u32;
    [
        instruction(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, random),
        instruction(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, count),
        instruction(libc::BPF_RET | libc::BPF_A, 0),
    ]
}

/// One classic-BPF instruction without jumps.
#[cfg(target_os = "linux")]
fn instruction(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::UdpSocket as StdUdpSocket;
    use std::time::Duration;

    /// One client socket sending 400 datagrams to two sockets spread by
    /// packets: both get a fair share.
    #[test]
    fn one_client_socket_reaches_every_worker() {
        let (a, b) = shares_of_one_client(true);
        assert_eq!(a + b, 400, "every datagram reaches one of the two");
        assert!(a >= 120 && b >= 120, "shares {a} and {b}: not spread");
    }

    /// The same without the program: the kernel's hash sends one client
    /// socket's datagrams all to one socket (what `Packets` mends).
    #[test]
    fn without_the_program_one_client_socket_reaches_one_worker() {
        let (a, b) = shares_of_one_client(false);
        assert_eq!(a + b, 400);
        assert!(a == 0 || b == 0, "shares {a} and {b}");
    }

    /// Two sockets sharing a port, one client socket sending 400
    /// datagrams: how many each socket got.
    fn shares_of_one_client(spread_packets: bool) -> (usize, usize) {
        let first = reuse_port_socket(0);
        let port = first.local_addr().unwrap().port();
        let second = reuse_port_socket(port);
        if spread_packets {
            spread(&first, 2).unwrap();
        }
        let client = StdUdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..400u32 {
            client
                .send_to(&i.to_be_bytes(), ("127.0.0.1", port))
                .unwrap();
        }
        (drain(&first), drain(&second))
    }

    fn reuse_port_socket(port: u16) -> StdUdpSocket {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        s.set_reuse_port(true).unwrap();
        s.set_recv_buffer_size(1 << 20).unwrap();
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        s.bind(&addr.into()).unwrap();
        s.into()
    }

    fn drain(socket: &StdUdpSocket) -> usize {
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 16];
        let mut n = 0;
        while socket.recv_from(&mut buf).is_ok() {
            n += 1;
        }
        n
    }
}
