"""Exact flow projections (matching polytope, relaxed min-cut polytope) vs a generic QP.

Ours: dual coordinate ascent + active-set polish (sklearn_struct.structures._flow_kernels).
Reference: clarabel (generic interior-point conic solver), constraint matrices built
beforehand and not timed.  Cold starts (no warm start); numba compiled beforehand.

Run from benchmarks/:  python bench_projections.py
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _qp_reference import grid_edges, matching_constraints, mincut_constraints, qp_project  # noqa: E402
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.structures.matching import MatchingStructure  # noqa: E402
from sklearn_struct.structures.mincut import MinCutStructure  # noqa: E402


def best_time(func, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(n_instances=5):
    rng = np.random.RandomState(0)
    rows = []
    cases = [("matching", n, n) for n in (10, 20, 30)] + [("min-cut grid", h, w)
                                                        for h, w in ((5, 10), (10, 20), (14, 14))]
    for kind, a, b in cases:
        ours, generic, errors, residuals = [], [], [], []
        for _ in range(n_instances):
            if kind == "matching":
                edges = np.argwhere(np.ones((a, b))).astype(np.int64)
                structure = MatchingStructure()
                batch = structure.make_batch([(np.ones((len(edges), 1)), edges)])
                v = rng.randn(len(edges))
                A, bound = matching_constraints(edges, a, b)
            else:
                edges = grid_edges(a, b)
                structure = MinCutStructure()
                batch = structure.make_batch([(np.ones((a * b, 1)), edges,
                                               np.ones((len(edges), 1)))])
                v = np.r_[rng.randn(a * b) + 0.5, rng.randn(len(edges))]
                A, bound = mincut_constraints(edges, a * b)
            structure.project(batch, v)  # compile / warm caches
            ours.append(best_time(lambda: structure.project(batch, v), 5))
            residuals.append(structure.projection_residual_)
            generic.append(best_time(lambda: qp_project(v, A, bound), 3))
            errors.append(np.abs(structure.project(batch, v) - qp_project(v, A, bound)).max())
        size = f"{a}x{b}" + (f" ({len(edges)} edges)" if kind == "matching" else
                             f" ({a * b} nodes, {len(edges)} edges)")
        rows.append([kind, size, f"{np.median(ours) * 1e3:.3f}", f"{np.median(generic) * 1e3:.2f}",
                     f"{np.median(generic) / np.median(ours):.1f}x",
                     f"{max(errors):.1e}", f"{max(residuals):.1e}"])
    table = markdown_table(
        ["polytope", "size", "ours (ms)", "clarabel QP (ms)", "speed-up", "max |z - z_QP|",
         "max KKT residual"], rows)
    print(table)
    record("Flow projections vs generic QP", table
           + f"\n\nMedian over {n_instances} random instances (v ~ N(0, 1)), cold start.",
           "cd benchmarks && python bench_projections.py")


if __name__ == "__main__":
    main()
