//! The one way every call runs: ember with the GIL released and panics
//! caught, then the output converted to Python values with the run's stats.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ember::Stats;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors;

/// Runs `f` with the GIL released, so other Python threads go on; a panic
/// on this thread becomes an `EmberError` (panics on ember's workers come
/// back from the runtime as errors), an error its Python exception.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(errors::panicked)?
        .map_err(errors::to_py)
}

/// The stats as a dict, in the `ember --stats-json` schema (the same
/// serialisation, read back by `json.loads`).
pub(crate) fn stats_dict<'py>(py: Python<'py>, stats: &Stats) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(stats).map_err(|e| errors::to_py(e.into()))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// Runs a job detached ([`detached`]), converts its output with `convert`
/// (holding the GIL) and returns `(value, stats dict)`.
pub(crate) fn call<'py, T: Send>(
    py: Python<'py>,
    run: impl FnOnce() -> anyhow::Result<(T, Stats)> + Send,
    convert: impl FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (out, stats) = detached(py, run)?;
    let value = convert(py, out)?;
    PyTuple::new(py, [value, stats_dict(py, &stats)?])
}
