//! Map and reduce workers in their own address spaces: each split is
//! mapped, and each key range reduced, by a process of its own, so a job
//! that segfaults, aborts or is killed by the OOM killer costs one task,
//! not the run (SMR's *Sthreads*, and Hadoop's task retries).
//! `docs/isolation.md` has the design and its costs.
//!
//! The plan of [`run`]:
//!
//! - the files are cut into splits at line boundaries ([`splits`]);
//! - at most [`Options::workers`] worker processes are started, each
//!   once: the current program re-executed in the worker role, which
//!   [`worker_hook`] at the top of its `main` recognizes; a worker then
//!   does task after task as the parent sends them down a socket;
//! - a split is mapped by a worker: it finds the job in the same
//!   [`Registry`] by name, maps its byte range of the file (memory-mapped
//!   read-only: every worker shares the page cache's copy of the input)
//!   with the job's own containers and combiner, and writes the partial
//!   aggregates, sorted by key, to the task's channel: a memfd (shared
//!   memory that grows as it is written, freed when the last descriptor
//!   closes);
//! - a worker that dies is seen at once (a thread per worker reads its
//!   replies, and its pipe closes when it dies), and its task is retried
//!   on a fresh process up to [`Options::retries`] times, then the run
//!   fails with [`Error::WorkerDied`] naming the split (or
//!   [`Error::ReducerDied`] naming the key range);
//! - the keys are cut into up to [`Options::workers`] ranges of about
//!   equal bytes ([`partition`]); a range's pairs are a byte range of each
//!   map channel (the channel of that mapper and reducer), which a reduce
//!   task, on the same workers, merges and reduces with the job's
//!   `reduce` into a channel of its own;
//! - the parent writes the reduce channels out in key order.
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
mod pairs;
mod partition;
mod protocol;
mod registered;
mod shared;
mod spawn;
mod splits;
mod supervise;
mod tasks;
mod worker;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use crate::runtime::Isolation;
pub use protocol::{ATTEMPT_ENV, FIRST_LINE_ENV};
pub use shared::SharedInput;
pub use spawn::{kill_workers, wait_exited};
pub use worker::worker_hook;

use crate::error::{Error, Result};
use crate::stream::{Form, Registry};

/// How [`run`] runs its workers.
#[derive(Debug, Clone)]
pub struct Options {
    /// Worker processes running at once (at least 1).
    pub workers: usize,
    /// Further attempts of a split whose worker died (default 1).
    pub retries: u32,
    /// Target split size in bytes (default: the input over two splits a
    /// worker, between 1 MiB and 64 MiB).
    pub split_size: Option<u64>,
    /// Bytes at the start of every file that are not input (a header,
    /// such as an ember matrix file's): no split holds them, and a job of
    /// fixed-size records counts its records from there (default 0).
    pub header: u64,
    /// The memory the workers' channels may hold, in bytes (default: the
    /// machine's, [`crate::tune::default_memory_limit`]): a worker started while
    /// the channels held reach it writes to a file in
    /// [`Options::spill_dir`] instead of shared memory.
    pub memory_limit: Option<u64>,
    /// Where channels past the memory limit go (default: the system's
    /// temporary directory). They are unnamed files, freed when the run
    /// ends however it ends.
    pub spill_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            retries: 1,
            split_size: None,
            header: 0,
            memory_limit: None,
            spill_dir: None,
        }
    }
}

impl Options {
    /// Where the run keeps its channels; an error if the spill directory
    /// is not one.
    fn store(&self) -> Result<spawn::Store> {
        let dir = match &self.spill_dir {
            Some(dir) => {
                crate::spill::check_dir(dir)?;
                dir.clone()
            }
            None => crate::spill::default_dir(),
        };
        Ok(spawn::Store {
            budget: crate::memory::Budget::new(self.memory_limit).bytes,
            dir,
        })
    }
}

/// What a worker process did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Task {
    /// Mapped a split: its index in the run's order of splits (file by
    /// file).
    Map {
        /// The split's index.
        split: usize,
    },
    /// Reduced a key range: its index (from 0) in key order.
    Reduce {
        /// The key range's index.
        partition: usize,
    },
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Task::Map { split } => write!(f, "map split {split}"),
            Task::Reduce { partition } => write!(f, "reduce key range {partition}"),
        }
    }
}

