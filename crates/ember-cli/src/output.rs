//! Output files that appear whole or not at all.
//!
//! Every file `ember` and `ember-bench` write (`--output`, `sort -o`,
//! `--stats-json`, `ember gen -o`, the cached inputs) is written to a
//! temporary file in the target's folder and renamed over the target only
//! once it is complete and flushed ([`Sink::finish`]); with `--sync`, it is
//! also synced to disk first (the file's data, then the folder's entry
//! after the rename). On an error or a panic the temporary file is dropped
//! and removed; on SIGINT, SIGTERM or SIGHUP the signal thread ([`watch`])
//! removes every temporary file still pending and every spill directory in
//! use, kills the isolated workers and runs the program's own clean-up
//! (`ember` kills the commands of `ember stream` still running: see
//! [`on_signals`]), prints one line and exits with 128 + the signal number
//! (130 for Ctrl-C). A second signal while that runs exits at once. Either
//! way the target keeps what it held before. Standard output (`-`) is
//! written as it goes.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tempfile::NamedTempFile;

/// Temporary files not yet renamed over their targets: what a signal
/// removes. A file is added when it is created and taken out, under the
/// same lock, when it is renamed or dropped, so the signal thread never
/// removes a finished output.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Whether outputs are synced to disk before they are renamed (`--sync`).
static SYNC: AtomicBool = AtomicBool::new(false);

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it valid (a push or a remove).
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Syncs every output to disk before it is renamed into place.
pub fn set_sync(sync: bool) {
    SYNC.store(sync, Ordering::Relaxed);
}

/// Whether the signal thread runs. Until it does, a command has nothing
/// to clean up, and a signal's first handler prints the line and exits
/// at once.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Set by the signal thread before it removes anything: from then on an
/// error the command meets may be the removal's doing (a spill directory
/// gone under a worker), and the signal thread's line is the one to show.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// What the signal thread is to handle, until [`watch`] starts it.
static CAUGHT: Mutex<Option<Caught>> = Mutex::new(None);

/// The signals caught for the signal thread, and the program's own
/// clean-up, which it runs before it exits.
struct Caught {
    signals: Signals,
    clean_up: fn(),
}

/// What a signal prints.
const INTERRUPTED: &str = "ember: interrupted\n";

/// Handles SIGINT, SIGTERM and SIGHUP: exits with 128 + the signal
/// number after one line on standard error, having first removed what
/// is pending and run `clean_up` if [`watch`] started the signal thread.
/// No thread starts here: a command over a small input, which creates
/// nothing to remove, never starts one.
pub fn on_signals(clean_up: fn()) -> Result<()> {
    let signals = [SIGINT, SIGTERM, SIGHUP];
    let exiting = Arc::new(AtomicBool::new(false));
    for sig in signals {
        // Registered first, so that it runs first.
        // SAFETY: the action is async-signal-safe: it reads an atomic,
        // writes a static string with `write` and ends the process with
        // `_exit`, and allocates and locks nothing.
        unsafe { signal_hook::low_level::register(sig, move || exit_unless_watching(sig)) }?;
        // A signal while the first one is handled ends the process at once
        // (registered before the flag, so the first signal does not).
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&exiting))?;
        signal_hook::flag::register(sig, Arc::clone(&exiting))?;
    }
    *caught() = Some(Caught {
        signals: Signals::new(signals)?,
        clean_up,
    });
    Ok(())
}

/// Ends the process for `sig` if the signal thread is not running (in a
/// signal handler: async-signal-safe calls only).
fn exit_unless_watching(sig: i32) {
    if !WATCHING.load(Ordering::SeqCst) {
        // SAFETY: `write` is async-signal-safe and the buffer is a static
        // string of the length given.
        unsafe { libc::write(2, INTERRUPTED.as_ptr().cast(), INTERRUPTED.len()) };
        signal_hook::low_level::exit(128 + sig);
    }
}

fn caught() -> MutexGuard<'static, Option<Caught>> {
    // A panic while the slot was held leaves it valid (a take or a store).
    CAUGHT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the thread that cleans up and exits on SIGINT, SIGTERM and
/// SIGHUP, if [`on_signals`] set them up and it is not running yet: to
/// be called before creating anything a signal must remove (a temporary
/// output file, a spill directory, a child process).
pub fn watch() -> Result<()> {
    let mut slot = caught();
    let Some(Caught {
        mut signals,
        clean_up,
    }) = slot.take()
    else {
        return Ok(());
    };
    std::thread::Builder::new()
        .name("ember-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                STOPPING.store(true, Ordering::SeqCst);
                // Held until exit: no output can be renamed into place now.
                let files = pending();
                for f in files.iter() {
                    let _ = std::fs::remove_file(f);
                }
                ember::spill::remove_live_dirs();
                clean_up();
                ember::isolate::kill_workers();
                eprint!("{INTERRUPTED}");
                std::process::exit(128 + sig);
            }
        })?;
    WATCHING.store(true, Ordering::SeqCst);
    Ok(())
}

