//! Starting a worker process with its channel, and reaping it with what it
//! cost.
//!
//! Every running worker is listed in [`LIVE`] until it is reaped, so that
//! [`kill_workers`] (a signal handler's cleanup) can kill it. A worker is
//! struck off the list only once it has exited and before it is reaped, so
//! a pid that is killed is never one the system has handed to another
//! process.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};

use super::protocol::{PROTOCOL, SERVE, WORKER_ENV};
use crate::error::{Death, Error, Result};

/// The pids of the workers not yet reaped.
static LIVE: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<libc::pid_t>> {
    // A panic while the list was held leaves it valid (a push or a remove).
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills (SIGKILL) every isolated worker of this process: for a signal
/// handler that is about to exit (the workers would die with the process
/// anyway, `PR_SET_PDEATHSIG`; this is sooner).
pub fn kill_workers() {
    for &pid in live().iter() {
        // SAFETY: `kill` has no memory-safety preconditions; the pid is a
        // child not yet reaped (see the module doc).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// What every worker is started as: this program.
pub(super) struct Launch {
    /// The program to execute: this one.
    pub(super) program: PathBuf,
}

/// Where a new channel is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// In shared memory: a memfd.
    Memory,
    /// In an unnamed file (`O_TMPFILE`) in this directory: page-cache
    /// pages the kernel writes back to disk under memory pressure, never
    /// visible by name, and freed like a memfd when the last descriptor
    /// closes, however the run ends.
    Disk(PathBuf),
}

/// Where a run keeps its channels: in shared memory while the channels it
/// holds stay within its memory budget, past it in unnamed files in its
/// spill directory. A channel is placed when its task starts, so the
/// budget can be passed by what the tasks running then write.
pub(super) struct Store {
    /// The memory budget of the channels, in bytes.
    pub(super) budget: u64,
    /// Where channels past the budget go.
    pub(super) dir: PathBuf,
}

impl Store {
    /// Where a new channel goes while channels of `held` bytes are held.
    pub(super) fn place(&self, held: u64) -> Place {
        match held < self.budget {
            true => Place::Memory,
            false => Place::Disk(self.dir.clone()),
        }
    }
}

/// A worker's output: shared memory, or an unnamed file ([`Place`]), that
/// grows as the worker writes it and is freed when its last descriptor
/// closes.
pub(super) struct Channel {
    file: File,
    on_disk: bool,
}

/// A channel's contents, mapped.
pub(super) enum Contents {
    Empty,
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Contents {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Contents::Empty => &[],
            Contents::Mapped(m) => m,
        }
    }
}

impl Channel {
    /// A new, empty channel kept at `place` (its descriptor closed on
    /// `exec`: a worker opens it by its name in `/proc`).
    pub(super) fn new(place: &Place) -> Result<Channel> {
        let file = match place {
            Place::Memory => super::shared::memfd(c"ember-channel")?,
            Place::Disk(dir) => tempfile::tempfile_in(dir).map_err(|source| Error::Spill {
                path: dir.clone(),
                source,
            })?,
        };
        Ok(Channel {
            file,
            on_disk: *place != Place::Memory,
        })
    }

    /// The descriptor, which a reduce worker inherits.
    pub(super) fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Whether the channel is a file on disk rather than shared memory.
    pub(super) fn on_disk(&self) -> bool {
        self.on_disk
    }

    /// Bytes written to the channel so far (0 if it cannot be read).
    pub(super) fn len(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }

    /// The channel's contents, once its worker has exited.
    pub(super) fn map(&self) -> Result<Contents> {
        let len = self
            .file
            .metadata()
            .map_err(|e| Error::io("<channel>", e))?
            .len();
        if len == 0 {
            return Ok(Contents::Empty);
        }
        // SAFETY: the only writer, the worker, has exited; this process
        // never writes the channel.
        let map =
            unsafe { memmap2::Mmap::map(&self.file) }.map_err(|e| Error::io("<channel>", e))?;
        Ok(Contents::Mapped(map))
    }

    /// The channel's contents as text (a failed job's message).
    pub(super) fn text(&self) -> String {
        match self.map() {
            Ok(contents) => String::from_utf8_lossy(&contents).into_owned(),
            Err(e) => e.to_string(),
        }
    }
}

/// A started worker: its pid, the socket its tasks go down and the pipe
/// its replies come up.
pub(super) struct Worker {
    pub(super) pid: libc::pid_t,
    pub(super) tasks: Tasks,
    pub(super) replies: File,
}

/// The parent's end of a worker's task socket. A socket rather than a
/// pipe: a task sent to a worker that has died is an error (`EPIPE`),
/// not a `SIGPIPE` that would end the parent (the `ember` command dies
/// of SIGPIPE, for `| head`).
pub(super) struct Tasks(UnixStream);

impl Tasks {
    /// Sends `bytes` whole.
    pub(super) fn send(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            // SAFETY: the pointer and length are those of `bytes`; the
            // descriptor is this socket's.
            let sent = unsafe {
                libc::send(
                    self.0.as_raw_fd(),
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            match sent {
                n if n >= 0 => bytes = &bytes[n as usize..],
                _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                _ => return Err(io::Error::last_os_error()),
            }
        }
        Ok(())
    }
}

/// Starts a worker process, which waits for its first task.
pub(super) fn start(launch: &Launch) -> Result<Worker> {
    let (tasks, task_end) = UnixStream::pair().map_err(|e| Error::io("<socket>", e))?;
    let (replies, reply_end) = pipe()?;
    let open = [task_end.as_raw_fd(), reply_end.as_raw_fd()];
    // SAFETY: `getpid` has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut command = Command::new(&launch.program);
    command
        .arg(SERVE)
        .args(open.map(|fd| fd.to_string()))
        .env(WORKER_ENV, PROTOCOL)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: the closure only makes async-signal-safe calls (prctl,
    // getppid, fcntl) and allocates nothing.
    unsafe { command.pre_exec(move || in_child(parent, &open)) };
    let mut live = live();
    let child = command.spawn().map_err(|e| Error::io(&launch.program, e))?;
    let pid = child.id() as libc::pid_t;
    live.push(pid);
    // The worker's ends close here, so that its death closes the pipes.
    drop((task_end, reply_end));
    Ok(Worker {
        pid,
        tasks: Tasks(tasks),
        replies,
    })
}

/// A pipe, both ends closed on `exec`: (read end, write end).
fn pipe() -> Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two descriptors for the call to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::io("<pipe>", io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just made and are owned by nothing else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// In the forked child, before it executes the program: die with the
/// parent, and keep the pipes `open` across `exec` (under the numbers
/// they have in the parent, which no other descriptor of the child has).
fn in_child(parent: libc::pid_t, open: &[RawFd]) -> io::Result<()> {
    // SAFETY: these calls have no memory-safety preconditions.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died before the line above.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        for &fd in open {
            if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Waits until child process `pid` has exited, without reaping it (so its
/// pid is not reused while a list of live children still holds it); an
/// error if it is not a child of this process that can be waited for.
pub fn wait_exited(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: `info` is a valid, writable siginfo_t; `waitid` only
        // writes it.
        let done = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if done == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps worker `pid` (killing it first if `kill`), striking it off the
/// live list: how it died, if it did not exit with status 0 (the end of
/// its tasks), and its resource usage.
pub(super) fn reap(pid: libc::pid_t, kill: bool) -> (Option<Death>, libc::rusage) {
    if kill {
        // SAFETY: no memory-safety preconditions; `pid` is not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // An error leaves nothing to wait for: the reap below says how it ended.
    let _ = wait_exited(pid);
    live().retain(|&p| p != pid);
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; the pointers are to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    while unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
    let death = if libc::WIFSIGNALED(status) {
        Some(Death::Signal(libc::WTERMSIG(status)))
    } else {
        match libc::WEXITSTATUS(status) {
            0 => None,
            code => Some(Death::Status(code)),
        }
    };
    (death, usage)
}
