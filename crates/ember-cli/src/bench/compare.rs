//! The shape of the workload benchmarks: the sequential baseline, ember on
//! one thread and on all threads, and, for memory-bandwidth-bound jobs, a
//! plain memory-read loop over the same file on the same thread counts (the
//! ceiling such a job can reach). Every contender maps the file afresh in
//! each run, so page faults are paid alike.

use std::hint::black_box;
use std::path::Path;

use anyhow::Result;
use ember::{Input, Runtime, Stats};

use super::{all_threads, interleaved, speedup_line, timed, BenchArgs, Report};

/// What to compare.
pub(crate) struct Setup<'a> {
    /// Title line: workload and input.
    pub(crate) title: String,
    /// The input file.
    pub(crate) file: &'a Path,
    /// Runs of each contender and threads of the "all threads" rows.
    pub(crate) bench: BenchArgs,
    /// Also time the memory-read loop and report ember's bandwidth as a
    /// share of it.
    pub(crate) memory_read: bool,
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

/// Times the contenders (interleaved; medians and best runs) and prints
/// the table, the bandwidth shares, and the stats of ember's last
/// all-threads run.
/// `sequential` and `ember` check their own results.
pub(crate) fn compare(
    setup: Setup<'_>,
    sequential: &dyn Fn() -> Result<()>,
    ember: &dyn Fn(&Runtime) -> Result<Stats>,
) -> Result<()> {
    let all = all_threads(setup.bench.threads);
    let file = setup.file;
    let bytes = std::fs::metadata(file)?.len();
    // Warm the page cache so every contender reads from memory.
    std::fs::read(file)?;
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;
    let mut last = None;
    let mut seq = || timed(sequential);
    let mut ember1 = || timed(|| ember(&rt1).map(drop));
    let mut embern = || {
        timed(|| {
            last = Some(ember(&rtn)?);
            Ok(())
        })
    };
    let mut read1 = || timed(|| read_fresh_map(file, 1));
    let mut readn = || timed(|| read_fresh_map(file, all));
    let mut names = vec![
        "sequential".to_string(),
        "ember, 1 thread".to_string(),
        format!("ember, {all} threads"),
    ];
    let times = if setup.memory_read {
        names.push("memory read, 1 thread".into());
        names.push(format!("memory read, {all} threads"));
        interleaved(
            setup.bench.runs,
            &mut [&mut seq, &mut ember1, &mut embern, &mut read1, &mut readn],
        )?
    } else {
        interleaved(setup.bench.runs, &mut [&mut seq, &mut ember1, &mut embern])?
    };
    Report {
        title: setup.title,
        amount: bytes as f64 / 1e6,
        unit: "MB",
        rows: names.into_iter().zip(times.iter().copied()).collect(),
    }
    .print();
    println!();
    if setup.memory_read {
        let gbs = |t: f64| bytes as f64 / t / 1e9;
        for (threads, ember_t, read_t) in [(1, times[1], times[3]), (all, times[2], times[4])] {
            println!(
                "ember on {threads} thread(s): {:.2} GB/s = {:.0}% of the memory-read loop's {:.2} GB/s \
                 (medians; best runs: {:.0}%)",
                gbs(ember_t.median),
                100.0 * read_t.median / ember_t.median,
                gbs(read_t.median),
                100.0 * read_t.best / ember_t.best,
            );
        }
    } else {
        println!(
            "{}",
            speedup_line(all, times[0], times[2], "sequential baseline")
        );
    }
    if let Some(s) = last {
        println!("\nember, {all} threads, phases of the last run:\n{s}");
    }
    Ok(())
}
