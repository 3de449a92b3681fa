//! `ember-bench merge`: the runtime's one-pass p-way merge against
//! concatenating the sorted runs and sorting them again with rayon's
//! parallel sort, on the sort workload (where the merge is the
//! bottleneck, SupMR section IV), both in one run.
//!
//! Both contenders compute the same order of the same records: the
//! runtime's map-side sort (`sort_order_input`: every split packed and
//! sorted, then merged), and the same runs made here and merged by
//! concatenation and `par_sort_unstable` on the runtime's workers. The
//! title compares the merge steps alone.

use std::cell::RefCell;
use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime, Stats};
use ember_apps::sort::{
    pack, sort_order_input, Packed, SortSpec, MIN_SPLIT, RECORD_LEN, RUNS_PER_THREAD,
};
use ember_cli::inputs;
use rayon::prelude::*;

use crate::harness::{measure, median, print_table, Contender, Measured, Row};
use crate::machine::all_threads;
use crate::BenchArgs;

/// `ember-bench merge`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Number of 100-byte records to sort.
    #[arg(long, default_value_t = SortSpec::default().records)]
    records: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// The baseline: the runs `sort_order_input` maps (as many, as long),
/// each packed and sorted in parallel, then concatenated and sorted
/// again by rayon's parallel sort. Returns the order and the stats of a
/// run whose `merge_secs` is the concatenation and sort.
fn concat_sort(rt: &Runtime, data: &[u8]) -> (Vec<Packed>, Stats) {
    let records = data.len() / RECORD_LEN;
    let split = (data.len() / (RUNS_PER_THREAD * rt.threads())).max(MIN_SPLIT);
    let per_run = (split / RECORD_LEN).max(1);
    rt.install(|| {
        let runs: Vec<Vec<Packed>> = data
            .par_chunks(per_run * RECORD_LEN)
            .enumerate()
            .map(|(r, chunk)| {
                let first = r * per_run;
                let mut run: Vec<Packed> = chunk
                    .chunks_exact(RECORD_LEN)
                    .enumerate()
                    .map(|(i, rec)| pack(rec, first + i))
                    .collect();
                run.sort_unstable();
                run
            })
            .collect();
        let start = Instant::now();
        let mut all = Vec::with_capacity(records);
        for run in runs {
            all.extend(run);
        }
        all.par_sort_unstable();
        let mut stats = Stats::default();
        stats.merge_secs = start.elapsed().as_secs_f64();
        (all, stats)
    })
}

/// Runs `ember-bench merge`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = SortSpec {
        records: a.records,
        ..SortSpec::default()
    };
    let input = Input::file(inputs::records(spec).cached()?)?;
    let data = input.part_bytes(0);
    let rt = Runtime::builder()
        .threads(all_threads(a.bench.threads))
        .build()?;
    // The order of the first run, which every run must give again.
    let first_order: RefCell<Option<Vec<Packed>>> = RefCell::new(None);
    let same = |order: &mut dyn Iterator<Item = Packed>| {
        let mut first = first_order.borrow_mut();
        let first = first.get_or_insert_with(|| order.collect());
        ensure!(
            first.iter().copied().eq(order),
            "the two merges ordered the records differently"
        );
        Ok(())
    };
    let (rt, same) = (&rt, &same);
    let rows = measure(
        a.bench.runs,
        vec![
            Contender::new("concat + rayon parallel sort", move || {
                Measured::of(|| {
                    let (order, stats) = concat_sort(rt, data);
                    same(&mut order.into_iter())?;
                    Ok(Some(stats))
                })
            }),
            Contender::new("one-pass p-way merge", move || {
                Measured::of(|| {
                    let order = sort_order_input(rt, &Input::bytes(data), &RunOptions::default())?;
                    same(&mut order.keys())?;
                    Ok(Some(order.stats))
                })
            }),
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
        "merge: sort of {} records ({mb:.0} MB), {} threads (whole sort; merge step alone, \
         medians: concat-sort {m0:.3} s, p-way {m1:.3} s, {:.2}x)",
        a.records,
        rt.threads(),
        m0 / m1
    );
    print_table(&title, mb, "MB", &rows);
    rows[1].print_phases("");
    Ok(())
}
