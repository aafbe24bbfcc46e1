"""Compile the kernels that most tests share once, before the test workers start.

numba compiles a kernel in every process that first calls it, so two pytest-xdist workers on
a fresh clone each compile the same kernels (five minutes of fitting every estimator on every
structure, almost all of it compilation).  The suite's controller runs this script in one
process per worker before they start, each on its own share of the structures; the workers
then load the compiled kernels from numba's on-disk cache.

Run ``python tests/_compile_once.py STRUCTURE ...`` to compile one share by hand.
"""

import sys
import warnings
from pathlib import Path

#: Shares of the structures of ``test_persistence.PAIRS`` for two processes, of about equal
#: compilation time on a cold cache (the two dependency trees share their kernels).
SHARES = (
    ("dependency", "sibling_dependency", "chain", "pruned_chain"),
    ("multiclass", "tree", "matching", "mincut", "cfg", "semimarkov", "monotone"),
)
#: What the fitted-model tests call on every model.
METHODS = ("predict", "predict_marginals", "decision_function", "predict_proba")


def compile_share(structures):
    """Fit every estimator of ``test_persistence.PAIRS`` on ``structures`` and call its
    prediction methods, so that their kernels are in numba's cache."""
    from sklearn.exceptions import ConvergenceWarning
    from test_persistence import PAIRS, _fit

    unknown = set(structures) - {structure for structure, _ in PAIRS}
    if unknown:
        raise ValueError(f"unknown structures {sorted(unknown)}; expected some of "
                         f"{sorted({structure for structure, _ in PAIRS})}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for structure, name in PAIRS:
            if structure in structures:
                model, X = _fit(structure, name)
                for method in METHODS:
                    if hasattr(model, method):
                        try:
                            getattr(model, method)(X)
                        except (ValueError, TypeError, NotImplementedError):
                            pass  # a method the structure does not support compiles nothing


if __name__ == "__main__":
    tests = Path(__file__).resolve().parent
    sys.path[:0] = [str(tests)] + sorted(str(folder) for folder in tests.iterdir()
                                         if folder.is_dir() and folder.name.isidentifier())
    compile_share(sys.argv[1:])
