//! Bytes held in memory for an isolated run's workers (standard input,
//! read once; a job's own file, such as k-means' means): a memfd that every
//! worker opens or maps read-only, as it does a file.

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Bytes in shared memory (a memfd), named to [`super::run`] by
/// [`path`](Self::path) as a file is: the map workers open it in this
/// process's `/proc` and map its pages in place, so no worker gets a copy. The
/// memory is freed when this value and the run's workers are gone: no
/// file is left behind, however the process ends.
#[derive(Debug)]
pub struct SharedInput {
    /// Held open: the memory lives as long as this value (and the workers
    /// that inherited it).
    memory: File,
    path: PathBuf,
}

impl SharedInput {
    /// Reads `reader` (named `name` in errors) to its end into a new memfd.
    pub fn read(name: &str, mut reader: impl Read) -> Result<SharedInput> {
        let mut memory = memfd(c"ember-input")?;
        std::io::copy(&mut reader, &mut memory).map_err(|e| Error::io(name, e))?;
        memory.flush().map_err(|e| Error::io(name, e))?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", memory.as_raw_fd()));
        Ok(SharedInput { memory, path })
    }

    /// The input's name for [`super::run`]: `/proc/self/fd/N`, which this
    /// process opens and its workers open as `/proc/PARENT/fd/N`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A name any worker of this process opens while this value lives,
    /// whether or not it inherited the descriptor (a job's argument, which
    /// [`super::run`] does not pass down as it does its inputs):
    /// `/proc/PID/fd/N`.
    pub fn path_from_workers(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.memory.as_raw_fd()
        ))
    }

    /// Replaces the bytes held with `bytes` (a job file rewritten between
    /// runs; a worker reads the bytes held when it opens the file).
    pub fn replace(&self, bytes: &[u8]) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        self.memory.set_len(0).map_err(io)?;
        self.memory.write_all_at(bytes, 0).map_err(io)
    }
}

/// A new, empty memfd (`name` shows in `/proc/PID/fd`), closed on `exec`:
/// a worker inherits it only when asked to.
pub(super) fn memfd(name: &CStr) -> Result<File> {
    // SAFETY: the name is a NUL-terminated string; the call has no other
    // preconditions.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::io("<memfd>", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The descriptor `path` names if it is one of this process's above the
/// standard three (`/proc/self/fd/N` or `/dev/fd/N`): a map worker
/// inherits it under the same number, so the name opens the same file.
pub(super) fn descriptor(path: &Path) -> Option<RawFd> {
    let text = path.to_str()?;
    let number = text
        .strip_prefix("/proc/self/fd/")
        .or_else(|| text.strip_prefix("/dev/fd/"))?;
    number.parse::<RawFd>().ok().filter(|&fd| fd > 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_input_is_named_by_its_descriptor_and_reads_back() {
        let shared = SharedInput::read("<test>", &b"one\ntwo\n"[..]).unwrap();
        assert!(descriptor(shared.path()).is_some());
        assert_eq!(std::fs::read(shared.path()).unwrap(), b"one\ntwo\n");
        assert_eq!(descriptor(Path::new("/dev/fd/7")), Some(7));
        for other in ["/dev/fd/0", "/proc/self/fd/x", "/tmp/fd/7", "/proc/1/fd/7"] {
            assert_eq!(descriptor(Path::new(other)), None, "{other}");
        }
    }

    #[test]
    fn a_replaced_shared_file_reads_back_its_new_bytes_by_its_workers_name() {
        let shared = SharedInput::read("<test>", &b"a longer first text\n"[..]).unwrap();
        shared.replace(b"second\n").unwrap();
        let name = shared.path_from_workers();
        assert!(name.starts_with(format!("/proc/{}/fd/", std::process::id())));
        assert_eq!(std::fs::read(&name).unwrap(), b"second\n");
    }
}
