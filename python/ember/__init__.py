"""ember: a MapReduce runtime for one shared-memory machine, from Python.

Every built-in workload of the ``ember`` command is a function here, run by
the same Rust code, its result in Python's own types (dicts, lists,
dataclasses, NumPy arrays)::

    import ember
    counts = ember.wordcount("corpus.txt")          # {word: count}
    top = ember.wordcount("corpus.txt", top=10)      # [(word, count), ...]

Inputs: a path, a list of paths (each a file, a folder read recursively
or a glob pattern such as ``"logs/*.gz"``, named as the CLI names its
inputs), ``bytes``/``bytearray``/``memoryview``
(read in place for ``bytes``; the others are copied once), or a binary file
object (anything with ``readinto`` or ``read``: streamed in chunks, as the
CLI reads standard input, by ``wordcount``, ``string_match``,
``linear_regression`` and ``map_reduce``; read whole by the jobs that need
their whole input in memory). Options are keyword arguments named as the
CLI's (``threads``, ``split_size``, ``container``, ``mode``, ``ingest``,
``chunk_size``, ``chunk_buffers``, ``buffer_size``, ``max_buffered``,
``memory_limit``, ``spill_dir``); sizes are integers (bytes) or strings as
the CLI takes them (``"64KiB"``, ``"1GiB"``, ``"10MB"``).
``return_stats=True`` returns ``(result, stats)``, the stats a dict in the
schema of ``ember --stats-json`` (docs/stats.md).

The module-level functions share one :class:`Runtime` per ``threads`` value,
built on first use; build your own ``ember.Runtime(threads=...)`` to control
its lifetime. Every call releases the GIL while ember runs.

Errors are exceptions of the built-in kinds (``FileNotFoundError``,
``IsADirectoryError``, ``PermissionError``, ``ValueError`` for malformed
input or options) or :class:`EmberError`, each with the one-line message
the CLI prints.
"""

from __future__ import annotations

import functools
import io
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import _ember
from ._ember import EmberError

# NumPy and multiprocessing are imported by the calls that use them, not
# by `import ember`: together they are most of the import's cost, which a
# short script that only counts words would pay for nothing. (The native
# module imports NumPy itself when it first makes an array.)
if TYPE_CHECKING:
    import multiprocessing.pool

    import numpy as np

__all__ = [
    "EmberError",
    "KMeans",
    "LinearRegression",
    "Pca",
    "Runtime",
    "document_paths",
    "histogram",
    "inverted_index",
    "kmeans",
    "linear_regression",
    "map_reduce",
    "matrix_multiply",
    "pca",
    "sort",
    "string_match",
    "wordcount",
]

#: The words ``ember gen strmatch`` plants and ``string_match`` looks for
#: by default.
STRING_MATCH_TARGETS: Tuple[str, ...] = tuple(_ember.STRING_MATCH_TARGETS)


@dataclass(frozen=True)
class LinearRegression:
    """The least-squares line ``y = a + b x`` through the points, with the
    exact sums it is computed from. ``a``, ``b`` and ``r2`` are ``None``
    when the fit is undefined (no points, or every x the same)."""

    n: int
    sx: int
    sy: int
    sxx: int
    syy: int
    sxy: int
    a: Optional[float]
    b: Optional[float]
    r2: Optional[float]


@dataclass(frozen=True)
class KMeans:
    """A clustering: ``means`` (k x dims, int32, ember's integer means),
    ``sizes`` (points per cluster), the iterations run and whether the last
    one changed no mean."""

    means: np.ndarray
    sizes: np.ndarray
    iterations: int
    converged: bool


@dataclass(frozen=True)
class Pca:
    """The mean of each row (float64, rows) and the covariance matrix of
    the rows (float64, rows x rows)."""

    means: np.ndarray
    cov: np.ndarray


def _source(input: Any) -> Any:
    """The input as the native module takes it: bytes, a list of paths, or
    a binary file object (read by the native module, in chunks or whole as
    the job needs)."""
    if isinstance(input, bytes):
        return input
    if isinstance(input, (bytearray, memoryview)):
        return bytes(input)
    if isinstance(input, (str, os.PathLike)):
        return [os.fsdecode(input)]
    if isinstance(input, io.TextIOBase):
        raise TypeError("file objects must be opened in binary mode ('rb')")
    if hasattr(input, "readinto") or hasattr(input, "read"):
        return input
    if isinstance(input, Sequence) or hasattr(input, "__iter__"):
        return [os.fsdecode(p) for p in input]
    raise TypeError(
        f"input must be a path, a list of paths, bytes or a binary file, not {type(input).__name__}"
    )


