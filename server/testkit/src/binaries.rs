//! The workspace's binaries, found next to the running test.
//!
//! ```text
//!  current test: target/<profile>/deps/<test>-<hash>
//!  binary(name) ─► target/<profile>/<name> ─► missing? `cargo build -p PKG --bins`
//!  run_tool(database, name, args) ─► it, on the test database; must succeed
//! ```
//!
//! A crate's own tests get its binaries built by cargo; the binaries of
//! other crates (the scenario runs `mongodns-server` and `mongodns-sign`)
//! are built here on first use.

use std::path::PathBuf;
use std::process::Command;

/// The directory of the workspace's binaries for this test's profile
/// (`target/debug` or `target/release`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let deps = exe.parent().expect("tests run from target/<profile>/deps");
    deps.parent()
        .expect("deps lies in the profile's directory")
        .to_path_buf()
}

/// The path of the workspace binary `name`, built first when missing.
pub fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    if !path.is_file() {
        build(package_of(name));
    }
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Runs the workspace tool `name` (`mongodns-sign`, `mongodns-zone`, ...)
/// with `args` on the test database `database` (at most 60 s); fails the
/// test, with its stderr, unless it succeeds.
pub fn run_tool(database: &str, name: &str, args: &[&str]) {
    let mut cmd = Command::new(binary(name));
    cmd.args([
        "--mongodb-uri",
        &backend_mongo::testing::database_uri(),
        "--database",
        database,
    ])
    .args(args);
    let out = crate::run_bounded(cmd, name, std::time::Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The package that holds the binary `name`.
fn package_of(name: &str) -> &'static str {
    match name {
        "mongodns-server" => "mongodns-server",
        "mongodns-sign" | "mongodns-zone" => "signer",
        "mongodns-import" | "mongodns-perf" | "mongodns-zonegen" => "loadtools",
        other => panic!("{other} is not a binary of the workspace"),
    }
}

/// Builds the binaries of `package` in this test's profile.
fn build(package: &str) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(backend_mongo::testing::repo_root())
        .args(["build", "-p", package, "--bins"]);
    if bin_dir().ends_with("release") {
        c.arg("--release");
    }
    let status = c.status().expect("cannot run cargo build");
    assert!(
        status.success(),
        "building the binaries of {package} failed"
    );
}
