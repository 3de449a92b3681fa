//! `ember-bench`: ember against baselines, as ratios measured in one run.
//!
//! [`harness`] times a bench's contenders (interleaved round-robin, so
//! noise on a shared machine hits all alike) and prints their table;
//! [`versus`] is the shape of a workload bench (its baseline, ember on one
//! thread and on all threads, other rows, the bar line); [`machine`] says
//! what the machine gave the bench; [`roofline`] measures each workload's
//! limit in the same run, and [`rss`] each row's peak memory. Each
//! workload's file declares its input, its baselines, its ember
//! contenders, its limits and its bar line.
//!
//! The inputs are generated once into the cache folder by the `ember`
//! command's library ([`ember_cli::inputs`]). The benches that time the
//! `ember` command itself as a child process (`sort`, `inverted-index`,
//! `spill`, `isolate`, and so `all`) run the one built beside this binary
//! ([`rss::ember`]): `cargo build --release` builds it, `cargo build
//! --release -p ember-bench` this one.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use ember_cli::output;

mod compressed;
mod containers;
mod harness;
mod histogram;
mod ingest;
mod inverted_index;
mod isolate;
mod kmeans;
mod linear_regression;
mod machine;
mod matrix_multiply;
mod merge;
mod numa;
mod pca;
mod perf;
mod pipeline;
mod roofline;
mod rss;
mod sort;
mod spill;
mod string_match;
mod versus;
mod wordcount;

/// ember-bench: ember against its baselines and its limits, ratios
/// measured in one run (a workload's bench has the name of its `ember`
/// command).
#[derive(Parser)]
#[command(name = "ember-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

/// The benchmarks. A workload's bench has the name of its command.
#[derive(Subcommand)]
enum Bench {
    /// Every workload of the suite in turn (wordcount, histogram,
    /// linear-regression, string-match, inverted-index, sort, kmeans, pca,
    /// matrix-multiply), each with its default sizes.
    All,
    /// Every container and Auto, inverted index on Metis' four input shapes.
    Containers(containers::Args),
    /// The one-pass p-way merge vs concat-and-sort, on the sort workload.
    Merge(merge::Args),
    /// Read-then-map vs the chunked ingest pipeline on a throttled reader.
    Ingest(ingest::Args),
    /// Word count on gzip, zstd and bzip2 copies of the corpus vs the
    /// decompressor piped into `ember wordcount -` and vs the decompressor
    /// alone.
    Compressed(compressed::Args),
    /// Word count vs the single-threaded C reference (reference/wc_baseline.c).
    Wordcount(wordcount::Args),
    /// Histogram vs the sequential one and a plain memory read of the image.
    Histogram(histogram::Args),
    /// Linear regression vs the sequential one and a plain memory read.
    #[command(alias = "linreg")]
    LinearRegression(linear_regression::Args),
    /// String match vs the sequential one.
    #[command(alias = "strmatch")]
    StringMatch(string_match::Args),
    /// Inverted index vs its sequential baselines (plain and partitioned).
    #[command(alias = "invindex")]
    InvertedIndex(inverted_index::Args),
    /// Sort vs its sequential baseline and a rayon parallel sort.
    Sort(sort::Args),
    /// k-means (WORKLOADS.md shape) vs the sequential implementation.
    Kmeans(kmeans::Args),
    /// PCA (WORKLOADS.md shape) vs the sequential implementation.
    Pca(pca::Args),
    /// Matrix multiply (WORKLOADS.md shape) vs the sequential implementation.
    #[command(alias = "matmul")]
    MatrixMultiply(matrix_multiply::Args),
    /// Barrier vs pipelined map and reduce on the same inputs.
    Pipeline(pipeline::Args),
    /// Word count and inverted index spilling under a memory limit vs
    /// unlimited vs reading and writing the input once.
    Spill(spill::Args),
    /// Word count, inverted index and histogram with every split mapped,
    /// and every key range reduced, in a worker process (`--isolate`) vs
    /// in threads; with --perf, the kernel's share and its page faults.
    Isolate(isolate::Args),
    /// Per-node split queues vs one queue (simulated nodes, or the
    /// machine's with --machine): time, steals and locality hit rate.
    Numa(numa::Args),
}

