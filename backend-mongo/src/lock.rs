//! Per-zone locks and leases: the one mutual exclusion every writer shares.
//!
//! ```text
//!  acquire(kind, zone) ─► insert {_id: "<kind> <zone>", owner, until}
//!     ├─ inserted ─────────────────────────────► Held (ours)
//!     └─ duplicate key ─► read the holder
//!          ├─ live (until > now) ─► wait and retry, or Conflict after `wait`
//!          └─ expired (a killed holder) ─► insert "takeover <id> <owner> <until>"
//!               ├─ inserted (we won) ─► prune markers over an hour old
//!               │    ─► delete the stale lock ─► insert ours
//!               └─ duplicate (someone else won) ─► wait and retry
//!  Held::renew()   ─► until = now + ttl (fails if the lock is no longer ours)
//!  Held::release() ─► delete it if it is still ours
//! ```
//!
//! The only atomic primitive used is the unique `_id` index: an insert of
//! an `_id` that exists fails on every MongoDB-protocol server. Updates with
//! conditions are not enough on FerretDB, whose SQLite backend applies an
//! update as read-modify-write without isolation, so two conditional
//! updates can both "succeed". Two kinds are used (`docs/schema.md`,
//! "Concurrency"):
//! * [`ZONE_LOCK`]: held for milliseconds around every write of a zone's
//!   document (publish, switch, checkpoint, settings), so that those
//!   writes are serialized and each one sees the document as it is;
//! * [`SIGN_LEASE`]: held by the one signing writer of a zone for as long
//!   as it signs, renewed in the background.

use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Collection;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Collection holding locks, leases and takeover markers.
pub const LOCKS: &str = "locks";

/// A kind of lock: its `_id` prefix and how long it lives unrenewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockKind {
    /// Prefix of the lock document's `_id`.
    pub name: &'static str,
    /// Time after which an unrenewed lock counts as abandoned.
    pub ttl: Duration,
}

/// The short lock around every write of a zone document.
pub const ZONE_LOCK: LockKind = LockKind {
    name: "zone",
    ttl: Duration::from_secs(30),
};

/// The signing lease: one signing writer per zone.
pub const SIGN_LEASE: LockKind = LockKind {
    name: "sign",
    ttl: Duration::from_secs(30),
};

/// The signing service's lease: which `mongodns-sign serve` process looks
/// after a zone (it takes [`SIGN_LEASE`] only while it signs).
pub const SERVICE_LEASE: LockKind = LockKind {
    name: "sign-service",
    ttl: Duration::from_secs(30),
};

/// A lock this process holds.
pub struct Held {
    locks: Collection<Document>,
    id: String,
    owner: String,
    ttl: Duration,
    lost: Arc<AtomicBool>,
    released: bool,
}

impl Drop for Held {
    /// A lock dropped without [`Held::release`] (an error path, a panic, a
    /// cancelled task) is released in the background, best effort; a killed
    /// process's lock expires instead.
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (locks, id, owner) = (self.locks.clone(), self.id.clone(), self.owner.clone());
            rt.spawn(async move {
                let _ = release_if_ours(&locks, &id, &owner).await;
            });
        }
    }
}

/// Deletes lock `id` if `owner` still holds it.
async fn release_if_ours(
    locks: &Collection<Document>,
    id: &str,
    owner: &str,
) -> Result<(), StoreError> {
    let current = locks.find_one(doc! {"_id": id}).await?;
    if current.as_ref().and_then(|d| d.get_str("owner").ok()) == Some(owner) {
        locks.delete_one(doc! {"_id": id}).await?;
    }
    Ok(())
}

/// Who holds a lock that we could not take.
#[derive(Clone, Debug)]
pub struct Holder {
    /// The holder's identity (`host:pid:tag`).
    pub owner: String,
    /// When the lock expires unless renewed.
    pub until: DateTime,
}

/// A fresh owner identity: host, process, what for, and a unique tag.
fn new_owner(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{host}:{}:{what}:{nanos:x}.{n}", std::process::id())
}

fn lock_id(kind: LockKind, zone: &Name) -> String {
    format!("{} {}", kind.name, zone)
}

/// How long a waiter's `want` marker lives unrefreshed.
pub const WANT_TTL: Duration = Duration::from_secs(3);

