//! Per-call options: keyword arguments named as the CLI's options.

use ember::tune::{Ingest, Mode, PipelineOptions};
use ember::{ContainerKind, Progress, RunOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The options of one call: the run's settings and how files are read.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallOptions {
    /// `split_size`, `container`, `chunk_size`, `chunk_buffers`, `mode`,
    /// `buffer_size`, `max_buffered`, `memory_limit`, `spill_dir`.
    pub(crate) run: RunOptions,
    /// `ingest`: auto, mmap or chunked.
    pub(crate) ingest: Ingest,
    /// The run's progress handle (also in `run`), through which Ctrl-C
    /// cancels it.
    pub(crate) progress: Progress,
}

impl CallOptions {
    /// These options with their progress handle in the run's options.
    fn watched(mut self) -> Self {
        self.run = self.run.progress(self.progress.clone());
        self
    }
}

/// Parses `ingest` as `ember --ingest` does.
fn parse_ingest(s: &str) -> PyResult<Ingest> {
    match s {
        "auto" => Ok(Ingest::Auto),
        "mmap" => Ok(Ingest::Mmap),
        "chunked" => Ok(Ingest::Chunked),
        _ => Err(PyValueError::new_err(format!(
            "unknown ingest mode '{s}' (auto, mmap, chunked)"
        ))),
    }
}

/// A size in bytes: an integer, or a string as the CLI's options take it
/// (`"64KiB"`, `"1GiB"`, `"10MB"`, parsed by the same parser).
fn bytes(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    match v.extract::<String>() {
        Ok(s) => ember::tune::parse_size(&s)
            .map_err(|e| PyValueError::new_err(format!("invalid {name}: {e}"))),
        Err(_) => v.extract(),
    }
}

/// A size in bytes ([`bytes`]) of at least 1.
fn size(name: &str, v: &Bound<'_, PyAny>) -> PyResult<usize> {
    let n = usize::try_from(bytes(name, v)?)
        .map_err(|_| PyValueError::new_err(format!("{name} is too large")))?;
    if n == 0 {
        return Err(PyValueError::new_err(format!("{name} must be at least 1")));
    }
    Ok(n)
}

/// A count (`chunk_buffers`): a positive integer, no unit.
fn count(name: &str, v: &Bound<'_, PyAny>) -> PyResult<usize> {
    match v.extract::<usize>()? {
        0 => Err(PyValueError::new_err(format!("{name} must be at least 1"))),
        n => Ok(n),
    }
}

/// A name parsed by ember (`container`, `mode`), its error a ValueError.
fn named<T: std::str::FromStr<Err = ember::Error>>(v: &Bound<'_, PyAny>) -> PyResult<T> {
    let s: String = v.extract()?;
    s.parse()
        .map_err(|e: ember::Error| PyValueError::new_err(e.to_string()))
}

/// The options given as keyword arguments; `None` values are left at
/// their defaults, unknown names are a TypeError.
pub(crate) fn parse(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<CallOptions> {
    let mut o = CallOptions::default();
    let mut pipeline = PipelineOptions::default();
    let Some(kwargs) = kwargs else {
        return Ok(o.watched());
    };
    for (k, v) in kwargs.iter() {
        if v.is_none() {
            continue;
        }
        let name: String = k.extract()?;
        let run = std::mem::take(&mut o.run);
        o.run = match name.as_str() {
            "split_size" => run.split_size(size(&name, &v)?),
            "container" => run.container(named::<ContainerKind>(&v)?),
            "mode" => run.mode(named::<Mode>(&v)?),
            "chunk_size" => run.chunk_size(size(&name, &v)?),
            "chunk_buffers" => run.chunk_buffers(count(&name, &v)?),
            "memory_limit" => run.memory_limit(bytes(&name, &v)?),
            "spill_dir" => run.spill_dir(v.extract::<std::path::PathBuf>()?),
            "buffer_size" => {
                pipeline = pipeline.buffer_bytes(Some(size(&name, &v)?));
                run
            }
            "max_buffered" => {
                pipeline = pipeline.max_buffered_bytes(Some(size(&name, &v)?));
                run
            }
            "ingest" => {
                o.ingest = parse_ingest(&v.extract::<String>()?)?;
                run
            }
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument '{name}'"
                )))
            }
        };
    }
    o.run = o.run.pipeline(pipeline);
    Ok(o.watched())
}
