//! One zone under the signing service: the lease, then what is due.
//!
//! ```text
//!  run: loop { look(); sleep(interval) }
//!  look: find_zone ─► service lease (held for good; standby while another
//!     `serve` holds it) ─► the _ids of nodes due, --refresh-passes
//!     batches (no lease; none while the earliest expiry is not due)
//!     ─► per batch, a pass under the signing lease (skipped while a
//!     writer or one-shot signer holds it): the first secures / marks /
//!     follows / takes key steps, each refreshes its nodes still due
//!     ─► lease given up ─► earliest expiry ─► status
//! ```

use super::keys::{apply_steps, signs_data_anew, stamp, ParentChecks};
use super::{ServeOptions, Status};
use crate::follow::Follower;
use crate::keyroll::schedule;
use crate::lease::{try_take_for, try_take_service, Lease, SERVICE_PASS};
use crate::{NoProgress, Report, SecureOptions, SignError, Validity};
use backend_mongo::bson::Bson;
use backend_mongo::dnssec_store::DnssecConfig;
use backend_mongo::lock::SERVICE_LEASE;
use backend_mongo::policy::Policy;
use backend_mongo::Store;
use dns::{Name, ZoneInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// How often, at most, the earliest expiration is read again (for the
/// status, and to know when to look for due nodes): a quarter of the
/// zone's refresh window when that is shorter.
const EXPIRY_EVERY: Duration = Duration::from_secs(300);

/// The worker of one zone.
pub(super) struct Worker {
    store: Store,
    zone: Name,
    interval: Duration,
    lease: Duration,
    /// The policy's refresh margin was found shorter than a takeover.
    margin_warned: AtomicBool,
    refresh_batch: i64,
    refresh_passes: i64,
    threads: usize,
    status: Status,
}

/// What the worker keeps between looks while it looks after the zone.
struct Held {
    service: Lease,
    /// The generation signed up to.
    seen: Option<i64>,
    checks: ParentChecks,
    expiry_read: Option<Instant>,
    /// The earliest expiration as last read, with its version: no
    /// look-up of due nodes in that version before it falls due.
    earliest: Option<(i64, i64)>,
}

/// Seconds since the epoch.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Worker {
    pub(super) fn new(store: Store, zone: Name, o: &ServeOptions, status: Status) -> Worker {
        Worker {
            store,
            zone,
            interval: o.interval,
            lease: o.lease,
            margin_warned: AtomicBool::new(false),
            refresh_batch: o.refresh_batch,
            refresh_passes: o.refresh_passes,
            threads: o.threads,
            status,
        }
    }

    /// Looks at the zone every interval until it is gone or unsecured, or
    /// `stop` turns true; then gives its service lease up.
    pub(super) async fn run(self, stop: watch::Receiver<bool>) {
        let validity = Validity::default();
        let mut follower = Follower::new(&self.store, &self.zone, &validity, self.threads);
        let mut held: Option<Held> = None;
        loop {
            match self.look(&mut held, &mut follower, &stop).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    tracing::warn!(zone = %self.zone, error = %e, "signing service: retrying");
                    self.status
                        .update(&self.zone, |s| s.last_error = Some((now(), e.to_string())));
                    follower.reset();
                    if let Some(h) = held.as_mut() {
                        h.seen = None;
                    }
                }
            }
            if super::stopped_within(&stop, self.interval).await {
                break;
            }
        }
        if let Some(h) = held {
            let _ = h.service.release_with(Ok(())).await;
        }
        self.status.update(&self.zone, |s| {
            s.watched = false;
            s.signing = false;
        });
        tracing::info!(zone = %self.zone, "stopped watching the zone");
    }

    /// One look; false when the zone is gone or no longer to be signed.
    /// `stop` ends it between two passes.
    async fn look(
        &self,
        held: &mut Option<Held>,
        follower: &mut Follower<'_>,
        stop: &watch::Receiver<bool>,
    ) -> Result<bool, SignError> {
        let Some(served) = self.store.find_zone(&self.zone).await? else {
            return Ok(false);
        };
        let config = self.store.dnssec_config(&self.zone).await?;
        if !config.secured && config.policy.is_none() {
            return Ok(false);
        }
        if !self.own(held, follower).await? {
            return Ok(true);
        }
        self.status.update(&self.zone, |s| {
            s.policy = config.policy.as_ref().map(|p| p.name.clone());
        });
        self.check_margin(config.policy.as_ref());
        if !config.secured {
            let policy = config.policy.clone().expect("checked above");
            return self.secure(&policy).await.map(|_| true);
        }
        // What is due is looked up first, outside the lease (a scan where
        // the database has no expiry index), enough for several passes.
        // Each pass holds the signing lease and gives it up at its end, so
        // that writers sign what they write themselves; the first also
        // marks, follows the writers and takes the key steps.
        let h = held.as_mut().expect("owned");
        let limit = self.refresh_batch * self.refresh_passes;
        let earliest = h.earliest.filter(|(v, _)| *v == served.ver);
        let due = follower
            .due(&served, limit, earliest.map(|(_, e)| e))
            .await?;
        let mut batches = due.chunks(self.refresh_batch.max(1) as usize);
        let mut published = false;
        let first = batches.next().unwrap_or_default();
        let Some(pass) = try_take_for(&self.store, &self.zone, SERVICE_PASS, self.lease).await?
        else {
            return Ok(true);
        };
        let r = self.work(h, follower, &served, &config, first).await;
        published |= pass.release_with(r).await?;
        for batch in batches {
            if h.service.is_lost() || *stop.borrow() {
                break;
            }
            let Some(pass) =
                try_take_for(&self.store, &self.zone, SERVICE_PASS, self.lease).await?
            else {
                break;
            };
            let r = self.refresh(follower, batch).await;
            published |= pass.release_with(r).await?;
        }
        let every = EXPIRY_EVERY.min(Validity::of(&config).refresh / 4);
        self.read_expiry(h, published || !due.is_empty(), every)
            .await?;
        Ok(true)
    }

    /// The earliest expiration, for the status and the next look-up of
    /// due nodes: read after a pass that found or wrote signatures, and
    /// every `every`, outside the lease.
    async fn read_expiry(
        &self,
        h: &mut Held,
        changed: bool,
        every: Duration,
    ) -> Result<(), SignError> {
        if changed || h.expiry_read.is_none_or(|t| t.elapsed() > every) {
            let Some(served) = self.store.find_zone(&self.zone).await? else {
                return Ok(());
            };
            let soonest = self.store.earliest_expiry(&self.zone, served.ver).await?;
            self.status
                .update(&self.zone, |s| s.earliest_expiry = soonest);
            h.expiry_read = Some(Instant::now());
            h.earliest = soonest.map(|e| (served.ver, e));
        }
        Ok(())
    }

    /// Holds the service lease of the zone, or takes it; false on standby
    /// (another `serve` process looks after the zone).
    async fn own(
        &self,
        held: &mut Option<Held>,
        follower: &mut Follower<'_>,
    ) -> Result<bool, SignError> {
        if held.as_ref().is_some_and(|h| !h.service.is_lost()) {
            return Ok(true);
        }
        *held = None;
        match try_take_service(&self.store, &self.zone, self.lease).await? {
            Some(service) => {
                tracing::info!(zone = %self.zone, "this process now looks after the zone");
                follower.reset();
                *held = Some(Held {
                    service,
                    seen: None,
                    checks: ParentChecks::default(),
                    expiry_read: None,
                    earliest: None,
                });
                self.status.update(&self.zone, |s| {
                    s.signing = true;
                    s.holder = None;
                });
                Ok(true)
            }
            None => {
                let holder = self
                    .store
                    .lock_holder(SERVICE_LEASE, &self.zone)
                    .await?
                    .map(|(h, _)| h.owner);
                self.status.update(&self.zone, |s| {
                    s.signing = false;
                    s.holder = holder;
                });
                Ok(false)
            }
        }
    }

    /// Secures a zone that has a policy but is not secured yet.
    async fn secure(&self, policy: &Policy) -> Result<(), SignError> {
        let options = SecureOptions {
            algorithm: policy.algorithm,
            csk: policy.csk,
            nsec3: policy.nsec3.clone(),
            cds: policy.cds,
            validity: Validity::of(&DnssecConfig {
                policy: Some(policy.clone()),
                ..DnssecConfig::default()
            }),
            threads: self.threads,
            grace: Duration::from_secs(3),
        };
        let r = crate::secure_zone_switch(&self.store, &self.zone, &options, &NoProgress).await?;
        tracing::info!(zone = %self.zone, serial = r.serial, "secured by its policy");
        self.count(&r, false);
        crate::cleanup(&self.store, &self.zone, options.grace, 0, &NoProgress).await?;
        Ok(())
    }

    /// Under the lease: mark, follow, key steps, refresh of the nodes
    /// `due`; true when the refresh published.
    async fn work(
        &self,
        h: &mut Held,
        follower: &mut Follower<'_>,
        served: &ZoneInfo,
        config: &DnssecConfig,
        due: &[String],
    ) -> Result<bool, SignError> {
        if !config.marked {
            let (r, _) = follower.full_with(true).await?;
            self.count(&r, false);
            self.store
                .set_dnssec_fields(&self.zone, vec![("marked", Bson::Boolean(true))])
                .await?;
            h.seen = Some(served.gen);
            tracing::info!(zone = %self.zone, "every signature made anew, each node marked with its expiry");
        }
        if h.seen.is_none() {
            // Taken over: on from where the last process signed, if that
            // is this version (a switch drops the mark).
            h.seen = config.seen_gen.filter(|g| *g <= served.gen);
        }
        if h.seen != Some(served.gen) {
            let (r, _) = follower.step(served, h.seen, false).await?;
            self.count(&r, false);
            h.seen = Some(served.gen);
            self.store
                .set_dnssec_fields(&self.zone, vec![("seen_gen", Bson::Int64(served.gen))])
                .await?;
            tracing::info!(zone = %self.zone, gen = served.gen, "signed up to generation");
        }
        if let Some(policy) = &config.policy {
            self.key_steps(h, follower, config, policy).await?;
        }
        self.refresh(follower, due).await
    }

    /// Under the lease: the nodes `due` still due in the served version
    /// signed again; true when that published.
    async fn refresh(
        &self,
        follower: &mut Follower<'_>,
        due: &[String],
    ) -> Result<bool, SignError> {
        let served = self.current().await?;
        let t = Instant::now();
        let r = follower.refresh(&served, due).await?;
        self.count(&r, true);
        if r.nodes > 0 {
            tracing::info!(zone = %self.zone, nodes_read = r.nodes, signatures = r.stats.signed,
                secs = t.elapsed().as_secs_f64(), "signatures refreshed");
        }
        Ok(r.published_gen.is_some())
    }

    /// The policy's key steps due now; a re-sign and the keys stamped
    /// after any change.
    async fn key_steps(
        &self,
        h: &mut Held,
        follower: &mut Follower<'_>,
        config: &DnssecConfig,
        policy: &Policy,
    ) -> Result<(), SignError> {
        let keys = self.store.zone_keys(&self.zone).await?;
        let plan = schedule(policy, &keys, now());
        let mut changed = u64::from(plan.unstamped);
        changed += apply_steps(
            &self.store,
            &self.zone,
            config,
            policy,
            &keys,
            plan.steps,
            &mut h.checks,
        )
        .await?;
        if changed > 0 {
            let t = Instant::now();
            let after = self.store.zone_keys(&self.zone).await?;
            let r = match signs_data_anew(&self.zone, &keys, &after) {
                true => None,
                false => follower.apex_keys().await?,
            };
            let r = match r {
                Some(r) => r,
                None => follower.full().await?.0,
            };
            self.count(&r, false);
            stamp(&self.store, &self.zone).await?;
            tracing::info!(zone = %self.zone, nodes_read = r.nodes, signatures = r.stats.signed,
                written = r.written, secs = t.elapsed().as_secs_f64(), "keys re-signed");
            h.seen = r.published_gen.or(h.seen);
            let keys = self.store.zone_keys(&self.zone).await?;
            let after = schedule(policy, &keys, now());
            self.status.update(&self.zone, |s| {
                s.key_steps += changed;
                s.next = after.next;
                s.waiting = after.waiting;
            });
        } else {
            self.status.update(&self.zone, |s| {
                s.next = plan.next;
                s.waiting = plan.waiting;
            });
        }
        Ok(())
    }

    /// Warns (once) when the policy refreshes signatures so close to their
    /// expiry that a takeover after this process died could come too late:
    /// what falls due meanwhile waits up to one lease period.
    fn check_margin(&self, policy: Option<&Policy>) {
        let Some(p) = policy else { return };
        let takeover = self.lease.as_secs() + self.interval.as_secs() + 1;
        if p.rrsig_refresh < 2 * takeover && !self.margin_warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(zone = %self.zone, policy = %p.name, rrsig_refresh = p.rrsig_refresh,
                lease = self.lease.as_secs(),
                "the policy's --rrsig-refresh is under twice the takeover time (serve --lease): \
                 signatures may expire while another process takes over from one that died");
        }
    }

    async fn current(&self) -> Result<ZoneInfo, SignError> {
        self.store
            .find_zone(&self.zone)
            .await?
            .ok_or_else(|| backend_mongo::StoreError::NoSuchZone(self.zone.to_string()).into())
    }

    fn count(&self, r: &Report, refresh: bool) {
        self.status.update(&self.zone, |s| {
            s.signatures += r.stats.signed;
            s.nodes_read += r.nodes;
            if refresh {
                s.refreshed += r.stats.signed;
                s.refresh_reads += r.nodes;
            }
        });
    }
}