/// How often a waiter refreshes its `want` marker.
const WANT_REFRESH: Duration = Duration::from_secs(1);

fn want_id(kind: LockKind, zone: &Name) -> String {
    format!("want {}", lock_id(kind, zone))
}

fn want_behind_id(kind: LockKind, zone: &Name) -> String {
    format!("want-behind {}", lock_id(kind, zone))
}

/// How a waiter for a lock waits ([`Store::lock_waiting`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// Saying nothing ([`Store::lock`]).
    Quietly,
    /// Saying so, first in line (a signer).
    First,
    /// Saying so, behind those first in line (an importer's own signing).
    Behind,
}

fn until_from_now(ttl: Duration) -> DateTime {
    DateTime::from_millis(DateTime::now().timestamp_millis() + ttl.as_millis() as i64)
}

/// True for a duplicate-key error (an `_id` that exists).
pub(crate) fn is_duplicate(e: &mongodb::error::Error) -> bool {
    matches!(
        e.kind.as_ref(),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) if w.code == 11000
    ) || e.to_string().contains("E11000")
}

impl Store {
    fn locks(&self) -> Collection<Document> {
        self.db.collection(LOCKS)
    }

    /// Tries once to take `kind` for `zone`: the lock, or who holds it.
    pub async fn try_lock(
        &self,
        kind: LockKind,
        zone: &Name,
        what: &str,
    ) -> Result<Result<Held, Holder>, StoreError> {
        let locks = self.locks();
        let id = lock_id(kind, zone);
        let owner = new_owner(what);
        let mine = doc! {"_id": &id, "zone": zone.to_string(), "owner": &owner,
        "until": until_from_now(kind.ttl), "taken": DateTime::now()};
        match locks.insert_one(mine.clone()).await {
            Ok(_) => return Ok(Ok(self.held(id, owner, kind))),
            Err(e) if is_duplicate(&e) => {}
            Err(e) => return Err(e.into()),
        }
        let Some(current) = locks.find_one(doc! {"_id": &id}).await? else {
            // Released in between: try again at once, next call.
            return Ok(Err(Holder {
                owner: "(just released)".into(),
                until: DateTime::now(),
            }));
        };
        let holder = Holder {
            owner: current.get_str("owner").unwrap_or("?").to_string(),
            until: current
                .get_datetime("until")
                .copied()
                .unwrap_or(DateTime::MIN),
        };
        if holder.until > DateTime::now() {
            return Ok(Err(holder));
        }
        // Abandoned: exactly one taker wins the takeover marker of this
        // stale holding, and only the winner deletes it.
        let marker = format!(
            "takeover {id} {} {}",
            holder.owner,
            holder.until.timestamp_millis()
        );
        match locks
            .insert_one(doc! {"_id": &marker, "zone": zone.to_string(), "at": DateTime::now()})
            .await
        {
            Ok(_) => {}
            Err(e) if is_duplicate(&e) => return Ok(Err(holder)),
            Err(e) => return Err(e.into()),
        }
        tracing::warn!(lock = %id, holder = %holder.owner, "taking over an abandoned lock");
        // Each takeover leaves a marker: its winner prunes the old ones, so
        // they number at most the takeovers of the last hour.
        if let Err(e) = self.prune_lock_markers().await {
            tracing::warn!(error = %e, "old takeover markers not pruned");
        }
        locks.delete_one(doc! {"_id": &id}).await?;
        match locks.insert_one(mine).await {
            Ok(_) => Ok(Ok(self.held(id, owner, kind))),
            Err(e) if is_duplicate(&e) => Ok(Err(holder)),
            Err(e) => Err(e.into()),
        }
    }

    fn held(&self, id: String, owner: String, kind: LockKind) -> Held {
        Held {
            locks: self.locks(),
            id,
            owner,
            ttl: kind.ttl,
            lost: Arc::new(AtomicBool::new(false)),
            released: false,
        }
    }

    /// Takes `kind` for `zone`, waiting up to `wait` while another holds
    /// it. Fails with [`StoreError::Conflict`] naming the holder.
    pub async fn lock(
        &self,
        kind: LockKind,
        zone: &Name,
        what: &str,
        wait: Duration,
    ) -> Result<Held, StoreError> {
        self.lock_waiting(kind, zone, what, wait, Waiting::Quietly)
            .await
    }

