"""The Examples sections of the docstrings, and the ``>>>`` blocks of the doc pages, run.

Every module of the package and every ``.rst`` page of ``doc/`` is searched (new ones are
picked up automatically); mark an example that is too slow for the test suite with
``# doctest: +SKIP``.
An example must not warn (a ``ConvergenceWarning`` in an example teaches the wrong
settings); deprecation warnings of other libraries are ignored.
Options: ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``; numpy prints with
``legacy="1.25"``, so that scalars show as ``0.5`` rather than ``np.float64(0.5)`` with
every numpy version (write examples that way, or convert with ``float()``).
"""

import doctest
import importlib
import inspect
import io
import pkgutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import sklearn_struct
from sklearn_struct import datasets, metrics, persistence, preprocessing, structures

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(sklearn_struct.__path__, prefix="sklearn_struct.")
    if name != "sklearn_struct.__main__"  # the command-line entry point, no docstring examples
)
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
DOC = Path(__file__).resolve().parents[2] / "doc"
GENERATED = {"_build", "gen_modules", "auto_examples", "_templates"}  # not pages
PAGES = sorted(
    str(page.relative_to(DOC)) for page in DOC.rglob("*.rst")
    if not GENERATED & set(page.relative_to(DOC).parts)
)


def _modules_defining_public_objects():
    """Modules defining a public class or function: their Examples must be found and run."""
    modules = set()
    for namespace in (sklearn_struct, structures, datasets, metrics, preprocessing, persistence):
        for name in namespace.__all__:
            obj = getattr(namespace, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                modules.add(obj.__module__)
    return modules


PUBLIC_MODULES = _modules_defining_public_objects()


def _print_options():
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        return np.printoptions(legacy="1.25")
    return np.printoptions()


def _run(tests, where):
    """Run doctests; fail on a wrong output or a warning.  Returns the number of examples."""
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    with _print_options(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for test in sorted(tests, key=lambda test: test.name):
            runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()
    warned = [
        f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in caught
        if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
        or "sklearn_struct" in w.filename
    ]
    assert not warned, f"examples of {where} warn:\n" + "\n".join(warned)
    return runner.tries


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module_name)
    n_examples = _run(tests, module_name)
    if module_name in PUBLIC_MODULES:
        assert n_examples > 0, f"no docstring example found in {module_name}"


@pytest.mark.parametrize("page", PAGES)
def test_doc_page_examples(page):
    path = DOC / page
    test = doctest.DocTestParser().get_doctest(
        path.read_text(encoding="utf-8"), {}, page, str(path), 0)
    _run([test], page)
