//! TCP (RFC 7766): length-framed, pipelined, out-of-order replies, with
//! every wait bounded so that no client can hold a slot.
//!
//! ```text
//!  accept ─► slots.rs: prefix share, a slot within permit_timeout ─► connection task
//!    reader: wait for a query's first byte (idle timeout, shrinking as slots
//!            fill) ─► the rest of it within io_timeout ─► spawn(handle_tcp)
//!    answer task: reply ─► pending bytes over max_pending_bytes? cut : channel
//!    writer: [len][msg] … each message within io_timeout (a client that
//!            never reads is cut); a transfer's messages are written together,
//!            as they are built; an aborted transfer closes the connection
//!    stop reading at: max_queries, max_lifetime (whole connection), idle
//! ```

use super::slots::{Refused, Slots};
use crate::guard::{bump, InProgress, GUARD, TCP_CONNECTIONS};
use crate::handler::Transport;
use crate::handler::{Aborted, Handler, TcpPeer, TcpReply};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify, Semaphore};

/// Limits for TCP clients.
#[derive(Clone, Copy, Debug)]
pub struct TcpLimits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Close a connection with no query for this long (shrinks once more
    /// than half the slots are taken).
    pub idle_timeout: Duration,
    /// Queries answered concurrently on one connection.
    pub max_in_flight: usize,
    /// Queries read from one connection before it is closed (after the
    /// replies in flight are written); 0: no limit.
    pub max_queries: usize,
    /// Time to read one whole query once its first byte came, and to
    /// write one whole reply message.
    pub io_timeout: Duration,
    /// No query is read from a connection older than this (replies in
    /// flight still go out).
    pub max_lifetime: Duration,
    /// How long an accepted connection may wait for a free slot.
    pub permit_timeout: Duration,
    /// Connections one source prefix (IPv4 /24, IPv6 /56) may hold; 0: no cap.
    pub max_per_prefix: usize,
    /// Reply bytes answered but not yet written to one client; past this
    /// the connection is cut (a client that pipelines and never reads).
    pub max_pending_bytes: usize,
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            max_connections: 256,
            idle_timeout: Duration::from_secs(10),
            max_in_flight: 32,
            max_queries: 0,
            io_timeout: Duration::from_secs(2),
            max_lifetime: Duration::from_secs(120),
            permit_timeout: Duration::from_secs(2),
            max_per_prefix: 64,
            max_pending_bytes: 256 * 1024,
        }
    }
}

/// Accepts connections on `listener` until the task is dropped.
pub async fn serve_tcp<H: Handler>(listener: TcpListener, handler: Arc<H>, limits: TcpLimits) {
    let slots = Slots::new(limits.max_connections, limits.max_per_prefix);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and the like: back off and keep serving.
                tracing::warn!(error = %e, "tcp accept error");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = handler.clone();
        let slots = slots.clone();
        tokio::spawn(async move {
            match slots.admit(peer.ip(), limits.permit_timeout).await {
                Ok(slot) => {
                    let open = InProgress::count(&TCP_CONNECTIONS);
                    serve_connection(stream, peer, handler, limits, &slots, slot.evicted()).await;
                    drop(open);
                    drop(slot);
                }
                Err(why) => {
                    bump(match why {
                        Refused::Prefix => &GUARD.tcp_prefix_refusals,
                        Refused::Busy => &GUARD.tcp_permit_timeouts,
                    });
                    tracing::debug!(%peer, ?why, "tcp connection refused");
                }
            }
        });
    }
}

/// What one connection's tasks share.
struct Conn {
    /// Reply bytes answered and not yet written.
    pending: AtomicUsize,
    /// Told when the connection must be closed at once.
    cut: Notify,
}

/// A reply on its way to the writer, with the bytes it counts as pending.
type Queued = (TcpReply, usize);

async fn serve_connection<H: Handler>(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<H>,
    limits: TcpLimits,
    slots: &Slots,
    evicted: &Notify,
) {
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    let conn = Arc::new(Conn {
        pending: AtomicUsize::new(0),
        cut: Notify::new(),
    });
    let (tx, rx) = mpsc::channel::<Queued>(limits.max_in_flight.max(1));
    let mut write_task = tokio::spawn(write_replies(writer, rx, conn.clone(), limits.io_timeout));
    let reading = read_queries(reader, peer, &handler, tx, &conn, &limits, slots);
    tokio::select! {
        () = reading => {}
        // Given up for a newcomer: no more queries read, replies in flight
        // still written.
        () = evicted.notified() => {}
        () = conn.cut.notified() => {
            write_task.abort();
            return;
        }
        _ = &mut write_task => return,
    }
    // Reading stopped: write what is in flight, unless cut meanwhile.
    tokio::select! {
        _ = write_task => {}
        () = conn.cut.notified() => {}
    }
}

