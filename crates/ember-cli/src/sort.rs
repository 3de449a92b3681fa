//! `ember sort` and `ember gen sort`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::tune::Ingest;
use ember::Input;
use ember_apps::sort::{
    external_sort, external_sort_to_file, sort_order, SortPlan, SortSpec, RECORD_LEN,
};
use ember_cli::{inputs, output};

use crate::common::{one_file, open_input, write_output, RunArgs};
use crate::isolated::{self, IsolateArgs};

/// `ember sort`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Input file of 100-byte records (10-byte key first). A folder or a
    /// quoted glob pattern that gives exactly one file may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    /// Output file for the sorted records (`-`: standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen sort`.
#[derive(ClapArgs)]
pub(crate) struct GenArgs {
    /// Number of records.
    #[arg(long, default_value_t = SortSpec::default().records)]
    records: u64,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = SortSpec::default().seed)]
    seed: u64,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
}

/// Runs `ember sort`: in memory, or an external sort for records larger
/// than the memory budget (see [`SortPlan`]).
pub(crate) fn run(a: Args) -> Result<()> {
    if a.isolate.isolate {
        return isolated(a);
    }
    let cannot = || format!("cannot read '{}'", a.file.display());
    let bytes = std::fs::metadata(&a.file).with_context(cannot)?.len();
    match SortPlan::for_input(bytes, a.run.memory_limit) {
        SortPlan::InMemory => in_memory(a),
        SortPlan::External => external(a),
    }
}

/// `ember sort --isolate`: the streaming job `sort` in worker processes,
/// each map sorting a split of whole records and each reduce merging a
/// key range, whose outputs give the records in key order, written to the
/// output as each is read from its channel (the parent never holds them
/// all).
fn isolated(a: Args) -> Result<()> {
    let files = [a.file.clone()];
    let input = isolated::Files {
        paths: &files,
        header: 0,
    };
    // The output appears only once whole (see `output`).
    let mut w = output::create(&a.out)?;
    let call = isolated::Call {
        job: "sort",
        args: &[],
        input,
        form: ember::stream::Form::Text,
    };
    let session = &mut isolated::Session::one_run();
    let isolated::Ran { stats, run, .. } =
        isolated::run_into(session, &a.run, &a.isolate, call, &mut w)?;
    w.finish()?;
    eprintln!(
        "# {} records sorted in {:.3} s (isolated, written as the reduce workers' outputs were read)",
        stats.input_bytes / RECORD_LEN as u64,
        stats.total_secs
    );
    run.report(&stats)
}

/// `ember sort` of records larger than the memory budget: sorted runs on
/// disk, merged straight into the output file.
fn external(a: Args) -> Result<()> {
    // The record sort reads a mapped file run by run and lets go of each
    // run's pages once written, so a file larger than memory is mapped
    // too (`--ingest auto` streams a file past half the available memory).
    let ingest = match a.run.ingest {
        Ingest::Auto => Ingest::Mmap,
        chosen => chosen,
    };
    let input = open_input(std::slice::from_ref(&a.file), ingest)?;
    let rt = a.run.runtime()?;
    // The output appears only once whole (see `output`).
    let mut w = output::create(&a.out)?;
    let stats = a
        .run
        .with_progress(|o| match w.file() {
            Some(file) => external_sort_to_file(&rt, &input, o, file),
            None => external_sort(&rt, &input, o, &mut w),
        })
        .map_err(|e| match e {
            ember::Error::Output(e) => {
                anyhow::Error::new(e).context(format!("cannot write '{}'", a.out.display()))
            }
            e => anyhow::Error::new(e).context(format!("cannot sort '{}'", a.file.display())),
        })?;
    w.finish()?;
    eprintln!(
        "# {} records sorted and written in {:.3} s (external: {} runs spilled)",
        stats.input_bytes / RECORD_LEN as u64,
        stats.total_secs,
        stats.memory.spill_runs
    );
    a.run.report(&stats)
}

/// `ember sort` of records that fit in the memory budget: their order
/// computed in memory, then the records gathered from the mapped file.
fn in_memory(a: Args) -> Result<()> {
    let input = Input::in_memory([&a.file])?;
    let rt = a.run.runtime()?;
    let data = input.part_bytes(0);
    let order = a
        .run
        .with_progress(|o| sort_order(&rt, data, o))
        .with_context(|| format!("cannot sort '{}'", a.file.display()))?;
    let start = std::time::Instant::now();
    write_output(Some(&a.out), |mut w| {
        order.write(&rt, data, &mut w)?;
        // Sorted and written from the file's map, not an input of a run:
        // checked before the output replaces its target.
        Ok(input.check_unchanged()?)
    })?;
    eprintln!(
        "# {} records sorted in {:.3} s, written in {:.3} s",
        data.len() / RECORD_LEN,
        order.stats.total_secs,
        start.elapsed().as_secs_f64()
    );
    a.run.report(&order.stats)
}

/// Runs `ember gen sort`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    let spec = SortSpec {
        records: a.records,
        seed: a.seed,
    };
    inputs::records(spec).write_to(&a.out)
}
