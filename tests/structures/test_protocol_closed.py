"""The structure protocol is closed: code outside ``structures/`` never asks which structure.

Solvers and estimators call only the operations documented on
:class:`~sklearn_struct.structures.BaseStructure`.  This test reads the source
of the package and fails on

* ``isinstance``/``issubclass`` against a concrete structure or batch class,
* ``type(...)`` compared (``==``, ``is``, ``in``) with such a class,
* ``hasattr``/``getattr`` with a default on anything named like a structure or
  a batch (probing for undeclared operations),

anywhere outside ``sklearn_struct/structures/``.
"""

import ast
from pathlib import Path

import pytest

import sklearn_struct
from sklearn_struct import structures

PACKAGE = Path(sklearn_struct.__file__).resolve().parent
#: Concrete structure and batch classes (BaseStructure itself may be tested for).
CONCRETE = {name for name in dir(structures)
            if (name.endswith("Structure") or name.endswith("Batch")) and name != "BaseStructure"}
PROBED = ("structure", "batch")


def _names(node):
    """Class names referred to by an isinstance target: a Name, an Attribute or a tuple."""
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _names(element)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def violations(source, filename="<source>"):
    """``(line, message)`` for every structure-type check or structure probe in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in ("isinstance", "issubclass") and len(node.args) == 2:
                hits = [c for c in _names(node.args[1]) if c in CONCRETE]
                if hits:
                    found.append((node.lineno, f"{name}(..., {', '.join(hits)})"))
            if name == "hasattr" or (name == "getattr" and len(node.args) == 3):
                target = ast.unparse(node.args[0]).lower()
                if any(word in target for word in PROBED):
                    found.append((node.lineno, f"{name}({ast.unparse(node.args[0])}, ...)"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            typed = any(isinstance(s, ast.Call) and isinstance(s.func, ast.Name)
                        and s.func.id == "type" for s in sides)
            hits = [c for s in sides for c in _names(s) if c in CONCRETE]
            if typed and hits:
                found.append((node.lineno, f"type(...) compared with {', '.join(hits)}"))
    return found


def _package_files():
    return sorted(path for path in PACKAGE.rglob("*.py")
                  if "structures" not in path.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("path", _package_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_structure_type_checks_or_probes_outside_structures(path):
    found = violations(path.read_text(), str(path))
    assert not found, "\n".join(
        f"{path.relative_to(PACKAGE.parent)}:{line}: {message} -- call the structure "
        "protocol instead; if it seems to lack an operation, first look for it among the "
        "existing ones, the dynamic program's semirings and the output space (the protocol "
        "should shrink, not grow)"
        for line, message in found)


@pytest.mark.parametrize("source, expected", [
    ("isinstance(s, ChainStructure)", "isinstance(..., ChainStructure)"),
    ("isinstance(b, (MatchingBatch, int))", "isinstance(..., MatchingBatch)"),
    ("type(structure) in (MulticlassStructure,)", "type(...) compared with MulticlassStructure"),
    ("hasattr(self.structure_, 'split_weights')", "hasattr(self.structure_, ...)"),
    ("getattr(structure, 'start_end', False)", "getattr(structure, ...)"),
])
def test_the_checker_finds_what_it_forbids(source, expected):
    assert [message for _, message in violations(source)] == [expected]


def test_the_checker_allows_what_is_fine():
    allowed = ("isinstance(structure, BaseStructure)\n"
               "isinstance(X, np.ndarray)\n"
               "hasattr(X, 'shape')\n"
               "structure.supports('marginals')\n")
    assert violations(allowed) == []
