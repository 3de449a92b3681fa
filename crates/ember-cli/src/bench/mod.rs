//! `ember bench`: ember against baselines, as ratios measured in one run.
//!
//! Each workload's benchmark lives in its own file and uses the helpers
//! here: [`BenchArgs`] are the options they share, [`interleaved`] times
//! the contenders round-robin (so noise on a shared machine hits all alike),
//! [`Report`] prints the table and [`against_sequential`] does all three for
//! a job whose result can be compared with its sequential one.

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use ember::{Runtime, Stats};

mod compare;
mod containers;
mod histogram;
mod ingest;
mod inverted_index;
mod kmeans;
mod linreg;
mod machine;
mod matrix_multiply;
mod merge;
mod pca;
mod pipeline;
mod sort;
mod strmatch;
mod wordcount;

pub(crate) use machine::{all_threads, cpu_secs};

/// The benchmarks.
#[derive(Subcommand)]
pub(crate) enum Bench {
    /// Every workload of the suite in turn (word count, histogram, linreg,
    /// string match, inverted index, sort, k-means, PCA, matrix multiply),
    /// each with its default sizes.
    All,
    /// Every container and Auto, inverted index on Metis' four input shapes.
    Containers(containers::Args),
    /// The one-pass p-way merge vs concat-and-sort, on the sort workload.
    Merge(merge::Args),
    /// Read-then-map vs the chunked ingest pipeline on a throttled reader.
    Ingest(ingest::Args),
    /// Word count vs the single-threaded C reference (reference/wc_baseline.c).
    Wordcount(wordcount::Args),
    /// Histogram vs the sequential one and a plain memory read of the image.
    Histogram(histogram::Args),
    /// Linear regression vs the sequential one and a plain memory read.
    Linreg(linreg::Args),
    /// String match vs the sequential one.
    Strmatch(strmatch::Args),
    /// Inverted index vs its sequential baseline.
    Invindex(inverted_index::Args),
    /// Sort vs its sequential baseline and a rayon parallel sort.
    Sort(sort::Args),
    /// k-means (WORKLOADS.md shape) vs the sequential implementation.
    Kmeans(kmeans::Args),
    /// PCA (WORKLOADS.md shape) vs the sequential implementation.
    Pca(pca::Args),
    /// Matrix multiply (WORKLOADS.md shape) vs the sequential implementation.
    Matmul(matrix_multiply::Args),
    /// Barrier vs pipelined map and reduce on the same inputs.
    Pipeline(pipeline::Args),
}

/// Runs a benchmark, then says what the machine gave it
/// ([`machine::around`]); `all` runs each bench of the suite so.
pub(crate) fn run(b: Bench) -> Result<()> {
    if matches!(b, Bench::All) {
        // Each bench of the suite says what the machine gave it.
        return all();
    }
    machine::around(|| run_one(b))
}

fn run_one(b: Bench) -> Result<()> {
    match b {
        Bench::All => all(),
        Bench::Ingest(a) => ingest::run(a),
        Bench::Merge(a) => merge::run(a),
        Bench::Containers(a) => containers::run(a),
        Bench::Wordcount(a) => wordcount::run(a),
        Bench::Histogram(a) => histogram::run(a),
        Bench::Linreg(a) => linreg::run(a),
        Bench::Strmatch(a) => strmatch::run(a),
        Bench::Invindex(a) => inverted_index::run(a),
        Bench::Sort(a) => sort::run(a),
        Bench::Kmeans(a) => kmeans::run(a),
        Bench::Pca(a) => pca::run(a),
        Bench::Matmul(a) => matrix_multiply::run(a),
        Bench::Pipeline(a) => pipeline::run(a),
    }
}

/// The workload benches `ember bench all` runs, in order.
const SUITE: [&str; 9] = [
    "wordcount",
    "histogram",
    "linreg",
    "strmatch",
    "invindex",
    "sort",
    "kmeans",
    "pca",
    "matmul",
];

/// One bench as the command line names it, with its default arguments.
#[derive(Parser)]
struct Named {
    #[command(subcommand)]
    bench: Bench,
}

/// Runs every bench of [`SUITE`] with its defaults.
fn all() -> Result<()> {
    for (i, name) in SUITE.iter().enumerate() {
        println!("\n=== ember bench {name} ({} of {})", i + 1, SUITE.len());
        run(Named::try_parse_from(["ember bench", name])?.bench)?;
    }
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

/// The median of some (at least one) timings: the middle one, or the mean
/// of the middle two.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One contender's runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Timing {
    /// The median run's seconds.
    pub(crate) median: f64,
    /// The fastest run's seconds. Noise on a shared machine (another
    /// tenant on a vCPU's core, page reclaim) only ever adds time, so the
    /// fastest run is the closest to what the code does on a quiet machine;
    /// the median says what a user sees on this one.
    pub(crate) best: f64,
    /// How many runs.
    pub(crate) runs: usize,
}

