//! Phase 5 of the run: what the writers achieved, read once they ended —
//! the steady import's figures, the signing, and the signed zone checked.
//!
//! ```text
//!  During ─► steady_import (summary line; a failed import is the run's error)
//!         ─► signed? ─► check_at_end: AXFR + dnssec-verify + every imported
//!                       name present ─► cleanup (the replaced version
//!                       deleted, timed) ─► secure-zone again, nothing else writing
//!         ─► signing_line ─► Outcome
//! ```

use super::children::{db_flags, spawn, Children};
use super::concurrent::During;
use super::scrape::{last_line_starting, number_before, parse_import_line, tail, ImportRun};
use super::setup::Programs;
use super::signed_check::{check_signed_zone, SignedCheck};
use super::{log, Plan, ScenarioArgs};
use crate::zonegen::BigZone;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// What the writers achieved.
pub(super) struct Outcome {
    /// The steady import.
    pub(super) steady: ImportRun,
    /// `secure-zone` exited 0.
    pub(super) signed: bool,
    /// The signer's last line, or how it failed.
    pub(super) signing_line: String,
    /// The signed zone's check, when it was signed.
    pub(super) check: Option<SignedCheck>,
    /// Seconds of `secure-zone` again after the run, when it succeeded.
    pub(super) quiet_sign: Option<f64>,
    /// `mongodns-sign cleanup` of the signed zone after the check: its
    /// last line, or how it failed.
    pub(super) cleanup: Option<String>,
}

/// Reads the writers' outcome; checks the signed zone when it was signed.
pub(super) async fn settle(
    args: &ScenarioArgs,
    plan: &Plan,
    children: &mut Children,
    programs: &Programs,
    work: &Path,
    fresh: &BigZone,
    during: &During,
) -> Result<Outcome, String> {
    let steady = steady_import(args, during)?;
    let signed = during.sign_status.is_some_and(|s| s.success());
    let (check, cleanup, quiet_sign) = if signed {
        let end = AtEnd {
            args,
            plan,
            work,
            fresh,
            sign_bin: &programs.sign,
        };
        end.check(children, &during.import_status).await?
    } else {
        (None, None, None)
    };
    let signing_line = signing_line(during);
    if !signed {
        log(format!("secure-zone: {signing_line}"));
    }
    Ok(Outcome {
        steady,
        signed,
        signing_line,
        check,
        quiet_sign,
        cleanup,
    })
}

/// The steady import's figures from its summary line; an error when it
/// failed, a line saying so when it was killed at the time limit.
fn steady_import(args: &ScenarioArgs, during: &During) -> Result<ImportRun, String> {
    let import_log = &during.writers.import_log;
    let line = last_line_starting(import_log, "imported ");
    match (&during.import_status, parse_import_line(&line)) {
        (Some(s), Some((records, seconds, rate))) if s.success() => Ok(ImportRun {
            what: "steady import".into(),
            records,
            seconds,
            rate,
            line,
            finished: true,
        }),
        (Some(s), _) => Err(format!(
            "the steady import failed ({s}):\n{}",
            tail(import_log, 10)
        )),
        (None, _) => Ok(ImportRun {
            what: "steady import".into(),
            line: format!("not finished within {} s; killed", args.finish_timeout),
            ..Default::default()
        }),
    }
}

/// The signer's last line, how it failed, or that it was killed.
fn signing_line(during: &During) -> String {
    let sign_log = &during.writers.sign_log;
    match &during.sign_status {
        Some(s) if s.success() => last_line_starting(sign_log, "secured "),
        Some(s) => format!("failed ({s}): {}", tail(sign_log, 3).replace('\n', " / ")),
        None => format!("not finished after {:.0} s (killed)", during.sign_secs),
    }
}

/// What the check at the end needs.
struct AtEnd<'a> {
    args: &'a ScenarioArgs,
    plan: &'a Plan,
    work: &'a Path,
    fresh: &'a BigZone,
    sign_bin: &'a Path,
}