async fn read_queries<H: Handler>(
    mut reader: OwnedReadHalf,
    peer: SocketAddr,
    handler: &Arc<H>,
    tx: mpsc::Sender<Queued>,
    conn: &Arc<Conn>,
    limits: &TcpLimits,
    slots: &Slots,
) {
    let deadline = Instant::now() + limits.max_lifetime;
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
    let tcp_peer = TcpPeer::new(peer);
    let mut queries = 0usize;
    loop {
        if limits.max_queries > 0 && queries >= limits.max_queries {
            tracing::debug!(%peer, queries, "tcp query limit reached, closing");
            return;
        }
        let Some(packet) = read_query(&mut reader, peer, limits, slots, deadline).await else {
            return;
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        queries += 1;
        let (handler, tx, conn, tcp_peer) =
            (handler.clone(), tx.clone(), conn.clone(), tcp_peer.clone());
        let max_pending = limits.max_pending_bytes;
        tokio::spawn(async move {
            let reply = handler.handle_tcp(&packet, &tcp_peer).await;
            handler.observe(&packet, reply.first(), peer, Transport::Tcp);
            queue_reply(reply, &tx, &conn, max_pending).await;
            drop(permit);
        });
    }
}

/// Reads one framed query: `None` when the connection should close.
async fn read_query(
    reader: &mut OwnedReadHalf,
    peer: SocketAddr,
    limits: &TcpLimits,
    slots: &Slots,
    deadline: Instant,
) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    if !wait_first_byte(reader, &mut len[0], peer, limits, slots, deadline).await {
        return None;
    }
    let rest = async {
        reader.read_exact(&mut len[1..]).await?;
        let mut packet = vec![0u8; usize::from(u16::from_be_bytes(len))];
        reader.read_exact(&mut packet).await?;
        Ok::<_, std::io::Error>(packet)
    };
    match tokio::time::timeout(limits.io_timeout, rest).await {
        Ok(Ok(packet)) => Some(packet),
        Ok(Err(_)) => None,
        Err(_) => {
            bump(&GUARD.tcp_io_timeouts);
            tracing::debug!(%peer, "tcp query not read within the I/O timeout");
            None
        }
    }
}

/// Waits for the first byte of a query: false when the connection should
/// close (closed, idle past the idle timeout, or past its lifetime). The
/// idle timeout is recomputed whenever more slots are taken.
async fn wait_first_byte(
    reader: &mut OwnedReadHalf,
    byte: &mut u8,
    peer: SocketAddr,
    limits: &TcpLimits,
    slots: &Slots,
    deadline: Instant,
) -> bool {
    let since = Instant::now();
    loop {
        let shrunk = slots.pressure().notified();
        tokio::pin!(shrunk);
        shrunk.as_mut().enable();
        let left = deadline.saturating_duration_since(Instant::now());
        let idle = slots.idle_timeout(limits.idle_timeout);
        let idle_left = idle.saturating_sub(since.elapsed());
        tokio::select! {
            got = reader.read(std::slice::from_mut(byte)) => return matches!(got, Ok(1)),
            () = tokio::time::sleep(idle_left.min(left)) => {
                if left <= idle_left {
                    bump(&GUARD.tcp_deadline_closes);
                    tracing::debug!(%peer, "tcp connection deadline");
                } else {
                    bump(&GUARD.tcp_idle_closes);
                    tracing::debug!(%peer, ?idle, "tcp idle timeout");
                }
                return false;
            }
            () = &mut shrunk => {}
        }
    }
}

/// Hands a reply to the writer, or cuts the connection when the client
/// has too many unread bytes already.
async fn queue_reply(reply: TcpReply, tx: &mpsc::Sender<Queued>, conn: &Conn, max_pending: usize) {
    let size = match &reply {
        TcpReply::Messages(m) if m.is_empty() => return,
        TcpReply::Messages(m) => m.iter().map(Vec::len).sum(),
        TcpReply::Stream { first, .. } => first.len(),
    };
    let before = conn.pending.fetch_add(size, Ordering::AcqRel);
    if before > 0 && before + size > max_pending {
        bump(&GUARD.tcp_pending_cuts);
        tracing::debug!(
            pending = before + size,
            "tcp client does not read its replies: cut"
        );
        conn.cut.notify_one();
        return;
    }
    let _ = tx.send((reply, size)).await;
}

async fn write_replies(
    mut writer: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Queued>,
    conn: Arc<Conn>,
    io_timeout: Duration,
) {
    while let Some((reply, size)) = rx.recv().await {
        let written = match reply {
            TcpReply::Messages(messages) => {
                let mut ok = true;
                for m in &messages {
                    ok = ok && write_message(&mut writer, m, io_timeout).await;
                }
                ok
            }
            TcpReply::Stream { first, rest } => {
                write_stream(&mut writer, first, rest, &conn, io_timeout).await
            }
        };
        conn.pending.fetch_sub(size, Ordering::AcqRel);
        if !written {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

/// Writes a transfer as its messages arrive; false if the connection must close.
async fn write_stream(
    writer: &mut OwnedWriteHalf,
    first: Vec<u8>,
    mut rest: mpsc::Receiver<Result<Vec<u8>, Aborted>>,
    conn: &Conn,
    io_timeout: Duration,
) -> bool {
    if !write_message(writer, &first, io_timeout).await {
        return false;
    }
    while let Some(piece) = rest.recv().await {
        match piece {
            Ok(m) if write_message(writer, &m, io_timeout).await => {}
            Ok(_) => return false,
            Err(Aborted) => {
                conn.cut.notify_one();
                return false;
            }
        }
    }
    true
}

/// Writes one framed message within `io_timeout`.
async fn write_message(writer: &mut OwnedWriteHalf, message: &[u8], io_timeout: Duration) -> bool {
    let Ok(len) = u16::try_from(message.len()) else {
        tracing::error!(
            len = message.len(),
            "reply too large for TCP framing: connection closed"
        );
        return false;
    };
    let mut framed = Vec::with_capacity(message.len() + 2);
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(message);
    match tokio::time::timeout(io_timeout, writer.write_all(&framed)).await {
        Ok(Ok(())) => true,
        Ok(Err(_)) => false,
        Err(_) => {
            bump(&GUARD.tcp_io_timeouts);
            tracing::debug!("tcp reply not written within the I/O timeout: cut");
            false
        }
    }
}
