"""Arc marginals of one long sentence against its length, at two score scales.

One sentence of ``n`` words (random word, tag and prefix ids) scored by
``DependencyTreeStructure``'s hashed first-order arc features under weights
drawn as N(0, 1) and N(0, 10^2): the second scale gives the confident,
near-deterministic scores of a trained parser, where the Matrix-Tree
Laplacian is nearly singular.  For each length, scale and output space
(projective trees by inside-outside, all trees by the Matrix-Tree theorem;
single root) the script times ``marginals`` on that sentence (best of
``--repeats`` calls after a warm-up call, LAPACK on one thread: the
Matrix-Tree inverse route uses it) and checks that every word's marginals sum
to one.

Run from benchmarks/:  python bench_matrix_tree_scale.py [--lengths 50 100 200 300 500]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import markdown_table, record  # noqa: E402

from sklearn_struct.structures import DependencyTreeStructure  # noqa: E402

SCALES = (1.0, 10.0)


def sentence(n, rng):
    """Token attribute ids ``(WORD, POS, PREFIX)`` of ``n`` random words."""
    return np.column_stack([rng.randint(0, 5000, n), rng.randint(0, 17, n),
                            rng.randint(0, 2000, n)])


def best_time(structure, batch, scores, repeats):
    """Seconds of the fastest of ``repeats`` calls of ``marginals``, and the marginals."""
    structure.marginals(batch, scores)  # compiles (or loads) the kernels
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        mu, log_z = structure.marginals(batch, scores)
        best = min(best, time.perf_counter() - start)
    if not np.isfinite(log_z).all():
        raise AssertionError(f"log Z = {log_z}")
    return best, mu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 200, 300, 500])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hash-bits", type=int, default=20)
    parser.add_argument("--no-record", action="store_true",
                        help="print the table without writing RESULTS.md")
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    rng = np.random.RandomState(0)
    rows = []
    for n in args.lengths:
        x = sentence(n, rng)
        for scale in SCALES:
            w = scale * np.random.RandomState(1).randn(2 ** args.hash_bits)
            row = [n, f"N(0, {scale:g}^2)"]
            for projective in (True, False):
                structure = DependencyTreeStructure(projective=projective, single_root=True,
                                                    hash_bits=args.hash_bits)
                batch = structure.make_batch([x])
                scores = structure.part_scores(batch, w)
                with threadpool_limits(limits=1):
                    seconds, mu = best_time(structure, batch, scores, args.repeats)
                sums = mu.reshape(n, n).sum(axis=1)  # the n arcs into each word
                if not np.allclose(sums, 1.0, atol=1e-9):
                    raise AssertionError(f"n={n}, scale {scale}: marginals of a word sum to "
                                         f"{sums[np.argmax(abs(sums - 1))]!r}")
                row.append(f"{seconds:.4f}")
            rows.append(row)
            print(*row, flush=True)
    table = markdown_table(["words", "weights", "projective (s)", "all trees, Matrix-Tree (s)"],
                           rows)
    body = (f"{table}\n\nOne sentence per row, single root, `marginals` of "
            f"`DependencyTreeStructure` (best of {args.repeats} calls); load average "
            f"{load_at_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.")
    print(body)
    if not args.no_record:
        record("Matrix-Tree marginals against sentence length and score scale", body,
               " ".join(["cd benchmarks && python bench_matrix_tree_scale.py"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
