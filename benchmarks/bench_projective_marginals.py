"""Projective inside-outside against Eisner's argmax on the same scores, first and second order.

The marginals of a projective parser (``projective_marginals``, ``second_order_marginals``)
run in real space on scaled weights and fall back to log space only where ``Z`` would be too
small there; this script times them per sentence next to the same recursion in log space and
next to Eisner's max-plus argmax, on the same random scores (one sentence per call, cycling
through ``N_SCORES`` standard normal score vectors per length, single root), and checks that
the real-space marginals and ``log Z`` equal the log-space ones.  numba's first compilation
is timed apart (a fresh process, an empty cache).

Run from benchmarks/:  python bench_projective_marginals.py [--seconds 1.0]
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections import namedtuple
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402
from bench_dependency_inference import rate  # noqa: E402

from sklearn_struct.structures.dependency import _inference as first  # noqa: E402
from sklearn_struct.structures.dependency import _second_order_inference as second  # noqa: E402
from sklearn_struct.structures.dependency._sibling_features import n_sibling_parts  # noqa: E402

LENGTHS = (10, 20, 30, 40, 80)
#: Score vectors per length, visited in turn.
N_SCORES = 20
#: What the second-order kernels read of a batch's kernel data: one sentence of n words.
Sentence = namedtuple("Sentence", ["unit_offsets", "single_root"])


def first_order(n, rng):
    """Per-call argument sets of the three first-order kernels, and the largest differences
    between real and log space (marginals, log Z)."""
    scores = [rng.randn(n + 1, n + 1) for _ in range(N_SCORES)]
    real, logs = np.empty((n + 1, n + 1)), np.empty((n + 1, n + 1))
    heads = np.zeros(n, dtype=np.int64)
    gaps = [(np.abs(real - logs).max(), abs(log_z - log_z_ref))
            for S in scores
            for log_z, log_z_ref in [(first.projective_marginals(S, True, real),
                                      first._log_space_marginals(S, True, logs))]]
    return ((first.projective_marginals, [(S, True, real) for S in scores]),
            (first._log_space_marginals, [(S, True, logs) for S in scores]),
            (first.eisner, [(S, True, heads) for S in scores]), gaps)


def second_order(n, rng):
    """As :func:`first_order`, for arc and sibling scores."""
    data = Sentence(np.array([0, n], dtype=np.int64), True)
    scores = [rng.randn(n * n + n_sibling_parts(n)) for _ in range(N_SCORES)]
    real, logs = np.empty_like(scores[0]), np.empty_like(scores[0])
    heads = np.zeros(n, dtype=np.int64)
    gaps = [(np.abs(real - logs).max(), abs(log_z - log_z_ref))
            for theta in scores
            for log_z, log_z_ref in [(second.second_order_marginals(data, 0, theta, real),
                                      second._log_space_marginals(theta, n, True, logs))]]
    return ((second.second_order_marginals, [(data, 0, theta, real) for theta in scores]),
            (second._log_space_marginals, [(theta, n, True, logs) for theta in scores]),
            (second.second_order_eisner, [(data, 0, theta, heads) for theta in scores]), gaps)


def first_call_seconds():
    """Import and compilation of the six kernels, in a fresh process with an empty cache."""
    code = ("import time, sys\nstart = time.perf_counter()\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
            "import numpy as np, bench_projective_marginals as b\n"
            "rng = np.random.RandomState(0)\n"
            "for make in (b.first_order, b.second_order):\n"
            "    for kernel, arguments in make(5, rng)[:3]:\n"
            "        kernel(*arguments[0])\n"
            "print(time.perf_counter() - start)\n")
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=dict(os.environ, NUMBA_CACHE_DIR=cache))
    return float(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    compile_seconds = first_call_seconds()
    rng = np.random.RandomState(0)
    rows = []
    for order, make in (("first", first_order), ("second", second_order)):
        for n in LENGTHS:
            real, logs, argmax, gaps = make(n, rng)
            for kernel, arguments in (real, logs, argmax):
                kernel(*arguments[0])  # compiled or loaded before it is timed
            rates = [rate(kernel, arguments, args.seconds) for kernel, arguments in
                     (real, logs, argmax)]
            mu_gap, log_z_gap = np.max(gaps, axis=0)
            rows.append([order, n] + [f"{r:,.0f}" for r in rates]
                        + [f"{rates[2] / rates[0]:.2f}x", f"{rates[2] / rates[1]:.2f}x",
                           f"{mu_gap:.1e}", f"{log_z_gap:.1e}"])
            print(rows[-1], flush=True)
    header = ["order", "n", "inside-outside, real space", "inside-outside, log space",
              "Eisner", "real-space time / Eisner's", "log-space time / Eisner's",
              "max marginal difference", "max log Z difference"]
    table = markdown_table(header, rows)
    print(table)
    body = (f"{table}\n\nSentences per second on one core, one sentence per call cycling "
            f"through {N_SCORES} standard normal score vectors per length (arc scores, and "
            "at second order sibling scores too), single root. The real-space kernels are the "
            "ones that training calls (`projective_marginals`, `second_order_marginals`: real "
            "space on scaled weights, log space only where Z would be too small); the "
            "log-space recursions are their fallbacks, timed alone. The differences are the "
            "largest between the real- and log-space marginals and log Z over the score "
            "vectors. First call in a fresh process with an empty numba cache (import and "
            f"compilation of the six kernels): {compile_seconds:.1f} s. Load average at the "
            f"start: {load:.2f}, at the end: {os.getloadavg()[0]:.2f}.")
    record("Projective inside-outside against Eisner", body,
           "cd benchmarks && python bench_projective_marginals.py" + "".join(
               f" {a}" for a in sys.argv[1:]))


if __name__ == "__main__":
    main()
