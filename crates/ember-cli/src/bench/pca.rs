//! `ember bench pca`: the sequential PCA vs ember.

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{RunOptions, Runtime, Stats};
use ember_apps::pca::{self, Pca};

use crate::numeric;
use crate::pca::matrix_spec;

use super::{all_threads, contender_rows, interleaved, timed, Report};

/// `ember bench pca`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Rows of the matrix (WORKLOADS.md: 2500 x 2500, values in 0..1000).
    #[arg(long, default_value_t = 2500)]
    rows: u64,
    /// Columns of the matrix.
    #[arg(long, default_value_t = 2500)]
    cols: u64,
    /// Runs of each contender; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads for the "all threads" row (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
}

/// Runs `ember bench pca`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = matrix_spec(a.rows, a.cols, 1000, 7)?;
    let input = numeric::open(&numeric::cached_matrix(&spec)?)?;
    let m = numeric::matrix(&input)?;
    let all = all_threads(a.threads);
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;

    let want = pca::sequential(&m)?;
    let check = |p: &Pca| -> Result<()> {
        if *p != want {
            bail!("ember's PCA differs from the sequential one");
        }
        Ok(())
    };
    let ember = |rt: &Runtime| -> Result<Stats> {
        let (p, stats) = pca::run(rt, &m, &RunOptions::default())?;
        check(&p)?;
        Ok(stats)
    };
    let mut last = None;
    let times = interleaved(
        a.runs,
        &mut [
            &mut || timed(|| check(&pca::sequential(&m)?)),
            &mut || timed(|| ember(&rt1).map(drop)),
            &mut || {
                timed(|| {
                    last = Some(ember(&rtn)?);
                    Ok(())
                })
            },
        ],
    )?;
    // Multiply-adds of the dot products of the upper triangle.
    let macs = (m.rows * (m.rows + 1) / 2 * m.cols) as f64 / 1e9;
    Report {
        title: format!(
            "pca, {} x {} matrix ({:.1} MB), median of {} runs",
            m.rows,
            m.cols,
            m.data.len() as f64 / 1e6,
            a.runs.max(1)
        ),
        amount: macs,
        unit: "GMAC",
        rows: contender_rows("sequential", &times, all),
    }
    .print();
    if let Some(s) = last {
        println!("\nember, {all} threads, last run, summed over its 2 jobs:\n{s}");
    }
    Ok(())
}
