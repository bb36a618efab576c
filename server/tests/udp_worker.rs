//! The UDP front end in process, with real sockets and a handler built to
//! misbehave: a panic in the receive loop restarts the loop on the same
//! socket and is counted; cache misses beyond the miss limit are dropped
//! and counted instead of spawning without bound; a miss answered without
//! waiting goes out with the loop's batch, and one that panics at once
//! costs only its own reply.

use mongodns_server::frontend::udp;
use mongodns_server::guard::GUARD;
use mongodns_server::handler::Handler;
use mongodns_server::handler::Transport;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Answers every query by echoing it; a query whose first byte is 0xEE
/// panics in the receive loop, and misses wait `slow` first, except 0xAA
/// (answered without waiting) and 0xEF (panics at once). Counts the
/// queries observed in batches (the ones sent from the receive loop).
struct Rig {
    slow: Duration,
    batched: Arc<AtomicUsize>,
}

impl Rig {
    fn new(slow: Duration) -> Rig {
        Rig {
            slow,
            batched: Arc::default(),
        }
    }
}

impl Handler for Rig {
    async fn handle(&self, packet: &[u8], _: Transport) -> Option<Vec<u8>> {
        assert!(packet[0] != 0xEF, "a miss that breaks its own answer");
        if packet[0] != 0xAA {
            tokio::time::sleep(self.slow).await;
        }
        Some(packet.to_vec())
    }

    fn observe_batch<'a>(
        &self,
        n: usize,
        _: impl Fn(usize) -> (&'a [u8], &'a [u8], std::net::SocketAddr),
        _: Transport,
    ) {
        self.batched.fetch_add(n, Ordering::Relaxed);
    }

    fn handle_now(&self, packet: &[u8], _: Transport, out: &mut Vec<u8>) -> bool {
        assert!(packet[0] != 0xEE, "a query that breaks the receive loop");
        if packet[0] == 0xCC {
            out.clear();
            out.extend_from_slice(packet);
            return true;
        }
        false
    }
}

/// Starts the loop (one socket, batches of `batch`) on a runtime of its
/// own; returns the port and the runtime.
fn start(rig: Rig, batch: usize, misses: usize) -> (u16, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = "127.0.0.1:0".parse().unwrap();
    let port = runtime.block_on(async {
        let socket = udp::bind_udp(addr, 1, None, None).unwrap().remove(0);
        let port = socket.local_addr().unwrap().port();
        let limit = Arc::new(tokio::sync::Semaphore::new(misses));
        tokio::spawn(udp::serve_udp_limited(
            socket,
            Arc::new(rig),
            None,
            batch,
            limit,
        ));
        port
    });
    (port, runtime)
}

fn ask(client: &UdpSocket, port: u16, first: u8) -> Option<Vec<u8>> {
    client
        .send_to(&[first, 1, 2, 3], ("127.0.0.1", port))
        .unwrap();
    let mut buf = [0u8; 64];
    client
        .recv_from(&mut buf)
        .ok()
        .map(|(n, _)| buf[..n].to_vec())
}

#[test]
fn a_panic_in_the_receive_loop_restarts_it() {
    for batch in [1, 32] {
        let (port, runtime) = start(Rig::new(Duration::ZERO), batch, 64);
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(
            ask(&client, port, 0xCC).as_deref(),
            Some(&[0xCC, 1, 2, 3][..])
        );
        let before = GUARD.udp_worker_restarts.load(Ordering::Relaxed);
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert_eq!(
            ask(&client, port, 0xEE),
            None,
            "the panicking query gets nothing"
        );
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert!(
            ask(&client, port, 0xCC).is_some(),
            "batch {batch}: served again after the panic"
        );
        assert!(
            ask(&client, port, 0x01).is_some(),
            "batch {batch}: misses too"
        );
        let after = GUARD.udp_worker_restarts.load(Ordering::Relaxed);
        assert!(after > before, "batch {batch}: the restart is counted");
        runtime.shutdown_background();
    }
}

