//! `ember bench matmul`: the sequential matrix multiply vs ember.

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{RunOptions, Runtime, Stats};
use ember_apps::matrix_multiply::{self, Product};

use crate::matrix_multiply::factor_spec;
use crate::numeric;

use super::{all_threads, contender_rows, interleaved, timed, Report};

/// `ember bench matmul`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Size of the square factors (WORKLOADS.md: two 2048 x 2048 int32
    /// matrices; values in 0..1000).
    #[arg(long, default_value_t = 2048)]
    n: u64,
    /// Runs of each contender; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads for the "all threads" row (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
}

/// Runs `ember bench matmul`.
pub(crate) fn run(a: Args) -> Result<()> {
    let ia = numeric::open(&numeric::cached_matrix(&factor_spec(a.n, a.n, 1000, 7)?)?)?;
    let ib = numeric::open(&numeric::cached_matrix(&factor_spec(a.n, a.n, 1000, 8)?)?)?;
    let (ma, mb) = (numeric::matrix(&ia)?, numeric::matrix(&ib)?);
    let all = all_threads(a.threads);
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;

    let want = matrix_multiply::sequential(&ma, &mb)?;
    let check = |c: &Product| -> Result<()> {
        if *c != want {
            bail!("ember's product differs from the sequential one");
        }
        Ok(())
    };
    let ember = |rt: &Runtime| -> Result<Stats> {
        let (c, stats) = matrix_multiply::run(rt, &ma, &mb, &RunOptions::default())?;
        check(&c)?;
        Ok(stats)
    };
    let mut last = None;
    let times = interleaved(
        a.runs,
        &mut [
            &mut || timed(|| check(&matrix_multiply::sequential(&ma, &mb)?)),
            &mut || timed(|| ember(&rt1).map(drop)),
            &mut || {
                timed(|| {
                    last = Some(ember(&rtn)?);
                    Ok(())
                })
            },
        ],
    )?;
    let macs = (ma.rows * ma.cols * mb.cols) as f64 / 1e9;
    Report {
        title: format!(
            "matrix multiply, {} x {} times {} x {} (i32, wrapping), median of {} runs",
            ma.rows,
            ma.cols,
            mb.rows,
            mb.cols,
            a.runs.max(1)
        ),
        amount: macs,
        unit: "GMAC",
        rows: contender_rows("sequential", &times, all),
    }
    .print();
    if let Some(s) = last {
        println!("\nember, {all} threads, last run:\n{s}");
    }
    Ok(())
}
