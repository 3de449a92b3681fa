//! `ember bench spill`: jobs under a memory limit that makes them spill,
//! against the same jobs unlimited and against reading the input and
//! writing as many bytes once (the disk's own rate), in one run: word
//! count and the inverted index on text, then the external sort of
//! records against the in-memory sort.
//!
//! Every ember contender is a child `ember` process, so that each run's
//! peak resident memory is its own (`wait4`'s `ru_maxrss`); the pages of a
//! memory-mapped input count in it (word count streams its input, the
//! inverted index maps it, the sorts map theirs). The sort rows sync their
//! output to disk (`--sync`), as the copy they are held to does.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_apps::sort::RECORD_LEN;
use ember_apps::text::TextSpec;

use super::harness::{measure, print_table, Contender, Measured};
use super::machine::all_threads;
use super::roofline::Role;
use super::rss;
use super::BenchArgs;
use crate::common::parse_size;

/// `ember bench spill`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Corpus size (word count's Zipf corpus).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// The memory limit of the spilling runs.
    #[arg(long, value_parser = parse_size, default_value = "16MiB")]
    limit: u64,
    /// Size of the records the sorts sort (a multiple of 100 bytes is
    /// used).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    sort_size: u64,
    /// The memory limit of the external sort.
    #[arg(long, value_parser = parse_size, default_value = "64MiB")]
    sort_limit: u64,
    /// Only one table: the text jobs, or the sorts (default: both).
    #[arg(long, value_enum)]
    only: Option<Table>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// The tables of `ember bench spill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Table {
    /// Word count and the inverted index.
    Text,
    /// The external sort and the in-memory sort.
    Sort,
}

/// Runs `ember bench spill`.
pub(crate) fn run(a: Args) -> Result<()> {
    let scratch = tempfile::tempdir()?;
    if a.only != Some(Table::Sort) {
        text_jobs(&a, scratch.path())?;
    }
    if a.only != Some(Table::Text) {
        sorts(&a, scratch.path())?;
    }
    Ok(())
}

/// The table of word count and the inverted index, spilling and not.
fn text_jobs(a: &Args, scratch: &Path) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let text = crate::gen::cached_text(&spec)?;
    let threads = all_threads(a.bench.threads).to_string();
    let job = |name: &str, args: &[&str], limited: bool| {
        let (text, out) = (text.clone(), scratch.join(format!("{name}.out")));
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.extend(["-t".into(), threads.clone()]);
        if limited {
            args.extend(["--memory-limit".into(), a.limit.to_string()]);
        }
        Contender::new(name.to_string(), move || child(&args, (&text, &out)))
    };
    let wc = ["wordcount", "--ingest", "chunked"];
    let ii = ["inverted-index", "--lines"];
    let copy_out = scratch.join("copy.out");
    let contenders = vec![
        Contender::new("read + write once (the disk's rate)", || {
            copy(&text, &copy_out)
        }),
        job("wordcount, no limit", &wc, false),
        job("wordcount, spilling", &wc, true),
        job("inverted-index, no limit", &ii, false),
        job("inverted-index, spilling", &ii, true),
    ];
    let rows = measure(a.bench.runs, contenders)?;
    let mb = a.size as f64 / 1e6;
    let title = format!(
        "spill: {mb:.0} MB of text, {threads} threads, spilling runs limited to {:.0} MiB",
        a.limit as f64 / (1 << 20) as f64
    );
    print_table(&title, mb, "MB", &rows);
    Ok(())
}

/// The table of the external sort under `--sort-limit` and the in-memory
/// sort, held to copying the records once (the disk's rate).
fn sorts(a: &Args, scratch: &Path) -> Result<()> {
    let n = a.sort_size / RECORD_LEN as u64;
    let records = crate::sort::cached_records(n)?;
    let threads = all_threads(a.bench.threads);
    let sort = |name: &str, limited: bool| {
        let (records, out) = (records.clone(), scratch.join("sorted.out"));
        let mut args: Vec<String> = ["--sync", "sort", "-t", &threads.to_string()]
            .iter()
            .map(|a| a.to_string())
            .collect();
        if limited {
            args.extend(["--memory-limit".into(), a.sort_limit.to_string()]);
        }
        Contender::new(name.to_string(), move || child(&args, (&records, &out)))
            .role(Role::Work(threads))
    };
    let copy_out = scratch.join("copy.out");
    let contenders = vec![
        Contender::new("read + write once (the disk's rate)", || {
            copy(&records, &copy_out)
        })
        .role(Role::Limit(threads)),
        sort("sort, external", true),
        sort("sort, in memory", false),
    ];
    let rows = measure(a.bench.runs, contenders)?;
    let mb = (n * RECORD_LEN as u64) as f64 / 1e6;
    let title = format!(
        "spill: sort of {n} records ({mb:.0} MB), {threads} threads, the external sort \
         limited to {:.0} MiB",
        a.sort_limit as f64 / (1 << 20) as f64
    );
    print_table(&title, mb, "MB", &rows);
    Ok(())
}

/// Copies `from` to `to`, the way `cat from > to` does: the time to read
/// the input and write as many bytes once.
fn copy(from: &Path, to: &Path) -> Result<Measured> {
    Measured::of(|| {
        let mut r = BufReader::with_capacity(1 << 20, File::open(from)?);
        let mut w = BufWriter::with_capacity(1 << 20, File::create(to)?);
        std::io::copy(&mut r, &mut w)?;
        w.into_inner()?.sync_data()?;
        Ok(None)
    })
}

/// Runs `ember ARGS TEXT -o OUT` as a child process; its peak resident
/// memory is the child's own.
fn child(args: &[String], (text, out): (&PathBuf, &PathBuf)) -> Result<Measured> {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend([text.as_os_str(), OsStr::new("-o"), out.as_os_str()]);
    let run = rss::run_self(&all)?;
    Ok(Measured {
        secs: run.secs,
        cpu: run.cpu,
        stats: None,
        note: None,
        memory: rss::peak_of(&run.usage).map(|peak| rss::Peak { base: 0, peak }),
    })
}
