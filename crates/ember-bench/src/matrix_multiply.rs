//! `ember-bench matrix-multiply`: the sequential matrix multiply vs ember.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::matrix::Matrix;
use ember_apps::matrix_multiply;
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::against_sequential;
use crate::BenchArgs;

/// `ember-bench matrix-multiply`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Size of the square factors (WORKLOADS.md: two 2048 x 2048 int32
    /// matrices; values in 0..1000).
    #[arg(long, default_value_t = 2048)]
    n: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember-bench matrix-multiply`.
pub(crate) fn run(a: Args) -> Result<()> {
    let factor = |seed| -> Result<Input<'static>> {
        let spec = inputs::factor(a.n, a.n, 1000, seed)?;
        Ok(Input::file(inputs::matrix(&spec).cached()?)?)
    };
    let (ia, ib) = (factor(7)?, factor(8)?);
    let (ma, mb) = (Matrix::from_input(&ia)?, Matrix::from_input(&ib)?);
    let sequential = || Ok(matrix_multiply::sequential(&ma, &mb)?);
    let want = sequential()?;
    let macs = (ma.rows * ma.cols * mb.cols) as f64;
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| Ok(matrix_multiply::run(rt, &ma, &mb, &RunOptions::default())?),
        roofline::arithmetic(macs, all_threads(a.bench.threads)),
    )?;
    v.print(
        &format!(
            "matrix multiply, {} x {} times {} x {} (i32, wrapping)",
            ma.rows, ma.cols, mb.rows, mb.cols
        ),
        macs / 1e9,
        "GMAC",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("matrix-multiply", (ma.data.len() + mb.data.len()) as u64);
    v.ember_all().print_phases("");
    Ok(())
}
