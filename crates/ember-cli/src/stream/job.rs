//! `ember stream job`: a built-in job over files, in this process's
//! threads or, with `--isolate`, with every split mapped and every key
//! range reduced in worker processes
//! ([`Runtime::run_registered`], docs/isolation.md).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::stream::Registry;
use ember::tune::parse_size;
use ember::{Isolation, Runtime};

use crate::isolated::print_report;

/// `ember stream job`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The job (`ember stream jobs` lists them).
    job: String,
    /// The input files (text, cut into splits at line boundaries),
    /// folders (read recursively, leaving out names that start with `.` or
    /// `_`) or quoted glob patterns such as 'logs/*.txt'.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Map every split and reduce every key range in worker processes
    /// (each started once, task after task): a job that crashes costs a
    /// retry of its task, not the run.
    /// A map worker sees Hadoop's
    /// mapreduce_map_input_file, so inverted-index names each file's
    /// documents by the file without --doc.
    #[arg(long)]
    isolate: bool,
    /// Workers: threads, or processes with --isolate (default: all CPUs).
    #[arg(long, short = 't')]
    workers: Option<usize>,
    /// With --isolate: further attempts of a task whose worker died.
    #[arg(long, default_value_t = 1)]
    retries: u32,
    /// Target split size, e.g. 4MiB (default: fitted to the input).
    #[arg(long, value_parser = parse_size)]
    split_size: Option<u64>,
    /// With --isolate: each worker process's task, attempt, death, peak
    /// RSS and page faults, on standard error.
    #[arg(long)]
    stats: bool,
    /// The job's own arguments, after `--` (inverted-index: --doc NAME).
    #[arg(last = true)]
    job_args: Vec<String>,
}

/// Runs `ember stream job`: `key<TAB>output` lines on standard output, in
/// the order of the keys' text.
pub(crate) fn run(a: Args, registry: &Registry) -> Result<()> {
    let mut builder = Runtime::builder().worker_retries(a.retries);
    if let Some(n) = a.workers {
        builder = builder.threads(n);
    }
    if let Some(size) = a.split_size {
        builder = builder.split_size(size as usize);
    }
    if a.isolate {
        builder = builder.isolation(Isolation::Processes);
    }
    let runtime = builder.build()?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let files = ember::expand_paths(&a.files)?;
    let report = runtime.run_registered(registry, &a.job, &a.job_args, &files, &mut out)?;
    if let (Some(report), true) = (report, a.stats) {
        print_report(&report);
    }
    out.flush().context("cannot write the output")
}
