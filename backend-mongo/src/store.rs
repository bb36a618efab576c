//! The connection to MongoDB and every read the server makes.
//!
//! ```text
//!  Store::connect(uri, db) ──ping, buildInfo (≥ 4.4)──► Store
//!  build_info()      ── the same buildInfo ──► BuildInfo (reports)
//!  Store::ensure_indexes()          idempotent, run by the server at start
//!  find_zone(apex)   ── zones._id point lookup ──► Option<ZoneInfo>
//!  served_zones_among(apexes) ── one zones find, _id $in ──► Vec<ZoneInfo>
//!                       (FerretDB, ≤ 8 apexes: a find_zone each, together)
//!  get_node(zone, n) ── nodes._id point lookup ──► Option<Node>
//!                       (all three with maxTimeMS when ReadFrom::max_time is set)
//!  served_zones, list_zones ── zones scans (maxTimeMS: listing_deadline)
//!  zone_nodes(zone)  ── {zone, ver} scan, canonical order ──► Vec<Node> (AXFR)
//!  change_seq()      ── meta._id "seq" ──► i64       (freshness polling)
//! ```

use crate::schema::{
    self, change_id, ChangeRecord, Node, SchemaError, ZoneInfo, CHANGES, META, NODES, SEQ_ID, ZONES,
};
use crate::Name;
use futures::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Document};
use mongodb::options::{
    ClientOptions, IndexOptions, ReadPreference, ReadPreferenceOptions, SelectionCriteria,
};
use mongodb::{Client, Collection, Database, IndexModel};
use std::time::Duration;

/// The shortest server-side deadline of a listing of zones (the registry's
/// preload, the API's zone list) on a handle with a read deadline: a
/// listing reads many documents, where a point read reads one.
pub const LISTING_MIN_TIME: Duration = Duration::from_secs(30);

/// Most candidate apexes [`Store::served_zones_among`] reads one by one
/// on FerretDB (more are one `$in`): a name four labels below a zone's
/// apex and the labels above it, in parallel index lookups.
pub const POINT_READS_MAX: usize = 8;

/// Oldest MongoDB server version mongodns supports.
pub const MIN_SERVER_VERSION: (u32, u32) = (4, 4);

/// A storage fault. DNS outcomes (a missing name) are never errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URI could not be parsed.
    #[error("invalid MongoDB URI: {0}")]
    BadUri(String),
    /// The database did not answer.
    #[error("MongoDB at {uri} is unreachable: {reason}")]
    Unreachable {
        /// The URI with any password removed.
        uri: String,
        /// The driver's explanation.
        reason: String,
    },
    /// The server is older than [`MIN_SERVER_VERSION`].
    #[error("MongoDB server version {0} is too old: mongodns needs 4.4 or newer")]
    TooOld(String),
    /// Any other driver or server error.
    #[error("MongoDB error: {0}")]
    Database(#[from] mongodb::error::Error),
    /// A stored document does not follow the schema.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// An operation took longer than allowed.
    #[error("MongoDB did not answer in time: {0}")]
    Timeout(String),
    /// A zone that must exist does not.
    #[error("zone {0} does not exist")]
    NoSuchZone(String),
    /// Too many reads are already waiting for the database: this one was
    /// refused at once instead of queueing behind them (load shedding).
    #[error("database busy: {0}")]
    Busy(String),
    /// Another writer got there first (a lock is held, a version was
    /// switched): nothing was changed by this call.
    #[error("{0}")]
    Conflict(String),
    /// A change refused as a whole before anything was written: an RRset
    /// it makes too large for any DNS message.
    #[error("{0}; nothing was changed")]
    TooLarge(String),
    /// The failure of a read that several callers waited for together.
    #[error(transparent)]
    Shared(std::sync::Arc<StoreError>),
}

impl StoreError {
    /// True for load shedding ([`StoreError::Busy`]), shared or not: the
    /// database is fine, we chose not to wait for it.
    pub fn is_busy(&self) -> bool {
        match self {
            StoreError::Busy(_) => true,
            StoreError::Shared(inner) => inner.is_busy(),
            _ => false,
        }
    }

