//! The worker processes and the tasks of a phase (the map tasks, then the
//! reduce tasks): at most [`Options::workers`] processes, each started
//! once and given task after task; a task whose worker died is retried on
//! a fresh one, and no worker is left behind however the run ends.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;

use crossbeam_channel::{unbounded, Receiver, Sender};

use super::protocol::{form_word, Message, ATTEMPT_ENV, DONE, JOB_FAILED};
use super::spawn::{self, Channel, Launch, Store};
use super::{Options, Task, TaskRun, WorkerStats};
use crate::error::{Death, Error, Result};
use crate::stream::{Form, Role};

/// What a phase's worker is given to do: a split to map, a key range to
/// reduce.
pub(super) trait Assignment {
    /// What the worker is told.
    fn spec(&self) -> Spec;
    /// The task in the stats, as the phase's `index`-th.
    fn task(index: usize) -> Task;
    /// The run's error when its worker died on every one of `attempts`.
    fn died(&self, death: Death, attempts: u32) -> Error;
    /// The run's error when its job returned the error `message`.
    fn failed(&self, message: String) -> Error;
}

/// One task as a worker is told it.
pub(super) struct Spec {
    /// Map or reduce.
    pub(super) role: Role,
    /// The role's words, after the job's name and the channel.
    pub(super) words: Vec<OsString>,
    /// Variables set in the environment of the task's job.
    pub(super) env: Vec<(&'static str, OsString)>,
}

/// The job every task of a run runs: its name in the registry and its
/// arguments.
pub(super) struct JobCall<'a> {
    pub(super) name: &'a str,
    pub(super) args: &'a [String],
    /// The form of the tasks' output.
    pub(super) form: Form,
}

impl Spec {
    /// The message that gives the task to a worker, its `attempt`-th try,
    /// writing to the parent's descriptor `channel`.
    fn message(self, job: &JobCall<'_>, channel: i32, attempt: u32) -> Message {
        let mut words = vec![
            self.role.name().into(),
            job.name.into(),
            channel.to_string().into(),
            form_word(job.form).into(),
        ];
        words.extend(self.words);
        words.extend(job.args.iter().map(OsString::from));
        let mut env: Vec<(OsString, OsString)> =
            self.env.into_iter().map(|(k, v)| (k.into(), v)).collect();
        env.push((ATTEMPT_ENV.into(), attempt.to_string().into()));
        Message { words, env }
    }
}

/// What a worker's pipe of replies says.
enum Event {
    /// A reply byte: the end of its task.
    Reply(u8),
    /// The pipe closed: the worker exited or died.
    Gone,
}

/// A worker's pid and what its pipe of replies said.
type Heard = (libc::pid_t, Event);

/// A task a worker is doing.
struct Busy {
    task: usize,
    attempt: u32,
    channel: Channel,
}

/// A live worker process: the socket its tasks go down, the task it is
/// doing, the tasks it has done.
struct Process {
    tasks: spawn::Tasks,
    busy: Option<Busy>,
    done: usize,
}

/// The worker processes of one or more runs: started when a task needs
/// one, given task after task, and reaped by [`Pool::finish`] or when
/// dropped (a worker with a task killed first, so an error or a panic
/// leaves none behind).
pub(super) struct Pool {
    launch: Launch,
    size: usize,
    processes: HashMap<libc::pid_t, Process>,
    /// Every worker's replies, by pid: a sender for each new listener.
    events: (Sender<Heard>, Receiver<Heard>),
    /// The processes reaped so far.
    reaped: Vec<WorkerStats>,
}

impl Drop for Pool {
    /// Kills and reaps the workers that have a task (an error or a panic
    /// ended the run); the idle ones end as [`Pool::finish`] ends them.
    fn drop(&mut self) {
        for (pid, process) in self.processes.drain() {
            let busy = process.busy.is_some();
            drop(process.tasks);
            spawn::reap(pid, busy);
        }
    }
}

impl Pool {
    /// A pool of at most `size` processes of `launch`; none started yet.
    pub(super) fn new(launch: Launch, size: usize) -> Pool {
        Pool {
            launch,
            size: size.max(1),
            processes: HashMap::new(),
            events: unbounded(),
            reaped: Vec::new(),
        }
    }

    /// The processes reaped since the last call: those that died, and,
    /// after [`Pool::finish`], all.
    pub(super) fn take_reaped(&mut self) -> Vec<WorkerStats> {
        std::mem::take(&mut self.reaped)
    }

    /// Ends every worker (they exit when their task socket closes) and reaps
    /// it.
    pub(super) fn finish(&mut self) {
        for (pid, process) in std::mem::take(&mut self.processes) {
            drop(process.tasks);
            let (death, usage) = spawn::reap(pid, false);
            self.reaped
                .push(worker_stats(pid, process.done, death, &usage));
        }
    }

