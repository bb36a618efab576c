//! Writers that change the child zone the whole time, each by a tool an
//! operator uses: `mongodns-import` (merge), `nsupdate` (TSIG, TCP) and
//! the HTTP API (curl PATCH).
//!
//! ```text
//!  run(stop, pause) ─► round n: import impN, UPDATE updN, PATCH apiN
//!     ─► names written pushed to `written` (the resolver asks them)
//!  pause: set ─► the round in progress ends, `idle` set until resumed
//! ```

use mongodns_testkit::{binary, run_with_input};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the writers share with the test.
#[derive(Default)]
pub struct Shared {
    pub stop: AtomicBool,
    pub pause: AtomicBool,
    pub idle: AtomicBool,
    pub written: Mutex<Vec<String>>,
    pub failed: Mutex<Vec<String>>,
    pub rounds: AtomicU64,
}

/// Where and how the writers write.
pub struct Target {
    pub uri: String,
    pub database: String,
    pub zone: String,
    pub dns_port: u16,
    pub api_port: u16,
    pub api_key: String,
    pub tsig: String,
    pub dir: std::path::PathBuf,
}

/// Writes until `stop`, one round every 300 ms.
pub fn run(t: &Target, shared: &Arc<Shared>) {
    let mut n = 0u64;
    while !shared.stop.load(Ordering::SeqCst) {
        if shared.pause.load(Ordering::SeqCst) {
            shared.idle.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        shared.idle.store(false, Ordering::SeqCst);
        n += 1;
        for (what, result) in [
            ("import", import(t, n)),
            ("nsupdate", nsupdate(t, n)),
            ("api", patch(t, n)),
        ] {
            match result {
                Ok(name) => shared.written.lock().unwrap().push(name),
                Err(e) => shared
                    .failed
                    .lock()
                    .unwrap()
                    .push(format!("{what} {n}: {e}")),
            }
        }
        shared.rounds.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn import(t: &Target, n: u64) -> Result<String, String> {
    let name = format!("imp{n}.{}", t.zone);
    let file = t.dir.join(format!("imp{n}.zone"));
    std::fs::write(&file, format!("{name} 2 IN A 192.0.2.{}\n", n % 250)).unwrap();
    let out = Command::new(binary("mongodns-import"))
        .args([
            "--mongodb-uri",
            &t.uri,
            "--database",
            &t.database,
            "--zone",
            &t.zone,
        ])
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(name),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

fn nsupdate(t: &Target, n: u64) -> Result<String, String> {
    let name = format!("upd{n}.{}", t.zone);
    let script = format!(
        "server 127.0.0.1 {}\nzone {}\nupdate add {name} 2 A 192.0.2.{}\nsend\n",
        t.dns_port,
        t.zone,
        n % 250
    );
    let mut cmd = Command::new("nsupdate");
    cmd.args(["-v", "-y", &t.tsig]);
    let out = run_with_input(cmd, &script)
        .map_err(|e| format!("nsupdate is needed (bind9-dnsutils): {e}"))?;
    match out.status.success() {
        true => Ok(name),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

fn patch(t: &Target, n: u64) -> Result<String, String> {
    let name = format!("api{n}.{}", t.zone);
    let body = format!(
        r#"{{"rrsets":[{{"name":"{name}","type":"A","ttl":2,"changetype":"REPLACE","records":[{{"content":"192.0.2.{}","disabled":false}}]}}]}}"#,
        n % 250
    );
    let url = format!(
        "http://127.0.0.1:{}/api/v1/servers/localhost/zones/{}",
        t.api_port, t.zone
    );
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "PATCH",
            "--max-time",
            "20",
        ])
        .args([
            "-H",
            &format!("X-API-Key: {}", t.api_key),
            "-H",
            "Content-Type: application/json",
        ])
        .args(["--data", &body, &url])
        .output()
        .map_err(|e| e.to_string())?;
    let code = String::from_utf8_lossy(&out.stdout).into_owned();
    match code.as_str() {
        "204" | "200" => Ok(name),
        _ => Err(format!(
            "HTTP {code} {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}
