//! `ember bench strmatch`: ember vs the sequential string match.

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::string_match::{self, KeysSpec, Targets};

use super::compare::{compare, Setup};
use super::BenchArgs;
use crate::common::parse_size;

/// `ember bench strmatch`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Keys file size (WORKLOADS.md: 256 MiB).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench strmatch`: looks for the planted words and one word
/// that is not there.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = KeysSpec {
        size: a.size,
        ..KeysSpec::default()
    };
    let file = crate::string_match::cached(&spec)?;
    let mut words = spec.plant.clone();
    words.push("notplantedanywhere".into());
    let targets = Targets::new(&words)?;
    let want = string_match::sequential(Input::file(&file)?.part_bytes(0), &targets);
    let found: usize = want.iter().map(Vec::len).sum();
    compare(
        Setup {
            title: format!(
                "string match, {:.1} MB keys, {} targets, {found} matching lines",
                spec.size as f64 / 1e6,
                words.len()
            ),
            file: &file,
            bench: a.bench,
            memory_read: false,
        },
        &|| {
            let got = string_match::sequential(Input::file(&file)?.part_bytes(0), &targets);
            ensure!(got == want, "the sequential matches changed between runs");
            Ok(())
        },
        &|rt| {
            let (got, stats) = crate::string_match::search(
                rt,
                &file,
                ember::Ingest::Mmap,
                &targets,
                &RunOptions::default(),
            )?;
            ensure!(
                got == want,
                "ember's matches differ from the sequential ones"
            );
            Ok(stats)
        },
    )
}
