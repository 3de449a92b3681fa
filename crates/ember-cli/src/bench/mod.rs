//! `ember bench`: ember against baselines, as ratios measured in one run.
//!
//! Each workload's benchmark lives in its own file and uses the helpers
//! here: [`interleaved`] times the contenders round-robin (so noise on a
//! shared machine hits all alike) and [`Report`] prints the table.

use anyhow::Result;
use clap::Subcommand;

mod pipeline;
mod wordcount;

/// The benchmarks.
#[derive(Subcommand)]
pub(crate) enum Bench {
    /// Word count vs the single-threaded C reference (reference/wc_baseline.c).
    Wordcount(wordcount::Args),
    /// Barrier vs pipelined map and reduce on the same inputs.
    Pipeline(pipeline::Args),
}

/// Runs a benchmark.
pub(crate) fn run(b: Bench) -> Result<()> {
    match b {
        Bench::Wordcount(a) => wordcount::run(a),
        Bench::Pipeline(a) => pipeline::run(a),
    }
}

/// The median of some timings.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs every contender `runs` times, round-robin, and returns each one's
/// median seconds. A contender returns the seconds it measured itself.
pub(crate) fn interleaved(
    runs: usize,
    contenders: &mut [&mut dyn FnMut() -> Result<f64>],
) -> Result<Vec<f64>> {
    let mut times = vec![Vec::new(); contenders.len()];
    for _ in 0..runs.max(1) {
        for (c, t) in contenders.iter_mut().zip(&mut times) {
            t.push(c()?);
        }
    }
    Ok(times.into_iter().map(median).collect())
}

/// Times a closure once, in seconds.
pub(crate) fn timed(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = std::time::Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

/// The default "all threads" count.
pub(crate) fn all_threads(t: Option<usize>) -> usize {
    t.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// One benchmark's table: rows of (contender, seconds), with throughput and
/// the ratio to the first row (the baseline).
pub(crate) struct Report {
    /// Title line: workload and input.
    pub(crate) title: String,
    /// Work done per run in `unit`s (e.g. MB, points), for the rate column.
    pub(crate) amount: f64,
    /// Unit of `amount` (rate column is `unit/s`).
    pub(crate) unit: &'static str,
    /// Contenders and their median seconds; the first is the baseline.
    pub(crate) rows: Vec<(String, f64)>,
}

impl Report {
    /// Prints the table.
    pub(crate) fn print(&self) {
        println!("{}", self.title);
        let rate = format!("{}/s", self.unit);
        println!(
            "{:<30} {:>9} {:>12} {:>9}",
            "contender", "time s", rate, "speedup"
        );
        let base = self.rows.first().map_or(1.0, |r| r.1);
        for (name, t) in &self.rows {
            println!(
                "{name:<30} {t:>9.3} {:>12.1} {:>8.2}x",
                self.amount / t,
                base / t
            );
        }
    }
}
