//! `ember bench kmeans`: the sequential k-means vs ember.

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{RunOptions, Runtime, Stats};
use ember_apps::kmeans::{self, Clustering};

use crate::kmeans::{points_spec, ParamArgs};
use crate::numeric;

use super::{all_threads, contender_rows, interleaved, timed, Report};

/// `ember bench kmeans`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Number of points (WORKLOADS.md: 500,000 in 3 dimensions, values in 0..1000).
    #[arg(long, default_value_t = 500_000)]
    points: u64,
    /// Dimensions of a point.
    #[arg(long, default_value_t = 3)]
    dims: u64,
    #[command(flatten)]
    params: ParamArgs,
    /// Runs of each contender; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads for the "all threads" row (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
}

/// Runs `ember bench kmeans`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = points_spec(a.points, a.dims, 1000, 7)?;
    let input = numeric::open(&numeric::cached_matrix(&spec)?)?;
    let points = numeric::matrix(&input)?;
    let params = a.params.params();
    let all = all_threads(a.threads);
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;

    let want = kmeans::sequential(&points, params)?;
    let check = |c: &Clustering| -> Result<()> {
        if *c != want {
            bail!("ember's clustering differs from the sequential one");
        }
        Ok(())
    };
    let ember = |rt: &Runtime| -> Result<Stats> {
        let (c, stats) = kmeans::run(rt, &points, params, &RunOptions::default(), |_, _| {})?;
        check(&c)?;
        Ok(stats)
    };
    let mut last = None;
    let times = interleaved(
        a.runs,
        &mut [
            &mut || timed(|| check(&kmeans::sequential(&points, params)?)),
            &mut || timed(|| ember(&rt1).map(drop)),
            &mut || {
                timed(|| {
                    last = Some(ember(&rtn)?);
                    Ok(())
                })
            },
        ],
    )?;
    let assignments = (points.rows * want.iterations) as f64 / 1e6;
    Report {
        title: format!(
            "k-means, {} points x {} dims, {} clusters, {} iterations ({}), median of {} runs",
            points.rows,
            points.cols,
            params.clusters,
            want.iterations,
            if want.converged {
                "converged"
            } else {
                "not converged"
            },
            a.runs.max(1)
        ),
        amount: assignments,
        unit: "M pt-iter",
        rows: contender_rows("sequential", &times, all),
    }
    .print();
    if let Some(s) = last {
        println!(
            "\nember, {all} threads, last run, summed over its {} jobs:\n{s}",
            want.iterations
        );
    }
    Ok(())
}
