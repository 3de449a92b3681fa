//! What a parent and its workers agree on: the names a worker is started
//! with and the statuses it exits with. The parent's side is
//! [`super::spawn`] and [`super::tasks`], the worker's [`super::worker`];
//! both import this module and nothing of each other.
//!
//! The environment variable [`WORKER_ENV`] holds [`PROTOCOL`]; the
//! arguments are the role (`map` or `reduce`), the job's name, the output
//! channel's descriptor (left open across `exec`), the role's arguments,
//! then the job's arguments. A map's are the file and the split's start
//! and end; a reduce's the number of runs it merges, then each [`Run`] as
//! `FD:START:END`, a byte range of a map channel the parent left open for
//! it. A worker exits 0 when its task is done, and [`JOB_FAILED`] with the
//! job's error message in the channel (in place of its output) when the
//! job returned an error; anything else (a signal, another status) is a
//! death, which the parent may retry.

use std::ffi::OsString;
use std::os::fd::RawFd;

/// Set (to [`PROTOCOL`]) in a worker's environment, and only there.
pub(super) const WORKER_ENV: &str = "EMBER_ISOLATE_WORKER";
/// The protocol's version: a worker of another build of the program
/// refuses to run rather than misread its arguments.
pub(super) const PROTOCOL: &str = "2";
/// A worker's exit status when the job returned an error.
pub(super) const JOB_FAILED: i32 = 3;
/// Set in a worker's environment to its attempt at the split: `0` for the
/// first, `1` for the first retry, ... (Hadoop's task attempt).
pub const ATTEMPT_ENV: &str = "EMBER_ISOLATE_ATTEMPT";
/// Set in a map worker's environment, for a job that numbers lines
/// ([`StreamJob::numbers_lines`](crate::stream::StreamJob::numbers_lines)),
/// to the index of its split's first line over all the run's files.
pub const FIRST_LINE_ENV: &str = "ember_map_input_first_line";

/// A byte range of one map channel: the lines of a key range that one
/// mapper wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// The channel, a descriptor of the parent that the reduce worker
    /// inherits.
    pub(super) fd: RawFd,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Run {
    /// The argument that names the run to a reduce worker: `FD:START:END`.
    pub(super) fn arg(&self) -> OsString {
        format!("{}:{}:{}", self.fd, self.start, self.end).into()
    }

    /// A run from its argument.
    pub(super) fn parse(arg: &str) -> Option<Run> {
        let mut parts = arg.split(':').map(str::parse::<usize>);
        let (fd, start, end) = (
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        let fd = RawFd::try_from(fd).ok()?;
        (parts.next().is_none() && start <= end).then_some(Run { fd, start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_reads_back_from_its_argument() {
        let run = Run {
            fd: 7,
            start: 10,
            end: 4096,
        };
        assert_eq!(Run::parse(run.arg().to_str().unwrap()), Some(run));
        for bad in ["7:10", "7:10:4096:1", "x:1:2", "7:9:8", "-1:0:0"] {
            assert_eq!(Run::parse(bad), None, "{bad}");
        }
    }
}
