//! The parent side of a KSK or CSK rollover: does every one of the parent
//! zone's servers serve the new key's DS? (as Knot's `ksk-submission`).
//!
//! ```text
//!  parent_serves(servers, zone, ds) ─► per server: DS query over UDP
//!     (TCP when truncated), RD off ─► DS records of the answer
//!     ─► Some(largest TTL) when every server lists `ds`, else None
//! ```

use dns::Name;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const DS: u16 = 43;

/// Why a parent server could not be asked.
#[derive(Debug, thiserror::Error)]
#[error("parent server {server}: {why}")]
pub struct ParentError {
    /// The server asked.
    pub server: String,
    /// What went wrong.
    pub why: String,
}

/// `Some(ttl)` when every server in `servers` answers the DS question for
/// `zone` with a record equal to `ds` (rdata), with the largest TTL seen;
/// `None` when one of them does not list it yet.
pub async fn parent_serves(
    servers: &[String],
    zone: &Name,
    ds: &[u8],
    timeout: Duration,
) -> Result<Option<u32>, ParentError> {
    let mut ttl = 0;
    for server in servers {
        let fail = |why: String| ParentError {
            server: server.clone(),
            why,
        };
        let addr: SocketAddr = server
            .parse()
            .or_else(|_| format!("{server}:53").parse())
            .map_err(|_| fail("not an address (ADDR:PORT)".into()))?;
        let records = tokio::time::timeout(timeout, ask_ds(addr, zone))
            .await
            .map_err(|_| fail(format!("no answer within {timeout:?}")))?
            .map_err(fail)?;
        match records.iter().find(|(rd, _)| rd.as_slice() == ds) {
            Some((_, t)) => ttl = ttl.max(*t),
            None => return Ok(None),
        }
    }
    Ok(Some(ttl))
}

/// The DS records (rdata, TTL) that `addr` answers for `zone`.
async fn ask_ds(addr: SocketAddr, zone: &Name) -> Result<Vec<(Vec<u8>, u32)>, String> {
    let id: u16 = rand_id();
    let query = ds_query(id, zone);
    let bind = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = UdpSocket::bind(bind).await.map_err(|e| e.to_string())?;
    sock.send_to(&query, addr)
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 65535];
    let reply = loop {
        let (n, from) = sock.recv_from(&mut buf).await.map_err(|e| e.to_string())?;
        if from == addr && n >= 12 && buf[..2] == id.to_be_bytes() {
            break buf[..n].to_vec();
        }
    };
    let reply = match reply[2] & 0x02 != 0 {
        true => ask_tcp(addr, &query).await?,
        false => reply,
    };
    ds_records(&reply)
}

async fn ask_tcp(addr: SocketAddr, query: &[u8]) -> Result<Vec<u8>, String> {
    let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    s.write_all(&framed).await.map_err(|e| e.to_string())?;
    let len = s.read_u16().await.map_err(|e| e.to_string())?;
    let mut reply = vec![0u8; usize::from(len)];
    s.read_exact(&mut reply).await.map_err(|e| e.to_string())?;
    Ok(reply)
}

fn rand_id() -> u16 {
    let mut b = [0u8; 2];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).ok();
    u16::from_be_bytes(b)
}

/// A DS question for `zone`, recursion not desired.
fn ds_query(id: u16, zone: &Name) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(zone.as_wire());
    q.extend_from_slice(&DS.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    q
}

/// The DS records of a reply's answer section, or why there are none
/// to read (an error rcode, a malformed reply).
fn ds_records(reply: &[u8]) -> Result<Vec<(Vec<u8>, u32)>, String> {
    let short = || "malformed reply".to_string();
    let rcode = reply.get(3).ok_or_else(short)? & 0x0f;
    if rcode != 0 && rcode != 3 {
        return Err(format!("rcode {rcode}"));
    }
    let count = |at: usize| u16::from_be_bytes([reply[at], reply[at + 1]]);
    let (qd, an) = (count(4), count(6));
    let mut at = 12;
    for _ in 0..qd {
        at = skip_name(reply, at).ok_or_else(short)? + 4;
    }
    let mut out = Vec::new();
    for _ in 0..an {
        at = skip_name(reply, at).ok_or_else(short)?;
        let head = reply.get(at..at + 10).ok_or_else(short)?;
        let rtype = u16::from_be_bytes([head[0], head[1]]);
        let ttl = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let len = usize::from(u16::from_be_bytes([head[8], head[9]]));
        let rd = reply.get(at + 10..at + 10 + len).ok_or_else(short)?;
        if rtype == DS {
            out.push((rd.to_vec(), ttl));
        }
        at += 10 + len;
    }
    Ok(out)
}

/// The offset after the (possibly compressed) name at `at`.
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xc0 == 0xc0 => return Some(at + 2),
            l => at += 1 + usize::from(l),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ds_records_are_read_past_compressed_owners() {
        let zone: Name = "child.example.".parse().unwrap();
        let mut reply = ds_query(7, &zone);
        reply[2] = 0x84; // QR, AA
        reply[7] = 2; // two answers
        for (rd, ttl) in [(&[1u8, 2, 3, 4][..], 60u32), (&[9, 9][..], 120)] {
            reply.extend_from_slice(&[0xc0, 12]);
            reply.extend_from_slice(&DS.to_be_bytes());
            reply.extend_from_slice(&1u16.to_be_bytes());
            reply.extend_from_slice(&ttl.to_be_bytes());
            reply.extend_from_slice(&(rd.len() as u16).to_be_bytes());
            reply.extend_from_slice(rd);
        }
        let got = ds_records(&reply).unwrap();
        assert_eq!(got, vec![(vec![1, 2, 3, 4], 60), (vec![9, 9], 120)]);
        reply[3] = 2; // SERVFAIL
        assert!(ds_records(&reply).unwrap_err().contains("rcode 2"));
        assert!(ds_records(&reply[..20]).is_err());
    }
}
