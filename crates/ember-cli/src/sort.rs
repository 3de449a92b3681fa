//! `ember sort` and `ember gen sort`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::Input;
use ember_apps::sort::{sort_order, write_records, SortSpec, RECORD_LEN};

use crate::common::{cache_dir, cached, create_output, progress, RunArgs};

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
    let order = sort_order(&rt, data, &a.run.options())
        .with_context(|| format!("cannot sort '{}'", a.file.display()))?;
    let start = std::time::Instant::now();
    let mut w = create_output(&a.out)?;
    order.write(data, rt.threads(), &mut w)?;
    w.flush()
        .with_context(|| format!("cannot write '{}'", a.out.display()))?;
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
    let mut out = create_output(&a.out)?;
    let bar = progress(spec.records * RECORD_LEN as u64, "generating records");
    write_records(&spec, &mut out, |n| bar.set_position(n))?;
    out.flush()?;
    bar.finish_and_clear();
    Ok(())
}

/// Generates (once) a cached record file and returns its path.
pub(crate) fn cached_records(spec: &SortSpec) -> Result<PathBuf> {
    let path = cache_dir()?.join(format!("sort-{}-s{}.dat", spec.records, spec.seed));
    cached(&path, |f| {
        let bar = progress(
            spec.records * RECORD_LEN as u64,
            "generating records (cached for next time)",
        );
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write_records(spec, &mut w, |n| bar.set_position(n))?;
        w.flush()?;
        bar.finish_and_clear();
        Ok(())
    })?;
    Ok(path)
}