    /// True when stored data is not well-formed ([`StoreError::Schema`]),
    /// shared or not: the database answered, the data is at fault.
    pub fn is_malformed(&self) -> bool {
        match self {
            StoreError::Schema(_) => true,
            StoreError::Shared(inner) => inner.is_malformed(),
            _ => false,
        }
    }
}

/// Handle to the mongodns database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub(crate) db: Database,
    pub(crate) zones: Collection<Document>,
    pub(crate) nodes: Collection<Document>,
    pub(crate) meta: Collection<Document>,
    pub(crate) changes: Collection<Document>,
    /// Server-side deadline of the point reads (`maxTimeMS`), see
    /// [`ReadFrom::max_time`].
    pub(crate) read_deadline: Option<Duration>,
    /// The server is FerretDB (its `buildInfo` says so), whose `_id` index
    /// serves only exact equality: an `_id` `$in` is a scan there.
    pub(crate) ferretdb: bool,
}

fn redact(uri: &str) -> String {
    // mongodb://user:pass@host → mongodb://user:***@host
    match (uri.find("://"), uri.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &uri[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &uri[..s + 3], &creds[..c], &uri[at..]),
                None => uri.to_string(),
            }
        }
        _ => uri.to_string(),
    }
}

/// Which replica-set members serve reads.
#[derive(Clone, Debug, Default)]
pub struct ReadFrom {
    /// `primary`, `primaryPreferred`, `secondary`, `secondaryPreferred` or
    /// `nearest` (case-insensitive); `None` keeps the URI's choice.
    pub preference: Option<String>,
    /// Skip secondaries lagging more than this (at least 90 s).
    pub max_staleness: Option<Duration>,
    /// How often the driver checks each server, unless the URI sets
    /// `heartbeatFrequencyMS`; `None`: the driver's default (10 s).
    pub heartbeat: Option<Duration>,
    /// How long one check (and a new connection's connect) may take before
    /// the server is declared down, unless the URI sets `connectTimeoutMS`;
    /// `None`: [`WRITER_CHECK_TIMEOUT`] (or the timeout given to
    /// [`Store::connect_with`], if longer).
    pub check_timeout: Option<Duration>,
    /// Server-side deadline (`maxTimeMS`) of each zone and node read: a
    /// database too slow to answer in time gives up the read, so its slot
    /// is not held for ever. `None`: no deadline (the writers).
    pub max_time: Option<Duration>,
}

/// The check timeout of a handle that does not choose one (the importer,
/// the signer): a check that times out interrupts every operation in
/// progress, and a run of the signer failed so, with "interrupted due to
/// server monitor timeout", when a busy FerretDB took more than its 3-s
/// timeout to answer a check (docs/reliability.md, "Soak"). A writer would
/// rather wait for a slow database than lose its work.
pub const WRITER_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

fn read_preference(
    mode: &str,
    max_staleness: Option<Duration>,
) -> Result<ReadPreference, StoreError> {
    let options = max_staleness.map(|d| ReadPreferenceOptions::builder().max_staleness(d).build());
    let pref = match mode.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
        "primary" if options.is_none() => ReadPreference::Primary,
        "primary" => {
            return Err(StoreError::BadUri(
                "max staleness cannot be used with read preference primary".into(),
            ))
        }
        "primarypreferred" => ReadPreference::PrimaryPreferred { options },
        "secondary" => ReadPreference::Secondary { options },
        "secondarypreferred" => ReadPreference::SecondaryPreferred { options },
        "nearest" => ReadPreference::Nearest { options },
        other => {
            return Err(StoreError::BadUri(format!(
                "unknown read preference {other:?}"
            )))
        }
    };
    Ok(pref)
}

impl Store {
    /// Connects, checks that the server answers and is new enough.
    ///
    /// `timeout` bounds server selection and connection setup, so a missing
    /// database is reported quickly instead of hanging.
    pub async fn connect(
        uri: &str,
        database: &str,
        timeout: Duration,
    ) -> Result<Store, StoreError> {
        Self::connect_with(uri, database, timeout, &ReadFrom::default()).await
    }

