//! What a run needs before its first phase: the programs it starts, its
//! work directory and its database.
//!
//! ```text
//!  Programs::find (next to this program, or in --bin-dir)
//!  Setup::open: the report's directory checked, the work directory made,
//!     the database connected, the machine described
//! ```

use super::children::program;
use super::machine::describe_machine;
use super::ScenarioArgs;
use backend_mongo::Store;
use std::path::PathBuf;
use std::time::Duration;

/// The programs the run starts, found before anything is done.
pub(super) struct Programs {
    /// `mongodns-server`.
    pub(super) server: PathBuf,
    /// `mongodns-import`.
    pub(super) import: PathBuf,
    /// `mongodns-sign`.
    pub(super) sign: PathBuf,
}

impl Programs {
    /// The three programs next to this one (or in --bin-dir).
    pub(super) fn find(args: &ScenarioArgs) -> Result<Programs, String> {
        Ok(Programs {
            server: program(args, "mongodns-server")?,
            import: program(args, "mongodns-import")?,
            sign: program(args, "mongodns-sign")?,
        })
    }
}

/// Where the run works: its directory, the database, the machine's rows.
pub(super) struct Setup {
    /// The work directory (generated files and logs).
    pub(super) work: PathBuf,
    /// The scenario's database.
    pub(super) store: Store,
    /// The report's machine rows (load averages added as the run goes).
    pub(super) machine: Vec<(String, String)>,
}

impl Setup {
    /// Checks the report's directory, makes the work directory, connects.
    pub(super) async fn open(args: &ScenarioArgs) -> Result<Setup, String> {
        if let Some(dir) = args.report.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(format!(
                    "--report {}: directory {} does not exist",
                    args.report.display(),
                    dir.display()
                ));
            }
        }
        let work = match &args.work_dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!("mongodns-scenario-{}", std::process::id())),
        };
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let store = Store::connect(&args.mongodb_uri, &args.database, Duration::from_secs(10))
            .await
            .map_err(|e| format!("database: {e}"))?;
        let machine = describe_machine(&store).await;
        Ok(Setup {
            work,
            store,
            machine,
        })
    }
}
