//! `ember kmeans` and `ember gen kmeans`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, Stats};
use ember_apps::kmeans::{self, ClusterSum, Clustering};
use ember_apps::matrix::{Matrix, HEADER_BYTES};
use ember_cli::args::KmeansArgs;
use ember_cli::inputs;

use crate::common::{one_file, summary_out, write_output, RunArgs};
use crate::isolated::{self, IsolateArgs};
use crate::numeric;
use crate::progress::progress_while;

/// `ember kmeans`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Points file: an ember matrix file, one point per row (`ember gen
    /// kmeans`). A folder or a quoted glob pattern that gives exactly one
    /// file may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    #[command(flatten)]
    params: KmeansArgs,
    /// Write every cluster, one per line: `cluster<TAB>size<TAB>mean
    /// coordinates...` (`-`: standard output).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Print one line per iteration to standard error.
    #[arg(long, short = 'v')]
    verbose: bool,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen kmeans`.
#[derive(ClapArgs)]
#[command(mut_arg("max", |a| a.help("Coordinates are drawn uniformly from 0..max")))]
pub(crate) struct GenArgs {
    /// Number of points.
    #[arg(long, default_value_t = 500_000)]
    points: u64,
    /// Dimensions of a point.
    #[arg(long, default_value_t = 3)]
    dims: u64,
    #[command(flatten)]
    matrix: numeric::MatrixGenArgs,
}

/// Runs `ember gen kmeans`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    a.matrix
        .generate(|max, seed| inputs::kmeans_points(a.points, a.dims, max, seed))
}

/// Runs `ember kmeans`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::in_memory([&a.file])?;
    let points = Matrix::from_input(&input)?;
    if a.isolate.isolate {
        let (c, stats, run) = clustered_isolated(&a, &points)?;
        input.check_unchanged()?;
        return finish(&a, &c, points.rows, &stats, &run);
    }
    let rt = a.run.runtime()?;
    let run = |o: &ember::RunOptions| {
        kmeans::run(&rt, &points, a.params.params(), o, |p, s| {
            if a.verbose {
                eprintln!(
                    "iteration {:>4}: {:>4} means changed, {:.3} s",
                    p.iteration, p.changed, s.total_secs
                );
            }
        })
    };
    // The iteration lines are the progress of a verbose run.
    let (c, stats) = if a.verbose {
        run(&a.run.options())
    } else {
        progress_while(a.run.options(), "iteration", run)
    }?;
    // The runs read the matrix's map, not an input of theirs.
    input.check_unchanged()?;
    finish(&a, &c, points.rows, &stats, &a.run)
}

/// Writes the clusters and the summary, and reports the stats.
fn finish(a: &Args, c: &Clustering, rows: usize, stats: &Stats, run: &RunArgs) -> Result<()> {
    write_output(a.output.as_deref(), |w| write_clusters(c, w))?;
    summarize(
        c,
        rows,
        stats.total_secs,
        &mut summary_out(a.output.as_deref()),
    )?;
    run.report(stats)
}

/// `ember kmeans --isolate`: the parent runs Lloyd's loop, and each
/// iteration's cluster sums come from the registry's `kmeans-rows` job
/// mapped and reduced in worker processes, over the points file's values
/// (past its header, read in place by every worker) with the means the
/// parent writes to a temporary file.
fn clustered_isolated(a: &Args, points: &Matrix<'_>) -> Result<(Clustering, Stats, RunArgs)> {
    let means_file = isolated::JobFile::new()?;
    let mut session = isolated::Session::kept();
    let job_args = ["--means".to_string(), means_file.name().to_string()];
    let files = [a.file.clone()];
    let (mut total, mut run) = (Stats::default(), a.run.clone());
    let started = Instant::now();
    let c = kmeans::run_stepped(
        points,
        a.params.params(),
        |means| -> Result<Vec<(usize, ClusterSum)>> {
            means_file.write(&means_text(means, points.cols))?;
            let iso = isolated::run_past_header::<u32, ClusterSum>(
                &mut session,
                &a.run,
                &a.isolate,
                "kmeans-rows",
                &job_args,
                &files,
                HEADER_BYTES as u64,
            )?;
            ember_apps::multijob::add_stats(&mut total, &iso.stats);
            run = iso.run;
            Ok(iso
                .pairs
                .into_iter()
                .map(|(c, s)| (c as usize, s))
                .collect())
        },
        |p| {
            if a.verbose {
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "iteration {:>4}: {:>4} means changed, {secs:.3} s",
                    p.iteration, p.changed
                );
            }
        },
    )?;
    total.total_secs = started.elapsed().as_secs_f64();
    Ok((c, total, run))
}

/// The means as a means file of the `kmeans` streaming jobs: one line per
/// cluster, its coordinates separated by commas.
fn means_text(means: &[i32], dims: usize) -> Vec<u8> {
    let mut text = Vec::new();
    for mean in means.chunks_exact(dims) {
        let coords: Vec<String> = mean.iter().map(i32::to_string).collect();
        text.extend_from_slice(coords.join(",").as_bytes());
        text.push(b'\n');
    }
    text
}

/// Writes one line per cluster: index, size, mean.
fn write_clusters(c: &Clustering, w: &mut dyn Write) -> Result<()> {
    for (i, size) in c.sizes.iter().enumerate() {
        write!(w, "{i}\t{size}")?;
        for x in c.mean(i) {
            write!(w, "\t{x}")?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// Prints the outcome, the spread of cluster sizes and the largest clusters.
fn summarize(c: &Clustering, points: usize, secs: f64, out: &mut dyn Write) -> Result<()> {
    let k = c.sizes.len();
    let outcome = if c.converged {
        "converged after"
    } else {
        "not converged after"
    };
    writeln!(
        out,
        "k-means: {points} points x {} dims, {k} clusters: {outcome} {} iterations in {secs:.3} s",
        c.dims, c.iterations
    )?;
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(c.sizes[i]), i));
    let size = |rank: usize| c.sizes[order[rank]];
    writeln!(
        out,
        "cluster sizes: largest {}, median {}, smallest {}",
        size(0),
        size(k / 2),
        size(k - 1)
    )?;
    for &i in order.iter().take(5) {
        writeln!(
            out,
            "cluster {i:>4}: {:>8} points, mean {:?}",
            c.sizes[i],
            c.mean(i)
        )?;
    }
    Ok(())
}
