//! `ember bench kmeans`: the sequential k-means vs ember.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::RunOptions;
use ember_apps::kmeans;

use crate::kmeans::{points_spec, ParamArgs};
use crate::numeric;

use super::{against_sequential, BenchArgs};

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
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench kmeans`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = points_spec(a.points, a.dims, 1000, 7)?;
    let input = numeric::open(&numeric::cached_matrix(&spec)?)?;
    let points = numeric::matrix(&input)?;
    let params = a.params.params();
    let v = against_sequential(
        a.bench,
        "clustering",
        || Ok(kmeans::sequential(&points, params)?),
        |rt| {
            Ok(kmeans::run(
                rt,
                &points,
                params,
                &RunOptions::default(),
                |_, _| {},
            )?)
        },
    )?;
    let want = &v.want;
    v.print(
        &format!(
            "k-means, {} points x {} dims, {} clusters, {} iterations ({})",
            points.rows,
            points.cols,
            params.clusters,
            want.iterations,
            if want.converged {
                "converged"
            } else {
                "not converged"
            },
        ),
        (points.rows * want.iterations) as f64 / 1e6,
        "M pt-iter",
        &format!(", summed over its {} jobs", want.iterations),
    );
    Ok(())
}
