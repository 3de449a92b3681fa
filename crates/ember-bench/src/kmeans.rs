//! `ember-bench kmeans`: the sequential k-means vs ember.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::kmeans;
use ember_apps::matrix::Matrix;
use ember_cli::args::KmeansArgs;
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::against_sequential;
use crate::BenchArgs;

/// `ember-bench kmeans`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Number of points (WORKLOADS.md: 500,000 in 3 dimensions, values in 0..1000).
    #[arg(long, default_value_t = 500_000)]
    points: u64,
    /// Dimensions of a point.
    #[arg(long, default_value_t = 3)]
    dims: u64,
    #[command(flatten)]
    params: KmeansArgs,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember-bench kmeans`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = inputs::kmeans_points(a.points, a.dims, 1000, 7)?;
    let input = Input::file(inputs::matrix(&spec).cached()?)?;
    let points = Matrix::from_input(&input)?;
    let params = a.params.params();
    let sequential = || Ok(kmeans::sequential(&points, params)?);
    let want = sequential()?;
    // A multiply-add per point, cluster and dimension in each iteration.
    let macs = (points.rows * points.cols * params.clusters * want.iterations) as f64;
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| {
            let opts = RunOptions::default();
            Ok(kmeans::run(rt, &points, params, &opts, |_, _| {})?)
        },
        roofline::arithmetic(macs, all_threads(a.bench.threads)),
    )?;
    let converged = if want.converged {
        "converged"
    } else {
        "not converged"
    };
    v.print(
        &format!(
            "k-means, {} points x {} dims, {} clusters, {} iterations ({converged})",
            points.rows, points.cols, params.clusters, want.iterations,
        ),
        (points.rows * want.iterations) as f64 / 1e6,
        "M pt-iter",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("kmeans", points.data.len() as u64);
    v.ember_all()
        .print_phases(&format!(", summed over its {} jobs", want.iterations));
    Ok(())
}