    /// [`Store::connect`] with a read preference for every read this handle
    /// makes (lookups and change polling alike, so both see the same member's
    /// data). An unset preference keeps the URI's `readPreference` (or primary).
    pub async fn connect_with(
        uri: &str,
        database: &str,
        timeout: Duration,
        read: &ReadFrom,
    ) -> Result<Store, StoreError> {
        let mut options = ClientOptions::parse(uri)
            .await
            .map_err(|e| StoreError::BadUri(e.to_string()))?;
        if let Some(mode) = &read.preference {
            let pref = read_preference(mode, read.max_staleness)?;
            options.selection_criteria = Some(SelectionCriteria::ReadPreference(pref));
        }
        // The start-up checks go where reads will go: a server reading from
        // secondaries starts while the primary is down.
        let criteria = options
            .selection_criteria
            .clone()
            .unwrap_or(SelectionCriteria::ReadPreference(ReadPreference::Primary));
        options.server_selection_timeout = Some(timeout);
        if options.connect_timeout.is_none() {
            options.connect_timeout = Some(
                read.check_timeout
                    .unwrap_or(timeout.max(WRITER_CHECK_TIMEOUT)),
            );
        }
        // The server checks every 500 ms (`ReadFrom::heartbeat`; the
        // driver's default is 10 s): a frozen database (SIGSTOP, a long GC or
        // VM pause) is then marked unknown within about the check timeout
        // (the driver's connect timeout bounds each check), which clears the
        // pool and its queue of requests abandoned by timed-out queries, and
        // found again within 500 ms of coming back. With 10 s checks, a pause
        // of a few seconds left every read hanging for tens of seconds after
        // the database resumed (docs/reliability.md, "Recovery after a
        // pause"). A check that times out interrupts every operation in
        // progress, so the check timeout must stay above what a busy but
        // healthy database takes to answer `hello` (docs/reliability.md,
        // "Recovery under load"). Writers keep the default frequency.
        if options.heartbeat_freq.is_none() {
            options.heartbeat_freq = read.heartbeat;
        }
        options.app_name = Some("mongodns".into());
        if options.max_pool_size.is_none() {
            options.max_pool_size = Some(64);
        }
        let client =
            Client::with_options(options).map_err(|e| StoreError::BadUri(e.to_string()))?;
        let db = client.database(database);
        let unreachable = |e: mongodb::error::Error| StoreError::Unreachable {
            uri: redact(uri),
            reason: e.to_string(),
        };
        let checked = async {
            db.run_command(doc! {"ping": 1})
                .selection_criteria(criteria.clone())
                .await
                .map_err(unreachable)?;
            let info = build_info(&client, Some(criteria))
                .await
                .map_err(unreachable)?;
            let version = info.version.unwrap_or_else(|| "0.0".into());
            if !version_at_least(&version, MIN_SERVER_VERSION) {
                return Err(StoreError::TooOld(version));
            }
            Ok(info.ferretdb.is_some())
        }
        .await;
        let ferretdb = match checked {
            Ok(ferretdb) => ferretdb,
            Err(e) => {
                // The caller usually exits next: stop the client's tasks now.
                client.shutdown().immediate(true).await;
                return Err(e);
            }
        };
        Ok(Store {
            zones: db.collection(ZONES),
            nodes: db.collection(NODES),
            meta: db.collection(META),
            changes: db.collection(CHANGES),
            db,
            read_deadline: read.max_time,
            ferretdb,
        })
    }

    /// Ends the client's server sessions and stops its background tasks
    /// (monitors, connection pool). Command-line tools call it last, before
    /// the runtime ends: a client that is merely dropped at exit schedules
    /// that work on a runtime already shutting down, where the driver
    /// panics (mongodb 3.9, `connection_requester.rs`: `SendError`), which
    /// printed a backtrace after successful runs. Every clone of this
    /// `Store` fails afterwards.
    pub async fn shutdown(&self) {
        self.db.client().clone().shutdown().immediate(true).await;
    }

    /// What the database server says it is (`buildInfo`), for reports.
    pub async fn build_info(&self) -> Result<BuildInfo, mongodb::error::Error> {
        build_info(self.db.client(), None).await
    }

