//! Custom jobs from Python (`ember.map_reduce`): a Python `map` per split,
//! its pairs folded in Rust by one of ember's combiners.
//!
//! `map` runs on ember's workers, each taking the GIL for its call, so the
//! Python part runs one split at a time; what overlaps is the rest: the
//! pairs are copied out under the GIL and emitted into the worker's
//! container after it is released. A `map` returning a dict (a `Counter`)
//! per split is the fast path: one Python call per split, Python's own
//! dict does the per-word work, and ember only merges the splits' dicts.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ember::plumbing::ReducedOf;
use ember::{
    Bytes, Combiner, Emit, Job, KeepAll, MapResult, Max, Min, Records, Runtime, Split, Sum,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::call::call;
use crate::options::CallOptions;
use crate::source::Src;

/// How the values of one key fold, and what a key's output is.
trait Fold: Sync + 'static {
    /// A value `map` emits.
    type V: Send;
    /// ember's combiner for it.
    type C: Combiner<Self::V> + Default;
    /// A key's output.
    type Out: Send;
    /// A value from Python.
    fn value(v: &Bound<'_, PyAny>) -> PyResult<Self::V>;
    /// A key's output from its folded values.
    fn out(r: <Self::C as Combiner<Self::V>>::Reduced<'_>) -> Self::Out;
    /// The output as a Python value.
    fn to_py<'py>(py: Python<'py>, out: Self::Out) -> PyResult<Bound<'py, PyAny>>;
}

/// Integer values folded by `C` (sum, min, max).
struct Ints<C>(PhantomData<fn() -> C>);

impl<C> Fold for Ints<C>
where
    C: for<'a> Combiner<i64, Reduced<'a> = i64> + Default + 'static,
{
    type V = i64;
    type C = C;
    type Out = i64;
    fn value(v: &Bound<'_, PyAny>) -> PyResult<i64> {
        v.extract()
    }
    fn out(r: i64) -> i64 {
        r
    }
    fn to_py<'py>(py: Python<'py>, out: i64) -> PyResult<Bound<'py, PyAny>> {
        Ok(out.into_pyobject(py)?.into_any())
    }
}

/// Any Python values, kept in a list per key (in no set order).
struct List;

impl Fold for List {
    type V = Option<Py<PyAny>>;
    type C = KeepAll;
    type Out = Vec<Py<PyAny>>;
    fn value(v: &Bound<'_, PyAny>) -> PyResult<Self::V> {
        Ok(Some(v.clone().unbind()))
    }
    fn out(r: &mut [Option<Py<PyAny>>]) -> Vec<Py<PyAny>> {
        // Moved out, not cloned: no reference count changes, no GIL.
        r.iter_mut().filter_map(Option::take).collect()
    }
    fn to_py<'py>(py: Python<'py>, out: Self::Out) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyList::new(py, out)?.into_any())
    }
}

/// A job whose `map` is a Python callable.
struct PyJob<F> {
    map: Py<PyAny>,
    records: Records,
    /// The first exception `map` raised: the run stops and raises it.
    failure: Mutex<Option<PyErr>>,
    str_keys: AtomicBool,
    bytes_keys: AtomicBool,
    fold: PhantomData<F>,
}

impl<F: Fold> PyJob<F> {
    /// A key from Python: `str` (as UTF-8) or `bytes`.
    fn key(&self, k: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        if let Ok(b) = k.cast::<PyBytes>() {
            self.bytes_keys.store(true, Ordering::Relaxed);
            Ok(b.as_bytes().to_vec())
        } else if let Ok(s) = k.cast::<PyString>() {
            self.str_keys.store(true, Ordering::Relaxed);
            Ok(s.to_cow()?.as_bytes().to_vec())
        } else {
            let t = k.get_type().name()?;
            Err(PyTypeError::new_err(format!(
                "map_reduce keys must be str or bytes, not {t}"
            )))
        }
    }

    /// Calls `map` on a split's bytes and copies out its pairs: from a
    /// dict's items, or from any iterable of `(key, value)`.
    fn pairs(&self, py: Python<'_>, data: &[u8]) -> PyResult<Vec<(Vec<u8>, F::V)>> {
        let out = self.map.bind(py).call1((PyBytes::new(py, data),))?;
        let mut pairs = Vec::new();
        if let Ok(d) = out.cast::<PyDict>() {
            // A dict (a Counter) is walked in place: no item tuples.
            pairs.reserve(d.len());
            for (k, v) in d.iter() {
                pairs.push((self.key(&k)?, F::value(&v)?));
            }
            return Ok(pairs);
        }
        for item in out.try_iter()? {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
            pairs.push((self.key(&k)?, F::value(&v)?));
        }
        Ok(pairs)
    }
}