    /// An idle worker, started if none is and the pool has room; `None`
    /// if every one is busy and the pool is full.
    fn idle(&mut self) -> Result<Option<libc::pid_t>> {
        let idle = self.processes.iter().find(|(_, p)| p.busy.is_none());
        if let Some((&pid, _)) = idle {
            return Ok(Some(pid));
        }
        if self.processes.len() >= self.size {
            return Ok(None);
        }
        let spawn::Worker {
            pid,
            tasks,
            replies,
        } = spawn::start(&self.launch)?;
        let process = Process {
            tasks,
            busy: None,
            done: 0,
        };
        self.processes.insert(pid, process);
        listen(pid, replies, self.events.0.clone())?;
        Ok(Some(pid))
    }

    /// Does every one of `tasks` in a worker: each task's output channel,
    /// in task order, and every attempt. A new channel is kept where
    /// `store` says for the bytes held by then: the `earlier` phase's
    /// channels, this phase's finished ones and the running tasks'.
    pub(super) fn run_all<A: Assignment>(
        &mut self,
        job: &JobCall<'_>,
        tasks: &[A],
        opts: &Options,
        store: &Store,
        earlier: &[Channel],
    ) -> Result<(Vec<Channel>, Vec<TaskRun>)> {
        let mut queue: VecDeque<(usize, u32)> = (0..tasks.len()).map(|t| (t, 0)).collect();
        let mut channels: Vec<Option<Channel>> = (0..tasks.len()).map(|_| None).collect();
        // Finished channels no longer grow: their bytes are summed once.
        let mut finished: u64 = earlier.iter().map(Channel::len).sum();
        let mut runs = Vec::new();
        loop {
            while let Some(&(task, attempt)) = queue.front() {
                let Some(pid) = self.idle()? else { break };
                queue.pop_front();
                let held = finished + self.busy().map(|b| b.channel.len()).sum::<u64>();
                let channel = Channel::new(&store.place(held))?;
                let message = tasks[task].spec().message(job, channel.fd(), attempt);
                let process = self.processes.get_mut(&pid).expect("idle");
                // A worker that cannot be told has died: its pipe's end says so.
                let _ = process.tasks.send(&message.frame());
                process.busy = Some(Busy {
                    task,
                    attempt,
                    channel,
                });
            }
            if self.busy().next().is_none() {
                break;
            }
            let (pid, event) = self.events.1.recv().expect("`events` is held here");
            let Some(process) = self.processes.get_mut(&pid) else {
                continue;
            };
            match event {
                Event::Reply(reply) => {
                    let Some(done) = process.busy.take() else {
                        continue;
                    };
                    process.done += 1;
                    runs.push(task_run(pid, A::task(done.task), done.attempt, None));
                    match reply {
                        DONE => {
                            finished += done.channel.len();
                            channels[done.task] = Some(done.channel);
                        }
                        JOB_FAILED => return Err(tasks[done.task].failed(done.channel.text())),
                        other => {
                            let message = format!("an unknown reply {other} from worker {pid}");
                            return Err(tasks[done.task].failed(message));
                        }
                    }
                }
                Event::Gone => {
                    let process = self.processes.remove(&pid).expect("listed");
                    let (death, usage) = spawn::reap(pid, true);
                    self.reaped
                        .push(worker_stats(pid, process.done, death, &usage));
                    let Some(busy) = process.busy else { continue };
                    // A worker that ends while it has a task has died, whatever its status.
                    let death = death.unwrap_or(Death::Status(0));
                    runs.push(task_run(pid, A::task(busy.task), busy.attempt, Some(death)));
                    if busy.attempt >= opts.retries {
                        return Err(tasks[busy.task].died(death, busy.attempt + 1));
                    }
                    queue.push_front((busy.task, busy.attempt + 1));
                }
            }
        }
        let channels = channels.into_iter().map(|c| c.expect("every task done"));
        Ok((channels.collect(), runs))
    }

    /// The tasks being done.
    fn busy(&self) -> impl Iterator<Item = &Busy> {
        self.processes.values().filter_map(|p| p.busy.as_ref())
    }
}

/// A thread that tells `events` each reply of worker `pid` read from
/// `replies`, then that its pipe closed: a death is seen at once,
/// whichever worker it is.
fn listen(pid: libc::pid_t, mut replies: File, events: Sender<(libc::pid_t, Event)>) -> Result<()> {
    std::thread::Builder::new()
        .name("ember-isolate-listen".into())
        .spawn(move || {
            let mut reply = [0u8];
            while let Ok(1) = replies.read(&mut reply) {
                if events.send((pid, Event::Reply(reply[0]))).is_err() {
                    return;
                }
            }
            let _ = events.send((pid, Event::Gone));
        })
        .map(drop)
        .map_err(|e| Error::io("<thread>", e))
}

fn task_run(pid: libc::pid_t, task: Task, attempt: u32, death: Option<Death>) -> TaskRun {
    TaskRun {
        pid: pid as u32,
        task,
        attempt,
        death,
    }
}

fn worker_stats(
    pid: libc::pid_t,
    tasks: usize,
    death: Option<Death>,
    usage: &libc::rusage,
) -> WorkerStats {
    WorkerStats {
        pid: pid as u32,
        tasks,
        death,
        peak_rss_kib: usage.ru_maxrss as u64,
        minor_faults: usage.ru_minflt as u64,
        major_faults: usage.ru_majflt as u64,
    }
}