fn main() -> ExitCode {
    output::die_on_broken_pipe();
    let cli = Cli::parse();
    // On Ctrl-C, the signal thread removes an input half written to the
    // cache and the spill directories in use.
    if let Err(e) = output::on_signals(|| {}).and_then(|()| output::watch()) {
        eprintln!("ember-bench: cannot handle signals: {e}");
        return ExitCode::FAILURE;
    }
    match run(cli.bench) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::yield_to_signal();
            eprintln!("ember-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a benchmark, then says what the machine gave it
/// ([`machine::around`]); `all` runs each bench of the suite so.
fn run(b: Bench) -> Result<()> {
    if times_the_command(&b) {
        // Found before the bench runs, not after minutes of it.
        rss::ember()?;
    }
    if matches!(b, Bench::All) {
        // Each bench of the suite says what the machine gave it.
        return all();
    }
    machine::around(|| run_one(b))
}

/// Whether the bench runs the `ember` command as a child process (for a
/// row, or for the peak memory of the command a user runs).
fn times_the_command(b: &Bench) -> bool {
    matches!(
        b,
        Bench::All
            | Bench::Sort(_)
            | Bench::InvertedIndex(_)
            | Bench::Spill(_)
            | Bench::Isolate(_)
            | Bench::Compressed(_)
    )
}

fn run_one(b: Bench) -> Result<()> {
    match b {
        Bench::All => all(),
        Bench::Ingest(a) => ingest::run(a),
        Bench::Compressed(a) => compressed::run(a),
        Bench::Merge(a) => merge::run(a),
        Bench::Containers(a) => containers::run(a),
        Bench::Wordcount(a) => wordcount::run(a),
        Bench::Histogram(a) => histogram::run(a),
        Bench::LinearRegression(a) => linear_regression::run(a),
        Bench::StringMatch(a) => string_match::run(a),
        Bench::InvertedIndex(a) => inverted_index::run(a),
        Bench::Sort(a) => sort::run(a),
        Bench::Kmeans(a) => kmeans::run(a),
        Bench::Pca(a) => pca::run(a),
        Bench::MatrixMultiply(a) => matrix_multiply::run(a),
        Bench::Pipeline(a) => pipeline::run(a),
        Bench::Spill(a) => spill::run(a),
        Bench::Isolate(a) => isolate::run(a),
        Bench::Numa(a) => numa::run(a),
    }
}

/// The workload benches `ember-bench all` runs, in order.
const SUITE: [&str; 9] = [
    "wordcount",
    "histogram",
    "linear-regression",
    "string-match",
    "inverted-index",
    "sort",
    "kmeans",
    "pca",
    "matrix-multiply",
];

/// Runs every bench of [`SUITE`] with its defaults.
fn all() -> Result<()> {
    for (i, name) in SUITE.iter().enumerate() {
        println!("\n=== ember-bench {name} ({} of {})", i + 1, SUITE.len());
        // The bench as the command line names it, with its defaults.
        run(Cli::try_parse_from(["ember-bench", name])?.bench)?;
    }
    roofline::print_summary();
    Ok(())
}

/// The options every workload bench takes. The help of `--threads` is
/// right for a bench with one "all threads" row; others reword it with
/// `#[command(mut_arg("threads", ...))]`.
#[derive(Args, Clone, Copy)]
pub(crate) struct BenchArgs {
    /// Runs of each contender (default: at least 3, then more rounds, up to
    /// 20, until the timed runs add up to 5 s). The table gives each one's
    /// median and best.
    #[arg(long)]
    pub(crate) runs: Option<usize>,
    /// Threads for the "all threads" row (default: all CPUs).
    #[arg(long, short = 't')]
    pub(crate) threads: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own checks of every subcommand (unique argument and group
    /// names, ...), which a release build skips.
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn the_suite_names_workload_benches() {
        for name in SUITE {
            let named = Cli::try_parse_from(["ember-bench", name]).unwrap();
            assert!(!matches!(named.bench, Bench::All), "{name}");
        }
    }

    #[test]
    fn the_earlier_short_names_still_parse() {
        for (old, new) in [
            ("linreg", "linear-regression"),
            ("strmatch", "string-match"),
            ("invindex", "inverted-index"),
            ("matmul", "matrix-multiply"),
        ] {
            let parse = |name| Cli::try_parse_from(["ember-bench", name]).unwrap().bench;
            assert_eq!(
                std::mem::discriminant(&parse(old)),
                std::mem::discriminant(&parse(new)),
                "{old}"
            );
        }
    }
}
