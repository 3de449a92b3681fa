"""Type hints of the ember package (the functions are documented in
__init__.py)."""

import multiprocessing.pool
import os
from typing import (
    IO,
    Literal,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

import numpy as np
import numpy.typing as npt


PathLike = Union[str, os.PathLike]
# A binary file object (``readinto`` or ``read``) is streamed in chunks by
# wordcount, string_match, linear_regression and map_reduce, read whole by
# the others.
Input = Union[PathLike, Sequence[PathLike], bytes, bytearray, memoryview, IO[bytes]]
# Options (keyword arguments named as the CLI's): sizes (split_size,
# chunk_size, buffer_size, max_buffered, memory_limit) are ints in bytes or
# strings such as "64KiB", "1GiB", "10MB" (parsed as the CLI parses them).
Stats = Dict[str, Any]
Key = TypeVar("Key", str, bytes)
Ints = npt.ArrayLike
Combine = Union[Literal["sum", "min", "max", "list"], Callable[[Any, Any], Any]]
Records = Union[Literal["lines", "words", "whole"], int]

STRING_MATCH_TARGETS: Tuple[str, ...]

class EmberError(Exception): ...

class LinearRegression:
    n: int
    sx: int
    sy: int
    sxx: int
    syy: int
    sxy: int
    a: Optional[float]
    b: Optional[float]
    r2: Optional[float]

class KMeans:
    means: npt.NDArray[np.int32]
    sizes: npt.NDArray[np.uint64]
    iterations: int
    converged: bool

class Pca:
    means: npt.NDArray[np.float64]
    cov: npt.NDArray[np.float64]

class Runtime:
    """A pool of worker threads, built once and reused by every call."""

    def __init__(self, threads: Optional[int] = None) -> None: ...
    @property
    def threads(self) -> int: ...
    @overload
    def wordcount(self, input: Input, *, top: None = None, return_stats: Literal[False] = False, **opts: Any) -> Dict[str, int]: ...
    @overload
    def wordcount(self, input: Input, *, top: int, return_stats: Literal[False] = False, **opts: Any) -> List[Tuple[str, int]]: ...
    @overload
    def wordcount(self, input: Input, *, top: Optional[int] = None, return_stats: Literal[True], **opts: Any) -> Tuple[Any, Stats]: ...
    def inverted_index(self, input: Input, *, lines: bool = False, return_stats: bool = False, **opts: Any) -> Dict[str, List[int]]: ...
    def histogram(self, input: Input, *, return_stats: bool = False, **opts: Any) -> npt.NDArray[np.uint64]: ...
    def linear_regression(self, input: Input, *, return_stats: bool = False, **opts: Any) -> LinearRegression: ...
    def sort(self, input: Input, out: Optional[PathLike] = None, *, return_stats: bool = False, **opts: Any) -> Optional[bytes]: ...
    def string_match(self, input: Input, words: Optional[Iterable[Union[str, bytes]]] = None, *, return_stats: bool = False, **opts: Any) -> Dict[Union[str, bytes], List[int]]: ...
    def kmeans(self, points: Ints, k: int = 100, *, max_iter: int = 1000, return_stats: bool = False, **opts: Any) -> KMeans: ...
    def pca(self, matrix: Ints, *, return_stats: bool = False, **opts: Any) -> Pca: ...
    def matrix_multiply(self, a: Ints, b: Ints, *, return_stats: bool = False, **opts: Any) -> npt.NDArray[np.int32]: ...
    def map_reduce(
        self,
        input: Input,
        map: Callable[[bytes], Union[Mapping[Key, Any], Iterable[Tuple[Key, Any]]]],
        *,
        combine: Combine = "sum",
        reduce: Optional[Callable[[Key, Any], Any]] = None,
        records: Records = "lines",
        processes: Union[None, int, multiprocessing.pool.Pool] = None,
        return_stats: bool = False,
        **opts: Any,
    ) -> Dict[Key, Any]: ...

# The module-level functions: Runtime's methods plus `threads`, on a shared
# runtime per thread count.
@overload
def wordcount(input: Input, *, top: None = None, threads: Optional[int] = None, return_stats: Literal[False] = False, **opts: Any) -> Dict[str, int]: ...
@overload
def wordcount(input: Input, *, top: int, threads: Optional[int] = None, return_stats: Literal[False] = False, **opts: Any) -> List[Tuple[str, int]]: ...
@overload
def wordcount(input: Input, *, top: Optional[int] = None, threads: Optional[int] = None, return_stats: Literal[True], **opts: Any) -> Tuple[Any, Stats]: ...
def inverted_index(input: Input, *, lines: bool = False, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> Dict[str, List[int]]: ...
def histogram(input: Input, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> npt.NDArray[np.uint64]: ...
def linear_regression(input: Input, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> LinearRegression: ...
def sort(input: Input, out: Optional[PathLike] = None, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> Optional[bytes]: ...
def string_match(input: Input, words: Optional[Iterable[Union[str, bytes]]] = None, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> Dict[Union[str, bytes], List[int]]: ...
def kmeans(points: Ints, k: int = 100, *, max_iter: int = 1000, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> KMeans: ...
def pca(matrix: Ints, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> Pca: ...
def matrix_multiply(a: Ints, b: Ints, *, threads: Optional[int] = None, return_stats: bool = False, **opts: Any) -> npt.NDArray[np.int32]: ...
def map_reduce(
    input: Input,
    map: Callable[[bytes], Union[Mapping[Key, Any], Iterable[Tuple[Key, Any]]]],
    *,
    combine: Combine = "sum",
    reduce: Optional[Callable[[Key, Any], Any]] = None,
    records: Records = "lines",
    processes: Union[None, int, multiprocessing.pool.Pool] = None,
    threads: Optional[int] = None,
    return_stats: bool = False,
    **opts: Any,
) -> Dict[Key, Any]: ...
def document_paths(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]: ...
