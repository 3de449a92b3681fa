//! `ember-bench histogram`: ember vs the sequential histogram and a plain
//! memory read of the image.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, RunOptions};
use ember_apps::histogram::{self, BmpSpec};
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::{against_sequential, warm};
use crate::BenchArgs;

/// `ember-bench histogram`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help(
    "Threads for the \"all threads\" rows (default: all CPUs)"
)))]
pub(crate) struct Args {
    /// Image width in pixels (default: WORKLOADS.md's 10240 x 13654).
    #[arg(long, default_value_t = BmpSpec::default().width)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = BmpSpec::default().height)]
    height: u32,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember-bench histogram`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = BmpSpec {
        width: a.width,
        height: a.height,
        ..BmpSpec::default()
    };
    let file = inputs::bmp(spec).cached()?;
    let bytes = warm(&[&file])?;
    let sequential = || Ok(histogram::sequential(Input::file(&file)?.part_bytes(0))?);
    let want = sequential()?;
    let threads = all_threads(a.bench.threads);
    let files = [file.clone()];
    let mut limits = roofline::bandwidth(&files, threads);
    limits.extend(roofline::counter_updates(&file, threads, &want));
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| {
            let input = Input::file(&file)?;
            let counts = histogram::run(rt, input.part_bytes(0), &RunOptions::default())?;
            // The map let go on every worker, as `ember histogram` does.
            rt.release(input);
            Ok(counts)
        },
        limits,
    )?;
    v.print(
        &format!(
            "histogram, {} x {} BMP ({:.1} MB)",
            spec.width,
            spec.height,
            spec.file_len() as f64 / 1e6
        ),
        bytes as f64 / 1e6,
        "MB",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("histogram", bytes);
    v.ember_all().print_phases("");
    Ok(())
}
