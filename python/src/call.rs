//! The one way every call runs: ember on a thread of its own with the GIL
//! released, panics caught, Ctrl-C cancelling the run; then the output
//! converted to Python values with the run's stats.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

use ember::{Progress, Stats};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors;
use crate::options::CallOptions;

/// How often a waiting call lets Python run its signal handlers.
const POLL: Duration = Duration::from_millis(50);

/// Runs `f` on a thread of its own while this one waits with the GIL
/// released, so other Python threads go on. Every [`POLL`] the wait runs
/// Python's signal handlers: if one raises (Ctrl-C's
/// `KeyboardInterrupt`), `cancel` stops the run at its next split and the
/// exception is returned once the run has ended. A panic becomes an
/// `EmberError` (panics on ember's workers come back from the runtime as
/// errors), an error its Python exception.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    cancel: Option<&Progress>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    let ran = std::thread::scope(|s| {
        s.spawn(move || {
            // The receiver lives until the scope ends: sending cannot fail.
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        });
        let (mut rx, mut signalled) = (rx, None);
        loop {
            // The receiver moves in and out (it is Send, not Sync).
            let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
            rx = back;
            match got {
                Ok(ran) => return signalled.map_or(Ok(ran), Err),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("the run sends once"),
            }
            if signalled.is_none() {
                if let Err(e) = py.check_signals() {
                    cancel.inspect(|p| p.cancel());
                    signalled = Some(e);
                }
            }
        }
    })?;
    ran.map_err(errors::panicked)?.map_err(errors::to_py)
}

/// The stats as a dict, in the `ember --stats-json` schema (the same
/// serialisation, read back by `json.loads`).
pub(crate) fn stats_dict<'py>(py: Python<'py>, stats: &Stats) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(stats).map_err(|e| errors::to_py(e.into()))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// Runs a job detached ([`detached`], cancelled through `o`'s progress
/// handle), converts its output with `convert` (holding the GIL) and
/// returns `(value, stats dict)`.
pub(crate) fn call<'py, T: Send>(
    py: Python<'py>,
    o: &CallOptions,
    run: impl FnOnce() -> anyhow::Result<(T, Stats)> + Send,
    convert: impl FnOnce(Python<'py>, T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (out, stats) = detached(py, Some(&o.progress), run)?;
    let value = convert(py, out)?;
    PyTuple::new(py, [value, stats_dict(py, &stats)?])
}

/// A job whose `map` panics: what `_panic_for_tests` runs on a worker.
struct Panics;

impl ember::Job for Panics {
    type Key = u8;
    type Value = u64;
    type Combiner = ember::Sum;
    type Out = u64;
    fn map<E: ember::Emit<u8, u64>>(&self, _: ember::Split<'_>, _: &mut E) -> ember::MapResult {
        panic!("a test panic on a worker")
    }
    fn reduce(&self, _: &u8, n: u64) -> u64 {
        n
    }
}

/// For the tests: panics in Rust, on the calling thread or on one of
/// `rt`'s workers (in a job's `map`), to show that the interpreter goes on
/// and raises `EmberError`.
#[pyfunction]
pub(crate) fn _panic_for_tests(py: Python<'_>, on_worker: bool) -> PyResult<()> {
    detached(py, None, || {
        if !on_worker {
            panic!("a test panic on the calling thread");
        }
        let rt = ember::Runtime::builder().threads(1).build()?;
        rt.run(&Panics, &ember::Input::bytes(b"x\n"))?;
        Ok(())
    })
}