    /// The database handle, for tools that need a raw command.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Creates every index mongodns relies on. Safe to run at every start.
    ///
    /// * `nodes {zone, ver, ck}`: one zone version in canonical order
    ///   (AXFR, NSEC chains, deleting an old version);
    /// * `zones {gen}`: zones changed since a generation (freshness polling).
    ///
    /// Hot-path lookups use `_id`, which every collection indexes already.
    pub async fn ensure_indexes(&self) -> Result<(), StoreError> {
        // The first write to a new database creates it; FerretDB has been
        // seen to fail that transiently (SQLite "unable to open database
        // file") while many databases are created at once. Retry briefly.
        let mut attempt = 0;
        loop {
            match self.ensure_indexes_once().await {
                Err(e) if attempt < 3 => {
                    attempt += 1;
                    tracing::warn!(error = %e, attempt, "creating indexes failed; retrying");
                    tokio::time::sleep(Duration::from_millis(300 * attempt)).await;
                }
                other => return other,
            }
        }
    }

    async fn ensure_indexes_once(&self) -> Result<(), StoreError> {
        let by_zone = IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "ck": 1})
            .options(
                IndexOptions::builder()
                    .name("zone_ver_ck".to_string())
                    .build(),
            )
            .build();
        self.nodes.create_index(by_zone).await?;
        let by_gen = IndexModel::builder()
            .keys(doc! {"gen": 1})
            .options(IndexOptions::builder().name("gen".to_string()).build())
            .build();
        self.zones.create_index(by_gen).await?;
        self.ensure_journal_index().await?;
        self.ensure_dnssec_indexes().await?;
        Ok(())
    }

    /// The zone whose apex is exactly `apex`, if it is being served.
    ///
    /// A zone document without `ver` is being created and is not served yet.
    pub async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        let find = self.zones.find_one(doc! {"_id": apex.to_string()});
        let found = match self.read_deadline {
            Some(d) => find.max_time(d).await?,
            None => find.await?,
        };
        match found {
            Some(d) if d.contains_key("ver") => Ok(Some(schema::zone_from_doc(&d)?)),
            _ => Ok(None),
        }
    }

    /// The served zones among `apexes`: the zone lookup of a name asks
    /// for every candidate apex together. One round trip, however deep
    /// the name, except for a few candidates on FerretDB:
    ///
    /// ```text
    ///  MongoDB, or more than POINT_READS_MAX candidates
    ///      ─► one find {_id: {$in: apexes}, ver: {$exists: true}}
    ///  FerretDB, at most POINT_READS_MAX ─► one find_zone each, together
    /// ```
    ///
    /// The `find` carries the point reads' deadline (`maxTimeMS`), a limit
    /// of one document per candidate, all in the first batch (a name has
    /// at most 128 candidates), and only the fields a [`ZoneInfo`] needs;
    /// a document without `ver` (a zone being created, or deleted) is not
    /// served. MongoDB answers it from the `_id` index. FerretDB uses that
    /// index only for an exact `_id`, so there the `$in` is a scan of
    /// `zones`, dearer than a few point reads and, from some hundreds of
    /// zones, than one per label of a deep name (docs/reliability.md,
    /// `bench/zone-lookups`): ordinary names keep their point reads there.
    pub async fn served_zones_among(&self, apexes: &[Name]) -> Result<Vec<ZoneInfo>, StoreError> {
        if self.ferretdb && apexes.len() <= POINT_READS_MAX {
            let reads = apexes.iter().map(|a| self.find_zone(a));
            let found = futures::future::try_join_all(reads).await?;
            return Ok(found.into_iter().flatten().collect());
        }
        self.served_zones_in(apexes).await
    }

    /// The served zones among `apexes`, by one `find` of them all (see
    /// [`Store::served_zones_among`]).
    pub async fn served_zones_in(&self, apexes: &[Name]) -> Result<Vec<ZoneInfo>, StoreError> {
        if apexes.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = apexes.iter().map(Name::to_string).collect();
        let most = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        let find = self
            .zones
            .find(doc! {"_id": {"$in": ids}, "ver": {"$exists": true}})
            .projection(doc! {"_id": 1, "ver": 1, "gen": 1, "serial": 1})
            .limit(i64::from(most))
            .batch_size(most);
        zones_found(find, self.read_deadline).await
    }

    /// The node `name` in the served version of `zone`.
    pub async fn get_node(&self, zone: &ZoneInfo, name: &Name) -> Result<Option<Node>, StoreError> {
        let id = schema::node_id(&zone.apex, zone.ver, name);
        let find = self.nodes.find_one(doc! {"_id": id});
        let found = match self.read_deadline {
            Some(d) => find.max_time(d).await?,
            None => find.await?,
        };
        Ok(match found {
            Some(d) => Some(schema::node_from_doc(&d)?),
            None => None,
        })
    }

    /// Every node of the served version of `zone`, in canonical order.
    ///
    /// One query reads one version, so the result is a consistent snapshot
    /// even while an importer builds the next version.
    pub async fn zone_nodes(&self, zone: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.apex.to_string(), "ver": zone.ver})
            .sort(doc! {"ck": 1})
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(schema::node_from_doc(&d)?);
        }
        Ok(out)
    }

    /// Deletes every node of one version of a zone; returns how many.
    pub async fn delete_version(&self, zone: &Name, ver: i64) -> Result<u64, StoreError> {
        self.delete_version_with(zone, ver, &|_| {}).await
    }

    /// [`Store::delete_version`], telling `progress` the running count.
    ///
    /// Bounded passes: read up to 50,000 `_id`s (the cursor drained and
    /// closed), delete them with `_id` point deletes, 1,000 per command and
    /// one command at a time; repeat until a pass finds fewer. Why not
    /// `deleteMany({zone, ver})`: FerretDB turns it into one SQL statement
    /// with a variable per document, which fails beyond SQLite's limit
    /// (about 32,000); point deletes use the `_id` index on every server.
    /// Why not delete while the cursor is open: on FerretDB that halves the
    /// rate (measured, `docs/benchmarks.md`). Safe to re-run at any point.
    pub async fn delete_version_with(
        &self,
        zone: &Name,
        ver: i64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<u64, StoreError> {
        const PASS: i64 = 50_000;
        const BATCH: usize = 1000;
        let mut deleted = 0u64;
        loop {
            let ids: Vec<Document> = self
                .nodes
                .find(doc! {"zone": zone.to_string(), "ver": ver})
                .projection(doc! {"_id": 1})
                .limit(PASS)
                .batch_size(PASS as u32)
                .await?
                .try_collect()
                .await?;
            for chunk in ids.chunks(BATCH) {
                let deletes: Vec<Document> = chunk
                    .iter()
                    .filter_map(|d| d.get("_id"))
                    .map(|id| doc! {"q": {"_id": id.clone()}, "limit": 1})
                    .collect();
                let reply = self
                    .db
                    .run_command(doc! {"delete": NODES, "deletes": deletes, "ordered": false})
                    .await?;
                deleted += reply
                    .get("n")
                    .and_then(|n| n.as_i32().map(i64::from).or(n.as_i64()))
                    .unwrap_or(0) as u64;
                progress(deleted);
            }
            if (ids.len() as i64) < PASS {
                return Ok(deleted);
            }
        }
    }

    /// The global change counter: every writer increases it.
    pub async fn change_seq(&self) -> Result<i64, StoreError> {
        let found = self.meta.find_one(doc! {"_id": SEQ_ID}).await?;
        Ok(found
            .and_then(|d| {
                d.get("seq")
                    .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
            })
            .unwrap_or(0))
    }

    /// The change records of generations `from..=to` that exist, by
    /// generation (one `_id` read each: the only lookup FerretDB indexes).
    pub async fn change_records(
        &self,
        from: i64,
        to: i64,
    ) -> Result<std::collections::HashMap<i64, ChangeRecord>, StoreError> {
        let reads = (from..=to).map(|gen| async move {
            let found = self.changes.find_one(doc! {"_id": change_id(gen)}).await?;
            Ok::<_, StoreError>(found.and_then(|d| Some((gen, schema::change_from_doc(&d)?))))
        });
        let found = futures::future::try_join_all(reads).await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// The zone of every change record of generations `from..=to`, by one
    /// scan of the records (their `_id` and `zone` only): for a stretch too
    /// long to read record by record (a signer's catch-up after a long
    /// read, while other zones moved).
    pub async fn change_zones(
        &self,
        from: i64,
        to: i64,
    ) -> Result<std::collections::HashMap<i64, Name>, StoreError> {
        let mut cursor = self
            .changes
            .find(doc! {})
            .projection(doc! {"_id": 1, "zone": 1})
            .await?;
        let mut out = std::collections::HashMap::new();
        while let Some(d) = cursor.try_next().await? {
            let gen = d.get_str("_id").ok().and_then(schema::change_gen);
            let zone = d.get_str("zone").ok().and_then(|z| z.parse::<Name>().ok());
            if let (Some(gen), Some(zone)) = (gen, zone) {
                if (from..=to).contains(&gen) {
                    out.insert(gen, zone);
                }
            }
        }
        Ok(out)
    }

    /// Deletes change records older than `age` (best effort: a server that
    /// polls after that long drops whole zones instead). Returns how many.
    pub async fn prune_changes(&self, age: Duration) -> Result<u64, StoreError> {
        let cutoff = mongodb::bson::DateTime::from_millis(
            mongodb::bson::DateTime::now().timestamp_millis() - age.as_millis() as i64,
        );
        let done = self
            .changes
            .delete_many(doc! {"at": {"$lt": cutoff}})
            .await?;
        Ok(done.deleted_count)
    }

    /// The server-side deadline of a zone listing: `None` without a read
    /// deadline (the writers), else that deadline, at least
    /// [`LISTING_MIN_TIME`].
    pub(crate) fn listing_deadline(&self) -> Option<Duration> {
        self.read_deadline.map(|d| d.max(LISTING_MIN_TIME))
    }

    /// Every served zone, or `None` when there are more than `limit`.
    pub async fn served_zones(&self, limit: usize) -> Result<Option<Vec<ZoneInfo>>, StoreError> {
        let mut find = self
            .zones
            .find(doc! {})
            .batch_size(10_000)
            .limit(i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1));
        if let Some(d) = self.listing_deadline() {
            find = find.max_time(d);
        }
        let mut cursor = find.await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            if out.len() >= limit {
                return Ok(None);
            }
            if d.contains_key("ver") {
                out.push(schema::zone_from_doc(&d)?);
            }
        }
        Ok(Some(out))
    }

    /// Up to `limit` served zones in name order (of their `_id`), those
    /// after `after` when given: one page of a listing of any length.
    pub async fn list_zones(
        &self,
        after: Option<&Name>,
        limit: usize,
    ) -> Result<Vec<ZoneInfo>, StoreError> {
        let filter = match after {
            Some(a) => doc! {"_id": {"$gt": a.to_string()}, "ver": {"$exists": true}},
            None => doc! {"ver": {"$exists": true}},
        };
        let find = self
            .zones
            .find(filter)
            .sort(doc! {"_id": 1})
            .limit(i64::try_from(limit).unwrap_or(i64::MAX));
        zones_found(find, self.listing_deadline()).await
    }

    /// How many owner names (node documents, empty non-terminals included)
    /// the served version of `zone` holds.
    pub async fn count_names(&self, zone: &ZoneInfo) -> Result<u64, StoreError> {
        Ok(self
            .nodes
            .count_documents(doc! {"zone": zone.apex.to_string(), "ver": zone.ver})
            .await?)
    }

    /// Of the zones `apex` names, those whose generation is above `seq`:
    /// the deleted ones (tombstones) and the served ones, as
    /// [`Store::zones_deleted_since`] and [`Store::zones_changed_since`]
    /// would list them, by one `_id` read each instead of a scan of every
    /// zone (FerretDB indexes only `_id`). A poller whose change records
    /// account for every generation since `seq` knows the zones they name
    /// are the only ones that can have moved.
    pub async fn zones_moved_since(
        &self,
        apexes: &[Name],
        seq: i64,
    ) -> Result<(Vec<Name>, Vec<ZoneInfo>), StoreError> {
        let reads = apexes.iter().map(|apex| async move {
            let found = self.zones.find_one(doc! {"_id": apex.to_string()}).await?;
            Ok::<_, StoreError>(found.map(|d| (apex, d)))
        });
        let found = futures::future::try_join_all(reads).await?;
        let (mut deleted, mut changed) = (Vec::new(), Vec::new());
        for (apex, d) in found.into_iter().flatten() {
            let gen = d
                .get("gen")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
            if gen.is_none_or(|g| g <= seq) {
                continue;
            }
            if d.get_bool(schema::DELETED).unwrap_or(false) {
                deleted.push(apex.clone());
            }
            if d.contains_key("ver") {
                changed.push(schema::zone_from_doc(&d)?);
            }
        }
        Ok((deleted, changed))
    }

    /// Every zone document whose generation is above `seq`, as (apex,
    /// served): deleted zones (tombstones) and zones being created are
    /// not served. Reads only those documents (the `gen` index on
    /// MongoDB; FerretDB scans `zones` to find them).
    pub async fn zones_moved_after(&self, seq: i64) -> Result<Vec<(Name, bool)>, StoreError> {
        let mut find = self
            .zones
            .find(doc! {"gen": {"$gt": seq}})
            .projection(doc! {"_id": 1, "ver": 1});
        if let Some(d) = self.listing_deadline() {
            find = find.max_time(d);
        }
        let mut cursor = find.await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            // An `_id` that is no name is no zone anyone serves.
            if let Ok(apex) = d.get_str("_id").unwrap_or_default().parse() {
                out.push((apex, d.contains_key("ver")));
            }
        }
        Ok(out)
    }

    /// Zones whose generation is above `seq`.
    pub async fn zones_changed_since(&self, seq: i64) -> Result<Vec<ZoneInfo>, StoreError> {
        let mut cursor = self.zones.find(doc! {"gen": {"$gt": seq}}).await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            if d.contains_key("ver") {
                out.push(schema::zone_from_doc(&d)?);
            }
        }
        Ok(out)
    }
}

