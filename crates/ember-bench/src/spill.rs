//! `ember-bench spill`: jobs under a memory limit that makes them spill,
//! against the same jobs unlimited and against reading the input and
//! writing as many bytes once (the disk's own rate), in one run: word
//! count and the inverted index on text (the index spilling in the
//! pipelined mode too), then the external sort of records against the
//! in-memory sort.
//!
//! Every ember contender is a child `ember` process, so that each run's
//! peak resident memory is its own (`wait4`'s `ru_maxrss`); the pages of a
//! memory-mapped input count in it (word count streams its input, the
//! inverted index maps it, the sorts map theirs). The sort rows sync their
//! output to disk (`--sync`), as the copy they are held to does, and each
//! of them and the copy reads the records from the disk: their pages are
//! dropped from the page cache before every run, so the table compares
//! disk to disk whatever the run before left cached. Each
//! spilling row's child writes its stats, and the table is followed by
//! what it spilled.
//!
//! Disk: the inputs are generated once and kept under `~/.cache/ember`
//! (reused by later runs); every contender's output is deleted after each
//! of its runs, and spill files go to the scratch directory and are gone
//! when the child ends, so that at most one contender's output and spill
//! files exist at once beside the inputs (`docs/cli.md` has the sizes).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember_apps::sort::{SortSpec, RECORD_LEN};
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::harness::{measure, mib, print_table, Contender, Measured, Role, Row};
use crate::machine::all_threads;
use crate::rss;
use crate::BenchArgs;

/// `ember-bench spill`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: all CPUs)")))]
pub(crate) struct Args {
    /// Corpus size (word count's and the inverted index's Zipf corpus)
    /// [default: 256MiB; --issue: 4GiB].
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// The memory limit of the inverted index's spilling run, and of word
    /// count's unless --wc-limit is given [default: 16MiB; --issue: 1GiB].
    #[arg(long, value_parser = parse_size)]
    limit: Option<u64>,
    /// The memory limit of word count's spilling run [default: --limit;
    /// --issue: 64MiB, which makes it spill].
    #[arg(long, value_parser = parse_size)]
    wc_limit: Option<u64>,
    /// Size of the records the sorts sort (a multiple of 100 bytes is
    /// used) [default: 256MiB; --issue: 10GB, 100 million records].
    #[arg(long, value_parser = parse_size)]
    sort_size: Option<u64>,
    /// The memory limit of the external sort [default: 64MiB; --issue:
    /// 2GiB].
    #[arg(long, value_parser = parse_size)]
    sort_limit: Option<u64>,
    /// The sizes of issue #15's benchmark as defaults: 4 GiB of text with
    /// a 1 GiB limit (word count: 64 MiB), 100 million records (10 GB)
    /// with a 2 GiB limit. Needs about 30 GB of disk (docs/cli.md).
    #[arg(long)]
    issue: bool,
    /// Only one table: the text jobs, or the sorts (default: both).
    #[arg(long, value_enum)]
    only: Option<Table>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// The sizes a run uses: the flags given, else the preset's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sizes {
    size: u64,
    limit: u64,
    wc_limit: u64,
    sort_size: u64,
    sort_limit: u64,
}

impl Args {
    /// The flags given, else `--issue`'s sizes or the defaults.
    fn sizes(&self) -> Sizes {
        let preset = match self.issue {
            true => Sizes {
                size: 4 << 30,
                limit: 1 << 30,
                wc_limit: 64 << 20,
                sort_size: 100_000_000 * RECORD_LEN as u64,
                sort_limit: 2 << 30,
            },
            false => Sizes {
                size: 256 << 20,
                limit: 16 << 20,
                wc_limit: 16 << 20,
                sort_size: 256 << 20,
                sort_limit: 64 << 20,
            },
        };
        let limit = self.limit.unwrap_or(preset.limit);
        Sizes {
            size: self.size.unwrap_or(preset.size),
            limit,
            wc_limit: match (self.wc_limit, self.limit, self.issue) {
                (Some(l), ..) => l,
                (None, Some(l), false) => l,
                _ => preset.wc_limit,
            },
            sort_size: self.sort_size.unwrap_or(preset.sort_size),
            sort_limit: self.sort_limit.unwrap_or(preset.sort_limit),
        }
    }
}

/// The tables of `ember-bench spill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Table {
    /// Word count and the inverted index.
    Text,
    /// The external sort and the in-memory sort.
    Sort,
}

