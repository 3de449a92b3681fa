//! What every subcommand shares: sizes, the runtime, stats output, error
//! lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::Args;
use ember::tune::Ingest;
use ember::{Runtime, Stats};
use ember_cli::output;

use crate::hdfs;
use crate::progress::progress_while;

/// Options every job-running subcommand takes.
#[derive(Args, Debug, Clone)]
pub(crate) struct RunArgs {
    /// Worker threads (default: all CPUs).
    #[arg(long, short = 't')]
    pub(crate) threads: Option<usize>,
    /// Target split size, e.g. 1MiB (default: fitted to the input).
    #[arg(long, value_parser = parse_size)]
    pub(crate) split_size: Option<u64>,
    /// Intermediate container: auto, hash, hash_tree, array, append, intern, unique.
    #[arg(long, default_value = "auto")]
    pub(crate) container: ember::ContainerKind,
    /// How the hash container aggregates: auto (from the sample),
    /// per-worker (a table per worker), or partitioned (a cache-sized
    /// table per worker folding into shared hash partitions: each key
    /// held once).
    #[arg(long, default_value = "auto")]
    pub(crate) aggregation: ember::tune::Aggregation,
    /// Partitioned aggregation: hash partitions (default: from the
    /// threads and the sample's predicted keys).
    #[arg(long, value_name = "N")]
    pub(crate) partitions: Option<usize>,
    /// Partitioned aggregation: keys a worker's small table holds before
    /// it is evicted (default: a table of 1 MiB of slots, half full).
    #[arg(long, value_name = "N")]
    pub(crate) table_keys: Option<usize>,
    /// Partitioned aggregation: entries a worker buffers for a partition
    /// before folding them into the partition's table.
    #[arg(long, value_name = "N")]
    pub(crate) partition_buffer: Option<usize>,
    /// How to read input files: auto (mmap if they fit comfortably in
    /// memory, else chunked), mmap, or chunked (plain reads, bounded memory).
    #[arg(long, default_value = "auto", value_parser = parse_ingest)]
    pub(crate) ingest: Ingest,
    /// Bytes per ingest chunk for chunked reading (and standard input).
    /// Default: 64MiB, or less under --memory-limit (the buffers then take
    /// at most a quarter of the limit).
    #[arg(long, value_parser = parse_size)]
    pub(crate) chunk_size: Option<u64>,
    /// Chunk buffers for chunked reading: the reader runs this many minus
    /// one chunks ahead of the mappers.
    #[arg(long, default_value_t = ember::tune::DEFAULT_CHUNK_BUFFERS)]
    pub(crate) chunk_buffers: usize,
    /// Map and reduce: auto, barrier, or pipelined (reducers fold map
    /// output as it comes; jobs that cannot be pipelined use the barrier).
    #[arg(long, default_value = "auto")]
    pub(crate) mode: ember::tune::Mode,
    /// Pipelined mode: bytes of one map buffer, e.g. 64KiB.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub(crate) buffer_size: Option<u64>,
    /// Pipelined mode: the bound on buffered bytes (default: 256MiB or an
    /// eighth of the memory, if less).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub(crate) max_buffered: Option<u64>,
    /// Memory budget for intermediate data, e.g. 2GiB: a worker whose
    /// container passes its share spills it to disk as sorted runs, and
    /// reduce merges them (word count, inverted index). Default: three
    /// quarters of the available memory (or of the cgroup's limit).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub(crate) memory_limit: Option<u64>,
    /// Where spill files go (a directory of their own is made there and
    /// removed at the end, on an error or Ctrl-C too). Default: the system's
    /// temporary directory ($TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub(crate) spill_dir: Option<PathBuf>,
    /// Print the phase breakdown to standard error.
    #[arg(long)]
    pub(crate) stats: bool,
    /// Write the stats as JSON to this file (`ember report` reads it).
    #[arg(long, value_name = "PATH")]
    pub(crate) stats_json: Option<PathBuf>,
    /// Write a trace of the run to this file: a span per task, chunk read
    /// and phase, in the Chrome Trace Event format (open it in
    /// ui.perfetto.dev or chrome://tracing; `ember report` reads it).
    #[arg(long, value_name = "PATH")]
    pub(crate) trace: Option<PathBuf>,
    /// The recorder behind `--trace`, shared by every run of the command.
    #[arg(skip)]
    pub(crate) recorder: ember::Trace,
}

/// Inputs of at most this many bytes are mapped by one worker: the
/// runtime's smallest split, so that the whole input is one split and a
/// second worker would have nothing to map (while its thread and its
/// empty tables, a few per worker, would cost more than the input).
pub(crate) const SMALL_INPUT: u64 = 64 << 10;