/// The parts of the `buildInfo` reply mongodns reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The MongoDB version the server reports (`version`).
    pub version: Option<String>,
    /// FerretDB's own version (`ferretdbVersion`), when the server is FerretDB.
    pub ferretdb: Option<String>,
}

/// The one `buildInfo` command: on `admin`, sent where `criteria` select.
async fn build_info(
    client: &Client,
    criteria: Option<SelectionCriteria>,
) -> Result<BuildInfo, mongodb::error::Error> {
    let info = client
        .database("admin")
        .run_command(doc! {"buildInfo": 1})
        .optional(criteria, |c, s| c.selection_criteria(s))
        .await?;
    let text = |key: &str| info.get_str(key).ok().map(str::to_string);
    Ok(BuildInfo {
        version: text("version"),
        ferretdb: text("ferretdbVersion"),
    })
}

fn version_at_least(version: &str, min: (u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= min
}

/// Every zone `find` returns (each a served zone: the filter asks for
/// `ver`), within `deadline` when one is given.
async fn zones_found(
    find: mongodb::action::Find<'_, Document>,
    deadline: Option<Duration>,
) -> Result<Vec<ZoneInfo>, StoreError> {
    let find = match deadline {
        Some(d) => find.max_time(d),
        None => find,
    };
    let mut cursor = find.await?;
    let mut out = Vec::new();
    while let Some(d) = cursor.try_next().await? {
        out.push(schema::zone_from_doc(&d)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(version_at_least("4.4.0", (4, 4)));
        assert!(version_at_least("7.0.77", (4, 4)));
        assert!(version_at_least("10.0", (4, 4)));
        assert!(!version_at_least("4.2.8", (4, 4)));
        assert!(!version_at_least("garbage", (4, 4)));
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("mongodb://u:secret@h:1/"), "mongodb://u:***@h:1/");
        assert_eq!(redact("mongodb://h:1/"), "mongodb://h:1/");
    }
}
