//! `ember sort` and `ember gen sort`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::Input;
use ember_apps::sort::{sort_order, write_records, SortSpec, RECORD_LEN};

use crate::common::{write_output, RunArgs};
use crate::genfile;

/// `ember sort`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Input file of 100-byte records (10-byte key first).
    file: PathBuf,
    /// Output file for the sorted records (`-`: standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
    #[command(flatten)]
    run: RunArgs,
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

/// Runs `ember sort`.
pub(crate) fn run(a: Args) -> Result<()> {
    let input = Input::file(&a.file)?;
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

/// The generator of `spec`, for [`genfile`].
fn writer(spec: SortSpec) -> impl Fn(&mut dyn Write, &mut dyn FnMut(u64)) -> std::io::Result<()> {
    move |mut w, p| write_records(&spec, &mut w, p)
}

/// Runs `ember gen sort`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    let spec = SortSpec {
        records: a.records,
        seed: a.seed,
    };
    let size = spec.records * RECORD_LEN as u64;
    genfile::write_file(&a.out, size, "generating records", &writer(spec))
}

/// Generates (once) a cached file of `records` records (the default seed)
/// and returns its path.
pub(crate) fn cached_records(records: u64) -> Result<PathBuf> {
    let spec = SortSpec {
        records,
        ..SortSpec::default()
    };
    let name = format!("sort-{}-s{}.dat", spec.records, spec.seed);
    let size = spec.records * RECORD_LEN as u64;
    genfile::cached_file(&name, size, "generating records", &writer(spec))
}
