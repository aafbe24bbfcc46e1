"""No module of the package is over 800 lines, no function over 120 (issue 46).

A file's size is its number of lines (``wc -l``); a function's is its
``lineno..end_lineno`` in the AST, docstring included, decorators not.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sklearn_struct"
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120


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


def _check_sizes(sizes, limit, kind):
    over = {name: size for name, size in sizes.items() if size > limit}
    assert not over, f"{kind} over {limit} lines: {over}; split them by job."


def test_no_file_is_over_the_limit():
    sizes = {name: len(text.splitlines()) for name, text in _modules().items()}
    _check_sizes(sizes, MAX_FILE_LINES, "files")


def test_no_function_is_over_the_limit():
    sizes = {}
    for name, text in _modules().items():
        sizes.update(_function_lengths(name, text))
    _check_sizes(sizes, MAX_FUNCTION_LINES, "functions")


def test_a_function_s_length_counts_its_docstring_and_nested_functions():
    text = 'class A:\n    @staticmethod\n    def f():\n        """Doc."""\n\n' \
           '        def g():\n            return 1\n\n        return g\n'
    assert _function_lengths("m.py", text) == {"m.py:A.f": 7, "m.py:A.f.<locals>.g": 2}
