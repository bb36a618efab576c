//! TCP (RFC 7766): length-framed, pipelined, out-of-order replies.
//!
//! ```text
//!  accept ─ permit from the connection limit ─► connection task
//!    reader: [len][msg] … ─► spawn(handle_tcp) ─► channel ─► writer: [len][reply]…
//!    (the messages of one reply, e.g. a zone transfer, are written together)
//!    idle (no query and nothing in flight) for idle_timeout ─► close
//!    max_queries read ─► stop reading, write what is in flight, close
//! ```

use super::Handler;
use crate::pipeline::Transport;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

/// Limits for TCP clients.
#[derive(Clone, Copy, Debug)]
pub struct TcpLimits {
    /// Connections served at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// Close a connection with no query for this long.
    pub idle_timeout: Duration,
    /// Queries answered concurrently on one connection.
    pub max_in_flight: usize,
    /// Queries read from one connection before it is closed (after the
    /// replies in flight are written); 0: no limit.
    pub max_queries: usize,
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            max_connections: 256,
            idle_timeout: Duration::from_secs(10),
            max_in_flight: 32,
            max_queries: 0,
        }
    }
}

/// Accepts connections on `listener` until the task is dropped.
pub async fn serve_tcp<H: Handler>(listener: TcpListener, handler: Arc<H>, limits: TcpLimits) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "tcp accept error");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, handler, limits).await;
            drop(permit);
        });
    }
}

async fn serve_connection<H: Handler>(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<H>,
    limits: TcpLimits,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Vec<Vec<u8>>>(limits.max_in_flight);
    let write_task = tokio::spawn(async move {
        while let Some(replies) = rx.recv().await {
            for reply in replies {
                let mut framed = Vec::with_capacity(reply.len() + 2);
                framed.extend_from_slice(&(reply.len() as u16).to_be_bytes());
                framed.extend_from_slice(&reply);
                if writer.write_all(&framed).await.is_err() {
                    return;
                }
            }
        }
        let _ = writer.shutdown().await;
    });
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    let mut queries = 0usize;
    loop {
        if limits.max_queries > 0 && queries >= limits.max_queries {
            tracing::debug!(%peer, queries, "tcp query limit reached, closing");
            break;
        }
        let mut len = [0u8; 2];
        match tokio::time::timeout(limits.idle_timeout, reader.read_exact(&mut len)).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => break, // closed or reset
            Err(_) => {
                tracing::debug!(%peer, "tcp idle timeout");
                break;
            }
        }
        let len = u16::from_be_bytes(len) as usize;
        let mut packet = vec![0u8; len];
        match tokio::time::timeout(limits.idle_timeout, reader.read_exact(&mut packet)).await {
            Ok(Ok(_)) => {}
            _ => break,
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        queries += 1;
        let handler = handler.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let replies = handler.handle_tcp(&packet, peer).await;
            handler.observe(
                &packet,
                replies.first().map(Vec::as_slice),
                peer,
                Transport::Tcp,
            );
            if !replies.is_empty() {
                let _ = tx.send(replies).await;
            }
            drop(permit);
        });
    }
    drop(tx);
    let _ = write_task.await;
}
