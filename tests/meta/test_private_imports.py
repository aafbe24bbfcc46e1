"""No private name crosses the package's layers (issue 46).

import-linter (tests/meta/test_import_contracts.py) checks which module may import which;
it cannot see *what* is imported.  This test reads every ``from ... import ...`` of the
package with :mod:`ast` and refuses a private name (leading underscore) taken from another
layer, and any name taken from a private module of a structure subpackage outside
``structures/`` (the subpackage's ``__init__`` is its interface).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sklearn_struct"
#: The estimators' layer of ARCHITECTURE.md; every other top-level module or subpackage
#: (solvers, structures, cli, datasets, metrics, ...) is a layer of its own here.
ESTIMATORS = {"base", "eg", "_eg_base", "l1m3n", "extragradient", "perceptron", "sm",
              "_prediction", "_validation", "_weights"}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source(importer, node, is_package):
    """The absolute module name of an ``ImportFrom`` node."""
    if node.level == 0:
        return node.module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _layer(module):
    top = module.split(".")[1:2]
    return "estimators" if set(top) & ESTIMATORS else ".".join(["sklearn_struct"] + top)


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _crosses(importer, source, name):
    if _layer(source) == _layer(importer) or source == "sklearn_struct":
        return False
    inside_subpackage = source.split(".")[3:] if source.startswith(
        "sklearn_struct.structures.") else []
    return _private(name) or any(map(_private, inside_subpackage))


def private_crossings():
    """Every ``importer -> source.name`` that takes a private name across layers."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(importer, node, path.name == "__init__.py")
            if source.startswith("sklearn_struct"):
                found |= {f"{importer} -> {source}.{alias.name}" for alias in node.names
                          if _crosses(importer, source, alias.name)}
    return found


def test_no_private_name_crosses_a_layer():
    assert private_crossings() == set()


def test_a_private_name_from_another_layer_is_found(tmp_path, monkeypatch):
    """The check can fail: a module that takes a private name across layers is named."""
    module = PACKAGE / "cli" / "_crossing_probe.py"
    monkeypatch.setattr(Path, "rglob", lambda self, pattern: iter([module]))
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: "from ..structures._targets import _encoded\n")
    assert private_crossings() == {
        "sklearn_struct.cli._crossing_probe -> sklearn_struct.structures._targets._encoded"}
