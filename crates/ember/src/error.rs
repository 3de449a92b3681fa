//! Errors as values: every failure says what happened and where.

use std::fmt;
use std::path::PathBuf;

/// The phases of a run, named in errors and stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Cutting the input into splits.
    Split,
    /// Mapping a sample of the splits to size the containers.
    Sample,
    /// Running `map` over the splits.
    Map,
    /// Joining each partition across workers and running `reduce`.
    Reduce,
    /// Sorting the output.
    Merge,
}

impl Phase {
    /// The phase's name, as errors, stats and traces print it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Split => "split",
            Phase::Sample => "sample",
            Phase::Map => "map",
            Phase::Reduce => "reduce",
            Phase::Merge => "merge",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What can go wrong in ember.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened, read or mapped.
    #[error("cannot read '{}': {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A directory was given where a file was expected.
    #[error("'{}' is a directory, not a file", path.display())]
    IsDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// User code panicked; the runtime is still usable.
    #[error("the job's {phase} function panicked: {message}")]
    Panicked {
        /// The phase whose user code panicked.
        phase: Phase,
        /// The panic message.
        message: String,
    },
    /// A record the job's `map` could not interpret (it returned
    /// [`Malformed`](crate::Malformed)).
    #[error("malformed record in '{}' at byte {offset}: {message}", path.display())]
    Malformed {
        /// The input part (file) that holds the record.
        path: PathBuf,
        /// The record's byte offset in that part.
        offset: u64,
        /// What `map` said is wrong with it.
        message: String,
    },
    /// An input file changed while a run was reading it: it was truncated,
    /// grown or rewritten, so the run's output would mix old and new bytes
    /// (or miss some). A memory-mapped file cut short under a read does not
    /// kill the process (as an unguarded map's SIGBUS would): the run ends
    /// with this error, and the runtime is usable after.
    #[error(
        "input '{}' changed while it was being read ({})",
        path.display(),
        changed_how(*was, *now)
    )]
    InputChanged {
        /// The file.
        path: PathBuf,
        /// Its length in bytes when it was opened.
        was: u64,
        /// Its length when the change was seen (for a file read in chunks:
        /// the bytes read before its end).
        now: u64,
    },
    /// Input that the job cannot interpret.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A setting out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The caller cancelled the run
    /// ([`Progress::cancel`](crate::Progress::cancel)).
    #[error("the run was cancelled")]
    Cancelled,
    /// Spilling intermediate data to disk failed (a full disk, a spill
    /// directory that cannot be written).
    #[error("cannot spill to '{}': {source}", path.display())]
    Spill {
        /// The spill file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Writing a run's output failed: the error a caller's output sink
    /// returns to [`Runtime::run_each`](crate::Runtime::run_each) (a full
    /// disk, a closed pipe).
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
    /// The intermediate data passed the memory limit the caller set, and
    /// the job cannot spill (it has no [`Codec`](crate::spill::Codec)).
    #[error(
        "the intermediate data passed the memory limit of {limit} bytes, and this job \
         cannot spill to disk: raise the limit"
    )]
    MemoryLimit {
        /// The limit, in bytes.
        limit: u64,
    },
    /// An isolated map worker process died on a split, on every attempt
    /// ([`isolate`](crate::isolate)).
    #[error(
        "the map worker of '{}' bytes {start}..{end} {death} (attempts: {attempts})",
        path.display()
    )]
    WorkerDied {
        /// The split's file.
        path: PathBuf,
        /// The split's first byte.
        start: u64,
        /// The byte after the split's last.
        end: u64,
        /// How the last attempt's worker died.
        death: Death,
        /// The attempts made.
        attempts: u32,
    },
    /// An isolated reduce worker process died on its key range, on every
    /// attempt ([`isolate`](crate::isolate)).
    #[error(
        "the reduce worker of key range {} of {partitions} {death} (attempts: {attempts})",
        partition + 1
    )]
    ReducerDied {
        /// The key range's index (from 0), in key order.
        partition: usize,
        /// The run's key ranges.
        partitions: usize,
        /// How the last attempt's worker died.
        death: Death,
        /// The attempts made.
        attempts: u32,
    },
}

/// How a worker process died, for [`Error::WorkerDied`] and
/// [`Error::ReducerDied`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Death {
    /// Killed by this signal.
    Signal(i32),
    /// Exited with this status, which is not a worker's.
    Status(i32),
}

impl fmt::Display for Death {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Death::Signal(sig) => match signal_name(sig) {
                Some(name) => write!(f, "was killed by signal {sig} ({name})"),
                None => write!(f, "was killed by signal {sig}"),
            },
            Death::Status(code) => write!(f, "exited with status {code}"),
        }
    }
}

/// The names of the signals that end a crashing or killed process.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        _ => return None,
    })
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The error of a failed read of the input `path`: an
    /// [`Error::InputChanged`] if the reader found its file changed (its
    /// error carries a [`Changed`]), else an [`Error::Io`].
    pub(crate) fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let changed = source.get_ref().and_then(|e| e.downcast_ref::<Changed>());
        match changed {
            Some(&Changed { was, now }) => Error::InputChanged {
                path: path.into(),
                was,
                now,
            },
            None => Error::io(path, source),
        }
    }

    /// Builds the error for a caught panic payload.
    pub(crate) fn panicked(phase: Phase, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message = panic_message(&*payload);
        Error::Panicked { phase, message }
    }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// How an input changed, for [`Error::InputChanged`].
fn changed_how(was: u64, now: u64) -> String {
    match was == now {
        true => format!("it was rewritten, still {was} bytes"),
        false => format!("it was {was} bytes, now {now}"),
    }
}

/// What a reader of an input file returns, inside an I/O error, when it
/// finds the file changed under it; [`Error::read`] makes it an
/// [`Error::InputChanged`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Changed {
    /// The file's length in bytes when it was opened.
    pub(crate) was: u64,
    /// Its length when the change was seen.
    pub(crate) now: u64,
}

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the file changed while it was read ({})",
            changed_how(self.was, self.now)
        )
    }
}

impl std::error::Error for Changed {}

/// ember's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