/// How many workers a command's runtime starts, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workers {
    /// As `--threads` asked, else one per CPU.
    Asked(Option<usize>),
    /// One, for an input of `bytes`, at most [`SMALL_INPUT`], with no
    /// `--threads` given.
    SmallInput { bytes: u64 },
}

impl Workers {
    /// The decision for `input` under `--threads threads`: only an input
    /// whose every part's length is known (files, not standard input) can
    /// be small.
    pub(crate) fn for_input(threads: Option<usize>, input: &ember::Input<'_>) -> Workers {
        let known = !input.is_streamed() || input.parts() == 0;
        match (threads, input.len() as u64) {
            (None, bytes) if known && bytes <= SMALL_INPUT => Workers::SmallInput { bytes },
            _ => Workers::Asked(threads),
        }
    }
}

impl std::fmt::Display for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workers::Asked(Some(n)) => write!(f, "workers   {n}: --threads"),
            Workers::Asked(None) => write!(f, "workers   one per CPU (the default)"),
            Workers::SmallInput { bytes } => write!(
                f,
                "workers   1: the input ({bytes} bytes) is one split of at most {} KiB; \
                 --threads overrides",
                SMALL_INPUT >> 10
            ),
        }
    }
}

impl RunArgs {
    /// Builds the runtime these options ask for.
    pub(crate) fn runtime(&self) -> Result<Runtime> {
        self.runtime_with(Workers::Asked(self.threads))
    }

    /// Builds the runtime for `input`: one worker for a small one (see
    /// [`Workers::for_input`]), else as [`runtime`](Self::runtime).
    pub(crate) fn runtime_for(&self, input: &ember::Input<'_>) -> Result<(Runtime, Workers)> {
        let workers = Workers::for_input(self.threads, input);
        Ok((self.runtime_with(workers)?, workers))
    }

    /// A small input's one worker is the calling thread: it starts no
    /// thread (see [`ember::RuntimeBuilder::on_caller`]). Its run spills
    /// only under `--memory-limit` (the default budget, three quarters of
    /// the memory the process may have, is far above what the container
    /// of 64 KiB of input holds), so only then, or for an input that is
    /// not small, does a run need the signal thread to remove its spill
    /// directory on a signal ([`output::watch`]).
    fn runtime_with(&self, workers: Workers) -> Result<Runtime> {
        if !matches!(workers, Workers::SmallInput { .. }) || self.memory_limit.is_some() {
            output::watch()?;
        }
        let b = match workers {
            Workers::Asked(Some(t)) => Runtime::builder().threads(t),
            Workers::Asked(None) => Runtime::builder(),
            Workers::SmallInput { .. } => Runtime::builder().on_caller(),
        };
        Ok(b.build()?)
    }

    /// Per-run options.
    pub(crate) fn options(&self) -> ember::RunOptions {
        ember::RunOptions::default()
            .split_size(self.split_size.map(|s| s as usize))
            .container(self.container)
            .aggregation(self.aggregation)
            .partitioned(
                ember::tune::PartitionedOptions::default()
                    .partitions(self.partitions)
                    .table_keys(self.table_keys)
                    .buffer_entries(self.partition_buffer),
            )
            .chunk_size(self.chunk_size.map(|s| s as usize))
            .chunk_buffers(self.chunk_buffers)
            .mode(self.mode)
            .pipeline(
                ember::tune::PipelineOptions::default()
                    .buffer_bytes(self.buffer_size.map(|s| s as usize))
                    .max_buffered_bytes(self.max_buffered.map(|s| s as usize)),
            )
            .trace(self.trace.as_ref().map(|_| self.recorder.clone()))
            .memory_limit(self.memory_limit)
            .spill_dir(self.spill_dir.clone())
    }

    /// Calls `f` with the run options, showing its progress as
    /// [`progress_while`] does.
    pub(crate) fn with_progress<T>(&self, f: impl FnOnce(&ember::RunOptions) -> T) -> T {
        progress_while(self.options(), "job", f)
    }

    /// Opens input files as `--ingest` says: see [`open_input`].
    pub(crate) fn open(&self, files: &[PathBuf]) -> Result<ember::Input<'static>> {
        open_input(files, self.ingest)
    }

    /// Ends a command's summary on `out` with a line of the input size and
    /// the time, then [`report`](Self::report)s.
    pub(crate) fn finish(&self, out: &mut impl Write, stats: &Stats) -> Result<()> {
        writeln!(
            out,
            "# {:.1} MB in {:.3} s",
            stats.input_bytes as f64 / 1e6,
            stats.total_secs
        )?;
        self.report(stats)
    }

    /// Prints and/or writes the stats and the trace, as asked.
    pub(crate) fn report(&self, stats: &Stats) -> Result<()> {
        if self.stats {
            eprintln!("{stats}");
        }
        write_output(self.stats_json.as_deref(), |w| {
            serde_json::to_writer_pretty(&mut *w, stats)?;
            Ok(writeln!(w)?)
        })?;
        write_output(self.trace.as_deref(), |w| {
            Ok(self.recorder.write_chrome(w)?)
        })
    }
}

