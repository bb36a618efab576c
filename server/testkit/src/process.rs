//! A child process run to its end under a time limit.
//!
//! ```text
//!  run_bounded(cmd, what, limit) ─► stdout and stderr drained on threads
//!      ─► exited: Output (time taken printed) | past limit: killed, panic
//!  run_with_input(cmd, input) ─► input on its stdin ─► Output
//! ```

use std::io::{Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs `cmd` to its end, its output captured; a run past `limit` is killed
/// and fails the test as a hang. The time taken is printed, never judged.
pub fn run_bounded(mut cmd: Command, what: &str, limit: Duration) -> Output {
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained on threads, so a full pipe never stalls the child.
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            kill(&mut child);
            panic!(
                "{what}: still running after {:.1?}: a hang",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("timing: {what}: {:.2?}", started.elapsed());
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Runs `cmd` with `input` on its stdin (an `nsupdate` script), its output
/// captured; an error when it cannot be started.
pub fn run_with_input(mut cmd: Command, input: &str) -> std::io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output()
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut b = Vec::new();
        pipe.read_to_end(&mut b).unwrap();
        b
    })
}

/// Kills `child` and reaps it.
fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}
