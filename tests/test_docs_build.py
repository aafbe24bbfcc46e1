"""The documentation builds with warnings as errors, and its pages hold what they should.

The site is built once per session from copies of ``doc/``, ``examples/`` and
``benchmarks/RESULTS.md`` in a temporary directory (the source tree is left untouched),
without executing the gallery examples and without network (no intersphinx).
"""

import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sklearn_struct
from sklearn_struct import datasets, metrics, preprocessing, structures

ROOT = Path(__file__).resolve().parents[1]
DOCS_EXTRA = ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "myst_parser")
MISSING = [name for name in DOCS_EXTRA if importlib.util.find_spec(name) is None]

pytestmark = pytest.mark.skipif(
    bool(MISSING) or not (ROOT / "doc" / "conf.py").is_file(),
    reason=f"the docs need the 'docs' extra (missing: {', '.join(MISSING)}) and the doc/ "
    "folder of the source tree",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Path of the built HTML site."""
    work = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "doc", work / "doc",
                    ignore=shutil.ignore_patterns("_build", "gen_modules", "auto_examples"))
    shutil.copytree(ROOT / "examples", work / "examples")
    (work / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", work / "benchmarks" / "RESULTS.md")
    html = work / "html"
    env = dict(os.environ, SKLEARN_STRUCT_DOCS_OFFLINE="1")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(work / "doc"), str(html)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert build.returncode == 0, f"sphinx failed:\n{build.stderr}\n{build.stdout[-3000:]}"
    return html


def _page(site, name):
    path = site / name
    assert path.is_file(), f"{name} was not built"
    return path.read_text(encoding="utf-8")


def test_pages_hold_their_content(site):
    assert "Structured prediction with the scikit-learn estimator API" in _page(
        site, "index.html")
    install = _page(site, "install.html")
    assert "Quickstart: a chain model on handwritten words" in install
    assert "load_ocr_default" in install and "0.603" in install
    structures_page = _page(site, "user_guide/structures.html")
    assert "Adding a structure" in structures_page
    assert "gen_modules/sklearn_struct.structures.BaseStructure.html#" in structures_page
    assert "<table" in _page(site, "benchmarks.html")  # the tables of RESULTS.md
    assert "0.1.0" in _page(site, "changelog.html")
    assert "Examples" in _page(site, "auto_examples/index.html")


def test_api_pages_render_numpydoc_sections(site):
    chain = _page(site, "gen_modules/sklearn_struct.structures.ChainStructure.html")
    for text in ("Parameters", "See also", "Examples", "split_weights", "edge_marginals"):
        assert text in chain
    # operations documented once, in BaseStructure, and inherited by the subclass page
    assert 'id="sklearn_struct.structures.ChainStructure.part_scores"' in chain
    assert "This is the map" in chain  # from BaseStructure.part_scores
    assert 'id="sklearn_struct.structures.ChainStructure.supports"' in chain
    # scikit-learn's own estimator methods are left to scikit-learn's documentation
    vectorizer = _page(site, "gen_modules/sklearn_struct.preprocessing.SequenceDictVectorizer.html")
    assert 'SequenceDictVectorizer.transform"' in vectorizer
    assert "set_output" not in vectorizer


def _public_names():
    """(documented module, name) of every public class and function."""
    names = set()
    for module in (structures, datasets, metrics, preprocessing):
        for name in module.__all__:
            names.add((module.__name__, name))
    for name in sklearn_struct.__all__:
        obj = getattr(sklearn_struct, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        # re-exported structures are documented in sklearn_struct.structures
        home = "sklearn_struct.structures" if name in structures.__all__ else "sklearn_struct"
        names.add((home, name))
    return sorted(names)


def test_every_public_name_has_an_api_page(site):
    missing = [
        f"{module}.{name}" for module, name in _public_names()
        if not (site / "gen_modules" / f"{module}.{name}.html").is_file()
    ]
    assert not missing, "add to doc/api.rst: " + ", ".join(missing)
    api = _page(site, "api.html")
    for module, name in _public_names():
        assert f"gen_modules/{module}.{name}.html" in api
