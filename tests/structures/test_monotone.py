"""The worked dynamic-programming structure: monotone alignment of frames to ordered states.

It is the structure a newcomer reads first (doc/user_guide/structures.rst): it must stay
short, pass ``check_structure`` against enumeration, and train with every learner."""

import ast
import io
import itertools
import tokenize
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_struct import (EGCRF, L1M3N, DualExtragradientMatcher, EGStructuredSVM,
                            StructuredPerceptron)
from sklearn_struct.structures import MonotoneAlignmentStructure
from sklearn_struct.utils import check_structure

PACKAGE = Path(MonotoneAlignmentStructure.__module__.replace(".", "/")).parent
ROOT = Path(__file__).resolve().parents[2]


def _instances(rng):
    X = [rng.randn(rng.randint(1, 5), 3) for _ in range(3)]
    return X, [np.sort(rng.randint(0, 3, size=len(x))) for x in X]


def _monotone_outputs(batch, i):
    n_frames = batch.unit_offsets[i + 1] - batch.unit_offsets[i]
    return [np.array(states) for states in
            itertools.combinations_with_replacement(range(batch.n_states), n_frames)]


def test_check_structure_against_enumeration():
    report = check_structure(MonotoneAlignmentStructure(), _instances,
                             enumerate_outputs=_monotone_outputs)
    for check in ("check_enumeration", "check_argmax", "check_marginals",
                  "check_dynamic_program", "check_kernel_ops", "check_part_losses"):
        assert report[check] == "passed"


def _code_lines(path):
    """Lines with code: no docstring, comment or blank line."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and \
                ast.get_docstring(node) is not None:
            docstrings.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    lines = set()
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
               tokenize.DEDENT, tokenize.ENDMARKER)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines.update(set(range(token.start[0], token.end[0] + 1)) - docstrings)
    return len(lines)


def test_the_worked_structure_is_at_most_150_lines_of_code_kernels_included():
    files = sorted((ROOT / PACKAGE).glob("*.py"))
    assert {f.name for f in files} == {"__init__.py", "_kernels.py", "structure.py"}
    assert sum(_code_lines(f) for f in files) <= 150


def _stages(n_sequences=40, seed=0):
    """Sequences whose frames pass through stages 0, 1, 2 in order; a frame's features
    show its stage through noise."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_sequences):
        states = np.sort(rng.randint(0, 3, size=rng.randint(3, 9)))
        X.append(np.eye(3)[states] + 0.8 * rng.randn(len(states), 3))
        y.append(states)
    return X, y


@pytest.mark.parametrize("model", [
    EGCRF(C=10.0, max_iter=30, random_state=0),
    EGStructuredSVM(C=10.0, max_iter=30, random_state=0),
    EGStructuredSVM(C=10.0, solver="working_set", max_iter=30),
    L1M3N(C=1.0, max_iter=200),
    StructuredPerceptron(max_iter=10, random_state=0),
    DualExtragradientMatcher(geometry="entropic", radius=10.0, max_iter=1000),
], ids=lambda model: repr(model).split("(")[0] + ("-ws" if "working_set" in repr(model) else ""))
def test_every_learner_trains_it_and_predicts_monotone_states(model):
    X, y = _stages()
    X_test, y_test = _stages(seed=1)
    model.set_params(structure=MonotoneAlignmentStructure())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    predicted = model.predict(X_test)
    assert all(np.all(np.diff(states) >= 0) for states in predicted)
    accuracy = np.mean(np.concatenate(predicted) == np.concatenate(y_test))
    # a frame alone (the argmax of its features) is right about 80% of the time
    alone = np.mean(np.concatenate([x.argmax(axis=1) for x in X_test]) == np.concatenate(y_test))
    assert accuracy > alone


def test_targets_that_go_back_are_refused_naming_the_sequence_and_frame():
    X, y = _stages(3)
    y[1] = y[1].copy()
    y[1][2] = 0
    y[1][1] = 2
    with pytest.raises(ValueError, match=r"sequence 1, frame 2: state 0 after state 2; the "
                                         "states of a monotone alignment never go back"):
        EGCRF(structure=MonotoneAlignmentStructure()).fit(X, y)
