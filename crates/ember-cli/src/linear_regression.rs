//! `ember linear-regression` and `ember gen linreg`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use clap::Args as ClapArgs;
use ember::tune::Ingest;
use ember::Stats;
use ember_apps::linear_regression::{self, PointsSpec, Sums, SUM_NAMES};
use ember_cli::inputs;

use crate::common::{one_file, open_input, parse_size, RunArgs};
use crate::isolated::{self, IsolateArgs};

/// `ember linear-regression`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Points: pairs of signed bytes (x, y). An hdfs://HOST:PORT/PATH URL
    /// reads a file, or every file under a folder, from HDFS (with the
    /// `hdfs` build feature). A local folder or quoted glob pattern that
    /// gives exactly one file may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen linreg`.
#[derive(ClapArgs)]
pub(crate) struct GenArgs {
    /// Output size, e.g. 500MiB (exact; even: 2 bytes per point).
    #[arg(long, value_parser = parse_size, default_value = "500MiB")]
    size: u64,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
}

/// Runs `ember gen linreg`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    let spec = PointsSpec {
        size: a.size,
        seed: a.seed,
    };
    inputs::points(spec).write_to(&a.out)
}

/// Runs the job on a file, read as `ingest` says, naming it in errors.
pub(crate) fn sums(
    rt: &ember::Runtime,
    file: &Path,
    ingest: Ingest,
    opts: &ember::RunOptions,
) -> Result<(Sums, ember::Stats)> {
    let input = open_input(&[file.to_path_buf()], ingest)?;
    linear_regression::run_input(rt, &input, opts).with_context(|| format!("'{}'", file.display()))
}

/// The sums by the streaming job `linear-regression-bytes`, every split
/// (an even byte range of the points) in a worker process, with the run's
/// options for reporting it.
fn sums_isolated(a: &Args) -> Result<(Sums, Stats, RunArgs)> {
    let named = || format!("'{}'", a.file.display());
    let len = std::fs::metadata(&a.file).with_context(named)?.len();
    linear_regression::check(len).with_context(named)?;
    let files = [a.file.clone()];
    let job = "linear-regression-bytes";
    let iso = isolated::run::<u8, i64>(&a.run, &a.isolate, job, &[], &files)?;
    let mut sums = Sums {
        n: len / 2,
        s: [0; 5],
    };
    for (key, s) in iso.pairs {
        let sum = sums.s.get_mut(usize::from(key));
        *sum.ok_or_else(|| anyhow!("the isolated run gave a sum of key {key}"))? = s;
    }
    Ok((sums, iso.stats, iso.run))
}

/// Runs `ember linear-regression`.
pub(crate) fn run(a: Args) -> Result<()> {
    let (sums, stats, run) = if a.isolate.isolate {
        sums_isolated(&a)?
    } else {
        let rt = a.run.runtime()?;
        let (sums, stats) = a
            .run
            .with_progress(|o| sums(&rt, &a.file, a.run.ingest, o))?;
        (sums, stats, a.run.clone())
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:<4} {:>22}", "N", sums.n)?;
    for (name, s) in SUM_NAMES.iter().zip(sums.s) {
        writeln!(out, "{name:<4} {s:>22}")?;
    }
    match sums.fit() {
        Some(fit) => {
            writeln!(
                out,
                "y = a + b x:  a = {:.6}  b = {:.6}  R^2 = {:.6}",
                fit.a, fit.b, fit.r2
            )?;
        }
        None => writeln!(
            out,
            "no fit: {}",
            if sums.n == 0 {
                "no points"
            } else {
                "every x is the same"
            }
        )?,
    }
    run.finish(&mut out, &stats)
}
