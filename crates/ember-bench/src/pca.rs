//! `ember-bench pca`: the sequential PCA vs ember.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::matrix::Matrix;
use ember_apps::pca;
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::against_sequential;
use crate::BenchArgs;

/// `ember-bench pca`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Rows of the matrix (WORKLOADS.md: 2500 x 2500, values in 0..1000).
    #[arg(long, default_value_t = 2500)]
    rows: u64,
    /// Columns of the matrix.
    #[arg(long, default_value_t = 2500)]
    cols: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember-bench pca`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = inputs::pca_matrix(a.rows, a.cols, 1000, 7)?;
    let input = Input::file(inputs::matrix(&spec).cached()?)?;
    let m = Matrix::from_input(&input)?;
    let sequential = || Ok(pca::sequential(&m)?);
    let want = sequential()?;
    // Multiply-adds of the dot products of the upper triangle.
    let macs = (m.rows * (m.rows + 1) / 2 * m.cols) as f64;
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| Ok(pca::run(rt, &m, &RunOptions::default())?),
        roofline::arithmetic(macs, all_threads(a.bench.threads)),
    )?;
    let mb = m.data.len() as f64 / 1e6;
    v.print(
        &format!("pca, {} x {} matrix ({mb:.1} MB)", m.rows, m.cols),
        macs / 1e9,
        "GMAC",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("pca", m.data.len() as u64);
    v.ember_all().print_phases(", summed over its 2 jobs");
    Ok(())
}
