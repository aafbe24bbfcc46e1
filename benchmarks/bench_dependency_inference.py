"""Dependency-tree inference speed: the numba kernels against a vectorised numpy inside.

Sentences per second on one core (one sentence per call, random arc scores,
single root) for inside-outside marginals, Eisner, Chu-Liu-Edmonds and the
Matrix-Tree marginals at n = 10, 20, 30, 40, 80 words, next to a numpy
reference of the inside pass alone (log space, vectorised over the start
positions of the spans of each width) in the same script.  numba's first
compilation is timed separately (in a fresh process with an empty cache).

Run from benchmarks/:  python bench_dependency_inference.py [--seconds 1.0]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.structures.dependency._inference import (  # noqa: E402
    chu_liu_edmonds,
    eisner,
    matrix_tree_marginals,
    projective_marginals,
)

LENGTHS = (10, 20, 30, 40, 80)
#: Score matrices per length, visited in turn.
N_MATRICES = 20


def numpy_inside(S):
    """log Z over single-root projective trees, spans of each width vectorised over starts."""
    n = S.shape[0] - 1
    N = n + 1
    CL = np.full((N, N), -np.inf)
    CR = np.full((N, N), -np.inf)
    IL = np.full((N, N), -np.inf)
    IR = np.full((N, N), -np.inf)
    index = np.arange(1, N)
    CL[index, index] = CR[index, index] = 0.0
    for k in range(1, n):
        s = np.arange(1, N - k)
        t = s + k
        r = s[:, None] + np.arange(k)[None, :]  # split points s..t-1
        inner = logsumexp(CR[s[:, None], r] + CL[r + 1, t[:, None]], axis=1)
        IR[s, t] = inner + S[s, t]
        IL[s, t] = inner + S[t, s]
        CL[s, t] = logsumexp(CL[s[:, None], r] + IL[r, t[:, None]], axis=1)
        CR[s, t] = logsumexp(IR[s[:, None], r + 1] + CR[r + 1, t[:, None]], axis=1)
    return logsumexp(S[0, 1:] + CL[1, 1:] + CR[1:, n])


def rate(function, argument_sets, seconds):
    """Calls per second over about ``seconds``, cycling through the argument sets."""
    count, start = 0, time.perf_counter()
    while count < len(argument_sets) or time.perf_counter() - start < seconds:
        function(*argument_sets[count % len(argument_sets)])
        count += 1
    return count / (time.perf_counter() - start)


def cold_seconds(code):
    """Run ``code`` in a fresh process with an empty numba cache; the number it prints last
    (its own timing of the import and compilation)."""
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=dict(os.environ, NUMBA_CACHE_DIR=cache))
    return float(out.stdout.split()[-1])


def first_call_seconds():
    """Import + compilation of the four kernels in a fresh process with an empty cache."""
    return cold_seconds(
        "import time, numpy as np\nstart = time.perf_counter()\n"
        "from sklearn_struct.structures.dependency import _inference as t\n"
        "S = np.random.RandomState(0).randn(6, 6)\nm = np.empty((6, 6))\n"
        "h = np.zeros(5, dtype=np.int64)\n"
        "t.projective_marginals(S, True, m); t.eisner(S, True, h)\n"
        "t.chu_liu_edmonds(S, True, h); t.matrix_tree_marginals(S, True, m)\n"
        "print(time.perf_counter() - start)\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    compile_seconds = first_call_seconds()
    rng = np.random.RandomState(0)
    rows = []
    for n in LENGTHS:
        # several score matrices: Chu-Liu-Edmonds' time depends on the cycles it meets
        scores = [rng.randn(n + 1, n + 1) for _ in range(N_MATRICES)]
        marginals = np.empty((n + 1, n + 1))
        heads = np.zeros(n, dtype=np.int64)
        for S in scores:
            assert np.isclose(projective_marginals(S, True, marginals), numpy_inside(S)), \
                "numba and numpy disagree"
        with threadpool_limits(limits=1):  # LAPACK (Matrix-Tree) on one thread too
            rates = [rate(projective_marginals, [(S, True, marginals) for S in scores],
                          args.seconds),
                     rate(numpy_inside, [(S,) for S in scores], args.seconds),
                     rate(eisner, [(S, True, heads) for S in scores], args.seconds),
                     rate(chu_liu_edmonds, [(S, True, heads) for S in scores], args.seconds),
                     rate(matrix_tree_marginals, [(S, True, marginals) for S in scores],
                          args.seconds)]
        rows.append([n] + [f"{r:,.0f}" for r in rates] + [f"{rates[0] / rates[1]:.0f}x"])
        print(rows[-1], flush=True)
    header = ["n", "inside-outside (numba)", "inside only (numpy)", "Eisner", "Chu-Liu-Edmonds",
              "Matrix-Tree marginals", "inside-outside vs numpy inside"]
    table = markdown_table(header, rows)
    print(table)
    body = (f"{table}\n\nSentences per second on one core (BLAS limited to one thread), one "
            f"sentence per call cycling through {N_MATRICES} standard normal arc-score matrices "
            "per length, single root. The numpy reference computes the inside pass "
            "only (no marginals), vectorised over span starts; both give the same log Z. "
            f"First call in a fresh process with an empty numba cache (import and compilation "
            f"of the four kernels): {compile_seconds:.1f} s. Load average at the start: "
            f"{os.getloadavg()[0]:.2f}.")
    record("Dependency-tree inference speed", body,
           "cd benchmarks && python bench_dependency_inference.py")


if __name__ == "__main__":
    main()
