//! A call's input: bytes in memory, files, or a Python file object, as the
//! Python layer hands it over, and the same without the GIL for the run.

use std::io::Read;
use std::path::{Path, PathBuf};

use ember::tune::Ingest;
use ember::{Error, Input};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PySlice};

/// The input argument of a call: `bytes`, a list of paths, or a binary
/// file object (the Python layer turns one path, `os.PathLike` objects,
/// `bytearray` and `memoryview` into the first two).
#[derive(FromPyObject)]
pub(crate) enum Source<'py> {
    /// Bytes in memory, read in place.
    Data(Bound<'py, PyBytes>),
    /// Files, in order.
    Paths(Vec<PathBuf>),
    /// A file object, read in chunks where the job streams its input.
    File(FileObject),
}

impl Source<'_> {
    /// The input as a detached run reads it (the bytes borrowed).
    pub(crate) fn view(&self) -> Src<'_> {
        match self {
            Source::Data(b) => Src::Data(b.as_bytes()),
            Source::Paths(p) => Src::Paths(p),
            Source::File(f) => Src::File(f),
        }
    }
}

/// A binary file object: anything with `readinto` (preferred: no bytes
/// object per read) or `read`.
pub(crate) struct FileObject {
    obj: Py<PyAny>,
    /// Its `name` if that is a string (an open file's path), else
    /// `<file object>`: what errors and the stats name.
    name: PathBuf,
}

impl<'a, 'py> FromPyObject<'a, 'py> for FileObject {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if !(obj.hasattr("readinto")? || obj.hasattr("read")?) {
            let t = obj.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "input must be bytes, a list of paths or a binary file object, not {t}"
            )));
        }
        let name = match obj.getattr("name").and_then(|n| n.extract::<String>()) {
            Ok(n) => PathBuf::from(n),
            Err(_) => PathBuf::from("<file object>"),
        };
        Ok(FileObject {
            obj: obj.to_owned().unbind(),
            name,
        })
    }
}

impl FileObject {
    /// A reader of this object for one run.
    fn reader(&self) -> PyReader {
        Python::attach(|py| PyReader {
            obj: self.obj.clone_ref(py),
            stage: None,
        })
    }

    /// The object's bytes to its end, read at once (for the jobs that need
    /// their whole input in memory).
    fn read_all(&self) -> ember::Result<Vec<u8>> {
        let mut data = Vec::new();
        self.reader()
            .read_to_end(&mut data)
            .map_err(|e| Error::io(&self.name, e))?;
        Ok(data)
    }
}

/// Bytes per call of the file object's `readinto`: big enough that the
/// Python call costs nothing beside the copy, small enough to stay in cache.
const STAGE_BYTES: usize = 1 << 20;

/// A Python file object as a Rust reader: each `read` takes the GIL,
/// calls `readinto` on a `bytearray` kept for the run (or `read`) and
/// copies what it got. An exception raised by the object comes back as
/// the `io::Error`'s inner error, so that the run's error carries it to
/// the caller ([`crate::errors::to_py`] raises it as itself).
struct PyReader {
    obj: Py<PyAny>,
    /// The bytearray `readinto` fills, made on the first read.
    stage: Option<Py<PyByteArray>>,
}

impl PyReader {
    /// One call of the object: the bytes it gave, copied into `buf`.
    fn read_py(&mut self, py: Python<'_>, buf: &mut [u8]) -> PyResult<usize> {
        let obj = self.obj.bind(py);
        let want = buf.len().min(STAGE_BYTES);
        if obj.hasattr("readinto")? {
            let stage = self
                .stage
                .get_or_insert_with(|| PyByteArray::new(py, &vec![0; STAGE_BYTES]).unbind())
                .bind(py);
            let whole = PyMemoryView::from(stage.as_any())?;
            let view = whole.get_item(PySlice::new(py, 0, want as isize, 1))?;
            let got = obj.call_method1("readinto", (&view,))?;
            view.call_method0("release")?;
            whole.call_method0("release")?;
            // None: a non-blocking stream with nothing yet; read again.
            let n: usize = if got.is_none() { 0 } else { got.extract()? };
            if n > want {
                return Err(PyTypeError::new_err(format!(
                    "readinto returned {n} for a buffer of {want} bytes"
                )));
            }
            // SAFETY: the bytearray is not resized or touched by other
            // code while the GIL is held here, and `n` is within its length.
            let got = unsafe { &stage.as_bytes()[..n] };
            buf[..n].copy_from_slice(got);
            return Ok(n);
        }
        let got = obj.call_method1("read", (want,))?;
        let bytes = got.cast::<PyBytes>().map_err(|_| {
            PyTypeError::new_err("file objects must be opened in binary mode ('rb')")
        })?;
        let b = bytes.as_bytes();
        if b.len() > want {
            return Err(PyTypeError::new_err(format!(
                "read({want}) returned {} bytes",
                b.len()
            )));
        }
        buf[..b.len()].copy_from_slice(b);
        Ok(b.len())
    }
}

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Python::attach(|py| self.read_py(py, buf)).map_err(std::io::Error::other)
    }
}

/// A [`Source`] that needs no GIL: what a run reads.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    /// Bytes in memory.
    Data(&'a [u8]),
    /// Files.
    Paths(&'a [PathBuf]),
    /// A Python file object.
    File(&'a FileObject),
}

impl<'a> Src<'a> {
    /// The input, files read as `ingest` says (folders and glob patterns
    /// named as [`ember::expand_paths`] says), a file object in chunks (as
    /// the CLI reads standard input: decoded if its first bytes say it is
    /// compressed).
    pub(crate) fn open(self, ingest: Ingest) -> ember::Result<Input<'a>> {
        match self {
            Src::Data(d) => Ok(Input::bytes(d)),
            Src::Paths([]) => Err(Error::InvalidInput("no input files given".into())),
            Src::Paths(p) => Input::open(ember::expand_paths(p)?, ingest),
            Src::File(f) => Input::reader_decompressed(f.name.clone(), f.reader()),
        }
    }

    /// The input of a job that reads its input whole (histogram, sort,
    /// inverted index): files memory-mapped (compressed ones decoded into
    /// memory), a file object read to its end.
    pub(crate) fn whole(self) -> ember::Result<Input<'a>> {
        match self {
            Src::File(f) => Ok(Input::owned(f.name.clone(), f.read_all()?)),
            Src::Paths(p) if !p.is_empty() => Input::in_memory(ember::expand_paths(p)?),
            _ => self.open(Ingest::Mmap),
        }
    }

    /// The input of a job that reads one file whole (histogram, sort):
    /// paths that name exactly one file, memory-mapped, or the bytes.
    pub(crate) fn single(self) -> ember::Result<Input<'a>> {
        if let Src::Paths(p) = self {
            let files = ember::expand_paths(p)?.len();
            if files != 1 {
                let msg = format!("this job reads one file, not {files}");
                return Err(Error::InvalidInput(msg));
            }
        }
        self.whole()
    }

    /// What the CLI names in an error's context: the file, `'path'`.
    pub(crate) fn name(self) -> String {
        let quoted = |p: &Path| format!("'{}'", p.display());
        match self {
            Src::Data(_) => "<bytes>".into(),
            Src::Paths(p) => p.iter().map(|p| quoted(p)).collect::<Vec<_>>().join(", "),
            Src::File(f) => quoted(&f.name),
        }
    }
}
