"""Errors come back as exceptions of the right kind, with the CLI's line."""

import os

import numpy as np
import pytest

import ember


def cli_line(cli, *args):
    p = cli(*args, check=False)
    assert p.returncode != 0
    line = p.stderr.decode().strip().splitlines()[-1]
    assert line.startswith("ember: ")
    return line[len("ember: "):]


def test_missing_file(cli):
    with pytest.raises(FileNotFoundError) as e:
        ember.wordcount("/no/such/file.txt")
    assert str(e.value) == cli_line(cli, "wordcount", "/no/such/file.txt")


def test_folder_or_pattern_without_files(cli, tmp_path):
    (tmp_path / "_SUCCESS").write_bytes(b"")
    for path in [tmp_path, tmp_path / "*.txt"]:
        with pytest.raises(FileNotFoundError) as e:
            ember.wordcount(path)
        assert str(e.value) == cli_line(cli, "wordcount", path)


def test_permission(cli, tmp_path):
    if os.geteuid() == 0:
        # Root reads any file: a write-only sysctl refuses reads even to root.
        path = "/proc/sys/vm/drop_caches"
        if not os.path.exists(path):
            pytest.skip("no file that root cannot read")
    else:
        path = tmp_path / "secret.txt"
        path.write_text("x")
        path.chmod(0)
    with pytest.raises(PermissionError) as e:
        ember.wordcount(path)
    assert str(e.value) == cli_line(cli, "wordcount", path)


def test_malformed_input_is_a_value_error(cli, tmp_path):
    bad = tmp_path / "bad.bmp"
    bad.write_bytes(b"not an image")
    with pytest.raises(ValueError) as e:
        ember.histogram(bad)
    assert str(e.value) == cli_line(cli, "histogram", bad)
    records = tmp_path / "records.dat"
    records.write_bytes(b"x" * 150)
    with pytest.raises(ValueError) as e:
        ember.sort(records, tmp_path / "out.dat")
    assert str(e.value) == cli_line(cli, "sort", records, "-o", tmp_path / "out.dat")


def test_bad_options():
    with pytest.raises(ValueError, match="unknown container 'heap'"):
        ember.wordcount(b"a", container="heap")
    with pytest.raises(ValueError, match="unknown ingest mode"):
        ember.wordcount(b"a", ingest="telepathy")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        ember.wordcount(b"a", colour="blue")
    with pytest.raises(TypeError):
        ember.wordcount(12)


def test_a_panic_never_crashes_the_interpreter():
    assert issubclass(ember.EmberError, Exception)
    with pytest.raises(ember.EmberError, match="internal error: a test panic"):
        ember._ember._panic_for_tests(False)
    with pytest.raises(ember.EmberError, match="map function panicked: a test panic on a worker"):
        ember._ember._panic_for_tests(True)
    # Everything still works.
    assert ember.wordcount(b"still alive") == {"alive": 1, "still": 1}
    assert ember.pca(np.array([[1, 2], [3, 5]])).cov.shape == (2, 2)
