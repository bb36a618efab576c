//! Free loopback ports for the processes a test starts.
//!
//! ```text
//!  free_port()     ─► free for UDP and TCP alike (a DNS listener)
//!  free_tcp_port() ─► free for TCP (a control endpoint)
//! ```

use std::net::{TcpListener, UdpSocket};

/// A loopback port free for both UDP and TCP at the time of asking.
pub fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A loopback port free for TCP (for the control endpoint).
pub fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