/// One attempt at a task: the worker process that did it, and how it
/// ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRun {
    /// The worker process's id.
    pub pid: u32,
    /// The split it mapped or the key range it reduced.
    pub task: Task,
    /// 0 for the first attempt at the task, 1 for its first retry, ...
    pub attempt: u32,
    /// How its worker died during it, if it did (`None`: the task is done,
    /// or its job returned an error).
    pub death: Option<crate::error::Death>,
}

/// One worker process: the tasks it did and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerStats {
    /// The process id.
    pub pid: u32,
    /// The tasks it finished.
    pub tasks: usize,
    /// How it died, if it did (`None`: it exited when its tasks ended).
    pub death: Option<crate::error::Death>,
    /// Its peak resident set, in KiB (`ru_maxrss`).
    pub peak_rss_kib: u64,
    /// Its minor page faults.
    pub minor_faults: u64,
    /// Its major page faults (that read from disk).
    pub major_faults: u64,
}

/// What an isolated run did: every attempt at a task, and every worker
/// process that ended.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The splits the input was cut into.
    pub splits: usize,
    /// The key ranges the reduce was cut into, one reduce task each.
    pub partitions: usize,
    /// Every attempt at a task, in the order they ended: the map tasks,
    /// then the reduce tasks.
    pub tasks: Vec<TaskRun>,
    /// The worker processes that ended during the run: those that died,
    /// and, from [`run`] (or [`Workers::finish`]), every one.
    pub workers: Vec<WorkerStats>,
    /// The channels of finished tasks kept on disk, past the memory limit
    /// ([`Options::memory_limit`]), of `splits + partitions`.
    pub disk_channels: usize,
    /// The input's lines, if the job numbers them
    /// ([`StreamJob::numbers_lines`](crate::stream::StreamJob::numbers_lines)).
    pub lines: Option<u64>,
    /// The form of the output written: [`Form::Binary`] where it was asked
    /// for and the job has it ([`Workers::run`]), else text.
    pub form: Form,
    /// Where the run's wall time went, phase by phase.
    pub times: PhaseTimes,
}

/// The wall time of each phase of an isolated run, as the parent saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Cutting the input into splits (and numbering their lines, for a
    /// job that numbers lines).
    pub split: Duration,
    /// The map tasks, from the first given to the last done.
    pub map: Duration,
    /// Cutting the map output into key ranges.
    pub partition: Duration,
    /// The reduce tasks.
    pub reduce: Duration,
    /// Writing the reduce output (or a map-only job's map output) to the
    /// caller.
    pub output: Duration,
}

impl Report {
    /// Tasks done again because their worker died.
    pub fn retries(&self) -> usize {
        self.tasks.iter().filter(|t| t.attempt > 0).count()
    }

    /// Minor page faults of the workers.
    pub fn minor_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.minor_faults).sum()
    }

    /// Major page faults of the workers.
    pub fn major_faults(&self) -> u64 {
        self.workers.iter().map(|w| w.major_faults).sum()
    }
}

/// Runs the job `name` of `registry`, made from `args`, over the lines of
/// `files` (each file whole, for a job whose map takes its input whole),
/// mapping every split and reducing every key range in a worker process
/// (this program, re-executed: its `main` must call [`worker_hook`] with a
/// registry that holds the same job first), and writes the reduce output
/// to `out`: `key<TAB>output` lines in the order of the keys' text, what
/// `ember stream map`, `sort` and `ember stream reduce` write.
///
/// The reduce outputs of the key ranges are written one after the other,
/// so the job's `reduce` over a range of keys must write what it writes
/// for those keys over all of them (each key's output from that key's
/// lines alone, in key order), as for Hadoop's several reducers.
///
/// A map worker sees Hadoop Streaming's `mapreduce_map_input_file`,
/// `mapreduce_map_input_start` and `mapreduce_map_input_length` for its
/// split (and [`FIRST_LINE_ENV`], for a job that numbers lines), a reduce
/// worker `mapreduce_task_partition` (its key range's index, from 0), and
/// both [`ATTEMPT_ENV`].
pub fn run(
    registry: &Registry,
    name: &str,
    args: &[String],
    files: &[PathBuf],
    opts: &Options,
    out: &mut dyn Write,
) -> Result<Report> {
    let mut workers = Workers::new(opts.clone())?;
    let mut report = workers.run(registry, name, args, files, Form::Text, out)?;
    report.workers.extend(workers.finish());
    Ok(report)
}

