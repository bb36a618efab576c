//! The server's control endpoint, asked over plain HTTP/1.1.
//!
//! ```text
//!  http(port, method, path) ─► http_request(…, headers, body) ─► (status line,
//!     body, a chunked one joined by dechunk)
//!  connect_loopback(port): refusals retried briefly, and said
//!  stat(port, name) ─► one counter of GET /stats
//!  closed_within(stream, limit): has the server closed it?
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A plain HTTP/1.1 request; returns (status line, body).
pub fn http(port: u16, method: &str, path: &str) -> (String, String) {
    http_as(port, method, path, None)
}

/// [`http`] with `Authorization: Bearer TOKEN` when a token is given.
pub fn http_as(port: u16, method: &str, path: &str, token: Option<&str>) -> (String, String) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    http_request(port, method, path, &auth, "")
}

/// One HTTP/1.1 request with extra header lines (each ending in CRLF) and
/// a body; returns (status line, body).
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (String, String) {
    let mut stream = connect_loopback(port);
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = match chunked {
        true => dechunk(body),
        false => body.to_string(),
    };
    (head.lines().next().unwrap_or("").to_string(), body)
}

/// The body of a chunked HTTP/1.1 reply (RFC 9112 §7.1), its chunks
/// joined; what follows a cut (a chunk shorter than its size) is dropped.
pub fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        let (Some(chunk), Some(after)) = (rest.get(..n), rest.get(n..)) else {
            break;
        };
        if n == 0 {
            break;
        }
        out.push_str(chunk);
        body = after.strip_prefix("\r\n").unwrap_or(after);
    }
    out
}

/// A TCP connection to 127.0.0.1:`port`. The server binds its HTTP
/// listeners before it answers DNS, so a refusal is unexpected: it is
/// retried for up to 3 s, and said on stderr, so that a flaky start shows
/// in the log instead of failing a test that is about something else.
pub fn connect_loopback(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut refusals = 0;
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => {
                if refusals > 0 {
                    eprintln!("127.0.0.1:{port} refused {refusals} connection(s) first");
                }
                return stream;
            }
            Err(e) if e.kind() == ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                refusals += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("cannot connect to 127.0.0.1:{port} ({refusals} refusals): {e}"),
        }
    }
}

/// One counter from the control endpoint's `/stats`.
pub fn stat(control_port: u16, name: &str) -> u64 {
    let (_, body) = http(control_port, "GET", "/stats");
    let key = format!("\"{name}\":");
    let at = body
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        + key.len();
    body[at..]
        .split([',', '}'])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Reads until the server closes `stream` (EOF or reset), waiting at most
/// `limit`; true if it closed.
pub fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}