impl AtEnd<'_> {
    /// The signed zone checked through a transfer (every name of the
    /// steady import present when it finished into that zone), then the
    /// replaced version deleted (`cleanup`, timed), then `secure-zone` of
    /// the same zone once more with nothing else writing, timed.
    async fn check(
        &self,
        children: &mut Children,
        import_status: &Option<ExitStatus>,
    ) -> Result<(Option<SignedCheck>, Option<String>, Option<f64>), String> {
        let (args, plan) = (self.args, self.plan);
        let imported_here =
            plan.sign_apex == plan.import_apex && import_status.is_some_and(|s| s.success());
        let expected: Vec<String> = if imported_here {
            let fresh = self.fresh;
            fresh
                .names()
                .map(|g| fresh.fqdn(&g).to_ascii_lowercase())
                .collect()
        } else {
            Vec::new()
        };
        log(format!(
            "checking the signed zone {} (AXFR, dnssec-verify)",
            plan.sign_apex
        ));
        let (listen, apex, dir) = (args.listen, plan.sign_apex.clone(), self.work.to_path_buf());
        let check = tokio::task::spawn_blocking(move || {
            check_signed_zone(listen, &apex, expected.into_iter(), &dir)
        })
        .await
        .map_err(|e| format!("check: {e}"))?;
        log(format!(
            "signed zone: passed={} {}",
            check.passed(),
            check.verdict
        ));
        let cleanup = self.clean_up(children).await?;
        log(format!("cleanup: {cleanup}"));
        let quiet = self.sign_quietly(children).await?;
        Ok((Some(check), Some(cleanup), quiet))
    }

    /// `mongodns-sign cleanup` of the zone signed during the run: deletes
    /// the version its switch replaced. Its last line, or how it ended.
    async fn clean_up(&self, children: &mut Children) -> Result<String, String> {
        let log_file = self.work.join("cleanup.log");
        let status = self.run_sign(children, &["cleanup"], &log_file).await?;
        let limit = self.args.finish_timeout;
        Ok(match status {
            Some(s) if s.success() => last_line_starting(&log_file, "cleanup "),
            Some(s) => format!("failed ({s}): {}", tail(&log_file, 3).replace('\n', " / ")),
            None => format!("not finished within {limit:.0} s (killed)"),
        })
    }

    /// `secure-zone` of the zone to sign, alone: its seconds to the switch
    /// when it succeeded. With `--no-cleanup`: deleting what it replaced
    /// is what `clean_up` measured, and would take as long again.
    async fn sign_quietly(&self, children: &mut Children) -> Result<Option<f64>, String> {
        let log_file = self.work.join("sign-quiet.log");
        let t = Instant::now();
        let status = self
            .run_sign(children, &["secure-zone", "--no-cleanup"], &log_file)
            .await?;
        Ok(status.filter(|s| s.success()).map(|_| {
            number_before(&last_line_starting(&log_file, "secured "), "s")
                .unwrap_or(t.elapsed().as_secs_f64())
        }))
    }

    /// `mongodns-sign --quiet <command> <zone to sign> [flags]` (`command`:
    /// the subcommand, then its flags), its log in `log_file`: its exit
    /// status, or None when it did not finish within the finish timeout
    /// (it is killed).
    async fn run_sign(
        &self,
        children: &mut Children,
        command: &[&str],
        log_file: &Path,
    ) -> Result<Option<ExitStatus>, String> {
        let mut args = db_flags(self.args);
        args.extend([
            "--quiet".into(),
            command[0].into(),
            self.plan.sign_apex.clone(),
        ]);
        args.extend(command[1..].iter().map(|f| f.to_string()));
        let child = spawn(children, "mongodns-sign", self.sign_bin, &args, log_file)?;
        let limit = Duration::from_secs_f64(self.args.finish_timeout);
        Ok(children.wait(child, limit).await)
    }
}
