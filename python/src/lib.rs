//! `ember._ember`: the native module of the `ember` Python package.
//!
//! Every workload runs on a [`PyRuntime`] (a pool of worker threads built
//! once) through the same `ember-apps` functions as the `ember` CLI's
//! commands, with the GIL released ([`call::call`]). The Python layer
//! (`python/ember/__init__.py`) normalises inputs and builds the public
//! API on top of these methods, each of which returns `(value, stats)`.

#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(target_endian = "big")]
compile_error!("ember's matrix layout is little-endian: NumPy arrays are read in place");

mod call;
mod custom;
mod errors;
mod options;
mod source;
mod workloads;

use std::path::PathBuf;

use ember_apps::kmeans::Params;
use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::call::detached;
use crate::options::parse;
use crate::source::Source;

/// A pool of worker threads that runs ember jobs: build it once and reuse
/// it. `threads=None` uses every CPU.
#[pyclass(frozen, module = "ember._ember", name = "Runtime")]
struct PyRuntime {
    rt: ember::Runtime,
}

type Pair<'py> = PyResult<Bound<'py, PyTuple>>;

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(signature = (threads=None))]
    fn new(py: Python<'_>, threads: Option<usize>) -> PyResult<Self> {
        let rt = detached(py, None, || {
            let b = ember::Runtime::builder();
            let b = match threads {
                Some(t) => b.threads(t),
                None => b,
            };
            Ok(b.build()?)
        })?;
        Ok(PyRuntime { rt })
    }

    /// Worker threads of the pool.
    #[getter]
    fn threads(&self) -> usize {
        self.rt.threads()
    }

    fn __repr__(&self) -> String {
        format!("ember.Runtime(threads={})", self.rt.threads())
    }

    #[pyo3(signature = (source, top=None, **opts))]
    fn wordcount<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        top: Option<usize>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::wordcount(py, &self.rt, source.view(), top, &parse(opts)?)
    }

    #[pyo3(signature = (source, lines=false, **opts))]
    fn inverted_index<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        lines: bool,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::inverted_index(py, &self.rt, source.view(), lines, &parse(opts)?)
    }

    #[pyo3(signature = (source, **opts))]
    fn histogram<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::histogram(py, &self.rt, source.view(), &parse(opts)?)
    }

    #[pyo3(signature = (source, **opts))]
    fn linear_regression<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::linear_regression(py, &self.rt, source.view(), &parse(opts)?)
    }

    #[pyo3(signature = (source, out=None, **opts))]
    fn sort<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        out: Option<PathBuf>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::sort(py, &self.rt, source.view(), out, &parse(opts)?)
    }

    #[pyo3(signature = (source, words, **opts))]
    fn string_match<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        words: Vec<Vec<u8>>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::string_match(py, &self.rt, source.view(), words, &parse(opts)?)
    }

    #[pyo3(signature = (points, k, max_iter, **opts))]
    fn kmeans<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'py, i32>,
        k: usize,
        max_iter: usize,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        let params = Params {
            clusters: k,
            max_iterations: max_iter,
        };
        workloads::kmeans(py, &self.rt, points, params, &parse(opts)?)
    }

    #[pyo3(signature = (matrix, **opts))]
    fn pca<'py>(
        &self,
        py: Python<'py>,
        matrix: PyReadonlyArray2<'py, i32>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::pca(py, &self.rt, matrix, &parse(opts)?)
    }

    #[pyo3(signature = (a, b, **opts))]
    fn matrix_multiply<'py>(
        &self,
        py: Python<'py>,
        a: PyReadonlyArray2<'py, i32>,
        b: PyReadonlyArray2<'py, i32>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        workloads::matrix_multiply(py, &self.rt, a, b, &parse(opts)?)
    }

    #[pyo3(signature = (source, map, combine, reduce, records, **opts))]
    #[allow(clippy::too_many_arguments)]
    fn map_reduce<'py>(
        &self,
        py: Python<'py>,
        source: Source<'py>,
        map: Bound<'py, PyAny>,
        combine: String,
        reduce: Option<Bound<'py, PyAny>>,
        records: Bound<'py, PyAny>,
        opts: Option<&Bound<'py, PyDict>>,
    ) -> Pair<'py> {
        let job = custom::Custom {
            map,
            combine,
            reduce,
            records,
        };
        custom::map_reduce(py, &self.rt, source.view(), job, &parse(opts)?)
    }
}

/// The document files of an inverted index over `paths` (folders walked),
/// in document-id order.
#[pyfunction]
fn document_paths(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Vec<PathBuf>> {
    detached(py, None, || workloads::documents(&paths))
}

/// The native module.
#[pymodule]
fn _ember(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRuntime>()?;
    m.add("EmberError", m.py().get_type::<errors::EmberError>())?;
    m.add_function(wrap_pyfunction!(document_paths, m)?)?;
    m.add_function(wrap_pyfunction!(call::_panic_for_tests, m)?)?;
    m.add(
        "STRING_MATCH_TARGETS",
        ember_apps::string_match::DEFAULT_TARGETS.to_vec(),
    )?;
    Ok(())
}
