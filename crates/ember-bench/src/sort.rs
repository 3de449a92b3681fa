//! `ember-bench sort`: ember vs the sequential sort and rayon's parallel
//! sort of the same records.
//!
//! Every contender goes from the mapped input to the sorted records in an
//! output buffer that is reused across runs (fresh memory is expensive to
//! fault in on this kind of VM, and every contender would pay it alike).

use std::cell::RefCell;
use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime};
use ember_apps::sort::{parallel_sort_into, sequential_into, sort_order, SortSpec, RECORD_LEN};
use ember_cli::inputs;

use crate::harness::{Contender, Measured, Role};
use crate::machine::all_threads;
use crate::versus::{ember_name, versus};
use crate::BenchArgs;

/// `ember-bench sort`.
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
    ensure!(
        got == want,
        "{what}: the output differs from the sequential sort's"
    );
    Ok(())
}

/// Runs `ember-bench sort`.
pub(crate) fn run(a: Args) -> Result<()> {
    let file = inputs::records(SortSpec {
        records: a.records,
        ..SortSpec::default()
    })
    .cached()?;
    let input = Input::file(&file)?;
    let data = input.part_bytes(0);
    let all = all_threads(a.bench.threads);
    // Warm the mapping; the untimed first sequential run is the oracle.
    let want = ember_apps::sort::sequential(data)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(all).build()?;
    let out = RefCell::new(want.clone());
    let mut recs = Vec::with_capacity(data.len() / RECORD_LEN);
    let sequential = Contender::new("sequential (1 thread)", || {
        let mut out = out.borrow_mut();
        let m = Measured::of(|| {
            sequential_into(data, &mut out)?;
            Ok(None)
        })?;
        verify(&want, &out, "sequential")?;
        Ok(m)
    });
    let ember = |rt: &Runtime| {
        let mut out = out.borrow_mut();
        let mut gather = 0.0;
        let mut m = Measured::of(|| {
            let order = sort_order(rt, data, &RunOptions::default())?;
            let g = Instant::now();
            order.gather_into(rt, data, &mut out);
            gather = g.elapsed().as_secs_f64();
            Ok(Some(order.stats))
        })?;
        verify(&want, &out, &ember_name(rt.threads()))?;
        m.note = Some(format!(
            "gather    {gather:>10.3} s  (records copied in key order, after the run)"
        ));
        Ok(m)
    };
    let rayon = Contender::new(format!("rayon par_sort, {all} threads"), || {
        let m = Measured::of(|| {
            parallel_sort_into(data, &pool, &mut recs)?;
            Ok(None)
        })?;
        verify(&want, recs.as_flattened(), "rayon par_sort")?;
        Ok(m)
    })
    .role(Role::Work(all));
    let mut v = versus(a.bench, sequential, ember, vec![rayon])?;
    // The bench holds the oracle, the reused output buffer and rayon's
    // records beside every run's memory.
    let args = [
        "sort".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        "-".as_ref(),
    ];
    v.measure_command(&args)?;
    let mb = data.len() as f64 / 1e6;
    v.print(
        &format!(
            "sort, {} records of {RECORD_LEN} bytes ({mb:.1} MB)",
            a.records
        ),
        mb,
        "MB",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("sort", data.len() as u64);
    for row in [v.ember_one(), v.ember_all()] {
        row.print_phases(
            " (map: keys extracted and routed to sampled key ranges; reduce: each range \
             sorted; merge: the ranges in order)",
        );
    }
    Ok(())
}
