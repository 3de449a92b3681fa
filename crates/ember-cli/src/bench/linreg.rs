//! `ember bench linreg`: ember vs the sequential linear regression and a
//! plain memory read of the points.

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::linear_regression::{self, PointsSpec};

use super::compare::{compare, Setup};
use super::BenchArgs;
use crate::common::parse_size;

/// `ember bench linreg`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help(
    "Threads for the \"all threads\" rows (default: all CPUs)"
)))]
pub(crate) struct Args {
    /// Points file size (WORKLOADS.md: 500 MiB).
    #[arg(long, value_parser = parse_size, default_value = "500MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench linreg`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = PointsSpec {
        size: a.size,
        ..PointsSpec::default()
    };
    let file = crate::linear_regression::cached(spec)?;
    let want = linear_regression::sequential(Input::file(&file)?.part_bytes(0))?;
    compare(
        Setup {
            title: format!(
                "linear regression, {:.1} MB ({} points)",
                spec.size as f64 / 1e6,
                want.n
            ),
            file: &file,
            bench: a.bench,
            memory_read: true,
        },
        &|| {
            let got = linear_regression::sequential(Input::file(&file)?.part_bytes(0))?;
            ensure!(got == want, "the sequential sums changed between runs");
            Ok(())
        },
        &|rt| {
            let (got, stats) = crate::linear_regression::sums(
                rt,
                &file,
                ember::Ingest::Mmap,
                &RunOptions::default(),
            )?;
            ensure!(got == want, "ember's sums differ from the sequential ones");
            Ok(stats)
        },
    )
}