/// Opens input files, folders and glob patterns (see
/// [`ember::expand_paths`]) as `ingest` says; `-` alone is standard input
/// (always chunked). With an `hdfs://` URL among them, every file is
/// streamed, in order: see [`crate::hdfs`].
pub(crate) fn open_input(args: &[PathBuf], ingest: Ingest) -> Result<ember::Input<'static>> {
    need_files(args)?;
    let files = ember::expand_paths(args)?;
    if files == [Path::new("-")] {
        return Ok(ember::Input::reader_decompressed(
            "<stdin>",
            std::io::stdin(),
        )?);
    }
    if files.iter().any(|f| hdfs::is_url(f)) {
        return hdfs::open(&files);
    }
    Ok(ember::Input::open(files, ingest)?)
}

/// The parser of an argument that names one input file: a file, or a
/// folder or glob pattern that gives exactly one (see
/// [`ember::expand_paths`]).
pub(crate) fn one_file() -> impl TypedValueParser<Value = PathBuf> {
    OsStringValueParser::new().try_map(|arg| {
        let files = ember::expand_paths(&[PathBuf::from(arg)]).map_err(|e| e.to_string())?;
        match &files[..] {
            [file] => Ok(file.clone()),
            _ => Err(format!(
                "it names {} files ('{}', '{}', ...); this command reads one",
                files.len(),
                files[0].display(),
                files[1].display()
            )),
        }
    })
}

/// Parses `--ingest`.
pub(crate) fn parse_ingest(s: &str) -> Result<ember::tune::Ingest, String> {
    match s {
        "auto" => Ok(ember::tune::Ingest::Auto),
        "mmap" => Ok(ember::tune::Ingest::Mmap),
        "chunked" => Ok(ember::tune::Ingest::Chunked),
        _ => Err(format!("unknown ingest mode '{s}' (auto, mmap, chunked)")),
    }
}

/// Parses a byte size: `4096`, `64KiB`, `100MB`, `1.5GiB`, `256M` (the
/// parser is ember's, shared with the Python package).
pub(crate) use ember::tune::parse_size;

/// Writes to `path` (`-`: standard output) with `write`, if there is a
/// path; a file appears only once complete (see [`output`]).
pub(crate) use ember_cli::output::write_output;

/// Where a command's summary goes: standard output, or standard error when
/// the results themselves go to standard output (`-o -`), so that the two
/// never mix.
pub(crate) fn summary_out(output: Option<&Path>) -> Box<dyn Write> {
    if output.is_some_and(|p| p == Path::new("-")) {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    }
}

/// Fails on an empty list of input files.
pub(crate) fn need_files(files: &[PathBuf]) -> Result<()> {
    if files.is_empty() {
        bail!("no input files given");
    }
    Ok(())
}

/// An error and its causes on one line.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// Panics in user code on worker threads come back from the runtime as
/// errors, printed once by `main`; the default hook would also print them
/// with a backtrace hint. Panics elsewhere are bugs in ember: one line.
pub(crate) fn quiet_worker_panics() {
    std::panic::set_hook(Box::new(|info| {
        let on_worker = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("ember-worker"));
        if !on_worker {
            eprintln!("ember: internal error: {info}");
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::{Workers, SMALL_INPUT};

    #[test]
    fn only_a_small_input_of_known_length_runs_on_one_worker() {
        let small = vec![b'a'; SMALL_INPUT as usize];
        let big = vec![b'a'; SMALL_INPUT as usize + 1];
        let of = |t, input: &ember::Input<'_>| Workers::for_input(t, input);
        assert_eq!(
            of(None, &ember::Input::bytes(&small)),
            Workers::SmallInput { bytes: SMALL_INPUT }
        );
        assert_eq!(of(None, &ember::Input::bytes(&big)), Workers::Asked(None));
        assert_eq!(
            of(Some(2), &ember::Input::bytes(&small)),
            Workers::Asked(Some(2))
        );
        let stdin = ember::Input::reader("<stdin>", std::io::empty());
        assert_eq!(of(None, &stdin), Workers::Asked(None));
    }
}
