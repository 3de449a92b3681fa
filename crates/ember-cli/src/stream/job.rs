//! `ember stream job`: a built-in job over files, in this process's
//! threads or, with `--isolate`, with every split mapped in a worker
//! process of its own ([`ember::isolate`], docs/isolation.md).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use ember::isolate;
use ember::stream::{MapInput, Registry, StreamJob};
use ember::tune::parse_size;
use ember::{Input, RunOptions, Runtime};

use crate::isolated::print_report;

/// `ember stream job`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The job (`ember stream jobs` lists them).
    job: String,
    /// The input files (text, cut into splits at line boundaries).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Map every split and reduce every key range in a worker process of
    /// its own: a job that crashes costs a retry of its task, not the run.
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
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if a.isolate {
        let opts = isolate::Options {
            workers: a.workers.unwrap_or(isolate::Options::default().workers),
            retries: a.retries,
            split_size: a.split_size,
        };
        let report = isolate::run(registry, &a.job, &a.job_args, &a.files, &opts, &mut out)?;
        if a.stats {
            print_report(&report);
        }
    } else {
        let job = registry.job(&a.job, &a.job_args)?;
        in_threads(job.as_ref(), &a, &mut out)?;
    }
    out.flush().context("cannot write the output")
}

/// The job mapped on this process's threads, then reduced.
fn in_threads(job: &dyn StreamJob, a: &Args, out: &mut dyn Write) -> Result<()> {
    let mut builder = Runtime::builder();
    if let Some(n) = a.workers {
        builder = builder.threads(n);
    }
    let runtime = builder.build()?;
    let mut opts = RunOptions::default();
    opts.split_size = a.split_size.map(|s| s as usize);
    let mut mapped = Vec::new();
    if job.map_input() == MapInput::Whole {
        // One map per non-empty file (an image, a block of records), as
        // the isolated workers do; combine sorts and folds their outputs
        // for reduce.
        for file in &a.files {
            let input = Input::file(file)?;
            if !input.is_empty() {
                job.map(&runtime, &input, &opts, &mut mapped)?;
            }
        }
        let mut combined = Vec::new();
        job.combine("<map output>", &mut &mapped[..], &mut combined)?;
        mapped = combined;
    } else {
        job.map(&runtime, &Input::files(&a.files)?, &opts, &mut mapped)?;
    }
    job.reduce("<map output>", &mut &mapped[..], out)?;
    Ok(())
}
