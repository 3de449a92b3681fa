//! `ember bench merge`: the one-pass p-way merge against the earlier
//! concatenate-and-sort merge, on the sort workload (where the merge is the
//! bottleneck, SupMR section IV), both in one run.

use std::cell::RefCell;

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::tune::MergeKind;
use ember::{Input, RunOptions, Runtime};
use ember_apps::sort::{sort_order_input, SortSpec};

use super::harness::{measure, median, print_table, Contender, Measured, Row};
use super::machine::all_threads;
use super::BenchArgs;
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
    // The order of the first run, which every run must give again.
    let first_order = RefCell::new(None);
    let contender = |name: &'static str, kind: MergeKind| {
        let (rt, first_order) = (&rt, &first_order);
        Contender::new(name, move || {
            let opts = RunOptions::default().merge(kind);
            Measured::of(|| {
                let order = sort_order_input(rt, &Input::bytes(data), &opts)?;
                let mut first = first_order.borrow_mut();
                let first = first.get_or_insert_with(|| order.keys().collect::<Vec<_>>());
                ensure!(
                    first.iter().copied().eq(order.keys()),
                    "the two merges ordered the records differently"
                );
                Ok(Some(order.stats))
            })
        })
    };
    let rows = measure(
        a.bench.runs,
        vec![
            contender("concat + parallel sort", MergeKind::ConcatSort),
            contender("one-pass p-way merge", MergeKind::PWay),
        ],
    )?;
    let merge_secs = |row: &Row| {
        median(
            row.runs
                .iter()
                .filter_map(|m| m.stats.as_ref().map(|s| s.merge_secs))
                .collect(),
        )
    };
    let (m0, m1) = (merge_secs(&rows[0]), merge_secs(&rows[1]));
    let mb = data.len() as f64 / 1e6;
    let title = format!(
        "merge: sort of {} records ({mb:.0} MB), {} threads (whole sort job; merge phase alone, \
         medians: concat-sort {m0:.3} s, p-way {m1:.3} s, {:.2}x)",
        a.records,
        rt.threads(),
        m0 / m1
    );
    print_table(&title, mb, "MB", &rows);
    rows[1].print_phases("");
    Ok(())
}
