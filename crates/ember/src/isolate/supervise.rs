//! Running the map workers: at most [`Options::workers`] at once, a dead
//! worker's split retried on a fresh one, and no worker left behind however
//! the run ends.

use std::collections::{HashMap, VecDeque};

use crossbeam_channel::{unbounded, Sender};

use super::spawn::{self, Channel, Exit, Launch};
use super::splits::Split;
use super::{Options, WorkerStats};
use crate::error::{Error, Result};

/// A worker that has not been reaped yet, and what it maps.
struct Running {
    worker: spawn::Worker,
    split: usize,
    attempt: u32,
}

/// The run's workers not yet reaped: dropping it kills and reaps them, so
/// an error (or a panic) leaves no process behind.
#[derive(Default)]
struct Crew {
    running: HashMap<libc::pid_t, Running>,
}

impl Drop for Crew {
    fn drop(&mut self) {
        for (pid, _) in self.running.drain() {
            spawn::reap(pid, true);
        }
    }
}

/// Maps every split in a worker process: each split's channel, in split
/// order, and every worker's stats.
pub(super) fn map_all(
    launch: &Launch,
    splits: &[Split],
    opts: &Options,
) -> Result<(Vec<Channel>, Vec<WorkerStats>)> {
    let mut crew = Crew::default();
    let mut queue: VecDeque<(usize, u32)> = (0..splits.len()).map(|s| (s, 0)).collect();
    let mut channels: Vec<Option<Channel>> = (0..splits.len()).map(|_| None).collect();
    let mut stats = Vec::new();
    let (exited, exits) = unbounded();
    loop {
        while crew.running.len() < opts.workers {
            let Some((split, attempt)) = queue.pop_front() else {
                break;
            };
            let worker = spawn::start(launch, &splits[split], attempt)?;
            let pid = worker.pid;
            let running = Running {
                worker,
                split,
                attempt,
            };
            crew.running.insert(pid, running);
            watch(pid, exited.clone())?;
        }
        if crew.running.is_empty() {
            break;
        }
        let pid = exits.recv().expect("`exited` is held here");
        let Some(done) = crew.running.remove(&pid) else {
            continue;
        };
        let (exit, usage) = spawn::reap(pid, false);
        stats.push(worker_stats(&done, exit, &usage));
        let split = &splits[done.split];
        match exit {
            Exit::Mapped => channels[done.split] = Some(done.worker.channel),
            Exit::JobFailed => return Err(job_failed(split, &done.worker.channel)),
            Exit::Died(_) if done.attempt < opts.retries => {
                queue.push_front((done.split, done.attempt + 1));
            }
            Exit::Died(death) => {
                return Err(Error::WorkerDied {
                    path: split.path.clone(),
                    start: split.start,
                    end: split.end,
                    death,
                    attempts: done.attempt + 1,
                })
            }
        }
    }
    let channels = channels.into_iter().map(|c| c.expect("every split mapped"));
    Ok((channels.collect(), stats))
}

/// A thread that tells `exited` when worker `pid` has exited (without
/// reaping it): a death is seen at once, whichever worker it is.
fn watch(pid: libc::pid_t, exited: Sender<libc::pid_t>) -> Result<()> {
    std::thread::Builder::new()
        .name("ember-isolate-wait".into())
        .spawn(move || {
            // Exited, or not waitable: either way the supervisor reaps it.
            let _ = spawn::wait_exited(pid);
            let _ = exited.send(pid);
        })
        .map(drop)
        .map_err(|e| Error::io("<thread>", e))
}

fn worker_stats(done: &Running, exit: Exit, usage: &libc::rusage) -> WorkerStats {
    WorkerStats {
        pid: done.worker.pid as u32,
        split: done.split,
        attempt: done.attempt,
        death: match exit {
            Exit::Died(death) => Some(death),
            Exit::Mapped | Exit::JobFailed => None,
        },
        peak_rss_kib: usage.ru_maxrss as u64,
        minor_faults: usage.ru_minflt as u64,
        major_faults: usage.ru_majflt as u64,
    }
}

/// The error a worker's job returned, with the split it was mapping.
fn job_failed(split: &Split, channel: &Channel) -> Error {
    Error::InvalidInput(format!(
        "mapping '{}' bytes {}..{}: {}",
        split.path.display(),
        split.start,
        split.end,
        channel.text()
    ))
}
