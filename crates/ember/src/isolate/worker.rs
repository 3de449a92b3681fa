//! The worker role: a process started by [`super::run`] maps one split and
//! writes its partial aggregates to the channel its parent gave it.
//!
//! The protocol: the environment variable [`WORKER_ENV`] holds
//! [`PROTOCOL`]; the arguments are the job's name, the file, the split's
//! start and end, the channel's descriptor (left open across `exec`), then
//! the job's arguments. A worker exits 0 when its split is mapped, and
//! [`JOB_FAILED`] with the job's error message in the channel (in place of
//! its output) when the job returned an error; anything else (a signal,
//! another status) is a death, which the parent may retry.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::os::fd::FromRawFd;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::input::Input;
use crate::options::RunOptions;
use crate::runtime::Runtime;
use crate::stream::Registry;

/// Set (to [`PROTOCOL`]) in a worker's environment, and only there.
pub(super) const WORKER_ENV: &str = "EMBER_ISOLATE_WORKER";
/// The protocol's version: a worker of another build of the program
/// refuses to run rather than misread its arguments.
pub(super) const PROTOCOL: &str = "1";
/// A worker's exit status when the job returned an error.
pub(super) const JOB_FAILED: i32 = 3;
/// A worker's exit status when it was started wrongly.
const MISUSED: i32 = 2;
/// Set in a worker's environment to its attempt at the split: `0` for the
/// first, `1` for the first retry, ... (Hadoop's task attempt).
pub const ATTEMPT_ENV: &str = "EMBER_ISOLATE_ATTEMPT";

/// Turns this process into an isolated map worker, if [`super::run`]
/// started it as one, and then exits; else returns at once. Call it first
/// thing in `main` (before threads start or arguments are parsed), with a
/// registry that holds the jobs the program runs isolated.
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
    let status = match map(registry, &task, &channel) {
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

/// A worker's split and job, from its arguments.
struct Task {
    job: String,
    path: PathBuf,
    start: usize,
    end: usize,
    channel: i32,
    args: Vec<String>,
}

impl Task {
    fn parse(mut args: impl Iterator<Item = OsString>) -> Option<Task> {
        let job = args.next()?.into_string().ok()?;
        let path = PathBuf::from(args.next()?);
        let start = args.next()?.into_string().ok()?.parse().ok()?;
        let end = args.next()?.into_string().ok()?.parse().ok()?;
        let channel = args.next()?.into_string().ok()?.parse().ok()?;
        let args = args.map(|a| a.into_string().ok()).collect::<Option<_>>()?;
        Some(Task {
            job,
            path,
            start,
            end,
            channel,
            args,
        })
    }
}

/// Maps the task's split with its job on one thread, into `channel`.
fn map(registry: &Registry, task: &Task, channel: &File) -> Result<()> {
    let job = registry.job(&task.job, &task.args)?;
    let file = File::open(&task.path).map_err(|e| Error::io(&task.path, e))?;
    let mapped;
    let data: &[u8] = match task.start < task.end {
        true => {
            // SAFETY: read-only; a file cut short under the map raises
            // SIGBUS in this worker alone, which the parent reports as the
            // split's worker dying.
            mapped = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(&task.path, e))?;
            mapped.get(task.start..task.end).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "'{}' is shorter than its split",
                    task.path.display()
                ))
            })?
        }
        false => &[],
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