def _one_path(path: Any) -> Optional[str]:
    return None if path is None else os.fsdecode(path)


def _int32(a: Any, name: str) -> np.ndarray:
    """``a`` as a C-contiguous 2-D int32 array: no copy when it is one."""
    import numpy as np

    arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, not {arr.ndim}-D")
    if arr.dtype != np.int32:
        if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise ValueError(
                f"{name} must hold integers (ember's numeric workloads are exact), not {arr.dtype}"
            )
        info = np.iinfo(np.int32)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise ValueError(f"{name} has values outside the int32 range")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _result(pair: Tuple[Any, Dict[str, Any]], return_stats: bool, wrap=None) -> Any:
    value, stats = pair
    if wrap is not None:
        value = wrap(value)
    return (value, stats) if return_stats else value


class Runtime:
    """A pool of worker threads, built once and reused by every call made
    on it (as ``ember::Runtime`` in Rust). ``threads=None``: every CPU."""

    def __init__(self, threads: Optional[int] = None) -> None:
        self._rt = _ember.Runtime(threads)

    @property
    def threads(self) -> int:
        """Worker threads of the pool."""
        return self._rt.threads

    def __repr__(self) -> str:
        return f"ember.Runtime(threads={self.threads})"

    def wordcount(self, input, *, top=None, return_stats=False, **opts):
        """Counts words (maximal runs of ASCII letters, lower-cased; every
        other byte separates words, so any bytes are accepted). Returns
        ``{word: count}`` sorted by word, or with ``top`` the ``top`` most
        frequent as ``[(word, count), ...]``, most frequent first (ties by
        word). Words are ``str``: being ASCII, they are always valid."""
        return _result(self._rt.wordcount(_source(input), top, **opts), return_stats)

    def inverted_index(self, input, *, lines=False, return_stats=False, **opts):
        """``{word: [document id, ...]}`` (ids sorted, each once), words as
        in :meth:`wordcount`. Documents are files (folders are walked and
        glob patterns matched; ids follow :func:`document_paths`) or, with ``lines=True``, lines
        (0-based over all the files, in path order)."""
        return _result(self._rt.inverted_index(_source(input), lines, **opts), return_stats)

    def histogram(self, input, *, return_stats=False, **opts):
        """The RGB histogram of a 24-bit uncompressed BMP (a path or its
        bytes): a uint64 array of shape (3, 256), rows red, green, blue."""
        return _result(self._rt.histogram(_source(input), **opts), return_stats)

    def linear_regression(self, input, *, return_stats=False, **opts):
        """The least-squares line through points stored as pairs of signed
        bytes (x, y): a :class:`LinearRegression`."""
        pair = self._rt.linear_regression(_source(input), **opts)
        return _result(pair, return_stats, lambda d: LinearRegression(**d))

    def sort(self, input, out=None, *, return_stats=False, **opts):
        """Sorts 100-byte records by their 10-byte keys (gensort layout).
        Writes them to the file ``out``, or returns them as ``bytes`` when
        ``out`` is None."""
        return _result(self._rt.sort(_source(input), _one_path(out), **opts), return_stats)

    def string_match(self, input, words=None, *, return_stats=False, **opts):
        """For each target word (default :data:`STRING_MATCH_TARGETS`), the
        byte offsets of the lines of the keys file that are that word:
        ``{word: [offset, ...]}``."""
        words = list(STRING_MATCH_TARGETS if words is None else words)
        raw = [w.encode() if isinstance(w, str) else bytes(w) for w in words]
        pair = self._rt.string_match(_source(input), raw, **opts)
        return _result(pair, return_stats, lambda m: dict(zip(words, m)))

    def kmeans(self, points, k=100, *, max_iter=1000, return_stats=False, **opts):
        """k-means of integer points (an array, one point per row; the first
        ``k`` points are the initial means), one ember job per iteration:
        a :class:`KMeans`. Integer arrays other than int32 are converted
        (checked for range); an int32 C-contiguous array is read in place."""
        pts = _int32(points, "points")
        pair = self._rt.kmeans(pts, k, max_iter, **opts)
        return _result(pair, return_stats, lambda d: KMeans(**d))

    def pca(self, matrix, *, return_stats=False, **opts):
        """Means and covariance matrix of the rows of an integer matrix
        (two ember jobs): a :class:`Pca`."""
        pair = self._rt.pca(_int32(matrix, "matrix"), **opts)
        return _result(pair, return_stats, lambda mc: Pca(*mc))

    def matrix_multiply(self, a, b, *, return_stats=False, **opts):
        """``a @ b`` for integer matrices, as int32 (wrapping on overflow,
        as ember's): a map-only ember job over the rows of ``a``."""
        a32, b32 = _int32(a, "a"), _int32(b, "b")
        if a32.shape[1] != b32.shape[0]:
            raise ValueError(
                f"cannot multiply {a32.shape[0]} x {a32.shape[1]} by {b32.shape[0]} x {b32.shape[1]}"
            )
        return _result(self._rt.matrix_multiply(a32, b32, **opts), return_stats)

    def map_reduce(self, input, map, *, combine="sum", reduce=None, records="lines",
                   processes=None, return_stats=False, **opts):
        """A custom job. ``map(split: bytes)`` is called once per split (whole
        records, as ``records`` cuts them: ``"lines"``, ``"words"``,
        ``"whole"`` (a split per file) or a record size in bytes) and returns
        a dict (e.g. a ``collections.Counter``: the fast path) or an
        iterable of ``(key, value)`` pairs; keys are all ``str`` or all
        ``bytes``. Values of a key fold by ``combine``: ``"sum"``, ``"min"``,
        ``"max"`` (int values, in Rust), ``"list"`` (any values, in no set
        order) or a function ``f(a, b)`` (a list folded in Python after the
        run). ``reduce(key, folded)``, if given, makes each key's output.
        Returns ``{key: output}`` sorted by key.

        Python code holds the GIL: by default the map calls run one at a
        time, however many threads the runtime has; ember overlaps the rest
        (reading, folding, merging). ``processes=N`` (or a
        ``multiprocessing.Pool`` to reuse) runs ``map`` in worker
        processes instead, one split per process at a time, as many at
        once as the runtime has threads: each split is pickled to a
        process and its result pickled back, and that unpickling and the
        copy into Rust still take the GIL, so it pays only when ``map``
        does much work per byte of what it returns. ``map`` must then be
        picklable (a module-level function, not a lambda). Prefer a
        built-in workload where there is one: see docs/python.md for what
        each way costs.
        """
        if callable(combine):
            fold, then = combine, reduce

            def reduce(key, values):
                folded = functools.reduce(fold, values)
                return folded if then is None else then(key, folded)

            combine = "list"
        source = _source(input)

        def run(fn):
            pair = self._rt.map_reduce(source, fn, combine, reduce, records, **opts)
            return _result(pair, return_stats)

        if processes is None:
            return run(map)
        import multiprocessing.pool

        if isinstance(processes, multiprocessing.pool.Pool):
            return run(functools.partial(_apply, processes, map))
        if isinstance(processes, bool) or not isinstance(processes, int):
            raise TypeError(
                f"processes must be an int or a multiprocessing.Pool, not {type(processes).__name__}"
            )
        if processes < 1:
            raise ValueError("processes must be at least 1")
        with multiprocessing.Pool(processes) as pool:
            return run(functools.partial(_apply, pool, map))


