//! Running the workers of a phase (the map tasks, then the reduce tasks):
//! at most [`Options::workers`] at once, a dead worker's task retried on a
//! fresh one, and no worker left behind however the run ends.

use std::collections::{HashMap, VecDeque};

use crossbeam_channel::{unbounded, Sender};

use super::spawn::{self, Channel, Exit, Launch, Spec, Store};
use super::{Options, Task, WorkerStats};
use crate::error::{Death, Error, Result};

/// What a phase's worker is given to do: a split to map, a key range to
/// reduce.
pub(super) trait Assignment {
    /// How to start a worker on it.
    fn spec(&self) -> Spec;
    /// The task in the stats, as the phase's `index`-th.
    fn task(index: usize) -> Task;
    /// The run's error when its worker died on every one of `attempts`.
    fn died(&self, death: Death, attempts: u32) -> Error;
    /// The run's error when its job returned the error `message`.
    fn failed(&self, message: String) -> Error;
}

/// A worker that has not been reaped yet, and its task.
struct Running {
    worker: spawn::Worker,
    task: usize,
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

/// Does every task in a worker process: each task's output channel, in
/// task order, and every worker's stats. A new channel is kept where
/// `store` says for the bytes held by then: the `earlier` phase's
/// channels, this phase's finished ones and the running workers'.
pub(super) fn run_all<A: Assignment>(
    launch: &Launch,
    tasks: &[A],
    opts: &Options,
    store: &Store,
    earlier: &[Channel],
) -> Result<(Vec<Channel>, Vec<WorkerStats>)> {
    let mut crew = Crew::default();
    let mut queue: VecDeque<(usize, u32)> = (0..tasks.len()).map(|t| (t, 0)).collect();
    let mut channels: Vec<Option<Channel>> = (0..tasks.len()).map(|_| None).collect();
    // Finished channels no longer grow: their bytes are summed once.
    let mut finished: u64 = earlier.iter().map(Channel::len).sum();
    let mut stats = Vec::new();
    let (exited, exits) = unbounded();
    loop {
        while crew.running.len() < opts.workers {
            let Some((task, attempt)) = queue.pop_front() else {
                break;
            };
            let running = crew.running.values().map(|r| r.worker.channel.len());
            let held = finished + running.sum::<u64>();
            let worker = spawn::start(launch, tasks[task].spec(), attempt, &store.place(held))?;
            let pid = worker.pid;
            let running = Running {
                worker,
                task,
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
        stats.push(worker_stats(A::task(done.task), &done, exit, &usage));
        let task = &tasks[done.task];
        match exit {
            Exit::Done => {
                finished += done.worker.channel.len();
                channels[done.task] = Some(done.worker.channel);
            }
            Exit::JobFailed => return Err(task.failed(done.worker.channel.text())),
            Exit::Died(_) if done.attempt < opts.retries => {
                queue.push_front((done.task, done.attempt + 1));
            }
            Exit::Died(death) => return Err(task.died(death, done.attempt + 1)),
        }
    }
    let channels = channels.into_iter().map(|c| c.expect("every task done"));
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

fn worker_stats(task: Task, done: &Running, exit: Exit, usage: &libc::rusage) -> WorkerStats {
    WorkerStats {
        pid: done.worker.pid as u32,
        task,
        attempt: done.attempt,
        death: match exit {
            Exit::Died(death) => Some(death),
            Exit::Done | Exit::JobFailed => None,
        },
        peak_rss_kib: usage.ru_maxrss as u64,
        minor_faults: usage.ru_minflt as u64,
        major_faults: usage.ru_majflt as u64,
    }
}
