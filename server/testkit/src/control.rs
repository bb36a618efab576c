//! The server's control endpoint and HTTP API, asked over HTTP/1.1 with
//! hyper's client, and the raw-socket helpers of the tests that need the
//! bytes themselves.
//!
//! ```text
//!  http(port, method, path) ─► http_request(…, headers, body)
//!     ─► a thread of its own: a one-thread runtime, connect_loopback,
//!        hyper http1 handshake, one request (Host: x, the header lines,
//!        Content-Length) ─► (status line, body: hyper joins chunks);
//!        closed before a reply ─► ("", "")
//!  connect_loopback(port): refusals retried briefly, and said
//!  stat(port, name) ─► one counter of GET /stats
//!  dechunk(body): a chunked body read off a raw socket, joined
//!  closed_within(stream, limit): has the server closed it?
//! ```

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1;
use hyper::ext::ReasonPhrase;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long the reply's head, and then each part of its body, may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

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
/// a body; returns (status line, body), or two empty strings when the
/// server closes the connection without replying.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (String, String) {
    let request = build_request(method, path, headers, body);
    let stream = connect_loopback(port);
    on_own_runtime(async move {
        match send(stream, request).await {
            Ok(reply) => (status_line(&reply), read_body(reply).await),
            // Closed after the request was sent, or before hyper sent it.
            Err(e) if e.is_incomplete_message() || e.is_canceled() => {
                (String::new(), String::new())
            }
            Err(e) => panic!("HTTP request to 127.0.0.1:{port} failed: {e}"),
        }
    })
}

/// The request: `Host: x`, the caller's header lines, `Content-Length`.
fn build_request(method: &str, path: &str, headers: &str, body: &str) -> Request<Full<Bytes>> {
    let method = Method::from_bytes(method.as_bytes()).expect("an HTTP method");
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("Host", "x");
    for line in headers.split("\r\n").filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').expect("a header line NAME: VALUE");
        request = request.header(name.trim(), value.trim());
    }
    request
        .header("Content-Length", body.len())
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request")
}

/// Runs `f` to its end on a one-thread runtime in a thread of its own, so
/// that callers inside a runtime (or none) can wait for it alike.
fn on_own_runtime<T: Send>(f: impl Future<Output = T> + Send) -> T {
    std::thread::scope(|s| {
        let thread = s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the HTTP client");
            runtime.block_on(f)
        });
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// One request over its own connection (the connection driven meanwhile);
/// the reply's head within [`READ_TIMEOUT`].
async fn send(
    stream: TcpStream,
    request: Request<Full<Bytes>>,
) -> hyper::Result<Response<Incoming>> {
    stream.set_nonblocking(true).unwrap();
    let io = TokioIo::new(tokio::net::TcpStream::from_std(stream).unwrap());
    let (mut sender, connection) = http1::Builder::new()
        .title_case_headers(true)
        .handshake(io)
        .await?;
    tokio::spawn(connection);
    tokio::time::timeout(READ_TIMEOUT, sender.send_request(request))
        .await
        .expect("no reply within 5 s")
}

/// `HTTP/1.1 200 OK`: the version, the code and the reason sent.
fn status_line(reply: &Response<Incoming>) -> String {
    let status = reply.status();
    let reason = match reply.extensions().get::<ReasonPhrase>() {
        Some(r) => String::from_utf8_lossy(r.as_bytes()).into_owned(),
        None => status.canonical_reason().unwrap_or("").to_string(),
    };
    format!("{:?} {} {reason}", reply.version(), status.as_str())
}

/// The whole body as text, each part within [`READ_TIMEOUT`]; a body cut
/// short is returned as far as it came.
async fn read_body(reply: Response<Incoming>) -> String {
    let mut body = reply.into_body();
    let mut bytes = Vec::new();
    loop {
        let next = tokio::time::timeout(READ_TIMEOUT, body.frame()).await;
        match next.expect("the body stalled for 5 s") {
            Some(Ok(frame)) => bytes.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
            Some(Err(_)) | None => break,
        }
    }
    String::from_utf8(bytes).expect("a UTF-8 body")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// A one-connection server: reads the request's head and body
    /// (`Content-Length`), sends it back on `seen`, then writes `reply`
    /// and closes.
    fn serve_once(reply: &'static str) -> (u16, mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, seen) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !request_complete(&got) {
                let n = s.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            tx.send(String::from_utf8(got).unwrap()).unwrap();
            s.write_all(reply.as_bytes()).unwrap();
        });
        (port, seen)
    }

    /// Whether `got` holds a whole request (head, then its body).
    fn request_complete(got: &[u8]) -> bool {
        let text = String::from_utf8_lossy(got);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap())
            })
            .unwrap_or(0);
        body.len() >= length
    }

    #[test]
    fn a_chunked_reply_is_joined_and_the_status_line_kept() {
        let reply = "HTTP/1.1 418 Short And Stout\r\nTransfer-Encoding: chunked\r\n\r\n\
                     5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let (port, seen) = serve_once(reply);
        let got = http_request(port, "PATCH", "/a?b=c", "X-API-Key: k\r\n", "{\"x\":1}");
        assert_eq!(
            got,
            ("HTTP/1.1 418 Short And Stout".into(), "hello world".into())
        );
        let request = seen.recv().unwrap();
        assert!(
            request.starts_with("PATCH /a?b=c HTTP/1.1\r\n"),
            "{request}"
        );
        let lower = request.to_ascii_lowercase();
        for line in ["host: x\r\n", "x-api-key: k\r\n", "content-length: 7\r\n"] {
            assert!(lower.contains(line), "{line:?} not in {request}");
        }
        assert!(request.ends_with("\r\n\r\n{\"x\":1}"), "{request}");
    }

    #[test]
    fn a_bearer_token_and_an_empty_body_are_sent() {
        let (port, seen) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let got = http_as(port, "POST", "/purge", Some("t0ken"));
        assert_eq!(got, ("HTTP/1.1 200 OK".into(), "ok".into()));
        let request = seen.recv().unwrap();
        assert!(
            request.contains("Authorization: Bearer t0ken\r\n"),
            "{request}"
        );
        assert!(
            request
                .to_ascii_lowercase()
                .contains("content-length: 0\r\n"),
            "{request}"
        );
    }

    #[test]
    fn a_connection_closed_without_a_reply_gives_empty_strings() {
        let (port, _seen) = serve_once("");
        assert_eq!(http(port, "GET", "/health"), (String::new(), String::new()));
    }
}
