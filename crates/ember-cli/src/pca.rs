//! `ember pca` and `ember gen pca`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_apps::matrix::MatrixSpec;
use ember_apps::pca::{self, Pca};

use crate::common::{summary_out, write_output, RunArgs};
use crate::numeric;

/// `ember pca`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Matrix file: an ember matrix file, one variable per row (`ember gen pca`).
    file: PathBuf,
    /// Write the results as text (`-`: standard output): the row means on the
    /// first line, then the covariance matrix, one row per line, values
    /// separated by tabs.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// `ember gen pca`.
#[derive(ClapArgs)]
pub(crate) struct GenArgs {
    /// Rows (variables).
    #[arg(long, default_value_t = 2500)]
    rows: u64,
    /// Columns (observations per variable).
    #[arg(long, default_value_t = 2500)]
    cols: u64,
    #[command(flatten)]
    matrix: numeric::MatrixGenArgs,
}

/// The PCA input matrix (values uniform in 0..max) as a matrix spec.
pub(crate) fn matrix_spec(rows: u64, cols: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(cols >= 2, "--cols must be at least 2");
    numeric::uniform(rows, cols, max, seed)
}

/// Runs `ember gen pca`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    a.matrix
        .generate(|max, seed| matrix_spec(a.rows, a.cols, max, seed))
}

/// Runs `ember pca`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = numeric::open(&a.file)?;
    let m = numeric::matrix(&input)?;
    let rt = a.run.runtime()?;
    let (p, stats) = a.run.with_progress(|o| pca::run(&rt, &m, o))?;
    // The runs read the matrix's map, not an input of theirs.
    input.check_unchanged()?;
    write_output(a.output.as_deref(), |w| write_results(&p, w))?;
    summarize(&p, stats.total_secs, &mut summary_out(a.output.as_deref()))?;
    a.run.report(&stats)
}

/// Writes the means, then the full covariance matrix.
fn write_results(p: &Pca, w: &mut dyn Write) -> Result<()> {
    let line = |w: &mut dyn Write, values: &mut dyn Iterator<Item = f64>| -> Result<()> {
        let mut sep = "";
        for v in values {
            write!(w, "{sep}{v}")?;
            sep = "\t";
        }
        writeln!(w)?;
        Ok(())
    };
    let rows = p.rows();
    line(w, &mut (0..rows).map(|i| p.mean(i)))?;
    for i in 0..rows {
        line(w, &mut (0..rows).map(|j| p.cov(i, j)))?;
    }
    Ok(())
}

/// Prints the shape, the spread of the means and variances, and the
/// covariance sum Phoenix prints.
fn summarize(p: &Pca, secs: f64, out: &mut dyn Write) -> Result<()> {
    let rows = p.rows();
    writeln!(
        out,
        "pca: {rows} rows x {} columns: means and {} covariances in {secs:.3} s",
        p.cols,
        rows * (rows + 1) / 2
    )?;
    if rows == 0 {
        return Ok(());
    }
    let mut spread = |what: &str, v: &mut dyn Iterator<Item = f64>| {
        let (lo, hi, sum, n) = v.fold((f64::MAX, f64::MIN, 0.0, 0usize), |(lo, hi, s, n), x| {
            (lo.min(x), hi.max(x), s + x, n + 1)
        });
        writeln!(
            out,
            "{what:<10} min {lo:.3}, mean {:.3}, max {hi:.3}",
            sum / n as f64
        )
    };
    spread("means", &mut (0..rows).map(|i| p.mean(i)))?;
    spread("variances", &mut (0..rows).map(|i| p.cov(i, i)))?;
    let upper: f64 = p.upper.iter().flatten().sum();
    writeln!(
        out,
        "covariance sum (upper triangle, diagonal included): {upper:.3}"
    )?;
    Ok(())
}
