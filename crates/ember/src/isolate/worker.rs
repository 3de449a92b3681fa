//! The worker roles: a process started by [`super::run`] maps one split
//! and writes its partial aggregates to the channel its parent gave it, or
//! reduces one key range of the map channels and writes its output there,
//! as [`super::protocol`] says.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::ops::Range;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};

use super::merge;
use super::protocol::{Run, JOB_FAILED, PROTOCOL, WORKER_ENV};
use crate::error::{Error, Result};
use crate::input::Input;
use crate::options::RunOptions;
use crate::runtime::Runtime;
use crate::stream::{Registry, Role, StreamJob};

/// A worker's exit status when it was started wrongly.
const MISUSED: i32 = 2;

/// Turns this process into an isolated map or reduce worker, if
/// [`super::run`] started it as one, and then exits; else returns at once.
/// Call it first thing in `main` (before threads start or arguments are
/// parsed), with a registry that holds the jobs the program runs isolated.
pub fn worker_hook(registry: &Registry) {
    let Some(version) = std::env::var_os(WORKER_ENV) else {
        return;
    };
    if version != PROTOCOL {
        eprintln!("ember worker: protocol {version:?}, expected {PROTOCOL}");
        std::process::exit(MISUSED);
    }
    let Some(task) = Task::parse(std::env::args_os().skip(1)) else {
        eprintln!("ember worker: bad arguments");
        std::process::exit(MISUSED);
    };
    // SAFETY: the parent left the channel (a memfd) open under this number
    // across `exec`, and nothing else in this process owns it.
    let mut channel = unsafe { File::from_raw_fd(task.channel) };
    let done = registry
        .job(&task.job, &task.args)
        .and_then(|job| match &task.work {
            Work::Map { path, start, end } => map(job.as_ref(), path, *start..*end, &channel),
            Work::Reduce { runs } => reduce(job.as_ref(), runs, &channel),
        });
    let status = match done {
        Ok(()) => 0,
        Err(e) => {
            let told = channel
                .set_len(0)
                .and_then(|()| channel.rewind())
                .and_then(|()| channel.write_all(e.to_string().as_bytes()));
            if told.is_err() {
                eprintln!("ember worker: {e}");
            }
            JOB_FAILED
        }
    };
    std::process::exit(status);
}

/// A worker's task and job, from its arguments.
struct Task {
    job: String,
    channel: i32,
    work: Work,
    args: Vec<String>,
}

/// What a worker does.
enum Work {
    /// Map bytes `start..end` of the file.
    Map {
        path: PathBuf,
        start: usize,
        end: usize,
    },
    /// Reduce the merge of the runs.
    Reduce { runs: Vec<Run> },
}

impl Task {
    fn parse(mut args: impl Iterator<Item = OsString>) -> Option<Task> {
        let mut text = || args.next()?.into_string().ok();
        let role: Role = text()?.parse().ok()?;
        let job = text()?;
        let channel = text()?.parse().ok()?;
        let work = match role {
            Role::Map => Work::Map {
                path: PathBuf::from(text()?),
                start: text()?.parse().ok()?,
                end: text()?.parse().ok()?,
            },
            Role::Reduce => {
                let n: usize = text()?.parse().ok()?;
                let runs = (0..n)
                    .map(|_| Run::parse(&text()?))
                    .collect::<Option<_>>()?;
                Work::Reduce { runs }
            }
            _ => return None,
        };
        let args = args.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
        Some(Task {
            job,
            channel,
            work,
            args,
        })
    }
}

/// Maps bytes `range` of the file at `path` with `job` on one thread, into
/// `channel`.
fn map(job: &dyn StreamJob, path: &Path, range: Range<usize>, channel: &File) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mapped;
    let data: &[u8] = match range.is_empty() {
        false => {
            // SAFETY: read-only; a file cut short under the map raises
            // SIGBUS in this worker alone, which the parent reports as the
            // split's worker dying.
            mapped = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
            mapped.get(range).ok_or_else(|| {
                Error::InvalidInput(format!("'{}' is shorter than its split", path.display()))
            })?
        }
        true => &[],
    };
    let runtime = Runtime::builder().threads(1).build()?;
    let mut out = BufWriter::with_capacity(1 << 16, channel);
    job.map(
        &runtime,
        &Input::bytes(data),
        &RunOptions::default(),
        &mut out,
    )?;
    out.flush().map_err(|e| Error::io("<channel>", e))
}

/// Reduces the merge of `runs` (each sorted by key) with `job`, into
/// `channel`.
fn reduce(job: &dyn StreamJob, runs: &[Run], channel: &File) -> Result<()> {
    let maps = runs
        .iter()
        .map(|run| {
            // SAFETY: the parent left this memfd open under this number for
            // this worker, which owns it from here on.
            let file = unsafe { File::from_raw_fd(run.fd) };
            // SAFETY: read-only; the channel's writer, a map worker, has
            // exited, and the parent never writes it.
            let map =
                unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io("<channel>", e))?;
            match map.get(run.start..run.end) {
                Some(_) => Ok((map, run.start..run.end)),
                None => Err(Error::InvalidInput("a run past its channel's end".into())),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let mut merged = merge::Lines::new(maps.iter().map(|(m, r)| &m[r.clone()]).collect());
    let mut out = BufWriter::with_capacity(1 << 16, channel);
    job.reduce("<map output>", &mut merged, &mut out)?;
    out.flush().map_err(|e| Error::io("<channel>", e))
}