#[test]
fn misses_beyond_the_limit_are_dropped_and_counted() {
    let (port, runtime) = start(Rig::new(Duration::from_secs(3)), 32, 10);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let before = GUARD.udp_miss_overflows.load(Ordering::Relaxed);
    for i in 0..50u8 {
        client.send_to(&[i, 1, 2, 3], ("127.0.0.1", port)).unwrap();
    }
    client
        .set_read_timeout(Some(Duration::from_secs(4)))
        .unwrap();
    let mut replies = 0;
    let mut buf = [0u8; 64];
    while client.recv_from(&mut buf).is_ok() {
        replies += 1;
    }
    let dropped = GUARD.udp_miss_overflows.load(Ordering::Relaxed) - before;
    eprintln!("{replies} replies, {dropped} misses dropped of 50");
    assert_eq!(replies, 10, "at most the miss limit answered at once");
    assert_eq!(dropped, 40, "the rest dropped and counted");
    runtime.shutdown_background();
}

#[test]
fn a_miss_answered_without_waiting_is_sent_from_the_loop() {
    let rig = Rig::new(Duration::from_millis(50));
    let batched = rig.batched.clone();
    let (port, runtime) = start(rig, 32, 64);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        ask(&client, port, 0xAA).as_deref(),
        Some(&[0xAA, 1, 2, 3][..])
    );
    // The loop sends its batch before it observes it, so the reply can
    // reach us first: wait for the count (generously, for a loaded CI).
    assert_eq!(
        settled_count(&batched, 1),
        1,
        "a miss that never waited is observed with the loop's batch"
    );
    assert_eq!(ask(&client, port, 0x01).as_deref(), Some(&[1, 1, 2, 3][..]));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        batched.load(Ordering::Relaxed),
        1,
        "a miss that waited is sent by its own task"
    );
    runtime.shutdown_background();
}

/// The count once it reaches `want`, or what it holds after 5 s.
fn settled_count(count: &AtomicUsize, want: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while count.load(Ordering::Relaxed) < want && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    count.load(Ordering::Relaxed)
}

#[test]
fn a_miss_that_panics_at_once_costs_only_its_reply() {
    for batch in [1, 32] {
        let (port, runtime) = start(Rig::new(Duration::ZERO), batch, 64);
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let panics = GUARD.udp_miss_panics.load(Ordering::Relaxed);
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        assert_eq!(ask(&client, port, 0xEF), None, "batch {batch}: no reply");
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert!(
            ask(&client, port, 0xAA).is_some(),
            "batch {batch}: the next miss is answered"
        );
        assert!(
            GUARD.udp_miss_panics.load(Ordering::Relaxed) > panics,
            "batch {batch}: caught and counted as the miss's own"
        );
        runtime.shutdown_background();
    }
}

#[test]
fn a_stopped_receive_loop_lets_go_of_its_socket_and_coalescing_loses_nothing() {
    for (batch, coalesce) in [(1, 0), (32, 0), (32, 500)] {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (port, task) = runtime.block_on(async {
            let socket = udp::bind_udp("127.0.0.1:0".parse().unwrap(), 1, None, None)
                .unwrap()
                .remove(0);
            let port = socket.local_addr().unwrap().port();
            let settings = udp::UdpSettings {
                rrl: None,
                batch,
                misses: Arc::new(tokio::sync::Semaphore::new(64)),
                coalesce: Duration::from_micros(coalesce),
            };
            let rig = Arc::new(Rig::new(Duration::ZERO));
            (
                port,
                tokio::spawn(udp::serve_udp_with(socket, rig, settings)),
            )
        });
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // A burst: every query answered, hits and misses, waits or not.
        for i in 0..20u8 {
            let first = if i % 2 == 0 { 0xCC } else { i };
            client
                .send_to(&[first, i, 2, 3], ("127.0.0.1", port))
                .unwrap();
        }
        let mut got = std::collections::BTreeSet::new();
        let mut buf = [0u8; 64];
        while got.len() < 20 {
            let (n, _) = client
                .recv_from(&mut buf)
                .expect("every reply of the burst");
            assert_eq!(n, 4);
            got.insert(buf[1]);
        }
        task.abort();
        // The loop ends and closes its socket: the port can be bound again
        // (without SO_REUSEPORT, so only once nothing holds it).
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        let rebound = loop {
            match UdpSocket::bind(("127.0.0.1", port)) {
                Ok(_) => break true,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(_) => break false,
            }
        };
        assert!(
            rebound,
            "batch {batch}: the socket was let go after the stop"
        );
        runtime.shutdown_background();
    }
}
