//! Input held in memory for an isolated run (standard input, read once):
//! a memfd that every map worker maps read-only, as it maps a file.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Bytes in shared memory (a memfd), named to [`super::run`] by
/// [`path`](Self::path) as a file is: the map workers inherit the
/// descriptor and map its pages in place, so no worker gets a copy. The
/// memory is freed when this value and the run's workers are gone.
#[derive(Debug)]
pub struct SharedInput {
    /// Held open: the memory lives as long as this value (and the workers
    /// that inherited it).
    _memory: File,
    path: PathBuf,
}

impl SharedInput {
    /// Reads `reader` (named `name` in errors) to its end into a new memfd.
    pub fn read(name: &str, mut reader: impl Read) -> Result<SharedInput> {
        // SAFETY: the name is a NUL-terminated string; the call has no
        // other preconditions.
        let fd = unsafe { libc::memfd_create(c"ember-input".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io("<memfd>", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        std::io::copy(&mut reader, &mut file).map_err(|e| Error::io(name, e))?;
        file.flush().map_err(|e| Error::io(name, e))?;
        let path = PathBuf::from(format!("/proc/self/fd/{fd}"));
        Ok(SharedInput {
            _memory: file,
            path,
        })
    }

    /// The input's name for [`super::run`]: `/proc/self/fd/N`, which this
    /// process and its workers (which inherit descriptor N) open.
    pub fn path(&self) -> &Path {
        &self.path
    }
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
}
