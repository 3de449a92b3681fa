//! `ember matrix-multiply` and `ember gen matmul`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, Stats};
use ember_apps::matrix::{self, Matrix, HEADER_BYTES};
use ember_apps::matrix_multiply::{self, Product};
use ember_apps::stream::RowIndex;
use ember_cli::inputs;

use crate::common::{one_file, summary_out, write_output, RunArgs};
use crate::isolated::{self, IsolateArgs};
use crate::numeric;

/// `ember matrix-multiply`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Matrix A (an ember matrix file, `ember gen matmul`); only read. A
    /// folder or a quoted glob pattern that gives exactly one file may name
    /// it.
    #[arg(value_parser = one_file())]
    a: PathBuf,
    /// Matrix B; only read (named as A is).
    #[arg(value_parser = one_file())]
    b: PathBuf,
    /// Write the product C as an ember matrix file (`-`: standard output).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen matmul`.
#[derive(ClapArgs)]
#[command(mut_arg("seed", |a| a.help(
    "Random seed: the same arguments give the same bytes (use two seeds for A and B)"
)))]
pub(crate) struct GenArgs {
    /// Rows (and, unless --cols is given, columns): WORKLOADS.md uses 2048.
    #[arg(long, default_value_t = 2048)]
    n: u64,
    /// Columns, for a non-square matrix.
    #[arg(long)]
    cols: Option<u64>,
    #[command(flatten)]
    matrix: numeric::MatrixGenArgs,
}

/// Runs `ember gen matmul`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    let cols = a.cols.unwrap_or(a.n);
    a.matrix
        .generate(|max, seed| inputs::factor(a.n, cols, max, seed))
}

/// Runs `ember matrix-multiply`.
pub(crate) fn run(a: Args) -> Result<()> {
    let (ia, ib) = (Input::in_memory([&a.a])?, Input::in_memory([&a.b])?);
    let (ma, mb) = (Matrix::from_input(&ia)?, Matrix::from_input(&ib)?);
    let (c, stats, run) = if a.isolate.isolate {
        isolated(&a, &ma, &mb)?
    } else {
        let rt = a.run.runtime()?;
        let (c, stats) = a
            .run
            .with_progress(|o| matrix_multiply::run(&rt, &ma, &mb, o))?;
        (c, stats, a.run.clone())
    };
    // The runs read the matrices' maps, not inputs of theirs.
    ia.check_unchanged()?;
    ib.check_unchanged()?;
    write_output(a.output.as_deref(), |mut w| {
        Ok(matrix::write(c.rows, c.cols, &c.values(), &mut w)?)
    })?;
    summarize(
        &c,
        ma.cols,
        stats.total_secs,
        &mut summary_out(a.output.as_deref()),
    )?;
    run.report(&stats)
}

/// `ember matrix-multiply --isolate`: the registry's `matmul-rows` job
/// maps splits of A's rows (past its header) in worker processes, each
/// reading B whole (mapped read-only: the file's pages are shared, not
/// copied) and writing its rows of C keyed by row; the parent puts the
/// rows in order.
fn isolated(a: &Args, ma: &Matrix<'_>, mb: &Matrix<'_>) -> Result<(Product, Stats, RunArgs)> {
    matrix_multiply::check(ma, mb)?;
    let job_args = ["--b".to_string(), isolated::path_arg(&a.b)?];
    let iso = isolated::run_binary_past_header::<RowIndex, Vec<i32>>(
        &mut isolated::Session::one_run(),
        &a.run,
        &a.isolate,
        "matmul-rows",
        &job_args,
        std::slice::from_ref(&a.a),
        HEADER_BYTES as u64,
    )?;
    let whole = |row: &(RowIndex, Vec<i32>)| row.1.len() == mb.cols;
    anyhow::ensure!(
        iso.pairs.len() == ma.rows && iso.pairs.iter().all(whole),
        "the isolated run reduced {} rows of C for {} rows of {} values",
        iso.pairs.len(),
        ma.rows,
        mb.cols
    );
    let rows = iso.pairs.into_iter().map(|(_, row)| row).collect();
    let c = Product::from_blocks(ma.rows, mb.cols, rows);
    Ok((c, iso.stats, iso.run))
}

/// Prints the shape, the speed, a checksum and a corner of C.
fn summarize(c: &Product, inner: usize, secs: f64, out: &mut dyn Write) -> Result<()> {
    let macs = (c.rows * c.cols * inner) as f64;
    writeln!(
        out,
        "matrix multiply: {} x {inner} times {inner} x {}: {:.3} s, {:.2} GMAC/s",
        c.rows,
        c.cols,
        secs,
        macs / secs.max(1e-9) / 1e9
    )?;
    let checksum = c
        .iter_rows()
        .flatten()
        .fold(0i32, |s, &v| s.wrapping_add(v));
    writeln!(out, "checksum (wrapping sum of C): {checksum}")?;
    for i in 0..c.rows.min(3) {
        let row = c.row(i);
        writeln!(
            out,
            "C[{i}][..{}] = {:?}",
            row.len().min(4),
            &row[..row.len().min(4)]
        )?;
    }
    Ok(())
}
