"""Shared fixtures: the `ember` CLI (the reference every result is compared
with) and the inputs it generates, made once per session."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cli() -> str:
    """The ember binary: $EMBER_BIN, else the workspace's release or debug
    build, else `ember` on PATH. A missing CLI fails the tests: it is what
    the package is checked against."""
    if os.environ.get("EMBER_BIN"):
        return os.environ["EMBER_BIN"]
    for profile in ("release", "debug"):
        exe = ROOT / "target" / profile / "ember"
        if exe.exists():
            return str(exe)
    found = shutil.which("ember")
    if found:
        return found
    pytest.fail("no ember CLI: build it (cargo build -p ember-cli) or set EMBER_BIN")


@pytest.fixture(scope="session")
def cli():
    """Runs the ember CLI with the given arguments; returns its stdout."""
    exe = _cli()

    def run(*args, check=True):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, check=False)
        if check and p.returncode != 0:
            raise AssertionError(f"ember {' '.join(map(str, args))}: {p.stderr.decode()}")
        return p

    return run


@pytest.fixture(scope="session")
def data(tmp_path_factory, cli):
    """Generated inputs, by name: text, docs (folder), bmp, points, keys,
    records, kmeans, pca, mat_a, mat_b."""
    d = tmp_path_factory.mktemp("inputs")
    f = {
        "text": d / "text.txt",
        "docs": d / "docs",
        "bmp": d / "image.bmp",
        "points": d / "points.bin",
        "keys": d / "keys.txt",
        "records": d / "records.dat",
        "kmeans": d / "kmeans.mat",
        "pca": d / "pca.mat",
        "mat_a": d / "a.mat",
        "mat_b": d / "b.mat",
    }
    cli("gen", "text", "--size", "3MiB", "--vocab", "20000", "-o", f["text"])
    cli("gen", "docs", "--size", "1MiB", "--files", "40", "--vocab", "5000", "-o", f["docs"])
    cli("gen", "histogram", "--width", "300", "--height", "200", "-o", f["bmp"])
    cli("gen", "linreg", "--size", "2MiB", "-o", f["points"])
    cli("gen", "strmatch", "--size", "1MiB", "-o", f["keys"])
    cli("gen", "sort", "--records", "20000", "-o", f["records"])
    cli("gen", "kmeans", "--points", "20000", "--dims", "3", "-o", f["kmeans"])
    cli("gen", "pca", "--rows", "40", "--cols", "300", "-o", f["pca"])
    cli("gen", "matmul", "--n", "60", "--cols", "50", "--seed", "1", "-o", f["mat_a"])
    cli("gen", "matmul", "--n", "50", "--cols", "70", "--seed", "2", "-o", f["mat_b"])
    return f