    /// Takes `kind` for `zone` like [`Store::lock`], waiting as `waiting`
    /// says: [`Waiting::First`] says so while it waits ([`Store::is_wanted`]):
    /// writers that could do without the lock (an importer, which can hand
    /// its names to the holder) then leave it to this one, so a stream of
    /// them cannot starve it; [`Waiting::Behind`] also says so, but does not
    /// try while a [`Waiting::First`] waiter waits: for writers whose work
    /// the others also do (an importer signing what it wrote unsigned: a
    /// signer that takes the lease after it signs those names too). A
    /// waiter's marker is refreshed every second and lives [`WANT_TTL`]
    /// unrefreshed: a waiter that dies stops holding the others back within
    /// seconds.
    pub async fn lock_waiting(
        &self,
        kind: LockKind,
        zone: &Name,
        what: &str,
        wait: Duration,
        waiting: Waiting,
    ) -> Result<Held, StoreError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut said: Option<tokio::time::Instant> = None;
        let mut pause = Duration::from_millis(2);
        let r = loop {
            let defer = waiting == Waiting::Behind && self.wanted_by(&want_id(kind, zone)).await?;
            let tried = if defer {
                Err(self.holder_of(kind, zone).await?)
            } else {
                self.try_lock(kind, zone, what).await?
            };
            match tried {
                Ok(held) => break Ok(held),
                Err(holder) if tokio::time::Instant::now() >= deadline => {
                    break Err(StoreError::Conflict(format!(
                        "zone {zone}: the {} lock is held by {} until {}",
                        kind.name,
                        holder.owner,
                        holder.until.try_to_rfc3339_string().unwrap_or_default()
                    )))
                }
                Err(_) => {}
            }
            let marker = match waiting {
                Waiting::Quietly => None,
                Waiting::First => Some(want_id(kind, zone)),
                Waiting::Behind => Some(want_behind_id(kind, zone)),
            };
            if let Some(marker) = marker {
                if said.is_none_or(|t| t.elapsed() >= WANT_REFRESH) {
                    self.say_wanted(&marker, zone).await?;
                    said = Some(tokio::time::Instant::now());
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        };
        if said.is_some() {
            let marker = match waiting {
                Waiting::Behind => want_behind_id(kind, zone),
                _ => want_id(kind, zone),
            };
            self.locks().delete_one(doc! {"_id": marker}).await?;
        }
        r
    }

    /// The holder of `kind` for `zone` as a [`Holder`] (one that has just
    /// released it reads as expiring now).
    async fn holder_of(&self, kind: LockKind, zone: &Name) -> Result<Holder, StoreError> {
        Ok(match self.lock_holder(kind, zone).await? {
            Some((holder, _)) => holder,
            None => Holder {
                owner: "(nobody)".into(),
                until: DateTime::now(),
            },
        })
    }

    /// Leaves (or refreshes) the `want` marker `want` for `zone`. Two
    /// waiters refreshing it at once can race in the upsert (both insert:
    /// one gets a duplicate key): the marker is there either way, and the
    /// loser refreshes it once more.
    async fn say_wanted(&self, want: &str, zone: &Name) -> Result<(), StoreError> {
        for _ in 0..2 {
            let until = until_from_now(WANT_TTL);
            let marker =
                doc! {"_id": want, "zone": zone.to_string(), "until": until, "at": DateTime::now()};
            match self
                .locks()
                .replace_one(doc! {"_id": want}, marker)
                .upsert(true)
                .await
            {
                Err(e) if is_duplicate(&e) => continue,
                r => return r.map(|_| ()).map_err(StoreError::from),
            }
        }
        Ok(())
    }

    /// True while the `want` marker `want` is live.
    async fn wanted_by(&self, want: &str) -> Result<bool, StoreError> {
        let d = self.locks().find_one(doc! {"_id": want}).await?;
        Ok(d.and_then(|d| d.get_datetime("until").ok().copied())
            .is_some_and(|u| u > DateTime::now()))
    }

    /// True while a writer waits for `kind` of `zone` in
    /// [`Store::lock_waiting`].
    pub async fn is_wanted(&self, kind: LockKind, zone: &Name) -> Result<bool, StoreError> {
        Ok(self.wanted_by(&want_id(kind, zone)).await?
            || self.wanted_by(&want_behind_id(kind, zone)).await?)
    }

    /// Who holds `kind` of `zone` now, and since when (`None`: nobody).
    pub async fn lock_holder(
        &self,
        kind: LockKind,
        zone: &Name,
    ) -> Result<Option<(Holder, DateTime)>, StoreError> {
        let d = self
            .locks()
            .find_one(doc! {"_id": lock_id(kind, zone)})
            .await?;
        Ok(d.map(|d| {
            let holder = Holder {
                owner: d.get_str("owner").unwrap_or("?").to_string(),
                until: d.get_datetime("until").copied().unwrap_or(DateTime::MIN),
            };
            let taken = d.get_datetime("taken").copied().unwrap_or(DateTime::MIN);
            (holder, taken)
        }))
    }

    /// Deletes takeover markers (and dead waiters' `want` markers) older
    /// than an hour: they only need to outlive the race they settle. Run by
    /// the winner of every takeover, the only writer of a takeover marker.
    pub async fn prune_lock_markers(&self) -> Result<u64, StoreError> {
        let before = DateTime::from_millis(DateTime::now().timestamp_millis() - 3_600_000);
        let old: Vec<Document> = futures::TryStreamExt::try_collect(
            self.locks()
                .find(doc! {"at": {"$lt": before}})
                .projection(doc! {"_id": 1})
                .limit(1000)
                .await?,
        )
        .await?;
        let mut n = 0;
        for d in old {
            if let Some(id) = d.get("_id") {
                n += self
                    .locks()
                    .delete_one(doc! {"_id": id.clone()})
                    .await?
                    .deleted_count;
            }
        }
        Ok(n)
    }
}

impl Held {
    /// The owner identity written into the lock.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// True once a renewal found that the lock is no longer ours.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Moves the expiry `ttl` into the future; fails if the lock was taken
    /// over (we were presumed dead).
    pub async fn renew(&self) -> Result<(), StoreError> {
        let current = self.locks.find_one(doc! {"_id": &self.id}).await?;
        if current.as_ref().and_then(|d| d.get_str("owner").ok()) != Some(self.owner.as_str()) {
            self.lost.store(true, Ordering::Relaxed);
            return Err(StoreError::Conflict(format!(
                "lock {} was taken over by another writer",
                self.id
            )));
        }
        self.locks
            .update_one(
                doc! {"_id": &self.id},
                doc! {"$set": {"until": until_from_now(self.ttl)}},
            )
            .await?;
        Ok(())
    }

