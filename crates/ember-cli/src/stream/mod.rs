//! `ember stream`: MapReduce jobs whose map and reduce are shell commands,
//! with Hadoop Streaming's contract.

use anyhow::Result;
use clap::Subcommand;

mod run;

pub(crate) use run::kill_children;

/// `ember stream` subcommands.
#[derive(Subcommand)]
pub(crate) enum Stream {
    /// Run a whole job on all cores: split the files at line boundaries,
    /// one mapper process per split, sort and partition its
    /// `key<TAB>value` lines by key, one reducer process per partition.
    Run(run::Args),
}

/// Runs an `ember stream` subcommand.
pub(crate) fn run(cmd: Stream) -> Result<()> {
    match cmd {
        Stream::Run(a) => run::run(a),
    }
}
