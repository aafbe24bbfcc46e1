"""The documentation builds with warnings as errors, and its pages hold what they should.

The site is built once per session from copies of ``doc/``, ``examples/`` and
``benchmarks/results/`` in a temporary directory (the source tree is left untouched),
without network (no intersphinx, a local MathJax).  The gallery examples listed in
``EXECUTED_EXAMPLES`` of ``doc/conf.py`` run during the build (about a minute together);
the others show the figure and output recorded in ``doc/prerendered/``.
"""

import html
import importlib.util
import inspect
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sklearn_struct
from sklearn_struct import datasets, metrics, persistence, preprocessing, structures

ROOT = Path(__file__).resolve().parents[2]
DOCS_EXTRA = ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "myst_parser",
              "sphinx-mathjax-offline", "matplotlib")
MISSING = [name for name in DOCS_EXTRA if importlib.util.find_spec(name) is None]
EXAMPLES = sorted(path.stem for path in (ROOT / "examples").glob("plot_*.py"))

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
    # the structures guide shows the worked structure's source
    shutil.copytree(ROOT / "sklearn_struct", work / "sklearn_struct",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "benchmarks" / "results", work / "benchmarks" / "results")
    out = work / "html"
    env = dict(os.environ, SKLEARN_STRUCT_DOCS_OFFLINE="1")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(work / "doc"), str(out)],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    assert build.returncode == 0, f"sphinx failed:\n{build.stderr}\n{build.stdout[-3000:]}"
    return out


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
    benchmarks = _page(site, "benchmarks.html")
    for figure in sorted((ROOT / "doc" / "_static" / "benchmarks").glob("*.png")):
        assert f'src="_images/{figure.name}"' in benchmarks, figure.name
    records = _page(site, "benchmark_records.html")
    assert "<table" in records  # the records' tables, every current record on the page
    for record in sorted((ROOT / "benchmarks" / "results").glob("*.md")):
        assert f'id="bench-{record.stem.replace("_", "-")}-py"' in records, record.name
    for anchor in re.findall(r'href="benchmark_records\.html#([\w-]+)"', benchmarks):
        assert f'id="{anchor}"' in records, anchor  # each "Full record" link lands
    assert "superseded sections" not in records  # results/archive/ stays off the site
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
    for module in (structures, datasets, metrics, preprocessing, persistence):
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


def _images(page):
    """Names of the files in ``_images/`` that an example page shows."""
    return re.findall(r'<img [^>]*src="\.\./_images/([^"]+)"', page)


@pytest.fixture(scope="module")
def executed_examples():
    return runpy.run_path(str(ROOT / "doc" / "conf.py"))["EXECUTED_EXAMPLES"]


def test_executed_examples_show_their_figures_and_output(site, executed_examples):
    assert set(executed_examples) <= set(EXAMPLES)
    for name in executed_examples:
        page = _page(site, f"auto_examples/{name}.html")
        figures = [image for image in _images(page)
                   if re.fullmatch(rf"sphx_glr_{name}_\d{{3}}\.png", image)]
        assert figures, f"{name}: no figure from the run on its page"
        for figure in figures:  # a drawn figure, not an empty canvas
            assert (site / "_images" / figure).stat().st_size > 10_000, figure
        assert 'class="sphx-glr-script-out ' in page, f"{name}: no printed output"
    assert "total passes for 16 values of C" in _page(
        site, "auto_examples/plot_eg_regularization_path.html")
    assert "features used by the EM-trained L1M3N" in _page(
        site, "auto_examples/plot_l1m3n_feature_selection.html")


def test_other_examples_show_a_recorded_figure_and_output(site, executed_examples):
    for name in sorted(set(EXAMPLES) - set(executed_examples)):
        page = _page(site, f"auto_examples/{name}.html")
        assert 'class="sphx-glr-script-out ' not in page, f"{name} ran during the build"
        recorded = ROOT / "doc" / "prerendered" / f"{name}.png"
        assert recorded.is_file(), f"run tools/render_gallery_figures.py examples/{name}.py"
        assert recorded.stat().st_size < 150_000, f"{recorded} is too large for the repository"
        assert f"{name}.png" in _images(page), f"{name}: the recorded figure is not shown"
        output = (ROOT / "doc" / "prerendered" / f"{name}.txt").read_text(encoding="utf-8")
        text = html.unescape(page)  # (docutils versions differ in which quotes they escape)
        for line in output.splitlines():
            assert line in text, f"{name}: {line!r} is not shown"


def test_gallery_cards_have_thumbnails_of_figures(site, tmp_path):
    from PIL import Image
    from sphinx_gallery import glr_path_static
    from sphinx_gallery.utils import scale_image

    index = _page(site, "auto_examples/index.html")
    thumbnails = re.findall(r'src="\.\./_images/(sphx_glr_\w+_thumb\.png)"', index)
    assert sorted(thumbnails) == [f"sphx_glr_{name}_thumb.png" for name in EXAMPLES]
    # sphinx-gallery scales its placeholder to the thumbnail size when a card has no figure
    placeholder = tmp_path / "placeholder.png"
    scale_image(Path(glr_path_static()) / "no_image.png", placeholder, 400, 280)  # default size
    placeholder_pixels = np.asarray(Image.open(placeholder).convert("RGB"))
    for thumbnail in thumbnails:
        pixels = np.asarray(Image.open(site / "_images" / thumbnail).convert("RGB"))
        assert not np.array_equal(pixels, placeholder_pixels), f"{thumbnail} is the placeholder"


def test_pages_load_no_remote_script_and_maths_uses_the_local_mathjax(site):
    for path in site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        remote = re.findall(r'<script[^>]*src="((?:https?:)?//[^"]*)"', html)
        remote += re.findall(r'https?://[^"\s]*mathjax[^"\s]*', html, flags=re.IGNORECASE)
        assert not remote, f"{path.relative_to(site)} loads {remote}"
    page = _page(site, "user_guide/eg.html")
    assert 'class="math' in page  # the page has maths to typeset
    assert 'src="../_static/mathjax/tex-chtml.js"' in page
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert any((site / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
