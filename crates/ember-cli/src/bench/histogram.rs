//! `ember bench histogram`: ember vs the sequential histogram and a plain
//! memory read of the image.

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::histogram::{self, BmpSpec};

use super::compare::{compare, Setup};
use super::BenchArgs;

/// `ember bench histogram`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help(
    "Threads for the \"all threads\" rows (default: all CPUs)"
)))]
pub(crate) struct Args {
    /// Image width in pixels (default: WORKLOADS.md's 10240 x 13654).
    #[arg(long, default_value_t = BmpSpec::default().width)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = BmpSpec::default().height)]
    height: u32,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench histogram`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = BmpSpec {
        width: a.width,
        height: a.height,
        ..BmpSpec::default()
    };
    let file = crate::histogram::cached(spec)?;
    let want = histogram::sequential(Input::file(&file)?.part_bytes(0))?;
    compare(
        Setup {
            title: format!(
                "histogram, {} x {} BMP ({:.1} MB)",
                spec.width,
                spec.height,
                spec.file_len() as f64 / 1e6
            ),
            file: &file,
            bench: a.bench,
            memory_read: true,
        },
        &|| {
            let got = histogram::sequential(Input::file(&file)?.part_bytes(0))?;
            ensure!(got == want, "the sequential histogram changed between runs");
            Ok(())
        },
        &|rt| {
            let (got, stats) = crate::histogram::count(rt, &file, &RunOptions::default())?;
            ensure!(
                got == want,
                "ember's histogram differs from the sequential one"
            );
            Ok(stats)
        },
    )
}
