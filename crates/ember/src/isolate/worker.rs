//! The worker side: a process started by [`super::run`] reads task after
//! task from its parent, as [`super::protocol`] says: it maps a split and
//! writes its partial aggregates to the channel its parent named, or
//! reduces one key range of the map channels and writes its output there,
//! and replies when the task is done.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::ops::Range;
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};

use super::merge;
use super::protocol::{parse_form, Message, Run, DONE, JOB_FAILED, PROTOCOL, SERVE, WORKER_ENV};
use crate::error::{Error, Result};
use crate::input::Input;
use crate::options::RunOptions;
use crate::runtime::Runtime;
use crate::stream::{Form, Registry, Role, StreamJob};

/// A worker's exit status when it was started or told wrongly.
const MISUSED: i32 = 2;

/// Turns this process into an isolated worker, if [`super::run`] started
/// it as one, which does its parent's tasks and exits when they end; else
/// returns at once. Call it first thing in `main` (before threads start or
/// arguments are parsed), with a registry that holds the jobs the program
/// runs isolated.
pub fn worker_hook(registry: &Registry) {
    let Some(version) = std::env::var_os(WORKER_ENV) else {
        return;
    };
    if version != PROTOCOL {
        misused(&format!("protocol {version:?}, expected {PROTOCOL}"));
    }
    let Some((mut tasks, mut replies)) = pipes(std::env::args_os().skip(1)) else {
        misused("bad arguments");
    };
    let mut worker = Worker::new().unwrap_or_else(|e| misused(&e.to_string()));
    loop {
        let message = match Message::read(&mut tasks) {
            Ok(Some(message)) => message,
            // The parent closed the pipe: the run is over.
            Ok(None) => std::process::exit(0),
            Err(e) => misused(&e.to_string()),
        };
        let reply = worker.serve(registry, message);
        if replies.write_all(&[reply]).is_err() {
            misused("the parent is gone");
        }
    }
}

/// Exits with [`MISUSED`], saying why on standard error.
fn misused(why: &str) -> ! {
    eprintln!("ember worker: {why}");
    std::process::exit(MISUSED);
}

/// The descriptors a worker's arguments name: the socket its tasks come
/// from, the pipe its replies go to.
fn pipes(mut args: impl Iterator<Item = OsString>) -> Option<(File, File)> {
    if args.next()? != SERVE {
        return None;
    }
    let mut fd = || args.next()?.into_string().ok()?.parse::<i32>().ok();
    let (tasks, replies) = (fd()?, fd()?);
    // SAFETY: the parent left these ends (a socket, a pipe) open under
    // these numbers across `exec` for this process alone, and nothing else
    // here owns them.
    Some(unsafe { (File::from_raw_fd(tasks), File::from_raw_fd(replies)) })
}

/// What a worker keeps from task to task.
struct Worker {
    /// The parent, whose descriptors name the channels.
    parent: u32,
    /// The one thread a task's map runs on.
    runtime: Runtime,
    /// The file the last map task read, mapped: the next split of the same
    /// file is read from the same mapping.
    mapped: Option<(PathBuf, memmap2::Mmap)>,
    /// The variables the last task set.
    env: Vec<OsString>,
}

impl Worker {
    fn new() -> Result<Worker> {
        Ok(Worker {
            // SAFETY: `getppid` has no preconditions.
            parent: unsafe { libc::getppid() } as u32,
            runtime: Runtime::builder().threads(1).build()?,
            mapped: None,
            env: Vec::new(),
        })
    }

    /// Does the task `message` gives and says how it went: [`DONE`], or
    /// [`JOB_FAILED`] with the error in the channel. A task it cannot read,
    /// or a channel it cannot open, ends the process.
    fn serve(&mut self, registry: &Registry, message: Message) -> u8 {
        let Some(task) = Task::parse(message.words.into_iter()) else {
            misused("a task it cannot read");
        };
        self.set_env(message.env);
        let mut channel = self
            .open(task.channel, true)
            .unwrap_or_else(|e| misused(&e.to_string()));
        let done = registry
            .job(&task.job, &task.args)
            .and_then(|job| match &task.work {
                Work::Map { path, start, end } => {
                    self.map(job.as_ref(), path, *start..*end, task.form, &channel)
                }
                Work::Reduce { runs } => self.reduce(job.as_ref(), runs, task.form, &channel),
            });
        let Err(e) = done else { return DONE };
        let told = channel
            .set_len(0)
            .and_then(|()| channel.rewind())
            .and_then(|()| channel.write_all(e.to_string().as_bytes()));
        if told.is_err() {
            eprintln!("ember worker: {e}");
        }
        JOB_FAILED
    }

