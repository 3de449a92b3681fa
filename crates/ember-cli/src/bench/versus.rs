//! The shape of a workload bench: its baseline (the first row, which the
//! speedups are against), ember on one thread and on all threads, then any
//! other rows (another implementation, or a limit such as a plain memory
//! read of the input, [`memory_read`]); after the table, the bar line
//! ([`Versus::print_speedup`], [`Versus::print_memory_share`]) and the
//! phases of ember's last run.

use std::hint::black_box;
use std::path::Path;
use std::rc::Rc;

use anyhow::{ensure, Result};
use ember::{Input, Runtime, Stats};

use super::harness::{measure, print_table, Contender, Measured, Row};
use super::machine::all_threads;
use super::BenchArgs;

/// The rows of a workload bench, as [`versus`] measured them.
pub(crate) struct Versus {
    /// Threads of the "all threads" row.
    pub(crate) threads: usize,
    /// The baseline, ember on one thread, ember on all threads, then the
    /// other rows.
    pub(crate) rows: Vec<Row>,
}

/// The name of ember's row on `threads` threads.
pub(crate) fn ember_name(threads: usize) -> String {
    match threads {
        1 => "ember, 1 thread".into(),
        n => format!("ember, {n} threads"),
    }
}

/// Measures `baseline`, ember on one thread and on all threads (`run`
/// given a runtime of that many workers), then `more`, as
/// [`measure`] does.
pub(crate) fn versus<'a>(
    bench: BenchArgs,
    baseline: Contender<'a>,
    run: impl Fn(&Runtime) -> Result<Measured> + 'a,
    more: Vec<Contender<'a>>,
) -> Result<Versus> {
    let threads = all_threads(bench.threads);
    let run = Rc::new(run);
    let mut contenders = vec![baseline];
    for n in [1, threads] {
        let rt = Runtime::builder().threads(n).build()?;
        let run = Rc::clone(&run);
        contenders.push(Contender::new(ember_name(n), move || run(&rt)));
    }
    contenders.extend(more);
    Ok(Versus {
        threads,
        rows: measure(bench.runs, contenders)?,
    })
}

/// Runs `run` once, timed (see [`Measured::of`]), then checks its result
/// against `want`, the sequential program's; `who` names the contender in
/// the error.
pub(crate) fn checked<T: PartialEq>(
    want: &T,
    who: &str,
    run: impl FnOnce() -> Result<(T, Option<Stats>)>,
) -> Result<Measured> {
    let mut got = None;
    let measured = Measured::of(|| {
        let (result, stats) = run()?;
        got = Some(result);
        Ok(stats)
    })?;
    ensure!(
        got.as_ref() == Some(want),
        "{who}: the result differs from the sequential program's"
    );
    Ok(measured)
}

/// [`versus`] with the sequential program as the baseline: `want` is its
/// first (untimed) result, which every run of `sequential` and of `ember`
/// must give again.
pub(crate) fn against_sequential<'a, T: PartialEq>(
    bench: BenchArgs,
    want: &'a T,
    sequential: impl Fn() -> Result<T> + 'a,
    ember: impl Fn(&Runtime) -> Result<(T, Stats)> + 'a,
    more: Vec<Contender<'a>>,
) -> Result<Versus> {
    let baseline = Contender::new("sequential", move || {
        checked(want, "sequential", || Ok((sequential()?, None)))
    });
    let ember = move |rt: &Runtime| {
        checked(want, &ember_name(rt.threads()), || {
            let (result, stats) = ember(rt)?;
            Ok((result, Some(stats)))
        })
    };
    versus(bench, baseline, ember, more)
}

impl Versus {
    /// Ember's row on one thread.
    pub(crate) fn ember_one(&self) -> &Row {
        &self.rows[1]
    }

    /// Ember's row on all threads.
    pub(crate) fn ember_all(&self) -> &Row {
        &self.rows[2]
    }

    /// Prints the table (see [`print_table`]).
    pub(crate) fn print(&self, title: &str, amount: f64, unit: &str) {
        print_table(title, amount, unit, &self.rows);
    }

    /// Prints the bar line: how many times the baseline's time ember's
    /// all-threads time is, of the medians and of the best runs; `baseline`
    /// names it.
    pub(crate) fn print_speedup(&self, baseline: &str) {
        let (base, ember) = (self.rows[0].timing, self.ember_all().timing);
        println!(
            "\nember on {} threads: {:.2}x the {baseline} (medians), {:.2}x (best runs)",
            self.threads,
            base.median / ember.median,
            base.best / ember.best
        );
    }

    /// Prints the limit lines of a memory-bound workload: ember's bandwidth
    /// on one and on all threads as a share of the [`memory_read`] rows',
    /// which follow ember's; `bytes` is the input's size.
    pub(crate) fn print_memory_share(&self, bytes: u64) {
        let gbs = |t: f64| bytes as f64 / t / 1e9;
        for (threads, ember, read) in [(1, 1, 3), (self.threads, 2, 4)] {
            let (ember, read) = (self.rows[ember].timing, self.rows[read].timing);
            println!(
                "ember on {threads} thread(s): {:.2} GB/s = {:.0}% of the memory-read loop's \
                 {:.2} GB/s (medians; best runs: {:.0}%)",
                gbs(ember.median),
                100.0 * read.median / ember.median,
                gbs(read.median),
                100.0 * read.best / ember.best,
            );
        }
    }
}

/// The limit of a memory-bound job on `file`: a plain memory-read loop
/// over it, on one thread and on `threads`, each run mapping the file
/// afresh as the other contenders do (so page faults are paid alike).
pub(crate) fn memory_read(file: &Path, threads: usize) -> Vec<Contender<'_>> {
    [1, threads]
        .into_iter()
        .map(|n| {
            let name = match n {
                1 => "memory read, 1 thread".to_string(),
                n => format!("memory read, {n} threads"),
            };
            Contender::new(name, move || {
                Measured::of(|| read_fresh_map(file, n).map(|()| None))
            })
        })
        .collect()
}

/// Sums the file's 8-byte words from a fresh map, the file cut into one
/// contiguous piece per thread: the bandwidth ceiling.
fn read_fresh_map(file: &Path, threads: usize) -> Result<()> {
    let input = Input::file(file)?;
    let data = input.part_bytes(0);
    let piece = data.len().div_ceil(threads).next_multiple_of(8).max(8);
    let sum = std::thread::scope(|s| {
        let handles: Vec<_> = data
            .chunks(piece)
            .map(|c| {
                s.spawn(move || {
                    c.chunks_exact(8)
                        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                        .fold(0u64, u64::wrapping_add)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a summing thread panicked"))
            .fold(0u64, u64::wrapping_add)
    });
    black_box(sum);
    Ok(())
}

/// Reads the files once, so that every contender reads them from the page
/// cache; returns how many bytes they hold.
pub(crate) fn warm(files: &[impl AsRef<Path>]) -> Result<u64> {
    let mut bytes = 0;
    for f in files {
        bytes += std::fs::read(f)?.len() as u64;
    }
    Ok(bytes)
}
