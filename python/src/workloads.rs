//! The built-in workloads, run by the same `ember-apps` code as the CLI's
//! commands, their outputs as Python and NumPy values.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use ember::tune::Ingest;
use ember::{Bytes, Input, Runtime};
use ember_apps::inverted_index::{self, Docs};
use ember_apps::kmeans::{self, Params};
use ember_apps::matrix::Matrix;
use ember_apps::string_match::{self, Targets};
use ember_apps::wordcount::WordCount;
use ember_apps::{histogram, linear_regression, matrix_multiply, pca, sort};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::call::call;
use crate::options::CallOptions;
use crate::source::Src;

/// What every workload returns to the Python layer: `(value, stats)`.
type Pair<'py> = PyResult<Bound<'py, PyTuple>>;

/// A word as a `str`: words are runs of ASCII letters, so always valid
/// UTF-8 (anything else would be shown lossily rather than fail).
fn word<'py>(py: Python<'py>, w: &Bytes) -> Bound<'py, PyString> {
    let b = w.as_bytes();
    match std::str::from_utf8(b) {
        Ok(s) => PyString::new(py, s),
        Err(_) => PyString::new(py, &String::from_utf8_lossy(b)),
    }
}

/// `(word, value)` pairs as a dict, in their order.
fn word_dict<'py, V: IntoPyObject<'py>>(
    py: Python<'py>,
    pairs: Vec<(Bytes, V)>,
) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    for (w, v) in pairs {
        d.set_item(word(py, &w), v)?;
    }
    Ok(d.into_any())
}

/// Word count: every word's count (`top`: the most frequent `top`, as a
/// list of `(word, count)`, most frequent first).
pub(crate) fn wordcount<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    top: Option<usize>,
    o: &CallOptions,
) -> Pair<'py> {
    let (job, opts) = match top {
        None => (WordCount::new(), o.run.clone()),
        Some(k) => (WordCount::by_count(), o.run.clone().top(k)),
    };
    call(
        py,
        o,
        || {
            let out = rt.run_with(&job, &src.open(o.ingest)?, &opts)?;
            Ok((out.pairs, out.stats))
        },
        |py, pairs| match top {
            None => word_dict(py, pairs),
            Some(_) => {
                let items = pairs.iter().map(|(w, n)| (word(py, w), *n));
                Ok(PyList::new(py, items)?.into_any())
            }
        },
    )
}

/// The document files of `paths` (folders walked), in id order.
pub(crate) fn documents(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    Ok(inverted_index::document_paths(paths)?)
}

/// Inverted index: word -> sorted ids of the files (or lines) it occurs in.
pub(crate) fn inverted_index<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    lines: bool,
    o: &CallOptions,
) -> Pair<'py> {
    let docs = if lines { Docs::Lines } else { Docs::Files };
    call(
        py,
        o,
        || {
            let input = match src {
                // Lines are numbered in a first pass over the input in
                // memory; documents that are files may stream.
                Src::Paths(p) if lines => Input::in_memory(documents(p)?)?,
                Src::Paths(p) => Input::open(documents(p)?, Ingest::Mmap)?,
                _ => src.whole()?,
            };
            let built = inverted_index::build(rt, &input, docs, &o.run)?;
            Ok((built.index, built.stats))
        },
        word_dict,
    )
}

/// Histogram of a 24-bit BMP: counts as a `(3, 256)` uint64 array
/// (red, green, blue).
pub(crate) fn histogram<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    o: &CallOptions,
) -> Pair<'py> {
    call(
        py,
        o,
        || {
            let input = src.single()?;
            histogram::run(rt, input.part_bytes(0), &o.run).with_context(|| src.name())
        },
        |py, counts| {
            let a = Array2::from_shape_vec((3, 256), counts.to_vec()).expect("768 counts");
            Ok(a.into_pyarray(py).into_any())
        },
    )
}

/// Linear regression: the sums and the fit, as a dict the Python layer
/// turns into its dataclass.
pub(crate) fn linear_regression<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    o: &CallOptions,
) -> Pair<'py> {
    call(
        py,
        o,
        || {
            let input = src.open(o.ingest)?;
            linear_regression::run_input(rt, &input, &o.run).with_context(|| src.name())
        },
        |py, sums| {
            let d = PyDict::new(py);
            d.set_item("n", sums.n)?;
            for (name, s) in linear_regression::SUM_NAMES.iter().zip(sums.s) {
                d.set_item(name.to_ascii_lowercase(), s)?;
            }
            let fit = sums.fit();
            d.set_item("a", fit.map(|f| f.a))?;
            d.set_item("b", fit.map(|f| f.b))?;
            d.set_item("r2", fit.map(|f| f.r2))?;
            Ok(d.into_any())
        },
    )
}