impl Timing {
    /// The median and best of some (at least one) runs' seconds.
    pub(crate) fn of(v: Vec<f64>) -> Timing {
        Timing {
            best: v.iter().copied().fold(f64::INFINITY, f64::min),
            runs: v.len(),
            median: median(v),
        }
    }
}

/// Rounds [`interleaved`] runs when not told: at least `MIN_ROUNDS`, then
/// more until the runs add up to `AUTO_SECS`, at most `MAX_ROUNDS`. A short
/// bench (matrix multiply's runs take 0.1 s) thus gets enough runs that a
/// second or two of noise cannot move its median.
const MIN_ROUNDS: usize = 3;
const MAX_ROUNDS: usize = 20;
const AUTO_SECS: f64 = 5.0;

/// Runs every contender once untimed (the first run of a runtime or a
/// buffer pays for fresh memory and cold caches: k-means' first 2-thread
/// run took 0.50 s against 0.30 s after it), then round-robin, `runs`
/// rounds (`None`: as many as [`AUTO_SECS`] asks, see there), and returns
/// each one's [`Timing`]. A contender returns the seconds it measured
/// itself.
pub(crate) fn interleaved(
    runs: Option<usize>,
    contenders: &mut [&mut dyn FnMut() -> Result<f64>],
) -> Result<Vec<Timing>> {
    for c in contenders.iter_mut() {
        c()?;
    }
    let mut times = vec![Vec::new(); contenders.len()];
    let mut total = 0.0;
    for round in 1.. {
        for (c, t) in contenders.iter_mut().zip(&mut times) {
            let secs = c()?;
            total += secs;
            t.push(secs);
        }
        let done = match runs {
            Some(n) => round >= n,
            None => round >= MAX_ROUNDS || (round >= MIN_ROUNDS && total >= AUTO_SECS),
        };
        if done {
            break;
        }
    }
    Ok(times.into_iter().map(Timing::of).collect())
}

