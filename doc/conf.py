"""Sphinx configuration for the sklearn_struct documentation."""

import os
from pathlib import Path

import sklearn_struct

DOC = Path(__file__).resolve().parent

project = "sklearn_struct"
author = "sklearn_struct developers"
copyright = "2026, sklearn_struct developers"
release = sklearn_struct.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # a local MathJax (sets mathjax_path to the copy it adds to _static/): no CDN
    "sphinx-mathjax-offline",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# benchmark_records.rst includes every record of benchmarks/results/ below its title (see
# _benchmark_records): MyST nests their sections under the title but reports that the
# included text does not start at H1.
suppress_warnings = ["myst.header"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "**.codeobj.json"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
}
# CI has no network beyond package registries: use intersphinx inventories only when allowed.
if os.environ.get("SKLEARN_STRUCT_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}

# The examples the docs build runs: each takes well under a minute on the data shipped with
# the package (load_ocr_default) or on synthetic data.  The others train on the shared
# corpora (not shipped) for minutes: their pages show the figure and output that
# tools/render_gallery_figures.py wrote into doc/prerendered/.
EXECUTED_EXAMPLES = (
    "plot_eg_ocr",
    "plot_eg_regularization_path",
    "plot_graph_denoising",
    "plot_l1m3n_feature_selection",
    "plot_sm_methods",
)

sphinx_gallery_conf = {
    "examples_dirs": str(DOC.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/({})\\.py$".format("|".join(EXECUTED_EXAMPLES)),
    # scripts without the plot_ prefix (crfsuite_tutorial_switch.py: minutes of training
    # on the shared corpora, no figure) are examples to run, not gallery pages
    "ignore_pattern": r"__init__\.py|(^|/)(?!plot_)\w+\.py$",
    "within_subsection_order": "FileNameSortKey",
    # "# sphinx_gallery_thumbnail_path = ..." lines are for the build, not the reader
    "remove_config_comments": True,
    "download_all_examples": False,
    # The execution-time page would be written into doc/ (the source tree).
    "write_computation_times": False,
    # "Gallery examples using X" at the end of each API page (templates in _templates/).
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("sklearn_struct",),
}

# The page contents of an API page list "argmax()", not "ChainStructure.argmax()".
toc_object_entries_show_parents = "hide"

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_struct {release}"
html_theme_options = {"navigation_with_keys": False}
# Pages without sub-pages: no empty navigation column.
html_sidebars = {page: [] for page in ("index", "install", "api", "benchmarks", "changelog")}
html_static_path = ["_static"]
html_css_files = ["custom.css"]


def _skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Leave out the methods scikit-learn gives every estimator (get_params, set_output,
    metadata routing, the mixins' score): scikit-learn documents them, and their
    docstrings refer to scikit-learn's own pages."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and (module == "sklearn" or module.startswith("sklearn.")):
        return True
    return None


def _public_bases(app, name, obj, options, bases):
    """Show the public classes a private base class (``_BaseSMClassifier``) stands for."""
    expanded = []
    for base in bases:
        expanded.extend(base.__bases__ if base.__name__.startswith("_") else [base])
    bases[:] = [base for base in expanded if base is not object]


def _examples_without_secondary_sidebar(app, pagename, templatename, context, doctree):
    """The gallery pages give the secondary sidebar's width to their code and figures (it
    would hold only "Show Source"), as ``:html_theme.sidebar_secondary.remove:`` would."""
    if pagename.startswith("auto_examples/"):
        context["meta"] = {**(context.get("meta") or {}),
                           "html_theme.sidebar_secondary.remove": "true"}


def _benchmark_records(app, docname, source):
    """Append every record of ``benchmarks/results/`` to the records page, by name."""
    if docname != "benchmark_records":
        return
    records = Path(app.srcdir).parent / "benchmarks" / "results"
    for path in sorted(records.glob("*.md")):
        source[0] += (f"\n\n.. include:: ../benchmarks/results/{path.name}\n"
                      "   :parser: myst_parser.sphinx_\n")


def setup(app):
    app.connect("source-read", _benchmark_records)
    app.connect("autodoc-skip-member", _skip_scikit_learn_members)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("html-page-context", _examples_without_secondary_sidebar)
