//! `ember kmeans` and `ember gen kmeans`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_apps::kmeans::{self, Clustering, Params};
use ember_apps::matrix::MatrixSpec;

use crate::common::{summary_out, write_output, RunArgs};
use crate::numeric;
use crate::progress::progress_while;

/// `ember kmeans`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Points file: an ember matrix file, one point per row (`ember gen kmeans`).
    file: PathBuf,
    #[command(flatten)]
    params: ParamArgs,
    /// Write every cluster, one per line: `cluster<TAB>size<TAB>mean
    /// coordinates...` (`-`: standard output).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Print one line per iteration to standard error.
    #[arg(long, short = 'v')]
    verbose: bool,
    #[command(flatten)]
    run: RunArgs,
}

/// The clustering parameters, shared with `ember bench kmeans`.
#[derive(ClapArgs, Clone, Copy)]
pub(crate) struct ParamArgs {
    /// Number of clusters (the first this many points are the initial means).
    #[arg(long, short = 'k', default_value_t = Params::default().clusters)]
    pub(crate) clusters: usize,
    /// Stop after this many iterations if not converged.
    #[arg(long, default_value_t = Params::default().max_iterations)]
    pub(crate) max_iter: usize,
}

impl ParamArgs {
    /// The library's parameters.
    pub(crate) fn params(&self) -> Params {
        Params {
            clusters: self.clusters,
            max_iterations: self.max_iter,
        }
    }
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

/// The WORKLOADS.md points (uniform in 0..max) as a matrix spec.
pub(crate) fn points_spec(points: u64, dims: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(dims >= 1, "--dims must be at least 1");
    numeric::uniform(points, dims, max, seed)
}

/// Runs `ember gen kmeans`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    a.matrix
        .generate(|max, seed| points_spec(a.points, a.dims, max, seed))
}

/// Runs `ember kmeans`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = numeric::open(&a.file)?;
    let points = numeric::matrix(&input)?;
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
    write_output(a.output.as_deref(), |w| write_clusters(&c, w))?;
    summarize(
        &c,
        points.rows,
        stats.total_secs,
        &mut summary_out(a.output.as_deref()),
    )?;
    a.run.report(&stats)
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
