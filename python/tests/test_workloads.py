"""Every other built-in workload equals the CLI's output on the same input."""

import subprocess
import sys

import numpy as np
import pytest

import ember


def matrix_file(path):
    """An ember matrix file as an int32 array."""
    raw = path.read_bytes()
    assert raw[:8] == b"EMBERMAT"
    rows, cols = np.frombuffer(raw[8:24], dtype="<u8")
    return np.frombuffer(raw[24:], dtype="<i4").reshape(int(rows), int(cols))


def test_inverted_index_files_equals_cli(cli, data, tmp_path):
    out, docs = tmp_path / "ii.tsv", tmp_path / "docs.tsv"
    cli("inverted-index", data["docs"], "-o", out, "--doc-list", docs)
    want = {}
    for line in out.read_text().splitlines():
        w, ids = line.split("\t")
        want[w] = [int(i) for i in ids.split(",")]
    assert ember.inverted_index(data["docs"]) == want
    names = [l.split("\t")[1] for l in docs.read_text().splitlines()]
    assert ember.document_paths(data["docs"]) == names


def test_inverted_index_lines_equals_cli(cli, data, tmp_path):
    out = tmp_path / "ii.tsv"
    cli("inverted-index", data["text"], "--lines", "-o", out)
    want = {w: [int(i) for i in ids.split(",")]
            for w, ids in (l.split("\t") for l in out.read_text().splitlines())}
    assert ember.inverted_index(data["text"], lines=True) == want


def test_histogram_equals_cli(cli, data, tmp_path):
    out = tmp_path / "h.tsv"
    cli("histogram", data["bmp"], "-o", out)
    want = np.zeros((3, 256), dtype=np.uint64)
    for line in out.read_text().splitlines():
        ch, v, n = line.split("\t")
        want[["red", "green", "blue"].index(ch), int(v)] = int(n)
    got = ember.histogram(data["bmp"])
    assert got.shape == (3, 256) and got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ember.histogram(data["bmp"].read_bytes()), want)


def test_linear_regression_equals_cli(cli, data):
    out = cli("linear-regression", data["points"]).stdout.decode().splitlines()
    sums = {l.split()[0].lower(): int(l.split()[1]) for l in out[:6]}
    r = ember.linear_regression(data["points"])
    assert isinstance(r, ember.LinearRegression)
    assert {k: getattr(r, k) for k in sums} == sums
    fit = out[6]
    assert f"a = {r.a:.6f}  b = {r.b:.6f}  R^2 = {r.r2:.6f}" in fit


def test_linear_regression_without_points_has_no_fit():
    r = ember.linear_regression(b"")
    assert r.n == 0 and r.a is None and r.r2 is None


def test_sort_equals_cli(cli, data, tmp_path):
    want, got = tmp_path / "want.dat", tmp_path / "got.dat"
    cli("sort", data["records"], "-o", want)
    assert ember.sort(data["records"], got) is None
    assert got.read_bytes() == want.read_bytes()
    assert ember.sort(data["records"].read_bytes()) == want.read_bytes()


def test_string_match_equals_cli(cli, data):
    words = ["helloworld", "ferrari", "notplanted"]
    out = cli("string-match", data["keys"], *words, "--show", "1000").stdout.decode()
    want = {}
    for line in out.splitlines()[: len(words)]:
        parts = line.split("\t")
        want[parts[0]] = [int(x) for x in parts[2][len("at byte "):].split(", ")] if len(parts) > 2 else []
    got = ember.string_match(data["keys"], words)
    assert got == want
    assert got["helloworld"] and got["notplanted"] == []
    assert set(ember.string_match(data["keys"])) == set(ember.STRING_MATCH_TARGETS)


