//! What a compressed file's pieces share: the file, read with positioned
//! reads and checked to be as it was when opened ([`Shared`]); a range of
//! it read in order ([`FileRange`]); and the way pieces are decoded again
//! joined ([`Rejoin`]). Below both `pieces` and the format modules that
//! cut files into them.
//!
//! Reads go no further than the length the file had when opened; a read
//! that comes short, or a file found changed (length, modification time,
//! identity) when the range that ends the file reaches its end, fails the
//! read with a [`Changed`].

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::error::Changed;
use crate::guard::FileState;

/// A reader that can be taken once.
pub(super) type Stream = Box<dyn Read + Send>;

/// Pieces that may be decoded again joined: a cut between them may be
/// false (a bzip2 block magic that occurs inside a block by chance).
pub(super) trait Rejoin: Send + Sync {
    /// A decoder of `pieces` pieces from piece `first` on, as one; `None`
    /// if they cannot be joined.
    fn rejoin(&self, first: usize, pieces: usize) -> Option<io::Result<Stream>>;
}

/// A compressed file shared by its pieces.
pub(super) struct Shared {
    file: File,
    /// The file when opened.
    was: FileState,
}

impl Shared {
    /// `file`, whose metadata when opened is `meta`.
    pub(super) fn new(file: File, meta: &Metadata) -> Shared {
        Shared {
            file,
            was: FileState::of(meta),
        }
    }

    /// The file, for reads that need no check (finding where pieces start).
    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Fills `buf` from offset `at`; a file too short for it has changed.
    pub(super) fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        match self.file.read_exact_at(buf, at) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(self.changed()?),
            other => other,
        }
    }

    /// An error if the file is not as it was when opened.
    pub(super) fn check(&self) -> io::Result<()> {
        let now = FileState::of(&self.file.metadata()?);
        match now == self.was {
            true => Ok(()),
            false => Err(io::Error::other(Changed {
                was: self.was.len,
                now: now.len,
            })),
        }
    }

    /// The error for a file found shorter than it was.
    fn changed(&self) -> io::Result<io::Error> {
        let now = self.file.metadata()?.len();
        Ok(io::Error::other(Changed {
            was: self.was.len,
            now,
        }))
    }

    /// The length the file had when opened.
    pub(super) fn len(&self) -> u64 {
        self.was.len
    }
}

/// The bytes of a file from `at` to `end`, in order (see the module doc
/// for the reads).
pub(super) struct FileRange {
    file: Arc<Shared>,
    at: u64,
    end: u64,
    checked: bool,
}

impl FileRange {
    pub(super) fn new(file: Arc<Shared>, at: u64, end: u64) -> FileRange {
        FileRange {
            file,
            at,
            end,
            checked: false,
        }
    }
}

impl Read for FileRange {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end - self.at;
        let want = buf.len().min(left.try_into().unwrap_or(usize::MAX));
        if want == 0 {
            if !buf.is_empty() && self.end == self.file.len() && !self.checked {
                self.file.check()?;
                self.checked = true;
            }
            return Ok(0);
        }
        let n = self.file.file.read_at(&mut buf[..want], self.at)?;
        if n == 0 {
            return Err(self.file.changed()?);
        }
        self.at += n as u64;
        Ok(n)
    }
}
