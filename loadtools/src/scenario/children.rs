//! The supervisor: the run's child processes, started with their output in
//! a log file, waited for with a time limit, killed when the run ends.
//!
//! ```text
//!  program(name) ─► path next to this program (or --bin-dir)
//!  spawn(name, args, log) ─► Children (index) ─► wait(i, timeout) ─► status | killed
//!  import(what, flags) ─► mongodns-import to its end ─► ImportRun (summary line)
//!  kill_all() at the end, on failure and on SIGINT/SIGTERM
//! ```

use super::scrape::{last_line_starting, parse_import_line, tail, ImportRun};
use super::{log, ScenarioArgs};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, Command};

/// The child processes of a run, killed when it ends.
#[derive(Default)]
pub(super) struct Children {
    list: Vec<(String, Child)>,
}

impl Children {
    /// Holds `child`, named `name`; returns its index.
    fn add(&mut self, name: &str, child: Child) -> usize {
        self.list.push((name.into(), child));
        self.list.len() - 1
    }

    /// Waits for child `i` at most `timeout`; kills it after that.
    /// Returns its exit status when it exited by itself.
    pub(super) async fn wait(&mut self, i: usize, timeout: Duration) -> Option<ExitStatus> {
        let child = &mut self.list[i].1;
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = child.kill().await;
                None
            }
        }
    }

    /// Process id of child `i` (while it runs).
    pub(super) fn pid(&self, i: usize) -> Option<u32> {
        self.list[i].1.id()
    }

    /// Has child `i` exited (and how)?
    pub(super) fn exited(&mut self, i: usize) -> Option<ExitStatus> {
        self.list[i].1.try_wait().ok().flatten()
    }

    /// Kills every child still running.
    pub(super) async fn kill_all(&mut self) {
        for (_, child) in self.list.iter_mut() {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill().await;
            }
        }
        self.list.clear();
    }
}

/// A program next to this one (or in --bin-dir).
pub(super) fn program(args: &ScenarioArgs, name: &str) -> Result<PathBuf, String> {
    let dir = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program's directory: {e}"))?
            .parent()
            .map(Path::to_path_buf)
            .ok_or("cannot find this program's directory")?,
    };
    let path = dir.join(name);
    if !path.is_file() {
        return Err(format!(
            "{} not found (build the workspace: cargo build [--release] --workspace; or give --bin-dir DIR)",
            path.display()
        ));
    }
    Ok(path)
}

/// Starts `path` with `cmd_args`, its stdout and stderr written to
/// `log_file`; returns its index in `children`.
pub(super) fn spawn(
    children: &mut Children,
    name: &str,
    path: &Path,
    cmd_args: &[String],
    log_file: &Path,
) -> Result<usize, String> {
    let stderr =
        std::fs::File::create(log_file).map_err(|e| format!("{}: {e}", log_file.display()))?;
    let stdout = stderr
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_file.display()))?;
    let child = Command::new(path)
        .args(cmd_args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(children.add(name, child))
}

/// The database flags every child gets.
pub(super) fn db_flags(args: &ScenarioArgs) -> Vec<String> {
    vec![
        "--mongodb-uri".into(),
        args.mongodb_uri.clone(),
        "--database".into(),
        args.database.clone(),
    ]
}

/// Runs `mongodns-import` to the end; its summary line parsed.
pub(super) async fn import(
    args: &ScenarioArgs,
    children: &mut Children,
    work: &Path,
    what: &str,
    extra: &[&str],
) -> Result<ImportRun, String> {
    let path = program(args, "mongodns-import")?;
    let mut a = db_flags(args);
    a.extend(extra.iter().map(|s| s.to_string()));
    let log_file = work.join(format!("import-{}.log", what.replace(' ', "-")));
    log(format!("importing {what}"));
    let i = spawn(children, "mongodns-import", &path, &a, &log_file)?;
    let status = children
        .wait(i, Duration::from_secs_f64(args.finish_timeout))
        .await;
    let line = last_line_starting(&log_file, "imported ");
    match status {
        Some(s) if s.success() => {
            let (records, seconds, rate) = parse_import_line(&line)
                .ok_or_else(|| format!("import of {what}: no summary line in {line:?}"))?;
            log(format!("  {line}"));
            Ok(ImportRun {
                what: what.into(),
                records,
                seconds,
                rate,
                line,
                finished: true,
            })
        }
        Some(s) => Err(format!(
            "import of {what} failed ({s}):\n{}",
            tail(&log_file, 10)
        )),
        None => Err(format!(
            "import of {what} did not finish within {} s",
            args.finish_timeout
        )),
    }
}
