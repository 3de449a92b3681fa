"""ember inside Spark: scale-up within scale-out.

On each executor one ``ember stream map JOB`` process maps that executor's
share of the input on all its cores and combines it in-process; Spark only
ever sees partial aggregates (one line per distinct key per executor), and
does what it is good at: distribution, the shuffle, fault tolerance::

    from pyspark.sql import SparkSession
    from ember import spark as es

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    counts = es.wordcount(sc.textFile("hdfs:///corpus/*.txt"))  # RDD[(word, count)]
    counts = es.wordcount(es.text_files(sc, ["/shared/corpus/"]))  # files read by the executors
    index = es.inverted_index(sc, ["/shared/docs/"])  # RDD[(word, [doc, ...])]
    pairs = es.stream(sc.textFile("logs/"), "wordcount")  # RDD[(key, value as printed)]

The ember binary (``binary=``, else ``$EMBER_BIN``, else ``ember`` on
``PATH``) is shipped to the executors with ``SparkContext.addFile``; it
must be built for the executors' platform (a Linux x86-64 build of
``cargo build --release -p ember-cli`` runs on any such executor).

How the input reaches ember:

- :func:`text_files` (files on a file system every executor reads): each
  executor reads its byte ranges of the files and copies them to ember's
  standard input as they are. The fastest way in: nothing touches the
  lines but ember.
- An RDD read by the JVM (``sc.textFile``, any Hadoop file system) or a
  DataFrame (its single string column, or ``column=``): the executor JVM
  pipes the lines into ember (the JVM's ``RDD.pipe``); no Python worker
  touches them. One JVM thread per task writes the lines: about
  200-250 MB/s, which caps an executor's rate (``coalesce=2 * E,
  threads=C // 2`` runs two pipes and two embers per executor).
- Any other RDD of ``str`` or ``bytes`` lines (and ``feed="python"``): a
  ``mapPartitions`` in the Python worker writes them, in batches.

ember's output, a ``key<TAB>partial`` line per distinct key, is taken in
chunks of lines; each line is hashed to its reducer, and the shuffle moves
blocks of ember's own text (fewer and smaller records than a pair per
key). Each reducer folds its blocks with ``ember stream combine`` (and,
for a job's final form, sorts them by key and runs ``ember stream
reduce``) before Python parses the results.

Recommended settings: one ember process per executor, all its cores.

- ``coalesce=True`` (the default) coalesces the input, without a shuffle,
  to one partition per executor, so the map stage has one task, and so one
  ember process, per executor; it runs with ``--threads`` set to the
  executor's cores (``spark.executor.cores``; ``N`` of ``local[N]``; ``C``
  of ``local-cluster[E,C,M]``), or ``threads=``. The stage's task slots
  left free on each executor are what ember's threads use.
  ``coalesce=False`` keeps the input's partitions: one ember per task,
  with ``spark.task.cpus`` threads, each combining only its partition
  (more shuffle bytes: one line per distinct key per partition).
- Give executors several cores each (``spark.executor.cores`` 4-32) rather
  than many one-core executors: ember combines within an executor, so the
  shuffle shrinks as executors get bigger.
- Only this job's tasks should run on the executors while the map stage
  runs; to reserve the cores outright, run with ``spark.task.cpus`` equal
  to ``spark.executor.cores`` (every stage then runs one task per
  executor), or pass ``exclusive=True``, which asks for the whole
  executor for the ember stage alone (a stage-level task resource
  profile; Spark 3.4 and newer, standalone/YARN/Kubernetes, not local
  mode).
- ``reducers=`` sets the reduce partitions (default
  ``sc.defaultParallelism``).
- Fault tolerance is Spark's: a failed map task re-runs its ember process
  over its whole partition, which with ``coalesce=True`` is the
  executor's whole share; split big inputs over more executors, or pass
  ``coalesce=K`` (K partitions, so K ember processes in all).

Keys and values on ember's streams escape tab (``\\t``), newline
(``\\n``), carriage return (``\\r``), backslash (``\\\\``) and invalid
UTF-8 (``\\xHH``); the inverted index's document names escape the comma
too (``\\x2c``). :func:`unescape` undoes it. Importing this module does
not import pyspark: its functions do.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

__all__ = [
    "TextFiles",
    "escape",
    "executor_layout",
    "find_binary",
    "inverted_index",
    "map_partials",
    "stream",
    "text_files",
    "unescape",
    "wordcount",
]

#: Lines written to ember per write call on the Python feed.
_BATCH = 4096
#: Bytes of ember's output read at a time: the chunks of whole lines the
#: map side hands the shuffle, and the reduce side parses.
_CHUNK = 4 << 20

_ESCAPE_RE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|t|n|r|\\)")
_SIMPLE = {b"t": b"\t", b"n": b"\n", b"r": b"\r", b"\\": b"\\"}


def _unescape_one(m: "re.Match[bytes]") -> bytes:
    code = m.group(1)
    simple = _SIMPLE.get(code)
    return simple if simple is not None else bytes([int(code[1:], 16)])


def unescape(text: Union[bytes, str]) -> bytes:
    """The raw bytes of an escaped key, value or document name:
    ``\\t``, ``\\n``, ``\\r``, ``\\\\`` and ``\\xHH`` undone."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    if b"\\" not in text:
        return text
    return _ESCAPE_RE.sub(_unescape_one, text)


