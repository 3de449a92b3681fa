//! `ember bench sort`: ember vs the sequential sort and rayon's parallel
//! sort of the same records.
//!
//! Every contender goes from the mapped input to the sorted records in an
//! output buffer that is reused across runs (fresh memory is expensive to
//! fault in on this kind of VM, and every contender would pay it alike).

use std::cell::RefCell;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime, Stats};
use ember_apps::sort::{parallel_sort_into, sequential_into, sort_order, SortSpec, RECORD_LEN};

use crate::sort::cached_records;

use super::{all_threads, contender_rows, interleaved, timed, BenchArgs, Report};

/// `ember bench sort`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help(
    "Threads for the \"all threads\" rows (default: all CPUs)"
)))]
pub(crate) struct Args {
    /// Number of 100-byte records (the WORKLOADS.md shape: 10 million, 1 GB).
    #[arg(long, default_value_t = SortSpec::default().records)]
    records: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Checks a contender's output against the sequential sort's.
fn verify(want: &[u8], got: &[u8], what: &str) -> Result<()> {
    if got != want {
        bail!("{what}: the output differs from the sequential sort's");
    }
    Ok(())
}

/// One ember run: its time split into the run and the gather.
struct EmberRun {
    stats: Stats,
    gather_secs: f64,
}

/// Runs `ember bench sort`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::file(&cached_records(a.records)?)?;
    let data = input.part_bytes(0);
    let all = all_threads(a.bench.threads);
    // Warm the mapping; the untimed first sequential run is the oracle.
    let want = ember_apps::sort::sequential(data)?;
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(all).build()?;
    let out = RefCell::new(want.clone());
    let mut recs = Vec::with_capacity(data.len() / RECORD_LEN);
    let ember = |rt: &Runtime, what: &str| -> Result<(f64, EmberRun)> {
        let mut out = out.borrow_mut();
        let mut run = None;
        let t = timed(|| {
            let order = sort_order(rt, data, &RunOptions::default())?;
            let g = Instant::now();
            order.gather_into(rt, data, &mut out);
            run = Some(EmberRun {
                stats: order.stats,
                gather_secs: g.elapsed().as_secs_f64(),
            });
            Ok(())
        })?;
        verify(&want, &out, what)?;
        Ok((t, run.expect("set by the run")))
    };
    let (mut last1, mut lastn) = (None, None);
    let times = interleaved(
        a.bench.runs,
        &mut [
            &mut || {
                let mut out = out.borrow_mut();
                let t = timed(|| Ok(sequential_into(data, &mut out)?))?;
                verify(&want, &out, "sequential")?;
                Ok(t)
            },
            &mut || {
                let (t, run) = ember(&rt1, "ember, 1 thread")?;
                last1 = Some(run);
                Ok(t)
            },
            &mut || {
                let (t, run) = ember(&rtn, "ember, all threads")?;
                lastn = Some(run);
                Ok(t)
            },
            &mut || {
                let t = timed(|| Ok(parallel_sort_into(data, &pool, &mut recs)?))?;
                verify(&want, recs.as_flattened(), "rayon par_sort")?;
                Ok(t)
            },
        ],
    )?;
    Report {
        title: format!(
            "sort, {} records of {RECORD_LEN} bytes ({:.1} MB)",
            a.records,
            data.len() as f64 / 1e6,
        ),
        amount: data.len() as f64 / 1e6,
        unit: "MB",
        rows: {
            let mut rows = contender_rows("sequential (1 thread)", &times, all);
            rows.push((format!("rayon par_sort, {all} threads"), times[3]));
            rows
        },
    }
    .print();
    for (n, last) in [(1, last1), (all, lastn)] {
        if let Some(r) = last {
            println!(
                "\nember, {n} thread(s), phases of the last run (map: keys extracted and routed to \
                 sampled key ranges; reduce: each range sorted; merge: the ranges in order):\n{}\n\
                 gather    {:>10.3} s  (records copied in key order, after the run)",
                r.stats, r.gather_secs
            );
        }
    }
    Ok(())
}