/// Sort: the records ordered by key, written to `out` (or returned as
/// bytes when there is no `out`).
pub(crate) fn sort<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    out: Option<PathBuf>,
    o: &CallOptions,
) -> Pair<'py> {
    call(
        py,
        o,
        || {
            let input = src.single()?;
            let data = input.part_bytes(0);
            let order = sort::sort_order(rt, data, &o.run)
                .with_context(|| format!("cannot sort {}", src.name()))?;
            let sorted = match &out {
                Some(path) => {
                    let cannot = || format!("cannot write '{}'", path.display());
                    let file = std::fs::File::create(path).with_context(cannot)?;
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                    order.write(rt, data, &mut w).with_context(cannot)?;
                    w.flush().with_context(cannot)?;
                    None
                }
                None => {
                    let mut v = vec![0u8; data.len() / sort::RECORD_LEN * sort::RECORD_LEN];
                    order.gather_into(rt, data, &mut v);
                    Some(v)
                }
            };
            Ok((sorted, order.stats))
        },
        |py, sorted| {
            Ok(match sorted {
                Some(v) => PyBytes::new(py, &v).into_any(),
                None => py.None().into_bound(py),
            })
        },
    )
}

/// String match: for each target word, the byte offsets of the lines of
/// the keys file that are that word.
pub(crate) fn string_match<'py>(
    py: Python<'py>,
    rt: &Runtime,
    src: Src<'_>,
    words: Vec<Vec<u8>>,
    o: &CallOptions,
) -> Pair<'py> {
    call(
        py,
        o,
        || {
            let targets = Targets::new(&words)?;
            let input = src.open(o.ingest)?;
            string_match::run_input(rt, &input, &targets, &o.run).with_context(|| src.name())
        },
        |py, matches| Ok(PyList::new(py, matches)?.into_any()),
    )
}

/// A NumPy int32 matrix (C-contiguous, 2-D) as ember's matrix, without a
/// copy.
fn matrix<'a>(a: &'a PyReadonlyArray2<'_, i32>) -> PyResult<Matrix<'a>> {
    let values = a
        .as_slice()
        .map_err(|_| PyValueError::new_err("the array must be C-contiguous"))?;
    let (rows, cols) = (a.shape()[0], a.shape()[1]);
    if cols == 0 {
        return Err(PyValueError::new_err("a matrix needs at least 1 column"));
    }
    // SAFETY: every initialised i32 is 4 initialised bytes and u8 needs no
    // alignment; the slice covers exactly the bytes of `values`, which it
    // borrows for 'a. The values are little-endian (the crate refuses
    // big-endian targets), as ember's matrix layout has them.
    let data =
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) };
    Ok(Matrix { rows, cols, data })
}

/// A row-major vector as a `(rows, cols)` array (its buffer, not a copy).
fn array2<'py, T: numpy::Element>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    v: Vec<T>,
) -> PyResult<Bound<'py, PyAny>> {
    let a = Array2::from_shape_vec((rows, cols), v)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

/// k-means: the clustering as a dict (means, sizes, iterations,
/// converged) the Python layer turns into its dataclass.
pub(crate) fn kmeans<'py>(
    py: Python<'py>,
    rt: &Runtime,
    points: PyReadonlyArray2<'py, i32>,
    params: Params,
    o: &CallOptions,
) -> Pair<'py> {
    let m = matrix(&points)?;
    call(
        py,
        o,
        || Ok(kmeans::run(rt, &m, params, &o.run, |_, _| {})?),
        |py, c| {
            let d = PyDict::new(py);
            let k = c.sizes.len();
            d.set_item("means", array2(py, k, c.dims, c.means)?)?;
            d.set_item("sizes", c.sizes.into_pyarray(py))?;
            d.set_item("iterations", c.iterations)?;
            d.set_item("converged", c.converged)?;
            Ok(d.into_any())
        },
    )
}

/// PCA: the row means and the full covariance matrix, as a tuple of
/// float64 arrays.
pub(crate) fn pca<'py>(
    py: Python<'py>,
    rt: &Runtime,
    a: PyReadonlyArray2<'py, i32>,
    o: &CallOptions,
) -> Pair<'py> {
    let m = matrix(&a)?;
    call(
        py,
        o,
        || Ok(pca::run(rt, &m, &o.run)?),
        |py, p| {
            let n = p.rows();
            let means: Vec<f64> = (0..n).map(|i| p.mean(i)).collect();
            let cov: Vec<f64> = (0..n * n).map(|x| p.cov(x / n, x % n)).collect();
            let means = means.into_pyarray(py).into_any();
            Ok(PyTuple::new(py, [means, array2(py, n, n, cov)?])?.into_any())
        },
    )
}

/// Matrix multiply: `a @ b` as an int32 array (wrapping, as ember's).
pub(crate) fn matrix_multiply<'py>(
    py: Python<'py>,
    rt: &Runtime,
    a: PyReadonlyArray2<'py, i32>,
    b: PyReadonlyArray2<'py, i32>,
    o: &CallOptions,
) -> Pair<'py> {
    let (ma, mb) = (matrix(&a)?, matrix(&b)?);
    call(
        py,
        o,
        || Ok(matrix_multiply::run(rt, &ma, &mb, &o.run)?),
        |py, c| array2(py, c.rows, c.cols, c.values()),
    )
}