/// Runs `ember-bench spill`.
pub(crate) fn run(a: Args) -> Result<()> {
    let sizes = a.sizes();
    let scratch = tempfile::tempdir()?;
    if a.only != Some(Table::Sort) {
        text_jobs(&a, sizes, scratch.path())?;
    }
    if a.only != Some(Table::Text) {
        sorts(&a, sizes, scratch.path())?;
    }
    Ok(())
}

/// The table of word count and the inverted index, spilling and not.
fn text_jobs(a: &Args, sizes: Sizes, scratch: &Path) -> Result<()> {
    let spec = TextSpec {
        size: sizes.size,
        ..TextSpec::default()
    };
    let text = inputs::text(&spec).cached()?;
    let threads = all_threads(a.bench.threads).to_string();
    let job = |name: &str, args: &[&str], limit: Option<u64>| {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.extend(["-t".into(), threads.clone()]);
        if let Some(limit) = limit {
            args.extend(["--memory-limit".into(), limit.to_string()]);
        }
        let text = text.clone();
        Contender::new(name.to_string(), move || child(&args, &text, scratch))
    };
    let wc = ["wordcount", "--ingest", "chunked"];
    let ii = ["inverted-index", "--lines"];
    let ii_pipelined = ["inverted-index", "--lines", "--mode", "pipelined"];
    let copy_out = scratch.join("copy.out");
    let contenders = vec![
        Contender::new("read + write once (the disk's rate)", || {
            copy(&text, &copy_out)
        }),
        job("wordcount, no limit", &wc, None),
        job("wordcount, spilling", &wc, Some(sizes.wc_limit)),
        job("inverted-index, no limit", &ii, None),
        job("inverted-index, spilling", &ii, Some(sizes.limit)),
        job(
            "inverted-index, pipelined, spilling",
            &ii_pipelined,
            Some(sizes.limit),
        ),
    ];
    let rows = measure(a.bench.runs, contenders)?;
    let mb = sizes.size as f64 / 1e6;
    let title = format!(
        "spill: {mb:.0} MB of text, {threads} threads, spilling runs limited to {:.0} MiB \
         (word count: {:.0} MiB)",
        mib(sizes.limit),
        mib(sizes.wc_limit)
    );
    print_table(&title, mb, "MB", &rows);
    print_spilled(&rows);
    Ok(())
}

