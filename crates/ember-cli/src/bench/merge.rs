//! `ember bench merge`: the one-pass p-way merge against the earlier
//! concatenate-and-sort merge, on the sort workload (where the merge is the
//! bottleneck, SupMR section IV), both in one run.

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{Input, MergeKind, RunOptions, Runtime, Stats};
use ember_apps::sort::{sort_order_input, SortSpec};

use super::{all_threads, interleaved, median, timed, BenchArgs, Report};
use crate::sort::cached_records;

/// `ember bench merge`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Number of 100-byte records to sort.
    #[arg(long, default_value_t = SortSpec::default().records)]
    records: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench merge`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::file(&cached_records(a.records)?)?;
    let data = input.part_bytes(0);
    let rt = Runtime::builder()
        .threads(all_threads(a.bench.threads))
        .build()?;
    let mut merges = [Vec::new(), Vec::new()];
    let mut last: Option<Stats> = None;
    let mut first_order = None;
    let mut run = |i: usize, kind: MergeKind| {
        let opts = RunOptions {
            merge: Some(kind),
            ..Default::default()
        };
        let mut stats = None;
        let t = timed(|| {
            let order = sort_order_input(&rt, &Input::bytes(data), &opts)?;
            match &first_order {
                None => first_order = Some(order.keys().collect::<Vec<_>>()),
                Some(o) if !o.iter().copied().eq(order.keys()) => {
                    bail!("the two merges ordered the records differently")
                }
                Some(_) => {}
            }
            stats = Some(order.stats);
            Ok(())
        })?;
        let stats = stats.expect("set by the run");
        merges[i].push(stats.merge_secs);
        last = Some(stats);
        Ok(t)
    };
    // Both contenders call `run`, which keeps the state they share (the
    // first order, to compare with, and the merge times).
    let run = std::cell::RefCell::new(&mut run);
    let times = interleaved(
        a.bench.runs,
        &mut [
            &mut || (run.borrow_mut())(0, MergeKind::ConcatSort),
            &mut || (run.borrow_mut())(1, MergeKind::PWay),
        ],
    )?;
    // Each list starts with the untimed warm-up run.
    let [m0, m1] = merges.map(|m| median(m[1..].to_vec()));
    Report {
        title: format!(
            "merge: sort of {} records ({:.0} MB), {} threads (whole sort job; merge phase alone, \
             medians: concat-sort {:.3} s, p-way {:.3} s, {:.2}x)",
            a.records,
            data.len() as f64 / 1e6,
            rt.threads(),
            m0,
            m1,
            m0 / m1
        ),
        amount: data.len() as f64 / 1e6,
        unit: "MB",
        rows: vec![
            ("concat + parallel sort".into(), times[0]),
            ("one-pass p-way merge".into(), times[1]),
        ],
    }
    .print();
    if let Some(s) = &last {
        println!("\np-way run, phases:\n{s}");
    }
    Ok(())
}