    /// Renews the lock every third of its lifetime until the returned
    /// guard is dropped; a failed renewal marks it lost ([`Held::is_lost`]).
    pub fn keep_renewed(&self) -> RenewGuard {
        let (locks, id, owner, ttl, lost) = (
            self.locks.clone(),
            self.id.clone(),
            self.owner.clone(),
            self.ttl,
            self.lost.clone(),
        );
        let task = tokio::spawn(async move {
            let again = Held {
                locks,
                id,
                owner,
                ttl,
                lost,
                // Only renews: never releases (the holder does).
                released: true,
            };
            loop {
                tokio::time::sleep(ttl / 3).await;
                if let Err(e) = again.renew().await {
                    if again.is_lost() {
                        tracing::error!(error = %e, "lease lost");
                        return;
                    }
                    tracing::warn!(error = %e, "lease renewal failed; retrying");
                }
            }
        });
        RenewGuard(task)
    }

    /// Gives the lock up, then returns `result` (or the release's error
    /// if `result` was fine): for `lock; work; unlock` in one expression.
    pub async fn release_with<T>(self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        let released = self.release().await;
        let value = result?;
        released?;
        Ok(value)
    }

    /// Gives the lock up (if it is still ours).
    pub async fn release(mut self) -> Result<(), StoreError> {
        self.released = true;
        release_if_ours(&self.locks, &self.id, &self.owner).await
    }
}

/// Stops the background renewal of a lease when dropped.
pub struct RenewGuard(tokio::task::JoinHandle<()>);

impl Drop for RenewGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