impl<F: Fold> Job for PyJob<F> {
    type Key = Bytes;
    type Value = F::V;
    type Combiner = F::C;
    type Out = F::Out;

    fn records(&self) -> Records {
        self.records
    }

    fn map<E: Emit<Bytes, F::V>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        match Python::attach(|py| self.pairs(py, split.data)) {
            Ok(pairs) => {
                for (k, v) in pairs {
                    emit.emit(&k, v);
                }
                Ok(())
            }
            Err(e) => {
                self.failure
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
                Err(split.malformed(split.data, "the Python map function raised"))
            }
        }
    }

    fn reduce(&self, _key: &Bytes, values: ReducedOf<'_, Self>) -> F::Out {
        F::out(values)
    }
}

/// Where a custom job's input may be cut: `"lines"`, `"whole"` (a split
/// per file), `"words"` (between any bytes that are not ASCII letters) or
/// an integer (fixed-size records of that many bytes).
fn records(r: &Bound<'_, PyAny>) -> PyResult<Records> {
    if let Ok(n) = r.extract::<usize>() {
        return match n {
            0 => Err(PyValueError::new_err("fixed-size records need a size >= 1")),
            n => Ok(Records::Fixed(n)),
        };
    }
    match r.extract::<String>()?.as_str() {
        "lines" => Ok(Records::Lines),
        "whole" => Ok(Records::Whole),
        "words" => Ok(Records::Separator(ember_apps::wordcount::is_separator)),
        s => Err(PyValueError::new_err(format!(
            "unknown records '{s}' (lines, whole, words, or a record size in bytes)"
        ))),
    }
}

/// What `map_reduce` is asked to do besides the input.
pub(crate) struct Custom<'py> {
    pub(crate) map: Bound<'py, PyAny>,
    pub(crate) combine: String,
    pub(crate) reduce: Option<Bound<'py, PyAny>>,
    pub(crate) records: Bound<'py, PyAny>,
}

/// Runs a custom job; returns `(dict by key, stats)`.
pub(crate) fn map_reduce<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    c: Custom<'py>,
    o: &CallOptions,
) -> PyResult<Bound<'py, PyTuple>> {
    match c.combine.as_str() {
        "sum" => run::<Ints<Sum>>(py, rt, src, c, o),
        "min" => run::<Ints<Min>>(py, rt, src, c, o),
        "max" => run::<Ints<Max>>(py, rt, src, c, o),
        "list" => run::<List>(py, rt, src, c, o),
        s => Err(PyValueError::new_err(format!(
            "unknown combine '{s}' (sum, min, max, list, or a function)"
        ))),
    }
}

/// [`map_reduce`] with the values folded as `F` says.
fn run<'py, F: Fold>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    c: Custom<'py>,
    o: &CallOptions,
) -> PyResult<Bound<'py, PyTuple>> {
    let job = PyJob::<F> {
        map: c.map.unbind(),
        records: records(&c.records)?,
        failure: Mutex::new(None),
        str_keys: AtomicBool::new(false),
        bytes_keys: AtomicBool::new(false),
        fold: PhantomData,
    };
    let run = || {
        let out = rt.run_with(&job, &src.open(o.ingest)?, &o.run);
        if let Some(e) = job.failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e.into());
        }
        let out = out?;
        Ok((out.pairs, out.stats))
    };
    let (as_str, as_bytes) = (&job.str_keys, &job.bytes_keys);
    call(py, o, run, |py, pairs| {
        let as_str = as_str.load(Ordering::Relaxed);
        if as_str && as_bytes.load(Ordering::Relaxed) {
            return Err(PyTypeError::new_err(
                "map_reduce keys must be all str or all bytes, not both",
            ));
        }
        let d = PyDict::new(py);
        for (k, out) in pairs {
            let key = if as_str {
                PyString::new(py, &String::from_utf8_lossy(k.as_bytes())).into_any()
            } else {
                PyBytes::new(py, k.as_bytes()).into_any()
            };
            let mut value = F::to_py(py, out)?;
            if let Some(reduce) = &c.reduce {
                value = reduce.call1((&key, value))?;
            }
            d.set_item(key, value)?;
        }
        Ok(d.into_any())
    })
}