def test_kmeans_equals_cli(cli, data, tmp_path):
    out = tmp_path / "km.tsv"
    cli("kmeans", data["kmeans"], "-k", "8", "--max-iter", "50", "-o", out)
    rows = [list(map(int, l.split("\t"))) for l in out.read_text().splitlines()]
    km = ember.kmeans(matrix_file(data["kmeans"]), k=8, max_iter=50)
    assert isinstance(km, ember.KMeans)
    np.testing.assert_array_equal(km.sizes, [r[1] for r in rows])
    np.testing.assert_array_equal(km.means, [r[2:] for r in rows])
    assert km.means.dtype == np.int32 and km.means.shape == (8, 3)
    # Other integer dtypes are converted; the result is the same.
    km64 = ember.kmeans(matrix_file(data["kmeans"]).astype(np.int64), k=8, max_iter=50)
    np.testing.assert_array_equal(km64.means, km.means)


def test_pca_equals_cli(cli, data, tmp_path):
    out = tmp_path / "pca.tsv"
    cli("pca", data["pca"], "-o", out)
    lines = [list(map(float, l.split("\t"))) for l in out.read_text().splitlines()]
    p = ember.pca(matrix_file(data["pca"]))
    np.testing.assert_array_equal(p.means, lines[0])
    np.testing.assert_array_equal(p.cov, lines[1:])
    m = matrix_file(data["pca"]).astype(np.float64)
    np.testing.assert_allclose(p.cov, np.cov(m), rtol=1e-9)


def test_matrix_multiply_equals_cli_and_numpy(cli, data, tmp_path):
    out = tmp_path / "c.mat"
    cli("matrix-multiply", data["mat_a"], data["mat_b"], "-o", out)
    a, b = matrix_file(data["mat_a"]), matrix_file(data["mat_b"])
    c = ember.matrix_multiply(a, b)
    np.testing.assert_array_equal(c, matrix_file(out))
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    # A strided view is copied to a contiguous array first.
    np.testing.assert_array_equal(ember.matrix_multiply(a[::2], b), (a[::2] @ b))


def test_runtime_is_reused(data):
    rt = ember.Runtime(threads=2)
    assert rt.threads == 2 and "threads=2" in repr(rt)
    first = rt.wordcount(data["text"], top=5)
    for _ in range(3):
        assert rt.wordcount(data["text"], top=5) == first
    assert ember.wordcount(data["text"], top=5, threads=1) == first


def test_numeric_inputs_are_checked():
    with pytest.raises(ValueError, match="integers"):
        ember.pca(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="int32 range"):
        ember.pca(np.full((2, 2), 1 << 40))
    with pytest.raises(ValueError, match="2-D"):
        ember.kmeans(np.arange(5), k=2)
    with pytest.raises(ValueError, match="cannot multiply"):
        ember.matrix_multiply(np.ones((2, 3), np.int32), np.ones((2, 3), np.int32))


def test_import_leaves_numpy_and_multiprocessing_to_the_calls_that_use_them():
    # Most of `import ember`'s cost would be theirs: a script that only
    # counts words should not pay it.
    code = ("import sys, ember; ember.wordcount(b'a b a'); "
            "print(sorted(m for m in ('numpy', 'multiprocessing') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]"
    # A call that takes arrays imports NumPy itself.
    code = "import ember; print(ember.matrix_multiply([[1, 0], [0, 1]], [[1, 2], [3, 4]]).tolist())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[[1, 2], [3, 4]]"


def test_compressed_files_read_as_the_plain_ones(data, tmp_path):
    import gzip

    def gz(name):
        path = tmp_path / (data[name].name + ".gz")
        path.write_bytes(gzip.compress(data[name].read_bytes(), compresslevel=1))
        return path

    text, bmp, records = gz("text"), gz("bmp"), gz("records")
    assert ember.wordcount(text) == ember.wordcount(data["text"])
    lines = ember.inverted_index(text, lines=True)
    assert lines == ember.inverted_index(data["text"], lines=True)
    np.testing.assert_array_equal(ember.histogram(bmp), ember.histogram(data["bmp"]))
    assert ember.sort(records) == ember.sort(data["records"])
    with open(text, "rb") as f:
        assert ember.wordcount(f) == ember.wordcount(data["text"])
