//! Spill directories: one per run, made when its first worker spills,
//! removed when the run ends or the process exits on a signal.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::failed;
use crate::error::{Error, Result};

/// The spill directories of the runs going on in this process.
static LIVE: Mutex<Live> = Mutex::new(Live {
    dirs: Vec::new(),
    closed: false,
});

/// The spill directories of the runs going on, and whether new ones may be
/// made (not once [`remove_live_dirs`] has run).
struct Live {
    dirs: Vec<PathBuf>,
    closed: bool,
}

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes the spill directories of every run going on in this process,
/// for a program about to exit on a signal (a run removes its own when it
/// ends, with an error or a panic too, but an exit ends no run). The runs
/// must not go on afterwards: the process exits. From here on a run that
/// would spill for the first time fails instead of making a directory.
pub fn remove_live_dirs() {
    let mut live = live();
    live.closed = true;
    for dir in live.dirs.drain(..) {
        // A worker may be creating its file in the directory meanwhile
        // (then the directory is not empty when removed): try again.
        for _ in 0..100 {
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
                _ => break,
            }
        }
    }
}

/// A run's spill directory, made when the first worker spills and removed
/// (with its files) when dropped.
#[derive(Debug)]
pub(crate) struct SpillDir {
    parent: PathBuf,
    dir: Mutex<Option<tempfile::TempDir>>,
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let dir = self.dir.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = dir {
            live().dirs.retain(|d| d != dir.path());
        }
    }
}

impl SpillDir {
    /// A spill directory to be made under `parent`.
    pub(crate) fn under(parent: PathBuf) -> Self {
        SpillDir {
            parent,
            dir: Mutex::new(None),
        }
    }

    /// The path of a new file for worker `w` (the directory is made on the
    /// first call).
    pub(crate) fn file(&self, w: usize) -> Result<PathBuf> {
        let mut dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        if dir.is_none() {
            // Made and registered under the lock, so that a signal's
            // `remove_live_dirs` sees every directory that exists.
            let mut live = live();
            if live.closed {
                let exiting = std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the process is exiting on a signal",
                );
                return Err(failed(&self.parent, exiting));
            }
            let made = tempfile::Builder::new()
                .prefix("ember-spill-")
                .tempdir_in(&self.parent)
                .map_err(|e| failed(&self.parent, e))?;
            live.dirs.push(made.path().to_path_buf());
            *dir = Some(made);
        }
        let dir = dir.as_ref().expect("made above");
        Ok(dir.path().join(format!("worker-{w}.runs")))
    }

    /// The directory, if a worker has spilled.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<PathBuf> {
        let dir = self.dir.lock().unwrap_or_else(|p| p.into_inner());
        dir.as_ref().map(|d| d.path().to_path_buf())
    }
}

/// The spill directory a run uses when none is given.
pub(crate) fn default_dir() -> PathBuf {
    std::env::temp_dir()
}

/// Whether `path` is an existing directory (for a clear error up front).
pub(crate) fn check_dir(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::Config(format!(
            "spill directory '{}' is not a directory",
            path.display()
        ))),
        Err(e) => Err(failed(path, e)),
    }
}