def escape(raw: Union[bytes, str], comma: bool = False) -> bytes:
    """``raw`` as ember's streams write it: tab, newline, carriage return
    and backslash as ``\\t``, ``\\n``, ``\\r``, ``\\\\``, each byte of
    invalid UTF-8 as ``\\xHH``
    and, with ``comma``, the comma as ``\\x2c``. A ``str`` is taken as its
    UTF-8 bytes (surrogate escapes as the bytes they stand for)."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    out = []
    for ch in raw.decode("utf-8", "surrogateescape"):
        if ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\\":
            out.append("\\\\")
        elif comma and ch == ",":
            out.append("\\x2c")
        elif "\udc80" <= ch <= "\udcff":
            out.append("\\x%02x" % (ord(ch) - 0xDC00))
        else:
            out.append(ch)
    return "".join(out).encode("utf-8")


def _text(raw: bytes) -> str:
    """Bytes as ``str``: UTF-8, invalid bytes as surrogate escapes (so
    ``os.fsencode``/``.encode("utf-8", "surrogateescape")`` gives them back)."""
    return raw.decode("utf-8", "surrogateescape")


def find_binary(binary: Optional[Union[str, os.PathLike]] = None) -> str:
    """The ember binary to ship: ``binary``, else ``$EMBER_BIN``, else
    ``ember`` on ``PATH``; its absolute path. Raises ``FileNotFoundError``
    if there is none, or it is not an executable file."""
    path = binary if binary is not None else os.environ.get("EMBER_BIN") or shutil.which("ember")
    if not path:
        raise FileNotFoundError(
            "no ember binary: pass binary=PATH, set EMBER_BIN, or put `ember` on PATH "
            "(cargo build --release -p ember-cli builds target/release/ember)"
        )
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember binary {path!r} is not a file")
    if not os.access(path, os.X_OK):
        raise PermissionError(f"ember binary {path!r} is not executable")
    return path


# The binaries shipped, per SparkContext (its application id): path -> name.
_shipped: dict = {}
_ship_lock = threading.Lock()


def _ship(sc: Any, binary: Optional[Union[str, os.PathLike]]) -> str:
    """Adds the ember binary to ``sc``'s files (once per application);
    returns the name executors find it under (``SparkFiles.get(name)``)."""
    path = find_binary(binary)
    with _ship_lock:
        names = _shipped.setdefault(sc.applicationId, {})
        if path in names:
            return names[path]
        base = os.path.basename(path)
        name = base
        taken = set(names.values())
        i = 1
        while name in taken:  # two binaries of the same name: both shipped
            # addFile refuses a second file of a name already added, so a
            # second binary of the same name goes by a copy named apart.
            i += 1
            name = f"{base}-{i}"
        if name != base:
            import tempfile

            copy = os.path.join(tempfile.mkdtemp(prefix="ember-spark-"), name)
            shutil.copy2(path, copy)
            sc.addFile(copy)
        else:
            sc.addFile(path)
        names[path] = name
        return name


def executor_layout(sc: Any) -> Tuple[int, int]:
    """``(executors, cores per executor)`` of ``sc``'s application: from the
    master URL for ``local[N]`` (1, N) and ``local-cluster[E,C,M]`` (E, C),
    else ``spark.executor.instances`` (or the executors registered so
    far) and ``spark.executor.cores`` (or the default parallelism over
    the executors)."""
    master = sc.master
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if m:
        n = m.group(1)
        if n is None:
            return 1, 1
        return 1, (os.cpu_count() or 1) if n == "*" else max(1, int(n))
    m = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]", master)
    if m:
        return int(m.group(1)), int(m.group(2))
    conf = sc.getConf()
    executors = int(conf.get("spark.executor.instances", "0") or 0)
    if executors <= 0:
        # Registered block managers, less the driver's.
        executors = max(1, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)
    cores = int(conf.get("spark.executor.cores", "0") or 0)
    if cores <= 0:
        cores = max(1, sc.defaultParallelism // executors)
    return executors, cores


def _task_cpus(sc: Any) -> int:
    return max(1, int(sc.getConf().get("spark.task.cpus", "1") or 1))


def _plan(sc: Any, coalesce: Union[bool, int], threads: Optional[int]) -> Tuple[Optional[int], int]:
    """``(map partitions, ember threads)``: one partition per executor with
    the executor's cores (``coalesce=True``), the input's partitions with
    ``spark.task.cpus`` (``False``, None: no coalescing), or ``coalesce``
    partitions with ``spark.task.cpus``; ``threads`` overrides the
    threads."""
    executors, cores = executor_layout(sc)
    if coalesce is True:
        parts: Optional[int] = executors
    elif coalesce is False:
        parts = None
    elif isinstance(coalesce, int) and coalesce >= 1:
        parts = coalesce
    else:
        raise ValueError(f"coalesce must be True, False or a positive int, not {coalesce!r}")
    if threads is None:
        threads = cores if coalesce is True else _task_cpus(sc)
    if int(threads) < 1:
        raise ValueError(f"threads must be positive, not {threads!r}")
    return parts, int(threads)


def _is_local(sc: Any) -> bool:
    return sc.master.startswith("local") and not sc.master.startswith("local-cluster")


# ---------------------------------------------------------------------------
# Running ember in a task


class _Proc:
    """An ember process in a task: its standard error kept (the last 64 KiB)
    for the error message, drained by a thread so it never blocks ember."""

    def __init__(self, argv: List[str], stdin: Any = subprocess.PIPE) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 20
        )
        self._err = bytearray()
        self._err_thread = threading.Thread(target=self._drain, daemon=True)
        self._err_thread.start()

    def _drain(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):
            self._err += chunk
            if len(self._err) > 65536:
                del self._err[:-65536]

    def finish(self) -> None:
        """Waits for the process; raises if it failed."""
        rc = self.proc.wait()
        self._err_thread.join()
        if rc != 0:
            err = self._err.decode("utf-8", "replace").strip()
            raise RuntimeError(f"`{' '.join(self.argv)}` exited with status {rc}: {err}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _as_bytes(line: Any) -> bytes:
    if isinstance(line, str):
        return line.encode("utf-8", "surrogateescape")
    if isinstance(line, (bytes, bytearray, memoryview)):
        return bytes(line)
    raise TypeError(f"ember.spark: input lines must be str or bytes, not {type(line).__name__}")


def _feed(proc: _Proc, lines: Iterable[Any], failure: list, raw: bool) -> None:
    """Writes ``lines`` to ember's standard input, a newline after each,
    in batches (``raw``: blocks of whole lines, as they are); closes it.
    An error is kept in ``failure`` (the reader raises it)."""
    stdin = proc.proc.stdin
    try:
        if raw:
            for block in lines:
                stdin.write(block)
            return
        batch: List[bytes] = []
        for line in lines:
            batch.append(_as_bytes(line))
            if len(batch) >= _BATCH:
                batch.append(b"")
                stdin.write(b"\n".join(batch))
                batch = []
        if batch:
            batch.append(b"")
            stdin.write(b"\n".join(batch))
    except BrokenPipeError:
        pass  # ember stopped reading: its exit status says why
    except BaseException as e:  # noqa: BLE001 - handed to the reading thread
        failure.append(e)
    finally:
        try:
            stdin.close()
        except BrokenPipeError:
            pass


def _pipe(argv: List[str], lines: Iterable[Any], raw: bool = False) -> Iterator[bytes]:
    """Runs ``argv`` with ``lines`` on its standard input (written by a
    thread; ``raw``: chunks of whole lines, written as they are); yields
    its output in chunks of whole lines (about :data:`_CHUNK` bytes, each
    line ending in a newline)."""
    proc = _Proc(argv)
    failure: list = []
    writer = threading.Thread(target=_feed, args=(proc, lines, failure, raw), daemon=True)
    writer.start()
    done = False
    try:
        rest = b""
        while True:
            data = proc.proc.stdout.read(_CHUNK)
            if not data:
                break
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest += data
                continue
            yield rest + data[:cut]
            rest = data[cut:]
        if rest:
            yield rest + b"\n"
        writer.join()
        if failure:
            raise failure[0]
        proc.finish()
        done = True
    finally:
        if not done:
            proc.kill()
            writer.join()


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of chunks of whole lines, newlines removed."""
    for chunk in chunks:
        lines = chunk.split(b"\n")
        lines.pop()
        yield from lines