    /// Sets the task's variables, and removes the last task's others.
    fn set_env(&mut self, env: Vec<(OsString, OsString)>) {
        // The runtime's thread is idle between tasks: nothing reads the
        // environment while it changes.
        for name in self.env.drain(..) {
            std::env::remove_var(name);
        }
        for (name, value) in env {
            std::env::set_var(&name, value);
            self.env.push(name);
        }
    }

    /// The parent's descriptor `fd`, opened by its name in the parent's
    /// `/proc` (for writing if `write`).
    fn open(&self, fd: i32, write: bool) -> Result<File> {
        let path = format!("/proc/{}/fd/{fd}", self.parent);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(&path);
        file.map_err(|e| Error::io(path, e))
    }
}

/// A worker's task and job, from its arguments.
struct Task {
    job: String,
    channel: i32,
    form: Form,
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
        let form = parse_form(&text()?)?;
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
            form,
            work,
            args,
        })
    }
}

impl Worker {
    /// Maps bytes `range` of the file at `path` with `job` on one thread,
    /// into `channel`, in `form`.
    fn map(
        &mut self,
        job: &dyn StreamJob,
        path: &Path,
        range: Range<usize>,
        form: Form,
        channel: &File,
    ) -> Result<()> {
        let data: &[u8] = match range.is_empty() {
            false => mapped(&mut self.mapped, path)?.get(range).ok_or_else(|| {
                Error::InvalidInput(format!("'{}' is shorter than its split", path.display()))
            })?,
            true => &[],
        };
        let mut out = BufWriter::with_capacity(1 << 16, channel);
        let (input, opts) = (Input::bytes(data), RunOptions::default());
        match (form, job.binary()) {
            (Form::Text, _) => job.map(&self.runtime, &input, &opts, &mut out)?,
            (Form::Binary, Some(binary)) => {
                binary.map_records(&self.runtime, &input, &opts, &mut out)?
            }
            (Form::Binary, None) => return Err(no_binary("map")),
        };
        out.flush().map_err(|e| Error::io("<channel>", e))
    }

    /// Reduces the merge of `runs` (each sorted by key, in `form`) with
    /// `job`, into `channel` in `form`.
    fn reduce(&self, job: &dyn StreamJob, runs: &[Run], form: Form, channel: &File) -> Result<()> {
        let maps = runs
            .iter()
            .map(|run| {
                let file = self.open(run.fd, false)?;
                // SAFETY: read-only; the channel's writer finished its task,
                // and the parent never writes it.
                let map =
                    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io("<channel>", e))?;
                match map.get(run.start..run.end) {
                    Some(_) => Ok((map, run.start..run.end)),
                    None => Err(Error::InvalidInput("a run past its channel's end".into())),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let merged = merge::Merged::new(form, maps.iter().map(|(m, r)| &m[r.clone()]).collect());
        let mut out = BufWriter::with_capacity(1 << 16, channel);
        let name = "<map output>";
        match (form, job.binary()) {
            (Form::Text, _) => job.reduce(name, &mut merged.lines(), &mut out)?,
            (Form::Binary, Some(binary)) => {
                binary.reduce_records(name, &mut merged.records(), &mut out)?
            }
            (Form::Binary, None) => return Err(no_binary("reduce")),
        }
        out.flush().map_err(|e| Error::io("<channel>", e))
    }
}

/// The error for a task asked for a binary form its job does not have: a
/// parent of another build.
fn no_binary(role: &str) -> Error {
    Error::InvalidInput(format!("this job's {role} has no binary form"))
}

/// The file at `path`, memory-mapped read-only: the mapping in `cache` if
/// the last task read the same file, else a new one kept there.
fn mapped<'c>(
    cache: &'c mut Option<(PathBuf, memmap2::Mmap)>,
    path: &Path,
) -> Result<&'c memmap2::Mmap> {
    if cache.as_ref().is_none_or(|(p, _)| p != path) {
        *cache = None;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: read-only; a file cut short under the map raises SIGBUS
        // in this worker alone, which the parent reports as the split's
        // worker dying.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        *cache = Some((path.to_path_buf(), map));
    }
    Ok(&cache.as_ref().expect("mapped above").1)
}