/// Worker processes kept from one isolated run to the next (k-means'
/// iterations): each run is [`run`]'s, but the processes it starts stay
/// for the next one, until [`Workers::finish`] (or the value is dropped,
/// which kills them).
pub struct Workers {
    pool: supervise::Pool,
    opts: Options,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers").field("opts", &self.opts).finish()
    }
}

impl Workers {
    /// No workers yet: each run starts what it needs, up to
    /// [`Options::workers`] at once.
    pub fn new(opts: Options) -> Result<Workers> {
        if opts.workers == 0 {
            return Err(Error::Config("workers must be at least 1".into()));
        }
        let program = std::env::current_exe().map_err(|e| Error::io("<current executable>", e))?;
        let pool = supervise::Pool::new(spawn::Launch { program }, opts.workers);
        Ok(Workers { pool, opts })
    }

    /// Runs the job `name` of `registry` as [`run`] does, on these
    /// workers, and writes its output in `form` where the job has it
    /// ([`StreamJob::binary`](crate::stream::StreamJob::binary)):
    /// [`Form::Binary`] passes the pairs from map to reduce and to `out`
    /// as [`Record`](crate::stream::Record)s, no value in text. The
    /// report says which form `out` holds.
    pub fn run(
        &mut self,
        registry: &Registry,
        name: &str,
        args: &[String],
        files: &[PathBuf],
        form: Form,
        out: &mut dyn Write,
    ) -> Result<Report> {
        let opts = &self.opts;
        let job = registry.job(name, args)?;
        let map_only = job.map_only();
        let form = match job.binary() {
            Some(_) => form,
            None => Form::Text,
        };
        let mut clock = Instant::now();
        let mut lap = || std::mem::replace(&mut clock, Instant::now()).elapsed();
        let (boundary, share) = (
            splits::Boundary::of(job.as_ref()),
            splits::Share::of(job.as_ref()),
        );
        let mut splits = splits::cut(files, opts, boundary, share)?;
        let lines = match job.numbers_lines() {
            true => Some(splits::number_lines(&mut splits, opts.header)?),
            false => None,
        };
        let mut times = PhaseTimes {
            split: lap(),
            ..PhaseTimes::default()
        };
        let call = supervise::JobCall { name, args, form };
        let store = opts.store()?;
        let (channels, mut tasks) = self.pool.run_all(&call, &splits, opts, &store, &[])?;
        times.map = lap();
        let partitions = match map_only {
            true => Vec::new(),
            false => partitions(&channels, form, opts.workers)?,
        };
        times.partition = lap();
        let (reduced, reduces) = self
            .pool
            .run_all(&call, &partitions, opts, &store, &channels)?;
        tasks.extend(reduces);
        times.reduce = lap();
        // A map-only job's output is its map channels, in split order.
        let outputs = if map_only { &channels } else { &reduced };
        for output in outputs {
            out.write_all(&output.map()?)
                .map_err(|e| Error::io("<output>", e))?;
        }
        times.output = lap();
        let all = channels.iter().chain(&reduced);
        Ok(Report {
            splits: splits.len(),
            partitions: partitions.len(),
            tasks,
            workers: self.pool.take_reaped(),
            disk_channels: all.filter(|c| c.on_disk()).count(),
            lines,
            form,
            times,
        })
    }

    /// Ends the workers (each exits when told there is no more work) and
    /// reaps them: the processes not yet reported.
    pub fn finish(mut self) -> Vec<WorkerStats> {
        self.pool.finish();
        self.pool.take_reaped()
    }
}

/// The reduce tasks over the map `channels` (their pairs in `form`): at
/// most `workers` key ranges of them.
fn partitions(
    channels: &[spawn::Channel],
    form: Form,
    workers: usize,
) -> Result<Vec<tasks::Partition>> {
    let maps = channels
        .iter()
        .map(spawn::Channel::map)
        .collect::<Result<Vec<_>>>()?;
    let runs: Vec<&[u8]> = maps.iter().map(|m| &m[..]).collect();
    let ranges = partition::ranges(&runs, form, workers)?;
    let count = ranges.len();
    let partitions = ranges.into_iter().enumerate().map(|(index, parts)| {
        let runs = channels.iter().zip(parts).filter(|(_, r)| !r.is_empty());
        let runs = runs.map(|(channel, r)| protocol::Run {
            fd: channel.fd(),
            start: r.start,
            end: r.end,
        });
        tasks::Partition {
            index,
            count,
            runs: runs.collect(),
        }
    });
    Ok(partitions.collect())
}
