"""The package drops numba caches compiled from other sources than its own."""

import subprocess
import sys

from sklearn_struct._numba_cache import PACKAGE, STAMP, drop_stale_caches, source_digest


def _package(root):
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "a.py").write_text("def f():\n    return 1\n")
    (root / "sub" / "b.py").write_text("def g():\n    return 2\n")
    return [root / "sub" / "__pycache__" / name
            for name in ("b.g-1.py311.nbi", "b.g-1.py311.1.nbc")]


def _write(files):
    for path in files:
        path.write_bytes(b"compiled")


def test_caches_of_other_sources_are_dropped(tmp_path):
    cache = _package(tmp_path)
    _write(cache)
    assert drop_stale_caches(tmp_path) == 2  # no stamp: compiled from unknown sources
    assert not any(path.exists() for path in cache)
    assert (tmp_path / "__pycache__" / STAMP).read_text() == source_digest(tmp_path)
    _write(cache)
    assert drop_stale_caches(tmp_path) == 0  # the same sources: kept
    assert all(path.exists() for path in cache)
    # an edit of another file than the cached function's (numba would serve the cache)
    (tmp_path / "a.py").write_text("def f():\n    return 3\n")
    assert drop_stale_caches(tmp_path) == 2
    assert not any(path.exists() for path in cache)
    assert drop_stale_caches(tmp_path) == 0


def test_the_digest_reads_names_and_contents(tmp_path):
    _package(tmp_path)
    before = source_digest(tmp_path)
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    renamed = source_digest(tmp_path)
    assert renamed != before
    (tmp_path / "sub" / "c.py").touch()  # a new time stamp alone changes nothing
    assert source_digest(tmp_path) == renamed


def test_importing_the_package_stamps_its_caches():
    subprocess.run([sys.executable, "-c", "import sklearn_struct"], check=True)
    assert (PACKAGE / "__pycache__" / STAMP).read_text() == source_digest(PACKAGE)
