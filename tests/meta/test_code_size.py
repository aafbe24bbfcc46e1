"""No module of the package is over 800 lines, no function over 120 (issue 46).

A file's size is its number of lines (``wc -l``); a function's is its
``lineno..end_lineno`` in the AST, docstring included, decorators not.  The
files and functions over a limit today are listed, with their size, in
``KNOWN_FILES`` and ``KNOWN_FUNCTIONS``: one of them may shrink but not grow, and
one that shrank to the limit leaves its list.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sklearn_struct"
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120

#: Files over MAX_FILE_LINES, by path in the package, with their size at most.
KNOWN_FILES = {
    "structures/dependency/_inference.py": 1036,
    "structures/mincut/_projection.py": 860,
}
#: Functions over MAX_FUNCTION_LINES, as "path:qualified name", with their size at most.
KNOWN_FUNCTIONS = {
    "solvers/_eg_kernels.py:online_epoch": 131,
    "solvers/_working_set_kernels.py:working_set_pass": 146,
    "solvers/adaptive_m3n.py:adaptive_m3n": 126,
    "solvers/eg.py:eg_solve": 158,
    "solvers/extragradient.py:dual_extragradient": 149,
    "structures/matching/_projection.py:_matching_direction": 135,
    "structures/mincut/_projection.py:_mincut_search": 132,
}


def _modules():
    return {path.relative_to(PACKAGE).as_posix(): path.read_text()
            for path in sorted(PACKAGE.rglob("*.py"))}


def _function_lengths(name, text):
    """``{"name:qualified name": lines}`` of every function and method of a module."""
    lengths = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualified = prefix + child.name
                lengths[f"{name}:{qualified}"] = child.end_lineno - child.lineno + 1
                visit(child, qualified + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return lengths


def _check_sizes(sizes, known, limit, kind):
    over = {name: size for name, size in sizes.items() if size > limit}
    new = {name: size for name, size in over.items() if name not in known}
    assert not new, f"{kind} over {limit} lines: {new}; split them."
    grown = {name: (known[name], size) for name, size in over.items() if size > known[name]}
    assert not grown, f"known {kind} over {limit} lines grew (was, is): {grown}."
    within = sorted(set(known) - set(over))
    assert not within, (f"{within} are within {limit} lines now (or gone): remove them from "
                        f"the known {kind}.")


def test_no_file_is_over_the_limit():
    sizes = {name: len(text.splitlines()) for name, text in _modules().items()}
    _check_sizes(sizes, KNOWN_FILES, MAX_FILE_LINES, "files")


def test_no_function_is_over_the_limit():
    sizes = {}
    for name, text in _modules().items():
        sizes.update(_function_lengths(name, text))
    _check_sizes(sizes, KNOWN_FUNCTIONS, MAX_FUNCTION_LINES, "functions")


def test_a_function_s_length_counts_its_docstring_and_nested_functions():
    text = 'class A:\n    @staticmethod\n    def f():\n        """Doc."""\n\n' \
           '        def g():\n            return 1\n\n        return g\n'
    assert _function_lengths("m.py", text) == {"m.py:A.f": 7, "m.py:A.f.<locals>.g": 2}
