//! The update benchmark's load: TSIG-signed DNS UPDATEs at a rate, or as
//! fast as answers come, and the database's raw single-document update
//! rate beside it (`bench/updates`).
//!
//! ```text
//!  update_rate updates --port P --key ALG:NAME:SECRET --zone Z --count N
//!      [--concurrency C] [--rate R]  ─► N UPDATEs (each one add of a fresh
//!      name) from C senders ─► updates/s, p50/p99/max
//!  update_rate api --port P --key APIKEY --zone Z --count N [--concurrency C]
//!      ─► N PATCHes of the HTTP API (each a REPLACE of a fresh name's A)
//!      ─► updates/s, p50/p99/max
//!  update_rate raw --uri URI --count N ─► N update_one on one collection,
//!      one at a time ─► updates/s
//! ```

use backend_mongo::Store;
use mongodns_server::tsig::{sign_request, TsigKey};
use mongodns_testkit::UpdateRr;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn number(args: &[String], name: &str, default: u64) -> u64 {
    arg(args, name).map_or(default, |v| v.parse().expect("a number"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("updates") => updates(&args),
        Some("raw") => raw(&args),
        Some("api") => api(&args),
        _ => {
            eprintln!("usage: update_rate updates --port P --key K --zone Z --count N [--concurrency C] [--rate R]\n       update_rate api --port P --key APIKEY --zone Z --count N [--concurrency C]\n       update_rate raw --uri URI --count N");
            std::process::exit(2);
        }
    }
}

/// One UPDATE: add (or, `delete`, remove) `name` A 192.0.2.1 in `zone`, signed.
fn update_message(id: u16, zone: &str, name: &str, delete: bool, key: &TsigKey) -> Vec<u8> {
    let (class, ttl): (u16, u32) = if delete { (254, 0) } else { (1, 60) };
    let rr = UpdateRr {
        owner: name.to_string(),
        rtype: 1,
        class,
        ttl,
        rdata: vec![192, 0, 2, 1],
    };
    let mut m = mongodns_testkit::update_message(id, zone, &[], &[rr]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    sign_request(&mut m, key, now);
    m
}

/// Sends `msg` and waits for its reply; the rcode (None: no reply in 10 s).
fn exchange(socket: &UdpSocket, port: u16, msg: &[u8]) -> Option<u8> {
    socket.send_to(msg, ("127.0.0.1", port)).ok()?;
    let mut buf = [0u8; 1024];
    loop {
        let n = socket.recv(&mut buf).ok()?;
        if n >= 12 && buf[..2] == msg[..2] {
            return Some(buf[3] & 0xF);
        }
    }
}

/// Runs `count` operations from `senders` threads (at most `rate` a second
/// when not 0), `op(i)` true on success; prints the rate and latencies.
fn drive(what: &str, count: usize, senders: usize, rate: u64, op: impl Fn(usize) -> bool + Sync) {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(count));
    let failed = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..senders {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return;
                }
                if rate > 0 {
                    let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                }
                let sent = Instant::now();
                match op(i) {
                    true => latencies.lock().unwrap().push(sent.elapsed()),
                    false => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let took = started.elapsed();
    let mut l = latencies.into_inner().unwrap();
    l.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pick = |q: f64| {
        l.get(((l.len() as f64 * q) as usize).min(l.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{} {what} applied in {:.2} s: {:.0} {what}/s ({senders} senders); {} failed; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        l.len(),
        took.as_secs_f64(),
        l.len() as f64 / took.as_secs_f64(),
        failed.load(Ordering::Relaxed),
        ms(pick(0.5)),
        ms(pick(0.99)),
        ms(l.last().copied().unwrap_or_default())
    );
}

fn updates(args: &[String]) {
    let port = number(args, "--port", 5300) as u16;
    let key: TsigKey = arg(args, "--key")
        .expect("--key")
        .parse()
        .expect("a TSIG key");
    let zone = arg(args, "--zone").expect("--zone");
    let count = number(args, "--count", 1000) as usize;
    let senders = number(args, "--concurrency", 1) as usize;
    let rate = number(args, "--rate", 0);
    let pid = std::process::id();
    drive("updates", count, senders, rate, |i| {
        thread_local! {
            static SOCKET: UdpSocket = {
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s
            };
        }
        let name = format!("u{i}-{pid}.{zone}");
        let msg = update_message(i as u16, &zone, &name, false, &key);
        SOCKET.with(|s| exchange(s, port, &msg)) == Some(0)
    });
}

/// One PATCH of the HTTP API over a connection of its own; true on 204.
fn patch(port: u16, key: &str, zone: &str, name: &str) -> bool {
    let body = format!(
        r#"{{"rrsets": [{{"name": "{name}", "type": "A", "ttl": 60, "changetype": "REPLACE", "records": [{{"content": "192.0.2.1", "disabled": false}}]}}]}}"#
    );
    let request = format!(
        "PATCH /api/v1/servers/localhost/zones/{zone} HTTP/1.1\r\nHost: bench\r\nX-API-Key: {key}\r\n\
         Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    use std::io::{Read, Write};
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 204")
}

fn api(args: &[String]) {
    let port = number(args, "--port", 8081) as u16;
    let key = arg(args, "--key").expect("--key");
    let zone = arg(args, "--zone").expect("--zone");
    let count = number(args, "--count", 1000) as usize;
    let senders = number(args, "--concurrency", 1) as usize;
    let pid = std::process::id();
    drive("PATCHes", count, senders, 0, |i| {
        patch(port, &key, &zone, &format!("a{i}-{pid}.{zone}"))
    });
}

fn raw(args: &[String]) {
    let uri = arg(args, "--uri").expect("--uri");
    let count = number(args, "--count", 1000);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = Store::connect(&uri, "bench_raw_updates", Duration::from_secs(5)).await.expect("the database");
        let coll = store.database().collection::<backend_mongo::bson::Document>("raw");
        for i in 0..100 {
            let doc = backend_mongo::bson::doc! {"_id": i, "n": 0};
            let _ = coll.insert_one(doc).await;
        }
        let started = Instant::now();
        for i in 0..count {
            let filter = backend_mongo::bson::doc! {"_id": (i % 100) as i64};
            let update = backend_mongo::bson::doc! {"$inc": {"n": 1}};
            coll.update_one(filter, update).await.expect("an update");
        }
        let took = started.elapsed();
        println!(
            "{count} single-document updates (update_one by _id, one at a time) in {:.2} s: {:.0} updates/s",
            took.as_secs_f64(),
            count as f64 / took.as_secs_f64()
        );
        let _ = store.database().drop().await;
        store.shutdown().await;
    });
}
