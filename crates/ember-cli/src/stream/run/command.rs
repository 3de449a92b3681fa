//! One command of a streaming job: `sh -c CMD` in a process group of its
//! own, fed on standard input by a thread of its own, its standard output
//! read by the caller (or sent to a file), and its standard error read by a
//! third thread that keeps the last line for the error message.
//!
//! Every running command's process group is listed in [`LIVE`], so that a
//! failure elsewhere ([`Control::fail`]) or a signal ([`kill_children`])
//! kills it, with whatever it started (a shell pipeline, a script's
//! children). A command is struck off the list only after it has exited
//! and before it is reaped, so a group id that is killed is never one that
//! the system has handed to another process.

use std::fmt;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;

use anyhow::{anyhow, Context, Result};
use ember::isolate::wait_exited;

/// Process group ids (each the id of its leader, the `sh` we started) of
/// the commands running now.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<u32>> {
    // A panic while the list was held leaves it valid (a push or a remove).
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every running command with what it started (SIGKILL to each
/// process group): on a failure, and on a signal before ember exits.
pub(crate) fn kill_children() {
    for &group in live().iter() {
        // SAFETY: `kill` has no memory-safety preconditions; the group is
        // led by a child not yet reaped (see the module doc).
        unsafe {
            libc::kill(-(group as libc::pid_t), libc::SIGKILL);
        }
    }
}

/// A job's failure state, shared by everything that runs its commands.
#[derive(Default)]
pub(super) struct Control {
    /// Set once, by the first failure; read before a command starts.
    /// `SeqCst`, so that a command listed after the store is seen to be
    /// doomed by [`failed`](Self::failed) (see [`Group::join`]).
    failed: AtomicBool,
    /// The first failure: what the job reports.
    error: Mutex<Option<anyhow::Error>>,
}

impl Control {
    /// True once a task has failed: start nothing more.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Records `e` if it is the first failure, then kills every running
    /// command (their own failures, which follow, are not reported).
    pub(super) fn fail(&self, e: anyhow::Error) {
        {
            let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(e);
            }
        }
        self.failed.store(true, Ordering::SeqCst);
        kill_children();
    }

    /// The first failure, if any: the job's result.
    pub(super) fn result(&self) -> Result<()> {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// What a command does in the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Mapper,
    Combiner,
    Reducer,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Mapper => "mapper",
            Role::Combiner => "combiner",
            Role::Reducer => "reducer",
        })
    }
}

/// One run of a command: what it is, what it works on and its
/// environment.
pub(super) struct Task<'a> {
    pub(super) role: Role,
    pub(super) cmd: &'a str,
    /// What it works on, for errors: `split 2 ('a.txt', bytes 0..4096)`
    /// or `partition 3`.
    pub(super) what: String,
    /// Variables added to ember's environment.
    pub(super) env: Vec<(&'static str, String)>,
}

