//! The seed scenario (placeholder).

/// Flags of `mongodns-perf scenario`.
#[derive(clap::Args, Debug)]
pub struct ScenarioArgs {
    /// Which scenario.
    pub name: String,
}

/// Runs a scenario.
pub fn main(_args: ScenarioArgs) -> Result<(), String> {
    Err("not yet".into())
}