def _apply(pool: multiprocessing.pool.Pool, map: Any, split: bytes) -> Any:
    """``map(split)`` run in one of ``pool``'s processes (this thread waits
    without the GIL)."""
    return pool.apply(map, (split,))


_runtimes: Dict[Optional[int], Runtime] = {}
_runtimes_lock = threading.Lock()


def _runtime(threads: Optional[int]) -> Runtime:
    """The shared runtime for ``threads``, built on first use."""
    with _runtimes_lock:
        rt = _runtimes.get(threads)
        if rt is None:
            rt = _runtimes[threads] = Runtime(threads)
        return rt


def _module_function(name: str):
    """The module-level form of ``Runtime.<name>``: the same arguments plus
    ``threads``, run on the shared runtime for that many threads."""
    method = getattr(Runtime, name)

    def function(*args, threads=None, **kwargs):
        return method(_runtime(threads), *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = method.__doc__
    function.__wrapped__ = method
    return function


wordcount = _module_function("wordcount")
inverted_index = _module_function("inverted_index")
histogram = _module_function("histogram")
linear_regression = _module_function("linear_regression")
sort = _module_function("sort")
string_match = _module_function("string_match")
kmeans = _module_function("kmeans")
pca = _module_function("pca")
matrix_multiply = _module_function("matrix_multiply")
map_reduce = _module_function("map_reduce")


def document_paths(paths) -> List[str]:
    """The document files of an inverted index over ``paths`` (a path or a
    list of files, folders and glob patterns, named as every input is),
    sorted by path, which is document-id order: ``inverted_index``'s id
    ``i`` is the file ``document_paths(paths)[i]``."""
    return [os.fspath(p) for p in _ember.document_paths(_source(paths))]
