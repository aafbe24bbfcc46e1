"""L1M3N at extreme feature scales and values of C: converged and right, or warned.

Issue 16: ``L1M3N(solver="em")`` reported convergence on a collapsed solution
when the features were scaled by 1e3 or 1e6 or C was large.  For every solver
and each (feature scale, C), on two standardised binary problems (the 17 x 4
one on which issue 16 saw the collapse, and a 60 x 8 one): the
objective ``||w||_1 + C sum_i H_i(w)`` reached, the solver's certified lower
bound, the optimum (the enumerated LP, HiGHS), non-zero weights, whether it
reported convergence, the ConvergenceWarning if any, and the fit time.

Run from benchmarks/:
    python bench_l1m3n_scales.py
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _qp_reference import multiclass_l1_lp  # noqa: E402
from _record import markdown_table, record  # noqa: E402

from sklearn_struct import L1M3N  # noqa: E402

CASES = [(1.0, 1.0), (1e3, 1.0), (1e6, 1.0), (1.0, 1e4), (1.0, 1e8), (1.0, 1e-8),
         (1e-6, 1.0), (1e6, 1e8)]
SOLVERS = ("cutting_plane", "subgradient", "em")


def problems():
    """The issue's 17 x 4 problem (y = [x0 > 0]) and a 60 x 8 one (y = [x0 + x1 > 0])."""
    rng = np.random.RandomState(2)
    X = rng.standard_normal((17, 4))
    yield "17x4", X, (X[:, 0] > 0).astype(int)
    rng = np.random.RandomState(0)
    X = rng.standard_normal((60, 8))
    yield "60x8", X, (X[:, 0] + X[:, 1] > 0).astype(int)


def main():
    rows = []
    for name, X, y in problems():
        rows += scale_rows(name, X, y)
    body = (
        "Standard normal features multiplied by the scale; every solver at its defaults "
        "(tol = 1e-3; EM 60 iterations) minimises ||w||_1 + C sum_i H_i(w). "
        "Optimum: the LP with every output enumerated (HiGHS). 'converged': the fit raised no "
        "ConvergenceWarning; the warning's reason is quoted. Scaling the features by s is the "
        "problem at C s, so x1e6 at C = 1e8 is C = 1e14, beyond double precision (C "
        "multiplies the rounding of the hinge losses; even the LP optimum is inexact there).\n\n"
        + markdown_table(["data", "features", "C", "solver", "objective", "lower bound",
                          "optimum", "non-zero", "converged", "warning", "fit s"], rows)
    )
    record("L1M3N at extreme feature scales and C (issue 16)", body,
           "python bench_l1m3n_scales.py")


def scale_rows(name, X, y):
    rows = []
    for scale, C in CASES:
        optimum = multiclass_l1_lp(scale * X, y, C)[0]
        for solver in SOLVERS:
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                model = L1M3N(solver=solver, C=C).fit(scale * X, y)
            seconds = time.perf_counter() - start
            messages = [str(w.message) for w in caught
                        if issubclass(w.category, ConvergenceWarning)]
            summary = "none"
            if messages:
                summary = messages[0].split(": ", 1)[1].split(";")[0]
            rows.append([name, f"x{scale:g}", f"{C:g}", solver, f"{model.objective_:.4g}",
                         f"{model.lower_bound_:.4g}", f"{optimum:.4g}",
                         np.count_nonzero(model.weights_), "no" if messages else "yes",
                         summary, f"{seconds:.1f}"])
            print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    main()