/// Runs `task`: `feed` writes its standard input (on a thread of its
/// own), `stdout` is where its standard output goes, and `read` gets that
/// output when it is a pipe. Fails, naming the task, if it cannot start,
/// if `read` or `feed` fail (the command is then killed), or if it exits
/// non-zero or on a signal.
pub(super) fn run<R>(
    task: &Task<'_>,
    ctl: &Control,
    stdout: Stdio,
    feed: impl FnOnce(&mut dyn Write) -> io::Result<()> + Send,
    read: impl FnOnce(Option<ChildStdout>) -> Result<R>,
) -> Result<R> {
    let mut child = spawn(task, stdout)?;
    let group = Group::join(ctl, &child);
    let stdin = child.stdin.take().expect("stdin is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let out = child.stdout.take();
    let (fed, tail, got) = thread::scope(|s| {
        let writer = s.spawn(move || feed_stdin(stdin, feed));
        let tail = s.spawn(move || last_line(&mut stderr));
        let got = read(out);
        if got.is_err() {
            group.kill();
        }
        (join(writer), join(tail), got)
    });
    let status = group
        .wait(&mut child)
        .context("cannot wait for a command")?;
    let got = got?;
    fed.with_context(|| format!("cannot feed the {} '{}'", task.role, one_line(task.cmd)))?;
    if !status.success() {
        return Err(failed(task, status, &tail));
    }
    Ok(got)
}

/// Starts `sh -c CMD` in a process group of its own.
fn spawn(task: &Task<'_>, stdout: Stdio) -> Result<Child> {
    Command::new("sh")
        .arg("-c")
        .arg(task.cmd)
        .envs(task.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start the {} '{}'", task.role, one_line(task.cmd)))
}

/// A started command's place in [`LIVE`].
struct Group(u32);

impl Group {
    /// Lists `child`'s group, and kills it at once if the job has already
    /// failed (a failure between the start and the listing would have
    /// missed it).
    fn join(ctl: &Control, child: &Child) -> Group {
        live().push(child.id());
        let group = Group(child.id());
        if ctl.failed() {
            group.kill();
        }
        group
    }

    fn kill(&self) {
        // SAFETY: as in `kill_children`: the leader is not reaped yet.
        unsafe {
            libc::kill(-(self.0 as libc::pid_t), libc::SIGKILL);
        }
    }

    /// Waits for the leader to exit, strikes the group off the list, then
    /// reaps the leader.
    fn wait(self, child: &mut Child) -> io::Result<ExitStatus> {
        let exited = wait_exited(self.0 as libc::pid_t);
        live().retain(|&g| g != self.0);
        exited?;
        child.wait()
    }
}

fn join<T>(h: thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Writes a command's standard input. A command that exits without
/// reading all of it (`head`) is not an error: its exit status tells.
fn feed_stdin(
    stdin: ChildStdin,
    feed: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    block_sigpipe();
    let mut w = BufWriter::with_capacity(1 << 16, stdin);
    match feed(&mut w).and_then(|()| w.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Blocks SIGPIPE on this thread, so that a write to a command that has
/// exited fails with `BrokenPipe` instead of killing ember (which lets
/// SIGPIPE end it when its own standard output goes away). The signal is
/// raised for the writing thread only and stays pending on it, and the
/// thread ends with the command's input.
fn block_sigpipe() {
    // SAFETY: `set` is a valid sigset_t, initialised by `sigemptyset`
    // before use; `pthread_sigmask` only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Reads `r` to its end and returns its last non-empty line (at most 4 KiB
/// of it), lossily decoded.
fn last_line(r: &mut impl Read) -> String {
    const KEEP: usize = 4096;
    let mut tail: Vec<u8> = Vec::with_capacity(2 * KEEP);
    let mut buf = [0u8; KEEP];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > KEEP {
                    tail.drain(..tail.len() - KEEP);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().map(str::trim).rfind(|l| !l.is_empty());
    line.unwrap_or("").to_string()
}

/// The error of a command that exited non-zero or on a signal.
fn failed(task: &Task<'_>, status: ExitStatus, stderr: &str) -> anyhow::Error {
    let how = match (status.code(), status.signal()) {
        (Some(127), _) => "exit status 127 (the shell could not find the command)".to_string(),
        (Some(126), _) => "exit status 126 (the command is not executable)".to_string(),
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
        (None, None) => status.to_string(),
    };
    let last = match stderr {
        "" => "no stderr".to_string(),
        s => format!("last stderr line: {s}"),
    };
    anyhow!(
        "{} '{}' failed on {}: {how}; {last}",
        task.role,
        one_line(task.cmd),
        task.what
    )
}

/// A command as an error shows it: on one line (a script given on several
/// lines has its whitespace runs turned into single spaces), cut after 200
/// characters.
fn one_line(cmd: &str) -> String {
    const MAX: usize = 200;
    let flat = match cmd.contains(['\n', '\r']) {
        true => cmd.split_whitespace().collect::<Vec<_>>().join(" "),
        false => cmd.to_string(),
    };
    match flat.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &flat[..cut]),
        None => flat,
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGQUIT => " (SIGQUIT)",
        libc::SIGILL => " (SIGILL)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        libc::SIGFPE => " (SIGFPE)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_stderr_skips_blank_lines_and_keeps_the_end() {
        let mut r: &[u8] = b"first\nTraceback\n  ValueError: bad\n\n";
        assert_eq!(last_line(&mut r), "ValueError: bad");
        let long = [b"x\n".repeat(10_000), b"last".to_vec()].concat();
        assert_eq!(last_line(&mut long.as_slice()), "last");
        assert_eq!(last_line(&mut &b""[..]), "");
    }

    #[test]
    fn a_command_shows_on_one_line() {
        assert_eq!(one_line("sort -k1,1  | uniq"), "sort -k1,1  | uniq");
        assert_eq!(
            one_line("case x in\n  *) cat;;\r\nesac"),
            "case x in *) cat;; esac"
        );
        assert_eq!(
            one_line(&"é".repeat(300)),
            format!("{}...", "é".repeat(200))
        );
    }
}
