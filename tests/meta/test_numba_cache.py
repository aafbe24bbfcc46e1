"""The package drops numba caches compiled from other sources than its own, and only those."""

import shutil
import subprocess
import sys

from sklearn_struct._numba_cache import (PACKAGE, STAMP, drop_stale_caches, kernel_sources,
                                         source_digest)

KERNEL = ("from numba import njit\n\nfrom ..a import SCALE\n\n\n@njit(cache=True)\n"
          "def g():\n    return SCALE\n")


def _package(root):
    """A package whose kernel ``sub/b.py:g`` reads a constant of ``a.py``; ``c.py`` has no
    compiled code and is not read by any."""
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "a.py").write_text("SCALE = 1\n")
    (root / "sub" / "b.py").write_text(KERNEL)
    (root / "c.py").write_text('def f():\n    """Plain Python."""\n    return 1\n')
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
    # an edit of code that no kernel reads keeps the caches
    (tmp_path / "c.py").write_text('def f():\n    """Edited."""\n    return 3\n')
    assert drop_stale_caches(tmp_path) == 0
    assert all(path.exists() for path in cache)
    # an edit of another file than the cached function's (numba would serve the cache)
    (tmp_path / "a.py").write_text("SCALE = 3\n")
    assert drop_stale_caches(tmp_path) == 2
    assert not any(path.exists() for path in cache)
    assert drop_stale_caches(tmp_path) == 0


def test_the_digest_reads_names_and_contents(tmp_path):
    _package(tmp_path)
    before = source_digest(tmp_path)
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "d.py")
    renamed = source_digest(tmp_path)
    assert renamed != before
    (tmp_path / "sub" / "d.py").touch()  # a new time stamp alone changes nothing
    assert source_digest(tmp_path) == renamed


def test_the_digest_covers_the_kernels_and_what_they_read():
    sources = {path.relative_to(PACKAGE).as_posix() for path in kernel_sources(PACKAGE)}
    # compiled code: decorated kernels and the templates that ``specialize`` compiles
    assert {"structures/_semiring.py", "structures/chain/_kernels.py",
            "solvers/_eg_kernels.py", "solvers/_perceptron_kernels.py",
            "structures/_generic_kernels.py", "structures/_kernel.py"} <= sources
    # ... and the modules they import from (constants a kernel freezes)
    assert "structures/_hashing.py" in sources
    # estimators, solvers' Python, data sets, the command line: never compiled
    outside = {"base.py", "eg.py", "solvers/eg.py", "solvers/_eg_execution.py",
               "datasets/_conllu.py", "cli/__init__.py", "metrics.py"}
    assert not outside & sources


def test_a_docstring_edit_outside_the_kernels_keeps_every_compiled_kernel(tmp_path):
    package = tmp_path / PACKAGE.name
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(package)
    for name in ("cli/__init__.py", "eg.py", "solvers/_eg_execution.py"):
        path = package / name
        path.write_text(path.read_text().replace('"""', '"""Edited. ', 1))
    assert source_digest(package) == before
    kernel = package / "structures" / "_semiring.py"
    kernel.write_text(kernel.read_text().replace('"""', '"""Edited. ', 1))
    assert source_digest(package) != before


def test_importing_the_package_stamps_its_caches():
    subprocess.run([sys.executable, "-c", "import sklearn_struct"], check=True)
    assert (PACKAGE / "__pycache__" / STAMP).read_text() == source_digest(PACKAGE)
