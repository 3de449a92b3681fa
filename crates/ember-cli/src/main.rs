//! `ember`: run MapReduce workloads and generate their inputs (the
//! benchmarks are `ember-bench`, `crates/ember-bench`).

#![deny(clippy::undocumented_unsafe_blocks)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ember_cli::output;

mod common;
mod gen;
mod hdfs;
mod histogram;
mod inverted_index;
mod isolated;
mod kmeans;
mod linear_regression;
mod lines;
mod matrix_multiply;
mod numeric;
mod pca;
mod progress;
mod report_command;
mod sort;
mod stream;
mod string_match;
mod text;
mod wordcount;

/// ember: a MapReduce runtime for one large shared-memory machine.
#[derive(Parser)]
#[command(name = "ember", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Sync every output file to disk before it takes its name (files are
    /// always written whole: to a temporary file, renamed when complete).
    #[arg(long, global = true)]
    sync: bool,
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's arguments are defined only when it is the one run
/// (`defer`): a command starts without building the whole tree.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Generate a ~100 MB Zipf text corpus once (cached) and count its words.
    Demo(wordcount::DemoArgs),
    /// Count words (runs of ASCII letters, lower-cased) in files.
    Wordcount(wordcount::Args),
    /// RGB histogram of a 24-bit BMP image.
    Histogram(histogram::Args),
    /// Least-squares line through points stored as pairs of signed bytes.
    LinearRegression(linear_regression::Args),
    /// Find which lines of a keys file are given target words.
    StringMatch(string_match::Args),
    /// Build an inverted index: word -> ids of the files or lines it occurs in.
    InvertedIndex(inverted_index::Args),
    /// Sort 100-byte records by their 10-byte keys (gensort layout).
    Sort(sort::Args),
    /// Cluster integer points with k-means (one MapReduce job per iteration).
    Kmeans(kmeans::Args),
    /// Means and covariance matrix of the rows of an integer matrix (two jobs).
    Pca(pca::Args),
    /// Multiply two integer matrices (a map-only job).
    MatrixMultiply(matrix_multiply::Args),
    /// Run built-in jobs as the mapper, combiner and reducer of Hadoop
    /// Streaming, Spark's `pipe` or a shell pipeline (`key<TAB>value` lines),
    /// or a whole job of commands on all cores (`stream run`).
    #[command(subcommand)]
    Stream(stream::Stream),
    /// Write a self-contained HTML report of a run from its --stats-json
    /// and/or --trace files.
    Report(report_command::Args),
    /// Generate reproducible inputs for the workloads.
    #[command(subcommand)]
    Gen(gen::Gen),
}

fn main() -> ExitCode {
    // An isolated map worker (`--isolate`) runs its split and exits here.
    ember::isolate::worker_hook(&ember_apps::stream::registry());
    output::die_on_broken_pipe();
    common::quiet_worker_panics();
    let cli = Cli::parse();
    output::set_sync(cli.sync);
    // Word count starts the signal thread only when it needs one (see
    // `RunArgs::runtime_for`); every other command starts it now.
    let lazy = matches!(cli.command, Command::Wordcount(_));
    if let Err(e) = output::on_signals(stream::kill_children).and_then(|()| match lazy {
        true => Ok(()),
        false => output::watch(),
    }) {
        eprintln!("ember: cannot handle signals: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Demo(a) => wordcount::demo(a),
        Command::Wordcount(a) => wordcount::run(a),
        Command::Report(a) => report_command::run(a),
        Command::Stream(s) => stream::run(s),
        Command::Histogram(a) => histogram::run(a),
        Command::LinearRegression(a) => linear_regression::run(a),
        Command::StringMatch(a) => string_match::run(a),
        Command::InvertedIndex(a) => inverted_index::run(a),
        Command::Sort(a) => sort::run(a),
        Command::Kmeans(a) => kmeans::run(a),
        Command::Pca(a) => pca::run(a),
        Command::MatrixMultiply(a) => matrix_multiply::run(a),
        Command::Gen(g) => gen::run(g),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::yield_to_signal();
            eprintln!("ember: {}", common::one_line(&e));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of every command and subcommand (unique argument
    /// and group names, ...), which a release build skips and a debug
    /// build runs only for the subcommand it parses.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
