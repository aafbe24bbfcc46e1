"""The token structures' own batch loops against the generic loops over examples.

A structure may give ``KernelOps`` a numba loop over a whole batch in place of the generic
loop of ``_generic_kernels`` (``batch_part_scores``, ``batch_add_features``,
``batch_marginals``, ``batch_log_partition``).  This script times each batch operation of
the chain and of multiclass both ways, in one process on the same batch: with the
structure's loops, and with a copy of the structure whose kernel operations leave them
out (``KernelOps.without``).  ``ARCHITECTURE.md`` ("The chain's fast path") gives the
reason for each loop kept from this record.

Batches: the OCR-like and CoNLL-like chains of ``bench_core_inference_ab.py``, and
20,000 MNIST-shaped multiclass samples (784 features, 19% non-zero, 10 classes).  Each
time is the best of ``--repeat`` calls, after one call that compiles.

Run from benchmarks/:  python bench_batch_loops.py [--repeat N]
"""

import argparse
import copy
import os

import numpy as np

from _record import markdown_table, record
from bench_core_inference_ab import best_seconds, chain_batches

OPERATIONS = ("part_scores", "expected_features", "argmax", "marginals", "log_partition")


def without_batch_loops(structure):
    """The same structure, running the generic loops over its examples."""
    ops = structure.kernel_ops
    plain = copy.copy(structure)
    plain.__class__ = type(type(structure).__name__, (type(structure),),
                           {"kernel_ops": ops.without(*ops.batch_loops)})
    return plain


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()

    from sklearn_struct.structures import ChainStructure, MulticlassStructure

    rng = np.random.RandomState(0)
    problems = {name: (ChainStructure(), X, K) for name, (X, K) in chain_batches(rng).items()}
    mnist_like = (rng.rand(20000, 784) < 0.19) * rng.rand(20000, 784)
    problems["multiclass MNIST-like"] = (MulticlassStructure(), mnist_like, 10)
    load = os.getloadavg()[0]
    rows = []
    for name, (structure, X, K) in problems.items():
        generic = without_batch_loops(structure)
        batch = structure.make_batch(X, K)
        w = 0.1 * rng.randn(batch.n_weights)
        scores = structure.part_scores(batch, w)
        arguments = {"part_scores": w, "expected_features": structure.marginals(batch, scores)[0]}
        for operation in OPERATIONS:
            given = arguments.get(operation, scores)
            own = getattr(structure, operation)
            plain = getattr(generic, operation)
            own(batch, given), plain(batch, given)  # (compile)
            seconds = best_seconds(lambda: own(batch, given), args.repeat)
            generic_seconds = best_seconds(lambda: plain(batch, given), args.repeat)
            loop = ("yes" if f"batch_{operation}" in structure.kernel_ops.batch_loops
                    or (operation == "expected_features"
                        and "batch_add_features" in structure.kernel_ops.batch_loops)
                    else "no")
            rows.append([name, operation, loop, f"{1e3 * seconds:.2f}",
                         f"{1e3 * generic_seconds:.2f}", f"{generic_seconds / seconds:.2f}"])
            print(*rows[-1], sep="  ")
    body = markdown_table(["batch", "operation", "own batch loop", "ms", "generic loop ms",
                           "generic / ms"], rows)
    body += (f"\n\nBest of {args.repeat} calls each, in one process on the same batch. Where "
             "the structure has no loop of its own, both columns run the generic loop (their "
             "ratio shows the noise). Load average when the run started: "
             f"{load:.2f} (2 cores).")
    if not args.no_record:
        record("Batch loops against the generic loops", body,
               f"python bench_batch_loops.py --repeat {args.repeat}")


if __name__ == "__main__":
    main()