def _chunked(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Lines (no newlines) as chunks of whole lines."""
    batch: List[bytes] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line) + 1
        if size >= _CHUNK:
            batch.append(b"")
            yield b"\n".join(batch)
            batch, size = [], 0
    if batch:
        batch.append(b"")
        yield b"\n".join(batch)


def _split(line: bytes) -> Tuple[bytes, bytes]:
    key, tab, value = line.partition(b"\t")
    if not tab:
        raise ValueError(f"ember.spark: ember printed a line without a tab: {line[:200]!r}")
    return key, value


# ---------------------------------------------------------------------------
# The map side


class TextFiles:
    """Text files as the input of a job, read by the executors themselves
    in byte ranges (see :func:`text_files`)."""

    def __init__(self, sc: Any, splits: List[Tuple[str, int, int]]) -> None:
        self.context = sc
        self.splits = splits

    def __repr__(self) -> str:
        files = len({p for p, _, _ in self.splits})
        return f"TextFiles({files} files, {len(self.splits)} splits)"


def text_files(sc: Any, paths: Any, *, split_size: int = 128 << 20) -> TextFiles:
    """Files, folders (walked) and glob patterns of text as a job's input,
    for :func:`wordcount`, :func:`stream` and :func:`map_partials`: cut into
    ``split_size`` byte ranges (a line belongs to the range its first byte
    is in), which the executors read themselves and copy to ember's
    standard input as they are: no line goes through the JVM or Python
    one at a time. The paths must be readable on the executors (local
    files in local mode, or a shared file system); for HDFS and the like,
    pass ``sc.textFile(...)`` instead."""
    if split_size < 1:
        raise ValueError(f"split_size must be positive, not {split_size!r}")
    splits = []
    for path in _walk(paths):
        size = os.path.getsize(path)
        splits.extend((path, start, min(size, start + split_size)) for start in range(0, size, split_size))
    return TextFiles(sc, splits)


def _read_split(path: str, start: int, end: int) -> Iterator[bytes]:
    """The lines of ``path`` whose first byte is in ``[start, end)``, in
    chunks of bytes as the file holds them."""
    with open(path, "rb") as f:
        pos = start
        if start > 0:
            # The first line starts after the first newline at or after
            # start - 1.
            f.seek(start - 1)
            pos = start - 1
            while True:
                data = f.read(1 << 16)
                if not data:
                    return
                i = data.find(b"\n")
                if i >= 0:
                    pos += i + 1
                    f.seek(pos)
                    break
                pos += len(data)
        last = b"\n"
        while pos < end:
            data = f.read(min(_CHUNK, end - pos))
            if not data:
                return
            pos += len(data)
            last = data[-1:]
            yield data
        # The last line began before `end`: read it to its newline.
        while last != b"\n":
            data = f.read(1 << 16)
            if not data:
                return
            i = data.find(b"\n")
            if i >= 0:
                yield data[: i + 1]
                return
            yield data


def _read_splits(splits: Iterable[Tuple[str, int, int]]) -> Iterator[bytes]:
    """The bytes of ``splits`` in turn, a newline added after a file whose
    last line has none (so it does not run into the next split's)."""
    last = b"\n"
    for path, start, end in splits:
        if last != b"\n":
            yield b"\n"
            last = b"\n"
        for data in _read_split(path, start, end):
            last = data[-1:]
            yield data


def _lines_rdd(data: Any, column: Optional[str]) -> Tuple[Any, Any]:
    """``(python_rdd, java_rdd)``: the input as an RDD of lines, and the
    JVM's ``JavaRDD[String]`` of them when the JVM can pipe them itself
    (``sc.textFile``, a DataFrame), else None."""
    from pyspark.rdd import RDD, PipelinedRDD
    from pyspark.serializers import UTF8Deserializer
    from pyspark.sql import DataFrame

    if isinstance(data, DataFrame):
        if column is None:
            if len(data.columns) != 1:
                raise ValueError(
                    f"ember.spark: a DataFrame of lines has one string column, not {data.columns}: "
                    "pass column="
                )
            column = data.columns[0]
        if getattr(data, "_jdf", None) is None:  # pragma: no cover - Spark Connect
            raise TypeError("ember.spark needs a classic SparkSession (Spark Connect has no RDDs)")
        sc = data.sparkSession.sparkContext
        jdf = data.select(data[column].cast("string"))._jdf
        strings = sc._jvm.org.apache.spark.sql.Encoders.STRING()
        jrdd = getattr(jdf, "as")(strings).javaRDD()
        return RDD(jrdd, sc, UTF8Deserializer()), jrdd
    if not isinstance(data, RDD):
        raise TypeError(f"ember.spark: input must be an RDD or a DataFrame of lines, not {type(data).__name__}")
    if type(data) is not PipelinedRDD and isinstance(data._jrdd_deserializer, UTF8Deserializer):
        return data, data._jrdd
    return data, None


def _map_argv(exe: str, job: str, args: Sequence[str], threads: int) -> List[str]:
    return [exe, "stream", "map", "--threads", str(threads), job, *map(str, args)]


def map_partials(
    data: Any,
    job: str,
    args: Sequence[str] = (),
    *,
    binary: Optional[Union[str, os.PathLike]] = None,
    threads: Optional[int] = None,
    coalesce: Union[bool, int] = True,
    feed: str = "auto",
    column: Optional[str] = None,
    exclusive: bool = False,
) -> Any:
    """The map side alone: ``ember stream map --threads N JOB ARGS`` over
    each partition of ``data`` (an RDD of ``str``/``bytes`` lines, or a
    DataFrame of lines) after coalescing it (``coalesce=True``: one
    partition per executor, ``threads`` default the executor's cores;
    ``False``: as it is, and an int: that many, ``threads`` default
    ``spark.task.cpus``). Returns an RDD of ``(key, partial)`` pairs of
    ``bytes``, still escaped: one per distinct key per partition.

    ``feed``: ``"jvm"`` pipes the lines from the executor JVM (only for
    ``sc.textFile`` RDDs and DataFrames), ``"python"`` from the Python
    worker, ``"auto"`` the JVM where it can. ``exclusive``: see the
    module's notes."""
    chunks = _map_chunks(data, job, args, binary, threads, coalesce, feed, column, exclusive)
    return chunks.mapPartitions(lambda it: map(_split, _lines(it)))


def _map_chunks(
    data: Any,
    job: str,
    args: Sequence[str],
    binary: Optional[Union[str, os.PathLike]],
    threads: Optional[int],
    coalesce: Union[bool, int],
    feed: str,
    column: Optional[str],
    exclusive: bool,
) -> Any:
    """:func:`map_partials`'s output as ember printed it: an RDD of chunks
    of whole lines (``bytes``)."""
    from pyspark import SparkFiles
    from pyspark.rdd import RDD
    from pyspark.serializers import CPickleSerializer

    if feed not in ("auto", "jvm", "python"):
        raise ValueError(f"feed must be 'auto', 'jvm' or 'python', not {feed!r}")
    if isinstance(data, TextFiles):
        sc = data.context
        name = _ship(sc, binary)
        parts, threads = _plan(sc, coalesce, threads)
        if feed == "jvm":
            raise ValueError("feed='jvm' needs an RDD the JVM reads (sc.textFile) or a DataFrame")
        splits = sc.parallelize(data.splits, max(1, min(parts or len(data.splits), len(data.splits))))
        job_args = [str(a) for a in args]

        def run_splits(its: Iterable[Tuple[str, int, int]]) -> Iterator[bytes]:
            argv = _map_argv(SparkFiles.get(name), job, job_args, threads)
            return _pipe(argv, _read_splits(its), raw=True)

        out = splits.mapPartitions(run_splits)
        return _with_resources(out, threads) if exclusive else out

    rdd, jrdd = _lines_rdd(data, column)
    sc = rdd.context
    name = _ship(sc, binary)
    parts, threads = _plan(sc, coalesce, threads)
    if feed == "jvm" and jrdd is None:
        raise ValueError("feed='jvm' needs an RDD the JVM reads (sc.textFile) or a DataFrame")

    if feed != "python" and jrdd is not None:
        if parts is not None and jrdd.getNumPartitions() > parts:
            jrdd = jrdd.coalesce(parts, False)
        # Executors fetch added files into their working directory, where
        # the pipe starts the process; in local mode that is the driver's
        # SparkFiles directory.
        exe = SparkFiles.get(name) if _is_local(sc) else os.path.join(".", name)
        argv = _map_argv(exe, job, args, threads)
        piped = jrdd.pipe(argv, {}, False, 1 << 20, "UTF-8")
        # The JVM pickles ember's lines in batches (lists of str): Python
        # never reads them one at a time.
        batches = RDD(sc._jvm.SerDeUtil.javaToPython(piped), sc, CPickleSerializer())
        out = batches.map(_joined)
        return _with_resources(out, threads) if exclusive else out

    if parts is not None and rdd.getNumPartitions() > parts:
        rdd = rdd.coalesce(parts)
    job_args = [str(a) for a in args]

    def run(lines: Iterable[Any]) -> Iterator[bytes]:
        return _pipe(_map_argv(SparkFiles.get(name), job, job_args, threads), lines)

    out = rdd.mapPartitions(run)
    return _with_resources(out, threads) if exclusive else out


def _joined(batch: Sequence[str]) -> bytes:
    """A batch of lines (``str``) as a chunk of whole lines."""
    return ("\n".join(batch) + "\n").encode("utf-8")


def _with_resources(rdd: Any, cpus: int) -> Any:
    """``rdd`` with a task resource profile asking ``cpus`` CPUs per task."""
    from pyspark.resource import ResourceProfileBuilder, TaskResourceRequests

    return rdd.withResources(ResourceProfileBuilder().require(TaskResourceRequests().cpus(cpus)).build)


# ---------------------------------------------------------------------------
# The reduce side


def _reducers(sc: Any, reducers: Optional[int]) -> int:
    """Reduce partitions: ``reducers``, else ``sc.defaultParallelism`` (not
    the map side's partition count, which coalescing made small)."""
    n = sc.defaultParallelism if reducers is None else int(reducers)
    if n < 1:
        raise ValueError(f"reducers must be positive, not {reducers!r}")
    return n


def _key(line: bytes) -> bytes:
    i = line.find(b"\t")
    if i < 0:
        raise ValueError(f"ember.spark: ember printed a line without a tab: {line[:200]!r}")
    return line[:i]


def _fields(chunk: Any) -> Tuple[List[Any], List[Any]]:
    """The keys and the values of a chunk (``bytes`` or ``str``) of
    ``key<TAB>value`` lines, split in bulk (each line holds exactly one
    tab: keys and values escape theirs)."""
    nl, tab = ("\n", "\t") if isinstance(chunk, str) else (b"\n", b"\t")
    n = chunk.count(nl)
    parts = chunk.replace(nl, tab).split(tab)
    if len(parts) != 2 * n + 1:
        for line in chunk.split(nl)[:-1]:
            if line.count(tab) != 1:
                raise ValueError(f"ember.spark: not a key<TAB>value line: {line[:200]!r}")
    return parts[0:-1:2], parts[1::2]


def _to_blocks(reducers: int) -> Callable[[Iterable[bytes]], Iterator[Tuple[int, bytes]]]:
    """Chunks of ``key<TAB>partial`` lines as ``(reducer, block)`` pairs:
    each chunk's lines grouped by reducer (the key's CRC-32 modulo
    ``reducers``). Spark shuffles the blocks as they are, ember's own
    text: far fewer and smaller records than a pair per key."""

    def to_blocks(chunks: Iterable[bytes]) -> Iterator[Tuple[int, bytes]]:
        crc = zlib.crc32
        for chunk in chunks:
            if reducers == 1:
                yield 0, chunk
                continue
            buckets: List[List[bytes]] = [[] for _ in range(reducers)]
            add = [bucket.append for bucket in buckets]
            lines = chunk.split(b"\n")
            lines.pop()
            for line in lines:
                # A line without a tab goes wherever: ember refuses it there.
                add[crc(line[: line.find(b"\t")]) % reducers](line)
            for r, bucket in enumerate(buckets):
                if bucket:
                    bucket.append(b"")
                    yield r, b"\n".join(bucket)

    return to_blocks


def _shuffle(chunks: Any, reducers: Optional[int]) -> Any:
    """Map output chunks shuffled by key: an RDD of blocks of lines, all
    the lines of a key in the same one of ``reducers`` partitions."""
    n = _reducers(chunks.context, reducers)
    blocks = chunks.mapPartitions(_to_blocks(n))
    return blocks.partitionBy(n, _identity).values()


def _identity(r: int) -> int:
    return r


_LOW_BYTES = re.compile(rb"[\x00-\x08]")


def _by_key(chunks: Iterable[bytes]) -> bytes:
    """The lines of ``chunks`` sorted by key (byte order), as one chunk."""
    data = b"".join(chunks)
    lines = data.split(b"\n")
    lines.pop()
    if _LOW_BYTES.search(data):
        lines.sort(key=_key)
    else:
        # No key byte sorts below the tab, so lines sort as their keys do.
        lines.sort()
    lines.append(b"")
    return b"\n".join(lines)


def _fold(exe: str, job: str, blocks: Iterable[bytes], final: bool) -> Iterator[bytes]:
    """One reduce partition: its blocks of ``key<TAB>partial`` lines folded
    by ``ember stream combine JOB`` into a line per key and, when
    ``final``, those sorted by key and made results by ``ember stream
    reduce JOB``; the output, in chunks of whole lines."""
    combined = _pipe([exe, "stream", "combine", job], blocks, raw=True)
    if not final:
        return combined
    return _pipe([exe, "stream", "reduce", job], [_by_key(combined)], raw=True)


def _reduce(chunks: Any, job: str, exe_name: str, reducers: Optional[int], final: bool = True) -> Any:
    """The reduce side: map output ``chunks`` shuffled by key into
    ``reducers`` partitions and folded by ember (see :func:`_fold`); an
    RDD of chunks of output lines (``bytes``)."""
    from pyspark import SparkFiles

    def fold(blocks: Iterable[bytes]) -> Iterator[bytes]:
        return _fold(SparkFiles.get(exe_name), job, blocks, final)

    return _shuffle(chunks, reducers).mapPartitions(fold)


def _text_fields(chunk: bytes) -> Tuple[List[str], List[str]]:
    """The keys (unescaped, as ``str``) and the values (as printed) of a
    chunk of ``key<TAB>value`` lines, in bulk."""
    text = chunk.decode("utf-8")
    keys, values = _fields(text)
    if "\\" in text:
        keys = [_text(unescape(k)) for k in keys]
    return keys, values


def _entries(chunks: Iterable[bytes]) -> Iterator[Tuple[str, str]]:
    for chunk in chunks:
        yield from zip(*_text_fields(chunk))


def _counts(chunks: Iterable[bytes]) -> Iterator[Tuple[str, int]]:
    for chunk in chunks:
        keys, values = _text_fields(chunk)
        yield from zip(keys, map(int, values))


def stream(
    data: Any,
    job: str,
    args: Sequence[str] = (),
    *,
    binary: Optional[Union[str, os.PathLike]] = None,
    threads: Optional[int] = None,
    reducers: Optional[int] = None,
    coalesce: Union[bool, int] = True,
    feed: str = "auto",
    column: Optional[str] = None,
    exclusive: bool = False,
) -> Any:
    """Any job of ``ember stream``: ``ember stream map JOB ARGS`` over each
    executor's share of ``data`` (see :func:`map_partials`); its lines
    shuffled by key into ``reducers`` partitions (default
    ``sc.defaultParallelism``); in each, folded by ``ember stream combine
    JOB``, sorted by key and finished by ``ember stream reduce JOB``.
    Returns an RDD of ``(key, value)``: the key as ``str`` (unescaped;
    invalid UTF-8 as surrogate escapes), the value ``str`` exactly as
    ember printed it."""
    chunks = _map_chunks(data, job, args, binary, threads, coalesce, feed, column, exclusive)
    name = _ship(chunks.context, binary)
    return _reduce(chunks, job, name, reducers).mapPartitions(_entries)


def wordcount(
    data: Any,
    *,
    binary: Optional[Union[str, os.PathLike]] = None,
    threads: Optional[int] = None,
    reducers: Optional[int] = None,
    coalesce: Union[bool, int] = True,
    feed: str = "auto",
    column: Optional[str] = None,
    exclusive: bool = False,
) -> Any:
    """Word count of an RDD (or DataFrame) of lines: ``RDD[(word, count)]``,
    the words those of ``ember wordcount`` (runs of ASCII letters,
    lower-cased), in no particular order. One ``ember stream map
    wordcount`` per executor counts its share; its lines are shuffled by
    word into ``reducers`` partitions (default ``sc.defaultParallelism``)
    and summed there by ``ember stream combine wordcount`` (a count's
    partial is its result). Options: see :func:`map_partials`."""
    chunks = _map_chunks(data, "wordcount", (), binary, threads, coalesce, feed, column, exclusive)
    name = _ship(chunks.context, binary)
    return _reduce(chunks, "wordcount", name, reducers, final=False).mapPartitions(_counts)


def _walk(paths: Any) -> List[str]:
    """Every file named by ``paths`` (a path or a list of files, folders
    and glob patterns, named as every input of ember is:
    :func:`ember.document_paths`), each once, sorted by path."""
    from . import document_paths

    if isinstance(paths, bytes):
        paths = [paths]
    found = document_paths(paths)
    missing = next((p for p in found if not os.path.exists(p)), None)
    if missing is not None:
        raise FileNotFoundError(f"ember.spark: no such file or folder: {missing!r}")
    return found


def _documents(sc: Any, docs: Any, slices: Optional[int]) -> Any:
    """``docs`` as an RDD of ``(name, text or None)``: an RDD of pairs as
    it is; paths (a path or a list of files, folders and glob patterns,
    named as ``ember inverted-index`` names its inputs) as ``(path, None)``,
    read by the task. Paths must be readable on the executors (a shared
    file system)."""
    from pyspark.rdd import RDD

    if isinstance(docs, RDD):
        return docs
    paths = _walk(docs)
    if slices is None:
        executors, _ = executor_layout(sc)
        slices = executors
    return sc.parallelize([(p, None) for p in paths], max(1, min(slices, len(paths) or 1)))


def inverted_index(
    sc_or_docs: Any,
    docs: Any = None,
    *,
    binary: Optional[Union[str, os.PathLike]] = None,
    threads: Optional[int] = None,
    reducers: Optional[int] = None,
    coalesce: Union[bool, int] = True,
) -> Any:
    """Inverted index: ``RDD[(word, [document name, ...])]``, names sorted by
    their bytes, each once; words as in :func:`wordcount`.

    ``inverted_index(rdd)`` takes an RDD of ``(name, text)`` pairs (text
    ``str`` or ``bytes``; e.g. ``sc.binaryFiles(...)``);
    ``inverted_index(sc, paths)`` takes files and folders (walked), named by
    their paths, which the executors must be able to read.

    In each partition, every document goes to an ``ember stream map
    inverted-index --doc N`` (N: its number in the partition; ``threads``
    of them at once, each with one thread), and all their output to one
    ``ember stream combine inverted-index``, so the partition hands Spark
    one line per distinct word, its document numbers replaced by the
    names (any bytes make a name); the partials are shuffled by word,
    sorted, and folded by ``ember stream reduce inverted-index``."""
    from pyspark import SparkContext, SparkFiles

    if isinstance(sc_or_docs, SparkContext):
        sc = sc_or_docs
        if docs is None:
            raise TypeError("inverted_index(sc, paths): paths missing")
        pairs = _documents(sc, docs, None)
    else:
        if docs is not None:
            raise TypeError("inverted_index(rdd) or inverted_index(sc, paths)")
        pairs = sc_or_docs
        sc = pairs.context
    name = _ship(sc, binary)
    parts, threads = _plan(sc, coalesce, threads)
    if parts is not None and pairs.getNumPartitions() > parts:
        pairs = pairs.coalesce(parts)

    def run(documents: Iterable[Tuple[Any, Any]]) -> Iterator[bytes]:
        return _chunked(_index_partition(SparkFiles.get(name), threads, documents))

    partials = pairs.mapPartitions(run)
    return _reduce(partials, "inverted-index", name, reducers).mapPartitions(_postings)


def _postings(chunks: Iterable[bytes]) -> Iterator[Tuple[str, List[str]]]:
    for chunk in chunks:
        for word, names in zip(*_text_fields(chunk)):
            yield word, [_text(unescape(n)) for n in names.split(",")] if names else []


def _map_document(exe: str, number: int, doc: Tuple[Any, Any]) -> bytes:
    """``ember stream map inverted-index --doc NUMBER`` over one document's
    text (``doc`` is ``(name, text)``; text None: read the file ``name``);
    its output."""
    name, text = doc
    argv = [exe, "stream", "map", "--threads", "1", "inverted-index", "--doc", str(number)]
    if text is None:
        with open(name, "rb") as f:
            out = subprocess.run(argv, stdin=f, capture_output=True)
    else:
        out = subprocess.run(argv, input=_as_bytes(text), capture_output=True)
    if out.returncode != 0:
        err = out.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"`{' '.join(argv)}` exited with status {out.returncode}: {err}")
    return out.stdout


def _index_partition(exe: str, threads: int, documents: Iterable[Tuple[Any, Any]]) -> Iterator[bytes]:
    """One partition of the inverted index: each document mapped by its own
    ember process (``threads`` at once), named to it by its number in the
    partition; all their lines folded by one ``ember stream combine
    inverted-index``; the numbers in its lists replaced by the documents'
    names (escaped, so any bytes, commas included, make a name)."""
    combine = _Proc([exe, "stream", "combine", "inverted-index"])
    names: List[bytes] = []  # escaped, by number
    lock = threading.Lock()
    failure: list = []

    def map_one(number: int, doc: Tuple[Any, Any]) -> None:
        out = _map_document(exe, number, doc)
        if out:
            with lock:
                combine.proc.stdin.write(out)

    def feeder() -> None:
        try:
            # At most `threads` documents mapping and as many waiting, so
            # a partition's texts are never all in memory at once.
            with ThreadPoolExecutor(max_workers=threads) as pool:
                pending: List[Any] = []
                for doc in documents:
                    name = doc[0]
                    names.append(escape(name if isinstance(name, bytes) else os.fsencode(name), comma=True))
                    pending.append(pool.submit(map_one, len(names) - 1, doc))
                    if len(pending) >= 2 * threads:
                        pending.pop(0).result()
                for f in pending:
                    f.result()
        except BaseException as e:  # noqa: BLE001 - raised by the reader
            failure.append(e)
        finally:
            try:
                combine.proc.stdin.close()
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feeder, daemon=True)
    writer.start()
    done = False
    try:
        for line in combine.proc.stdout:
            word, numbers = _split(line[:-1] if line.endswith(b"\n") else line)
            yield word + b"\t" + b",".join([names[int(n)] for n in numbers.split(b",")])
        writer.join()
        if failure:
            raise failure[0]
        combine.finish()
        done = True
    finally:
        if not done:
            combine.kill()
            writer.join()