/// Waits for the end of the process if the signal thread is handling a
/// signal: the command's own error is then no more than the clean-up's
/// doing, and the signal thread prints the one line and exits.
pub fn yield_to_signal() {
    while STOPPING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

/// Where a command writes: standard output, a file that appears only
/// when [`Sink::finish`] is called, or a target that is not a regular file
/// (`/dev/null`, a named pipe), written in place: renaming a file over it
/// would replace the device or pipe with a plain file.
pub enum Sink {
    /// Standard output (`-`), written as it goes.
    Stdout(BufWriter<io::StdoutLock<'static>>),
    /// A regular file, written to a temporary file first.
    File(Pending),
    /// A device or a named pipe, written in place.
    Special(BufWriter<std::fs::File>),
}

/// A temporary file on its way to `target`.
pub struct Pending {
    file: BufWriter<NamedTempFile>,
    target: PathBuf,
    _entry: Entry,
}

/// A temporary file's place in [`PENDING`], given up when dropped.
struct Entry(PathBuf);

impl Drop for Entry {
    fn drop(&mut self) {
        pending().retain(|p| *p != self.0);
    }
}

/// Opens `path` for writing (`-`: standard output).
pub fn create(path: &Path) -> Result<Sink> {
    if path == Path::new("-") {
        return Ok(Sink::Stdout(BufWriter::new(io::stdout().lock())));
    }
    let cannot = || format!("cannot create '{}'", path.display());
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(cannot)?;
        return Ok(Sink::Special(BufWriter::new(file)));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().with_context(cannot)?.to_string_lossy();
    watch()?;
    let mut list = pending();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .permissions(mode_for(path))
        .tempfile_in(dir)
        .with_context(cannot)?;
    list.push(tmp.path().to_path_buf());
    Ok(Sink::File(Pending {
        _entry: Entry(tmp.path().to_path_buf()),
        file: BufWriter::with_capacity(1 << 20, tmp),
        target: path.to_path_buf(),
    }))
}

/// The permissions a new output file gets: those of the file it replaces,
/// else what a plain `create` gives (read and write for all, less the
/// umask, which the kernel applies), not the temporary file's owner-only
/// default.
fn mode_for(path: &Path) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m.permissions(),
        _ => std::fs::Permissions::from_mode(0o666),
    }
}

impl Sink {
    /// The regular file a named output is written to, for writes at
    /// offsets (nothing was written through the sink yet); `None` for
    /// standard output and special files, which are written in order.
    pub fn file(&self) -> Option<&std::fs::File> {
        match self {
            Sink::File(p) if p.file.buffer().is_empty() => Some(p.file.get_ref().as_file()),
            _ => None,
        }
    }

    /// Flushes what was written and, for a file, renames it over its
    /// target (synced first with `--sync`).
    pub fn finish(self) -> Result<()> {
        match self {
            Sink::Stdout(mut w) => Ok(w.flush()?),
            Sink::Special(mut w) => Ok(w.flush()?),
            Sink::File(p) => p.finish(),
        }
    }
}

impl Pending {
    fn finish(self) -> Result<()> {
        let Pending {
            mut file, target, ..
        } = self;
        let cannot = || format!("cannot write '{}'", target.display());
        file.flush().with_context(cannot)?;
        let sync = SYNC.load(Ordering::Relaxed);
        if sync {
            file.get_ref().as_file().sync_all().with_context(cannot)?;
        }
        let file = file
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(cannot)?;
        // Renamed and struck off under the lock, so that a signal finds it
        // either pending (and removes it) or in place (and leaves it).
        let mut list = pending();
        let tmp = file.path().to_path_buf();
        let persisted = file.persist(&target);
        list.retain(|p| *p != tmp);
        drop(list);
        persisted.map_err(|e| e.error).with_context(cannot)?;
        if sync {
            sync_dir(&target).with_context(cannot)?;
        }
        Ok(())
    }
}

/// Syncs the folder holding `path`, so that its new entry is on disk.
fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::File::open(d)?.sync_all(),
        _ => std::fs::File::open(".")?.sync_all(),
    }
}

/// Writes to `path` (`-`: standard output) with `write`, if there is a
/// path; a file appears only once complete (see [`create`]).
pub fn write_output(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut w = create(path)?;
    write(&mut w).with_context(|| format!("cannot write '{}'", path.display()))?;
    w.finish()
}

/// Lets the process end quietly, as Unix tools do, when the reader of its
/// standard output goes away (`ember wordcount ... -o - | head`): the Rust
/// runtime ignores SIGPIPE, so every later write would fail instead, and a
/// `println!` would panic. To be called first in `main`, before any other
/// thread starts.
pub fn die_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any other thread exists, and
    // setting a signal back to its default action has no other
    // precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::Special(w) => w.write(buf),
            Sink::File(p) => p.file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.write_all(buf),
            Sink::Special(w) => w.write_all(buf),
            Sink::File(p) => p.file.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::Special(w) => w.flush(),
            Sink::File(p) => p.file.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_takes_its_name_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, "old").unwrap();
        // Dropped unfinished (an error or a panic on the way): the old file
        // stays, the temporary one goes.
        let mut w = create(&target).unwrap();
        w.write_all(b"half").unwrap();
        assert_eq!(names(dir.path()).len(), 2);
        drop(w);
        assert_eq!(names(dir.path()), vec!["out.txt"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        // Finished: the new file, and nothing pending.
        let mut w = create(&target).unwrap();
        w.write_all(b"new").unwrap();
        w.finish().unwrap();
        assert_eq!(names(dir.path()), vec!["out.txt"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let tmp = dir.path().to_path_buf();
        assert!(!pending().iter().any(|p| p.starts_with(&tmp)));
    }

    #[test]
    fn a_named_pipe_is_written_in_place_and_stays_a_pipe() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut w = create(&fifo).unwrap();
        w.write_all(b"through the pipe").unwrap();
        w.finish().unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), vec!["pipe"]);
    }

    #[test]
    fn a_folder_that_is_missing_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("no/such/out.txt");
        let e = create(&target).err().unwrap();
        assert!(format!("{e:#}").contains("no/such/out.txt"), "{e:#}");
    }
}