/// The table of the external sort under `--sort-limit` and the in-memory
/// sort, held to copying the records once (the disk's rate).
fn sorts(a: &Args, sizes: Sizes, scratch: &Path) -> Result<()> {
    let n = sizes.sort_size / RECORD_LEN as u64;
    let records = inputs::records(SortSpec {
        records: n,
        ..SortSpec::default()
    })
    .cached()?;
    let threads = all_threads(a.bench.threads);
    let sort = |name: &str, limited: bool| {
        let records = records.clone();
        let mut args: Vec<String> = ["--sync", "sort", "-t", &threads.to_string()]
            .iter()
            .map(|a| a.to_string())
            .collect();
        if limited {
            args.extend(["--memory-limit".into(), sizes.sort_limit.to_string()]);
        }
        Contender::new(name.to_string(), move || {
            evict(&records)?;
            child(&args, &records, scratch)
        })
        .role(Role::Work(threads))
    };
    let copy_out = scratch.join("copy.out");
    let contenders = vec![
        Contender::new("read + write once (the disk's rate)", || {
            evict(&records)?;
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
        mib(sizes.sort_limit)
    );
    print_table(&title, mb, "MB", &rows);
    print_spilled(&rows);
    Ok(())
}

/// Prints what each row's last run spilled, for the rows that did.
fn print_spilled(rows: &[Row]) {
    for row in rows {
        if let Some(note) = &row.last().note {
            println!("{}: {note}", row.name);
        }
    }
}

/// Drops the pages of the file at `path` from the page cache
/// (`POSIX_FADV_DONTNEED`; written pages are synced first), so that the
/// next run reads it from the disk: the sort rows and the copy they are
/// held to each start from the disk, whatever the run before left cached.
fn evict(path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let file = File::open(path)?;
    file.sync_all()?;
    // SAFETY: a plain system call on a descriptor `file` keeps open.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match rc {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e).into()),
    }
}

/// Copies `from` to `to`, the way `cat from > to` does: the time to read
/// the input and write as many bytes once. The copy is deleted afterwards.
fn copy(from: &Path, to: &Path) -> Result<Measured> {
    let copied = Measured::of(|| {
        let mut r = BufReader::with_capacity(1 << 20, File::open(from)?);
        let mut w = BufWriter::with_capacity(1 << 20, File::create(to)?);
        std::io::copy(&mut r, &mut w)?;
        w.into_inner()?.sync_data()?;
        Ok(None)
    });
    std::fs::remove_file(to)?;
    copied
}

/// Runs `ember ARGS INPUT -o OUT` as a child process, its output, spill
/// files and stats in `scratch`; its peak resident memory is the child's
/// own. The output is deleted afterwards; the note says what the run
/// spilled, if it did.
fn child(args: &[String], input: &Path, scratch: &Path) -> Result<Measured> {
    let (out, stats) = (scratch.join("out"), scratch.join("stats.json"));
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend([OsStr::new("--spill-dir"), scratch.as_os_str()]);
    all.extend([OsStr::new("--stats-json"), stats.as_os_str()]);
    all.extend([input.as_os_str(), OsStr::new("-o"), out.as_os_str()]);
    let run = rss::run_ember(&all);
    // Deleted whether the run succeeded or not.
    let removed = std::fs::remove_file(&out);
    let run = run?;
    removed?;
    Ok(Measured {
        secs: run.secs,
        cpu: run.cpu,
        stats: None,
        note: spilled(&std::fs::read(&stats)?)?,
        memory: rss::peak_of(&run.usage).map(|peak| rss::Peak { base: 0, peak }),
    })
}

/// What a run's stats (`--stats-json`) say it spilled: runs, bytes and the
/// peak the containers held, or None if it did not spill.
fn spilled(json: &[u8]) -> Result<Option<String>> {
    let stats: serde_json::Value = serde_json::from_slice(json)?;
    let field = |name: &str| stats["memory"][name].as_u64().unwrap_or(0);
    Ok((field("spills") > 0).then(|| {
        format!(
            "spilled {:.0} MiB in {} runs ({} spills), peak tracked {:.0} MiB, merge {:.2} s",
            mib(field("spilled_bytes")),
            field("spill_runs"),
            field("spills"),
            mib(field("peak_tracked_bytes")),
            stats["memory"]["merge_secs"].as_f64().unwrap_or(0.0)
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Parser, Subcommand};

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        bench: Sub,
    }

    #[derive(Subcommand)]
    enum Sub {
        Spill(Args),
    }

    fn sizes(words: &[&str]) -> Sizes {
        let all = ["ember-bench", "spill"]
            .into_iter()
            .chain(words.iter().copied());
        let Sub::Spill(args) = Cli::try_parse_from(all).unwrap().bench;
        args.sizes()
    }

    #[test]
    fn the_issue_preset_gives_way_to_the_flags_given() {
        let d = sizes(&[]);
        let all = |s: Sizes| (s.size, s.limit, s.wc_limit, s.sort_size, s.sort_limit);
        assert_eq!(all(d), (256 << 20, 16 << 20, 16 << 20, 256 << 20, 64 << 20));
        let i = sizes(&["--issue"]);
        assert_eq!(
            all(i),
            (4 << 30, 1 << 30, 64 << 20, 10_000_000_000, 2 << 30)
        );
        let s = sizes(&["--issue", "--size", "1GiB", "--limit", "256MiB"]);
        assert_eq!(
            (s.size, s.limit, s.wc_limit),
            (1 << 30, 256 << 20, 64 << 20)
        );
        // Without the preset, word count's limit follows --limit.
        assert_eq!(sizes(&["--limit", "8MiB"]).wc_limit, 8 << 20);
        let both = sizes(&["--limit", "8MiB", "--wc-limit", "1MiB"]);
        assert_eq!((both.limit, both.wc_limit), (8 << 20, 1 << 20));
    }

    #[test]
    fn a_run_that_spilled_says_what() {
        let json = br#"{"memory": {"spills": 2, "spill_runs": 8, "spilled_bytes": 3145728,
            "peak_tracked_bytes": 1048576, "merge_secs": 0.5}}"#;
        let note = spilled(json).unwrap().unwrap();
        let want = "spilled 3 MiB in 8 runs (2 spills), peak tracked 1 MiB, merge 0.50 s";
        assert_eq!(note, want);
        assert_eq!(spilled(br#"{"memory": {"spills": 0}}"#).unwrap(), None);
    }
}
