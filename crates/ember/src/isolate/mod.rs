//! Map workers in their own address spaces: each split is mapped by a
//! process of its own, so a map that segfaults, aborts or is killed by the
//! OOM killer costs one task, not the run (SMR's *Sthreads*, and Hadoop's
//! task retries). `docs/isolation.md` has the design and its costs.
//!
//! The plan of [`run`]:
//!
//! - the files are cut into splits at line boundaries ([`splits`]);
//! - a split is mapped by a fresh process: the current program
//!   re-executed in the worker role, which [`worker_hook`] at the top of
//!   its `main` recognizes; the worker finds the job in the same
//!   [`Registry`] by name, maps its byte range of the file (memory-mapped
//!   read-only: every worker shares the page cache's copy of the input)
//!   with the job's own containers and combiner, and writes the partial
//!   aggregates, sorted by key, to its channel: a memfd (shared memory
//!   that grows as it is written, freed when the last descriptor closes);
//! - at most [`Options::workers`] workers run at once; one that dies is
//!   seen at once (a thread per worker waits for it), and its split is
//!   retried on a fresh process up to [`Options::retries`] times, then
//!   the run fails with [`Error::WorkerDied`] naming the split;
//! - the parent merges the channels (sorted by key) and reduces them with
//!   the job's `reduce`, as `ember stream reduce` does.
//!
//! No worker outlives the run: a failure kills and reaps the others, and
//! each worker asks the kernel to kill it when its parent dies
//! (`PR_SET_PDEATHSIG`), which covers a parent killed by a signal.
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     let registry = ember::stream::Registry::new(); // register jobs here
//!     ember::isolate::worker_hook(&registry); // a worker never returns
//!     // ... the program, which may call ember::isolate::run
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

mod merge;
mod spawn;
mod splits;
mod supervise;
mod worker;

use std::io::Write;
use std::path::PathBuf;

pub use spawn::{kill_workers, wait_exited};
pub use worker::{worker_hook, ATTEMPT_ENV};

use crate::error::{Error, Result};
use crate::stream::Registry;

/// How [`run`] runs its workers.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker processes running at once (at least 1).
    pub workers: usize,
    /// Further attempts of a split whose worker died (default 1).
    pub retries: u32,
    /// Target split size in bytes (default: the input over four splits a
    /// worker, between 1 MiB and 64 MiB).
    pub split_size: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            retries: 1,
            split_size: None,
        }
    }
}

/// One worker process: the split it mapped and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerStats {
    /// The process id.
    pub pid: u32,
    /// The split's index in the run's order of splits (file by file).
    pub split: usize,
    /// 0 for the first attempt at the split, 1 for its first retry, ...
    pub attempt: u32,
    /// How it died, if it did (`None`: it mapped its split, or its job
    /// returned an error).
    pub death: Option<crate::error::Death>,
    /// Its peak resident set, in KiB (`ru_maxrss`).
    pub peak_rss_kib: u64,
    /// Its minor page faults.
    pub minor_faults: u64,
    /// Its major page faults (that read from disk).
    pub major_faults: u64,
}

/// What an isolated run did: every worker process, in the order they ended.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The splits the input was cut into.
    pub splits: usize,
    /// Every worker process started.
    pub workers: Vec<WorkerStats>,
}

impl Report {
    /// Splits mapped again because their worker died.
    pub fn retries(&self) -> usize {
        self.workers.iter().filter(|w| w.attempt > 0).count()
    }

    /// Minor page faults of all the workers.
    pub fn minor_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.minor_faults).sum()
    }

    /// Major page faults of all the workers.
    pub fn major_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.major_faults).sum()
    }
}

/// Runs the job `name` of `registry`, made from `args`, over the lines of
/// `files` (each file whole, for a job whose map takes its input whole),
/// mapping every split in a worker process (this program,
/// re-executed: its `main` must call [`worker_hook`] with a registry that
/// holds the same job first), and writes the reduce output to `out`:
/// `key<TAB>output` lines in the order of the keys' text, what
/// `ember stream map`, `sort` and `ember stream reduce` write.
///
/// A worker sees Hadoop Streaming's `mapreduce_map_input_file`,
/// `mapreduce_map_input_start` and `mapreduce_map_input_length` for its
/// split, and [`ATTEMPT_ENV`].
pub fn run(
    registry: &Registry,
    name: &str,
    args: &[String],
    files: &[PathBuf],
    opts: &Options,
    out: &mut dyn Write,
) -> Result<Report> {
    if opts.workers == 0 {
        return Err(Error::Config("workers must be at least 1".into()));
    }
    let job = registry.job(name, args)?;
    let splits = splits::cut(files, opts, splits::Boundary::of(job.as_ref()))?;
    let program = std::env::current_exe().map_err(|e| Error::io("<current executable>", e))?;
    let launch = spawn::Launch {
        program,
        job: name.to_owned(),
        args: args.to_vec(),
    };
    let (channels, workers) = supervise::map_all(&launch, &splits, opts)?;
    let maps = channels
        .iter()
        .map(spawn::Channel::map)
        .collect::<Result<Vec<_>>>()?;
    let mut merged = merge::Lines::new(maps.iter().map(|m| &m[..]).collect());
    job.reduce("<map output>", &mut merged, out)?;
    Ok(Report {
        splits: splits.len(),
        workers,
    })
}
