//! The server's control endpoint, asked over plain HTTP/1.1.
//!
//! ```text
//!  http(port, method, path) ─► (status line, body)
//!  stat(port, name) ─► one counter of GET /stats
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A plain HTTP/1.1 request; returns (status line, body).
pub fn http(port: u16, method: &str, path: &str) -> (String, String) {
    http_as(port, method, path, None)
}

/// [`http`] with `Authorization: Bearer TOKEN` when a token is given.
pub fn http_as(port: u16, method: &str, path: &str, token: Option<&str>) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
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
