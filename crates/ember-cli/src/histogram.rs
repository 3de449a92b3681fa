//! `ember histogram` and `ember gen histogram`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::{Input, Stats};
use ember_apps::histogram::{self, Bmp, BmpSpec, Counts, CHANNELS};
use ember_apps::stream::ChannelValue;
use ember_cli::inputs;

use crate::common::{one_file, write_output, RunArgs};
use crate::isolated::{self, IsolateArgs};

/// `ember histogram`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// A 24-bit uncompressed BMP image. A folder or a quoted glob pattern
    /// that gives exactly one file may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    /// Write every `channel<TAB>value<TAB>count` (768 lines) to this file
    /// (`-`: standard output).
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen histogram`.
#[derive(ClapArgs)]
pub(crate) struct GenArgs {
    /// Pixels per row.
    #[arg(long, default_value_t = BmpSpec::default().width)]
    width: u32,
    /// Rows.
    #[arg(long, default_value_t = BmpSpec::default().height)]
    height: u32,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
}

impl GenArgs {
    fn spec(&self) -> BmpSpec {
        BmpSpec {
            width: self.width,
            height: self.height,
            seed: self.seed,
        }
    }
}

/// Runs `ember gen histogram`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    inputs::bmp(a.spec()).write_to(&a.out)
}

/// Runs the job on a file, naming it in errors.
pub(crate) fn count(
    rt: &ember::Runtime,
    file: &Path,
    opts: &ember::RunOptions,
) -> Result<(Counts, ember::Stats)> {
    let input = Input::in_memory([file])?;
    let counts = histogram::run(rt, input.part_bytes(0), opts)
        .with_context(|| format!("'{}'", file.display()))?;
    // The run read the file's map, not an input of its own.
    input.check_unchanged()?;
    rt.release(input);
    Ok(counts)
}

/// The image's counts by the streaming job `histogram` in a worker
/// process (one image is one split), with the run's options for
/// reporting it.
fn count_isolated(a: &Args) -> Result<(Counts, Stats, RunArgs)> {
    let files = [a.file.clone()];
    let iso = isolated::run::<ChannelValue, u64>(&a.run, &a.isolate, "histogram", &[], &files)?;
    let mut counts: Counts = [0; histogram::KEYS];
    for (key, n) in iso.pairs {
        counts[usize::from(key.0)] = n;
    }
    let mut stats = iso.stats;
    // The thread mode's input is the pixel array.
    let input = Input::in_memory([&a.file])?;
    stats.input_bytes = Bmp::parse(input.part_bytes(0))?.pixels_len() as u64;
    Ok((counts, stats, iso.run))
}

/// Runs `ember histogram`.
pub(crate) fn run(a: Args) -> Result<()> {
    let (counts, stats, run) = if a.isolate.isolate {
        count_isolated(&a)?
    } else {
        let rt = a.run.runtime()?;
        let (counts, stats) = a.run.with_progress(|o| count(&rt, &a.file, o))?;
        (counts, stats, a.run.clone())
    };
    write_output(a.output.as_deref(), |w| {
        for (key, n) in counts.iter().enumerate() {
            writeln!(w, "{}\t{}\t{n}", CHANNELS[key / 256], key % 256)?;
        }
        Ok(())
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "channel       pixels     mean  mode (count)        min value  max value"
    )?;
    for (c, name) in CHANNELS.iter().enumerate() {
        let ch = &counts[c * 256..(c + 1) * 256];
        let pixels: u64 = ch.iter().sum();
        let weighted: u64 = ch.iter().enumerate().map(|(v, n)| v as u64 * n).sum();
        let mode = (0..256)
            .max_by_key(|&v| (ch[v], std::cmp::Reverse(v)))
            .unwrap_or(0);
        let present = || (0..256).filter(|&v| ch[v] > 0);
        writeln!(
            out,
            "{name:<7} {pixels:>12} {:>8.3}  {mode:>3} ({:>10})  {:>10}  {:>9}",
            weighted as f64 / pixels.max(1) as f64,
            ch[mode],
            present().next().map_or("-".into(), |v| v.to_string()),
            present().next_back().map_or("-".into(), |v| v.to_string()),
        )?;
    }
    run.finish(&mut out, &stats)
}