/// Times a closure once, in seconds.
pub(crate) fn timed(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = std::time::Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

/// One benchmark's table: rows of (contender, timing), with throughput and
/// the ratio to the first row (the baseline), of the medians and of the
/// best runs.
pub(crate) struct Report {
    /// Title line: workload and input (the number of runs is added).
    pub(crate) title: String,
    /// Work done per run in `unit`s (e.g. MB, points), for the rate column.
    pub(crate) amount: f64,
    /// Unit of `amount` (rate column is `unit/s`).
    pub(crate) unit: &'static str,
    /// Contenders and their timings; the first is the baseline.
    pub(crate) rows: Vec<(String, Timing)>,
}

/// The rows every workload bench starts with: its baseline (named
/// `baseline`), ember on 1 thread and ember on `all` threads, timed in
/// `times[0..3]` in that order.
pub(crate) fn contender_rows(
    baseline: &str,
    times: &[Timing],
    all: usize,
) -> Vec<(String, Timing)> {
    vec![
        (baseline.into(), times[0]),
        ("ember, 1 thread".into(), times[1]),
        (format!("ember, {all} threads"), times[2]),
    ]
}

/// The line that says how many times the baseline's time ember's
/// all-threads time is, of the medians and of the best runs.
pub(crate) fn speedup_line(all: usize, base: Timing, ember: Timing, baseline: &str) -> String {
    format!(
        "ember on {all} threads: {:.2}x the {baseline} (medians), {:.2}x (best runs)",
        base.median / ember.median,
        base.best / ember.best
    )
}

/// The outcome of [`against_sequential`].
pub(crate) struct Versus<T> {
    /// The sequential result, which every run matched.
    pub(crate) want: T,
    /// The options it ran with.
    bench: BenchArgs,
    /// The timings of the [`contender_rows`].
    times: Vec<Timing>,
    /// The stats of ember's last run on all threads.
    last: Option<Stats>,
}

/// Times the sequential baseline, ember on one thread and ember on all
/// threads (as [`interleaved`] does), checking every result against the
/// first, untimed sequential one; `what` names the result in the error.
pub(crate) fn against_sequential<T: PartialEq>(
    bench: BenchArgs,
    what: &str,
    sequential: impl Fn() -> Result<T>,
    ember: impl Fn(&Runtime) -> Result<(T, Stats)>,
) -> Result<Versus<T>> {
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder()
        .threads(all_threads(bench.threads))
        .build()?;
    let want = sequential()?;
    let check = |got: &T| -> Result<()> {
        if *got != want {
            bail!("ember's {what} differs from the sequential one");
        }
        Ok(())
    };
    let ember = |rt: &Runtime| -> Result<Stats> {
        let (got, stats) = ember(rt)?;
        check(&got)?;
        Ok(stats)
    };
    let mut last = None;
    let times = interleaved(
        bench.runs,
        &mut [
            &mut || timed(|| check(&sequential()?)),
            &mut || timed(|| ember(&rt1).map(drop)),
            &mut || {
                timed(|| {
                    last = Some(ember(&rtn)?);
                    Ok(())
                })
            },
        ],
    )?;
    Ok(Versus {
        want,
        bench,
        times,
        last,
    })
}

impl<T> Versus<T> {
    /// Prints the table (`title`, then the number of runs), the speedup
    /// and the stats of ember's last all-threads run, `of_last` saying what
    /// they cover.
    pub(crate) fn print(&self, title: &str, amount: f64, unit: &'static str, of_last: &str) {
        let all = all_threads(self.bench.threads);
        Report {
            title: title.into(),
            amount,
            unit,
            rows: contender_rows("sequential", &self.times, all),
        }
        .print();
        println!(
            "\n{}",
            speedup_line(all, self.times[0], self.times[2], "sequential baseline")
        );
        if let Some(s) = &self.last {
            println!("\nember, {all} threads, last run{of_last}:\n{s}");
        }
    }
}

impl Report {
    /// Prints the table.
    pub(crate) fn print(&self) {
        let runs = self.rows.first().map_or(0, |r| r.1.runs);
        println!("{}, {runs} runs each", self.title);
        let rate = format!("{}/s", self.unit);
        println!(
            "{:<30} {:>9} {:>9} {:>12} {:>9} {:>9}",
            "contender", "median s", "best s", rate, "speedup", "best"
        );
        let Some(&(_, base)) = self.rows.first() else {
            return;
        };
        for (name, t) in &self.rows {
            println!(
                "{name:<30} {:>9.3} {:>9.3} {:>12.1} {:>8.2}x {:>8.2}x",
                t.median,
                t.best,
                self.amount / t.median,
                base.median / t.median,
                base.best / t.best
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_is_the_median_and_the_fastest_run() {
        assert_eq!(median(vec![0.4, 0.1, 0.2, 0.3]), 0.25);
        let t = Timing::of(vec![0.3, 0.1, 0.5, 0.2, 0.9]);
        assert_eq!(
            t,
            Timing {
                median: 0.3,
                best: 0.1,
                runs: 5
            }
        );
    }

    /// Interleaves two contenders that say they took `secs` each, and
    /// returns how many rounds ran and the order they ran in.
    fn rounds(runs: Option<usize>, secs: f64) -> (usize, Vec<u8>) {
        let order = std::cell::RefCell::new(Vec::new());
        let mut a = || {
            order.borrow_mut().push(b'a');
            Ok(secs)
        };
        let mut b = || {
            order.borrow_mut().push(b'b');
            Ok(secs)
        };
        let t = interleaved(runs, &mut [&mut a, &mut b]).unwrap();
        assert_eq!(t[0].runs, t[1].runs);
        (t[0].runs, order.into_inner())
    }

    #[test]
    fn interleaved_runs_round_robin_as_many_rounds_as_asked() {
        let (n, order) = rounds(Some(4), 10.0);
        assert_eq!(n, 4);
        // The untimed warm-up round, then the four.
        assert_eq!(order, b"ababababab");
    }

    #[test]
    fn unasked_rounds_fill_the_time_budget_within_bounds() {
        // Long runs: the minimum; short ones: the maximum; in between,
        // until the runs add up to the budget.
        assert_eq!(rounds(None, 10.0).0, MIN_ROUNDS);
        assert_eq!(rounds(None, 0.001).0, MAX_ROUNDS);
        let secs = AUTO_SECS / 2.0 / 8.0;
        assert_eq!(rounds(None, secs).0, 8);
    }

    #[test]
    fn the_suite_names_workload_benches() {
        for name in SUITE {
            let named = Named::try_parse_from(["ember bench", name]).unwrap();
            assert!(!matches!(named.bench, Bench::All), "{name}");
        }
    }
}
