//! `ember-bench linear-regression`: ember vs the sequential linear
//! regression and a plain memory read of the points.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::{Input, RunOptions};
use ember_apps::linear_regression::{self, PointsSpec};
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::{against_sequential, warm};
use crate::BenchArgs;

/// `ember-bench linear-regression`.
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

/// Runs `ember-bench linear-regression`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = PointsSpec {
        size: a.size,
        ..PointsSpec::default()
    };
    let file = inputs::points(spec).cached()?;
    let bytes = warm(&[&file])?;
    let sequential = || {
        Ok(linear_regression::sequential(
            Input::file(&file)?.part_bytes(0),
        )?)
    };
    let want = sequential()?;
    let files = [file.clone()];
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| {
            let input = Input::file(&file)?;
            Ok(linear_regression::run_input(
                rt,
                &input,
                &RunOptions::default(),
            )?)
        },
        roofline::bandwidth(&files, all_threads(a.bench.threads)),
    )?;
    v.print(
        &format!(
            "linear regression, {:.1} MB ({} points)",
            spec.size as f64 / 1e6,
            want.n
        ),
        bytes as f64 / 1e6,
        "MB",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("linear-regression", bytes);
    v.ember_all().print_phases("");
    Ok(())
}
