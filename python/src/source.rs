//! A call's input: bytes in memory or files, as the Python layer hands it
//! over, and the same without the GIL for the run.

use std::path::PathBuf;

use ember::tune::Ingest;
use ember::{Error, Input};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The input argument of a call: `bytes`, or a list of paths (the Python
/// layer turns one path, `os.PathLike` objects, `bytearray` and
/// `memoryview` into these).
#[derive(FromPyObject)]
pub(crate) enum Source<'py> {
    /// Bytes in memory, read in place.
    Data(Bound<'py, PyBytes>),
    /// Files, in order.
    Paths(Vec<PathBuf>),
}

impl Source<'_> {
    /// The input as a detached run reads it (the bytes borrowed).
    pub(crate) fn view(&self) -> Src<'_> {
        match self {
            Source::Data(b) => Src::Data(b.as_bytes()),
            Source::Paths(p) => Src::Paths(p),
        }
    }
}

/// A [`Source`] that needs no GIL: what a run reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Src<'a> {
    /// Bytes in memory.
    Data(&'a [u8]),
    /// Files.
    Paths(&'a [PathBuf]),
}

impl<'a> Src<'a> {
    /// The input, files read as `ingest` says.
    pub(crate) fn open(self, ingest: Ingest) -> ember::Result<Input<'a>> {
        match self {
            Src::Data(d) => Ok(Input::bytes(d)),
            Src::Paths([]) => Err(Error::InvalidInput("no input files given".into())),
            Src::Paths(p) => Input::open(p, ingest),
        }
    }

    /// The input of a job that reads one file whole (histogram, sort):
    /// exactly one path, memory-mapped, or the bytes.
    pub(crate) fn single(self) -> ember::Result<Input<'a>> {
        match self {
            Src::Paths(p) if p.len() != 1 => Err(Error::InvalidInput(format!(
                "this job reads one file, not {}",
                p.len()
            ))),
            _ => self.open(Ingest::Mmap),
        }
    }

    /// What the CLI names in an error's context: the file, `'path'`.
    pub(crate) fn name(self) -> String {
        match self {
            Src::Data(_) => "<bytes>".into(),
            Src::Paths(p) => p
                .iter()
                .map(|p| format!("'{}'", p.display()))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}
