//! `ember string-match` and `ember gen strmatch`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use clap::Args as ClapArgs;
use ember::tune::Ingest;
use ember::{Bytes, Stats};
use ember_apps::stream;
use ember_apps::string_match::{self, KeysSpec, Matches, Targets, DEFAULT_TARGETS};
use ember_cli::inputs;

use crate::common::{one_file, open_input, parse_size, RunArgs};
use crate::isolated::{self, IsolateArgs};

/// `ember string-match`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The keys file: one word per line. An hdfs://HOST:PORT/PATH URL
    /// reads a file, or every file under a folder, from HDFS (with the
    /// `hdfs` build feature). A local folder or quoted glob pattern that
    /// gives exactly one file may name it.
    #[arg(value_parser = one_file())]
    file: PathBuf,
    /// Target words (default: the words `ember gen strmatch` plants).
    words: Vec<String>,
    /// Offsets to print per target.
    #[arg(long, default_value_t = 5)]
    show: usize,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    isolate: IsolateArgs,
}

/// `ember gen strmatch`.
#[derive(ClapArgs)]
pub(crate) struct GenArgs {
    /// Output size, e.g. 256MiB (exact).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Words to plant, each at a few reproducible lines.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_TARGETS.map(String::from))]
    plant: Vec<String>,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
}

/// Runs `ember gen strmatch`.
pub(crate) fn gen(a: GenArgs) -> Result<()> {
    let spec = KeysSpec {
        size: a.size,
        seed: a.seed,
        plant: a.plant,
    };
    inputs::keys(&spec).write_to(&a.out)
}

/// Runs the job on a file, read as `ingest` says, naming it in errors.
pub(crate) fn search(
    rt: &ember::Runtime,
    file: &Path,
    ingest: Ingest,
    targets: &Targets,
    opts: &ember::RunOptions,
) -> Result<(Matches, ember::Stats)> {
    let input = open_input(&[file.to_path_buf()], ingest)?;
    string_match::run_input(rt, &input, targets, opts)
        .with_context(|| format!("'{}'", file.display()))
}

/// Each target's line count and the offsets of its lines (the first
/// `--show` of them, isolated).
type TargetsFound = Vec<(u64, Vec<u64>)>;

/// How many lines are each target word, and the offsets of the first
/// `--show` of them, found by the streaming job `string-match-offsets` in
/// worker processes (each adds its split's start in the file to the
/// offsets it finds), with the run's options for reporting it.
fn found_isolated(a: &Args, words: &[&str]) -> Result<(TargetsFound, Stats, RunArgs)> {
    // Each word once: the job counts a line once per target it equals.
    let mut unique: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    unique.sort();
    unique.dedup();
    let mut args = vec!["--show".to_string(), a.show.to_string()];
    args.extend(unique);
    let files = [a.file.clone()];
    let job = "string-match-offsets";
    let iso = isolated::run::<Bytes, stream::Found>(&a.run, &a.isolate, job, &args, &files)?;
    let found = words
        .iter()
        .map(|w| {
            let at = iso
                .pairs
                .binary_search_by(|(k, _)| k.as_bytes().cmp(w.as_bytes()));
            at.map(|i| (iso.pairs[i].1.lines, iso.pairs[i].1.first.clone()))
                .map_err(|_| anyhow!("the isolated run did not count '{w}'"))
        })
        .collect::<Result<_>>()?;
    Ok((found, iso.stats, iso.run))
}

/// Runs `ember string-match`.
pub(crate) fn run(a: Args) -> Result<()> {
    let words: Vec<&str> = if a.words.is_empty() {
        DEFAULT_TARGETS.to_vec()
    } else {
        a.words.iter().map(String::as_str).collect()
    };
    let targets = Targets::new(&words)?;
    let (matches, stats, run) = if a.isolate.isolate {
        found_isolated(&a, &words)?
    } else {
        let rt = a.run.runtime()?;
        let (matches, stats) = a
            .run
            .with_progress(|o| search(&rt, &a.file, a.run.ingest, &targets, o))?;
        let matches: TargetsFound = matches
            .into_iter()
            .map(|offsets| (offsets.len() as u64, offsets))
            .collect();
        (matches, stats, a.run.clone())
    };
    let mut out = std::io::stdout().lock();
    for (word, (lines, offsets)) in words.iter().zip(&matches) {
        write!(out, "{word}\t{lines} lines")?;
        if !offsets.is_empty() && a.show > 0 {
            let first: Vec<String> = offsets.iter().take(a.show).map(u64::to_string).collect();
            let more = if *lines > a.show as u64 { ", ..." } else { "" };
            write!(out, "\tat byte {}{more}", first.join(", "))?;
        }
        writeln!(out)?;
    }
    run.finish(&mut out, &stats)
}
