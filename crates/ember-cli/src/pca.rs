//! `ember pca` and `ember gen pca`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, Stats};
use ember_apps::matrix::{Matrix, HEADER_BYTES};
use ember_apps::multijob::add_stats;
use ember_apps::pca::{self, Pca};
use ember_apps::stream::RowIndex;
use ember_cli::inputs;

use crate::common::{one_file, summary_out, write_output, RunArgs};
use crate::isolated::{self, IsolateArgs};
use crate::numeric;

/// `ember pca`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Matrix file: an ember matrix file, one variable per row (`ember gen
    /// pca`). A folder or a quoted glob pattern that gives exactly one file
    /// may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    /// Write the results as text (`-`: standard output): the row means on the
    /// first line, then the covariance matrix, one row per line, values
    /// separated by tabs.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
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

/// Runs `ember gen pca`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    a.matrix
        .generate(|max, seed| inputs::pca_matrix(a.rows, a.cols, max, seed))
}

/// Runs `ember pca`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::in_memory([&a.file])?;
    let m = Matrix::from_input(&input)?;
    let (p, stats, run) = if a.isolate.isolate {
        isolated(&a, &m)?
    } else {
        let rt = a.run.runtime()?;
        let (p, stats) = a.run.with_progress(|o| pca::run(&rt, &m, o))?;
        (p, stats, a.run.clone())
    };
    // The runs read the matrix's map, not an input of theirs.
    input.check_unchanged()?;
    write_output(a.output.as_deref(), |w| write_results(&p, w))?;
    summarize(&p, stats.total_secs, &mut summary_out(a.output.as_deref()))?;
    run.report(&stats)
}

/// `ember pca --isolate`: the registry's `pca-mean` job sums the rows, and
/// its `pca-cov` job computes the covariance rows from those sums (a file
/// the parent writes), both mapped in worker processes over the matrix
/// file's rows (past its header, read in place by every worker, as
/// `pca-cov`'s workers read the later rows).
fn isolated(a: &Args, m: &Matrix<'_>) -> Result<(Pca, Stats, RunArgs)> {
    pca::check(m)?;
    let started = Instant::now();
    let files = [a.file.clone()];
    let matrix = isolated::path_arg(&a.file)?;
    let header = HEADER_BYTES as u64;
    let job_args = ["--matrix".to_string(), matrix];
    let mut session = isolated::Session::kept();
    let sums = isolated::run_binary_past_header::<u32, i64>(
        &mut session,
        &a.run,
        &a.isolate,
        "pca-mean",
        &job_args,
        &files,
        header,
    )?;
    let sums_file = isolated::JobFile::new()?;
    let mut text = String::new();
    for (_, sum) in &sums.pairs {
        text.push_str(&format!("{sum}\n"));
    }
    sums_file.write(text.as_bytes())?;
    let sums_args = ["--sums".to_string(), sums_file.name().to_string()];
    let job_args = [job_args, sums_args].concat();
    let cov = isolated::run_binary_past_header::<RowIndex, Vec<f64>>(
        &mut session,
        &a.run,
        &a.isolate,
        "pca-cov",
        &job_args,
        &files,
        header,
    )?;
    let rows = |n: usize| n == m.rows;
    anyhow::ensure!(
        rows(sums.pairs.len()) && rows(cov.pairs.len()),
        "the isolated run reduced {} row sums and {} covariance rows for {} rows",
        sums.pairs.len(),
        cov.pairs.len(),
        m.rows
    );
    let mut stats = Stats::default();
    add_stats(&mut stats, &sums.stats);
    add_stats(&mut stats, &cov.stats);
    stats.total_secs = started.elapsed().as_secs_f64();
    let pca = Pca {
        cols: m.cols,
        sums: sums.pairs.into_iter().map(|(_, s)| s).collect(),
        upper: cov.pairs.into_iter().map(|(_, row)| row).collect(),
    };
    Ok((pca, stats, cov.run))
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
